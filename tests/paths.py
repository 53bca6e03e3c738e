"""Locations of test inputs. Real upstream files are read from ../shared/fixtures (never
copied into the repository); the project's own small files are in fixtures/."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fixtures"
OWN = ROOT / "fixtures"


def shared(relative: str) -> str:
    path = SHARED / relative
    if not path.exists():
        raise FileNotFoundError(
            f"real fixture {path} is missing: the tests expect ../shared/fixtures beside the checkout"
        )
    return str(path)


def own(relative: str) -> str:
    path = OWN / relative
    if not path.exists():
        raise FileNotFoundError(f"project fixture {path} is missing: run python fixtures/make_fixtures.py")
    return str(path)


def _package_parent() -> Path:
    import oasr_tok

    return Path(oasr_tok.__file__).resolve().parent.parent


# Subprocesses must import the same oasr_tok as the tests: the source tree when it is built in
# place (pip install -e), the installed wheel under tox. Run them from the folder that holds
# that package, with it on PYTHONPATH.
PACKAGE_PARENT = _package_parent()


def subprocess_env(**extra: str) -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT), **extra}
