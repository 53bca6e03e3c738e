"""The kind registry: explicit and strict. A name clash raises unless replacement is asked
for (registering the same factory again is a no-op); built-in kinds are imported on first use,
with an install hint when their backend is missing; third-party kinds are found through the
`oasr_tok.kinds` entry-point group, loaded on first use too.

Each kind's entry also says how its files are recognised: a detector, `detect(path)`, and its
precedence in the one order of evidence resolution follows (lower first; resolution.py). A
built-in kind's detector is the `detect` function of its module; a plug-in gives one to
`register_tokenizer(..., detect=...)`, or as a `detect` attribute of the factory its entry
point names, and is then resolved from files exactly as a built-in kind is.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import BackendNotInstalledError, RegistryError, RegistryWarning, SpecError, UnknownKindError
from ..spec import TokenizerSpec
from .contract import TokenizerContract

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_PRECEDENCE",
    "available_kinds",
    "build",
    "builtin_entries",
    "builtin_kinds",
    "detectors",
    "register_tokenizer",
    "unregister_tokenizer",
]

Factory = Callable[[TokenizerSpec], TokenizerContract]
#: detect(path) -> None | {role: file path} | Found | [Found | SetAside, ...] (detection.py)
Detector = Callable[[str], Any]


@dataclass(frozen=True)
class BuiltIn:
    module: str
    cls: str
    backend: str | None  # the package it needs to be built (None: none)
    extra: str | None  # the extra that installs it
    precedence: int | None  # in resolution's order of evidence (lower first; None: no detector)
    kind: str = ""


# The built-in kinds are the modules of oasr_tok/kinds (a `name.py`, or a package's
# `name/__init__.py`) that carry a REGISTRY line: the kind's name, its factory class, its
# precedence in the one order of evidence (docs/cli.md § Resolution; None: no detector) and the
# package it needs with the extra that installs it. The line is read from the file, not
# imported: `load` imports a kind only when its detector is asked, so a kind ranked after the
# one that is found is never imported. Adding a kind is adding its module (docs/architecture.md
# § Adding a kind).
#: How far into a kind's file its REGISTRY line is looked for: it stands after the docstring, the
#: imports and __all__ (reading whole files costs every process more: benchmarks/measurements.md).
HEAD_BYTES = 8192
KINDS_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kinds")
_ENTRY = re.compile(r"^REGISTRY = \{(.*?)\}$", re.M | re.S)
_VALUE = r'"[^"\\]*"|-?\d+|None'
_PAIR = re.compile(rf'\s*"(\w+)"\s*:\s*({_VALUE})\s*')
_BODY = re.compile(rf'(?:\s*"\w+"\s*:\s*(?:{_VALUE})\s*,)*(?:\s*"\w+"\s*:\s*(?:{_VALUE})\s*)?\s*')
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "kind": str,
    "factory": str,
    "precedence": (int, type(None)),
    "backend": (str, type(None)),
    "extra": (str, type(None)),
}
_KIND_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


def read_entry(text: str, where: str, module: str = "") -> BuiltIn | None:
    """The kind a module's REGISTRY line declares (None: the module declares none), checked:
    RegistryError names the file and what is wrong."""
    match = _ENTRY.search(text)
    if match is None:
        return None
    body = match.group(1)
    if not _BODY.fullmatch(body):
        raise RegistryError(f"{where}: REGISTRY must be one dict of string, int or None literals, got {{{body}}}")
    fields: dict[str, Any] = {
        key: None if raw == "None" else raw[1:-1] if raw.startswith('"') else int(raw)
        for key, raw in _PAIR.findall(body)
    }
    unknown = sorted(set(fields) - set(_FIELDS))
    missing = sorted({"kind", "factory", "precedence"} - set(fields))
    if unknown or missing:
        raise RegistryError(
            f"{where}: REGISTRY has unknown keys {unknown} or lacks {missing}; keys: {', '.join(_FIELDS)}"
        )
    for key, value in fields.items():
        if not isinstance(value, _FIELDS[key]):
            raise RegistryError(f"{where}: REGISTRY[{key!r}] is {value!r}, of the wrong type")
    if not _KIND_NAME.match(fields["kind"]) or not fields["factory"].isidentifier():
        raise RegistryError(
            f"{where}: REGISTRY names kind {fields['kind']!r} and factory {fields['factory']!r}: "
            "a kind is lowercase letters, digits and _; a factory, a class name"
        )
    if (fields.get("backend") is None) != (fields.get("extra") is None):
        raise RegistryError(f"{where}: REGISTRY gives a backend without its extra, or an extra without its backend")
    return BuiltIn(
        module, fields["factory"], fields.get("backend"), fields.get("extra"), fields["precedence"], fields["kind"]
    )


def discover_builtins(folder: str = KINDS_FOLDER, package: str = "oasr_tok.kinds") -> dict[str, BuiltIn]:
    """The built-in kinds declared in `folder`, in the order of evidence (then by name)."""
    found: dict[str, BuiltIn] = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith("_"):
            continue
        if name.endswith(".py"):
            module = f"{package}.{name[:-3]}"
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            module, path = f"{package}.{name}", os.path.join(path, "__init__.py")
        else:
            continue
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", "replace")
        entry = read_entry(head, path, module)
        if entry is None:
            continue
        if entry.kind in found:
            raise RegistryError(f"{path}: kind {entry.kind!r} is declared by {found[entry.kind].module} too")
        found[entry.kind] = entry
    order = sorted(found.values(), key=lambda e: (e.precedence is None, e.precedence or 0, e.kind))
    return {entry.kind: entry for entry in order}


_discovered: dict[str, BuiltIn] | None = None


def _builtins() -> dict[str, BuiltIn]:
    global _discovered
    if _discovered is None:
        _discovered = discover_builtins()
    return _discovered


#: Detectors that find another kind's files inside a container: name -> (module, precedence).
_CONTAINERS = {".nemo archive": ("oasr_tok.loading.nemo_archive", 90)}
#: Where a plug-in's detector stands when it gives no precedence: after every built-in one.
PLUGIN_PRECEDENCE = 1000

_factories: dict[str, Factory] = {}
_detectors: dict[str, tuple[Detector, int]] = {}
_lock = threading.Lock()


def register_tokenizer(
    kind: str, factory: Factory, *, replace: bool = False, detect: Detector | None = None, precedence: int | None = None
) -> None:
    """Register `factory(spec) -> Tokenizer` under `kind`. Registering a name that exists
    (a built-in included) raises RegistryError unless `replace=True`.

    With `detect(path) -> {role: file path} | None`, load() and resolve() recognise the kind's
    files in a folder or as a single file, as they do a built-in kind's; `precedence` places
    it in the order of evidence (default PLUGIN_PRECEDENCE, after the built-ins)."""
    if not isinstance(kind, str) or not kind:
        raise RegistryError(f"a tokenizer kind must be a non-empty string, got {kind!r}")
    if not callable(factory):
        raise RegistryError(f"the factory for kind {kind!r} must be callable, got {factory!r}")
    if detect is not None and not callable(detect):
        raise RegistryError(f"the detector for kind {kind!r} must be callable, got {detect!r}")
    if precedence is not None and (isinstance(precedence, bool) or not isinstance(precedence, int)):
        raise RegistryError(f"the precedence of kind {kind!r} must be an int, got {precedence!r}")
    wanted = None if detect is None else (detect, PLUGIN_PRECEDENCE if precedence is None else precedence)
    with _lock:
        if _factories.get(kind) is factory and _detectors.get(kind) == wanted:
            return  # the same registration again: nothing to do (as fsspec's registry does)
        if not replace and (kind in _factories or kind in _builtins()):
            raise RegistryError(
                f"tokenizer kind {kind!r} is already registered; "
                "pass replace=True to register_tokenizer to replace it on purpose"
            )
        _factories[kind] = factory
        if wanted is not None:
            _detectors[kind] = wanted
        else:
            _detectors.pop(kind, None)


def unregister_tokenizer(kind: str) -> None:
    """Remove a kind registered with register_tokenizer (a replaced built-in comes back)."""
    with _lock:
        if kind not in _factories:
            raise UnknownKindError(f"tokenizer kind {kind!r} was not registered with register_tokenizer")
        del _factories[kind]
        _detectors.pop(kind, None)


ENTRY_POINT_GROUP = "oasr_tok.kinds"


def _entry_points() -> dict[str, Any]:
    """Kinds other packages declare under the `oasr_tok.kinds` entry-point group (name ->
    entry point; loaded only when that kind is built or resolution asks its detector). A
    built-in name is never shadowed, and two distributions never share a name: such an entry
    point is not loaded, with a RegistryWarning that names it and its distribution (once per
    process), never dropped without a word."""
    if not _group_may_be_declared():
        return {}
    from importlib.metadata import entry_points

    found: dict[str, Any] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        taken = (
            "a built-in kind"
            if ep.name in _builtins()
            else "another package's entry point"
            if ep.name in found
            else None
        )
        if taken is None:
            found[ep.name] = ep
            continue
        where = getattr(getattr(ep, "dist", None), "name", None) or "an installed distribution"
        key = (ep.name, ep.value, where)
        if key not in _warned:
            _warned.add(key)
            warnings.warn(
                f"the entry point {ep.name} = {ep.value} of {where} (group {ENTRY_POINT_GROUP!r}) names {taken}: "
                "it is not loaded; give the kind another name",
                RegistryWarning,
                stacklevel=3,
            )
    return found


_warned: set[tuple[str, str, str]] = set()


def _group_may_be_declared() -> bool:
    """Whether any installed distribution may declare the entry-point group: a look at the
    entry_points.txt of each *.dist-info / *.egg-info on sys.path for the group's name.
    importlib.metadata is asked only then: importing it and reading every distribution's
    metadata cost each load more than `tokenizers` takes to load a 32,000-token
    tokenizer.json. Whatever this look cannot see through (a zip on sys.path, a distribution
    finder other than the standard path finder) counts as "may"."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is not None and finder is not PathFinder:
            return True
    needle = ENTRY_POINT_GROUP.encode()
    for entry in sys.path:
        root = entry or "."
        if not os.path.isdir(root):
            if os.path.isfile(root):
                return True  # a zip or an egg file: importlib.metadata reads inside it
            continue  # nothing there (a missing entry, an import hook's marker)
        try:
            names = os.listdir(root)
        except OSError:
            continue
        folders = [n for n in names if n.lower().endswith((".dist-info", ".egg-info"))]
        if root.lower().endswith(".egg"):
            folders += [n for n in names if n.lower() == "egg-info"]
        for folder in folders:
            try:
                with open(os.path.join(root, folder, "entry_points.txt"), "rb") as handle:
                    if needle in handle.read():
                        return True
            except OSError:
                continue
    return False


