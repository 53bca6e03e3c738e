"""Streams that travel (issue 53; docs/scale.md § Streams that travel), on Qwen3's tokenizer:

* **One stream's message**: a stream mid-generation (`new_stream(prefill=48 ids, stop=2
  strings)`, 200 ids fed, one of Qwen3's characters split across tokens held) pickled and
  unpickled in a process that holds its tokenizer — by reference with its text (the default),
  by reference without it (`Travel(text=False)`), and, side by side, by value (its tokenizer's
  files in every message: what a stream pickle was before) and by spec. extra_info records
  the message's size and the stream's text length.
* **1,000 streams** at different positions, pickled as one list and unpickled, by reference
  with and without their text.
* **A tokenizer by value against a cold load of its files**: each round a fresh process that
  imports oasr_tok untimed and times either `pickle.loads` of Qwen3's tokenizer pickled by
  value (its bytes read before the timing) or `oasr_tok.load` of the same folder
  (cold_probe.py; a warm-up process first, so the file cache is warm for both). The two sides
  are interleaved: every round of one side's row first probes the other side (untimed, in
  pedantic's setup), so a machine's load falls on both alike. The row keeps its side's wall
  time (min and median of the rounds), its CPU time (min and median: by value checks a CRC-32
  on a second thread while it builds, and writes and hashes nothing) and the median of the
  paired by-value / cold ratios of its rounds.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from bench_cases import Unavailable, hypothesis, shared, tokenizer
from conftest import timed

import oasr_tok

CASE = "huggingface/qwen3"
PREFILL = 48
STOPS = ["<|im_end|>", "\n\nUser:"]
HOW = {
    "by reference": oasr_tok.Travel(),
    "by reference, state only": oasr_tok.Travel(text=False),
    "by value": oasr_tok.Travel(tokenizer="value"),
    "by spec": oasr_tok.Travel(tokenizer="spec"),
}
PROBE = str(Path(__file__).resolve().parent / "cold_probe.py")
ROUNDS = 15


def _qwen3():
    try:
        return tokenizer(CASE)
    except Unavailable as exc:
        pytest.skip(str(exc))


def _mid_generation(tok, offset: int, fed: int) -> oasr_tok.Stream:
    """A stream `fed` ids after its prompt, stopped (when it can) where it holds bytes back."""
    ids = hypothesis(CASE, offset + PREFILL + fed + 64)
    stream = tok.new_stream(prefill=ids[offset : offset + PREFILL], stop=STOPS)
    at = offset + PREFILL
    for token_id in ids[at : at + fed]:
        stream.feed([token_id])
    for token_id in ids[at + fed : at + fed + 64]:  # on, to a character split across tokens
        if stream.__reduce__()[1][1][2]:
            break
        stream.feed([token_id])
    return stream


@pytest.mark.parametrize("how", list(HOW))
def test_one_stream(benchmark, how: str) -> None:
    tok = _qwen3()
    stream = _mid_generation(tok, 0, 200)
    travel = HOW[how]
    with oasr_tok.travelling(travel):
        size = len(pickle.dumps(stream))

    def run(_):
        with oasr_tok.travelling(travel):
            pickle.loads(pickle.dumps(stream))

    timed(
        benchmark,
        run,
        per=1,
        info={
            "suite": "travel",
            "case": CASE,
            "op": "dump + load one stream",
            "impl": how,
            "n": 1,
            "bytes": size,
            "text_bytes": len(stream.text.encode("utf-8")),
        },
    )


@pytest.mark.parametrize("how", ["by reference", "by reference, state only"])
def test_a_thousand_streams(benchmark, how: str) -> None:
    tok = _qwen3()
    streams = [_mid_generation(tok, (k * 37) % 4_000, 50 + k % 200) for k in range(1_000)]
    travel = HOW[how]
    with oasr_tok.travelling(travel):
        size = len(pickle.dumps(streams))

    def run(_):
        with oasr_tok.travelling(travel):
            pickle.loads(pickle.dumps(streams))

    timed(
        benchmark,
        run,
        per=1,
        info={
            "suite": "travel",
            "case": CASE,
            "op": "dump + load 1,000 streams",
            "impl": how,
            "n": 1_000,
            "bytes": size,
        },
    )


def _probe(impl: str, path: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the load call in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, PROBE, impl, path], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise Unavailable(f"{impl} could not load {path}: {done.stderr.strip().splitlines()[-1:]}")
    ms, _, cpu_ms = done.stdout.split()
    return float(ms) / 1e3, float(cpu_ms) / 1e3


@pytest.mark.parametrize("side", ["cold load of the files", "by value"])
def test_a_tokenizer_by_value_against_a_cold_load(benchmark, side: str, tmp_path) -> None:
    tok = _qwen3()
    folder = shared("huggingface/qwen3")
    pickled = tmp_path / "qwen3.pickle"
    pickled.write_bytes(pickle.dumps(oasr_tok.load(folder)))
    impl, path = ("oasr_tok-pickle", str(pickled)) if side == "by value" else ("oasr_tok", folder)
    del tok
    other = ("oasr_tok", folder) if side == "by value" else ("oasr_tok-pickle", str(pickled))
    _probe(impl, path)  # the warm-ups
    _probe(*other)
    figures: list[tuple[float, float]] = []
    others: list[tuple[float, float]] = []
    benchmark.pedantic(
        lambda: figures.append(_probe(impl, path)),
        setup=lambda: others.append(_probe(*other)),
        rounds=ROUNDS,
        iterations=1,
    )
    wall, cpu = sorted(w for w, _ in figures), sorted(c for _, c in figures)
    pairs = [(ours, theirs) if side == "by value" else (theirs, ours) for ours, theirs in zip(figures, others)]
    paired = sorted(value[0] / cold[0] for value, cold in pairs)
    paired_cpu = sorted(value[1] / cold[1] for value, cold in pairs)
    benchmark.extra_info.update(
        {
            "suite": "travel",
            "case": CASE,
            "op": "tokenizer: fresh process",
            "impl": side,
            "n": 1,
            "per": 1,
            "load_s_min": wall[0],
            "load_s_median": wall[len(wall) // 2],
            "cpu_s_min": cpu[0],
            "cpu_s_median": cpu[len(cpu) // 2],
            "paired_value_over_cold_median": paired[len(paired) // 2],
            "paired_value_over_cold_cpu_median": paired_cpu[len(paired_cpu) // 2],
        }
    )
