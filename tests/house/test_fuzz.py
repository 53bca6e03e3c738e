"""The fuzz suite (issue 12): hostile id objects and containers against every compiled entry
point, forged and foreign stream states, forged Stream and Revisions pickles (by reference, by
value, by spec; issue 53), mutated real assets against every reader and load/describe, and the
CLI on bad stdin and paths. The targets are in fuzz_targets.py (which
says why hypothesis rather than atheris); each runs in a child process under a memory limit,
so a crash or runaway allocation is a failed test showing the input it died on.

Short by default (a few dozen examples per target); HYPOTHESIS_PROFILE=ci runs the long
profile (.ci/run), OASR_FUZZ_EXAMPLES=N sets the count directly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hostile import SANITIZED
from paths import PACKAGE_PARENT, subprocess_env

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (short, long) examples per target: the CLI and asset targets start processes or build
# tokenizers per example, so they get fewer.
COUNTS = {"ids": (40, 600), "states": (40, 600), "assets": (25, 300), "cli": (8, 80), "pickles": (40, 600)}
MEMORY_MB = 3072


def _examples(target: str) -> int:
    if os.environ.get("OASR_FUZZ_EXAMPLES"):
        return int(os.environ["OASR_FUZZ_EXAMPLES"])
    short, long = COUNTS[target]
    return long if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else short


@pytest.mark.fuzz
@pytest.mark.parametrize("target", sorted(COUNTS))
def test_fuzz(target, tmp_path):
    log = tmp_path / "last-inputs.log"
    env = subprocess_env()
    if SANITIZED:  # AddressSanitizer's shadow memory needs the address space: limit malloc instead
        env["ASAN_OPTIONS"] = f"{env.get('ASAN_OPTIONS', '')}:malloc_limit_mb={MEMORY_MB}:allocator_may_return_null=1"
        limit = ""
    else:
        limit = f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_MB << 20}, {MEMORY_MB << 20}))\n"
    code = (
        "import resource, sys\n" + limit + f"sys.path.insert(0, {TESTS!r})\n"
        "import fuzz_targets\n"
        f"fuzz_targets.main({target!r}, {_examples(target)}, {str(log)!r})\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, cwd=PACKAGE_PARENT, timeout=3600
    )
    if result.returncode != 0:
        inputs = log.read_text(encoding="utf-8", errors="replace").splitlines()[-4:] if log.exists() else []
        pytest.fail(
            f"fuzz target {target!r} failed (exit {result.returncode}; negative: killed by that signal)\n"
            "last inputs:\n  " + "\n  ".join(inputs) + "\n"
            f"stderr:\n{result.stderr.decode('utf-8', 'replace')[-6000:]}"
        )
