"""Running hostile cases in a child process: a crash (a signal, an abort) or runaway memory
there is a failed test with the child's output, never a dead test run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from paths import PACKAGE_PARENT, subprocess_env

_PRELUDE = """\
import json, resource, sys
limit = {memory} * 1024 * 1024
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
"""


def run_child(code: str, memory_mb: int = 0, timeout: float = 300, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter that imports this checkout's oasr_tok, under an
    address-space limit of `memory_mb` (0: none)."""
    source = _PRELUDE.format(memory=memory_mb) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", source],
        input=stdin,
        capture_output=True,
        env=subprocess_env(),
        cwd=PACKAGE_PARENT,
        timeout=timeout,
    )


def in_child(code: str, memory_mb: int = 0, timeout: float = 300) -> Any:
    """The JSON that `code` prints on its last line of stdout; the test fails, showing the
    child's stderr, if the child dies or prints none."""
    result = run_child(code, memory_mb, timeout)
    lines = result.stdout.decode("utf-8", "replace").strip().splitlines()
    if result.returncode != 0 or not lines:
        pytest.fail(
            f"child exited with {result.returncode} (negative: killed by that signal)\n"
            f"stdout: {result.stdout.decode('utf-8', 'replace')[-2000:]}\n"
            f"stderr: {result.stderr.decode('utf-8', 'replace')[-4000:]}"
        )
    return json.loads(lines[-1])
