"""Resolve a checkpoint's tokenizer from its own side files, by evidence, in a fixed order.

Users point at a model directory (or one file), not at a spec. `resolve(path)` looks at the
files that are there and returns the `TokenizerSpec` they describe; `load(path)` builds it;
`describe(path)` (oasr_tok.description) is the dry run that says what was chosen, from which
files, and why.

The order of evidence is fixed (first match wins; everything else that also fits is reported
as having lost, with the reason):

1. ``tokenizer_spec.json`` — an explicit spec the library wrote (``TokenizerSpec.to_dict``).
2. ``tekken.json`` — `tekken` (Mistral, Voxtral). Mistral folders may ship a tokenizer.json
   too; tekken.json ranks first because it is the one mistral-common loads.
   ``tokenizer.json`` (+ ``tokenizer_config.json`` when present) — `whisper` when its special
   tokens are Whisper's (``<|startoftranscript|>`` and ``<|notimestamps|>``; language tokens
   are reported as further evidence), `huggingface` otherwise. Never decided from names.
   ``multilingual.tiktoken`` / ``gpt2.tiktoken`` — `whisper` from openai-whisper's own
   vocabulary (``num_languages`` from a ``config.json`` / ``dims.json`` ``n_vocab`` when one is
   there). A tiktoken rank file is recognised by its content (`is_tiktoken_ranks`): under any
   other name in a folder it is set aside, never read as a unit table; given alone it resolves
   to whisper.
   ``vocab.json`` of a CTC character model (wav2vec2, HuBERT, MMS) comes next: `wav2vec2`
   when tokenizer_config.json names a Wav2Vec2 CTC tokenizer class, or the table has the
   ``|`` word delimiter and no ``merges.txt`` lies beside it (that would be GPT-2 style BPE).
3. A SentencePiece model: ``bpe.model``, then ``tokenizer.model``, then a single ``*.model``.
4. A Paraformer token list: ``tokens.json`` (a JSON array of strings), then ``tokens.txt``
   written one token per line with ``@@`` pieces or FunASR's ``<blank> <s> </s> <unk>``.
5. A unit table (``piece id`` per line): ``units.txt``, then ``tokens.txt``, then ``words.txt``.
7. A NeMo ``.nemo`` archive (a single file, or the only one in the folder): its
   model_config.yaml's ``tokenizer.type`` — ``bpe`` -> sentencepiece on the archive's
   tokenizer.model, ``wpe`` -> wordpiece on its vocab.txt, ``agg`` -> aggregate (Canary);
   no tokenizer but ``labels`` / ``decoder.vocabulary`` -> symbol_table of the labels.
   Members are named ``archive::member`` (oasr_tok/archive.py); the weights are never read.
6. A BERT WordPiece ``vocab.txt`` (one piece per line with ``[CLS]``, ``[SEP]`` and ``##``
   pieces) -> `wordpiece`; ``do_lower_case`` from a tokenizer_config.json beside it.

A GGUF file (llama.cpp's `tokenizer.ggml.*`) is recognised by its magic, not its name: given
alone, or as the ``*.gguf`` of a directory, ranked right after ``tokenizer.json`` (several:
the first by name wins, ``mmproj*`` projector files last).

Special ids are worked out from the vocabulary, never assumed (see `markup_kind`): the ASR
and LM control symbols (``<blk>``, ``<blank>``, ``<eps>``, ``<sos/eos>``, ``<sos>``, ``<eos>``,
``<s>``, ``</s>``, ``<unk>``, ``<pad>``…), the ``#0``, ``#1``… disambiguation symbols of
icefall/sherpa/Kaldi tables (graph bookkeeping, never text) and ``<|…|>`` tags. That covers
the icefall/sherpa layout (``<blk>`` 0, ``<sos/eos>`` 1, ``<unk>`` 2, ``#N`` at the end) and
WeNet's (``<blank>`` 0, ``<unk>`` 1, ``<sos/eos>`` last) without trusting positions.

A file with one of the exact conventional names that cannot be parsed raises (naming the
file and line): silently falling through to weaker evidence would build the wrong tokenizer.
A loosely matched file (``*.model``) that is not what its name suggests is set aside with the
reason and resolution goes on. Directories are not searched recursively.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .archive import is_archive_ref
from .errors import AssetNotFoundError, MalformedAssetError, ResolveError, SpecError, short_repr
from .spec import TokenizerSpec

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["resolve", "load", "Resolution", "Candidate", "SPEC_FILE", "markup_kind", "is_tiktoken_ranks"]

SPEC_FILE = "tokenizer_spec.json"
#: What resolution can recognise, in its fixed order (for error messages and docs).
EVIDENCE_ORDER = (
    f"{SPEC_FILE} (any kind)",
    "tekken.json (tekken)",
    "tokenizer.json [+ tokenizer_config.json] (whisper or huggingface)",
    "multilingual.tiktoken / gpt2.tiktoken [+ config.json n_vocab] (whisper)",
    "*.gguf, by its magic (gguf)",
    "vocab.json [+ tokenizer_config.json, special_tokens_map.json] of a CTC model (wav2vec2)",
    "bpe.model / tokenizer.model / *.model (sentencepiece)",
    "tokens.json / tokens.txt one token per line (funasr_char)",
    "units.txt / tokens.txt / words.txt with 'piece id' lines (symbol_table)",
    "vocab.txt with [CLS]/[SEP]/## pieces (wordpiece)",
    "a .nemo archive: model_config.yaml tokenizer.type bpe / wpe / agg, or char labels",
)

# The control symbols ASR and LM vocabularies use; they are markup, never transcript text.
MARKUP_NAMES = frozenset(
    {"<blk>", "<blank>", "<eps>", "<sos/eos>", "<sos>", "<eos>", "<s>", "</s>", "<unk>", "<UNK>", "<pad>", "<PAD>"}
)
_DISAMBIGUATION = re.compile(r"#\d+")
_TAG = re.compile(r"<\|[^|<>\s]+\|>")
_WHISPER_LANGUAGE = re.compile(r"<\|[a-z]{2,3}\|>")
_FUNASR_MARKERS = ("<blank>", "<s>", "</s>", "<unk>")


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


@dataclass
class Candidate:
    """One tokenizer the files could describe. `rank` orders candidates (lower wins)."""

    kind: str
    files: dict[str, str]
    options: dict[str, Any]
    rank: tuple[int, int]
    source: str  # the file (or files) that are the evidence, as the user sees them
    evidence: list[tuple[str, str]] = field(default_factory=list)  # (about, reason)
    notes: list[str] = field(default_factory=list)

    def spec(self) -> TokenizerSpec:
        return TokenizerSpec(self.kind, self.files, self.options)


@dataclass
class Resolution:
    """The outcome of resolution: the chosen candidate, the ones that lost, the files set aside."""

    path: str
    chosen: Candidate
    lost: list[Candidate]
    rejected: list[tuple[str, str]]
    seen: list[str]

    @property
    def spec(self) -> TokenizerSpec:
        return self.chosen.spec()


# -- reading evidence -----------------------------------------------------------------------


def _read_json(path: str, what: str) -> Any:
    from .kinds._common import read_json

    return read_json(path, what)


def _summarise(ids: list[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f", … ({len(ids)} in all)" if len(ids) > limit else "")


def _markup_evidence(pieces: list[str]) -> tuple[list[int], str]:
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


def _table_layout(pieces: list[str]) -> str:
    if pieces[:3] == ["<blk>", "<sos/eos>", "<unk>"]:
        return "icefall/sherpa layout (<blk> 0, <sos/eos> 1, <unk> 2)"
    if pieces[:2] == ["<blank>", "<unk>"] and pieces[-1] == "<sos/eos>":
        return f"WeNet layout (<blank> 0, <unk> 1, <sos/eos> last at {len(pieces) - 1})"
    if pieces[:1] == ["<blank>"] and "<sos>" in pieces and "<eos>" in pieces:
        return "WeNet Paraformer layout (<blank> 0, <sos>/<eos>, <unk>)"
    if pieces[:1] == ["<eps>"]:
        return "Kaldi/k2 word-table layout (<eps> 0)"
    return "no known layout; special ids from the symbols themselves"


def _text_lines(path: str, what: str) -> list[str]:
    from .kinds._common import read_lines

    return read_lines(path, what)


def _token_list(path: str) -> list[str]:
    """A one-token-per-line list exactly as the funasr_char kind reads it: one reader, so the
    special ids found here are the ids the kind gives those tokens."""
    from .kinds.funasr_char import read_token_list

    return read_token_list(path)


TIKTOKEN_SUFFIX = ".tiktoken"
_TIKTOKEN_LINE = re.compile(r"([A-Za-z0-9+/]+={0,2}) (\d+)")
#: Why resolution sets a tiktoken rank file aside in a folder (under a name other than
#: openai-whisper's; given alone, a rank file resolves to whisper).
TIKTOKEN_SET_ASIDE = (
    "a tiktoken BPE rank file (base64 token and rank per line), not a 'piece id' symbol table; "
    "the whisper kind reads it as multilingual.tiktoken / gpt2.tiktoken (or pass the file itself)"
)


def _sniff_text_table(path: str) -> str:
    """ "table" (`piece id` lines), "list" (one token per line) or "unknown"."""
    lines = [line for line in _text_lines(path, "token table") if line.strip()]
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


def _hf_candidate(tokenizer_json: str, config: str | None, rank: tuple[int, int]) -> Candidate:
    data = _read_json(tokenizer_json, "tokenizer.json")
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise MalformedAssetError(
            f"{tokenizer_json}: not a `tokenizers` tokenizer.json (no 'model' object)", path=tokenizer_json
        )
    listed = data.get("added_tokens") or []
    if not isinstance(listed, list):
        raise MalformedAssetError(f"{tokenizer_json}: 'added_tokens' is not a list", path=tokenizer_json)
    added = [a for a in listed if isinstance(a, dict) and isinstance(a.get("content"), str)]
    by_content = {a["content"]: a.get("id") for a in added}
    model = data["model"].get("type", "?")
    decoder_step = data.get("decoder")
    decoder = decoder_step.get("type", "none") if isinstance(decoder_step, dict) else short_repr(decoder_step)
    files = {"tokenizer": tokenizer_json}
    structure = f"tokenizers model {model}, decoder {decoder}, {len(added)} added tokens"
    if "<|startoftranscript|>" in by_content and "<|notimestamps|>" in by_content:
        languages = sorted(c for c in by_content if _WHISPER_LANGUAGE.fullmatch(c))
        notimestamps = by_content["<|notimestamps|>"]
        cand = Candidate("whisper", files, {}, rank, os.path.basename(tokenizer_json))
        cand.evidence.append(
            (
                "kind",
                f"whisper: its added tokens include <|startoftranscript|> {by_content['<|startoftranscript|>']}, "
                f"<|notimestamps|> {notimestamps} and {len(languages)} language tokens "
                f"({', '.join(languages[:4])}{' …' if len(languages) > 4 else ''}); {structure}",
            )
        )
        if isinstance(notimestamps, int) and not isinstance(notimestamps, bool):
            cand.evidence.append(
                (
                    "vocab_size",
                    f"derived by the kind: <|notimestamps|> {notimestamps} + 1 + 1501 timestamps "
                    f"= {notimestamps + 1502}; the timestamp ids are not in tokenizer.json",
                )
            )
        cand.evidence.append(("special_ids", "every id from <|endoftext|> (eot) to vocab_size - 1"))
        if config is not None:
            cand.notes.append(f"{os.path.basename(config)} is not used by the whisper kind")
        return cand
    cand = Candidate("huggingface", files, {}, rank, os.path.basename(tokenizer_json))
    cand.evidence.append(
        ("kind", f"huggingface: {structure}; no <|startoftranscript|>/<|notimestamps|>, so not Whisper")
    )
    if config is not None:
        files["tokenizer_config"] = config
        cand.source += f" + {os.path.basename(config)}"
        declared = _read_json(config, "tokenizer_config.json")
        extra = 0
        if isinstance(declared, dict) and isinstance(declared.get("added_tokens_decoder"), dict):
            extra = sum(
                1
                for entry in declared["added_tokens_decoder"].values()
                if isinstance(entry, dict)
                and isinstance(entry.get("content"), str)
                and entry["content"] not in by_content
            )
        cand.evidence.append(
            (
                "files",
                f"tokenizer_config.json beside it: {extra} added tokens it declares are missing from "
                "tokenizer.json and are added by the kind in declared-id order",
            )
        )
    special = sum(1 for a in added if a.get("special"))
    cand.evidence.append(("special_ids", f"the backend's special added tokens ({special} in tokenizer.json)"))
    return cand


def _wav2vec2_candidate(folder: str, names: list[str]) -> Candidate | tuple[str, str]:
    """vocab.json as a wav2vec2 CTC vocabulary, or the reason it is not one."""
    at = lambda name: os.path.join(folder, name)
    data = _read_json(at("vocab.json"), "vocab.json")
    config: Any = (
        _read_json(at("tokenizer_config.json"), "tokenizer_config.json") if "tokenizer_config.json" in names else {}
    )
    config = config if isinstance(config, dict) else {}
    if not isinstance(data, dict) or not data:
        return ("vocab.json", "not a JSON object of piece -> id")
    nested = all(isinstance(v, dict) for v in data.values())
    tables = list(data.values()) if nested else [data]
    delimiter = config.get("word_delimiter_token", "|")
    delimiter = delimiter.get("content", "|") if isinstance(delimiter, dict) else delimiter
    delimiter = delimiter if isinstance(delimiter, str) else "|"
    named = "Wav2Vec2" in str(config.get("tokenizer_class", "")) or "CTC" in str(config.get("tokenizer_class", ""))
    has_delimiter = all(isinstance(t, dict) and delimiter in t for t in tables)
    if not named and ("merges.txt" in names or not has_delimiter):
        return (
            "vocab.json",
            "not a CTC character vocabulary (no Wav2Vec2 tokenizer_class, and "
            + (
                "merges.txt beside it: GPT-2 style BPE)"
                if "merges.txt" in names
                else f"no {delimiter!r} word delimiter)"
            ),
        )
    files = {"vocab": at("vocab.json")}
    for role in ("tokenizer_config", "special_tokens_map"):
        if f"{role}.json" in names:
            files[role] = at(f"{role}.json")
    cand = Candidate("wav2vec2", files, {}, (1, 4), " + ".join(os.path.basename(p) for p in files.values()))
    why = (
        f"tokenizer_class {config.get('tokenizer_class')}"
        if named
        else f"the {delimiter!r} word delimiter, no merges.txt"
    )
    shape = f"{len(data)} per-language tables (MMS)" if nested else f"{len(data)} pieces"
    cand.evidence.append(("kind", f"wav2vec2: vocab.json with {shape}; {why}"))
    if nested:
        target = config.get("target_lang")
        if isinstance(target, str):
            cand.evidence.append(("options", f"target_lang {target!r} from tokenizer_config.json"))
        else:
            cand.notes.append(
                "vocab.json is nested per language and no target_lang is configured: pass "
                "TokenizerSpec(..., options={'target_lang': code}) with one of " + ", ".join(sorted(data)[:12])
            )
    cand.evidence.append(
        ("special_ids", "the ids of bos/eos/unk/pad and additional special tokens (pad is the CTC blank)")
    )
    return cand


def _sentencepiece_candidate(path: str, rank: tuple[int, int]) -> Candidate | str:
    """A candidate, or the reason the file is not a SentencePiece model."""
    cand = Candidate("sentencepiece", {"model": path}, {}, rank, os.path.basename(path))
    try:
        import sentencepiece as spm
    except ImportError:
        cand.evidence.append(
            (
                "kind",
                "sentencepiece: a *.model file (the sentencepiece package is not installed, so "
                "the model was not opened)",
            )
        )
        cand.evidence.append(("special_ids", "the kind's default [0, 1, 2] (model not inspected)"))
        return cand
    processor = spm.SentencePieceProcessor()
    try:
        processor.Load(path)
    except (OSError, RuntimeError) as exc:
        return f"not a SentencePiece model ({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__})"
    size = processor.get_piece_size()
    from .kinds.sentencepiece import piece_strings

    pieces = piece_strings(processor, path)
    control = [i for i in range(size) if processor.is_control(i)]
    unknown = [i for i in range(size) if processor.is_unknown(i)]
    markup, why = _markup_evidence(pieces)
    special = sorted(set(control) | set(unknown) | set(markup))
    cand.options["special_ids"] = special
    cand.evidence.append(("kind", f"sentencepiece: the file loads as a SentencePiece model with {size} pieces"))
    cand.evidence.append(
        (
            "special_ids",
            f"{special if len(special) <= 8 else _summarise(special)}: control pieces "
            f"[{_summarise(control)}], unknown [{_summarise(unknown)}] (asked of SentencePiece); markup by name: {why}",
        )
    )
    return cand


def _funasr_candidate(path: str, pieces: list[str], form: str, rank: tuple[int, int]) -> Candidate:
    continuation = sum(1 for p in pieces if p.endswith("@@"))
    markers = {m: pieces.index(m) for m in _FUNASR_MARKERS if m in pieces}
    cand = Candidate(
        "funasr_char", {"tokens": path}, {"special_ids": sorted(markers.values())}, rank, os.path.basename(path)
    )
    cand.evidence.append(
        (
            "kind",
            f"funasr_char: {form} of {len(pieces)} tokens, {continuation} with @@ continuation; "
            f"FunASR markers {', '.join(markers) or 'none'}",
        )
    )
    cand.evidence.append(
        (
            "special_ids",
            "the ids of FunASR's <blank>, <s>, </s>, <unk>: "
            + (", ".join(f"{m} {i}" for m, i in markers.items()) or "none present"),
        )
    )
    return cand


def _symbol_table_candidate(path: str, rank: tuple[int, int]) -> Candidate:
    from .kinds.symbol_table import read_symbol_table

    pieces = read_symbol_table(path)
    special, why = _markup_evidence(pieces)
    cand = Candidate("symbol_table", {"units": path}, {"special_ids": special}, rank, os.path.basename(path))
    cand.evidence.append(("kind", f"symbol_table: {len(pieces)} 'piece id' lines; {_table_layout(pieces)}"))
    cand.evidence.append(("special_ids", f"{_summarise(special)}: {why}"))
    continuation = sum(1 for p in pieces if p.endswith("@@"))
    if continuation:
        cand.notes.append(
            f"{continuation} pieces end in @@ (a Paraformer vocabulary): symbol_table renders them literally; "
            "FunASR's rules need the funasr_char kind and its tokens.json / one-per-line tokens.txt"
        )
    if os.path.basename(path) == "words.txt":
        cand.notes.append("words.txt is a word table: symbol_table joins its entries without spaces")
    return cand


#: openai-whisper's vocabulary files (its whisper/assets/): multilingual first, then English-only.
WHISPER_TIKTOKEN_NAMES = ("multilingual.tiktoken", "gpt2.tiktoken")
#: How many leading lines decide whether a file is a tiktoken rank file.
_TIKTOKEN_SNIFF_LINES = 256
_TIKTOKEN_SNIFF_BYTES = 64 * 1024


def is_tiktoken_ranks(path: str) -> bool:
    """Whether `path` is a tiktoken rank file (openai-whisper's .tiktoken: `base64(bytes) rank`
    per line, the ranks counting up from 0), judged from its first lines and never from its
    name. Such lines also look like a unit table's `piece id` lines, so resolution asks this
    first: a rank file is whisper's vocabulary, not a symbol table."""
    from .kinds._common import base64_token

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


