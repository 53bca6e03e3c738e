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


def _ids(path) -> str:
    return str(path.relative_to(ROOT))


def test_readme_kind_table_is_the_builtin_kinds():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = re.findall(r"^\| `([a-z_0-9]+)` \|", text, re.M)
    assert sorted(table) == builtin_kinds()
    count = re.search(r"\b(\w+) tokenizer kinds\b", text)
    assert count and count.group(1).lower() == NUMBERS[len(builtin_kinds())], count


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


def test_the_documented_order_of_evidence_is_the_registrys():
    """docs/cli.md's table of evidence lists the detectors in the order resolution asks them."""
    from oasr_tok.core.registry import PLUGIN_PRECEDENCE, detectors

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| .* \| ([a-z_0-9]+|as named|the plug-in's) \|$", text, re.M)
    documented = [(int(p), who) for p, who in rows]
    registered = [(d.precedence, d.name if d.name in builtin_kinds() else "as named") for d in detectors() if d.builtin]
    assert documented == [*registered, (PLUGIN_PRECEDENCE, "the plug-in's")]


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
