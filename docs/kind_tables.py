"""Write the kind tables from the kinds themselves: the kinds' index (oasr_tok/kinds/_index.py:
each kind module's KIND record as the registry reads it without importing the module), the
README's table of kinds (and the number word before it) from each kind's page
(docs/kinds/<kind>.md, its card: the first table and the "Recognised by" line), and docs/cli.md's
order of evidence from the records' precedences and the same lines. Run it after adding or
changing a kind; tests/house/test_docs.py fails while any of the three is not what it writes.

    python docs/kind_tables.py          # rewrite oasr_tok/kinds/_index.py, README.md and docs/cli.md
    python docs/kind_tables.py --check  # exit 1 if any would change
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "kinds"
#: Containers that resolve to another kind's files, and the page that describes each.
CONTAINER_PAGES = {".nemo archive": "nemo"}
NUMBERS = [
    "no",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]

_CARD = re.compile(r"^\| files \| reference it matches \| encode \|\n\|---\|---\|---\|\n\| (.*) \|$", re.M)
_RECOGNISED = re.compile(r"^\*\*Recognised by:\*\* (.*)\.$", re.M)
_README_BLOCK = (
    "<!-- the kinds: written by docs/kind_tables.py from docs/kinds/*.md -->\n",
    "<!-- end of the kinds -->\n",
)
_CLI_BLOCK = (
    "<!-- the order of evidence: written by docs/kind_tables.py from the registry and docs/kinds/*.md -->\n",
    "<!-- end of the order of evidence -->\n",
)


class PageError(Exception):
    """A kind's page lacks its card or its "Recognised by" line."""


def card(kind: str) -> tuple[str, str, str]:
    """files, reference, encode: the cells of the card on docs/kinds/<kind>.md."""
    page = PAGES / f"{kind}.md"
    if not page.is_file():
        raise PageError(
            f"the kind {kind!r} has no page: write {page.relative_to(ROOT)} (docs/architecture.md § Adding a kind)"
        )
    found = _CARD.search(page.read_text(encoding="utf-8"))
    if found is None:
        raise PageError(f"{page.relative_to(ROOT)} has no card: a '| files | reference it matches | encode |' table")
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", found.group(1))]
    if len(cells) != 3:
        raise PageError(f"{page.relative_to(ROOT)}: the card's row has {len(cells)} cells, not 3")
    return cells[0], cells[1], cells[2]


def recognised_by(page_name: str) -> str:
    page = PAGES / f"{page_name}.md"
    found = _RECOGNISED.search(page.read_text(encoding="utf-8")) if page.is_file() else None
    if found is None:
        raise PageError(f"{page.relative_to(ROOT)} has no '**Recognised by:** ...' line")
    return found.group(1)


INDEX_HEAD = '''"""The built-in kinds as the registry needs them before it imports a kind: each kind module's
KIND record, as `registry.index_line` reads it. Written by docs/kind_tables.py from the records:
do not edit (tests/house/test_docs.py fails while it is stale, and the registry checks a
module's record against its line when it imports the module)."""

#: (kind, precedence (None: no detector), backend, extra), in the order of evidence; each kind is
#: its module's name in oasr_tok.kinds.
KINDS: tuple[tuple[str, int | None, str | None, str | None], ...] = (
'''


def index_module() -> str:
    """oasr_tok/kinds/_index.py as the kind modules' records write it."""
    from oasr_tok.core.registry import index_line, read_kind_modules

    records, others = read_kind_modules()
    lines = [INDEX_HEAD]
    lines.extend(f"    {index_line(record)!r},\n".replace("'", '"') for record in records)
    lines.append(")\n\n#: The modules of oasr_tok.kinds that declare no kind.\n")
    lines.append(f"OTHER_MODULES = {tuple(others)!r}\n".replace("'", '"'))
    return "".join(lines)


def readme_table() -> str:
    from oasr_tok.core.registry import read_kind_modules

    rows = ["| kind | files | reference it matches | encode |", "|---|---|---|---|"]
    for record in read_kind_modules()[0]:
        files, reference, encode = card(record.name)
        rows.append(f"| [`{record.name}`](docs/kinds/{record.name}.md) | {files} | {reference} | {encode} |")
    return "\n".join(rows) + "\n"


def evidence_table() -> str:
    from oasr_tok.core.registry import CONTAINERS, PLUGIN_PRECEDENCE, read_kind_modules

    rows = [
        "| precedence | evidence | kind |",
        "|---|---|---|",
        "| first | `tokenizer_spec.json` — a spec the library wrote (`spec.to_dict(relative_to=folder)`; relative "
        "paths are read against the folder, so it travels with the checkpoint) | as named |",
    ]
    evidence = [(record.precedence, record.name, record.name) for record in read_kind_modules()[0] if record.detect]
    evidence += [(precedence, CONTAINER_PAGES[name], "as named") for name, (_, precedence) in CONTAINERS.items()]
    for precedence, page, who in sorted(evidence):
        rows.append(f"| {precedence} | {recognised_by(page).replace('|', chr(92) + '|')} | {who} |")
    rows.append(
        f"| {PLUGIN_PRECEDENCE} | a plug-in kind's detector (its `KindRecord(name, factory, detect, "
        "precedence=...)`; without a precedence it stands here, after the built-ins) | the plug-in's |"
    )
    return "\n".join(rows) + "\n"


def _replace_block(text: str, block: tuple[str, str], body: str, where: str) -> str:
    start, end = text.find(block[0]), text.find(block[1])
    if start < 0 or end < start:
        raise PageError(f"{where} lacks the markers {block[0].strip()} ... {block[1].strip()}")
    return text[: start + len(block[0])] + body + text[end:]


def written() -> dict[Path, str]:
    """oasr_tok/kinds/_index.py, README.md and docs/cli.md as this script writes them."""
    from oasr_tok.core.registry import read_kind_modules

    readme_path, cli_path = ROOT / "README.md", ROOT / "docs" / "cli.md"
    readme = _replace_block(readme_path.read_text(encoding="utf-8"), _README_BLOCK, readme_table(), "README.md")
    count = len(read_kind_modules()[0])
    word = NUMBERS[count] if count < len(NUMBERS) else str(count)
    readme = re.sub(r"\b\w+ tokenizer kinds\b", f"{word.capitalize()} tokenizer kinds", readme, count=1)
    cli = _replace_block(cli_path.read_text(encoding="utf-8"), _CLI_BLOCK, evidence_table(), "docs/cli.md")
    return {ROOT / "oasr_tok" / "kinds" / "_index.py": index_module(), readme_path: readme, cli_path: cli}


def main(argv: list[str]) -> int:
    stale = [path for path, text in written().items() if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is not what docs/kind_tables.py writes: run python docs/kind_tables.py")
        return 1 if stale else 0
    for path, text in written().items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