def builtin_kinds() -> list[str]:
    """The kinds oasr_tok itself provides (sorted)."""
    return sorted(_builtins())


def builtin_entries() -> list[BuiltIn]:
    """The built-in kinds' registry entries, in the order of evidence (a kind without a detector
    last): what docs/kind_tables.py writes the README's table from."""
    return list(_builtins().values())


def available_kinds() -> list[str]:
    """Every kind build_tokenizer accepts: built-ins, registered and entry-point kinds (sorted)."""
    return sorted(set(_builtins()) | set(_factories) | set(_entry_points()))


def _check_backend(kind: str) -> None:
    """BackendNotInstalledError with the install hint when the kind's package is missing. Found,
    not imported: a kind imports it when it needs it (the huggingface kind only at its first
    encode; importing `tokenizers` was a visible part of each load)."""
    entry = _builtins()[kind]
    if entry.backend is None:
        return
    module = sys.modules.get(entry.backend, _NOT_IMPORTED)
    try:
        found = (
            module is not None if module is not _NOT_IMPORTED else importlib.util.find_spec(entry.backend) is not None
        )
    except (ImportError, ValueError):
        found = False
    if not found:
        raise BackendNotInstalledError(
            f"the {kind!r} tokenizer kind needs the {entry.backend!r} package, which is not installed; "
            f"install it with: pip install 'oasr_tok[{entry.extra}]'"
        )


