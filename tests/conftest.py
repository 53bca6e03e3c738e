"""Shared test setup: hypothesis profiles and where the real upstream fixtures live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # strategies.py and cases/ import as top-level modules

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
# 200 examples per property keeps CI's run of 3,000 tests near ten minutes on 2 cores.
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile("dev", max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# The real upstream files live in ../shared/fixtures beside the checkout (fixtures/README.md in
# that folder says where each comes from). Without them, a test that opens one is skipped with
# the file it needed as the reason; CI sets OASR_TOK_REQUIRE_REAL_FILES=1 so that nothing can
# hide behind such a skip there.
import pytest  # noqa: E402

from paths import SHARED  # noqa: E402

REQUIRE_REAL_FILES = os.environ.get("OASR_TOK_REQUIRE_REAL_FILES") == "1"


def _missing_real_file(text: str) -> str | None:
    """The first path under SHARED named in a failure's text, when that file does not exist."""
    start = text.find(str(SHARED))
    if start < 0:
        return None
    path = text[start:].split("'")[0].split('"')[0].split()[0].rstrip(":,)")
    return None if os.path.exists(path) else path


def _skip_reason(path: str) -> str:
    return f"needs the real upstream file {path} (../shared/fixtures beside the checkout is absent)"


def pytest_sessionstart(session: pytest.Session) -> None:
    if REQUIRE_REAL_FILES and not SHARED.is_dir():
        raise pytest.UsageError(f"OASR_TOK_REQUIRE_REAL_FILES=1 but {SHARED} is not a folder")


# Only when the whole folder is absent: a test whose failure names one of its files (an
# AssetNotFoundError, a FileNotFoundError, a child process's stderr) needed it.
_SKIP_MISSING = not REQUIRE_REAL_FILES and not SHARED.is_dir()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    if _SKIP_MISSING and report.failed:
        missing = _missing_real_file(str(report.longrepr))
        if missing is not None:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, _skip_reason(missing))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    report = yield
    if _SKIP_MISSING and report.failed:
        missing = _missing_real_file(str(report.longrepr))
        if missing is not None:
            report.outcome = "skipped"
            report.longrepr = (str(collector.path), 0, _skip_reason(missing))
    return report
