"""Turn a pytest-benchmark JSON run into benchmarks/RESULTS.md (and print it).

    python benchmarks/report.py [results/latest.json] [--out benchmarks/RESULTS.md]

Beside the markdown it draws two PNGs into plots/ next to it (matplotlib, a benchmark-only
dependency; without it the report says the plots were not drawn): per-token streaming cost
against transcript length, log-log, for oasr_tok and every peer; and per-token throughput bars.

Every figure is a median over rounds. Per-token figures divide a round by the tokens it
covered (extra_info["per"]). A ratio "× peer" is ours divided by the peer's: below 1 means
oasr_tok is faster. Growth is the per-token cost at a long position over that at 100.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
POSITIONS = [100, 1_000, 10_000, 50_000, 100_000]
SIZES = [1_000, 100_000, 1_000_000]
REVISION_POSITIONS = [100, 10_000, 100_000]  # benchmarks/test_revisions.py POSITIONS
STREAM_PEERS = ["DecodeStream", "vLLM window", "re-decode prefix", "sentencepiece partial"]
BYTE_LEVEL_STREAMS = [
    "sentencepiece/mistral-v1",
    "huggingface/qwen3",
    "huggingface/mistral-7b",
    "huggingface/moonshine",
]
ARRAY_IMPLS = ["oasr_tok[np.int64]", "oasr_tok[np.int32]"]
ARRAY_OPS = ["decode", "token_pieces", "word_timings"]
#: benchmarks/test_throughput.py LIST_AGAIN: the same ids in a second list, paired with the list
#: row as an array row is (a control of the paired measurement, not a target).
LIST_AGAIN = "oasr_tok[list again]"
#: Kinds whose decode is compared with SentencePiece's decode of the same ids.
SP_DECODE = ["symbol_table/icefall-bpe500", "sentencepiece/mistral-v1"]


def _us(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    us = seconds * 1e6
    return f"{us:.3f}" if us < 1 else f"{us:.2f}" if us < 100 else f"{us:,.0f}"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:,.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "—"
    r = a / b
    return f"{r:.2f}×" if r >= 0.1 else f"{r:.2g}×"


def _check(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**pass**" if ok else "**FAIL**")


class Run:
    def __init__(self, data: dict, skips: list[dict], wall: float | None) -> None:
        self.data, self.skips, self.wall = data, skips, wall
        # (suite, case, op, impl, n) -> per-unit median seconds, and the raw entries
        self.per: dict[tuple, float] = {}
        self.raw: dict[tuple, dict] = {}
        # key -> median of the per-round ratios to the reference timed in turn (conftest.timed)
        self.paired_ratio: dict[tuple, float] = {}
        for bench in data.get("benchmarks", []):
            info = bench.get("extra_info", {})
            if "suite" not in info:
                continue
            # A slowed-down run (OASR_BENCH_SLOWDOWN) did the work k times per round.
            median = bench["stats"]["median"] / info.get("slowdown", 1)
            key = (info["suite"], info["case"], info.get("op", "decode_incremental"), info["impl"], info["n"])
            self.per[key] = median / info["per"]
            self.raw[key] = {"median": median, **info}
            paired = info.get("paired") or {}
            if paired.get("ratio") is not None:
                self.paired_ratio[key] = paired["ratio"]

    def stream(self, case: str, impl: str, n: int) -> float | None:
        return self.per.get(("stream", case, "decode_incremental", impl, n))

    def stream_against_qwen3(self, case: str, n: int) -> float | None:
        """Our per-token stream cost on `case` over the huggingface kind's on Qwen3 at the same
        position: paired when the run timed them in turn (test_stream.WITH_QWEN3), else the
        ratio of the two rows' medians."""
        key = ("stream", case, "decode_incremental", "oasr_tok[with Qwen3]", n)
        if key in self.paired_ratio:
            return self.paired_ratio[key]
        o, q = self.stream(case, "oasr_tok", n), self.stream("huggingface/qwen3", "oasr_tok", n)
        return o / q if o and q else None

    def tput(self, case: str, op: str, impl: str, n: int, whole: bool = False) -> float | None:
        key = ("throughput", case, op, impl, n)
        if whole:
            return self.raw[key]["median"] if key in self.raw else None
        return self.per.get(key)

    def revision(self, case: str, op: str, n: int) -> float | None:
        return self.per.get(("revisions", case, op, "oasr_tok", n))

    def array_ratio(self, case: str, op: str, impl: str, n: int) -> float | None:
        """A row over our list row of the same ids (an array row, the list-again control):
        paired when the run timed them in turn, else the ratio of the two rows' medians."""
        key = ("throughput", case, op, impl, n)
        if key in self.paired_ratio:
            return self.paired_ratio[key]
        a, lst = self.tput(case, op, impl, n), self.tput(case, op, "oasr_tok", n)
        return a / lst if a and lst else None

    def revision_ratio(self, case: str, n: int) -> float | None:
        """decode_hypothesis over decode_incremental(tail): paired when the run timed them in
        turn, else the ratio of the two rows' medians."""
        key = ("revisions", case, "decode_hypothesis", "oasr_tok", n)
        if key in self.paired_ratio:
            return self.paired_ratio[key]
        h, i = self.revision(case, "decode_hypothesis", n), self.revision(case, "decode_incremental(tail)", n)
        return h / i if h and i else None

    def paired(self, suite: str) -> bool:
        return any(key[0] == suite for key in self.paired_ratio)

    def cases(self, suite: str) -> list[str]:
        seen: dict[str, None] = {}
        for key in self.per:
            if key[0] == suite:
                seen.setdefault(key[1], None)
        return list(seen)


def environment(run: Run) -> list[str]:
    m = run.data.get("machine_info", {})
    env = m.get("oasr_bench", {})
    libs = env.get("libraries", {})
    lines = [
        "## Environment",
        "",
        f"- CPU: {env.get('cpu_model', m.get('cpu', {}).get('brand_raw', '?'))}, {env.get('cpus', '?')} logical CPUs "
        f"({env.get('affinity', '?')} usable by this process)",
        f"- Python {env.get('python', m.get('python_version', '?'))} ({env.get('implementation', '?')}), "
        f"{m.get('system', '')} {m.get('release', '')}",
        f"- oasr_tok {env.get('oasr_tok', '?')} from `{env.get('oasr_tok_path', '?')}`",
        "- " + ", ".join(f"{k} {v}" for k, v in libs.items()),
        f"- run started {run.data.get('datetime', '?')}; wall time of the whole benchmark command: "
        + (f"**{run.wall:.0f} s**" if run.wall is not None else "not measured (report run on its own)"),
    ]
    if env.get("slowdown", 1) != 1:
        lines.append(
            f"- **OASR_BENCH_SLOWDOWN={env['slowdown']}: every timed call did its work {env['slowdown']} times** "
            "(figures below are divided back by it)"
        )
    return lines + [""]


