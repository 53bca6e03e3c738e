"""docs/architecture.md's rooms and floors, as the code has them: every import of a module of
oasr_tok points at its own room or a room on a lower floor, and no modules import each other in
a circle (imports read from the source, compiled modules included; lazy imports inside functions
too)."""

from __future__ import annotations

import ast
import re

from paths import ROOT

PACKAGE = ROOT / "oasr_tok"

# The rooms, ground floor first: each imports only from its own floor or one below (root
# modules are rooms of their own; docs/architecture.md § Rooms draws them).
FLOORS = [
    {"errors", "spec", "_moved"},
    {"outputs"},
    {"_engine"},
    {"files"},
    {"core"},
    {"kinds"},
    {"loading"},
    {"toolkits"},
    {"cli", "demo", "__init__", "__main__"},
    {"integrations", "testing"},
]
ENGINE = PACKAGE / "_engine"
#: The most modules the package's root may hold (issue 45: the rest live in rooms).
ROOT_MODULES = 12


def _layer(module: str) -> int:
    top = module.split(".")[0]
    for floor, names in enumerate(FLOORS, 1):
        if top in names:
            return floor
    raise AssertionError(f"oasr_tok.{module} is in no room of docs/architecture.md")


def _name(path) -> str:
    relative = path.relative_to(PACKAGE).with_suffix("")
    return ".".join(relative.parts)


def _imports(path) -> set[str]:
    """The oasr_tok modules `path` imports (relative imports resolved)."""
    here = _name(path).split(".")
    package = here[:-1]  # the package a relative import starts from (an __init__ is its own package)
    found: set[str] = set()
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                    names = [target] if node.module else [".".join([*base, a.name]) for a in node.names]
                elif (node.module or "").startswith("oasr_tok"):
                    names = [node.module[len("oasr_tok.") :] if node.module != "oasr_tok" else ""]
                    if node.module == "oasr_tok":
                        names = [a.name for a in node.names]
                else:
                    continue
                found.update(n for n in names if n)
            elif isinstance(node, ast.Import):
                found.update(a.name[len("oasr_tok.") :] for a in node.names if a.name.startswith("oasr_tok."))
    else:  # .pyx / .pxd: cimports and imports by their absolute names
        for match in re.finditer(r"^\s*(?:from|cimport|import)\s+oasr_tok\.([\w.]+)", path.read_text("utf-8"), re.M):
            found.add(match.group(1))
    return {f for f in found if (PACKAGE / (f.replace(".", "/") + ".py")).exists() or _is_module(f)}


def _is_module(name: str) -> bool:
    base = PACKAGE / name.replace(".", "/")
    return base.is_dir() or any(base.with_suffix(s).exists() for s in (".py", ".pyx", ".pxd"))


def _modules():
    return [p for s in ("*.py", "*.pyx", "*.pxd") for p in PACKAGE.rglob(s) if "data" not in p.parts]


def test_every_import_points_down_the_layers():
    upward = []
    for path in _modules():
        mine = _layer(_name(path))
        for target in _imports(path):
            if _layer(target) > mine:
                upward.append(f"{_name(path)} (floor {mine}) imports {target} (floor {_layer(target)})")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_circles():
    graph: dict[str, set[str]] = {}
    for path in _modules():
        graph.setdefault(_name(path), set()).update(t for t in _imports(path) if t != _name(path))
    # __init__ files re-export their package: a module importing `oasr_tok.kinds` is not a circle.
    done: set[str] = set()
    stack: list[str] = []

    def visit(node: str) -> None:
        if node in stack:
            raise AssertionError("import circle: " + " -> ".join(stack[stack.index(node) :] + [node]))
        if node in done:
            return
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        stack.pop()
        done.add(node)

    for node in sorted(graph):
        if node != "__init__":
            visit(node)


