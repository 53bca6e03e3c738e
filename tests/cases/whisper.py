"""whisper cases: the real faster-whisper-base file, openai-whisper's multilingual.tiktoken
(the same model's vocabulary in its other source) and the project's three generated layouts
(en, multilingual, large-v3). Streams mix decoder-shaped outputs (sot, language, task,
timestamps, eot), prompt blocks, CJK and emoji split across byte tokens, and random ids."""

from __future__ import annotations

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.kinds._bytelevel import BYTE_TO_CHAR

from cases import MULTISCRIPT, KindCase
from paths import own, shared

FILES = {
    "faster-whisper-base": lambda: shared("whisper/faster-whisper-base/tokenizer.json"),
    "en": lambda: own("whisper/en/tokenizer.json"),
    "multilingual": lambda: own("whisper/multilingual/tokenizer.json"),
    "large-v3": lambda: own("whisper/large-v3/tokenizer.json"),
}

# Bytes of 中 (E4 B8 AD), of 😀 (F0 9F 98 80), a 2-byte é (C3 A9), an invalid byte (FF), a space.
SPLIT_BYTES = (0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0xFF, 0x20)


def build(name: str):
    if name == "tiktoken-multilingual":
        return lambda: build_tokenizer(
            TokenizerSpec(
                "whisper", {"tiktoken": shared("whisper-tiktoken/multilingual.tiktoken")}, {"num_languages": 99}
            )
        )
    return lambda: build_tokenizer(TokenizerSpec("whisper", {"tokenizer": FILES[name]()}))


def runtime(tok):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(tok.spec.file("tokenizer"))


def byte_token_ids(tok) -> list[int]:
    """Ids of the single-byte tokens of SPLIT_BYTES, asked of the tokenizers runtime (of the
    tiktoken file's own ranks, spelled in the same alphabet, for the .tiktoken source)."""
    if "tokenizer" not in tok.spec.files:
        by_piece = {tok.id_to_piece(i): i for i in range(tok.eot)}
        return [by_piece[BYTE_TO_CHAR[b]] for b in SPLIT_BYTES]
    rt = runtime(tok)
    return [rt.token_to_id(BYTE_TO_CHAR[b]) for b in SPLIT_BYTES]


def interesting(tok) -> list[int]:
    ts = tok.timestamp_begin
    languages = tok.all_language_tokens
    return [
        *byte_token_ids(tok),
        tok.eot,
        tok.sot,
        tok.sot_prev,
        tok.sot_prev,
        tok.sot,
        tok.sot_lm,
        tok.no_speech,
        tok.no_timestamps,
        tok.transcribe,
        tok.translate,
        languages[0],
        languages[-1],
        ts,
        ts + 1,
        ts + 150,
        tok.timestamp_end,
        tok.vocab_size - 1,
        tok.eot - 1,
        0,
    ]


def decoder_outputs(tok) -> list[list[int]]:
    """Id lists shaped like what Whisper's decoder emits, and the plain encodes."""
    en = tok.language_ids["en"]
    zh = tok.language_ids["zh"]
    ts = tok.timestamp_begin
    hello = tok.encode(" Hello world, this is a test.")
    chinese = tok.encode(" 今天天气很好，我们去公园散步吧。")
    emoji = tok.encode(" emoji 😀🎉👍🏽 and café")
    prompt = tok.encode(" Previous window 以前的 text.")
    return [
        # a prompt block, then the transcript
        [tok.sot_prev, *prompt, tok.sot, en, tok.transcribe, tok.no_timestamps, *hello, tok.eot],
        # timestamped segments
        [tok.sot, zh, tok.transcribe, ts, *chinese, ts + 120, ts + 120, *emoji, ts + 250, tok.eot],
        [tok.sot, en, tok.transcribe, tok.no_timestamps, *hello, tok.eot],
        # a prompt block that carries timestamps of its own, and one that never closes
        [tok.sot_prev, ts, *prompt, ts + 40, tok.sot, en, tok.translate, ts, *emoji, ts + 99],
        [*hello, tok.sot_prev, *prompt],
        *[tok.encode(text) for text in MULTISCRIPT],
    ]


def runtime_decode(tok, runtime, ids):
    """The oracle: prompt blocks and ids >= eot dropped (DESIGN), the rest decoded by the
    `tokenizers` runtime with special tokens skipped."""
    kept, in_prompt = [], False
    for i in ids:
        if i == tok.sot_prev:
            in_prompt = True
        elif i == tok.sot:
            in_prompt = False
        elif i < tok.eot and not in_prompt:
            kept.append(i)
    return runtime.decode(kept, skip_special_tokens=True)


def reference(tok):
    """runtime_decode on the `tokenizers` runtime of the same tokenizer.json."""
    from tokenizers import Tokenizer

    runtime = Tokenizer.from_file(tok.spec.file("tokenizer"))
    return lambda ids: runtime_decode(tok, runtime, ids)


CASES = [
    KindCase(f"whisper/{name}", build(name), interesting=interesting, realistic=decoder_outputs, reference=reference)
    for name in FILES
] + [
    KindCase(
        "whisper/tiktoken-multilingual",
        build("tiktoken-multilingual"),
        interesting=interesting,
        realistic=decoder_outputs,
        reference_note="openai-whisper is not installed (a heavy library): tests/kinds/test_whisper_tiktoken.py compares "
        "with its decode through expected values fixtures/make_whisper_tiktoken_expected.py made with it",
    )
]
