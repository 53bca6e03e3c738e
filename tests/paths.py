"""Locations of test inputs. Real upstream files are read from ../shared/fixtures (never
copied into the repository); the project's own small files are in fixtures/."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("OASR_TOK_SHARED_FIXTURES", ROOT.parent / "shared" / "fixtures"))
OWN = ROOT / "fixtures"


def peers_root() -> Path:
    """Where fixtures/fetch_*.py unpack the peers' own files (never into the repository)."""
    return Path(os.environ.get("OASR_TOK_PEERS") or Path.home() / ".cache" / "oasr_tok" / "peers")


def shared(relative: str) -> str:
    # No check here: paths are taken at import time, and a test that opens a missing one is
    # turned into a skip by conftest.py (or a failure where OASR_TOK_REQUIRE_REAL_FILES=1).
    return str(SHARED / relative)


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

    # PYTHONSAFEPATH: `python -c` / `-m` would otherwise put the working directory first on
    # sys.path, and from a source checkout or an unpacked sdist that is an unbuilt oasr_tok.
    return {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT), "PYTHONSAFEPATH": "1", **extra}


def require_shared(relative: str) -> str:
    """shared(relative) for a test that cannot name the file in its own failure (a symlink, a
    child process): skip now when the file is absent, fail in strict mode (CI)."""
    path = SHARED / relative
    if not path.exists():
        import pytest

        message = f"needs the real upstream file {path} (../shared/fixtures beside the checkout is absent)"
        if os.environ.get("OASR_TOK_REQUIRE_REAL_FILES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return str(path)
