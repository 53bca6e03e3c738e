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