def targets(run: Run) -> list[str]:
    rows = []

    def add(area: str, what: str, measured: str, ok: bool | None) -> None:
        rows.append(f"| {area} | {what} | {measured} | {_check(ok)} |")

    st = "symbol_table/icefall-bpe500"
    ours, lc = (
        run.tput(st, "token_pieces", "oasr_tok", 1_000_000),
        run.tput(st, "token_pieces", "list comprehension", 1_000_000),
    )
    add(
        "token pieces",
        "token_pieces, 1,000,000 ids, vs list comprehension over the pre-rendered table (≥ 4× faster)",
        f"{lc / ours:.2f}× faster" if ours and lc else "—",
        None if not (ours and lc) else lc / ours >= 4,
    )
    a, b = run.stream(st, "oasr_tok", 100), run.stream(st, "oasr_tok", 100_000)
    add(
        "streaming",
        "symbol_table decode_incremental per token, 100,000 / 100 (≤ 1.2)",
        f"{b / a:.2f}" if a and b else "—",
        None if not (a and b) else b / a <= 1.2,
    )
    for case in BYTE_LEVEL_STREAMS:
        worst, have = 0.0, True
        for n in POSITIONS[:4]:
            o, p = run.stream(case, "oasr_tok", n), run.stream(case, "DecodeStream", n)
            if not (o and p):
                have = False
                break
            worst = max(worst, o / p)
        add(
            "streaming",
            f"{case}: decode_incremental / DecodeStream.step, worst of 100…50,000 (≤ 0.5×)",
            f"{worst:.2f}×" if have else "—",
            None if not have else worst <= 0.5,
        )
        a, b = run.stream(case, "oasr_tok", 100), run.stream(case, "oasr_tok", 10_000)
        add(
            "streaming",
            f"{case}: growth 10,000 / 100 (≤ 1.2)",
            f"{b / a:.2f}" if a and b else "—",
            None if not (a and b) else b / a <= 1.2,
        )
    for case in ("whisper/faster-whisper-base", "funasr_char/paraformer-zh"):
        a, b = run.stream(case, "oasr_tok", 100), run.stream(case, "oasr_tok", 10_000)
        add(
            "streaming",
            f"{case}: decode_incremental growth 10,000 / 100 (≤ 1.2)",
            f"{b / a:.2f}" if a and b else "—",
            None if not (a and b) else b / a <= 1.2,
        )
    for case in ("gguf/qwen2", "tekken/tekken_240911", "whisper/multilingual.tiktoken"):
        area = "streaming"
        a, b = run.stream(case, "oasr_tok", 100), run.stream(case, "oasr_tok", 100_000)
        add(
            area,
            f"{case}: decode_incremental growth 100,000 / 100 (≤ 1.2)",
            f"{b / a:.2f}" if a and b else "—",
            None if not (a and b) else b / a <= 1.2,
        )
        worst, have = 0.0, True
        for n in POSITIONS:
            r = run.stream_against_qwen3(case, n)
            if not r:
                have = False
                break
            worst = max(worst, r)
        how = "median of rounds timed in turn" if run.paired("stream") else "row medians"
        add(
            area,
            f"{case}: decode_incremental / the huggingface kind's on Qwen3, worst of 100…100,000 ({how}; ≤ 1.2×)",
            f"{worst:.2f}×" if have else "—",
            None if not have else worst <= 1.2,
        )
    for case in run.cases("throughput"):
        a, b = run.tput(case, "word_timings", "oasr_tok", 1_000), run.tput(case, "word_timings", "oasr_tok", 1_000_000)
        if a and b:
            add(
                "word timings",
                f"{case}: word_timings per token, 1,000,000 / 1,000 (≤ 1.2)",
                f"{b / a:.2f}",
                b / a <= 1.2,
            )
    a, b = (
        run.tput("(machine control)", "allocate records", "plain Python", 1_000),
        run.tput("(machine control)", "allocate records", "plain Python", 1_000_000),
    )
    if a and b:
        add(
            "control",
            "control, not a target: plain Python creating as many small records, per item 1,000,000 / 1,000 "
            "(how this machine's allocator alone scales)",
            f"{b / a:.2f}",
            None,
        )
    for case in run.cases("throughput"):
        for n in (100_000, 1_000):
            o, r = run.tput(case, "group_words", "oasr_tok", n), run.tput(case, "group_words", "words_reference", n)
            if o and r:
                add(
                    "word timings",
                    f"{case}: compiled word grouping vs words_reference.py at {n:,} tokens (≥ 10× faster)",
                    f"{r / o:.1f}× faster",
                    r / o >= 10,
                )
                break
    case = "whisper/faster-whisper-base"
    ratios = [
        (o / p)
        for n in POSITIONS
        if (o := run.stream(case, "oasr_tok", n)) and (p := run.stream(case, "DecodeStream", n))
    ]
    add(
        "streaming",
        f"{case}: decode_incremental / DecodeStream.step, worst of 100…100,000 (≤ 0.5×)",
        f"{max(ratios):.2f}×" if len(ratios) == len(POSITIONS) else "—",
        None if len(ratios) != len(POSITIONS) else max(ratios) <= 0.5,
    )
    for case in SP_DECODE:
        ratios = [
            (o / p)
            for n in SIZES
            if (o := run.tput(case, "decode", "oasr_tok", n))
            and (p := run.tput(case, "decode", "sentencepiece.decode", n))
        ]
        add(
            "decode",
            f"{case}: decode / sentencepiece.decode on the same ids, worst of 1,000…1,000,000 (≤ 1.0×)",
            f"{max(ratios):.2f}×" if len(ratios) == len(SIZES) else "—",
            None if len(ratios) != len(SIZES) else max(ratios) <= 1.0,
        )
    worst, where = 0.0, ""
    for case in run.cases("throughput"):
        for op in ARRAY_OPS:
            for impl in ARRAY_IMPLS:
                for n in SIZES:
                    r = run.array_ratio(case, op, impl, n)
                    if r and r > worst:
                        worst, where = r, f"{case} {op} {impl.removeprefix('oasr_tok')} n={n:,}"
    if where:
        how = "median of rounds timed in turn with the list's" if run.paired("throughput") else "row medians"
        add(
            "array inputs",
            "NumPy int64 / int32 ids (and float64 times) vs lists, decode / token_pieces / word_timings, "
            f"worst of every case and size ({how}; ≤ 1.0×)",
            f"{worst:.3f}× ({where})",  # (three places: a 1.003 that fails must not read 1.00)
            worst <= 1.0,
        )
    control = [
        (r, f"{case} {op} n={n:,}")
        for case in run.cases("throughput")
        for op in ARRAY_OPS
        for n in SIZES
        if (r := run.array_ratio(case, op, LIST_AGAIN, n))
    ]
    if control:
        low, high = min(control), max(control)
        add(
            "control",
            "control, not a target: the same ids in a second list, timed in turn with the list exactly as the "
            "array rows are (decode / token_pieces): the paired measurement's own spread around 1 in this run",
            f"{low[0]:.3f}× ({low[1]}) … {high[0]:.3f}× ({high[1]})",
            None,
        )
    for case in run.cases("revisions"):
        at = {n: run.revision(case, "decode_hypothesis", n) for n in REVISION_POSITIONS}
        first, last = at[REVISION_POSITIONS[0]], at[REVISION_POSITIONS[-1]]
        add(
            "revisions",
            f"{case}: decode_hypothesis per call, 100,000 / 100 committed tokens (≤ 1.2)",
            f"{last / first:.2f}" if first and last else "—",
            None if not (first and last) else last / first <= 1.2,
        )
        ratios = [run.revision_ratio(case, n) for n in REVISION_POSITIONS]
        worst = max(r for r in ratios if r) if all(ratios) else None
        how = "median of rounds timed in turn" if run.paired("revisions") else "row medians"
        add(
            "revisions",
            f"{case}: decode_hypothesis per call / one decode_incremental of the same tail, worst of 100…100,000 "
            f"({how}; ≤ 2×)",
            f"{worst:.2f}×" if worst else "—",
            None if not worst else worst <= 2,
        )
    for (suite, case, op, impl, _n), value in sorted(run.per.items()):
        if suite == "openai" and op == "event per delta" and impl == "oasr_tok":
            add(
                "OpenAI events",
                f"{case}: a transcript.text.delta event line per delta (≤ 1 µs)",
                f"{value * 1e9:.0f} ns",
                value <= 1e-6,
            )
    for case in run.cases("tiktoken"):
        # the tiktoken kind beside tiktoken on the same ids (benchmarks/test_tiktoken.py)
        pairs = [
            (o / t, f"{op} n={n:,}")
            for (suite, c, op, impl, n), o in run.per.items()
            if suite == "tiktoken" and c == case and impl == "oasr_tok"
            if (t := run.per.get((suite, c, op, "tiktoken", n)))
        ]
        worst = max(pairs) if pairs else None
        add(
            "tiktoken",
            f"{case}: decode, decode with specials, stream per token / tiktoken's on the same ids, worst (≤ 1.0×)",
            f"{worst[0]:.2f}× ({worst[1]})" if worst else "—",
            None if worst is None else worst[0] <= 1.0,
        )
    if run.wall is not None:
        add("suite", "whole suite wall time on this machine (< 600 s)", f"{run.wall:.0f} s", run.wall < 600)
    return ["## Targets", "", "| area | target | measured | |", "|---|---|---|---|", *rows, ""]