def _model_n_vocab(folder: str) -> tuple[int | None, str]:
    """n_vocab from a config.json ("n_vocab", openai-whisper's dims, or "vocab_size") or a
    dims.json beside a .tiktoken file, and where it came from."""
    for name, keys in (("config.json", ("n_vocab", "vocab_size")), ("dims.json", ("n_vocab",))):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        data = _read_json(path, name)
        if isinstance(data, dict) and isinstance(data.get("dims"), dict):
            data = data["dims"]
        for key in keys:
            value = data.get(key) if isinstance(data, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                return value, f"{name} {key} {value}"
    return None, ""


def _whisper_tiktoken_candidate(path: str, rank: tuple[int, int]) -> Candidate:
    folder = os.path.dirname(path)
    with open(path, "rb") as handle:
        ranks = sum(1 for line in handle if line.strip())
    n_vocab, where = _model_n_vocab(folder)
    cand = Candidate("whisper", {"tiktoken": path}, {}, rank, os.path.basename(path))
    cand.evidence.append(
        (
            "kind",
            f"whisper: {os.path.basename(path)} is a tiktoken rank file ({ranks} 'base64 rank' lines), "
            "openai-whisper's vocabulary; its control block is laid out after the ranks as "
            "openai-whisper's get_encoding does",
        )
    )
    if n_vocab is None:
        num_languages = 99
        cand.evidence.append(
            ("num_languages", "99, openai-whisper's default (no config.json or dims.json giving n_vocab beside it)")
        )
    else:
        num_languages = n_vocab - 51765 - (n_vocab >= 51865)
        if not 0 <= num_languages <= 100:
            raise ResolveError(
                f"{os.path.join(folder, where.split()[0])}: {where} is not a Whisper vocabulary "
                f"size (n_vocab - 51765 - (n_vocab >= 51865) = {num_languages} languages)"
            )
        cand.evidence.append(("num_languages", f"{num_languages}, from {where}: n_vocab - 51765 - (n_vocab >= 51865)"))
    cand.options["num_languages"] = num_languages
    cand.evidence.append(
        ("special_ids", f"every id from <|endoftext|> ({ranks}, the number of ranks) to vocab_size - 1")
    )
    return cand


def _tekken_candidate(path: str, rank: tuple[int, int]) -> Candidate:
    data = _read_json(path, os.path.basename(path))
    config = data.get("config") if isinstance(data, dict) else None
    if not isinstance(config, dict) or not isinstance(data.get("vocab"), list):
        raise MalformedAssetError(
            f"{path}: not a tekken.json (it needs a 'config' object and a 'vocab' list)", path=path
        )
    listed = data.get("special_tokens")
    specials = config.get("default_num_special_tokens")
    cand = Candidate("tekken", {"tekken": path}, {}, rank, os.path.basename(path))
    cand.evidence.append(
        (
            "kind",
            f"tekken: config version {config.get('version')!r}, {len(data['vocab'])} ranks listed, "
            f"default_vocab_size {config.get('default_vocab_size')}, {specials} special ids; "
            + (
                f"{len(listed)} special tokens listed in the file"
                if isinstance(listed, list)
                else "no special_tokens listed (mistral-common's built-in twenty, then <SPECIAL_n> fillers)"
            ),
        )
    )
    cand.evidence.append(
        (
            "special_ids",
            f"0 ... {specials - 1 if isinstance(specials, int) else '?'}: every id below default_num_special_tokens",
        )
    )
    return cand


def _wordpiece_candidate(path: str) -> Candidate | tuple[str, str]:
    name = os.path.basename(path)
    pieces = [line.rstrip() for line in _text_lines(path, name)]
    markers = [m for m in ("[CLS]", "[SEP]", "[UNK]") if m in pieces]
    continuation = sum(1 for p in pieces if p.startswith("##") and len(p) > 2)
    if "[CLS]" not in markers or "[SEP]" not in markers or not continuation:
        return (name, "not a BERT WordPiece vocabulary (needs [CLS], [SEP] and ## pieces)")
    cand = Candidate("wordpiece", {"vocab": path}, {}, (5, 0), name)
    cand.evidence.append(("kind", f"wordpiece: {len(pieces)} lines, {', '.join(markers)} and {continuation} ## pieces"))
    config = os.path.join(os.path.dirname(path), "tokenizer_config.json")
    if os.path.isfile(config):
        data = _read_json(config, "tokenizer_config.json")
        if isinstance(data, dict) and isinstance(data.get("do_lower_case"), bool):
            if not data["do_lower_case"]:
                cand.options["lowercase"] = False
            cand.evidence.append(
                ("options", f"do_lower_case {str(data['do_lower_case']).lower()} from tokenizer_config.json")
            )
    cand.evidence.append(("special_ids", "the [PAD] [UNK] [CLS] [SEP] [MASK] pieces the vocabulary has"))
    return cand


def _nemo_candidate(path: str, rank: tuple[int, int] = (6, 0)) -> Candidate:
    """The tokenizer a .nemo archive's config names, from its members (never the weights)."""
    from .archive import member_names, member_ref, nemo_config

    name = os.path.basename(path)
    present = member_names(path)
    if "model_config.yaml" not in present:
        raise MalformedAssetError(
            f"{path}: no member 'model_config.yaml' in the archive (members: {', '.join(present[:8]) or 'none'})",
            path=path,
        )
    config = nemo_config(path)
    used = ["model_config.yaml"]

    def member(ref: Any, key: str) -> str:
        if not isinstance(ref, str) or not ref.startswith("nemo:"):
            raise MalformedAssetError(
                f"{path}: model_config.yaml {key} is {ref!r}, not a nemo:<member> reference "
                "to a file inside the archive",
                path=path,
            )
        wanted = ref[len("nemo:") :]
        if wanted not in present:
            raise MalformedAssetError(
                f"{path}: model_config.yaml {key} points to {ref!r}, which is not a member of the archive", path=path
            )
        used.append(wanted)
        return member_ref(path, wanted)

    tokenizer = config.get("tokenizer")
    timing = {}
    stride = (
        (config.get("preprocessor") or {}).get("window_stride")
        if isinstance(config.get("preprocessor"), dict)
        else None
    )
    factor = (
        (config.get("encoder") or {}).get("subsampling_factor") if isinstance(config.get("encoder"), dict) else None
    )
    if isinstance(stride, (int, float)) and not isinstance(stride, bool) and stride > 0:
        timing["window_stride"] = stride
    if isinstance(factor, int) and not isinstance(factor, bool) and factor > 0:
        timing["subsampling_factor"] = factor
    if tokenizer is None:
        from .archive import nemo_labels_table

        units = member_ref(path, "model_config.yaml#labels")
        blank = len(nemo_labels_table(path).splitlines()) - 1
        cand = Candidate("symbol_table", {"units": units}, {"special_ids": [blank]}, rank, name)
        cand.evidence.append(
            (
                "kind",
                f"symbol_table: a character model (no tokenizer in model_config.yaml; "
                f"{blank} labels from labels / decoder.vocabulary)",
            )
        )
        cand.evidence.append(("special_ids", f"[{blank}]: the blank NeMo appends after the labels"))
    elif not isinstance(tokenizer, dict):
        raise MalformedAssetError(
            f"{path}: model_config.yaml tokenizer must be a mapping, got {tokenizer!r}", path=path
        )
    elif tokenizer.get("type") == "bpe":
        model = member(tokenizer.get("model_path"), "tokenizer.model_path")
        from .kinds.sentencepiece import load_processor

        processor = load_processor(model)
        control = [i for i in range(processor.get_piece_size()) if processor.is_control(i)]
        cand = Candidate("sentencepiece", {"model": model}, {"special_ids": control}, rank, name)
        cand.evidence.append(("kind", f"sentencepiece: tokenizer.type bpe, {processor.get_piece_size()} pieces"))
        cand.evidence.append(
            (
                "special_ids",
                f"{control}: the control pieces (NeMo decodes <unk> as SentencePiece "
                f"does; the CTC/RNNT blank is id {processor.get_piece_size()}, after the vocabulary: "
                "collapse frames with collapse_ctc before decoding)",
            )
        )
    elif tokenizer.get("type") == "wpe":
        vocab = member(tokenizer.get("vocab_path"), "tokenizer.vocab_path")
        cand = Candidate("wordpiece", {"vocab": vocab}, {}, rank, name)
        cand.evidence.append(("kind", "wordpiece: tokenizer.type wpe (a BERT vocab.txt)"))
    elif tokenizer.get("type") == "agg":
        langs = tokenizer.get("langs")
        if not isinstance(langs, dict) or not langs:
            raise MalformedAssetError(
                f"{path}: model_config.yaml tokenizer.langs must map languages to tokenizers", path=path
            )
        files = {}
        for lang, sub in langs.items():
            if not isinstance(sub, dict) or sub.get("type", "bpe") != "bpe":
                raise MalformedAssetError(
                    f"{path}: model_config.yaml tokenizer.langs.{lang} must be a bpe tokenizer", path=path
                )
            files[str(lang)] = member(sub.get("model_path"), f"tokenizer.langs.{lang}.model_path")
        options: dict[str, Any] = {"langs": list(files), **timing}
        custom = (
            str((tokenizer.get("custom_tokenizer") or {}).get("_target_", ""))
            if isinstance(tokenizer.get("custom_tokenizer"), dict)
            else ""
        )
        cand = Candidate("aggregate", files, options, rank, name)
        cand.evidence.append(
            (
                "kind",
                f"aggregate: tokenizer.type agg, languages {', '.join(files)} in config order"
                + (f" ({custom.rsplit('.', 1)[-1]})" if custom else ""),
            )
        )
        cand.evidence.append(
            (
                "special_ids",
                "the whole spl_tokens sub-vocabulary"
                if "spl_tokens" in files
                else "none (no spl_tokens sub-tokenizer)",
            )
        )
    else:
        raise ResolveError(
            f"{path}: model_config.yaml tokenizer.type {tokenizer.get('type')!r} is not one oasr_tok "
            "reads (bpe, wpe, agg; or a character model's labels)"
        )
    if cand.kind != "aggregate" and timing:
        cand.notes.append("frames to seconds: " + " x ".join(f"{k} {v}" for k, v in timing.items()))
    cand.evidence.append(
        (
            "members",
            f"read: {', '.join(used)}; not read: " + (", ".join(m for m in present if m not in used) or "nothing else"),
        )
    )
    return cand


# -- scanning ---------------------------------------------------------------------------------


def _gguf_candidate(path: str, rank: tuple[int, int]) -> Candidate:
    from .kinds._gguf_reader import read_gguf_header

    version, order = read_gguf_header(path)
    cand = Candidate("gguf", {"gguf": path}, {}, rank, os.path.basename(path))
    cand.evidence.append(
        (
            "kind",
            f"gguf: the file starts with the GGUF magic (version {version}, {order}-endian); "
            "its tokenizer.ggml.* keys are the tokenizer",
        )
    )
    cand.evidence.append(("special_ids", "the control, unknown, unused and undefined tokens, as llama.cpp types them"))
    return cand


def _gguf_names(folder: str, names: list[str]) -> list[str]:
    from .kinds._gguf_reader import is_gguf_file

    found = [n for n in names if n.endswith(".gguf") and is_gguf_file(os.path.join(folder, n))]
    return sorted(found, key=lambda n: (n.startswith("mmproj"), n))


def _spec_candidate(path: str) -> Candidate:
    data = _read_json(path, SPEC_FILE)
    base = os.path.dirname(os.path.abspath(path))
    try:
        spec = TokenizerSpec.from_dict(data, base_dir=base)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
    files = {role: os.path.abspath(p) for role, p in spec.files.items()}
    for role, p in files.items():
        if not os.path.isfile(p) and not is_archive_ref(p):  # a .nemo member names itself (archive.py)
            raise AssetNotFoundError(f"{path}: file for role {role!r} not found: {p!r}", path=p)
    cand = Candidate(spec.kind, files, dict(spec.options), (0, 0), os.path.basename(path))
    cand.evidence.append(("kind", f"{spec.kind}: named by {os.path.basename(path)}, an explicit spec (always first)"))
    if spec.options:
        cand.evidence.append(("options", f"as written in the spec: {json.dumps(spec.options)[:200]}"))
    return cand


def _list_tokens(path: str) -> list[str] | None:
    data = _read_json(path, "tokens.json")
    if isinstance(data, list) and data and all(isinstance(p, str) for p in data):
        return data
    return None


def _token_list_candidate(path: str) -> Candidate | tuple[str, str]:
    """A file of one token per line: Paraformer's list (funasr_char) when it has @@ pieces or
    FunASR's markers, else the reason it is set aside."""
    pieces = _token_list(path)
    if any(p.endswith("@@") for p in pieces) or any(m in pieces for m in _FUNASR_MARKERS):
        return _funasr_candidate(path, pieces, "one token per line", (3, 1))
    return (os.path.basename(path), "one token per line, but without @@ pieces or FunASR markers")


def _scan_directory(folder: str) -> Iterator[Candidate | tuple[str, str]]:
    """Candidates in the directory, and (file, reason) for files set aside."""
    names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n)))
    at = lambda name: os.path.join(folder, name)
    if SPEC_FILE in names:
        yield _spec_candidate(at(SPEC_FILE))
    if "tekken.json" in names:
        yield _tekken_candidate(at("tekken.json"), (1, -1))
    if "tokenizer.json" in names:
        config = at("tokenizer_config.json") if "tokenizer_config.json" in names else None
        yield _hf_candidate(at("tokenizer.json"), config, (1, 0))
    if "vocab.json" in names:
        yield _wav2vec2_candidate(folder, names)
    elif "tokenizer_config.json" in names and "tokenizer.json" not in names:
        yield ("tokenizer_config.json", "a tokenizer_config.json alone does not define a tokenizer (no tokenizer.json)")
    n_vocab, _ = _model_n_vocab(folder) if any(n in names for n in WHISPER_TIKTOKEN_NAMES) else (None, "")
    # an English-only vocabulary size (51864) says gpt2.tiktoken is the model's
    order = WHISPER_TIKTOKEN_NAMES[::-1] if n_vocab is not None and n_vocab < 51865 else WHISPER_TIKTOKEN_NAMES
    for sub, name in enumerate(n for n in order if n in names):
        if is_tiktoken_ranks(at(name)):
            yield _whisper_tiktoken_candidate(at(name), (1, 1 + sub))
        else:
            yield (name, "not a tiktoken rank file ('base64 rank' lines counting from 0)")
    for sub, name in enumerate(_gguf_names(folder, names)):
        yield _gguf_candidate(at(name), (1, 5 + sub))
    models = [n for n in names if n.endswith(".model")]
    preferred = [n for n in ("bpe.model", "tokenizer.model") if n in models]
    if len(models) > 1 and not preferred and SPEC_FILE in names:
        # The explicit spec decides (an aggregate's per-language models, for one); the models
        # are reported, not guessed between.
        for name in models:
            yield (name, f"one of several SentencePiece models; {SPEC_FILE} names what to use")
        models = []
    if len(models) > 1 and not preferred:
        raise ResolveError(
            f"{folder}: several SentencePiece model candidates and none is bpe.model or tokenizer.model: "
            f"{', '.join(models)}; write a {SPEC_FILE} naming the one to use"
        )
    ordered = preferred + [n for n in models if n not in preferred]
    for sub, name in enumerate(ordered):
        found = _sentencepiece_candidate(at(name), (2, sub))
        yield (name, found) if isinstance(found, str) else found
    if "tokens.json" in names:
        pieces = _list_tokens(at("tokens.json"))
        if pieces is None:
            yield ("tokens.json", "not a JSON array of token strings")
        else:
            yield _funasr_candidate(at("tokens.json"), pieces, "a JSON array", (3, 0))
    for name in names:
        if name.endswith(TIKTOKEN_SUFFIX) and name not in WHISPER_TIKTOKEN_NAMES:
            yield (name, TIKTOKEN_SET_ASIDE)
    for sub, name in enumerate(("units.txt", "tokens.txt", "words.txt")):
        if name not in names:
            continue
        if is_tiktoken_ranks(at(name)):
            yield (name, TIKTOKEN_SET_ASIDE)
            continue
        form = _sniff_text_table(at(name))
        if form == "table":
            yield _symbol_table_candidate(at(name), (4, sub))
        elif form == "list" and name == "tokens.txt":
            yield _token_list_candidate(at(name))
        elif form == "list":
            yield (name, "one token per line: a unit table needs 'piece id' lines")
        else:
            yield (name, "neither 'piece id' lines nor one token per line")
    if "vocab.txt" in names:
        yield _wordpiece_candidate(at("vocab.txt"))
    archives = [n for n in names if n.endswith(".nemo")]
    if len(archives) == 1:
        yield _nemo_candidate(at(archives[0]))
    for name in archives if len(archives) > 1 else []:
        yield (name, "one of several .nemo archives; point at the one to use")


