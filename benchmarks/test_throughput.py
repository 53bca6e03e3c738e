"""Whole-transcript throughput at 1,000 / 100,000 / 1,000,000 tokens: decode, token_pieces,
word_timings (on lists, and on NumPy int64 / int32 arrays), and the compiled word grouping
alone, against the peers on the same ids:
`tokenizers` decode, SentencePiece decode, a list comprehension over the pre-rendered
symbol table, and the plain Python word grouping in tests/words_reference.py.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import pytest
from bench_cases import (
    BY_LABEL,
    STREAM_CASES,
    Unavailable,
    hf_runtime,
    hypothesis,
    period,
    shared,
    sp_runtime,
    tokenizer,
)
from conftest import MIN_ROUNDS, probe_seconds, timed

SIZES = [1_000, 100_000, 1_000_000]
#: A single call projected beyond this is not run (a superlinear path would eat the budget);
#: the report shows the skip and its reason.
MAX_CALL_SECONDS = 20.0

# The test oracle of the word rules (plain Python), measured against the compiled grouping.
WORDS_REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "words_reference.py"


#: NumPy inputs beside lists (ids, and for word_timings the start times too), as recognisers
#: hand them over; converted outside the timing. The report compares each with the list row.
ARRAY_INPUTS = {"oasr_tok[np.int64]": "int64", "oasr_tok[np.int32]": "int32"}
PAIRED_MIN_ROUNDS = 11
#: A control, not a target: the same ids in a second list, paired with the list call exactly as an
#: array row is. Where reading the ids is a sliver of the work (the tokenizers runtime's decode,
#: FunASR's rules) an array row's true ratio is within a percent of 1; this row shows how far
#: the paired measurement itself strays from 1 in the same run, on the same cells.
LIST_AGAIN = "oasr_tok[list again]"
LIST_AGAIN_OPS = ("decode", "token_pieces")


def _ops(case) -> list[tuple[str, str]]:
    ops = [
        ("decode", "oasr_tok"),
        ("token_pieces", "oasr_tok"),
        ("word_timings", "oasr_tok"),
        ("group_words", "oasr_tok"),
    ]
    ops += [(op, impl) for impl in ARRAY_INPUTS for op in ("decode", "token_pieces", "word_timings")]
    ops += [(op, LIST_AGAIN) for op in LIST_AGAIN_OPS]
    if case.hf_peer:
        ops.append(("decode", "tokenizers.decode"))
    if case.sp_peer:
        ops.append(("decode", "sentencepiece.decode"))
    if case.kind == "symbol_table":
        ops.append(("token_pieces", "list comprehension"))
    if case.label in REFERENCE_CASES:
        ops.append(("group_words", "words_reference"))
    return ops


#: The plain Python grouping takes ~10 µs a token: it runs on an English and a multi-script
#: transcript, up to 100,000 tokens (the per-token figure is what is compared).
REFERENCE_CASES = ("symbol_table/icefall-bpe500", "huggingface/qwen3")
REFERENCE_SIZES = [1_000, 100_000]

PARAMS = [
    pytest.param(
        case.label,
        op,
        impl,
        n,
        id=f"{case.label}|{op}|{impl}|{n}",
        marks=[pytest.mark.peer] if impl != "oasr_tok" else [],
    )
    for case in STREAM_CASES
    for op, impl in _ops(case)
    for n in (REFERENCE_SIZES if impl == "words_reference" else SIZES)
]


@cache
def _rendered_table(units_path: str) -> list[str]:
    """The symbol table pre-rendered the obvious way (`▁` -> space), read independently of
    oasr_tok: the list comprehension token_pieces is compared with."""
    table: dict[int, str] = {}
    for line in Path(units_path).read_text(encoding="utf-8").splitlines():
        fields = line.rsplit(None, 1)
        if len(fields) == 1:
            table[int(fields[0])] = " "
        elif fields:
            table[int(fields[1])] = fields[0].replace("\u2581", " ")
    return [table[i] for i in range(len(table))]


@cache
def _starts(n: int) -> list[float]:
    return [0.04 * k for k in range(n)]  # 40 ms frames, as a CTC recogniser reports them


def _reference_grouping():
    if not WORDS_REFERENCE.exists():
        raise Unavailable("tests/words_reference.py is missing")
    import sys

    sys.path.insert(0, str(WORDS_REFERENCE.parent))
    import words_reference

    fn = getattr(words_reference, "group_words", None)
    if fn is None:
        raise Unavailable("words_reference.py defines no group_words(pieces, starts, ends=None)")
    return fn


def _compiled_grouping():
    try:
        from oasr_tok._engine.words import group_words
    except ModuleNotFoundError:
        raise Unavailable("oasr_tok._engine.words (compiled word grouping) has not landed yet") from None
    return group_words


def _call(label: str, op: str, impl: str):
    """A function of n that returns the zero-argument call to time on n ids."""
    case = BY_LABEL[label]
    if impl == "tokenizers.decode":
        runtime = hf_runtime(case.hf_peer)
        return lambda ids: lambda: runtime.decode(ids, skip_special_tokens=True)
    if impl == "sentencepiece.decode":
        processor = sp_runtime(case.sp_peer)
        return lambda ids: lambda: processor.decode(ids)
    if impl == "list comprehension":
        table = _rendered_table(shared(case.files["units"]))
        return lambda ids: lambda: [table[i] for i in ids]
    if op == "group_words":
        group = _reference_grouping() if impl == "words_reference" else _compiled_grouping()
        tok = tokenizer(label)

        def call(ids):
            pieces, starts = tok.token_pieces(ids), _starts(len(ids))
            return lambda: group(pieces, starts)

        return call
    if impl == LIST_AGAIN:
        return _call(label, op, "oasr_tok")
    tok = tokenizer(label)
    if impl in ARRAY_INPUTS:
        import numpy as np

        dtype = ARRAY_INPUTS[impl]
        if op == "word_timings":
            _compiled_grouping()

            def timings(ids):
                array, starts = np.array(ids, dtype=dtype), np.array(_starts(len(ids)))
                return lambda: tok.word_timings(array, starts)

            return timings
        method = getattr(tok, op)

        def on_array(ids):
            array = np.array(ids, dtype=dtype)
            return lambda: method(array)

        return on_array
    if op == "decode":
        return lambda ids: lambda: tok.decode(ids)
    if op == "token_pieces":
        return lambda ids: lambda: tok.token_pieces(ids)
    if op == "word_timings":
        _compiled_grouping()
        return lambda ids: lambda: tok.word_timings(ids, _starts(len(ids)))
    raise AssertionError(op)


_projection: dict[tuple[str, str, str, int], str] = {}


def _too_slow(label: str, op: str, impl: str, n: int, call) -> str | None:
    """Time n/100 and n/10 ids once; a call projected beyond MAX_CALL_SECONDS at n is not
    run. Returns the reason, or None to go ahead."""
    key = (label, op, impl, n)
    if key not in _projection:
        t1 = probe_seconds(call(hypothesis(label, n // 100)))
        t2 = probe_seconds(call(hypothesis(label, n // 10)))
        exponent = max(1.0, math.log10(max(t2, 1e-9) / max(t1, 1e-9)))
        projected = t2 * 10**exponent
        _projection[key] = (
            f"not run: projected {projected:.0f} s per call at {n:,} ids "
            f"({t1 * 1e3:.1f} ms at {n // 100:,}, {t2 * 1e3:.1f} ms at {n // 10:,}; growth exponent {exponent:.2f})"
            if projected > MAX_CALL_SECONDS
            else ""
        )
    return _projection[key] or None


@pytest.mark.parametrize("label,op,impl,n", PARAMS)
def test_throughput(benchmark, label: str, op: str, impl: str, n: int) -> None:
    case = BY_LABEL[label]
    try:
        period(label)
        call = _call(label, op, impl)
    except Unavailable as exc:
        pytest.skip(str(exc))
    if n >= 100_000:
        reason = _too_slow(label, op, impl, n, call)
        if reason:
            pytest.skip(reason)
    fn = call(hypothesis(label, n))
    # An array row (and the list-again control) is paired with our call on the same ids as a
    # list, the two timed in turn (conftest.timed): the report's "x list" is the median of those
    # rounds' ratios. (Not the list comprehension: taking turns with its million small
    # allocations slowed our side of its rounds by 5% in one run, 3.01 ms against 2.86 alone.)
    paired = impl in ARRAY_INPUTS or impl == LIST_AGAIN
    on_list = _call(label, op, "oasr_tok")(hypothesis(label, n)) if paired else None
    benchmark.group = f"{op} {label} n={n}"
    timed(
        benchmark,
        lambda _: fn(),
        per=n,
        info={"suite": "throughput", "case": label, "kind": case.kind, "op": op, "impl": impl, "n": n},
        reference=None if on_list is None else lambda _: on_list(),
        # A paired ratio is the median of its rounds' ratios: at a million ids a round can take
        # a tenth of a second, and three rounds' median moves by a few percent from run to run.
        min_rounds=PAIRED_MIN_ROUNDS if paired else MIN_ROUNDS,
    )


CONTROL_TEXT = "hello world " * 100_000


def _allocate_records(n: int) -> list:
    # As many small records, each holding a fresh substring, as word_timings makes words.
    text = CONTROL_TEXT
    return [(text[i % 1000 : i % 1000 + 5], 0.5, 0.75, i, i) for i in range(n)]


@pytest.mark.peer  # not ours: kept out of the baseline
@pytest.mark.parametrize("n", SIZES)
def test_allocation_control(benchmark, n: int) -> None:
    """Not oasr_tok: how this machine's allocator scales when n small objects are created
    and freed. On a VM where fresh pages fault expensively, the cost per object at 1,000,000
    is several times that at 1,000 for plain Python too; the report puts word_timings' growth
    beside this one."""
    benchmark.group = f"allocation control n={n}"
    timed(
        benchmark,
        lambda _: _allocate_records(n),
        per=n,
        info={
            "suite": "throughput",
            "case": "(machine control)",
            "kind": "-",
            "op": "allocate records",
            "impl": "plain Python",
            "n": n,
        },
    )
