"""The README's "Use" example runs as written, on the package's own demo files, and prints
exactly the output shown beneath it."""

from __future__ import annotations

import re
import subprocess
import sys

from paths import PACKAGE_PARENT, ROOT, subprocess_env


def _use_section() -> tuple[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```\s*\n.*?```text\n(.*?)```", section, re.S)
    assert match, "README's Use section lost its python example or the text block of its output"
    return match.group(1), match.group(2)


def test_readme_use_example_runs_and_prints_what_it_shows():
    code, shown = _use_section()
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=subprocess_env(PYTHONIOENCODING="utf-8"),
        cwd=PACKAGE_PARENT,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == shown


def test_the_architecture_plug_in_example_keeps_the_contracts():
    """docs/architecture.md's worked plug-in, as written: registered, built from a spec, and
    its compiled stream, pieces and words agree with its own decode."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# shout_kind\.py.*?)```", text, re.S)
    assert code, "docs/architecture.md lost its plug-in example"
    check = (
        code.group(1)
        + """
import random
import oasr_tok
oasr_tok.register_kind(KIND)
tok = oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec("shout", {}))
rng = random.Random(0)
for _ in range(200):
    ids = [rng.randrange(28) for _ in range(rng.randrange(30))]
    state = {}
    streamed = "".join(tok.decode_incremental([i], state) for i in ids) + tok.decode_incremental([], state, True)
    assert streamed == "".join(tok.token_pieces(ids)) == tok.decode(ids), ids
words = tok.word_timings([7, 8, 26, 0, 11, 11], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
print([w.text for w in words])
"""
    )
    out = subprocess.run(
        [sys.executable, "-c", check],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=subprocess_env(PYTHONIOENCODING="utf-8"),
        cwd=PACKAGE_PARENT,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "['HI', 'ALL']"


def _block(after: str, language: str) -> list[str]:
    """The command lines of the README's first ```language block after the text `after`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(rf"```{language}\n(.*?)```", text.split(after, 1)[1], re.S)
    assert block, f"README lost its {language} block after {after!r}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_first_command_installs_and_the_second_only_runs_the_tests():
    """README § Try it: the first command installs (and shows the demo), the second runs the
    suite without installing again; .ci/run's readme tier finds each by its own pattern."""
    first, second = _block("## Try it", "bash")
    assert first.startswith("python -m pip install ") and "python -m oasr_tok demo" in first
    assert second.startswith("python -m pytest ") and "pip" not in second
    patterns = re.findall(r"grep -m1 -E '([^']+)' README\.md", (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert [next(line for line in (first, second) if re.search(p, line)) for p in patterns] == [first, second]


def test_the_command_line_examples_run_on_the_demo_files():
    """The README's oasr-tok lines, run as written (from the checkout, where the demo's files
    are), print what their comments say they print."""
    lines = _block("The same is on the command line", "bash")
    assert len(lines) == 3
    for line in lines:
        command, _, comment = line.partition("  # ")
        assert "oasr-tok " in command
        shell = command.replace("oasr-tok ", f"{sys.executable} -m oasr_tok ")
        out = subprocess.run(
            ["bash", "-c", shell],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=subprocess_env(PYTHONIOENCODING="utf-8"),
            cwd=ROOT,
        )
        assert out.returncode == 0, (line, out.stderr)
        if comment.startswith("prints: "):
            assert out.stdout == comment[len("prints: ") :] + "\n", line
        else:
            assert "kind:          funasr_char" in out.stdout, out.stdout
