"""Check what `python -m build` made: the wheel carries the package only (Python files,
compiled modules, stubs, py.typed, the demo data; no generated C, no Cython sources), and the
sdist carries what building and testing need (the .pyx sources, tests, the project's fixtures)
and no generated C."""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path


def main(folder: str) -> int:
    dist = Path(folder)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    problems: list[str] = []
    if len(wheels) != 1 or len(sdists) != 1:
        problems.append(f"expected one wheel and one sdist in {dist}, found {wheels + sdists}")
    for wheel in wheels:
        names = zipfile.ZipFile(wheel).namelist()
        bad = [n for n in names if n.endswith((".c", ".pyx", ".pxd", ".h", ".o")) or "/tests/" in n]
        problems += [f"{wheel.name} ships {n}" for n in bad]
        for needed in ("oasr_tok/py.typed", "oasr_tok/__init__.py", "oasr_tok/data/demo/demo.json"):
            if needed not in names:
                problems.append(f"{wheel.name} lacks {needed}")
        compiled = [n for n in names if n.startswith("oasr_tok/_engine/") and n.endswith((".so", ".pyd"))]
        if not compiled:
            problems.append(f"{wheel.name} has no compiled module")
        # A type checker sees a compiled module through its stub only: every one needs its .pyi.
        for module in compiled:
            stub = module.split(".", 1)[0] + ".pyi"
            if stub not in names:
                problems.append(f"{wheel.name} ships {module} without its stub {stub}")
    for sdist in sdists:
        names = [n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n]
        problems += [f"{sdist.name} ships generated {n}" for n in names if n.endswith((".c", ".so"))]
        problems += [
            f"{sdist.name} ships {n} without its stub {n[:-4]}.pyi"
            for n in names
            if n.startswith("oasr_tok/_engine/") and n.endswith(".pyx") and n[:-4] + ".pyi" not in names
        ]
        for needed in (
            "setup.py",
            "pyproject.toml",
            "LICENSE",
            "tests/conftest.py",
            "oasr_tok/_engine/piece_table.pyx",
            "fixtures/make_fixtures.py",
        ):
            if needed not in names:
                problems.append(f"{sdist.name} lacks {needed}")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"check_dist: {len(wheels)} wheel, {len(sdists)} sdist, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "dist"))
