"""The package as a type checker sees it: every compiled module has a stub that matches it, a
user's program written against the public API type-checks under mypy --strict with the types
the API promises, and the mistakes a checker should catch are caught.

mypy reads oasr_tok as an installed package (PYTHONPATH: the folder holding the oasr_tok that
the tests import, the source tree built in place or the installed wheel), so what it sees is
what a user's checker sees: py.typed, the .pyi stubs and the annotated Python modules."""

from __future__ import annotations

import importlib.machinery
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paths import PACKAGE_PARENT, subprocess_env

pytest.importorskip("mypy", reason="mypy is not installed (it comes with the test and lint extras)")

PROGRAMS = Path(__file__).resolve().parent / "typing_programs"
PACKAGE = PACKAGE_PARENT / "oasr_tok"
ENGINE = PACKAGE / "_engine"

# Cython's own names in every compiled module, not part of any module's API.
STUBTEST_ALLOWLIST = """\
oasr_tok\\._engine\\.\\w+\\.__test__
oasr_tok\\._engine\\.\\w+\\.__pyx_capi__
oasr_tok\\._engine\\.\\w+(\\.\\w+)?\\.__reduce_cython__
oasr_tok\\._engine\\.\\w+(\\.\\w+)?\\.__setstate_cython__
"""


def _compiled_modules() -> list[str]:
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    names = sorted({p.name.split(".", 1)[0] for p in ENGINE.iterdir() if p.name.endswith(suffixes)})
    assert names, f"no compiled module in {ENGINE}: build the package first"
    return names


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # From a folder of its own: no project configuration applies, as for a user's program.
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd, env=subprocess_env(), timeout=600
    )


def _mypy(program: str, folder: Path) -> subprocess.CompletedProcess[str]:
    shutil.copy(PROGRAMS / program, folder / program)
    return _run(
        [
            "mypy",
            "--strict",
            "--show-error-codes",
            "--no-error-summary",
            "--no-pretty",
            "--cache-dir",
            str(folder / ".mypy_cache"),
            program,
        ],
        folder,
    )


def _errors(output: str, program: str) -> set[tuple[int, str]]:
    found = re.findall(rf"^{re.escape(program)}:(\d+): error: .*\[([a-z-]+)\]$", output, re.M)
    return {(int(line), code) for line, code in found}


def test_every_compiled_module_has_a_stub_and_the_package_is_typed():
    missing = [name for name in _compiled_modules() if not (ENGINE / f"{name}.pyi").is_file()]
    assert not missing, f"compiled modules without a .pyi stub beside them: {missing}"
    assert (PACKAGE / "py.typed").is_file()


def test_stubs_match_the_compiled_modules(tmp_path: Path):
    # stubtest imports each compiled module and compares every name, signature, default and
    # base class with its stub (the __init__ of a cdef class is not introspectable: those
    # were checked by hand against the .pyx).
    allowlist = tmp_path / "allowlist.txt"
    allowlist.write_text(STUBTEST_ALLOWLIST, encoding="utf-8")
    modules = [f"oasr_tok._engine.{name}" for name in _compiled_modules()]
    out = _run(["mypy.stubtest", "--allowlist", str(allowlist), *modules], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_users_program_type_checks_strictly_and_runs(tmp_path: Path):
    out = _mypy("user_program.py", tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    # It does what it says at run time too (on the package's own symbol_table demo table).
    ran = subprocess.run(
        [sys.executable, "user_program.py", str(PACKAGE / "data" / "demo")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_misuse_of_the_api_is_rejected(tmp_path: Path):
    expected = {
        (number, match.group(1))
        for number, line in enumerate((PROGRAMS / "misuse.py").read_text(encoding="utf-8").splitlines(), start=1)
        if (match := re.search(r"# E: ([a-z-]+)$", line))
    }
    assert len(expected) >= 10
    out = _mypy("misuse.py", tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert _errors(out.stdout, "misuse.py") == expected, out.stdout + out.stderr