_NOT_IMPORTED = object()


def _builtin_factory(kind: str) -> Factory:
    _check_backend(kind)
    entry = _builtins()[kind]
    module = importlib.import_module(entry.module)
    factory: Factory = getattr(module, entry.cls).from_spec
    return factory


def _load_entry_point(kind: str, entry_point: Any) -> Factory:
    try:
        factory = entry_point.load()
    except Exception as exc:  # a broken plug-in must not look like an unknown kind
        raise RegistryError(
            f"tokenizer kind {kind!r} comes from the entry point {entry_point.value!r} "
            f"(group {ENTRY_POINT_GROUP!r}), which failed to load: {exc}"
        ) from exc
    if not callable(factory):
        raise RegistryError(f"the entry point {entry_point.value!r} for kind {kind!r} is not callable")
    detect = getattr(factory, "detect", None)
    precedence = getattr(factory, "precedence", PLUGIN_PRECEDENCE)
    with _lock:
        known = _factories.setdefault(kind, factory)
        if known is factory and callable(detect) and kind not in _detectors:
            _detectors[kind] = (detect, precedence if isinstance(precedence, int) else PLUGIN_PRECEDENCE)
        return known


def get_factory(kind: str) -> Factory:
    """The factory for `kind`, loading a built-in lazily."""
    with _lock:
        factory = _factories.get(kind)
    if factory is not None:
        return factory
    if kind in _builtins():
        return _builtin_factory(kind)
    entry_point = _entry_points().get(kind)
    if entry_point is not None:
        return _load_entry_point(kind, entry_point)
    raise UnknownKindError(f"unknown tokenizer kind {kind!r}; known kinds: {', '.join(available_kinds())}")


