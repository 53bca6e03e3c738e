"""wordpiece: a BERT-style WordPiece `vocab.txt` (one piece per line, the line number is the
id; `##` marks a continuation piece), as plain BERT checkpoints without a tokenizer.json and
NeMo `wpe` models carry it.

It is the huggingface kind built from the vocabulary: the `tokenizers` runtime's
BertWordPieceTokenizer over the same file (BertNormalizer, BertPreTokenizer, WordPiece model
with its `##` prefix, the WordPiece decoder with clean-up, [CLS]/[SEP] post-processor), so
`decode` equals that runtime's decode with special tokens skipped and `encode` is its encode
(without [CLS]/[SEP] unless the option `add_special_tokens` is true). Streaming and token
pieces are the huggingface kind's compiled table for the WordPiece decoder.

Options: `lowercase` (True: BERT uncased; a tokenizer_config.json beside a resolved vocab.txt
gives it from `do_lower_case`), `strip_accents` (None: follow lowercase), `clean_text` (True),
`handle_chinese_chars` (True), `wordpieces_prefix` ("##"), `add_special_tokens` (False), and
the special token strings `unk_token`, `sep_token`, `cls_token`, `pad_token`, `mask_token`
([UNK] [SEP] [CLS] [PAD] [MASK]; those the vocabulary lacks are simply not special).
"""

from __future__ import annotations

import os
from typing import Any

from ._common import reject_unknown_options
from .api import (
    Detected,
    Found,
    KindRecord,
    MalformedAssetError,
    SetAside,
    SpecError,
    TokenizerSpec,
    folder_names,
    read_json,
    read_lines,
    read_text,
)
from .huggingface import HuggingFaceTokenizer, built_runtime, vocabulary_of_runtime

__all__ = ["WordPieceTokenizer", "read_wordpiece_vocab"]


_BOOL_OPTIONS = {"lowercase": True, "clean_text": True, "handle_chinese_chars": True, "add_special_tokens": False}
_TOKEN_OPTIONS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "cls_token": "[CLS]",
    "pad_token": "[PAD]",
    "mask_token": "[MASK]",
    "wordpieces_prefix": "##",
}
_OPTIONS = [*_BOOL_OPTIONS, *_TOKEN_OPTIONS, "strip_accents"]


def read_wordpiece_vocab(path: str) -> dict[str, int]:
    """piece -> id of a vocab.txt (id = line number from 0; each line stripped of trailing
    whitespace, as the `tokenizers` WordPiece reader does). Blank lines and duplicate pieces raise
    MalformedAssetError naming the file and line."""
    text = read_text(path, "WordPiece vocab.txt")
    vocab: dict[str, int] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        piece = line.rstrip()
        if not piece.strip():
            raise MalformedAssetError(f"{path}:{number}: empty piece (line {number} is blank)", path=path, line=number)
        if piece in vocab:
            raise MalformedAssetError(
                f"{path}:{number}: the piece {piece!r} is given twice (first on line {vocab[piece] + 1})",
                path=path,
                line=number,
            )
        vocab[piece] = number - 1
    if not vocab:
        raise MalformedAssetError(f"{path}: the vocabulary is empty", path=path)
    return vocab


class WordPieceTokenizer(HuggingFaceTokenizer):
    """A WordPiece vocab.txt run by the `tokenizers` BertWordPieceTokenizer."""

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> WordPieceTokenizer:
        from tokenizers import BertWordPieceTokenizer

        reject_unknown_options(spec.options, _OPTIONS, "wordpiece")
        options: dict[str, Any] = {**_BOOL_OPTIONS, **_TOKEN_OPTIONS, "strip_accents": None, **spec.options}
        for key in _BOOL_OPTIONS:
            if not isinstance(options[key], bool):
                raise SpecError(f"wordpiece: option {key} must be true or false, got {options[key]!r}")
        for key in _TOKEN_OPTIONS:
            if not isinstance(options[key], str) or not options[key]:
                raise SpecError(f"wordpiece: option {key} must be a non-empty string, got {options[key]!r}")
        if options["strip_accents"] is not None and not isinstance(options["strip_accents"], bool):
            raise SpecError(
                f"wordpiece: option strip_accents must be true, false or null, got {options['strip_accents']!r}"
            )
        path = spec.file("vocab")
        vocab = read_wordpiece_vocab(path)
        present = {key: options[key] for key in ("unk_token", "sep_token", "cls_token", "pad_token", "mask_token")}
        if options["unk_token"] not in vocab:
            raise MalformedAssetError(
                f"{path}: the unknown token {options['unk_token']!r} is not in the vocabulary "
                "(WordPiece needs it; set the option unk_token)",
                path=path,
            )
        runtime = BertWordPieceTokenizer(
            vocab,
            clean_text=options["clean_text"],
            handle_chinese_chars=options["handle_chinese_chars"],
            strip_accents=options["strip_accents"],
            lowercase=options["lowercase"],
            wordpieces_prefix=options["wordpieces_prefix"],
            **present,
        )
        # BertWordPieceTokenizer registers its specials only when the vocabulary has them.
        backend = runtime._tokenizer
        tokenizer = cls(
            vocabulary_of_runtime(backend, path),
            built_runtime(path, backend),
            where=path,
            add_special_tokens=options["add_special_tokens"],
        )
        tokenizer.spec = spec
        return tokenizer


# -- recognising the files (the registry's detector for this kind) ----------------------------


def _found(path: str) -> Detected:
    name = os.path.basename(path)
    pieces = [line.rstrip() for line in read_lines(path, name)]
    markers = [m for m in ("[CLS]", "[SEP]", "[UNK]") if m in pieces]
    continuation = sum(1 for p in pieces if p.startswith("##") and len(p) > 2)
    if "[CLS]" not in markers or "[SEP]" not in markers or not continuation:
        return SetAside(name, "not a BERT WordPiece vocabulary (needs [CLS], [SEP] and ## pieces)")
    found = Found("wordpiece", {"vocab": path}, source=name)
    found.evidence.append(
        ("kind", f"wordpiece: {len(pieces)} lines, {', '.join(markers)} and {continuation} ## pieces")
    )
    config = os.path.join(os.path.dirname(path), "tokenizer_config.json")
    if os.path.isfile(config):
        data = read_json(config, "tokenizer_config.json")
        if isinstance(data, dict) and isinstance(data.get("do_lower_case"), bool):
            if not data["do_lower_case"]:
                found.options["lowercase"] = False
            found.evidence.append(
                ("options", f"do_lower_case {str(data['do_lower_case']).lower()} from tokenizer_config.json")
            )
    found.evidence.append(("special_ids", "the [PAD] [UNK] [CLS] [SEP] [MASK] pieces the vocabulary has"))
    return found


def detect(path: str) -> list[Detected]:
    """A BERT WordPiece vocab.txt (one piece per line with [CLS], [SEP] and ## pieces);
    do_lower_case from a tokenizer_config.json beside it."""
    if os.path.isdir(path):
        return [_found(os.path.join(path, "vocab.txt"))] if "vocab.txt" in folder_names(path) else []
    return [_found(path)] if os.path.basename(path) == "vocab.txt" else []


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: a BERT vocab.txt, last of
# the kinds.
KIND = KindRecord(
    "wordpiece", WordPieceTokenizer.from_spec, detect, precedence=80, backend="tokenizers", extra="huggingface"
)
