"""The kind registry: one typed record per kind, the same for a built-in kind and a plug-in.

A kind is a `KindRecord`: its name, its factory (`factory(spec) -> Tokenizer`), how its files
are recognised (a detector, `detect(path)`, and its precedence in the one order of evidence
resolution follows, lower first: loading/resolution.py) and the package it needs, with the
extra that installs it. A record reaches the registry in one of three ways, each checked alike:

* a built-in kind's module (a module or package of `oasr_tok.kinds`, named as the kind) declares
  it as `KIND`, last in the module. `python docs/kind_tables.py` writes the kinds' index,
  `oasr_tok/kinds/_index.py`, from those records, so the registry knows every built-in's name,
  precedence and backend without importing the modules: a load imports the kinds whose
  detectors it asks and the one it builds, no other (importing all eleven cost a cold load of
  a Qwen3 tokenizer a fifth more). A module's record is checked against its index line when the
  module is imported, and a kind module the index does not list yet is imported to be read;
* a plug-in names it under the `oasr_tok.kinds` entry-point group (`letters =
  "letters_kind:KIND"`), loaded when the kind is built or its detector asked;
* a program gives it to `register_kind(record)`, or to `register_tokenizer(kind, factory, ...)`,
  which makes the record.

tiktoken's `tiktoken_ext` plug-in modules are the model: its own encodings are declared as a
plug-in's are. A name is declared once: a second declaration is refused, naming both declarers,
unless it asks to replace the first (`replace=True`; registering the same record again is a
no-op).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._moved import REMOVED_IN
from ..errors import (
    BackendNotInstalledError,
    RegistryError,
    RegistryWarning,
    SpecError,
    UnknownKindError,
    short_repr,
)
from ..spec import TokenizerSpec
from .contract import TokenizerContract

__all__ = [
    "CONTAINERS",
    "ENTRY_POINT_GROUP",
    "PLUGIN_PRECEDENCE",
    "DetectorEntry",
    "KindRecord",
    "available_kinds",
    "build",
    "builtin_kinds",
    "builtin_records",
    "detectors",
    "get_factory",
    "is_builtin",
    "register_kind",
    "register_tokenizer",
    "unregister_tokenizer",
]

Factory = Callable[[TokenizerSpec], TokenizerContract]
#: detect(path) -> None | {role: file path} | Found | [Found | SetAside, ...] (files/detection.py)
Detector = Callable[[str], Any]

#: Where a plug-in's detector stands when it gives no precedence: after every built-in one.
PLUGIN_PRECEDENCE = 1000
ENTRY_POINT_GROUP = "oasr_tok.kinds"
#: The package whose modules are the built-in kinds, and the name each gives its record.
BUILTIN_PACKAGE = "oasr_tok.kinds"
RECORD_NAME = "KIND"
KINDS_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kinds")


@dataclass(frozen=True)
class KindRecord:
    """One tokenizer kind as the registry knows it: a built-in kind's module declares it as
    ``KIND``; a plug-in names it in an entry point or gives it to `register_kind`.

    Args:
        name: the kind, as a spec names it (``TokenizerSpec(name, files)``).
        factory: ``factory(spec) -> Tokenizer``.
        detect: ``detect(path)``, asked with a folder or a single file: ``{role: file path}``
            for the files it claims, or None (``Found`` / ``SetAside`` records when it has
            evidence to report). Without one, the kind is built from a spec only.
        precedence: where the detector stands in the order of evidence, lower first (the
            built-in kinds stand at 10 to 80; by default a plug-in comes after them all).
        backend: the module the kind needs; found (not imported) before the factory runs, its
            absence a BackendNotInstalledError.
        extra: the extra of oasr_tok that installs the backend, for that error's install hint.

    Raises:
        RegistryError: a field of the wrong type, or a backend without its extra.

    Example:
        >>> from oasr_tok.kinds.api import KindRecord, Tokenizer
        >>> class Shout(Tokenizer):
        ...     vocab_size = 26
        ...     special_ids = frozenset()
        ...     def __init__(self, spec):
        ...         self.spec = spec
        ...     def decode(self, ids):
        ...         return "".join(chr(65 + i) for i in self.check_ids(ids))
        >>> KIND = KindRecord("shout", Shout)
        >>> KIND.precedence  # no detector: built from a spec only (a detector would stand after the built-ins)
        1000
    """

    name: str
    factory: Factory
    detect: Detector | None = None
    precedence: int = PLUGIN_PRECEDENCE
    backend: str | None = None
    extra: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise RegistryError(f"a tokenizer kind must be a non-empty string, got {short_repr(self.name)}")
        if not callable(self.factory):
            raise RegistryError(f"the factory for kind {self.name!r} must be callable, got {short_repr(self.factory)}")
        if self.detect is not None and not callable(self.detect):
            raise RegistryError(f"the detector for kind {self.name!r} must be callable, got {short_repr(self.detect)}")
        if isinstance(self.precedence, bool) or not isinstance(self.precedence, int):
            raise RegistryError(
                f"the precedence of kind {self.name!r} must be an int, got {short_repr(self.precedence)}"
            )
        for field_name in ("backend", "extra"):
            value = getattr(self, field_name)
            if value is not None and (not isinstance(value, str) or not value):
                raise RegistryError(f"the {field_name} of kind {self.name!r} must be a name, got {short_repr(value)}")
        if (self.backend is None) != (self.extra is None):
            raise RegistryError(
                f"kind {self.name!r} gives a backend without the extra that installs it, or an extra without its backend"
            )


#: A built-in kind's line in the kinds' index: (kind, precedence or None without a detector,
#: backend, extra). The kind is its module's name in oasr_tok.kinds.
IndexLine = tuple[str, int | None, str | None, str | None]


def index_line(record: KindRecord) -> IndexLine:
    """What the kinds' index (oasr_tok/kinds/_index.py) says of a built-in kind's record."""
    return (record.name, record.precedence if record.detect is not None else None, record.backend, record.extra)


def _order_of_evidence(line: IndexLine) -> tuple[bool, int, str]:
    return (line[1] is None, line[1] or 0, line[0])


# -- the built-in kinds ---------------------------------------------------------------------------


def kind_modules(folder: str = KINDS_FOLDER) -> list[str]:
    """The public modules and packages of the kinds' folder (each a kind but `api` and the
    others the index lists as declaring none)."""
    names = []
    for entry in sorted(os.listdir(folder)):
        if entry.startswith(("_", ".")):
            continue
        if entry.endswith(".py"):
            names.append(entry[:-3])
        elif os.path.isfile(os.path.join(folder, entry, "__init__.py")):
            names.append(entry)
    return names


def _read_index() -> tuple[tuple[IndexLine, ...], tuple[str, ...]]:
    try:
        # Imported by name: the index is a table of the kinds' room (a floor up), read as data.
        index = importlib.import_module(f"{BUILTIN_PACKAGE}._index")
    except ModuleNotFoundError:
        return (), ()  # every kind module is then imported to be read (the index is a shortcut)
    return tuple(index.KINDS), tuple(index.OTHER_MODULES)


def _import_record(name: str) -> KindRecord | None:
    """The record kind module `name` declares (None: it declares none), checked."""
    module = importlib.import_module(f"{BUILTIN_PACKAGE}.{name}")
    record = getattr(module, RECORD_NAME, None)
    where = getattr(module, "__file__", None) or module.__name__
    if record is None:
        if hasattr(module, "REGISTRY"):  # 0.3.0.dev0's first form, read from the file's text
            raise RegistryError(
                f"{where}: a REGISTRY line no longer declares a kind: end the module with "
                f"`{RECORD_NAME} = KindRecord(kind, Class.from_spec, detect, precedence=..., backend=..., extra=...)` "
                "and run python docs/kind_tables.py (docs/architecture.md § Adding a kind)"
            )
        return None
    if not isinstance(record, KindRecord):
        raise RegistryError(f"{where}: {RECORD_NAME} must be a KindRecord, got {short_repr(record)}")
    if record.name != name:
        raise RegistryError(
            f"{where}: its {RECORD_NAME} names kind {record.name!r}; a built-in kind is named after its module ({name!r})"
        )
    return record


def read_kind_modules() -> tuple[list[KindRecord], list[str]]:
    """Every kind module imported and its record read, checked: the records in the order of
    evidence, and the modules that declare none (`api`). What docs/kind_tables.py writes the
    kinds' index from; never asked by a load."""
    records, others = [], []
    for name in kind_modules():
        record = _import_record(name)
        if record is None:
            others.append(name)
        else:
            records.append(record)
    records.sort(key=lambda record: _order_of_evidence(index_line(record)))
    return records, others