def _single_file(path: str) -> Iterator[Candidate | tuple[str, str]]:
    from .kinds._gguf_reader import is_gguf_file

    name = os.path.basename(path)
    folder = os.path.dirname(path)
    if is_gguf_file(path):
        yield _gguf_candidate(path, (1, 5))
        return
    if name.endswith(".json"):
        data = _read_json(path, name)
        if isinstance(data, dict) and "kind" in data:
            yield _spec_candidate(path)
        elif isinstance(data, dict) and isinstance(data.get("config"), dict) and isinstance(data.get("vocab"), list):
            yield _tekken_candidate(path, (1, -1))
        elif isinstance(data, dict) and isinstance(data.get("model"), dict):
            # tokenizer.json's own config travels with it: without it added tokens can be lost.
            config = os.path.join(folder, "tokenizer_config.json")
            sibling = config if name == "tokenizer.json" and os.path.isfile(config) else None
            yield _hf_candidate(path, sibling, (1, 0))
        elif isinstance(data, list) and data and all(isinstance(p, str) for p in data):
            yield _funasr_candidate(path, data, "a JSON array", (3, 0))
        elif name == "vocab.json":
            folder_names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n)))
            yield _wav2vec2_candidate(folder, folder_names)
        elif name == "tokenizer_config.json":
            yield (
                name,
                "a tokenizer_config.json alone does not define a tokenizer; point at tokenizer.json or its folder",
            )
        else:
            yield (name, "JSON that is neither a spec, a tokenizer.json nor a token list")
        return
    if name == "vocab.txt":
        yield _wordpiece_candidate(path)
        return
    if name.endswith(".nemo"):
        yield _nemo_candidate(path)
        return
    if name.endswith(".model"):
        found = _sentencepiece_candidate(path, (2, 0))
        yield (name, found) if isinstance(found, str) else found
        return
    if is_tiktoken_ranks(path):
        yield _whisper_tiktoken_candidate(path, (1, 1))
        return
    form = _sniff_text_table(path)
    if form == "table":
        yield _symbol_table_candidate(path, (4, 0))
    elif form == "list":
        yield _token_list_candidate(path)
    else:
        yield (name, "neither 'piece id' lines nor one token per line")


