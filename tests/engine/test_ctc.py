"""collapse_ctc: CTC frames to tokens and frame spans.

The oracle is the CTC rule written the obvious way (itertools.groupby over the frames, blank
runs dropped), run on lists, tuples and every integer buffer layout collapse_ctc reads."""

from __future__ import annotations

import array
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import InvalidIdError, NonIntegerIdError, collapse_ctc


def reference(frames: list[int], blank: int) -> tuple[list[int], list[int], list[int]]:
    ids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for value, run in itertools.groupby(frames):
        length = len(list(run))
        if value != blank:
            ids.append(value)
            starts.append(position)
            ends.append(position + length)
        position += length
    return ids, starts, ends


frames = st.lists(st.integers(0, 6), max_size=200) | st.lists(st.sampled_from([0, 0, 0, 1, 2]), max_size=200)


@given(frames=frames, blank=st.integers(0, 6))
def test_lists_and_tuples_match_the_rule(frames, blank):
    expected = reference(frames, blank)
    assert collapse_ctc(frames, blank) == expected
    assert collapse_ctc(tuple(frames), blank) == expected


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", ">i4"])
@given(frames=frames, blank=st.integers(0, 6))
def test_numpy_arrays_of_every_integer_dtype(dtype, frames, blank):
    arr = np.array(frames, dtype=dtype)
    as_lists = lambda out: tuple(a.tolist() for a in out)
    assert as_lists(collapse_ctc(arr, blank)) == reference(frames, blank)
    # A strided view (every other frame, reversed) is read in place, not copied first.
    assert as_lists(collapse_ctc(arr[::-2], blank)) == reference(frames[::-2], blank)


@given(frames=frames, blank=st.integers(0, 6))
def test_array_module_and_memoryview(frames, blank):
    buf = array.array("q", frames)
    assert collapse_ctc(buf, blank) == reference(frames, blank)
    assert collapse_ctc(memoryview(buf), blank) == reference(frames, blank)


def test_a_blank_separates_repeats_and_spans_are_half_open():
    # frames:     0  1  2  3  4  5  6  7  8
    frames = [0, 0, 3, 3, 0, 3, 5, 5, 5]
    assert collapse_ctc(frames, 0) == ([3, 3, 5], [2, 5, 6], [4, 6, 9])
    assert collapse_ctc([], 0) == ([], [], [])
    assert collapse_ctc([0, 0], 0) == ([], [], [])


def test_lists_give_int_lists_and_numpy_gives_int64_arrays():
    ids, starts, ends = collapse_ctc([1, 1, 2], 0)
    assert all(type(v) is int for v in ids + starts + ends) and type(ids) is list
    ids, starts, ends = collapse_ctc(array.array("b", [1, 1, 2]), 0)
    assert type(ids) is list
    out = collapse_ctc(np.array([1, 1, 0, 2], dtype=np.uint8), 0)
    assert all(type(a) is np.ndarray and a.dtype == np.int64 for a in out)
    assert [a.tolist() for a in out] == [[1, 2], [0, 3], [2, 4]]
    assert [a.tolist() for a in collapse_ctc(np.array([], dtype=np.int32), 0)] == [[], [], []]


