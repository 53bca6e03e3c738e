"""tiktoken cases: Meta's two real tokenizer.model files as llama-models 0.3.0 ships them
(Llama 3: 128,000 ranks and 256 special tokens; Llama 4: 200,000 and 2,048), loaded from the
file alone as a user would (oasr_tok.load). Streams mix encoded text in several scripts, Meta's
chat headers, reserved specials, characters whose byte tokens a special id splits (their bytes
join across it: tiktoken's decode of the ids left after the specials), incomplete characters
at the end, a genuine U+FFFD and invalid bytes. The reference decode is Meta's own Tokenizer
(its tiktoken Encoding) on the ids without the special ones."""

from __future__ import annotations

import functools
import os

from oasr_tok import load

from cases import MULTISCRIPT, KindCase

NAMES = ("llama3", "llama4")
# 中 (E4 B8 AD), 😀 (F0 9F 98 80), é (C3 A9), U+FFFD (EF BF BD), an invalid byte (FF), a space.
SPLIT_BYTES = (0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0xEF, 0xBF, 0xBD, 0xFF, 0x20)


def meta_file(name: str) -> str:
    """Meta's tokenizer.model of llama-models (a test dependency: pyproject.toml's test extra)."""
    import llama_models

    return os.path.join(os.path.dirname(llama_models.__file__), name, "tokenizer.model")


@functools.cache
def meta_tokenizer(name: str):
    """Meta's own Tokenizer (llama_models/<name>/tokenizer.py) of the same file."""
    from pathlib import Path

    if name == "llama3":
        from llama_models.llama3.tokenizer import Tokenizer
    else:
        from llama_models.llama4.tokenizer import Tokenizer
    return Tokenizer(Path(meta_file(name)))


def byte_ids(tok) -> list[int]:
    """The rank of each byte of SPLIT_BYTES (every tiktoken vocabulary holds the 256 bytes)."""
    single = {tok.id_to_bytes(i): i for i in range(tok.num_ranks) if len(tok.id_to_bytes(i)) == 1}
    return [single[bytes([b])] for b in SPLIT_BYTES]


def interesting(tok) -> list[int]:
    first = tok.num_ranks
    return [
        *byte_ids(tok),
        *tok.special_tokens.stop_ids,
        tok.special_tokens.bos_id,
        first - 1,
        first,
        first + 2,  # reserved (Llama 3) / <|fim_middle|> (Llama 4)
        tok.vocab_size - 1,  # the last reserved special
    ]


def realistic(tok) -> list[list[int]]:
    s = tok.special_token_id
    b = dict(zip(SPLIT_BYTES, byte_ids(tok)))
    header = ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
    if "<|header_start|>" in tok.special_token_ids:
        header = ("<|header_start|>", "<|header_end|>", "<|eot|>")
    streams = [tok.encode(text) for text in MULTISCRIPT]
    chat = [
        s("<|begin_of_text|>"),
        s(header[0]),
        *tok.encode("user"),
        s(header[1]),
        *tok.encode("\n\nTranscribe this: 今天天气很好 😀"),
        s(header[2]),
        s(header[0]),
        *tok.encode("assistant"),
        s(header[1]),
        *tok.encode("\n\nSure — here it is: café, naïve."),
        s(header[2]),
    ]
    split = [
        b[0xE4],
        b[0xB8],
        s("<|begin_of_text|>"),
        b[0xAD],
        b[0xF0],
        b[0x9F],
        tok.vocab_size - 1,
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
    return [*streams, chat, split]


def reference(tok):
    """Meta's Tokenizer of the same file: its tiktoken decode of the ids without the specials."""
    theirs = meta_tokenizer(tok.spec.options["special_tokens"]).model
    special = tok.special_ids
    return lambda ids: theirs.decode([i for i in ids if i not in special])


CASES = [
    KindCase(
        f"tiktoken/{name}",
        functools.partial(lambda name: load(meta_file(name)), name),
        interesting=interesting,
        realistic=realistic,
        reference=reference,
    )
    for name in NAMES
]
