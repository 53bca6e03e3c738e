"""The tiktoken kind beside tiktoken itself, on Meta's two tokenizer.model files (llama-models)
and the same ids: user-like text (bench_corpus's passages: English, Chinese, mixed, and WORLD's
every script, emoji with modifiers and joiners, characters above U+FFFF that the vocabulary
splits across tokens), Meta's chat headers (special ids) between them, repeated to length.

* decode at 1,000 and 100,000 ids: `tok.decode` (special ids taken out) against Meta's
  `Encoding.decode` of the ids without them; `with_specials().decode` against
  `Encoding.decode` of all of them.
* a stream, one id per call, over 1,000 and 100,000 ids (per token): `Stream.feed` against the
  constant-cost way to stream tiktoken, `Encoding.decode_single_token_bytes` through Python's
  incremental UTF-8 decoder (errors="replace"; special ids rendered, as tiktoken renders them:
  the work per id is the same).
* ours alone: the same ids in Step-Audio 2's interleaving (a text id, four audio-codec ids)
  through the "audio" envelope, per id: `feed` and then `take_audio`, as a server steps it.

The cold load (a fresh process, the load call alone) is benchmarks/test_cold_load.py's
tiktoken rows: ours against tiktoken reading the ranks and building its Encoding, as Meta's
Tokenizer does, and against the Encoding built from ranks already read.
"""

from __future__ import annotations

import codecs
import os
from functools import cache

import pytest
from bench_corpus import PASSAGES, WORLD
from conftest import timed

SIZES = [1_000, 100_000]
FILES = ("llama3", "llama4")


def _meta_file(name: str) -> str:
    try:
        import llama_models
    except ImportError:
        pytest.skip("llama-models (the test extra: it ships Meta's tokenizer.model files) is not installed")
    return os.path.join(os.path.dirname(llama_models.__file__), name, "tokenizer.model")


@cache
def _ours(name: str):
    import oasr_tok

    return oasr_tok.load(_meta_file(name))


@cache
def _period(name: str) -> tuple[int, ...]:
    tok = _ours(name)
    header = (
        ("<|start_header_id|>", "<|end_header_id|>") if name == "llama3" else ("<|header_start|>", "<|header_end|>")
    )
    ids: list[int] = []
    for text in (*PASSAGES["multi"], WORLD):
        ids += [tok.special_token_id(header[0]), *tok.encode("assistant"), tok.special_token_id(header[1])]
        ids += tok.encode(text)
    return tuple(ids)


def _ids(name: str, n: int) -> list[int]:
    p = list(_period(name))
    return (p * (n // len(p) + 1))[:n]


@cache
def _encoding(name: str):
    """Meta's own tiktoken Encoding of the file (llama_models' Tokenizer)."""
    from pathlib import Path

    if name == "llama3":
        from llama_models.llama3.tokenizer import Tokenizer
    else:
        from llama_models.llama4.tokenizer import Tokenizer
    return Tokenizer(Path(_meta_file(name))).model


PARAMS = [
    pytest.param(
        name, op, impl, n, id=f"{name}|{op}|{impl}|{n}", marks=[pytest.mark.peer] if impl == "tiktoken" else []
    )
    for name in FILES
    for op in ("decode", "decode with specials", "stream")
    for impl in ("oasr_tok", "tiktoken")
    for n in SIZES
]
#: Step-Audio 2's interleaving (one text id, then four audio-codec ids) through the "audio"
#: envelope, one id per call: per id, text and audio alike (ours only: tiktoken has no such stream)
AUDIO_PARAMS = [pytest.param(name, n, id=f"{name}|stream with audio|oasr_tok|{n}") for name in FILES for n in SIZES]


@pytest.mark.parametrize("name,n", AUDIO_PARAMS)
def test_tiktoken_audio_stream(benchmark, name: str, n: int) -> None:
    from oasr_tok.outputs.envelopes import AudioIds

    tok = _ours(name)
    layout = AudioIds(tok.vocab_size, tok.vocab_size + 6562)
    text = _ids(name, n // 5 + 1)
    ids: list[int] = []
    for k, token_id in enumerate(text):
        ids += [token_id, *(layout.start + (4 * k + j) % 6562 for j in range(4))]
    singles = [[i] for i in ids[:n]]

    def run(stream):
        feed, take = stream.feed, stream.take_audio
        for one in singles:  # a server's step: the text delta, then the audio ids since the last step
            feed(one)
            take()

    make = lambda: tok.new_stream(envelope=layout)
    run(make())
    benchmark.group = f"tiktoken {name} stream with audio {n:,}"
    info = {"suite": "tiktoken", "case": f"tiktoken/{name}", "op": "stream with audio", "impl": "oasr_tok", "n": n}
    timed(benchmark, run, make, per=n, info=info)


@pytest.mark.parametrize("name,op,impl,n", PARAMS)
def test_tiktoken(benchmark, name: str, op: str, impl: str, n: int) -> None:
    ids = _ids(name, n)
    tok = _ours(name)
    special = tok.special_ids
    if impl == "oasr_tok":
        if op == "decode":
            run, make = (lambda _: tok.decode(ids)), None
        elif op == "decode with specials":
            view = tok.with_specials()
            run, make = (lambda _: view.decode(ids)), None
        else:
            singles = [[i] for i in ids]

            def run(stream):
                feed = stream.feed
                for one in singles:
                    feed(one)

            make = tok.new_stream
    else:
        enc = _encoding(name)
        if op == "decode":
            kept = [i for i in ids if i not in special]  # (taken out before the timing)
            run, make = (lambda _: enc.decode(kept)), None
        elif op == "decode with specials":
            run, make = (lambda _: enc.decode(ids)), None
        else:
            token_bytes = enc.decode_single_token_bytes

            def run(decoder):
                step = decoder.decode
                for i in ids:
                    step(token_bytes(i))

            make = lambda: codecs.getincrementaldecoder("utf-8")("replace")
    run(make() if make is not None else None)
    benchmark.group = f"tiktoken {name} {op} {n:,}"
    per = n if op == "stream" else 1
    timed(
        benchmark,
        run,
        make,
        per=per,
        info={"suite": "tiktoken", "case": f"tiktoken/{name}", "op": op, "impl": impl, "n": n},
    )
