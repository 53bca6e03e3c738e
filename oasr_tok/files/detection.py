"""What a kind's detector returns, and the sniffs several detectors share.

Each kind recognises its own files (docs/architecture.md § Adding a kind): its registry entry
carries a detector, `detect(path) -> ...`, called with a checkpoint folder or a single file.
A plug-in's detector returns ``{role: file path}`` (or None); a built-in one returns `Found`
records (the files, the options it worked out, the evidence in sentences) and `SetAside`
records (a file it looked at and why it is not the kind's). resolution.py asks every
registered kind in the order of their precedence and keeps the first find.

Nothing here knows a kind: the sniffs are of file formats (a tiktoken rank file, a
`piece id` table, markup symbols) that more than one kind's detector must tell apart.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import MalformedAssetError, ResolveError
from .readers import base64_token, read_lines, starts_with

__all__ = [
    "SPEC_FILE",
    "Found",
    "SetAside",
    "folder_names",
    "is_tiktoken_ranks",
    "is_whisper_vocabulary",
    "markup_evidence",
    "markup_kind",
    "normalise",
    "sniff_text_table",
    "summarise",
]

#: An explicit spec a converter wrote beside the weights (TokenizerSpec.to_dict).
SPEC_FILE = "tokenizer_spec.json"


@dataclass
class Found:
    """Evidence that the files of `kind` are at the place looked at."""

    kind: str
    files: dict[str, str]
    options: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the file (or files) that are the evidence, as the user sees them
    evidence: list[tuple[str, str]] = field(default_factory=list)  # (about, reason)
    notes: list[str] = field(default_factory=list)
    #: Among several finds of one kind, the lower wins (bpe.model before a *.model).
    order: int = 0


@dataclass(frozen=True)
class SetAside:
    """A file a detector looked at and is not its kind's, with the reason."""

    file: str
    reason: str


Detected = Found | SetAside


def normalise(kind: str, result: Any, path: str) -> list[Detected]:
    """A detector's answer as a list of Found / SetAside: None (nothing), a {role: path}
    mapping (a plug-in's answer), one record, or an iterable of records."""
    if result is None:
        return []
    if isinstance(result, (Found, SetAside)):
        return [result]
    if isinstance(result, Mapping):
        files = {}
        for role, file in result.items():
            if not isinstance(role, str) or not isinstance(file, (str, os.PathLike)):
                raise ResolveError(
                    f"the detector of kind {kind!r} must return {{role: file path}} or None, got {result!r}"
                )
            files[role] = os.path.abspath(os.path.join(path if os.path.isdir(path) else os.path.dirname(path), file))
        source = " + ".join(os.path.basename(p) for p in files.values())
        return [Found(kind, files, source=source, evidence=[("kind", f"{kind}: its detector found {source}")])]
    if isinstance(result, Iterable) and not isinstance(result, (str, bytes)):
        out = []
        for item in result:
            if not isinstance(item, (Found, SetAside)):
                raise ResolveError(f"the detector of kind {kind!r} returned {item!r}, not a Found or SetAside")
            out.append(item)
        return out
    raise ResolveError(f"the detector of kind {kind!r} must return {{role: file path}} or None, got {result!r}")


@functools.lru_cache(maxsize=8)
def _listing(folder: str, stamp: int) -> tuple[str, ...]:
    return tuple(sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n))))


def folder_names(folder: str) -> tuple[str, ...]:
    """The files (not folders) directly in `folder`, sorted: what every detector sees."""
    return _listing(folder, os.stat(folder).st_mtime_ns)


# -- markup symbols -------------------------------------------------------------------------

#: The control symbols ASR and LM vocabularies use; they are markup, never transcript text.
MARKUP_NAMES = frozenset(
    {"<blk>", "<blank>", "<eps>", "<sos/eos>", "<sos>", "<eos>", "<s>", "</s>", "<unk>", "<UNK>", "<pad>", "<PAD>"}
)
_DISAMBIGUATION = re.compile(r"#\d+")
_TAG = re.compile(r"<\|[^|<>\s]+\|>")


def markup_kind(piece: str) -> str | None:
    """Why `piece` is markup rather than text: "control symbol", "disambiguation symbol",
    "tag", or None for an ordinary piece."""
    if piece in MARKUP_NAMES:
        return "control symbol"
    if _DISAMBIGUATION.fullmatch(piece):
        return "disambiguation symbol"
    if _TAG.fullmatch(piece):
        return "tag"
    return None


