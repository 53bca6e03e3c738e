"""Adding a kind takes four files and a CHANGELOG line for a built-in kind, two files for a
plug-in, both declared by the same record and both passing the contract suite, oasr_tok.testing
(docs/architecture.md § Adding a kind).

The test does what a newcomer does, in a copy of the project: it writes a toy built-in kind,
`charlist` (a `chars.txt`, one character a line), as its module (oasr_tok/kinds/charlist.py,
written against oasr_tok.kinds.api alone), its contract case (tests/cases/charlist.py), its
page (docs/kinds/charlist.md) and a CHANGELOG line; runs the one documented generator
(docs/kind_tables.py, which writes the README's kind table and docs/cli.md's order of evidence
from the kinds); then runs the suite in the copy. Nothing else is touched by hand, and the test
checks that exactly those files changed.

The copy holds the project's sources (and, when the suite runs against an installed wheel, that
wheel's compiled modules laid into them). By default the copy runs the tests that know the kinds (the contract suite on the new case, the
documents, the registry, resolution, the layers, the demo); with OASR_TOK_NEW_KIND_TESTS=all it
runs the whole suite (CI's `house` tier, .ci/house).
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paths import PACKAGE_PARENT, ROOT, SHARED

MODULE = '''"""The charlist kind: a `chars.txt` holding one character a line; id i is line i's character
(docs/kinds/charlist.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from .api import KindRecord, MalformedAssetError, PieceTable, TableMethods, Tokenizer, TokenizerSpec, read_lines

__all__ = ["CharListTokenizer"]


class CharListTokenizer(TableMethods, Tokenizer):
    """Every id is one character; decoding joins them."""

    def __init__(self, spec: TokenizerSpec) -> None:
        self.spec = spec
        path = spec.file("chars")
        self._chars = read_lines(path, "chars.txt")
        for line, char in enumerate(self._chars, 1):
            if len(char) != 1:
                raise MalformedAssetError(f"{path}:{line}: a chars.txt line holds one character, got {char!r}")
        self._table = PieceTable(self._chars)

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> CharListTokenizer:
        return cls(spec)

    @property
    def vocab_size(self) -> int:
        return len(self._chars)

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset()

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self._chars[i] for i in self.check_ids(ids))

    def id_to_piece(self, token_id: int) -> str:
        return self._chars[self.check_ids([token_id])[0]]


def detect(path: str) -> dict[str, str] | None:
    """A `chars.txt` (in a folder, or given itself)."""
    candidate = os.path.join(path, "chars.txt") if os.path.isdir(path) else path
    return {"chars": candidate} if os.path.basename(candidate) == "chars.txt" and os.path.isfile(candidate) else None


# This kind's record: after FunASR's token lists, before the `piece id` unit tables.
KIND = KindRecord("charlist", CharListTokenizer.from_spec, detect, precedence=65)
'''

CASE = '''"""The charlist kind in the contract suite: its reference is the kind's own definition (id i is
line i's character), written here apart from the kind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import oasr_tok

from cases import KindCase

CHARS = ["a", "b", "c", " ", "é", "中", "文", "😀", "𝄞", "\\ufffd", "!"]


def _build():
    folder = Path(tempfile.mkdtemp(prefix="oasr_tok-charlist-"))
    (folder / "chars.txt").write_text("\\n".join(CHARS) + "\\n", encoding="utf-8")
    return oasr_tok.load(folder)


def _reference(tok):
    return lambda ids: "".join(CHARS[i] for i in ids)


CASES = [
    KindCase(
        "charlist/toy",
        _build,
        interesting=lambda tok: [0, 3, 7, 8, 9, tok.vocab_size - 1],
        realistic=lambda tok: [[0, 1, 2, 3, 5, 6, 7], [8, 3, 4, 9, 10]],
        reference=_reference,
    )
]
'''

PAGE = """# charlist

| files | reference it matches | encode |
|---|---|---|
| a `chars.txt`, one character a line | the definition: id i is line i's character | no |

**Recognised by:** a `chars.txt`.

A toy kind: the one tests/house/test_adding_a_kind.py adds to show what adding a kind takes.

```python
oasr_tok.TokenizerSpec("charlist", {"chars": "chars.txt"})
```
"""

CHANGELOG_LINE = "- The `charlist` kind: a `chars.txt`, one character a line (docs/kinds/charlist.md).\n"

WRITTEN_BY_HAND = {
    "oasr_tok/kinds/charlist.py": MODULE,
    "tests/cases/charlist.py": CASE,
    "docs/kinds/charlist.md": PAGE,
}
WRITTEN_BY_THE_GENERATOR = {"oasr_tok/kinds/_index.py", "README.md", "docs/cli.md"}
KIND_TESTS = [
    "tests/testing/test_every_kind.py",
    "tests/house/test_docs.py",
    "tests/house/test_layers.py",
    "tests/core/test_spec_registry.py",
    "tests/loading/test_resolve.py",
    "tests/house/test_demo.py",
    "tests/core/test_plugin_kind.py",
    "tests/house/test_doctests.py",
]
#: What a run of the suite leaves in a checkout (pytest-benchmark's store, hypothesis' database, the
#: caches): neither copied nor counted as a change (the suite may run from outside the checkout,
#: with --rootdir, and then these are made in the copy alone).
RUN_LEFTOVERS = [".benchmarks", "__pycache__", ".hypothesis", ".pytest_cache"]
_SKIP = shutil.ignore_patterns(".git", ".venv", ".tox", "build", "dist", "*.egg-info", "results", *RUN_LEFTOVERS)


def _copy_project(to: Path) -> Path:
    """The project beside a `shared` link (the real files, where they are). When the tests run
    against an installed wheel, its compiled modules are laid into the copy's sources."""
    project = to / "main"
    shutil.copytree(ROOT, project, ignore=_SKIP)
    if PACKAGE_PARENT.resolve() != ROOT.resolve():
        installed = PACKAGE_PARENT / "oasr_tok"
        for compiled in installed.rglob("*"):
            if compiled.suffix in {".so", ".pyd"}:
                shutil.copy2(compiled, project / "oasr_tok" / compiled.relative_to(installed))
    if SHARED.is_dir():
        (to / "shared").mkdir()
        (to / "shared" / "fixtures").symlink_to(SHARED)
    return project


