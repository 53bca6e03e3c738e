"""What every entry point accepts as ids (docs/decoding.md § Id inputs): NumPy arrays of every
integer dtype and layout, array.array, memoryview and tensor-like objects give exactly the list
result; what is not an id sequence gets a short NonIntegerIdError; an id whose __index__
mutates the list being read cannot crash the interpreter (checked in a child process, so a
crash is a failed test); padded 2-D batches decode row by row."""

from __future__ import annotations

import array
import collections
import itertools
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst

import oasr_tok

from cases import all_cases
from paths import PACKAGE_PARENT, require_shared, subprocess_env

CASES = all_cases()
#: One case per kind for the slower checks (the first the kind lists).
ONE_PER_KIND = list({case.name.split("/")[0]: case for case in reversed(CASES)}.values())
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _ids(case, limit=40):
    tok, interesting, realistic = case.inputs()
    ids = list(itertools.islice(itertools.chain(*realistic, interesting), limit))
    return tok, ids or [0]


def _answers(tok, ids, starts):
    """Every entry point's result on `ids` (any container), for comparison with the list's."""
    state: dict = {}
    streamed = tok.decode_incremental(ids, state)
    return {
        "decode": tok.decode(ids),
        "token_pieces": tok.token_pieces(ids),
        "stream": (streamed, state.get("text")),
        "word_timings": tok.word_timings(ids, starts),
        "decode_batch": tok.decode_batch([ids, ids]),
    }


def _layouts(values: list[int]):
    """(name, container, the list it must read as) for every buffer layout."""
    for dtype in INT_DTYPES:
        small = [v % 128 for v in values] if np.dtype(dtype).itemsize < 4 else values
        yield dtype, np.array(small, dtype=dtype), small
    wide = np.zeros(2 * len(values), dtype=np.int64)
    wide[::2] = values
    yield "strided", wide[::2], values
    yield "reversed", np.array(values, dtype=np.int32)[::-1], values[::-1]
    frozen = np.array(values, dtype=np.int64)
    frozen.setflags(write=False)
    yield "read-only", frozen, values
    for dtype in (">i8", ">u4", ">i2", "<i8", "<u2"):
        small = [v % 128 for v in values] if np.dtype(dtype).itemsize < 4 else values
        yield f"byte order {dtype}", np.array(small, dtype=dtype), small
    yield "column of a 2-D array", np.array([values, values], dtype=np.int64, order="F")[0], values
    yield "Fortran column", np.asfortranarray(np.array([values, values]).T)[:, 1], values
    for code in "bBhHiIlLqQ":
        small = [v % 128 for v in values] if array.array(code).itemsize < 4 else values
        yield f"array.array {code!r}", array.array(code, small), small
    yield "memoryview", memoryview(array.array("q", values)), values
    yield "memoryview cast", memoryview(array.array("q", values).tobytes()).cast("q"), values
    yield "tuple", tuple(values), values
    yield "range", range(3, 3 + min(len(values), 5)), list(range(3, 3 + min(len(values), 5)))
    yield "deque", collections.deque(values), values
    yield "numpy ints in a list", [np.int64(v) for v in values], values
    yield "__array__ only", _Tensor(values), values
    yield "empty int64", np.array([], dtype=np.int64), []
    yield "empty array.array", array.array("i"), []


class _Tensor:
    """A stand-in for a torch / JAX / CuPy-on-host tensor: no buffer, only __array__."""

    def __init__(self, values):
        self._values = values

    def __array__(self, dtype=None, copy=None):
        return np.array(self._values, dtype=np.int64)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_buffer_layout_reads_as_its_list(case):
    tok, ids = _ids(case)
    for name, container, as_list in _layouts(ids):
        starts = [0.04 * k for k in range(len(as_list))]
        assert _answers(tok, container, starts) == _answers(tok, as_list, starts), name


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_times_as_arrays_read_as_their_lists(case):
    tok, ids = _ids(case)
    starts = [0.04 * k for k in range(len(ids))]
    ends = [s + 0.03 for s in starts]
    expected = tok.word_timings(ids, starts, ends)
    assert tok.word_timings(np.array(ids), np.array(starts), np.array(ends)) == expected
    frames = list(range(0, 4 * len(ids), 4))
    assert tok.word_timings(np.array(ids, dtype=np.int32), np.array(frames, dtype=np.int64)) == tok.word_timings(
        ids, frames
    )


def _as_lists(out):
    return tuple(list(map(int, part)) for part in out)


def test_collapse_ctc_reads_every_layout_as_its_list():
    # The frames are ids with runs (and blanks, 0): what a CTC argmax looks like.
    frames = [0, 0, 5, 5, 0, 7, 7, 7, 3, 0, 0, 5, 2, 2, 0, 9, 9, 9, 9, 0]
    for name, container, as_list in _layouts(frames):
        assert _as_lists(oasr_tok.collapse_ctc(container, 0)) == oasr_tok.collapse_ctc(as_list, 0), name
        top = max(as_list, default=0)
        if top > 0:  # the largest frame id, one past the vocabulary: named with its frame
            with pytest.raises(oasr_tok.InvalidIdError, match=f"frame id {top} at frame {as_list.index(top)} is out"):
                oasr_tok.collapse_ctc(container, 0, vocab_size=top)


def test_collapse_ctc_still_reads_any_iterable_and_other_dtypes_item_by_item():
    frames = [0, 3, 3, 0, 4]
    expected = oasr_tok.collapse_ctc(frames, 0)
    assert oasr_tok.collapse_ctc(iter(frames), 0) == expected
    assert oasr_tok.collapse_ctc((f for f in frames), 0) == expected
    assert [a.tolist() for a in oasr_tok.collapse_ctc(np.array([]), 0)] == [[], [], []]  # NumPy's default float dtype
    with pytest.raises(oasr_tok.NonIntegerIdError, match="frame id 0.0 at frame 0 is not an integer id"):
        oasr_tok.collapse_ctc(np.array([0.0, 3.5]), 0)
    with pytest.raises(oasr_tok.NonIntegerIdError, match="one-dimensional, got a 2-D ndarray"):
        oasr_tok.collapse_ctc(np.zeros((300, 500), dtype=np.int64), 0)


