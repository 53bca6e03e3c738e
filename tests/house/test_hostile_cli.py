"""The oasr-tok command on hostile input: bad stdin, huge ids, paths that are not UTF-8, revisions
and words input: one line on stderr and its exit code, never a traceback.

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import os

import pytest

from hostile import run_cli, small_table
from paths import shared

SHERPA = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")


def _one_line_error(result, code: int) -> None:
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == code, stderr
    assert "Traceback" not in stderr and "lost sys.stderr" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr


@pytest.mark.parametrize("command", ["decode", "stream", "words"])
@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param(b"\xff\xfe[\x001\x00]\x00\n", id="utf16-bom"),
        pytest.param("[1, 2]\n".encode("utf-16-le"), id="utf16-no-bom"),
        pytest.param(b"[1, 2, \xc3]\n", id="truncated-utf8"),
        # Named, not shown: pytest puts a test's id in the environment of its subprocesses
        # (PYTEST_CURRENT_TEST), and an id of 200,000 brackets is past the kernel's limit for one.
        pytest.param(b"[" * 100_000 + b"]" * 100_000 + b"\n", id="deeper-than-recursion-limit"),
        pytest.param(b"[" + b"9" * 5000 + b"]\n", id="5000-digit-id-in-list"),
        pytest.param(b"9" * 5000 + b"\n", id="5000-digit-id"),
        pytest.param(b'{"ids": [' + b"[" * 50_000 + b"]" * 50_000 + b'], "starts": [0]}\n', id="deep-words-json"),
    ],
)
def test_cli_bad_stdin_is_one_line_and_exit_3(command, stdin):
    """Hostile input, issue 12, finding 13: the CLI on bad stdin, bad ids and bad paths: one
    line on stderr, never a traceback."""
    _one_line_error(run_cli([command, SHERPA], stdin), 3)


def test_cli_huge_id_argument():
    """Hostile input, issue 12, finding 13: the CLI on bad stdin, bad ids and bad paths: one
    line on stderr, never a traceback."""
    _one_line_error(run_cli(["decode", SHERPA, "9" * 5000]), 3)


def test_cli_path_that_is_not_utf8(tmp_path):
    """Hostile input, issue 12, finding 13: the CLI on bad stdin, bad ids and bad paths: one
    line on stderr, never a traceback."""
    bad = os.fsencode(str(tmp_path)) + b"/\xff\xfe-not-utf8"
    for args in (["describe", bad], ["decode", bad, "1"], ["--json", "describe", bad]):
        _one_line_error(run_cli(args), 1)


def test_the_cli_revisions_and_words_on_hostile_input(tmp_path):
    """Hostile input, third round (issue 35), defect 3: typed errors, never a traceback (the
    CLI's stream --revisions and words)."""
    table = str(tmp_path / "tokens.txt")
    small_table(tmp_path)
    out = run_cli(["stream", "--revisions", table], b"[3, 4, \xff]\n")
    assert out.returncode == 3 and out.stderr.decode().count("\n") == 1 and b"Traceback" not in out.stderr
    out = run_cli(["stream", "--revisions", "--agreement", str(10**30), table], b"[3, 4]\n[3, 4, 5]\n")
    assert out.returncode == 0, out.stderr
    out = run_cli(["words", "--format", "srt", table], b'{"ids": [3, 4], "starts": [0, 1.7e308]}\n')
    assert out.returncode == 3 and b"Traceback" not in out.stderr and out.stderr.decode().count("\n") == 1
