"""tekken cases: the two tekken.json files mistral-common ships and one derived in the newer
layout (listed special tokens, see tests/tekken_files.py). Streams mix encoded text in several
scripts, chat and audio markup (BOS, [INST], [AUDIO], [TRANSCRIBE]), multi-byte characters whose
byte tokens a special id splits (rendered apart: tekken never joins bytes across a special),
incomplete characters at the end, a genuine U+FFFD and invalid bytes."""

from __future__ import annotations

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import MULTISCRIPT, KindCase
from tekken_files import path_of

NAMES = ("tekken_240718.json", "tekken_240911.json", "derived")
# 中 (E4 B8 AD), 😀 (F0 9F 98 80), é (C3 A9), U+FFFD (EF BF BD), an invalid byte (FF), a space.
SPLIT_BYTES = (0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0xEF, 0xBF, 0xBD, 0xFF, 0x20)


def build(name: str):
    return lambda: build_tokenizer(TokenizerSpec("tekken", {"tekken": path_of(name)}))


def byte_ids(tok) -> list[int]:
    """Ranks 0 ... 255 are the single bytes (mistral-common checks it), shifted past the specials."""
    return [tok.num_special_tokens + b for b in SPLIT_BYTES]


def interesting(tok) -> list[int]:
    named = [
        tok.special_token_id(n)
        for n in ("<s>", "</s>", "[INST]", "[/INST]", "[AUDIO]", "[TRANSCRIBE]")
        if n in tok.special_token_ids
    ]
    return [*byte_ids(tok), *named, tok.num_special_tokens - 1, tok.num_special_tokens, tok.vocab_size - 1]


def realistic(tok) -> list[list[int]]:
    s = tok.special_token_id
    b = dict(zip(SPLIT_BYTES, byte_ids(tok)))
    streams = [tok.encode(text) for text in MULTISCRIPT]
    chat = [
        s("<s>"),
        s("[INST]"),
        *tok.encode("Transcribe this: 今天天气很好 😀"),
        s("[/INST]"),
        *tok.encode(" Sure — here it is: café, naïve."),
        s("</s>"),
    ]
    split = [
        b[0xE4],
        b[0xB8],
        s("[INST]"),
        b[0xAD],
        b[0xF0],
        b[0x9F],
        s("</s>"),
        b[0x98],
        b[0x80],
        b[0xEF],
        b[0xBF],
        b[0xBD],
        b[0xFF],
        b[0xC3],
        b[0x20],
        b[0xC3],
        b[0xA9],
        b[0xE4],
        b[0xB8],
    ]
    streams += [chat, split]
    if "[AUDIO]" in tok.special_token_ids:
        streams.append(
            [
                s("<s>"),
                s("[INST]"),
                s("[BEGIN_AUDIO]"),
                *[s("[AUDIO]")] * 5,
                s("[/INST]"),
                s("[TRANSCRIBE]"),
                *tok.encode("lang:en Hello there, 東京!"),
                s("</s>"),
            ]
        )
    return streams


def reference(tok):
    """mistral-common's Tekkenizer of the same tekken.json, special tokens ignored."""
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    theirs = Tekkenizer.from_file(tok.spec.file("tekken"))
    return lambda ids: theirs.decode(ids, SpecialTokenPolicy.IGNORE)


CASES = [
    KindCase(
        f"tekken/{name.removesuffix('.json')}",
        build(name),
        interesting=interesting,
        realistic=realistic,
        reference=reference,
    )
    for name in NAMES
]
