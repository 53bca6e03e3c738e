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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8",
                         env=subprocess_env(PYTHONIOENCODING="utf-8"), cwd=PACKAGE_PARENT)
    assert out.returncode == 0, out.stderr
    assert out.stdout == shown
