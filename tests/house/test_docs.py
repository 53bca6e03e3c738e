"""The text kept true: the README's kind table is the registered kinds, every file a document
names exists, no document pastes benchmark figures (they live in benchmarks/RESULTS.md, written
by the report), and the version is the changelog's."""

from __future__ import annotations

import re

import pytest

import oasr_tok
from oasr_tok.core.registry import builtin_kinds

from paths import ROOT

DOCUMENTS = sorted(
    [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md", *ROOT.glob("docs/**/*.md")]
)
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
# (as far as docs/kind_tables.py counts: twelve built-in kinds and the toy one test_adding_a_kind.py adds)
NUMBERS += ["thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]


def _ids(path) -> str:
    return str(path.relative_to(ROOT))


def _kind_tables():
    import importlib.util

    spec = importlib.util.spec_from_file_location("kind_tables", ROOT / "docs" / "kind_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kind_tables_are_what_the_kinds_write():
    """The kinds' index (oasr_tok/kinds/_index.py), README.md's table of kinds (and its number
    word) and docs/cli.md's order of evidence are docs/kind_tables.py's output: from the kinds'
    records and each kind's page, so adding a kind touches none of them by hand."""
    tables = _kind_tables()
    stale = [str(path.relative_to(ROOT)) for path, text in tables.written().items() if path.read_text("utf-8") != text]
    assert not stale, f"{stale} are not what docs/kind_tables.py writes: run python docs/kind_tables.py"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert sorted(re.findall(r"^\| \[`([a-z_0-9]+)`\]\(docs/kinds/", readme, re.M)) == builtin_kinds()
    count = re.search(r"\b(\w+) tokenizer kinds\b", readme)
    assert count and count.group(1).lower() == NUMBERS[len(builtin_kinds())], count


@pytest.mark.parametrize("kind", builtin_kinds())
def test_every_kind_has_a_page_with_its_card(kind):
    tables = _kind_tables()
    files, reference, encode = tables.card(kind)
    assert files and reference and encode
    import importlib

    if importlib.import_module(f"oasr_tok.kinds.{kind}").KIND.detect is not None:
        assert tables.recognised_by(kind)


# A path a document names: a markdown link, or a repository path in backticks or prose.
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_PATH = re.compile(
    r"(?<![\w/.-])((?:docs|benchmarks|oasr_tok|tests|fixtures|\.ci)/[\w./*-]*[\w*]"
    r"|(?:README|CHANGELOG)\.md|setup\.py|pyproject\.toml|tox\.ini|Makefile)"
)


@pytest.mark.parametrize("document", DOCUMENTS, ids=_ids)
def test_every_file_a_document_names_exists(document):
    text = document.read_text(encoding="utf-8")
    missing = []
    for target in _LINK.findall(text):
        if "://" in target:
            continue
        if not (document.parent / target).exists():
            missing.append(target)
    for target in _PATH.findall(text):
        target = target.rstrip(".")
        if "*" in target:
            if not list(ROOT.glob(target)):
                missing.append(target)
        elif not (ROOT / target).exists():
            missing.append(target)
    assert not missing, f"{_ids(document)} names files that do not exist: {sorted(set(missing))}"


# A benchmark figure: a time, or a ratio written with ×.
_FIGURE = re.compile(r"\d(?:[.,]\d+)? ?(?:µs|ns|ms)\b|\d(?:\.\d+)? ?×|\d ?x faster")


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if d.name != "CHANGELOG.md"], ids=_ids)
def test_no_document_pastes_benchmark_figures(document):
    figures = [m.group(0) for m in _FIGURE.finditer(document.read_text(encoding="utf-8"))]
    assert not figures, (
        f"{_ids(document)} quotes measured figures {figures}: they go stale; point at benchmarks/RESULTS.md"
    )


def test_the_version_is_the_changelogs():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings, "CHANGELOG.md has no version headings"
    released = [h for h in headings if h != "Unreleased"]
    version = oasr_tok.__version__
    if version.endswith(".dev0"):
        assert headings[0] == "Unreleased"
        newer = tuple(map(int, version[: -len(".dev0")].split(".")))
        assert all(tuple(map(int, h.split("."))) < newer for h in released)
    else:
        assert headings[0] == version


def test_no_benchmark_figure_in_a_code_comment():
    """A comment says why the code is shaped so; the figure behind it lives in
    benchmarks/measurements.md (embedded in RESULTS.md), where a figure can be re-measured and
    dated. Domain facts (a 40 ms frame, a 10 ms feature hop) are not benchmark figures."""
    import re

    figure = re.compile(r"\b\d[\d,.]* ?(µs|us|ns|ms)\b|callgrind|\d+% (more|fewer|faster|slower|of)")
    allowed = ("frames are 40 ms", "10 ms for 80-dim fbank")
    found = []
    for path in sorted((ROOT / "oasr_tok").rglob("*")):
        if path.suffix not in (".py", ".pyx", ".pxd", ".h") or "data" in path.parts:
            continue
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if figure.search(line) and not any(a in line for a in allowed):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
