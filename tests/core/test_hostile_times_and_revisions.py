"""Word timings and revisions on hostile input: times compared exactly, ids outside int64, an
agreement beyond any history, a state that lost its record, times checked at once.

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import (
    InvalidIdError,
    StreamStateError,
    TimingError,
)

from hostile import small_table
from paths import shared

SHERPA = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")


def _words_tok():
    return oasr_tok.load(SHERPA)


OUTSIDE_INT64 = st.one_of(st.integers(min_value=2**63), st.integers(max_value=-(2**63) - 1))


@pytest.mark.parametrize(
    "starts, ends",
    [
        ([2**60 + 1, 2**60], None),  # decreasing above 2**53
        ([0, 2**53 + 1], [2**53 + 1, 2**53]),  # an end before its start
        ([Fraction(10**20 + 1, 10**20), Fraction(1)], None),  # Fractions a double equates
        ([time_ns := 1_700_000_000_123_456_789, time_ns - 1], None),  # time.time_ns() values
    ],
)
def test_time_order_is_exact(starts, ends):
    """Hostile input, issue 12, finding 14: time order is compared exactly."""
    tok = _words_tok()
    ids = [100, 101]
    with pytest.raises(TimingError):
        tok.word_timings(ids, starts, ends)


def test_exact_times_in_order_are_kept():
    """Hostile input, issue 12, finding 14: time order is compared exactly."""
    tok = _words_tok()
    ids = [100, 101]
    starts = [2**60, 2**60 + 1]
    words = tok.word_timings(ids, starts)
    assert [w.start for w in words][0] == 2**60


@given(big=OUTSIDE_INT64, where=st.integers(0, 5))
@example(big=2**63, where=1)
@example(big=-(2**63) - 1, where=1)
def test_decode_hypothesis_refuses_an_id_outside_int64(tmp_path_factory, big, where):
    """Hostile input, third round (issue 35), defect 2a: no silent wrong answers (an id outside
    int64)."""
    tok = small_table(tmp_path_factory.mktemp("t"))
    state: dict = {}
    tok.decode_hypothesis([3, 4, 5, 6, 7], state)
    before = copy.deepcopy(state)
    hypothesis = [3, 4, 5, 6, 7, 8]
    hypothesis[where] = big
    with pytest.raises(InvalidIdError, match=str(big)):
        tok.decode_hypothesis(hypothesis, state)
    assert state == before


def test_an_agreement_beyond_any_history_never_commits_before_the_end(tmp_path):
    """Hostile input, third round (issue 35), defect 2a: no silent wrong answers
    (agreement=2**63)."""
    tok = small_table(tmp_path)
    state: dict = {}
    for n in range(2, 8):
        assert tok.decode_hypothesis([3, 4, 5, 3, 6, 7][:n], state, agreement=2**63)[0] == ""
    committed, partial = tok.decode_hypothesis([3, 4, 5, 3, 6, 7], state, final=True, agreement=2**63)
    assert committed == tok.decode([3, 4, 5, 3, 6, 7]) and partial == ""


def test_decode_hypothesis_on_a_state_that_lost_its_record_is_refused(tmp_path):
    """Hostile input, third round (issue 35), defect 2d: no silent wrong answers (a state that
    lost its hypothesis record)."""
    tok = small_table(tmp_path)
    state: dict = {}
    for n in range(3, 9):
        tok.decode_hypothesis([3, 4, 5, 3, 6, 7, 3, 8][:n], state)
    assert state["committed"]
    del state["_hypothesis"]
    before = copy.deepcopy(state)
    with pytest.raises(StreamStateError, match="lost its record"):
        tok.decode_hypothesis([3, 4, 5, 3, 6, 7, 3, 8, 4], state)
    assert state == before


@pytest.mark.parametrize("times", [[0.0, math.nan, 1.0], [3.0, 2.0, 1.0], ["a", "b", "c"], [0.0, None, 1.0]])
def test_decode_hypothesis_checks_times_at_once(tmp_path, times):
    """Hostile input, third round (issue 35), defect 4: accepted or unclear (decode_hypothesis'
    times checked at once)."""
    tok = small_table(tmp_path)
    state: dict = {}
    with pytest.raises(TimingError):
        tok.decode_hypothesis([3, 4, 5], state, times=times)
    assert state == {}
