"""docs/architecture.md's five layers, as the code has them: every import of a module of
oasr_tok points at its own layer or one below, and no modules import each other in a circle
(imports read from the source, compiled modules included; lazy imports inside functions too)."""

from __future__ import annotations

import ast
import re

from paths import ROOT

PACKAGE = ROOT / "oasr_tok"

LAYERS = {
    5: {"__init__", "__main__", "cli", "demo", "description", "detokenizer", "nemo", "hf_ctc", "batch", "hotwords"},
    4: {"resolution", "build", "nemo_archive"},
    3: {"kinds"},
    2: {"tokenizer", "contract", "streaming", "prompting", "chat", "words", "pickling", "registry", "detection"}
    | {"revisions", "_revisions"},
    1: {"errors", "spec", "specials", "files", "archive", "assets", "segments", "subtitles", "serving", "envelopes"}
    | {
        "_ids",
        "_join",
        "_textbuf",
        "_piece_table",
        "_ctc",
        "_funasr",
        "_clean_spaces",
        "_gguf",
        "_jsonscan",
        "_words",
        "_wordtypes",
    }
    | {"_stream_record", "_stream", "_growtext"},
}


def _layer(module: str) -> int:
    top = module.split(".")[0]
    for layer, names in LAYERS.items():
        if top in names:
            return layer
    raise AssertionError(f"oasr_tok.{module} is in no layer of docs/architecture.md")


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
                upward.append(f"{_name(path)} (layer {mine}) imports {target} (layer {_layer(target)})")
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
    """_textbuf.h's code (the in-place text write, the state checks) has one compiled home,
    oasr_tok._textbuf; every other compiled module reaches it through _textbuf.pxd's functions
    and sees only its state record's type (_textstate.h)."""
    sources = sorted(PACKAGE.glob("*.pyx")) + sorted(PACKAGE.glob("*.pxd")) + sorted(PACKAGE.glob("*.h"))
    including = {p.name for p in sources if re.search(r'["<]_textbuf\.h[">]', p.read_text(encoding="utf-8"))}
    assert including == {"_textbuf.pyx"}


def test_free_threading_declarations_are_the_documented_ones():
    """A compiled module declares freethreading_compatible exactly when docs/architecture.md
    § Threads lists it as declared (the page says what the others still need)."""
    declared = {
        p.stem
        for p in PACKAGE.glob("*.pyx")
        if re.search(
            r"^# cython:.*\bfreethreading_compatible\s*=\s*True", p.read_text(encoding="utf-8").split("\n", 1)[0]
        )
    }
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    said = re.search(r"Declared `freethreading_compatible`: ((?:`\w+`(?:,\s+|\s+and\s+)?)+)", page)
    assert said, "docs/architecture.md no longer says which modules are declared"
    assert declared == set(re.findall(r"`(\w+)`", said.group(1)))


def test_only_the_text_buffer_reaches_into_cpython_private_api():
    """The in-place text write (_textbuf.h, documented there) is the one place that reads
    CPython's private str fields; no other compiled source calls a private function (_Py...)
    or reads a private struct field. PyUnstable_* is public (PEP 689)."""
    private = re.compile(r"\b_Py[A-Z]\w*|->\s*(ob_digit|ob_item|wstr|utf8|hash|ma_\w+)\b|\bob_digit\b")
    sources = [p for p in PACKAGE.glob("*") if p.suffix in {".pyx", ".pxd", ".h"} and p.name != "_textbuf.h"]
    found = {(p.name, m.group(0)) for p in sources for m in private.finditer(p.read_text(encoding="utf-8"))}
    assert not found
