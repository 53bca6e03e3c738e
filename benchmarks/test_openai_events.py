"""The OpenAI transcription stream's events (oasr_tok.outputs.openai_audio.TranscriptionEvents):
the cost of one ``transcript.text.delta`` event line per delta, beside a plain ``json.dumps`` of
the same event dict (``"data: " + json.dumps({...}) + "\\n\\n"``, what a server writes by hand),
in the same run. Target (issue 54): at most 1 µs per delta event line.

Methodology. The deltas are real: a whisper stream's per-token deltas over the multi-script
passages (faster-whisper-base's tokenizer.json, the ids bench_cases makes), the empty ones
left out (a writer sends nothing for them). A round writes every delta's event through a fresh
writer (made outside the timing, as a request's writer is made once); the report divides by
the number of deltas. The logprobs rows give each delta one (token, logprob) entry, as a
one-token-per-step decoder has, and build the peer's dict with the same entry. The feed rows
step a fresh stream one id per call, through the writer (``events.feed(stream, [id])``: the
stream's step and the event) and alone (``stream.feed([id])``), per id: what the event adds to
a server's per-token step.
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from bench_cases import Unavailable, hypothesis, tokenizer
from conftest import timed

CASE = "whisper/faster-whisper-base"
IDS = 2_000


@cache
def _inputs() -> tuple[list[int], list[str]]:
    try:
        tok = tokenizer(CASE)
        ids = hypothesis(CASE, IDS)
    except (Unavailable, FileNotFoundError) as error:
        pytest.skip(str(error))
    stream = tok.new_stream()
    deltas = [d for d in (stream.feed([i]) for i in ids) if d]
    return ids, deltas


def _info(op: str, impl: str, n: int) -> dict:
    return {"suite": "openai", "case": CASE, "op": op, "impl": impl, "n": n}


def test_delta_events(benchmark):
    from oasr_tok.outputs.openai_audio import TranscriptionEvents

    _, deltas = _inputs()

    def run(events):
        delta = events.delta
        for d in deltas:
            delta(d)

    timed(benchmark, run, TranscriptionEvents, per=len(deltas), info=_info("event per delta", "oasr_tok", len(deltas)))


@pytest.mark.peer
def test_delta_events_json_dumps(benchmark):
    _, deltas = _inputs()
    dumps = json.dumps

    def run(_):
        for d in deltas:
            "data: " + dumps({"type": "transcript.text.delta", "delta": d}) + "\n\n"

    timed(benchmark, run, per=len(deltas), info=_info("event per delta", "json.dumps", len(deltas)))


def test_delta_events_with_logprobs(benchmark):
    from oasr_tok.outputs.openai_audio import TranscriptionEvents

    _, deltas = _inputs()
    entries = [[(d, -0.25)] for d in deltas]

    def run(events):
        delta = events.delta
        for d, e in zip(deltas, entries):
            delta(d, e)

    timed(
        benchmark,
        run,
        lambda: TranscriptionEvents(logprobs=True),
        per=len(deltas),
        info=_info("event per delta, logprobs", "oasr_tok", len(deltas)),
    )


@pytest.mark.peer
def test_delta_events_with_logprobs_json_dumps(benchmark):
    _, deltas = _inputs()
    dumps = json.dumps

    def run(_):
        for d in deltas:
            entry = {"token": d, "logprob": -0.25, "bytes": list(d.encode("utf-8"))}
            "data: " + dumps({"type": "transcript.text.delta", "delta": d, "logprobs": [entry]}) + "\n\n"

    timed(benchmark, run, per=len(deltas), info=_info("event per delta, logprobs", "json.dumps", len(deltas)))


@pytest.mark.parametrize("impl", ["oasr_tok events.feed", "oasr_tok stream.feed alone"])
def test_feed_per_token(benchmark, impl):
    from oasr_tok.outputs.openai_audio import TranscriptionEvents

    ids, _ = _inputs()
    tok = tokenizer(CASE)
    singles = [[i] for i in ids]

    if impl == "oasr_tok events.feed":

        def run(live):
            events, stream = live
            feed = events.feed
            for one in singles:
                feed(stream, one)

    else:

        def run(live):
            _, stream = live
            feed = stream.feed
            for one in singles:
                feed(one)

    timed(
        benchmark,
        run,
        lambda: (TranscriptionEvents(), tok.new_stream()),
        per=len(ids),
        info=_info("feed per token", impl, len(ids)),
    )
