"""wav2vec2 cases: the published facebook/wav2vec2-base-960h vocabulary, the lower-case and
MMS-shaped variants (fixtures/wav2vec2/), one vocabulary with clean-up on (the
re-decoding path), and an older checkpoint's added_tokens.json. Realistic streams are sentences spelled in the vocabulary's characters
with `|` between words (and a leading / trailing delimiter, as CTC output has)."""

from __future__ import annotations

import json
import os
import tempfile

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import KindCase
from paths import own

SENTENCES = ("HE HOPED THERE WOULD BE STEW FOR DINNER", "IT'S NOT  DON'T", "A B C", "QUIZ JAX")


def _files(folder: str) -> dict[str, str]:
    out = {
        "vocab": own(f"wav2vec2/{folder}/vocab.json"),
        "tokenizer_config": own(f"wav2vec2/{folder}/tokenizer_config.json"),
    }
    specials = os.path.join(os.path.dirname(out["vocab"]), "special_tokens_map.json")
    if os.path.exists(specials):
        out["special_tokens_map"] = specials
    return out


def _build(folder: str, options: dict | None = None):
    return lambda: build_tokenizer(TokenizerSpec("wav2vec2", _files(folder), options or {}))


def _cleanup_build():
    folder = tempfile.mkdtemp(prefix="oasr-w2v-cleanup-")
    vocab = json.load(open(own("wav2vec2/base-960h/vocab.json"), encoding="utf-8"))
    vocab.update({".": 32, ",": 33, "?": 34, "Σ": 35})
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as handle:
        json.dump(vocab, handle)
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as handle:
        json.dump({"clean_up_tokenization_spaces": True, "do_lower_case": True}, handle)
    return build_tokenizer(
        TokenizerSpec(
            "wav2vec2",
            {
                "vocab": os.path.join(folder, "vocab.json"),
                "tokenizer_config": os.path.join(folder, "tokenizer_config.json"),
            },
        )
    )


def _added_tokens_json_build():
    """An older checkpoint's layout: tokens added past vocab.json in added_tokens.json only, one
    of them special (the config names it the cls token)."""
    folder = tempfile.mkdtemp(prefix="oasr-w2v-added-")
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as handle:
        json.dump(json.load(open(own("wav2vec2/base-960h/vocab.json"), encoding="utf-8")), handle)
    with open(os.path.join(folder, "added_tokens.json"), "w", encoding="utf-8") as handle:
        json.dump({"!": 32, "?": 33, "$$$": 34, "é": 35}, handle)
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as handle:
        json.dump({"cls_token": "$$$"}, handle)
    files = {name[: -len(".json")]: os.path.join(folder, name) for name in os.listdir(folder)}
    return build_tokenizer(TokenizerSpec("wav2vec2", files))


def _index(tok) -> dict[str, int]:
    return {tok.id_to_piece(i): i for i in range(tok.vocab_size)}


def _interesting(tok) -> list[int]:
    index = _index(tok)
    return [
        index[p]
        for p in ("<pad>", "<s>", "</s>", "<unk>", "|", "'", ".", ",", "S", "T", "N", "Σ", "e", "é")
        if p in index
    ]


def _realistic(tok) -> list[list[int]]:
    index = _index(tok)
    out = []
    for sentence in SENTENCES:
        for text in (sentence, sentence.lower()):
            ids = [index.get("|" if c == " " else c) for c in f" {text} "]
            if all(i is not None for i in ids):
                out.append(ids)
    return out or [[index["|"]]]


_REFERENCE_NOTE = "tests/kinds/test_wav2vec2.py compares with transformers' Wav2Vec2CTCTokenizer (its options mapped per variant) on token ids and frames"


CASES = [
    KindCase(
        "wav2vec2/base-960h",
        _build("base-960h"),
        interesting=_interesting,
        realistic=_realistic,
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "wav2vec2/lower-case",
        _build("lower-case"),
        interesting=_interesting,
        realistic=_realistic,
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "wav2vec2/mms-like-fra",
        _build("mms-like", {"target_lang": "fra"}),
        interesting=_interesting,
        realistic=_realistic,
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "wav2vec2/cleanup-lower",
        _cleanup_build,
        interesting=_interesting,
        realistic=_realistic,
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "wav2vec2/added-tokens-json",
        _added_tokens_json_build,
        interesting=_interesting,
        realistic=_realistic,
        reference_note=_REFERENCE_NOTE,
    ),
]
