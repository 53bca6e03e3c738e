"""Stitching a one-hour transcript: StitchedTranscript against transformers' own functions on
the same chunk outputs, side by side in one run (target: ≥ 10× faster), and the cost of one
chunk at chunk 10 and chunk 100 (target: flat, chunk 100 / chunk 10 ≤ 1.2).

The recording: one hour of speech (the English passage of tests/stitch_reference.py, words of
0.125-0.6 s with short pauses, about 2.7 words a second), cut as transformers' pipeline cuts it
with chunk_length_s=30, stride_length_s=5 (chunk_iter: 180 chunks, 20 s apart). Each chunk's
output is what a recogniser writes for the words it heard whole (tests/stitch_reference.py):

* whisper: faster-whisper-base ids with segments of 10-25 words between timestamp ids (and
  without timestamps); transformers' side is tokenization_whisper._decode_asr;
* seq2seq: Qwen3 ids; transformers' side is the ASR pipeline's _find_longest_common_sequence
  (its transcript started with ids that match nothing, which its numpy 2 comparison needs when
  a chunk is longer than the transcript so far) and decode(skip_special_tokens=True);
* ctc: wav2vec2-base-960h argmax frames (0.02 s each); transformers' side is the pipeline's
  postprocess lines (trim each chunk's frames by its strides, concatenate, grouped decode), ours
  collapse_ctc per chunk and the stitch.

A round of "one hour" runs the whole stitch (180 chunks, the final text); a round of "chunk k"
adds chunks k … k + 9 to a transcript that took the k - 1 before it one after another (untimed,
rebuilt for every round: a deep copy's fresh lists would time the copy's memory, not the stitch),
and the figure is per chunk: ten, so that the growth of the transcript's lists (amortised O(1):
now and then a list is moved whole) is counted as a server pays it, spread over the chunks.
For those rows the recording's first 45 chunks repeat, so chunk 100 holds the same ids after the
same chunk as chunk 10, and the two rows differ only in how long the transcript already is.

Run: PYTHONPATH=. python -m pytest benchmarks/test_stitching.py --benchmark-enable -p no:xdist
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest
from bench_cases import Unavailable
from conftest import timed

from oasr_tok import StitchedTranscript, collapse_ctc

TESTS = Path(__file__).resolve().parent.parent / "tests"
HOUR = 3600
CHUNK_S, STRIDE_S = 30, 5
METHODS = ("whisper", "whisper (no timestamps)", "seq2seq", "ctc")
AT = (10, 100)
PERIOD = 45  # chunk 100 is chunk 10 again (100 - 10 = 2 × 45)
WINDOW = 10  # chunks a "chunk k" round adds: k … k + 9


def _reference():
    sys.path.insert(0, str(TESTS))
    try:
        import stitch_reference
    except ImportError as error:  # transformers, or a fixture, missing
        raise Unavailable(f"tests/stitch_reference.py cannot run here: {error}") from None
    return stitch_reference


@functools.cache
def _recording(method: str):
    """(our tokenizer, transformers' tokenizer, the chunks, our add() arguments per chunk, options)."""
    ref = _reference()
    rate = ref.SAMPLE_RATE
    plan = {"seed": 54, "total": HOUR * rate}
    plan["layout"] = ref.chunk_layout(plan["total"], CHUNK_S * rate, STRIDE_S * rate, STRIDE_S * rate)
    plan["edges"] = [("drop", "keep") if k % 2 else ("keep", "drop") for k in range(len(plan["layout"]))]
    text = " " + ref.ENGLISH
    if method.startswith("whisper"):
        ours, theirs = ref.pair("whisper")
        chunks = ref.whisper_chunks(ours, text.strip(), plan, timestamps="no" not in method, segment=(10, 25))
        adds = [{"ids": c["ids"], "start": c["start"], "length": c["length"], "stride": c["stride"]} for c in chunks]
        options = {"timestamps": "no" not in method}
    elif method == "seq2seq":
        ours, theirs = ref.pair("qwen3")
        chunks = ref.seq2seq_chunks(ours, text, plan, eos=ours.special_tokens.eos_id)
        adds = [{"ids": c["ids"], "start": c["start"], "length": c["length"], "stride": c["stride"]} for c in chunks]
        options = {}
    else:
        ours, theirs = ref.pair("wav2vec2")
        chunks = ref.ctc_chunks(ours, ref.ENGLISH * 250, plan)
        adds = [{"frames": c["frames"], "start": c["start"], "length": c["length"], "stride": c["stride"][1:]}
                for c in chunks]  # fmt: skip
        options = {"method": "ctc", "frame_length": ref.CTC_ALIGN}
    return ours, theirs, chunks, adds, {"sample_rate": rate, **options}


def _add(t: StitchedTranscript, blank: int | None, chunk: dict) -> str:
    if "frames" in chunk:  # CTC: collapse the chunk's frames first (the transformers side decodes frames)
        ids, starts, ends = collapse_ctc(chunk["frames"], blank)
        rest = {k: v for k, v in chunk.items() if k != "frames"}
        return t.add(ids, frames=(starts, ends), **rest)
    return t.add(**chunk)


def ours_hour(method: str) -> str:
    tok, _, _, adds, options = _recording(method)
    t = StitchedTranscript(tok, **options)
    blank = getattr(tok, "blank_id", None)
    for chunk in adds:
        _add(t, blank, chunk)
    t.finish()
    return t.text


def transformers_hour(method: str) -> str:
    ref = _reference()
    _, theirs, chunks, _, _ = _recording(method)
    if method.startswith("whisper"):
        return ref.transformers_whisper(theirs, chunks, "no" not in method)[0]
    if method == "seq2seq":
        return ref.transformers_seq2seq(theirs, [c["ids"] for c in chunks])
    return ref.transformers_ctc(theirs, chunks)[0]


@functools.cache
def _tiled(method: str) -> list[dict]:
    """The recording's first PERIOD chunks again and again: chunk k and chunk k + PERIOD hold the
    same ids after the same chunk, so chunk 10 and chunk 100 differ only in where they are."""
    adds = _recording(method)[3]
    step = adds[1]["start"] - adds[0]["start"]
    out = []
    for j in range(max(AT) + WINDOW):
        chunk = {**adds[j % PERIOD], "start": adds[j % PERIOD]["start"] + (j // PERIOD) * PERIOD * step}
        if j % PERIOD == 0 and j:
            chunk["stride"] = adds[1]["stride"]  # (the recording's first chunk has no left stride)
        out.append(chunk)
    return out


def _grown(method: str, k: int) -> StitchedTranscript:
    """A transcript that has taken chunks 1 … k - 1, one after another as a server adds them."""
    tok, _, _, _, options = _recording(method)
    t = StitchedTranscript(tok, **options)
    blank = getattr(tok, "blank_id", None)
    for chunk in _tiled(method)[: k - 1]:
        _add(t, blank, chunk)
    return t


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("impl", ["oasr_tok", pytest.param("transformers", marks=pytest.mark.peer)])
def test_stitch_one_hour(benchmark, method: str, impl: str) -> None:
    try:
        ours = ours_hour(method)
        theirs = transformers_hour(method)
    except Unavailable as why:
        pytest.skip(str(why))
    if method != "seq2seq":  # (seq2seq: the recording's chunks start without their space: "thisis")
        assert ours == theirs
    run = ours_hour if impl == "oasr_tok" else transformers_hour
    chunks = len(_recording(method)[3])
    timed(
        benchmark,
        lambda _: run(method),
        per=chunks,
        info={"suite": "stitching", "case": f"one hour/{method}", "op": "stitch", "impl": impl, "n": chunks},
    )


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", AT)
def test_stitch_chunk_k(benchmark, method: str, k: int) -> None:
    try:
        tok = _recording(method)[0]
    except Unavailable as why:
        pytest.skip(str(why))
    blank = getattr(tok, "blank_id", None)
    window = _tiled(method)[k - 1 : k - 1 + WINDOW]

    def run(t: StitchedTranscript) -> None:
        for chunk in window:
            _add(t, blank, chunk)

    timed(
        benchmark,
        run,
        lambda: _grown(method, k),
        per=WINDOW,
        info={"suite": "stitching", "case": f"chunk k/{method}", "op": "add", "impl": "oasr_tok", "n": k},
        min_rounds=30,  # (the rebuild makes a round long: a median of few rounds would be noise)
    )