def build(spec: TokenizerSpec) -> TokenizerContract:
    """Build the tokenizer a spec describes with its kind's factory (the public face is
    oasr_tok.build_tokenizer, in build.py)."""
    if not isinstance(spec, TokenizerSpec):
        raise SpecError(f"build_tokenizer takes a TokenizerSpec, got {type(spec).__name__}")
    tokenizer = get_factory(spec.kind)(spec)
    if not isinstance(tokenizer, TokenizerContract):
        raise RegistryError(
            f"the factory for kind {spec.kind!r} returned {type(tokenizer).__name__}, not an oasr_tok.Tokenizer"
        )
    if getattr(tokenizer, "spec", None) is None:
        tokenizer.spec = spec
    return tokenizer


@dataclass(frozen=True)
class DetectorEntry:
    """One source of evidence resolution asks: a kind's detector, or a container's."""

    name: str  # the kind, or the container (".nemo archive")
    precedence: int
    detect: Detector
    builtin: bool
    module: str | None = None  # where a built-in detector is defined (imported when it is asked)


def _module_detector(module_name: str) -> Detector:
    detect: Detector = importlib.import_module(module_name).detect
    return detect


def detectors() -> list[DetectorEntry]:
    """Every detector, in the order of evidence: built-in kinds (a kind registered under a
    built-in's name replaces its detector too), registered and entry-point kinds with a
    detector, and the containers. Entry-point kinds are loaded to be asked."""
    for kind, entry_point in _entry_points().items():
        with _lock:
            loaded = kind in _factories
        if not loaded:
            _load_entry_point(kind, entry_point)
    with _lock:
        factories, plugged = dict(_factories), dict(_detectors)
    out = []
    for kind, entry in _builtins().items():
        if kind in factories or entry.precedence is None:
            continue  # replaced (its own detector, if any, is below), or resolved by a container
        out.append(DetectorEntry(kind, entry.precedence, _lazy(entry.module), True, entry.module))
    out.extend(DetectorEntry(kind, precedence, detect, False) for kind, (detect, precedence) in plugged.items())
    out.extend(
        DetectorEntry(name, precedence, _lazy(module), True, module)
        for name, (module, precedence) in _CONTAINERS.items()
    )
    out.sort(key=lambda d: (d.precedence, d.name))
    return out


def _lazy(module_name: str) -> Detector:
    def detect(path: str) -> Any:
        return _module_detector(module_name)(path)

    return detect