_index: dict[str, IndexLine] | None = None
_records: dict[str, KindRecord] = {}  # the built-in records read so far (their modules imported)
_lock = threading.Lock()


def _builtins() -> dict[str, IndexLine]:
    """The built-in kinds, in the order of evidence (a kind without a detector last): the index,
    for the modules that are there, and the record of any kind module it does not list."""
    global _index
    if _index is None:
        lines, others = _read_index()
        try:
            present = set(kind_modules()) - set(others)
        except OSError:  # no folder to list (a zip import, a frozen application): the index alone
            present = {line[0] for line in lines}
        found = {line[0]: line for line in lines if line[0] in present}
        for name in sorted(present - set(found)):  # not indexed yet: `python docs/kind_tables.py` lists it
            record = _import_record(name)
            if record is not None:
                _records.setdefault(name, record)
                found[name] = index_line(record)
        _index = {line[0]: line for line in sorted(found.values(), key=_order_of_evidence)}
    return _index


def _builtin_record(name: str) -> KindRecord:
    """A built-in kind's record: its module imported, its record checked against its index line."""
    record = _records.get(name)
    if record is not None:
        return record
    record = _import_record(name)
    line = _builtins()[name]
    if record is None or index_line(record) != line:
        said = None if record is None else index_line(record)
        raise RegistryError(
            f"{BUILTIN_PACKAGE}.{name} declares {said} but the kinds' index (oasr_tok/kinds/_index.py) says "
            f"{line}: run python docs/kind_tables.py"
        )
    with _lock:
        return _records.setdefault(name, record)


