"""Shared machinery of the benchmark suite (run it with `make bench`; see README.md).

* Benchmarks run only when pytest-benchmark is enabled explicitly (`--benchmark-enable`);
  the project's default addopts disable it, and then everything here is skipped, so a stray
  `pytest .` never spends minutes timing.
* `OASR_BENCH_SLOWDOWN=k` makes every timed call do its work k times. It exists only to show
  that the baseline comparison catches a slowdown; the library knows nothing of it.
* `timed()` sizes the rounds of each benchmark from one probe so the whole suite stays within
  its time budget, and records what the report needs in `benchmark.extra_info`.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SKIPS_FILE = RESULTS / "skips.json"

SLOWDOWN = int(os.environ.get("OASR_BENCH_SLOWDOWN", "1") or 1)
if SLOWDOWN < 1:
    raise ValueError(f"OASR_BENCH_SLOWDOWN must be a positive integer, got {SLOWDOWN}")

#: Seconds of timed work to aim for per benchmark, and the round limits.
TARGET_SECONDS = float(os.environ.get("OASR_BENCH_TARGET", "0.5"))
MIN_ROUNDS, MAX_ROUNDS = 3, 200


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "peer: a peer library's side of a comparison (not ours: left out of the baseline)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # --benchmark-enable overrides the --benchmark-disable of the project's addopts.
    if config.getoption("benchmark_enable", False):
        return
    skip = pytest.mark.skip(reason="benchmarks run only with --benchmark-enable (make bench)")
    for item in items:
        if str(HERE) in str(item.fspath):
            item.add_marker(skip)


_skips: list[dict[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember why each benchmark was skipped: the report lists missing kinds and peers."""
    if report.skipped and report.when in ("setup", "call"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skips.append({"test": report.nodeid, "reason": reason.removeprefix("Skipped: ")})


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("benchmark_enable", False):
        RESULTS.mkdir(exist_ok=True)
        SKIPS_FILE.write_text(json.dumps(_skips, indent=1))


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    import oasr_tok

    try:
        git = dict(cwd=HERE, capture_output=True, text=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], **git).stdout.strip()
        # The run measures the working tree: say so when it differs from the commit.
        if (
            commit
            and subprocess.run(
                ["git", "status", "--porcelain", "--", "../oasr_tok", "../setup.py"], **git
            ).stdout.strip()
        ):
            commit += " + uncommitted changes to oasr_tok"
    except OSError:
        commit = ""
    machine_info["oasr_bench"] = {
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "oasr_tok": f"{oasr_tok.__version__} ({commit})" if commit else oasr_tok.__version__,
        "oasr_tok_path": str(Path(oasr_tok.__file__).parent),
        "libraries": {
            d: _version(d)
            for d in ("tokenizers", "sentencepiece", "transformers", "numpy", "Cython", "pytest-benchmark")
        },
        "slowdown": SLOWDOWN,
    }


# -- timing -------------------------------------------------------------------------------------


def _rounds_for(seconds_per_round: float, min_rounds: int = MIN_ROUNDS) -> int:
    if seconds_per_round <= 0:
        return MAX_ROUNDS
    return max(min_rounds, min(MAX_ROUNDS, int(TARGET_SECONDS / seconds_per_round)))


def in_threads(works: list[Callable[[], None]]) -> None:
    """Run each callable, together: one alone in the calling thread, more in a thread each
    (the rows that compare one thread with two)."""
    if len(works) == 1:
        works[0]()
        return
    workers = [threading.Thread(target=work) for work in works]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def timed(
    benchmark,
    run: Callable[[Any], Any],
    make: Callable[[], Any] | None = None,
    *,
    per: int,
    info: dict[str, Any],
    min_rounds: int = MIN_ROUNDS,
    reference: Callable[[Any], Any] | None = None,
    make_reference: Callable[[], Any] | None = None,
    reference_per: int | None = None,
) -> None:
    """Time `run(live)` where `live = make()` is built fresh before each round, outside the
    timing (or `run(None)` without `make`). `per` is how many tokens one round covers: the
    report divides by it. With OASR_BENCH_SLOWDOWN=k a round builds k lives and runs them
    all, doing exactly k times the work.

    With `reference` (and `make_reference`, as `make`), each round is paired with one call of
    `reference`, timed through the same call shape as a round, outside the round's timing: just
    before the round (in the untimed setup) on even rounds, just after it (in the teardown) on
    odd ones, so neither side is always the one that runs second. extra_info["paired"] records
    the median of the per-round ratios run / reference (per token: `reference_per` is how many
    tokens a reference call covers, `per` by default), which a drift of the machine's speed
    between benchmarks (another job starting, a frequency change) does not move as it moves a
    ratio of two benchmarks' medians taken minutes apart."""
    k = SLOWDOWN
    reference_seconds: list[float] = []

    def target(lives):
        for live in lives:
            run(live)

    def reference_target(lives):
        for live in lives:
            reference(live)

    round_number = [0]

    def time_reference() -> None:
        ref_lives = [make_reference() if make_reference is not None else None]
        reference_seconds.append(_timed_like_a_round(reference_target, (ref_lives,), {}))

    def setup():
        lives = [make() if make is not None else None for _ in range(k)]
        if reference is not None and round_number[0] % 2 == 0:
            time_reference()
        return (lives,), {}

    def teardown(lives):
        if reference is not None and round_number[0] % 2 == 1:
            time_reference()
        round_number[0] += 1

    # One probe round, untimed by the benchmark, sizes the rounds (setup and teardown cost
    # included, as they are spent on every round too).
    start = time.perf_counter()
    (lives,), _ = setup()
    target(lives)
    teardown(lives)
    spent = time.perf_counter() - start
    del lives
    reference_seconds.clear()
    round_number[0] = 0
    benchmark.extra_info.update(info, per=per, slowdown=k)
    benchmark.pedantic(
        target,
        setup=setup,
        teardown=teardown,
        rounds=_rounds_for(spent, min_rounds),
        iterations=1,
        warmup_rounds=0,
    )
    if reference is not None:
        rounds = list(benchmark.stats.stats.data)
        if len(rounds) == len(reference_seconds):
            scale = (reference_per or per) / per  # (per token of each side)
            ratios = sorted(t / k / r * scale for t, r in zip(rounds, reference_seconds) if r > 0)
            benchmark.extra_info["paired"] = {
                "ratio": ratios[len(ratios) // 2] if ratios else None,
                "reference_median": sorted(reference_seconds)[len(reference_seconds) // 2],
                "rounds": len(ratios),
            }


def _timed_like_a_round(function: Callable[..., Any], args: tuple, kwargs: dict, timer=time.perf_counter) -> float:
    """function(*args, **kwargs) timed as pytest-benchmark's pedantic times a round (its runner
    reads the timer around exactly such a call), so the reference of a paired round pays the
    same harness cost as the round. Timed directly instead, the reference skipped ~90 ns the
    round pays (153 against 67 ns around an empty call, medians of 200,000): 2-3% of a
    1,000-id token_pieces call, charged to the subject alone. (Around an empty call the two
    still differ by 10-15 ns.)"""
    start = timer()
    function(*args, **kwargs)
    end = timer()
    return end - start


def probe_seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
