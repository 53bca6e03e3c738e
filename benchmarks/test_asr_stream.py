"""Streaming cost per token for the ASR-format kinds — wav2vec2 (CTC characters),
aggregate (Canary-style, from a .nemo archive), and the huggingface kind's CTC and BPEDecoder
decoders — at stream positions 100 / 10,000 / 100,000: constant cost means flat rows. Each
round forks a stream prepared to position N (copy.deepcopy, outside the timing), then feeds
the next 1,000 ids one call each. Fixtures: the project's own (fixtures/make_asr_formats.py)."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
from conftest import timed

import oasr_tok

OWN = Path(__file__).resolve().parent.parent / "fixtures"
POSITIONS = [100, 10_000, 100_000]
STEP = 1_000


def _wav2vec2():
    tok = oasr_tok.load(OWN / "wav2vec2" / "base-960h")
    letters = [i for i in range(5, 32)]
    rng = random.Random(3)
    ids = []
    while len(ids) < POSITIONS[-1] + STEP:
        ids += [rng.choice(letters) for _ in range(rng.randint(2, 8))] + [4]
    return tok, ids


def _canary():
    tok = oasr_tok.load(OWN / "nemo" / "canary.nemo")
    words = "the quick brown fox jumps over the lazy dog hello world".split()
    rng = random.Random(4)
    ids = tok.canary_prompt("en", "en")
    while len(ids) < POSITIONS[-1] + STEP:
        n = rng.randrange(0, 40)
        ids += [tok.canary_tokens[f"<|{n}|>"]] + tok.encode_language(rng.choice(words), "en")
    return tok, ids


def _hf(name: str):
    tok = oasr_tok.build_tokenizer(
        oasr_tok.TokenizerSpec("huggingface", {"tokenizer": str(OWN / "huggingface" / name / "tokenizer.json")})
    )
    rng = random.Random(5)
    if name == "ctc-base-960h":
        ids = []
        while len(ids) < POSITIONS[-1] + STEP:  # frames: repeats and blanks, as a CTC head emits
            ids += [rng.randrange(4, 32)] * rng.randint(1, 3) + [0] * rng.randint(0, 2)
        return tok, ids
    words = "speech recognition token stream decode hello world".split()
    text = " ".join(rng.choice(words) for _ in range(POSITIONS[-1] + STEP))  # one token per word here
    return tok, tok.encode(text)


CASES = {
    "wav2vec2/base-960h": _wav2vec2,
    "aggregate/canary.nemo": _canary,
    "huggingface/ctc-base-960h": lambda: _hf("ctc-base-960h"),
    "huggingface/bpe-suffix": lambda: _hf("bpe-suffix"),
}
_BUILT: dict = {}


def _case(label: str):
    if label not in _BUILT:
        _BUILT[label] = CASES[label]()
    return _BUILT[label]


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("label", list(CASES))
def test_stream_per_token(benchmark, label: str, position: int) -> None:
    tok, ids = _case(label)
    assert len(ids) >= position + STEP
    base: dict = {}
    tok.decode_incremental(ids[:position], base)
    singles = [[i] for i in ids[position : position + STEP]]

    def run(state):
        for chunk in singles:
            tok.decode_incremental(chunk, state)

    timed(
        benchmark,
        run,
        lambda: copy.deepcopy(base),
        per=STEP,
        info={"suite": "asr_stream", "case": label, "op": "decode_incremental", "impl": "oasr_tok", "n": position},
    )