def builtin_kinds() -> list[str]:
    """The kinds oasr_tok itself provides (sorted; read from the index, nothing imported)."""
    return sorted(_builtins())


def builtin_records() -> list[KindRecord]:
    """Every built-in kind's record, in the order of evidence (a kind without a detector last).
    Imports every kind module: for tools and documents (docs/kind_tables.py), not for a load."""
    return [_builtin_record(name) for name in _builtins()]


# -- registering ---------------------------------------------------------------------------------

#: Kinds registered in this process (register_kind, register_tokenizer, entry points once
#: loaded): name -> (record, who declared it).
_registered: dict[str, tuple[KindRecord, str]] = {}


def _declarer(record: KindRecord) -> str:
    factory = record.factory
    where = f"{getattr(factory, '__module__', None) or '?'}.{getattr(factory, '__qualname__', type(factory).__name__)}"
    return f"a record whose factory is {where}"


def _holder(name: str) -> str | None:
    """Who declares `name` now: a registration, or the built-in module (None: nobody)."""
    if name in _registered:
        return _registered[name][1]
    if name in _builtins():
        return f"{BUILTIN_PACKAGE}.{name} (built in)"
    return None


def register_kind(record: KindRecord, *, replace: bool = False) -> None:
    """Register a kind by its record, in this process: `oasr_tok.build_tokenizer` builds its
    specs, and `load` / `resolve` / `describe` ask its detector in the order of evidence as
    they ask a built-in one's.

    Args:
        record: the kind's `KindRecord`.
        replace: take the name over from whoever declares it (a built-in included); without it,
            a name that is taken is refused.

    Returns:
        None. Registering the same record again does nothing.

    Raises:
        RegistryError: not a KindRecord, or its name is taken (the message names both declarers).

    Example:
        >>> import oasr_tok
        >>> from oasr_tok.kinds.api import KindRecord, Tokenizer, register_kind, unregister_tokenizer
        >>> class Shout(Tokenizer):
        ...     vocab_size = 26
        ...     special_ids = frozenset()
        ...     def __init__(self, spec):
        ...         self.spec = spec
        ...     def decode(self, ids):
        ...         return "".join(chr(65 + i) for i in self.check_ids(ids))
        >>> register_kind(KindRecord("shout", Shout))
        >>> oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec("shout", {})).decode([7, 8])
        'HI'
        >>> unregister_tokenizer("shout")
    """
    if not isinstance(record, KindRecord):
        raise RegistryError(f"register_kind takes a KindRecord, got {short_repr(record)}")
    _builtins()  # read before the lock: it may import a kind module
    with _lock:
        known = _registered.get(record.name)
        if known is not None and known[0] == record:
            return  # the same registration again: nothing to do (as fsspec's registry does)
        holder = _holder(record.name)
        if holder is not None and not replace:
            raise RegistryError(
                f"tokenizer kind {record.name!r} is declared by {holder}, and {_declarer(record)} declares it too; "
                "pass replace=True to register_kind (or register_tokenizer) to replace it on purpose"
            )
        _registered[record.name] = (record, f"{_declarer(record)} (register_kind)")