def _resolution(path: str | os.PathLike[str]) -> Resolution:
    path = os.path.abspath(os.fspath(path))
    if os.path.isdir(path):
        seen = sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
        found = list(_scan_directory(path))
    elif os.path.isfile(path):
        seen = [os.path.basename(path)]
        found = list(_single_file(path))
    else:
        raise AssetNotFoundError(f"no such file or directory: {path!r}", path=path)
    candidates = sorted((c for c in found if isinstance(c, Candidate)), key=lambda c: c.rank)
    rejected = [c for c in found if not isinstance(c, Candidate)]
    if not candidates:
        from .registry import available_kinds

        set_aside = "".join(f"\n  {name}: {why}" for name, why in rejected)
        raise ResolveError(
            f"cannot tell which tokenizer {path!r} uses. Files seen: {', '.join(seen) or 'none'}."
            + (f"\nSet aside:{set_aside}" if set_aside else "")
            + "\nRecognised evidence, in order: "
            + "; ".join(EVIDENCE_ORDER)
            + f".\nKnown kinds: {', '.join(available_kinds())}. Write a {SPEC_FILE} "
            "(TokenizerSpec.to_dict(relative_to=folder)) to name one explicitly."
        )
    chosen, lost = candidates[0], candidates[1:]
    return Resolution(path, chosen, lost, rejected, seen)


def _why_lost(loser: Candidate, winner: Candidate) -> str:
    if winner.kind == "tekken" and loser.rank[0] == winner.rank[0]:
        return f"{winner.source} is the file mistral-common loads, so it ranks before {loser.source}"
    if loser.rank[0] == winner.rank[0]:
        return f"{winner.source} is preferred to {loser.source} for the same kind of evidence"
    return f"{winner.source} ({winner.kind}) comes before {loser.source} ({loser.kind}) in the fixed order of evidence"


# -- public API ---------------------------------------------------------------------------------


def resolve(path: str | os.PathLike[str]) -> TokenizerSpec:
    """The TokenizerSpec a checkpoint directory (or a single tokenizer file) describes, with
    absolute file paths. ResolveError names the files seen and the kinds known when nothing
    fits; a malformed conventional file raises its own AssetError naming file and line."""
    return _resolution(path).spec


def load(path: str | os.PathLike[str]) -> Tokenizer:
    """build_tokenizer(resolve(path))."""
    from .build import build_tokenizer

    return build_tokenizer(resolve(path))