def test_numpy_results_feed_word_timings():
    from oasr_tok import TokenizerSpec, build_tokenizer

    from paths import shared

    tok = build_tokenizer(
        TokenizerSpec("symbol_table", {"units": shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")})
    )
    frames = np.array([0, 5, 5, 0, 6, 0, 0, 7], dtype=np.int32)
    ids, starts, ends = collapse_ctc(frames, 0)
    assert tok.word_timings(ids, starts, ends) == tok.word_timings(ids.tolist(), starts.tolist(), ends.tolist())


@pytest.mark.parametrize(
    "bad, error, words",
    [
        ([0, -1], InvalidIdError, "frame 1"),
        ([0, 1.0], NonIntegerIdError, "frame 1"),
        ([True], NonIntegerIdError, "frame 0"),
        ([1, "a"], NonIntegerIdError, "frame 1"),
        (np.array([1.0, 2.0]), NonIntegerIdError, "frame 0"),
        (np.array([1, 0], dtype=bool), NonIntegerIdError, "frame 0"),
        (memoryview(array.array("d", [1.0])), NonIntegerIdError, "frame 0"),
        (np.zeros((2, 2), dtype=np.int32), NonIntegerIdError, "2-D"),
        (np.array([3, -2], dtype=np.int16), InvalidIdError, "frame 1"),
        (np.array([-1, -1], dtype=np.int64), InvalidIdError, "frame 0"),
        ([-1, -1], InvalidIdError, "frame 0"),
        (np.array([2**63 + 5], dtype=np.uint64), InvalidIdError, "frame 0"),
        ("abc", NonIntegerIdError, "str"),
        (b"abc", NonIntegerIdError, "bytes"),
        (None, NonIntegerIdError, "NoneType"),
    ],
)
def test_bad_frames_raise_typed_errors_naming_the_frame(bad, error, words):
    with pytest.raises(error, match=words):
        collapse_ctc(bad, 0)


def test_vocab_size_bounds_frames_and_blank():
    assert collapse_ctc([1, 31], 0, vocab_size=32) == ([1, 31], [0, 1], [1, 2])
    with pytest.raises(InvalidIdError, match="frame 2.*0 ... 31"):
        collapse_ctc([1, 2, 32], 0, vocab_size=32)
    with pytest.raises(InvalidIdError, match="frame 0"):
        collapse_ctc(np.array([40], dtype=np.int32), 0, vocab_size=32)
    with pytest.raises(InvalidIdError, match="blank_id"):
        collapse_ctc([1], 32, vocab_size=32)
    with pytest.raises(InvalidIdError, match="blank_id"):
        collapse_ctc([1], -1)
    with pytest.raises(NonIntegerIdError, match="blank_id"):
        collapse_ctc([1], 0.5)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64", "int16", ">i8"])
def test_long_frame_buffers_read_in_place_match_the_rule_and_name_a_bad_frame(dtype):
    rng = np.random.default_rng(5)
    frames = np.repeat(rng.choice([0, 0, 0, 3, 7, 9, 30], 3000), rng.integers(1, 4, 3000)).tolist()
    assert len(frames) >= 4096  # long enough to be read where it is
    arr = np.array(frames, dtype=dtype)
    as_lists = lambda out: tuple(a.tolist() for a in out)
    for blank in (0, 7):
        assert as_lists(collapse_ctc(arr, blank)) == reference(frames, blank)
        assert as_lists(collapse_ctc(arr[::-1], blank, vocab_size=31)) == reference(frames[::-1], blank)
        assert as_lists(collapse_ctc(arr[1::3], blank)) == reference(frames[1::3], blank)
        assert collapse_ctc(array.array("q", frames), blank) == reference(frames, blank)
    for k in (0, len(frames) - 1):
        with pytest.raises(
            InvalidIdError, match=f"frame id 40 at frame {k} is out of range: frame ids must be 0 ... 30"
        ):
            collapse_ctc(np.array([*frames[:k], 40, *frames[k + 1 :]], dtype=dtype), 0, vocab_size=31)
        if dtype not in ("uint32", "uint64"):
            bad = np.array(frames, dtype=dtype)
            bad[k] = -4
            with pytest.raises(InvalidIdError, match=f"frame id -4 at frame {k} is out of range"):
                collapse_ctc(bad, 0)
    huge = np.array(frames, dtype=np.uint64)
    huge[-1] = 2**64 - 1
    with pytest.raises(InvalidIdError, match=f"frame id {2**64 - 1} at frame {len(frames) - 1} is out of range"):
        collapse_ctc(huge, 0)


def test_exported_from_the_package():
    assert oasr_tok.collapse_ctc is collapse_ctc
