"""Running hostile cases in a child process: a crash (a signal, an abort) or runaway memory
there is a failed test with the child's output, never a dead test run."""

from __future__ import annotations

import json
import os
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


#: Set by .ci/sanitizers: the compiled modules are built with AddressSanitizer, which reserves
#: terabytes of address space for its shadow memory, so an address-space limit cannot bound a
#: child there; ASan's own limit on what malloc hands out does.
SANITIZED = os.environ.get("OASR_TOK_SANITIZERS") == "1"


def run_child(code: str, memory_mb: int = 0, timeout: float = 300, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter that imports this checkout's oasr_tok, under an
    address-space limit of `memory_mb` (0: none; under the sanitizers, a limit on what malloc
    gives out)."""
    env = subprocess_env()
    if SANITIZED and memory_mb:
        env["ASAN_OPTIONS"] = f"{env.get('ASAN_OPTIONS', '')}:malloc_limit_mb={memory_mb}:allocator_may_return_null=1"
        memory_mb = 0
    source = _PRELUDE.format(memory=memory_mb) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", source],
        input=stdin,
        capture_output=True,
        env=env,
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


def run_cli(args: list, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """`python -m oasr_tok ARGS` with `stdin`, as a user's shell would run it (ASCII stdout)."""
    return subprocess.run(
        [sys.executable, "-m", "oasr_tok", *args],
        input=stdin,
        capture_output=True,
        env=subprocess_env(PYTHONIOENCODING="ascii"),
        cwd=PACKAGE_PARENT,
        timeout=120,
    )


def small_table(folder) -> Any:
    """A `piece id` table of a dozen symbols (`<blk>`, `<sos/eos>`, `<unk>`, then ▁ and a-h) written
    into `folder` and loaded: the small symbol table the hostile-input tests decode with."""
    import oasr_tok

    path = folder / "tokens.txt"
    path.write_text(
        "<blk> 0\n<sos/eos> 1\n<unk> 2\n" + "".join(f"{c} {i + 3}\n" for i, c in enumerate("▁abcdefgh")), "utf-8"
    )
    return oasr_tok.load(path)