def test_the_text_buffer_is_compiled_into_one_module():
    """textbuf.h's code (the in-place text write, the state checks) has one compiled home,
    oasr_tok._engine.textbuf; every other compiled module reaches it through textbuf.pxd's
    functions and sees only its state record's type (textstate.h)."""
    sources = sorted(ENGINE.glob("*.pyx")) + sorted(ENGINE.glob("*.pxd")) + sorted(ENGINE.glob("*.h"))
    including = {p.name for p in sources if re.search(r'["<]textbuf\.h[">]', p.read_text(encoding="utf-8"))}
    assert including == {"textbuf.pyx"}


def test_free_threading_declarations_are_the_documented_ones():
    """A compiled module declares freethreading_compatible exactly when docs/architecture.md
    § Threads lists it as declared (the page says what the others still need)."""
    declared = {
        p.stem
        for p in ENGINE.glob("*.pyx")
        if re.search(
            r"^# cython:.*\bfreethreading_compatible\s*=\s*True", p.read_text(encoding="utf-8").split("\n", 1)[0]
        )
    }
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    said = re.search(r"Declared `freethreading_compatible`: ((?:`\w+`(?:,\s+|\s+and\s+)?)+)", page)
    assert said, "docs/architecture.md no longer says which modules are declared"
    assert declared == set(re.findall(r"`(\w+)`", said.group(1)))


def test_only_the_text_buffer_reaches_into_cpython_private_api():
    """The in-place text write (textbuf.h, documented there) is the one place that reads
    CPython's private str fields; no other compiled source calls a private function (_Py...)
    or reads a private struct field. PyUnstable_* is public (PEP 689)."""
    private = re.compile(r"\b_Py[A-Z]\w*|->\s*(ob_digit|ob_item|wstr|utf8|hash|ma_\w+)\b|\bob_digit\b")
    sources = [p for p in ENGINE.glob("*") if p.suffix in {".pyx", ".pxd", ".h"} and p.name != "textbuf.h"]
    found = {(p.name, m.group(0)) for p in sources for m in private.finditer(p.read_text(encoding="utf-8"))}
    assert not found


def test_the_root_holds_few_modules_and_every_compiled_one_is_in_the_engine():
    root = sorted(p.name for p in PACKAGE.iterdir() if p.suffix in {".py", ".pyx"})
    assert len(root) <= ROOT_MODULES, root
    compiled = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.pyx"))
    assert compiled and all(name.startswith("_engine/") for name in compiled), compiled


def test_every_room_is_on_a_floor():
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    rooms |= {p.stem for p in PACKAGE.glob("*.py")}
    assert rooms == set().union(*FLOORS)