def summarise(ids: list[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f", … ({len(ids)} in all)" if len(ids) > limit else "")


def markup_evidence(pieces: list[str]) -> tuple[list[int], str]:
    """The markup ids of a vocabulary and a sentence saying which symbols made them special."""
    groups: dict[str, list[int]] = {}
    for token_id, piece in enumerate(pieces):
        why = markup_kind(piece)
        if why is not None:
            groups.setdefault(why, []).append(token_id)
    ids = sorted(i for group in groups.values() for i in group)
    parts = []
    for why, group in groups.items():
        named = ", ".join(f"{pieces[i]} {i}" for i in group[:6]) + (" …" if len(group) > 6 else "")
        parts.append(f"{len(group)} {why}{'s' if len(group) > 1 else ''} ({named})")
    return ids, "; ".join(parts) if parts else "no control symbols, #N or <|…|> tags found"


# -- text tables ----------------------------------------------------------------------------


def sniff_text_table(path: str) -> str:
    """ "table" (`piece id` lines), "list" (one token per line) or "unknown"."""
    lines = [line for line in read_lines(path, "token table") if line.strip()]
    if not lines:
        raise MalformedAssetError(f"{path}: the file is empty", path=path)
    # Split as the table reader does: the id is the last field, a piece may hold spaces.
    fields = [line.rsplit(None, 1) for line in lines]
    paired = sum(1 for f in fields if len(f) == 2 and f[1].isdigit())
    single = sum(1 for f in fields if len(f) == 1)
    # A sherpa table writes its space piece as a lone id, so a few single fields are fine.
    if paired and paired >= single:
        return "table"
    if single == len(lines) or not paired:
        # No line is `piece id`: one token per line (where a token may hold whitespace).
        return "list"
    return "unknown"


#: Suffixes and names of files whose format is not a plain text table, whatever their content:
#: a single such file is left to the detector of its format.
_NOT_TEXT_SUFFIXES = (".json", ".model", ".nemo", ".gguf", ".tiktoken")
#: The first bytes of a GGUF file (llama.cpp): found by content, whatever its name.
GGUF_MAGIC = b"GGUF"


def plain_text_candidate(path: str) -> bool:
    """Whether a single file may be a text table (a unit table or a token list): not a file
    another format claims by name, magic or content (JSON, SentencePiece models, .nemo, GGUF,
    tiktoken ranks, a WordPiece vocab.txt)."""
    name = os.path.basename(path)
    if name.endswith(_NOT_TEXT_SUFFIXES) or name == "vocab.txt":
        return False
    return not starts_with(path, GGUF_MAGIC) and not is_tiktoken_ranks(path)


# -- tiktoken rank files --------------------------------------------------------------------

TIKTOKEN_SUFFIX = ".tiktoken"
#: How many leading lines decide whether a file is a tiktoken rank file.
_TIKTOKEN_SNIFF_LINES = 256
_TIKTOKEN_SNIFF_BYTES = 64 * 1024
#: Why a tiktoken rank file is set aside under a name neither tiktoken-format kind looks for.
TIKTOKEN_SET_ASIDE = (
    "a tiktoken BPE rank file (base64 token and rank per line), not a 'piece id' symbol table; "
    "the whisper kind reads it as multilingual.tiktoken / gpt2.tiktoken, the tiktoken kind as "
    "tokenizer.model / tiktoken.model / *.tiktoken (or pass the file itself)"
)
#: openai-whisper's vocabulary files (its whisper/assets/): multilingual first, then English-only.
WHISPER_TIKTOKEN_NAMES = ("multilingual.tiktoken", "gpt2.tiktoken")
#: multilingual.tiktoken's signature: 50,257 ranks, the last one the empty token ("= 50256").
_WHISPER_LAST_LINE = b"= 50256"


def is_tiktoken_ranks(path: str) -> bool:
    """Whether `path` is a tiktoken rank file (openai-whisper's .tiktoken: `base64(bytes) rank`
    per line, the ranks counting up from 0), judged from its first lines and never from its
    name. Such lines also look like a unit table's `piece id` lines, so detectors ask this
    first: a rank file is whisper's vocabulary, not a symbol table."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_TIKTOKEN_SNIFF_BYTES + 1)
    except OSError:
        return False
    lines = head[:_TIKTOKEN_SNIFF_BYTES].split(b"\n")
    if len(head) > _TIKTOKEN_SNIFF_BYTES or not lines[-1]:
        lines.pop()  # cut short by the read, or the empty rest after the final newline
    lines = lines[:_TIKTOKEN_SNIFF_LINES]
    if not lines:
        return False
    for rank, line in enumerate(lines):
        fields = line.split()
        if len(fields) != 2 or fields[1] != str(rank).encode() or len(fields[0]) % 4:
            return False
        if base64_token(fields[0].decode("ascii", "replace")) is None:
            return False
    return True


def is_whisper_vocabulary(path: str) -> bool:
    """Whether a tiktoken rank file is one of openai-whisper's vocabularies: by its name
    (multilingual.tiktoken, gpt2.tiktoken), or under another name by multilingual.tiktoken's
    own signature, its 50,257th and last rank the empty token (no other tiktoken vocabulary
    has an empty rank). Any other rank file (Meta's Llama 3 / 4 tokenizer.model, Kimi-Audio's
    tiktoken.model, a renamed r50k_base.tiktoken) is the tiktoken kind's."""
    if os.path.basename(path) in WHISPER_TIKTOKEN_NAMES:
        return True
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            handle.seek(max(0, size - 64))
            tail = handle.read()
    except OSError:
        return False
    return tail.rstrip(b"\r\n").rsplit(b"\n", 1)[-1].strip() == _WHISPER_LAST_LINE