def _changed(before: Path, after: Path) -> set[str]:
    changed: set[str] = set()

    def walk(comparison: filecmp.dircmp, prefix: str) -> None:
        changed.update(prefix + name for name in comparison.left_only + comparison.right_only + comparison.diff_files)
        for name, sub in comparison.subdirs.items():
            walk(sub, prefix + name + "/")

    walk(filecmp.dircmp(before, after, ignore=RUN_LEFTOVERS), "")
    return changed


def test_a_new_kind_takes_its_module_its_case_its_page_and_a_changelog_line(tmp_path):
    project = _copy_project(tmp_path)
    pristine = tmp_path / "pristine"
    shutil.copytree(project, pristine, symlinks=True)
    for relative, text in WRITTEN_BY_HAND.items():
        (project / relative).write_text(text, encoding="utf-8")
    changelog = project / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    at = text.index("## [Unreleased]\n") + len("## [Unreleased]\n")
    changelog.write_text(text[:at] + "\n### Added\n" + CHANGELOG_LINE + text[at:], encoding="utf-8")

    env = {**os.environ, "PYTHONPATH": str(project), "OASR_TOK_SHARED_FIXTURES": str(SHARED)}
    env.pop("PYTHONSAFEPATH", None)
    generated = subprocess.run(
        [sys.executable, "docs/kind_tables.py"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert generated.returncode == 0, generated.stderr
    assert _changed(pristine, project) == {*WRITTEN_BY_HAND, "CHANGELOG.md", *WRITTEN_BY_THE_GENERATOR}
    assert "[`charlist`](docs/kinds/charlist.md)" in (project / "README.md").read_text(encoding="utf-8")
    assert "| 65 | a `chars.txt` | charlist |" in (project / "docs" / "cli.md").read_text(encoding="utf-8")

    whole = os.environ.get("OASR_TOK_NEW_KIND_TESTS") == "all"
    tests = ["tests"] if whole else KIND_TESTS
    workers = ["-n", "2"] if whole else []
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", *workers, *tests, "--ignore=tests/house/test_adding_a_kind.py"]
        + ([] if whole else ["-k", "charlist or not TestEveryKind"]),
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert (
        "charlist"
        in subprocess.run(
            [sys.executable, "-c", "import oasr_tok; print(oasr_tok.available_kinds())"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
        ).stdout
    )
    # Running the suite wrote nothing into the project.
    assert _changed(pristine, project) == {*WRITTEN_BY_HAND, "CHANGELOG.md", *WRITTEN_BY_THE_GENERATOR}


@pytest.mark.parametrize("relative", sorted(WRITTEN_BY_HAND))
def test_the_toy_kinds_files_are_not_in_the_project(relative):
    """The toy kind lives in this test only (the project itself has eleven kinds)."""
    assert not (ROOT / relative).exists()


def test_a_plugin_kind_takes_two_files_from_the_docs_and_passes_the_contract_suite(tmp_path):
    """A newcomer's plug-in, from the docs alone: docs/architecture.md's `shout_kind.py` and
    `test_shout_kind.py`, copied as they are into an empty folder outside the project, and pytest
    run there on the installed oasr_tok: every test of oasr_tok.testing.KindContract passes."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"```python\n# (\w+\.py) — .*?\n(.*?)```", page, re.S))
    assert set(blocks) == {"shout_kind.py", "test_shout_kind.py"}, sorted(blocks)
    for name, code in blocks.items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    env.pop("PYTHONSAFEPATH", None)  # the folder itself is on the path, as when a user runs pytest there
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shout_kind.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    from oasr_tok.testing import KindContract

    tests = [name for name in dir(KindContract) if name.startswith("test_")]
    assert re.search(rf"\b{len(tests)} passed\b", run.stdout), run.stdout[-2000:]


def test_what_a_run_leaves_behind_is_not_a_change(tmp_path):
    """pytest-benchmark's store, hypothesis' database and the caches a run of the suite makes in
    a checkout are neither copied nor counted: run from outside the checkout (--rootdir), the
    suite makes them in the copy alone, and the toy kind's count of changed files held."""
    before, after = tmp_path / "before", tmp_path / "after"
    for folder in (before, after):
        (folder / "tests").mkdir(parents=True)
        (folder / "tests" / "a.py").write_text("x = 1\n")
    for leftover in RUN_LEFTOVERS:
        (after / leftover).mkdir()
        (after / leftover / "data").write_text("run\n")
        (after / "tests" / leftover).mkdir()
    assert _changed(before, after) == set()
    (after / "tests" / "a.py").write_text("x = 2\n")
    assert _changed(before, after) == {"tests/a.py"}
    (ROOT / ".benchmarks").mkdir(exist_ok=True)
    project = _copy_project(tmp_path / "copy")
    assert not (project / ".benchmarks").exists()
