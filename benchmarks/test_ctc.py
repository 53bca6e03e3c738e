"""collapse_ctc on 1,000,000 CTC frames, against the plain Python loop a user would write
(the target: ≥ 20× the plain Python loop). Frames look like a CTC recogniser's argmax: about
two thirds blank, tokens of a 500-piece vocabulary held for 1-3 frames. The loop runs on a
list; oasr_tok on the same list and on the NumPy int64 array it came from."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import timed

from oasr_tok import collapse_ctc

FRAMES = 1_000_000
BLANK = 0


def _frames() -> list[int]:
    rng = random.Random(19)
    out: list[int] = []
    while len(out) < FRAMES:
        if rng.random() < 0.6:
            out.extend([BLANK] * rng.randint(1, 4))
        else:
            out.extend([rng.randrange(1, 500)] * rng.randint(1, 3))
    return out[:FRAMES]


def python_loop(frames, blank):
    ids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    prev = None
    for i, frame in enumerate(frames):
        if frame != prev:
            if prev is not None and prev != blank:
                ends.append(i)
            if frame != blank:
                ids.append(frame)
                starts.append(i)
            prev = frame
    if prev is not None and prev != blank:
        ends.append(len(frames))
    return ids, starts, ends


LIST = _frames()
ARRAY = np.asarray(LIST, dtype=np.int64)
IMPLS = {
    "oasr_tok": lambda: collapse_ctc(LIST, BLANK),
    "oasr_tok numpy": lambda: collapse_ctc(ARRAY, BLANK),
    "python loop": lambda: python_loop(LIST, BLANK),
}


@pytest.mark.parametrize("impl", list(IMPLS), ids=list(IMPLS))
def test_collapse_ctc(benchmark, impl: str) -> None:
    run = IMPLS[impl]
    expected = python_loop(LIST, BLANK)
    assert collapse_ctc(LIST, BLANK) == expected
    assert [a.tolist() for a in collapse_ctc(ARRAY, BLANK)] == list(expected)
    timed(
        benchmark,
        lambda _: run(),
        per=FRAMES,
        info={"suite": "ctc", "case": "collapse_ctc/1M frames", "op": "collapse_ctc", "impl": impl, "n": FRAMES},
    )