def streaming(run: Run) -> list[str]:
    cases = run.cases("stream")
    out = [
        "## decode_incremental: cost per token (µs) by transcript position",
        "",
        "Fed one id per call. `× X` is oasr_tok's cost over peer X's on the same ids (below 1: faster).",
        "",
    ]
    peers = [p for p in STREAM_PEERS if any(run.stream(c, p, n) for c in cases for n in POSITIONS)]
    head = "| tokenizer | position | oasr_tok | " + " | ".join(f"{p} | × {p}" for p in peers) + " |"
    out += [head, "|" + "---|" * (3 + 2 * len(peers))]
    for case in cases:
        for n in POSITIONS:
            ours = run.stream(case, "oasr_tok", n)
            cells = []
            for p in peers:
                theirs = run.stream(case, p, n)
                cells += [_us(theirs), _ratio(ours, theirs)]
            if ours is None and not any(run.stream(case, p, n) for p in peers):
                continue
            out.append(f"| {case} | {n:,} | {_us(ours)} | " + " | ".join(cells) + " |")
    out += [
        "",
        "### Growth of the per-token cost with transcript length",
        "",
        "| tokenizer | implementation | 100 | 1,000 | 10,000 | 50,000 | 100,000 | growth 10,000/100 | growth 100,000/100 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        for impl in ["oasr_tok", *peers]:
            vals = [run.stream(case, impl, n) for n in POSITIONS]
            if not any(vals):
                continue
            g1 = _ratio(vals[2], vals[0]).rstrip("×")
            g2 = _ratio(vals[4], vals[0]).rstrip("×")
            out.append(f"| {case} | {impl} | " + " | ".join(_us(v) for v in vals) + f" | {g1} | {g2} |")
    return out + [""]


def throughput(run: Run) -> list[str]:
    out = [
        "## Whole transcripts: decode, token_pieces, word timings",
        "",
        "Median time per call (ms) and per token (ns). For the peers, `ours/peer` below 1 means oasr_tok is faster.",
        "`group_words` is the compiled grouping alone over precomputed pieces; `word_timings` includes token_pieces.",
        "",
        "| tokenizer | operation | tokens | oasr_tok ms | ns/token | peer | peer ms | ours/peer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    peer_of = {
        "decode": ["tokenizers.decode", "sentencepiece.decode"],
        "token_pieces": ["list comprehension"],
        "group_words": ["words_reference"],
        "word_timings": [],
        "allocate records": [],
    }
    for case in run.cases("throughput"):
        for op in ("decode", "token_pieces", "word_timings", "group_words", "allocate records"):
            for n in SIZES:
                ours = run.tput(case, op, "oasr_tok" if case != "(machine control)" else "plain Python", n, whole=True)
                peers = [(p, run.tput(case, op, p, n, whole=True)) for p in peer_of[op]]
                peers = [(p, t) for p, t in peers if t is not None] or [("", None)]
                if ours is None and peers[0][1] is None:
                    continue
                for p, t in peers:
                    per_token = f"{ours / n * 1e9:.1f}" if ours is not None else "—"
                    out.append(
                        f"| {case} | {op} | {n:,} | {_ms(ours)} | {per_token} | {p or '—'} | {_ms(t)} | {_ratio(ours, t)} |"
                    )
    return out + [""]


def arrays(run: Run) -> list[str]:
    rows = []
    for case in run.cases("throughput"):
        for op in ARRAY_OPS:
            for n in SIZES:
                lst = run.tput(case, op, "oasr_tok", n)
                got = [run.tput(case, op, impl, n) for impl in ARRAY_IMPLS]
                if lst is None and not any(got):
                    continue
                cells = []
                for impl, t in zip(ARRAY_IMPLS, got):
                    r = run.array_ratio(case, op, impl, n) if t else None
                    cells += [f"{t * 1e9:.1f}" if t else "—", f"{r:.2f}×" if r else "—"]
                again = run.array_ratio(case, op, LIST_AGAIN, n) if run.tput(case, op, LIST_AGAIN, n) else None
                cells.append(f"{again:.2f}×" if again else "—")
                rows.append(
                    f"| {case} | {op} | {n:,} | {f'{lst * 1e9:.1f}' if lst else '—'} | " + " | ".join(cells) + " |"
                )
    if not rows:
        return []
    return [
        "## NumPy arrays beside lists",
        "",
        "ns per token; the same ids as a `list[int]`, a NumPy int64 and an int32 array (word_timings: start "
        "times as a list / a float64 array). `× list` below 1: the array is faster"
        + (
            "; it is the median of the per-round ratios, each array round timed right after one call on the "
            "list (the columns of ns are the rows' own medians, taken apart). `list again × list` is a control: "
            "the same ids in a second list, paired with the list the same way; where reading the ids is a "
            "sliver of the work (the tokenizers runtime's decode, FunASR's rules) it shows how far from 1 the "
            "paired measurement strays by itself."
            if run.paired("throughput")
            else "."
        ),
        "",
        "| tokenizer | operation | tokens | list | np.int64 | × list | np.int32 | × list | list again × list |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def draw_plots(run: Run, folder: Path) -> list[str]:
    """The PNGs, and the markdown that embeds them."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["_Plots not drawn: matplotlib is not installed (pip install matplotlib)._", ""]
    folder.mkdir(exist_ok=True)
    out = ["## Plots", ""]
    cases = run.cases("stream")
    if cases:
        cols = 3
        rows = -(-len(cases) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
        for ax, case in zip(axes.flat, cases):
            seen: list[float] = []
            for impl in ["oasr_tok", *STREAM_PEERS]:
                points = [(n, t * 1e6) for n in POSITIONS if (t := run.stream(case, impl, n))]
                if points:
                    xs, ys = zip(*points)
                    seen += ys
                    ax.plot(xs, ys, marker="o", linewidth=2.5 if impl == "oasr_tok" else 1.2, label=impl)
            ax.set_xscale("log")
            ax.set_yscale("log")
            if seen:  # at least two decades, so that noise on a flat line does not look like a slope
                ax.set_ylim(min(seen) / 3, max(max(seen) * 3, min(seen) * 30))
            ax.set_title(case, fontsize=10)
            ax.set_xlabel("transcript position (tokens)")
            ax.set_ylabel("µs per streamed token")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(cases) :]:
            ax.axis("off")
        fig.suptitle("decode_incremental: cost per token against transcript length (log-log; flat = constant cost)")
        fig.tight_layout()
        fig.savefig(folder / "streaming.png", dpi=90)
        plt.close(fig)
        out += ["![per-token streaming cost against transcript length](plots/streaming.png)", ""]
    cases = [c for c in run.cases("throughput") if c != "(machine control)"]
    if cases:
        n = SIZES[-1]
        bars = [
            ("decode", "oasr_tok"),
            ("decode", "oasr_tok[np.int64]"),
            ("decode", "tokenizers.decode"),
            ("decode", "sentencepiece.decode"),
            ("token_pieces", "oasr_tok"),
            ("token_pieces", "oasr_tok[np.int64]"),
            ("token_pieces", "list comprehension"),
            ("word_timings", "oasr_tok"),
            ("word_timings", "oasr_tok[np.int64]"),
        ]
        fig, ax = plt.subplots(figsize=(12, 0.55 * len(cases) * 4 + 1.5))
        labels, values, colours = [], [], []
        palette = {"decode": "tab:blue", "token_pieces": "tab:green", "word_timings": "tab:purple"}
        for case in cases:
            for op, impl in bars:
                t = run.tput(case, op, impl, n)
                if t:
                    labels.append(f"{case} · {op} · {impl}")
                    values.append(t * 1e9)
                    colours.append(palette[op] if impl.startswith("oasr_tok") else "tab:gray")
        ax.barh(range(len(values)), values, color=colours)
        ax.set_yticks(range(len(values)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel(f"ns per token at {n:,} tokens (log; shorter is faster; grey: peers)")
        ax.grid(True, axis="x", which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(folder / "throughput.png", dpi=90)
        plt.close(fig)
        out += ["![throughput per token at 1,000,000 tokens](plots/throughput.png)", ""]
    server_rows = {
        (k[1], k[2], k[3]): v for k, v in run.per.items() if k[0] == "server" and k[2].startswith("batch of ")
    }
    if server_rows:
        fig, ax = plt.subplots(figsize=(12, 0.35 * len(server_rows) + 1.5))
        ordered = sorted(server_rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1]))
        labels = [f"{case} · {op} · {impl}" for (case, op, impl), _ in ordered]
        values = [t * 1e6 for _, t in ordered]
        colours = ["tab:blue" if impl.startswith("oasr_tok") else "tab:gray" for (_, _, impl), _ in ordered]
        ax.barh(range(len(values)), values, color=colours)
        ax.set_yticks(range(len(values)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("µs per stream-token (log; shorter is faster; grey: peers)")
        ax.grid(True, axis="x", which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(folder / "server.png", dpi=90)
        plt.close(fig)
        out += ["![the server loop: cost per stream-token against the peers](plots/server.png)", ""]
    engine_rows = sorted(
        ((k[0], k[2], k[3], k[4]), v)
        for k, v in run.per.items()
        if (k[0] == "vllm" and "output step" in k[2]) or k[0] == "sglang"
    )
    if engine_rows:
        # issue 50: each engine's own step beside the step with oasr_tok (and vLLM's without a tokenizer)
        fig, ax = plt.subplots(figsize=(12, 0.35 * len(engine_rows) + 1.5))
        labels = [f"{suite} · {op} · {n:,} requests · {impl}" for (suite, op, impl, n), _ in engine_rows]
        values = [t * 1e6 for _, t in engine_rows]
        colours = [
            "tab:blue" if "oasr" in impl else "tab:olive" if impl == "no tokenizer" else "tab:gray"
            for (_, _, impl, _), _ in engine_rows
        ]
        ax.barh(range(len(values)), values, color=colours)
        ax.set_yticks(range(len(values)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(
            "µs per request-token (shorter is faster; grey: the engine's own; olive: vLLM without a tokenizer)"
        )
        ax.grid(True, axis="x", alpha=0.3)
        fig.tight_layout()
        fig.savefig(folder / "engines.png", dpi=90)
        plt.close(fig)
        out += ["![vLLM's output step and SGLang's detokenizer step, theirs and with oasr_tok](plots/engines.png)", ""]
    session_rows = [(k[3], k[4], v) for k, v in run.per.items() if k[0] == "session"]
    if session_rows:
        # issue 53: a re-decoding session's rollback per chunk against the session's length
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for impl in sorted({impl for impl, _, _ in session_rows}):
            points = sorted((n, t * 1e6) for i, n, t in session_rows if i == impl)
            xs, ys = zip(*points)
            ax.plot(xs, ys, marker="o", linewidth=2.5 if impl.startswith("oasr_tok") else 1.2, label=impl)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("session length (tokens)")
        ax.set_ylabel("µs per chunk")
        ax.set_title("rollback per chunk (log-log; flat = constant cost)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(folder / "sessions.png", dpi=90)
        plt.close(fig)
        out += ["![a re-decoding session's rollback per chunk against qwen-asr's](plots/sessions.png)", ""]
    return out


def measurements_behind_the_code(run: Run) -> list[str]:
    """benchmarks/measurements.md: the figures code comments point at (they explain a shape of
    the code; a comment says why, the figure lives here)."""
    path = Path(__file__).with_name("measurements.md")
    return [path.read_text(encoding="utf-8").rstrip("\n"), ""] if path.exists() else []


def memory(run: Run) -> list[str]:
    rows = [v for k, v in run.raw.items() if k[0] == "memory"]
    if not rows:
        return []
    out = [
        "## Memory of stream states (tracemalloc)",
        "",
        "10,000 concurrent streams fed 64 ids each, one id per call; and one stream fed 50,000 ids. "
        "`state − text` is what the state dict holds besides its text (the dict, its keys and values).",
        "",
        "| tokenizer | peak, 10,000 streams | per stream | of which text | feed time per token | state − text after 1,000 ids | after 50,000 ids | text after 50,000 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['case']} | {r['peak_bytes'] / 2**20:.1f} MiB | {r['peak_bytes'] / r['streams']:,.0f} B | "
            f"{r['text_bytes'] / 2**20:.1f} MiB | {r['median'] / (r['streams'] * r['tokens_per_stream']) * 1e9:.0f} ns | "
            f"{r['state_minus_text_1k']:,} B | {r['state_minus_text_50k']:,} B | {r['text_chars_50k']:,} chars |"
        )
    return out + [""]


def load(run: Run) -> list[str]:
    rows: dict[str, dict[str, float]] = defaultdict(dict)
    for k, v in run.raw.items():
        if k[0] == "load":
            rows[k[1]][k[3]] = v["median"]
    if not rows:
        return []
    out = [
        "## Load time from the files",
        "",
        "| tokenizer | oasr_tok ms | AutoTokenizer ms | ours/AutoTokenizer |",
        "|---|---|---|---|",
    ]
    for case, r in rows.items():
        out.append(
            f"| {case} | {_ms(r.get('oasr_tok'))} | {_ms(r.get('AutoTokenizer'))} | {_ratio(r.get('oasr_tok'), r.get('AutoTokenizer'))} |"
        )
    return out + [""]


def cold_load(run: Run) -> list[str]:
    """Cold load in a fresh process (benchmarks/test_cold_load.py): the load call alone, ours
    against the peer reading the same vocabulary; target (issue 33): time and RSS at most the peer's."""
    rows: dict[str, dict[str, dict]] = defaultdict(dict)
    for k, v in run.raw.items():
        if k[0] == "cold_load":
            rows[k[1]]["oasr_tok" if k[3] == "oasr_tok" else "peer"] = v
    if not rows:
        return []
    out = [
        "## Cold load: a fresh process, the load call alone",
        "",
        "Minimum over rounds of the load call's time (each round a fresh process, the library imported "
        "untimed), and the RSS it added (peak after minus RSS before). Target: ours ≤ the peer's, both.",
        "",
        "| tokenizer | file | peer | oasr_tok ms | peer ms | × peer | oasr_tok RSS MB | peer RSS MB | × peer | |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, sides in sorted(rows.items()):
        ours, peer = sides.get("oasr_tok"), sides.get("peer")
        if ours is None:
            continue
        t = ours["load_ms_min"] / peer["load_ms_min"] if peer else None
        m = ours["rss_added_mb"] / peer["rss_added_mb"] if peer and peer["rss_added_mb"] > 0 else None
        verdict = "—" if t is None or m is None else ("PASS" if t <= 1.0 and m <= 1.0 else "FAIL")
        out.append(
            f"| {case} | {ours['file']} | {peer['impl'] if peer else '—'} | {ours['load_ms_min']:.0f} | "
            f"{peer['load_ms_min']:.0f} | {t:.2f}× | {ours['rss_added_mb']:.0f} | {peer['rss_added_mb']:.0f} | "
            f"{m:.2f}× | {verdict} |"
            if peer
            else f"| {case} | {ours['file']} | — | {ours['load_ms_min']:.0f} | — | — | {ours['rss_added_mb']:.0f} | — | — | — |"
        )
    return out + [""]


def revisions(run: Run) -> list[str]:
    cases = run.cases("revisions")
    if not cases:
        return []
    out = [
        "## decode_hypothesis: cost per call by committed transcript length",
        "",
        "µs per call of a rewriting recogniser script (benchmarks/test_revisions.py), beside one "
        "decode_incremental call of the same uncommitted tail. `× tail`: the two rows' medians; `× tail, paired`: "
        "the median of the per-round ratios, each round of decode_hypothesis timed right after one round of "
        "decode_incremental of the same tails (what the target row checks).",
        "",
        "| tokenizer | committed tokens | decode_hypothesis | decode_incremental(tail) | × tail | × tail, paired |",
        "|---|---|---|---|---|---|",
    ]
    for case in cases:
        for n in REVISION_POSITIONS:
            h, i = run.revision(case, "decode_hypothesis", n), run.revision(case, "decode_incremental(tail)", n)
            if h is None and i is None:
                continue
            p = run.paired_ratio.get(("revisions", case, "decode_hypothesis", "oasr_tok", n))
            out.append(f"| {case} | {n:,} | {_us(h)} | {_us(i)} | {_ratio(h, i)} | {f'{p:.2f}×' if p else '—'} |")
    return out + [""]


def sessions(run: Run) -> list[str]:
    """Re-decoding sessions (benchmarks/test_session.py, issue 53): the rollback per chunk by
    session length beside qwen-asr's, its targets, and the memory a session holds."""
    rows = {(k[3], k[4]): v for k, v in run.per.items() if k[0] == "session"}
    if not rows:
        return []
    impls = ["oasr_tok rollback", "oasr_tok rollback + prefix", "qwen-asr prefix", "qwen-asr streaming_transcribe"]
    sizes = sorted({n for _, n in rows})
    out = [
        "## Re-decoding sessions: µs per chunk by session length",
        "",
        "Qwen3 with Qwen3-ASR's header, multi-script passages; a chunk is rollback(5) and 13 ids fed "
        "(benchmarks/test_session.py). `rollback + prefix` also makes the prefix as a str; `qwen-asr prefix` is "
        "qwen-asr 0.0.6's rollback lines over the transformers tokenizer, `qwen-asr streaming_transcribe` its "
        "whole chunk step (which parses its whole text too).",
        "",
        "| implementation | " + " | ".join(f"{n:,}" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for impl in impls:
        if any((impl, n) in rows for n in sizes):
            out.append(f"| {impl} | " + " | ".join(_us(rows.get((impl, n))) for n in sizes) + " |")
    out += ["", "| target | measured | |", "|---|---|---|"]
    first, last = rows.get(("oasr_tok rollback", 100)), rows.get(("oasr_tok rollback", 100_000))
    if first and last:
        out.append(
            f"| rollback per chunk, 100,000 / 100 session tokens ≤ 1.3 | {last / first:.2f} | "
            f"{_check(last / first <= 1.3)} |"
        )
    ours, theirs = rows.get(("oasr_tok rollback + prefix", 10_000)), rows.get(("qwen-asr prefix", 10_000))
    if ours and theirs:
        out.append(
            f"| rollback + prefix at 10,000 tokens ≥ 50× faster than qwen-asr's prefix lines | "
            f"{theirs / ours:.0f}× | {_check(theirs / ours >= 50)} |"
        )
    memory = [v for k, v in run.raw.items() if k[0] == "session memory"]
    for m in memory:
        out += [
            "",
            f"Memory (tracemalloc): {m['sessions']:,} sessions of 1,000 tokens hold "
            f"{m['bytes_per_session']:,.0f} B each (their text: {m['text_chars']:,} characters, "
            f"{m['text_bytes_utf8']:,} B in UTF-8); an empty session {m['empty_bytes_per_session']:,.0f} B.",
        ]
    return out + [""]


def other_suites(run: Run) -> list[str]:
    """The smaller suites (ASR streams, the prompt side, CTC collapse): one row per benchmark."""
    titles = {
        "asr_stream": "ASR-format streams: µs per token by position",
        "prompt": "The prompt side: µs per call (stream rows: per token)",
        "ctc": "collapse_ctc: ns per frame",
        "server": "The server loop: µs per stream-token (batch, stop rows), per call (prefill)",
        "threads": "Threads: µs per decode, one thread alone or two at once (0.5x the one-thread row: perfect scaling)",
        "openai": "OpenAI transcription events: ns per delta event (feed rows: per token, stream step included)",
        "tiktoken": "The tiktoken kind beside tiktoken on Meta's files: µs per decode (stream rows: per token)",
    }
    out: list[str] = []
    for suite, title in titles.items():
        rows = sorted((k for k in run.per if k[0] == suite), key=lambda k: (k[1], k[2], k[3], k[4]))
        if not rows:
            continue
        unit, scale = ("ns", 1e9) if suite in ("ctc", "openai") else ("µs", 1e6)
        out += [f"## {title}", "", f"| case | operation | implementation | n | {unit} |", "|---|---|---|---|---|"]
        for key in rows:
            out.append(f"| {key[1]} | {key[2]} | {key[3]} | {key[4]:,} | {run.per[key] * scale:.3g} |")
        out.append("")
    return out


def server(run: Run) -> list[str]:
    """The server loop's targets (issues 33 and 43), from the rows of benchmarks/test_server.py."""
    rows = {(k[1], k[2], k[3], k[4]): v for k, v in run.per.items() if k[0] == "server"}
    keys = {(k[1], k[2], k[3], k[4]): k for k in run.per if k[0] == "server"}
    if not rows:
        return []
    out = ["## The server loop: targets", "", "| target | measured | |", "|---|---|---|"]

    def check(name: str, value: float | None, limit: float, unit: str = "×", at_least: bool = False) -> None:
        if value is None:
            return
        shown = f"{value * 1e6:.3f} µs" if unit == "µs" else f"{value:.2f}×"
        measured = value * 1e6 if unit == "µs" else value
        ok = measured >= limit if at_least else measured <= limit
        sign = "≥" if at_least else "≤"
        out.append(f"| {name} {sign} {limit}{' µs' if unit == 'µs' else '×'} | {shown} | {'PASS' if ok else 'FAIL'} |")

    for (case, op, impl, n), value in sorted(rows.items()):
        if impl != "oasr_tok batch of Streams":
            continue
        check(f"{case}, {op} new_stream(prefill=48, stop=2): per stream-token", value, 0.1, "µs")
        loop = rows.get((case, op, "oasr_tok loop of Streams", n))
        paired = run.paired_ratio.get(keys[(case, op, impl, n)])
        # issue 43's targets as restated at the fifth round: the batch ≤ 0.35× the loop of dict
        # states and ≤ 0.7× the loop of stream.feed (what is left per stream is work every API needs)
        check(f"{case}, {op}: × our own loop (stream.feed, paired)", paired, 0.7)
        if paired is None:
            check(f"{case}, {op}: × our own loop (stream.feed)", value / loop if loop else None, 0.7)
        dicts = rows.get((case, op, "oasr_tok loop of dicts", n))
        check(f"{case}, {op}: × the loop of dict states", value / dicts if dicts else None, 0.35)
        peer = rows.get((case, op, "DecodeStream", n))
        check(f"{case}, {op}: × DecodeStream", value / peer if peer else None, 0.15)
    for (case, op, impl, n), value in sorted(rows.items()):
        if impl == "threads" and op.startswith("2 thread"):
            one = rows.get((case, op.replace("2 thread(s)", "1 thread(s)"), impl, n))
            # a GIL build: two threads lose nothing (≥ 0.9×); ≥ 1.5× waits for a free-threaded CPython
            check(
                f"{case}: two threads' throughput × one thread's (GIL build)",
                one / value if one else None,
                0.9,
                at_least=True,
            )
        if impl == "oasr_tok with 4 stop strings":
            plain = rows.get((case, op, "oasr_tok", n))
            check(f"{case}: 4 stop strings × none", value / plain if plain else None, 1.2)
        if op == "new_stream(prefill)" and n == 100_000:
            short = rows.get((case, op, impl, 100))
            check(f"{case}: prefill of 100,000 × 100 tokens", value / short if short else None, 1.2)
    return out + [""]


def stitching(run: Run) -> list[str]:
    """Issue 54's targets, from the rows of benchmarks/test_stitching.py: a one-hour transcript
    (30 s chunks, 5 s strides) stitched at least 10x faster than transformers' own functions, and
    a flat cost per chunk (chunk 100 / chunk 10 <= 1.2)."""
    rows = {(k[1], k[3], k[4]): v for k, v in run.raw.items() if k[0] == "stitching"}
    if not rows:
        return []
    out = ["## Stitching chunks: targets", "", "| target | measured | |", "|---|---|---|"]
    methods = sorted({case.split("/", 1)[1] for case, _, _ in rows})
    for method in methods:
        ours = next(
            (v["median"] for (c, i, _), v in rows.items() if c == f"one hour/{method}" and i == "oasr_tok"), None
        )
        peer = next(
            (v["median"] for (c, i, _), v in rows.items() if c == f"one hour/{method}" and i != "oasr_tok"), None
        )
        if ours and peer:
            ratio = peer / ours
            out.append(
                f"| one hour, {method}: transformers' stitch / ours ≥ 10× ({_ms(ours)} ms against {_ms(peer)} ms) "
                f"| {ratio:.1f}× | {_check(ratio >= 10)} |"
            )
        at = {n: v["median"] / v["per"] for (c, _, n), v in rows.items() if c == f"chunk k/{method}"}
        if 10 in at and 100 in at:
            growth = at[100] / at[10]
            out.append(
                f"| {method}: one chunk's add at chunk 100 / at chunk 10 ≤ 1.2 ({_us(at[100])} µs against "
                f"{_us(at[10])} µs) | {growth:.2f} | {_check(growth <= 1.2)} |"
            )
    return out + [""]


def sglang(run: Run) -> list[str]:
    """SGLang's detokenizer step with its own decode and with oasr_tok's (benchmarks/test_sglang.py,
    paired round by round); target (issue 50): SGLang's step at least 20× ours."""
    rows = {(k[2], k[3], k[4]): v for k, v in run.per.items() if k[0] == "sglang"}
    keys = {(k[2], k[3], k[4]): k for k in run.per if k[0] == "sglang"}
    if not rows:
        return []
    out = [
        "## SGLang's detokenizer step: target",
        "",
        "Continuous batching on Qwen3, every request living 64 batches (benchmarks/test_sglang.py); per "
        "request-step, SGLang 0.5.23's `handle_batch_token_id_out` with its own decode and with oasr_tok's.",
        "",
        "| requests | ids per step | SGLang 0.5.23 µs | with oasr_tok µs | SGLang ÷ ours (paired) | ≥ 20× |",
        "|---|---|---|---|---|---|",
    ]
    for op, impl, n in sorted(rows, key=lambda k: (k[2], k[0])):
        if impl != "oasr_tok in SGLang 0.5.23":
            continue
        ours, theirs = rows[(op, impl, n)], rows.get((op, "SGLang 0.5.23", n))
        paired = run.paired_ratio.get(keys[(op, impl, n)])
        ratio = 1 / paired if paired else (theirs / ours if theirs else None)
        shown = "—" if ratio is None else f"{ratio:.1f}×"
        out.append(
            f"| {n:,} | {op.split()[0]} | {_us(theirs)} | {_us(ours)} | {shown} | "
            f"{_check(None if ratio is None else ratio >= 20)} |"
        )
    return out + [""]


def travel(run: Run) -> list[str]:
    """Streams that travel (issue 53), from the rows of benchmarks/test_travel.py."""
    rows = {(k[2], k[3]): (v, run.raw[k]) for k, v in run.per.items() if k[0] == "travel"}
    if not rows:
        return []
    out = ["## Streams that travel: targets", "", "| target | measured | |", "|---|---|---|"]

    def check(name: str, shown: str, ok: bool | None) -> None:
        out.append(f"| {name} | {shown} | {'' if ok is None else 'PASS' if ok else 'FAIL'} |")

    one = "dump + load one stream"
    for how in ("by reference", "by reference, state only"):
        if (one, how) in rows:
            seconds, raw = rows[(one, how)]
            text = raw["text_bytes"] if how == "by reference" else 0
            check(
                f"Qwen3 stream mid-generation, {how}: message ≤ 1 KB{' + its text' if text else ''}",
                f"{raw['bytes']:,} B" + (f" ({raw['bytes'] - text:,} B + {text:,} B of text)" if text else ""),
                raw["bytes"] - text <= 1024,
            )
            check(f"Qwen3 stream, {how}: dump + load ≤ 50 µs", f"{seconds * 1e6:.1f} µs", seconds <= 50e-6)
    for how in ("by value", "by spec"):
        if (one, how) in rows and (one, "by reference") in rows:
            seconds, raw = rows[(one, how)]
            ref = rows[(one, "by reference")][0]
            check(
                f"Qwen3 stream {how} (no target; side by side): message, dump + load, × by reference",
                f"{raw['bytes']:,} B, {seconds * 1e6:.1f} µs, {seconds / ref:.0f}×",
                None,
            )
    for how in ("by reference", "by reference, state only"):
        key = ("dump + load 1,000 streams", how)
        if key in rows:
            seconds, raw = rows[key]
            check(
                f"1,000 streams, {how}: dump + load ≤ 50 ms",
                f"{seconds * 1e3:.1f} ms ({raw['bytes']:,} B)",
                seconds <= 50e-3,
            )
    cold = rows.get(("tokenizer: fresh process", "cold load of the files"))
    value = rows.get(("tokenizer: fresh process", "by value"))
    if cold and value:
        a, b = value[1]["load_s_min"], cold[1]["load_s_min"]
        check(
            "Qwen3's tokenizer unpickled by value ≤ a cold load of its files (min of rounds, fresh processes)",
            f"{a * 1e3:.0f} ms vs {b * 1e3:.0f} ms ({a / b:.2f}×)",
            a <= b,
        )
        a, b = value[1].get("cpu_s_median"), cold[1].get("cpu_s_median")
        if a and b:
            check(
                "the same, CPU time (user + system, both threads; no target)",
                f"{a * 1e3:.0f} ms vs {b * 1e3:.0f} ms ({a / b:.2f}×)",
                None,
            )
        paired, paired_cpu = (
            value[1].get("paired_value_over_cold_median"),
            value[1].get("paired_value_over_cold_cpu_median"),
        )
        if paired and paired_cpu:
            check(
                "the same, round by round (median of the by-value row's paired ratios; no target)",
                f"wall {paired:.2f}×, CPU {paired_cpu:.2f}×",
                None,
            )
    return out + [""]


def vllm(run: Run) -> list[str]:
    """oasr_tok in vLLM's output step (issue 50), from the rows of benchmarks/test_vllm.py: every
    row is paired round by round with a reference, so the targets are ratios of paired ratios."""
    keys = [k for k in run.per if k[0] == "vllm"]
    if not keys:
        return []
    out = ["## vLLM's output step: targets", "", "| target | measured | |", "|---|---|---|"]

    def row(name: str, value: float | None, limit: float) -> None:
        if value is not None:
            out.append(f"| {name} ≤ {limit}× | {value:.3f}× | {'PASS' if value <= limit else 'FAIL'} |")

    for case, op, impl, n in sorted({k[1:] for k in keys}):
        if impl != "mode oasr" or not op.startswith("output step"):
            continue
        ours = run.paired_ratio.get(("vllm", case, op, "mode oasr", n))
        theirs = run.paired_ratio.get(("vllm", case, op, "mode hf", n))
        if ours is None or theirs is None:
            continue
        # each a step over the same step with no tokenizer (vLLM's skip_tokenizer_init)
        row(f"{case}, {n} requests, {op}: the step, mode oasr × mode hf", ours / theirs, 0.65)
        if theirs > 1:
            row(f"{case}, {n} requests, {op}: the detokenizer's share, oasr × hf", (ours - 1) / (theirs - 1), 0.1)
    for case, op, impl, n in sorted({k[1:] for k in keys}):
        if op.startswith("logprob strings") and impl.startswith("oasr_tok"):
            row(f"{case}, {op}: one call a step × vLLM one id at a time (paired)",
                run.paired_ratio.get(("vllm", case, op, impl, n)), 0.05)  # fmt: skip
    return out + [""]


def not_run(run: Run) -> list[str]:
    if not run.skips:
        return []
    reasons: dict[str, list[str]] = defaultdict(list)
    for s in run.skips:
        reasons[s["reason"]].append(s["test"].split("[", 1)[-1].rstrip("]"))
    out = ["## Not run", ""]
    for reason, tests in reasons.items():
        shown = ", ".join(f"`{t}`" for t in tests[:4]) + (f" and {len(tests) - 4} more" if len(tests) > 4 else "")
        out.append(f"- {reason} — {len(tests)} benchmark(s): {shown}")
    return out + [""]


def render(run: Run, plots: Path | None = None) -> str:
    parts = [
        "# oasr_tok benchmark results",
        "",
        "Generated by `benchmarks/report.py` from one run of `benchmarks/run.py` (`make bench` or `tox -e bench`; "
        "see [README.md](README.md) for the method). "
        "Medians; per-token figures are a round's median divided by the tokens it fed.",
        "",
    ]
    for section in (
        environment,
        targets,
        streaming,
        throughput,
        arrays,
        revisions,
        sessions,
        server,
        stitching,
        sglang,
        travel,
        vllm,
        other_suites,
        memory,
        load,
        cold_load,
        not_run,
        measurements_behind_the_code,
    ):
        parts += section(run)
    if plots is not None:
        parts += draw_plots(run, plots)
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="?", default=str(HERE / "results" / "latest.json"))
    parser.add_argument("--skips", default=str(HERE / "results" / "skips.json"))
    parser.add_argument("--wall", type=float, default=None, help="wall time of the benchmark command, seconds")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    data = json.loads(Path(args.json).read_text())
    skips = json.loads(Path(args.skips).read_text()) if Path(args.skips).exists() else []
    plots = Path(args.out).resolve().parent / "plots" if args.out != "-" else None
    text = render(Run(data, skips, args.wall), plots)
    if args.out != "-":
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
