"""Turn a pytest-benchmark JSON run into benchmarks/RESULTS.md (and print it).

    python benchmarks/report.py [results/latest.json] [--out benchmarks/RESULTS.md]

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
STREAM_PEERS = ["DecodeStream", "vLLM window", "re-decode prefix", "sentencepiece partial"]
ISSUE3 = ["sentencepiece/mistral-v1", "huggingface/qwen3", "huggingface/mistral-7b", "huggingface/moonshine"]


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
        for bench in data.get("benchmarks", []):
            info = bench.get("extra_info", {})
            if "suite" not in info:
                continue
            # A slowed-down run (OASR_BENCH_SLOWDOWN) did the work k times per round.
            median = bench["stats"]["median"] / info.get("slowdown", 1)
            key = (info["suite"], info["case"], info.get("op", "decode_incremental"), info["impl"], info["n"])
            self.per[key] = median / info["per"]
            self.raw[key] = {"median": median, **info}

    def stream(self, case: str, impl: str, n: int) -> float | None:
        return self.per.get(("stream", case, "decode_incremental", impl, n))

    def tput(self, case: str, op: str, impl: str, n: int, whole: bool = False) -> float | None:
        key = ("throughput", case, op, impl, n)
        if whole:
            return self.raw[key]["median"] if key in self.raw else None
        return self.per.get(key)

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
        lines.append(f"- **OASR_BENCH_SLOWDOWN={env['slowdown']}: every timed call did its work {env['slowdown']} times** "
                     "(figures below are divided back by it)")
    return lines + [""]


def targets(run: Run) -> list[str]:
    rows = []

    def add(issue: str, what: str, measured: str, ok: bool | None) -> None:
        rows.append(f"| {issue} | {what} | {measured} | {_check(ok)} |")

    st = "symbol_table/icefall-bpe500"
    ours, lc = run.tput(st, "token_pieces", "oasr_tok", 1_000_000), run.tput(st, "token_pieces", "list comprehension", 1_000_000)
    add("2", "token_pieces, 1,000,000 ids, vs list comprehension over the pre-rendered table (≥ 4× faster)",
        f"{lc / ours:.2f}× faster" if ours and lc else "—", None if not (ours and lc) else lc / ours >= 4)
    a, b = run.stream(st, "oasr_tok", 100), run.stream(st, "oasr_tok", 100_000)
    add("2", "symbol_table decode_incremental per token, 100,000 / 100 (≤ 1.2)",
        f"{b / a:.2f}" if a and b else "—", None if not (a and b) else b / a <= 1.2)
    for case in ISSUE3:
        worst, have = 0.0, True
        for n in POSITIONS[:4]:
            o, p = run.stream(case, "oasr_tok", n), run.stream(case, "DecodeStream", n)
            if not (o and p):
                have = False
                break
            worst = max(worst, o / p)
        add("3", f"{case}: decode_incremental / DecodeStream.step, worst of 100…50,000 (≤ 0.5×)",
            f"{worst:.2f}×" if have else "—", None if not have else worst <= 0.5)
        a, b = run.stream(case, "oasr_tok", 100), run.stream(case, "oasr_tok", 10_000)
        add("3", f"{case}: growth 10,000 / 100 (≤ 1.2)", f"{b / a:.2f}" if a and b else "—",
            None if not (a and b) else b / a <= 1.2)
    for case in ("whisper/faster-whisper-base", "funasr_char/paraformer-zh"):
        a, b = run.stream(case, "oasr_tok", 100), run.stream(case, "oasr_tok", 10_000)
        add("4", f"{case}: decode_incremental growth 10,000 / 100 (≤ 1.2)", f"{b / a:.2f}" if a and b else "—",
            None if not (a and b) else b / a <= 1.2)
    for case in ("tekken/tekken_240911", "whisper/multilingual.tiktoken"):
        issue = "17" if case.startswith("tekken") else "19"
        a, b = run.stream(case, "oasr_tok", 100), run.stream(case, "oasr_tok", 100_000)
        add(issue, f"{case}: decode_incremental growth 100,000 / 100 (≤ 1.2)", f"{b / a:.2f}" if a and b else "—",
            None if not (a and b) else b / a <= 1.2)
        worst, have = 0.0, True
        for n in POSITIONS:
            o, q = run.stream(case, "oasr_tok", n), run.stream("huggingface/qwen3", "oasr_tok", n)
            if not (o and q):
                have = False
                break
            worst = max(worst, o / q)
        add(issue, f"{case}: decode_incremental / the huggingface kind's on Qwen3, worst of 100…100,000 (≤ 1.2×)",
            f"{worst:.2f}×" if have else "—", None if not have else worst <= 1.2)
    for case in run.cases("throughput"):
        a, b = run.tput(case, "word_timings", "oasr_tok", 1_000), run.tput(case, "word_timings", "oasr_tok", 1_000_000)
        if a and b:
            add("5", f"{case}: word_timings per token, 1,000,000 / 1,000 (≤ 1.2)", f"{b / a:.2f}", b / a <= 1.2)
    a, b = run.tput("(machine control)", "allocate records", "plain Python", 1_000), \
        run.tput("(machine control)", "allocate records", "plain Python", 1_000_000)
    if a and b:
        add("5", "control, not a target: plain Python creating as many small records, per item 1,000,000 / 1,000 "
            "(how this machine's allocator alone scales)", f"{b / a:.2f}", None)
    for case in run.cases("throughput"):
        for n in (100_000, 1_000):
            o, r = run.tput(case, "group_words", "oasr_tok", n), run.tput(case, "group_words", "words_reference", n)
            if o and r:
                add("5", f"{case}: compiled word grouping vs words_reference.py at {n:,} tokens (≥ 10× faster)",
                    f"{r / o:.1f}× faster", r / o >= 10)
                break
    if run.wall is not None:
        add("6", "whole suite wall time on this machine (< 600 s)", f"{run.wall:.0f} s", run.wall < 600)
    return ["## Targets", "", "| issue | target | measured | |", "|---|---|---|---|", *rows, ""]


def streaming(run: Run) -> list[str]:
    cases = run.cases("stream")
    out = ["## decode_incremental: cost per token (µs) by transcript position",
           "",
           "Fed one id per call. `× X` is oasr_tok's cost over peer X's on the same ids (below 1: faster).",
           ""]
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
    out += ["", "### Growth of the per-token cost with transcript length", "",
            "| tokenizer | implementation | 100 | 1,000 | 10,000 | 50,000 | 100,000 | growth 10,000/100 | growth 100,000/100 |",
            "|---|---|---|---|---|---|---|---|---|"]
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
    out = ["## Whole transcripts: decode, token_pieces, word timings",
           "",
           "Median time per call (ms) and per token (ns). For the peers, `ours/peer` below 1 means oasr_tok is faster.",
           "`group_words` is the compiled grouping alone over precomputed pieces; `word_timings` includes token_pieces.",
           "",
           "| tokenizer | operation | tokens | oasr_tok ms | ns/token | peer | peer ms | ours/peer |",
           "|---|---|---|---|---|---|---|---|"]
    peer_of = {"decode": ["tokenizers.decode", "sentencepiece.decode"], "token_pieces": ["list comprehension"],
               "group_words": ["words_reference"], "word_timings": [], "allocate records": []}
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
                    out.append(f"| {case} | {op} | {n:,} | {_ms(ours)} | {per_token} | {p or '—'} | {_ms(t)} | {_ratio(ours, t)} |")
    return out + [""]


def memory(run: Run) -> list[str]:
    rows = [v for k, v in run.raw.items() if k[0] == "memory"]
    if not rows:
        return []
    out = ["## Memory of stream states (tracemalloc)", "",
           "10,000 concurrent streams fed 64 ids each, one id per call; and one stream fed 50,000 ids. "
           "`state − text` is what the state dict holds besides its text (the dict, its keys and values).",
           "",
           "| tokenizer | peak, 10,000 streams | per stream | of which text | feed time per token | state − text after 1,000 ids | after 50,000 ids | text after 50,000 |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(
            f"| {r['case']} | {r['peak_bytes'] / 2**20:.1f} MiB | {r['peak_bytes'] / r['streams']:,.0f} B | "
            f"{r['text_bytes'] / 2**20:.1f} MiB | {r['median'] / (r['streams'] * r['tokens_per_stream']) * 1e9:.0f} ns | "
            f"{r['state_minus_text_1k']:,} B | {r['state_minus_text_50k']:,} B | {r['text_chars_50k']:,} chars |")
    return out + [""]


def load(run: Run) -> list[str]:
    rows: dict[str, dict[str, float]] = defaultdict(dict)
    for k, v in run.raw.items():
        if k[0] == "load":
            rows[k[1]][k[3]] = v["median"]
    if not rows:
        return []
    out = ["## Load time from the files", "", "| tokenizer | oasr_tok ms | AutoTokenizer ms | ours/AutoTokenizer |", "|---|---|---|---|"]
    for case, r in rows.items():
        out.append(f"| {case} | {_ms(r.get('oasr_tok'))} | {_ms(r.get('AutoTokenizer'))} | {_ratio(r.get('oasr_tok'), r.get('AutoTokenizer'))} |")
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


def render(run: Run) -> str:
    parts = ["# oasr_tok benchmark results", "",
             "Generated by `benchmarks/report.py` from one run of `benchmarks/run.py` (`make bench` or `tox -e bench`; "
             "see [README.md](README.md) for the method). "
             "Medians; per-token figures are a round's median divided by the tokens it fed.", ""]
    for section in (environment, targets, streaming, throughput, memory, load, not_run):
        parts += section(run)
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
    text = render(Run(data, skips, args.wall))
    if args.out != "-":
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
