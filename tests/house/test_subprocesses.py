"""Every child Python a test starts imports the oasr_tok under test.

`python -c` and `python -m` put their working directory first on sys.path; run from an unpacked
sdist (the dist tier) that directory holds the unbuilt source package, and the child fails on a
compiled module the source tree does not have. A child therefore gets `env=subprocess_env()`
(PYTHONSAFEPATH, the tested package's parent on PYTHONPATH) or a `cwd` away from the sources.
"""

from __future__ import annotations

import ast
from pathlib import Path

from paths import ROOT

_STARTERS = {"run", "Popen", "check_output", "check_call", "call"}


def _starts_python(call: ast.Call) -> bool:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _STARTERS):
        return False
    if not (isinstance(func.value, ast.Name) and func.value.id == "subprocess") or not call.args:
        return False
    argv = call.args[0]
    if isinstance(argv, ast.List) and argv.elts:
        first = argv.elts[0]
        return isinstance(first, ast.Attribute) and first.attr == "executable"
    return True  # an argv built elsewhere: it may well start a Python


def _unguarded(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _starts_python(node):
            keywords = {keyword.arg for keyword in node.keywords}
            if not keywords & {"env", "cwd"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_child_python_imports_the_package_under_test() -> None:
    unguarded = [where for path in sorted((ROOT / "tests").rglob("*.py")) for where in _unguarded(path)]
    assert unguarded == [], "give these env=subprocess_env() (tests/paths.py) or a cwd: " + ", ".join(unguarded)


def test_the_check_finds_an_unguarded_child() -> None:
    tree = ast.parse('subprocess.run([sys.executable, "-c", code], check=False)')
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and _starts_python(node))
    assert not {keyword.arg for keyword in call.keywords} & {"env", "cwd"}