def register_tokenizer(
    kind: str, factory: Factory, *, replace: bool = False, detect: Detector | None = None, precedence: int | None = None
) -> None:
    """Register `factory(spec) -> Tokenizer` under `kind`: ``register_kind(KindRecord(kind,
    factory, detect, precedence))``. A name that is taken (a built-in included) raises
    RegistryError unless `replace=True`.

    With `detect(path) -> {role: file path} | None`, load() and resolve() recognise the kind's
    files in a folder or as a single file, as they do a built-in kind's; `precedence` places
    it in the order of evidence (default PLUGIN_PRECEDENCE, after the built-ins)."""
    record = KindRecord(kind, factory, detect, PLUGIN_PRECEDENCE if precedence is None else precedence)
    register_kind(record, replace=replace)


def unregister_tokenizer(kind: str) -> None:
    """Remove a kind registered with register_kind or register_tokenizer (a replaced built-in
    comes back)."""
    with _lock:
        if kind not in _registered:
            raise UnknownKindError(f"tokenizer kind {kind!r} was not registered (register_kind, register_tokenizer)")
        del _registered[kind]


# -- plug-ins declared by entry points -------------------------------------------------------------


def _distribution(entry_point: Any) -> str:
    return getattr(getattr(entry_point, "dist", None), "name", None) or "an installed distribution"