def test_a_refused_id_buffer_is_not_leaked():
    import tracemalloc

    tok = ONE_PER_KIND[0].tokenizer()
    bad = np.zeros(100_000, dtype=np.int64)
    bad[-1] = -1
    worse = [0] * 100_000 + [-1]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(5):
            for call in (tok.decode, tok.token_pieces, lambda ids: oasr_tok.collapse_ctc(ids, 0)):
                for ids in (bad, worse):
                    with pytest.raises(oasr_tok.InvalidIdError):
                        call(ids)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 400_000  # one leaked copy of the ids is 800,000 bytes


# -- times as buffers -------------------------------------------------------------------------
#
# The oracle is the list the buffer holds, as NumPy's tolist() gives it (Python floats for float
# dtypes, ints for integer dtypes): the words must equal the list's words, and every time a
# Word holds must have the type the list's item has.

TIME_DTYPES = INT_DTYPES + ["float32", "float64", "float16", ">f8", ">f4", "<f8", ">i8", ">u4", ">i2", "<u2"]


def _time_values(dtype: str, n: int) -> list:
    """n non-decreasing times that `dtype` holds exactly (with repeats, as CTC frames give)."""
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return [0.25 * (k // 2) for k in range(n)]
    top = 100 if kind.itemsize == 1 else 30_000 if kind.itemsize == 2 else 10**9
    return [min(3 * (k // 2), top) for k in range(n)]


def _time_layouts(n: int):
    """(name, container, the list it must read as) for every buffer layout of times."""
    for dtype in TIME_DTYPES:
        arr = np.array(_time_values(dtype, n), dtype=dtype)
        yield dtype, arr, arr.tolist()
    values = _time_values("float64", n)
    wide = np.zeros(2 * n)
    wide[::2] = values
    yield "strided", wide[::2], values
    yield "reversed", np.array(values[::-1])[::-1], values
    yield "reversed >i4", np.array(_time_values("int32", n)[::-1], dtype=">i4")[::-1], _time_values("int32", n)
    frozen = np.array(values)
    frozen.setflags(write=False)
    yield "read-only", frozen, values
    yield "column of a 2-D array", np.array([values, values], order="F")[0], values
    yield "Fortran column", np.asfortranarray(np.array([values, values]).T)[:, 1], values
    yield "2**53 and beyond", np.array([2**60 + k for k in range(n)], dtype=np.int64), [2**60 + k for k in range(n)]
    yield "uint64 top", np.array([2**64 - n + k for k in range(n)], dtype=np.uint64), [2**64 - n + k for k in range(n)]
    for code in "bBhHiIlLqQfd":
        arr = array.array(code, _time_values("float32" if code in "fd" else "int8", n))
        yield f"array.array {code!r}", arr, arr.tolist()
    yield "memoryview", memoryview(array.array("d", values)), values
    yield "memoryview cast", memoryview(array.array("q", range(n)).tobytes()).cast("q"), list(range(n))
    yield "bytearray", bytearray(range(n)), list(range(n))
    yield "__array__ only", _FloatTensor(values), values
    yield "tuple", tuple(values), values
    yield "bool array (item by item)", np.zeros(n, dtype=bool), [False] * n


class _FloatTensor:
    """A stand-in for a torch tensor of times: no buffer, only __array__."""

    def __init__(self, values):
        self._values = values

    def __array__(self, dtype=None, copy=None):
        return np.array(self._values, dtype=np.float64)


def _timed(call, *args):
    """What call(*args) gives: its words with the type of each time, or its error's type and text."""
    try:
        words = call(*args)
    except Exception as exc:  # the list path's error is the oracle for the buffer's
        return type(exc).__name__, str(exc)
    return list(words), [(type(w.start), type(w.end)) for w in words], words.starts, words.ends


PIECES = [" a", "b", " c", ",", " d", "e", "f", " g", "h", " i", " j", "k"]


# Named by the layout alone: a repr may hold an address, which differs between xdist workers.
@pytest.mark.parametrize(
    "name,times,as_list", [pytest.param(*layout, id=layout[0]) for layout in _time_layouts(len(PIECES))]
)
def test_times_of_every_buffer_layout_read_as_their_list(name, times, as_list):
    from oasr_tok.core.words import group_words

    assert _timed(group_words, PIECES, times) == _timed(group_words, PIECES, as_list)
    ends = list(as_list)  # each token ends at its own start
    assert _timed(group_words, PIECES, times, times) == _timed(group_words, PIECES, as_list, ends)
    # Mixed sources: starts from the buffer, ends from a list, and the other way round.
    assert _timed(group_words, PIECES, times, ends) == _timed(group_words, PIECES, as_list, ends)
    assert _timed(group_words, PIECES, as_list, times) == _timed(group_words, PIECES, as_list, ends)


@pytest.mark.parametrize("dtype", TIME_DTYPES)
def test_empty_time_buffers(dtype):
    from oasr_tok.core.words import group_words

    assert group_words([], np.array([], dtype=dtype)) == group_words([], [])
    with pytest.raises(oasr_tok.TimingError, match="starts has 0 times for 1 tokens"):
        group_words([" a"], np.array([], dtype=dtype))


BAD_TIME_ARRAYS = [
    ("decreasing float64", np.array([0.0, 2.0, 1.0]), None),
    ("decreasing int8", np.array([0, 2, 1], dtype=np.int8), None),
    ("decreasing big-endian", np.array([0, 2, 1], dtype=">i8"), None),
    ("decreasing beyond 2**53", np.array([2**60, 2**60 + 1, 2**60], dtype=np.int64), None),
    ("decreasing uint64 top", np.array([2**64 - 3, 2**64 - 1, 2**64 - 2], dtype=np.uint64), None),
    ("nan", np.array([0.0, np.nan, 1.0]), None),
    ("inf float32", np.array([0.0, 1.0, np.inf], dtype=np.float32), None),
    ("-inf big-endian", np.array([-np.inf, 1.0, 2.0], dtype=">f8"), None),
    ("end before its start", np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.5, 3.0])),
    (
        "end before its start by 1 beyond 2**53",
        np.array([0, 2**60 + 1, 2**61], dtype=np.int64),
        np.array([1, 2**60, 2**62], dtype=np.int64),
    ),
    ("int end before a float start", np.array([0.0, 1.5, 2.0]), np.array([1, 1, 3], dtype=np.int16)),
    (
        "uint64 end before an int64 start",
        np.array([0, 2**62, 2**62], dtype=np.int64),
        np.array([2**62, 2**62 - 1, 2**63], dtype=np.uint64),
    ),
    ("decreasing ends", np.array([0.0, 1.0, 2.0]), np.array([3.0, 2.5, 4.0], dtype=np.float32)),
    ("too few", np.array([0.0, 1.0]), None),
    ("too many ends", np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0, 4.0])),
    ("masked (item by item: its tolist() holds None)", np.ma.masked_array([0.0, 1.0, 2.0], mask=[0, 1, 0]), None),
    ("bool (item by item)", np.array([False, True, True]), None),
]


@pytest.mark.parametrize("what,starts,ends", BAD_TIME_ARRAYS, ids=[w for w, _, _ in BAD_TIME_ARRAYS])
def test_bad_time_buffers_raise_the_list_error(what, starts, ends):
    from oasr_tok.core.words import group_words

    pieces = [" a", " b", " c"]
    expected = _timed(group_words, pieces, starts.tolist(), None if ends is None else ends.tolist())
    assert expected[0] == "TimingError"
    assert _timed(group_words, pieces, starts, ends) == expected


def test_0d_and_2d_time_arrays_get_a_short_timing_error():
    from oasr_tok.core.words import group_words

    with pytest.raises(oasr_tok.TimingError, match="starts must be a sequence of numbers, got ndarray"):
        group_words([" a"], np.array(0.5))
    big = np.zeros((300, 500))
    for bad in (big, big.astype(np.int32), big.astype(np.float16), memoryview(big)):
        with pytest.raises(oasr_tok.TimingError, match=r"one dimension.*2-D .* shape \(300, 500\)") as info:
            group_words([" a"] * 300, bad)
        assert len(str(info.value)) < 150
        with pytest.raises(oasr_tok.TimingError, match="ends must be one time per token"):
            group_words([" a"] * 300, np.zeros(300), bad)


def test_a_time_buffer_is_copied():
    from oasr_tok.core.words import group_words

    starts = np.array([0.0, 1.0, 2.0])
    words = group_words([" a", " b", " c"], starts)
    starts[:] = [7.0, 8.0, 9.0]
    assert words.starts == [0.0, 1.0, 2.0]
    assert words[1:].starts == [1.0, 2.0] and words[::-1].ends == [2.0, 2.0, 1.0]


@given(
    gaps=hst.lists(hst.floats(0, 10, width=32), max_size=60),
    dtype=hst.sampled_from(["float64", "float32", ">f8", "<f4"]),
    step=hst.sampled_from([1, 2, -1, -2]),
    pieces=hst.lists(hst.sampled_from([" a", "b", ",", " (", "一", " ", "", "c "]), min_size=120, max_size=120),
)
def test_float_time_buffers_match_their_list(gaps, dtype, step, pieces):
    from oasr_tok.core.words import group_words

    values = np.cumsum(np.array(gaps, dtype=dtype)).astype(dtype)  # non-decreasing in its own dtype
    if step == 1:
        starts = values
    elif step == -1:
        starts = values[::-1].copy()[::-1]  # a reversed view
    else:
        wide = np.zeros(2 * len(values), dtype=dtype)
        wide[::2] = values if step > 0 else values[::-1]
        starts = wide[::2] if step > 0 else wide[-2::-2]  # every other item, forwards or backwards
    assert starts.tolist() == values.tolist()
    ends = starts + np.array(1, dtype=dtype)
    pieces = pieces[: len(values)]
    as_starts, as_ends = starts.tolist(), ends.tolist()
    assert _timed(group_words, pieces, starts) == _timed(group_words, pieces, as_starts)
    assert _timed(group_words, pieces, starts, ends) == _timed(group_words, pieces, as_starts, as_ends)


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_word_timings_reads_every_time_layout_as_its_list(case):
    tok, ids = _ids(case)
    for name, times, as_list in _time_layouts(len(ids)):
        assert _timed(tok.word_timings, ids, times) == _timed(tok.word_timings, ids, as_list), name


NOT_IDS = [
    ("0-d array", np.array(5)),
    ("2-D array", np.zeros((300, 500), dtype=np.int64)),
    ("float64 array", np.zeros(3000)),
    ("float32 array", np.zeros(3, dtype=np.float32)),
    ("bool array", np.array([True, False])),
    ("complex array", np.zeros(2, dtype=complex)),
    ("object array", np.array([1, 2], dtype=object)),
    ("numpy scalar", np.int64(3)),
    ("int", 3),
    ("None", None),
    ("str", "1 2 3"),
    ("bytes", b"\x01\x02"),
    ("bytearray", bytearray(b"\x01\x02")),
    ("set", {1, 2}),
    ("frozenset", frozenset({1})),
    ("dict", {1: 2}),
    ("iterator", iter([1, 2])),
    ("generator", (i for i in [1, 2])),
    ("array.array of doubles", array.array("d", [1.0])),
    ("a bool id", [1, True]),
    ("a numpy bool id", [np.True_]),
    ("a float id", [1.0]),
]


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
@pytest.mark.parametrize("what,bad", NOT_IDS, ids=[w for w, _ in NOT_IDS])
def test_what_is_not_an_id_sequence_gets_a_short_typed_error(case, what, bad):
    tok, ids = _ids(case)
    state: dict = {}
    tok.decode_incremental(ids[:3], state)
    before = dict(state)
    calls = [
        lambda: tok.decode(bad),
        lambda: tok.token_pieces(bad),
        lambda: tok.decode_incremental(bad, state),
        lambda: tok.word_timings(bad, [0.0]),
        lambda: tok.decode_batch([bad]),
    ]
    for call in calls:
        with pytest.raises(oasr_tok.NonIntegerIdError) as info:
            call()
        assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
        assert len(str(info.value)) < 300
    assert state == before


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_a_long_list_is_read_in_place_with_every_check(case):
    """A list of 4096 ids or more is read where it is, each item checked as it is read; an item
    that is not an exact int in range sends the call back to the copying read: an id of
    another type still reads as its value, and a bad one anywhere (after a special id too)
    gets the error check_ids gives, naming it."""
    tok, ids = _ids(case)
    long = (ids * (5000 // len(ids) + 1))[:5000]
    calls = {"decode": tok.decode, "token_pieces": tok.token_pieces}
    expected = {name: call(long) for name, call in calls.items()}
    assert expected == {name: call(tuple(long)) for name, call in calls.items()}
    for k in (0, 255, 256, 2500, 4999):  # (ids are read in blocks of 256)
        other = list(long)
        other[k] = np.int64(other[k])
        assert {name: call(other) for name, call in calls.items()} == expected, k
    for bad in (-1, tok.vocab_size, 10**30, True, "7", 2.0):
        for k in (0, 256, 4999):
            other = list(long)
            other[k] = bad
            with pytest.raises(oasr_tok.InvalidIdError) as wanted:
                tok.check_ids(tuple(other))
            for name, call in calls.items():
                with pytest.raises(oasr_tok.InvalidIdError) as got:
                    call(other)
                assert type(got.value) is type(wanted.value) and str(got.value) == str(wanted.value), (name, bad, k)
    special = sorted(tok.special_ids)
    if special:  # a special id first (a stop of decode's gather in several kinds), the bad id last
        other = [special[0], *long[1:-1], tok.vocab_size]
        for call in calls.values():
            for container in (other, np.array(other), np.array(other, dtype=np.int32)):
                with pytest.raises(oasr_tok.InvalidIdError, match=f"token id {tok.vocab_size} at position 4999 "):
                    call(container)


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_a_long_buffer_is_read_in_place_with_every_check(case):
    """A long 1-D buffer of 4- or 8-byte native integers is read where it is, each value checked
    as it is read; a bad value anywhere gets the error the copying read gives, naming it."""
    tok, ids = _ids(case)
    long = (ids * (5000 // len(ids) + 1))[:5000]
    calls = {"decode": tok.decode, "token_pieces": tok.token_pieces}
    expected = {name: call(long) for name, call in calls.items()}
    backwards = {name: call(long[::-1]) for name, call in calls.items()}
    wide = np.zeros(2 * len(long), dtype=np.int64)
    wide[::2] = long
    for dtype in ("int64", "int32", "uint32", "uint64"):
        array = np.array(long, dtype=dtype)
        assert {name: call(array) for name, call in calls.items()} == expected, dtype
        assert {name: call(array[::-1]) for name, call in calls.items()} == backwards, dtype
    assert {name: call(wide[::2]) for name, call in calls.items()} == expected
    for dtype, bad in (("int64", -1), ("int32", tok.vocab_size), ("uint64", 2**64 - 1), ("int64", 2**63 - 1)):
        for k in (0, 255, 256, 4999):  # (ids are read in blocks of 256)
            array = np.array(long, dtype=dtype)
            array[k] = bad
            for call in calls.values():
                with pytest.raises(oasr_tok.InvalidIdError, match=f"token id {bad} at position {k} is out of range"):
                    call(array)


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_out_of_range_buffer_ids_are_named(case):
    tok, _ = _ids(case)
    for bad, shown in [
        (np.array([0, -1], dtype=np.int8), "-1"),
        (np.array([0, tok.vocab_size], dtype=np.int64), str(tok.vocab_size)),
        (np.array([2**64 - 1], dtype=np.uint64), str(2**64 - 1)),
        (np.array([0, -3], dtype=">i4"), "-3"),
    ]:
        for call in (tok.decode, tok.token_pieces, lambda ids: tok.decode_incremental(ids, {})):
            with pytest.raises(oasr_tok.InvalidIdError, match=f"token id {shown} at position"):
                call(bad)


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_short_int_arrays_read_as_their_lists(case):
    """A short array.array('i') (a step's ids as SGLang's scheduler sends them) is read straight
    from its memory: the same ids, deltas and errors as its list, up to and past the short
    length (16), with an id out of range at either end."""
    tok, ids = _ids(case)
    for n in (1, 4, 15, 16, 17):
        row = (ids * n)[:n]
        assert tok.decode(array.array("i", row)) == tok.decode(row)
        stream, other = tok.new_stream(), tok.new_stream()
        deltas = tok.decode_incremental_batch([array.array("i", row), array.array("i", row[:1])], [stream, other])
        assert deltas == tok.decode_incremental_batch([row, row[:1]], [tok.new_stream(), tok.new_stream()])
        for bad in (-1, tok.vocab_size):
            wrong = [*row[:-1], bad]
            with pytest.raises(oasr_tok.InvalidIdError, match=f"token id {bad} at position {n - 1}"):
                tok.decode(array.array("i", wrong))
            before = stream.fork()
            with pytest.raises(oasr_tok.InvalidIdError, match=f"stream 0: token id {bad} at position {n - 1}"):
                tok.decode_incremental_batch([array.array("i", wrong)], [stream])
            assert stream == before  # a refused batch moved nothing


def test_memoryview_of_bytes_is_read_as_uint8_ids_but_bytes_are_refused():
    tok = ONE_PER_KIND[0].tokenizer()
    assert tok.decode(memoryview(b"\x05\x06")) == tok.decode([5, 6])
    with pytest.raises(oasr_tok.NonIntegerIdError):
        tok.decode(b"\x05\x06")


# -- padded batches ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_padded_batches_decode_row_by_row(case):
    tok, ids = _ids(case)
    rows = [ids[:7], ids[3:5], [], ids[:1]]
    expected = [tok.decode(row) for row in rows]
    width = max(map(len, rows)) + 2
    for dtype in ("int64", "int32", ">i8"):
        padded = np.full((len(rows), width), -1, dtype=dtype)
        for r, row in enumerate(rows):
            padded[r, : len(row)] = row
        lengths = np.array([len(row) for row in rows])
        assert tok.decode_batch(padded, pad_id=-1) == expected
        assert tok.decode_batch(padded, lengths=lengths) == expected
        assert tok.decode_batch(padded, lengths=list(lengths), pad_id=-1) == expected
        assert tok.decode_batch(_Tensor(padded.tolist()), pad_id=-1) == expected
        assert tok.decode_batch(list(padded), pad_id=-1) == expected  # a list of 1-D arrays
        assert tok.decode_batch([list(map(int, r)) for r in padded], pad_id=-1) == expected
        assert tok.decode_batch(padded[:, ::-1][:, ::-1], lengths=lengths) == expected  # strided view
    # Without lengths or pad_id every entry of a row is an id: -1 is refused, naming it.
    with pytest.raises(oasr_tok.InvalidIdError, match="token id -1"):
        tok.decode_batch(np.full((2, 3), -1))
    assert tok.decode_batch(np.array([ids[:4], ids[4:8]])) == [tok.decode(ids[:4]), tok.decode(ids[4:8])]


def test_padded_batch_misuse_gets_typed_errors():
    tok = ONE_PER_KIND[0].tokenizer()
    batch = np.zeros((2, 3), dtype=np.int64)
    with pytest.raises(oasr_tok.InvalidIdError, match="lengths has 1 entries for 2"):
        tok.decode_batch(batch, lengths=[1])
    with pytest.raises(oasr_tok.InvalidIdError, match="fewer than its length 4"):
        tok.decode_batch(batch, lengths=[1, 4])
    with pytest.raises(oasr_tok.InvalidIdError):
        tok.decode_batch(batch, lengths=[1, -1])
    with pytest.raises(oasr_tok.NonIntegerIdError):
        tok.decode_batch(batch, pad_id=True)
    with pytest.raises(oasr_tok.NonIntegerIdError, match="one sequence"):
        tok.decode_batch(np.zeros(3, dtype=np.int64))
    with pytest.raises(oasr_tok.NonIntegerIdError):
        tok.decode_batch(np.zeros((2, 2, 2), dtype=np.int64))
    with pytest.raises(oasr_tok.NonIntegerIdError):
        tok.decode_batch(np.zeros((2, 2)))


# -- lists mutated while they are read: in a child, so a crash fails the test -----------------

CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import oasr_tok
    from cases import all_cases

    case = next(c for c in all_cases() if c.name == {name!r})
    tok, interesting, realistic = case.inputs()
    base = ([i for r in realistic for i in r] + list(interesting))[:8] or [0]

    class Evil:
        def __init__(self, target, how, value):
            self.target, self.how, self.value = target, how, value
        def __index__(self):
            lst = self.target
            if self.how == "clear":
                lst.clear()
            elif self.how == "shrink":
                del lst[1:]
            elif self.how == "grow":
                lst.extend([self.value] * 1000)
            elif self.how == "replace":
                lst[:] = [object()] * len(lst)
            elif self.how == "swap items":
                for k in range(len(lst)):
                    lst[k] = self.value
            return self.value

    entry_points = {{
        "decode": lambda ids: tok.decode(ids),
        "token_pieces": lambda ids: tok.token_pieces(ids),
        "decode_incremental": lambda ids: tok.decode_incremental(ids, {{}}),
        "word_timings": lambda ids: tok.word_timings(ids, [0.0] * len(ids)),
        "decode_batch": lambda ids: tok.decode_batch([ids, ids]),
        "check_ids": lambda ids: tok.check_ids(ids),
    }}
    survived = 0
    for entry, call in entry_points.items():
        for how in ("clear", "shrink", "grow", "replace", "swap items"):
            for where in (0, 3, 7):
                ids = list(base) + [base[0]] * 8
                ids.insert(where, Evil(ids, how, base[0]))
                try:
                    call(ids)
                except (oasr_tok.TokenizerError, ValueError, TypeError):
                    pass
                survived += 1
    print("survived", survived)
""")


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_a_list_mutated_by_an_ids_index_cannot_crash_any_entry_point(case):
    script = CHILD.format(tests=os.path.join(ROOT, "tests"), name=case.name)
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        cwd=PACKAGE_PARENT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"child died with {done.returncode}:\n{done.stderr[-3000:]}"
    assert done.stdout.split() == ["survived", str(6 * 5 * 3)]


# -- real methods, not engine methods bound onto instances ------------------------------------


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_a_subclass_overriding_the_streaming_methods_is_honoured(case):
    tok = case.tokenizer()
    base = type(tok)
    calls = []

    class Logged(base):  # type: ignore[misc, valid-type]
        def decode_incremental(self, new_ids, state, final=False):
            calls.append("decode_incremental")
            return super().decode_incremental(new_ids, state, final)

        def token_pieces(self, ids):
            calls.append("token_pieces")
            return super().token_pieces(ids)

    logged = Logged.__new__(Logged)
    logged.__dict__.update(tok.__dict__)
    if hasattr(tok, "_table"):
        logged._table = tok._table
    _, ids = _ids(case, 6)
    state: dict = {}
    assert logged.decode_incremental(ids, state) == tok.decode_incremental(ids, {})
    assert logged.token_pieces(ids) == tok.token_pieces(ids)
    assert calls == ["decode_incremental", "token_pieces"]
    assert "decode_incremental" not in vars(tok) and "token_pieces" not in vars(tok)


def test_decode_batch_takes_a_1d_object_array_of_rows():
    """A Ray Data / pandas column of id lists arrives as a 1-D object array: one row each."""
    import numpy as np

    tok = CASES[0].tokenizer()
    rows = [[3, 4, 5], [6], []]
    column = np.empty(len(rows), dtype=object)
    column[:] = [np.array(r, dtype=np.int64) for r in rows]
    assert tok.decode_batch(column) == [tok.decode(r) for r in rows]


def test_join_pieces_gathers_what_a_join_of_the_pieces_gives():
    """_ids.join_pieces against b"".join and a plain statement of its leading rule, on every
    layout; stops give None; bad ids get check_ids' errors; a piece that is not bytes is a
    TypeError, never a crash."""
    from oasr_tok._engine.ids import check_ids
    from oasr_tok._engine.join import join_pieces

    pieces = [bytes([65 + i]) * (i % 3) for i in range(40)]
    first = [p.lower() for p in pieces]
    keeps = bytes(1 if i % 4 == 0 else 0 for i in range(40))
    values = [(7 * k) % 40 for k in range(60)]
    for name, container, as_list in _layouts(values):
        assert join_pieces(pieces, container) == b"".join(pieces[i] for i in as_list), name
        lead = next((k for k, i in enumerate(as_list) if not keeps[i]), len(as_list) - 1) + 1
        expected = b"".join([first[i] for i in as_list[:lead]] + [pieces[i] for i in as_list[lead:]])
        assert join_pieces(pieces, container, first, keeps) == expected, name
        stops = bytearray(40)
        assert join_pieces(pieces, container, stops=bytes(stops)) == b"".join(pieces[i] for i in as_list)
        if as_list:
            stops[as_list[-1]] = 1
            assert join_pieces(pieces, container, stops=bytes(stops)) is None, name
    for bad in ([0, 40], [-1], np.array([3, 99], dtype=np.uint8), ["1"], [1.0]):
        with pytest.raises(ValueError) as ours:
            join_pieces(pieces, bad)
        with pytest.raises(ValueError) as theirs:
            check_ids(bad, 40)
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
    long = [(7 * k) % 40 for k in range(5000)]  # read in place: a stop early, a bad id last is still named
    stops = bytearray(40)
    stops[long[1]] = 1
    assert join_pieces(pieces, long, stops=bytes(stops)) is None
    assert join_pieces(pieces, np.array(long, dtype=np.int32), stops=bytes(stops)) is None
    for bad, container in ((40, [*long, 40]), (40, np.array([*long, 40])), (-1, np.array([*long, -1], dtype=np.int32))):
        with pytest.raises(oasr_tok.InvalidIdError, match=f"token id {bad} at position 5000 is out of range"):
            join_pieces(pieces, container, stops=bytes(stops))
    with pytest.raises(TypeError, match="piece 1 is not bytes"):
        join_pieces([b"a", "b"], [0, 1])
    with pytest.raises(ValueError, match="one entry per piece"):
        join_pieces(pieces, [0], first[:3], keeps)


@pytest.mark.parametrize("n", [5, 32767, 32768, 100_000])
def test_join_pieces_over_tuples_and_long_ids_gives_what_lists_give(n: int) -> None:
    """From 32,768 ids a join over tuples walks without the GIL: the same bytes, the same None
    at a stop, the same errors (a bad id named by check_ids, a piece that is not bytes)."""
    from oasr_tok._engine.join import join_pieces

    rng = random.Random(n)
    pieces = [bytes([65 + i % 26]) * (i % 4) for i in range(300)]
    first = [p.lower() for p in pieces]
    keeps = bytes(1 if i % 5 == 0 else 0 for i in range(300))
    values = [rng.randrange(300) for _ in range(n)]
    values[0] = 0  # the leading rule is in force for at least one id
    for container in (values, np.array(values, dtype=np.int32), tuple(values)):
        plain = join_pieces(pieces, container)
        assert join_pieces(tuple(pieces), container) == plain == b"".join(pieces[i] for i in values)
        led = join_pieces(pieces, container, first, keeps)
        assert join_pieces(tuple(pieces), container, tuple(first), keeps) == led
        stops = bytearray(300)
        stops[values[-1]] = 1
        assert join_pieces(tuple(pieces), container, stops=bytes(stops)) is None
        assert join_pieces(tuple(pieces), container, stops=bytes(300)) == plain
    with pytest.raises(oasr_tok.InvalidIdError, match=f"token id 300 at position {n} is out of range"):
        join_pieces(tuple(pieces), [*values, 300])
    broken = list(pieces)
    broken[values[-1]] = "not bytes"
    with pytest.raises(TypeError, match=f"piece {values[-1]} is not bytes"):
        join_pieces(tuple(broken), values)
    with pytest.raises(TypeError, match="of the type of pieces"):
        join_pieces(tuple(pieces), values, first, keeps)
    with pytest.raises(TypeError, match="list or tuple"):
        join_pieces(iter(pieces), values)


def test_gather_picks_what_a_comprehension_over_the_checked_ids_picks():
    from oasr_tok._engine.ids import check_ids
    from oasr_tok._engine.join import gather

    table = [f"t{i}" for i in range(40)]
    skip = bytes(1 if i % 5 == 0 else 0 for i in range(40))
    values = [(7 * k) % 40 for k in range(60)]
    for name, container, as_list in [*_layouts(values), ("long list", values * 100, values * 100)]:
        assert gather(table, container) == [table[i] for i in as_list], name
        assert gather(table, container, skip) == [table[i] for i in as_list if not skip[i]], name
    long = values * 100
    for bad in ([0, 40], [-1], np.array([3, 99], dtype=np.uint8), ["1"], [1.0], [*long, 40], np.array([*long, -1])):
        with pytest.raises(ValueError) as ours:
            gather(table, bad, skip)
        with pytest.raises(ValueError) as theirs:
            check_ids(bad, 40)
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="one byte per entry"):
        gather(table, [0], b"\0")


@pytest.mark.parametrize("length", [1, 63, 64, 65, 20_000])  # 64: from there the per-call cache is used
def test_check_ids_of_a_buffer_is_its_list_with_and_without_skip(length):
    """check_ids gives the list of the ids' values (less the skipped ones), however the ints
    in it are made: from the shared table (a vocabulary of up to 2**19 ids), or past it from a
    per-call cache, where ids 4096 apart fall on one slot and ids past 2**30 are not one-digit
    ints."""
    from oasr_tok._engine.ids import check_ids

    rng = np.random.default_rng(length)
    vocab = 3 * 4096 + 5
    values = rng.integers(0, vocab, length).tolist()
    values[::7] = [4096 * (k % 3) + 1 for k in range(len(values[::7]))]  # colliding slots, alternating
    skip = bytes(rng.integers(0, 2, vocab, dtype=np.uint8).tolist())
    for name, container, as_list in _layouts(values):
        assert check_ids(container, vocab) == as_list, name
        assert check_ids(container, vocab, skip) == [i for i in as_list if not skip[i]], name
    big = [2**40 + 3, 2**40 + 3 + 4096, 5] * 30
    assert check_ids(np.array(big, dtype=np.uint64), 2**41) == big
    out = check_ids(np.array([300, 301] * 50), 1000)
    assert out == [300, 301] * 50 and all(type(i) is int for i in out)
    # The shared table's ints serve every later call, of any vocabulary that covers them.
    assert out[1] is out[3] and check_ids(np.array([301], dtype=np.int32), 5000)[0] is out[1]
    wide = check_ids(np.array([2**19 + 7, 301] * 40), 2**19 + 8)  # past the table: the per-call cache
    assert wide == [2**19 + 7, 301] * 40 and wide[0] is wide[2]


@pytest.mark.parametrize("length", [1, 255, 256, 257, 20_000])  # (blocks of 256; _layouts has empty ones)
def test_runtime_ids_hands_out_what_check_ids_lists(length):
    """runtime_ids (what the huggingface kind hands its runtime) iterates to check_ids' list in
    every layout, with and without skip, the same int objects included; a plain list is
    returned as it is; a bad id gets check_ids' error, short buffer or long."""
    from oasr_tok._engine.ids import check_ids, runtime_ids

    rng = np.random.default_rng(length)
    vocab = 3 * 4096 + 5
    values = rng.integers(0, vocab, length).tolist()
    skip = bytes(rng.integers(0, 2, vocab, dtype=np.uint8).tolist())
    for name, container, as_list in _layouts(values):
        out = runtime_ids(container, vocab)
        assert len(out) >= len(as_list), name  # (a capacity hint: never less than what comes out)
        assert list(out) == as_list, name
        assert isinstance(out, list) or list(out) == [], name  # (a list of other ints is checked into a list)
        kept = [i for i in as_list if not skip[i]]
        got = list(runtime_ids(container, vocab, skip))
        assert got == kept and all(a is b for a, b in zip(got, check_ids(container, vocab, skip))), name
    plain = list(values)
    assert runtime_ids(plain, vocab) is plain
    for k in sorted({0, length // 2, length - 1}):
        bad = np.array(values, dtype=np.int64)
        bad[k] = vocab + 1
        with pytest.raises(oasr_tok.InvalidIdError) as ours:
            list(runtime_ids(bad, vocab, skip))
        with pytest.raises(oasr_tok.InvalidIdError) as theirs:
            check_ids(bad, vocab, skip)
        assert str(ours.value) == str(theirs.value)
        assert f"token id {vocab + 1} at position {k} " in str(ours.value)


def test_runtime_ids_skips_a_long_run_of_dropped_ids_and_goes_through_the_runtime():
    """A million skipped ids in a row are passed over in one call (no recursion per block);
    the tokenizers runtime reads a CheckedIds as it reads a list, and an InvalidIdError raised
    while it reads comes out of it as it was raised."""
    from oasr_tok._engine.ids import runtime_ids

    skip = b"\1" + bytes(99)
    assert list(runtime_ids(np.zeros(1_000_000, dtype=np.int32), 100, skip)) == []
    assert list(runtime_ids(np.array([0] * 999_999 + [5]), 100, skip)) == [5]
    from tokenizers import Tokenizer

    backend = Tokenizer.from_file(require_shared("huggingface/qwen3/tokenizer.json"))  # its error names no file
    size = backend.get_vocab_size()
    ids = np.array(backend.encode("naïve café, 日本語 🙂 text").ids * 300, dtype=np.int64)
    assert backend.decode(runtime_ids(ids, size)) == backend.decode(ids.tolist())
    assert backend.decode_batch([runtime_ids(ids, size), runtime_ids(ids[:7], size)]) == backend.decode_batch(
        [ids.tolist(), ids[:7].tolist()]
    )
    ids[len(ids) // 2] = size
    with pytest.raises(oasr_tok.InvalidIdError, match=f"token id {size} at position {len(ids) // 2} is out"):
        backend.decode(runtime_ids(ids, size))


IN_PLACE_CHILD = textwrap.dedent("""
    import random, sys, threading, time
    sys.path.insert(0, {tests!r})
    sys.setswitchinterval(1e-5)  # let the other thread in often
    import oasr_tok
    from paths import shared
    tok = oasr_tok.build_tokenizer(
        oasr_tok.TokenizerSpec("sentencepiece", {{"model": shared("sentencepiece/mistral-v1.model")}})
    )
    invalid = tok.processor.piece_to_id("<0xFF>")  # each one calls the Python error handler
    word = tok.processor.piece_to_id("▁the")
    ids = [invalid, word] * 5000  # long enough to be read in place
    stop = False

    def mutate():
        rng = random.Random(0)
        while not stop:
            k = rng.randrange(len(ids))
            ids[k] = rng.choice([word, invalid])
            if rng.random() < 0.2:  # a moment when an item is no id, then one again
                ids[k] = rng.choice(["x", 10**30, -1])
                ids[k] = word
            if rng.random() < 0.2:  # a moment when the list is shorter
                del ids[-700:]
                ids.extend([invalid, word] * 350)
            time.sleep(0)

    other = threading.Thread(target=mutate)
    other.start()
    outcomes = set()
    for _ in range(40):
        for call in (tok.token_pieces, tok.decode):
            try:
                call(ids)
                outcomes.add("ok")
            except (RuntimeError, ValueError, TypeError) as exc:
                outcomes.add(type(exc).__name__)
    stop = True
    other.join()
    print("survived", sorted(outcomes))
""")


def test_a_list_read_in_place_while_another_thread_changes_it_cannot_crash():
    """token_pieces and decode read a long list of ids where it is (no copy); the sentencepiece
    table's error handler lets another thread run mid-walk, which rewrites, shortens and grows
    the list. Every call returns or raises a typed error (an item found changed sends the
    call back to the copying read, which may raise InvalidIdError / NonIntegerIdError); none
    crashes (a child process).
    Whether a call is raced is up to the scheduler: this is a smoke test of the checks that
    id_at makes on every read, not a proof that each was reached."""
    done = subprocess.run(
        [sys.executable, "-c", IN_PLACE_CHILD.format(tests=os.path.join(ROOT, "tests"))],
        check=False,
        cwd=PACKAGE_PARENT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"child died with {done.returncode}:\n{done.stderr[-3000:]}"
    assert done.stdout.startswith("survived") and "ok" in done.stdout, done.stdout


BUFFER_CHILD = textwrap.dedent("""
    import random, sys, threading, time
    import numpy as np
    sys.path.insert(0, {tests!r})
    sys.setswitchinterval(1e-5)
    import oasr_tok
    from oasr_tok._engine.ids import check_ids, runtime_ids
    from oasr_tok._engine.join import gather, join_pieces
    from paths import shared
    tok = oasr_tok.build_tokenizer(
        oasr_tok.TokenizerSpec("sentencepiece", {{"model": shared("sentencepiece/mistral-v1.model")}})
    )
    invalid = tok.processor.piece_to_id("<0xFF>")
    word = tok.processor.piece_to_id("▁the")
    ids = np.array([invalid, word] * 5000, dtype=np.int64)
    frames = np.array([0, 0, 5, 5, 0, 7] * 5000, dtype=np.int32)
    pieces = [bytes([65 + i % 26]) * (i % 4) for i in range(tok.vocab_size)]
    stop = False

    def write():
        rng = random.Random(0)
        while not stop:
            k, f = rng.randrange(len(ids)), rng.randrange(len(frames))
            ids[k] = rng.choice([word, invalid])
            frames[f] = rng.choice([0, 5, 7, 9])
            if rng.random() < 0.2:  # a moment when a value is no id, then one again
                ids[k], frames[f] = rng.choice([-1, tok.vocab_size]), -3
                ids[k], frames[f] = word, 0
            time.sleep(0)

    other = threading.Thread(target=write)
    other.start()
    outcomes = set()
    calls = (tok.token_pieces, tok.decode, lambda x: check_ids(x, tok.vocab_size),
             lambda x: gather(pieces, x), lambda x: join_pieces(pieces, x),
             lambda x: list(runtime_ids(x, tok.vocab_size)))
    for _ in range(30):
        for call in calls:
            try:
                call(ids)
                outcomes.add("ok")
            except (RuntimeError, ValueError, TypeError) as exc:
                outcomes.add(type(exc).__name__)
        try:
            out = oasr_tok.collapse_ctc(frames, 0)
            assert len(out[0]) == len(out[1]) == len(out[2])
            outcomes.add("ok")
        except ValueError as exc:
            outcomes.add(type(exc).__name__)
    stop = True
    other.join()
    print("survived", sorted(outcomes))
""")


def test_a_buffer_read_in_place_while_another_thread_writes_to_it_cannot_crash():
    """A long int64 array is read where it is by token_pieces, decode, check_ids, gather,
    join_pieces and collapse_ctc (which reads it without the GIL) while another thread writes
    ids, out-of-range values included, into it: every call returns or raises a typed error,
    none crashes or reads past what it counted (a child process). A smoke test, as the list
    one above: whether a call is raced is up to the scheduler."""
    done = subprocess.run(
        [sys.executable, "-c", BUFFER_CHILD.format(tests=os.path.join(ROOT, "tests"))],
        check=False,
        cwd=PACKAGE_PARENT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"child died with {done.returncode}:\n{done.stderr[-3000:]}"
    assert done.stdout.startswith("survived") and "ok" in done.stdout, done.stdout