def test_the_old_public_paths_are_the_moved_modules():
    """`import oasr_tok.<old>` (0.2's paths) gives the module object now at its room's path, in
    a fresh interpreter (nothing imported before but oasr_tok), with its own __spec__ intact, and
    one DeprecationWarning that names the new path and the release that removes the old one,
    pointing at the import statement."""
    import subprocess
    import sys

    from oasr_tok._moved import MOVED, REMOVED_IN

    from paths import subprocess_env

    program = (
        "import importlib, sys, warnings, oasr_tok\n"
        "from oasr_tok._moved import MOVED\n"
        "warnings.simplefilter('error')  # nothing else may warn\n"
        "for old, new in MOVED.items():\n"
        "    with warnings.catch_warnings(record=True) as seen:\n"
        "        warnings.simplefilter('always')\n"
        "        exec(f'import oasr_tok.{old} as was', globals())\n"
        "    now = importlib.import_module('oasr_tok.' + new)\n"
        "    assert was is now and now.__spec__.name == 'oasr_tok.' + new, (old, new)\n"
        "    assert [w.category for w in seen] == [DeprecationWarning], (old, seen)\n"
        "    print(old, '|', seen[0].filename, '|', seen[0].message)\n"
        "from oasr_tok.subtitles import to_srt\n"
        "from oasr_tok.nemo import NeMoTokenizer\n"
        "assert NeMoTokenizer is oasr_tok.NeMoTokenizer\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=subprocess_env())
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(MOVED) == 26
    for line, (old, new) in zip(lines, MOVED.items()):
        name, where, message = line.split(" | ")
        assert name == old and where == "<string>", line  # the import statement, not importlib's
        assert f"oasr_tok.{old} is deprecated" in message and f"import oasr_tok.{new}" in message, line
        assert f"oasr_tok {REMOVED_IN}" in message, line
    # An unknown name is still an ordinary ModuleNotFoundError.
    import pytest

    with pytest.raises(ModuleNotFoundError):
        __import__("oasr_tok.no_such_module")


def test_the_removal_release_is_documented_and_still_ahead():
    """The release that removes the old paths is the one the docs and the CHANGELOG name, and
    this version is before it."""
    import oasr_tok
    from oasr_tok._moved import REMOVED_IN

    def release(version: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.match(r"\d+(?:\.\d+)*", version).group(0).split("."))

    assert release(oasr_tok.__version__) < release(REMOVED_IN)
    for document in ("docs/architecture.md", "CHANGELOG.md"):
        assert f"until {REMOVED_IN}" in (ROOT / document).read_text(encoding="utf-8"), document


def test_the_documented_floors_are_these():
    """docs/architecture.md § Rooms draws each folder room on the floor FLOORS gives it."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = {name.rstrip("/"): int(floor) for floor, name in re.findall(r"^(\d+)\s+(\w+/)", page, re.M)}
    rooms = {room: floor for floor, names in enumerate(FLOORS, 1) for room in names if (PACKAGE / room).is_dir()}
    assert drawn == rooms


def _drawing() -> dict[int, str]:
    """docs/architecture.md § Rooms' drawing: floor -> the text of its rooms (a room's line and
    the indented lines that go on with it)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = page.split("## Rooms", 1)[1].split("```\n", 2)[1]
    floors: dict[int, str] = {}
    floor = None
    for line in block.splitlines():
        starts = re.match(r"(\d+)\s+(.*)", line)
        if starts:
            floor = int(starts.group(1))
            floors[floor] = floors.get(floor, "") + " " + starts.group(2)
        elif floor is not None and line.startswith(" ") and not line.strip().startswith("│"):
            floors[floor] += " " + line.strip()
    return floors


def test_the_rooms_drawing_names_every_module():
    """Every module of the package (compiled ones included) is named on its floor of the drawing,
    as `name` or, inside a room's package, `package/ (... name ...)`: the drawing is the map of
    the house, not of its folders. The kinds' own modules are named by the kinds' index and the
    README's table of kinds (docs/kind_tables.py writes both), so adding a kind leaves it alone;
    the parts of a kind that is a package are drawn."""
    from oasr_tok.core.registry import builtin_kinds

    drawn = _drawing()
    missing = []
    for path in _modules():
        if path.suffix == ".pxd":
            continue
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
            if len(parts) == 1:
                continue  # a room's own face
        if parts[0] == "kinds" and len(parts) == 2 and parts[1] in builtin_kinds():
            continue  # a kind's own module
        text = drawn.get(_layer(_name(path)), "")
        needed = [f"{parts[-2]}/"] if len(parts) > 2 else []
        needed.append(parts[-1])
        if not all(re.search(rf"(?<![\w/]){re.escape(word)}(?!\w)", text) for word in needed):
            missing.append(f"{'/'.join(parts)} (floor {_layer(_name(path))})")
    assert not missing, "docs/architecture.md § Rooms does not name: " + ", ".join(sorted(missing))


def test_the_kinds_reach_the_rest_of_the_package_through_the_kind_api_alone():
    """Every module of oasr_tok/kinds (the built-in kinds, their packages' parts, the room's
    helpers) imports the rest of oasr_tok only through oasr_tok.kinds.api, the public API a
    plug-in imports: what a built-in kind needs, a plug-in can reach."""
    outside = []
    for path in sorted((PACKAGE / "kinds").rglob("*.py")):
        if path.name == "api.py":
            continue
        outside += [f"{_name(path)} imports oasr_tok.{t}" for t in _imports(path) if t.split(".")[0] != "kinds"]
    assert not outside, "\n".join(outside)
    from oasr_tok.kinds import api

    assert all(getattr(api, name) is not None for name in api.__all__)  # lazy names included