def _entry_points() -> dict[str, Any]:
    """Kinds other packages declare under the `oasr_tok.kinds` entry-point group (name ->
    entry point; loaded only when that kind is built or resolution asks its detector). A
    built-in name is never shadowed, and two distributions never share a name: such an entry
    point is not loaded, with a RegistryWarning naming both declarers (once per process), never
    dropped without a word."""
    if not _group_may_be_declared():
        return {}
    from importlib.metadata import entry_points

    found: dict[str, Any] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _builtins():
            taken = f"{BUILTIN_PACKAGE}.{ep.name} (built in) declares"
        elif ep.name in found:
            first = found[ep.name]
            taken = f"the entry point {first.name} = {first.value} of {_distribution(first)} declares"
        else:
            found[ep.name] = ep
            continue
        key = (ep.name, ep.value, _distribution(ep))
        if key not in _warned:
            _warned.add(key)
            warnings.warn(
                f"the entry point {ep.name} = {ep.value} of {_distribution(ep)} (group {ENTRY_POINT_GROUP!r}) "
                f"names the kind {ep.name!r}, which {taken}: it is not loaded; give the kind another name",
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


def _load_entry_point(kind: str, entry_point: Any) -> KindRecord:
    where = f"the entry point {kind} = {entry_point.value} of {_distribution(entry_point)}"
    try:
        declared = entry_point.load()
    except Exception as exc:  # a broken plug-in must not look like an unknown kind
        raise RegistryError(
            f"tokenizer kind {kind!r} comes from {where} (group {ENTRY_POINT_GROUP!r}), which failed to load: {exc}"
        ) from exc
    if isinstance(declared, KindRecord):
        if declared.name != kind:
            raise RegistryError(f"{where} names a KindRecord of kind {declared.name!r}, not {kind!r}")
        record = declared
    elif callable(declared):
        # 0.2's form: the factory itself, carrying its detector and precedence as attributes.
        warnings.warn(
            f"{where} names a factory, not a KindRecord: name a record, "
            f"`KIND = KindRecord({kind!r}, factory, detect=..., precedence=...)` (oasr_tok.kinds.api); "
            f"a factory's detect / precedence attributes are read until oasr_tok {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=4,
        )
        precedence = getattr(declared, "precedence", PLUGIN_PRECEDENCE)
        record = KindRecord(kind, declared, getattr(declared, "detect", None), precedence)
    else:
        raise RegistryError(f"{where} names {short_repr(declared)}, not a KindRecord")
    with _lock:
        known = _registered.setdefault(kind, (record, where))
    return known[0]


def _loaded_entry_points() -> None:
    """Every entry-point kind's record in the registry (resolution asks their detectors)."""
    for kind, entry_point in _entry_points().items():
        with _lock:
            loaded = kind in _registered
        if not loaded:
            _load_entry_point(kind, entry_point)


# -- what the rest of the package asks -------------------------------------------------------------


def available_kinds() -> list[str]:
    """Every kind build_tokenizer accepts: built-ins, registered and entry-point kinds (sorted)."""
    return sorted(set(_builtins()) | set(_registered) | set(_entry_points()))


_NOT_IMPORTED = object()


def _check_backend(kind: str, backend: str | None, extra: str | None) -> None:
    """BackendNotInstalledError with the install hint when the kind's package is missing. Found,
    not imported: a kind imports it when it needs it (the huggingface kind only at its first
    encode; importing `tokenizers` was a visible part of each load)."""
    if backend is None:
        return
    module = sys.modules.get(backend, _NOT_IMPORTED)
    try:
        found = module is not None if module is not _NOT_IMPORTED else importlib.util.find_spec(backend) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise BackendNotInstalledError(
            f"the {kind!r} tokenizer kind needs the {backend!r} package, which is not installed; "
            f"install it with: pip install 'oasr_tok[{extra}]'"
        )


def is_builtin(kind: str) -> bool:
    """Whether `kind` is one oasr_tok ships (not registered in its place, nor a plugin's): those
    read their files through files/readers.py (a path a library opens itself passed through
    on_disk first), so a tokenizer rebuilt by value writes its files only when they are read."""
    with _lock:
        if kind in _registered:
            return False
    return kind in _builtins()


def get_factory(kind: str) -> Factory:
    """The factory for `kind` (its module imported, for a built-in), once its backend is found."""
    with _lock:
        registered = _registered.get(kind)
    if registered is not None:
        record = registered[0]
    elif kind in _builtins():
        _, _, backend, extra = _builtins()[kind]
        _check_backend(kind, backend, extra)  # before importing the kind: the hint, not an ImportError
        record = _builtin_record(kind)
    else:
        entry_point = _entry_points().get(kind)
        if entry_point is None:
            raise UnknownKindError(f"unknown tokenizer kind {kind!r}; known kinds: {', '.join(available_kinds())}")
        record = _load_entry_point(kind, entry_point)
    _check_backend(kind, record.backend, record.extra)
    return record.factory


def build(spec: TokenizerSpec) -> TokenizerContract:
    """Build the tokenizer a spec describes with its kind's factory, checking that it made a
    tokenizer (the public face is oasr_tok.build_tokenizer, loading/build.py)."""
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


#: Detectors that find another kind's files inside a container: name -> (module, precedence).
CONTAINERS = {".nemo archive": ("oasr_tok.loading.nemo_archive", 90)}


@dataclass(frozen=True)
class DetectorEntry:
    """One source of evidence resolution asks: a kind's detector, or a container's."""

    name: str  # the kind, or the container (".nemo archive")
    precedence: int
    load: Callable[[], Detector]  # the detector (a built-in one's module imported only now)
    builtin: bool

    def detect(self, path: str) -> Any:
        return self.load()(path)


def _container_detector(module_name: str) -> Callable[[], Detector]:
    def load() -> Detector:
        detect: Detector = importlib.import_module(module_name).detect
        return detect

    return load


def _given(detect: Detector) -> Callable[[], Detector]:
    return lambda: detect


def _builtin_detector(kind: str) -> Callable[[], Detector]:
    def load() -> Detector:
        detect = _builtin_record(kind).detect
        assert detect is not None  # its index line gives it a precedence: it has a detector
        return detect

    return load


def detectors() -> list[DetectorEntry]:
    """Every detector, in the order of evidence: built-in kinds (a kind registered under a
    built-in's name replaces its detector too), registered and entry-point kinds with a
    detector, and the containers. Entry-point kinds are loaded to be asked."""
    _loaded_entry_points()
    with _lock:
        registered = {name: record for name, (record, _) in _registered.items()}
    out = [
        DetectorEntry(name, precedence, _builtin_detector(name), True)
        for name, precedence, _, _ in _builtins().values()
        if precedence is not None and name not in registered  # (a replaced one's detector is below)
    ]
    out.extend(
        DetectorEntry(name, record.precedence, _given(record.detect), False)
        for name, record in registered.items()
        if record.detect is not None
    )
    out.extend(
        DetectorEntry(name, precedence, _container_detector(module), True)
        for name, (module, precedence) in CONTAINERS.items()
    )
    out.sort(key=lambda d: (d.precedence, d.name))
    return out
