"""The three contracts of DESIGN.md, for every kind and every case in tests/cases/.

1. pieces: "".join(token_pieces(ids)) == decode(ids), one piece per id, "" for special ids.
2. streaming: any split keeps state["text"] == decode(ids so far); deltas + flush == decode.
3. no retraction: what was emitted is a prefix of the decode of every continuation.
"""

from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cases import KindCase, all_cases
from strategies import id_streams, splits

CASES = all_cases()
IDS = [case.name for case in CASES]


def _inputs(case: KindCase):
    return case.inputs()


def _stream(tok, chunks, state=None):
    state = {} if state is None else state
    deltas = []
    for chunk in chunks:
        deltas.append(tok.decode_incremental(chunk, state))
    return state, deltas


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_pieces_concatenate_to_decode(case, data):
    tok, interesting, realistic = _inputs(case)
    ids = data.draw(id_streams(tok, interesting, realistic))
    pieces = tok.token_pieces(ids)
    assert len(pieces) == len(ids)
    assert "".join(pieces) == tok.decode(ids)
    for token_id, piece in zip(ids, pieces):
        if token_id in tok.special_ids:
            assert piece == ""


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_decode_is_the_reference_decode(case, data):
    """decode is the compiled join for several kinds, so it is not itself the oracle: every case
    names its reference library's decode (equal on the same drawn ids), or says why it has none
    and which test compares it with its reference instead (docs/architecture.md)."""
    if case.reference is None:
        assert case.reference_note, f"{case.name} names no reference decode and does not say why"
        return
    tok, interesting, realistic = _inputs(case)
    reference = _reference_of(case)
    ids = data.draw(id_streams(tok, interesting, realistic, max_size=40), label="ids")
    assert tok.decode(ids) == reference(ids)


_REFERENCES: dict = {}


def _reference_of(case):
    if case.name not in _REFERENCES:
        _REFERENCES[case.name] = case.reference(case.tokenizer())
    return _REFERENCES[case.name]


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_any_split_streams_to_decode_without_retraction(case, data):
    tok, interesting, realistic = _inputs(case)
    ids = data.draw(id_streams(tok, interesting, realistic))
    chunks = data.draw(splits(ids))
    state: dict = {}
    emitted = ""
    seen: list[int] = []
    for chunk in chunks:
        delta = tok.decode_incremental(chunk, state)
        seen += chunk
        emitted += delta
        full = tok.decode(seen)
        assert state["text"] == full
        assert full.startswith(emitted)
    emitted += tok.decode_incremental([], state, final=True)
    assert emitted == tok.decode(ids)
    assert state["text"] == emitted


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_emitted_text_survives_every_continuation(case, data):
    tok, interesting, realistic = _inputs(case)
    ids = data.draw(id_streams(tok, interesting, realistic, max_size=20))
    more = data.draw(id_streams(tok, interesting, realistic, max_size=12))
    state, deltas = _stream(tok, [[i] for i in ids])
    emitted = "".join(deltas)
    assert tok.decode(ids + more).startswith(emitted)
    # Per token too: each prefix's emission survives the rest of the stream.
    running = ""
    for k, delta in enumerate(deltas):
        running += delta
        assert tok.decode(ids[: k + 1] + more).startswith(running)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_forked_state_continues_identically(case, data):
    """Beam search forks a stream with copy.deepcopy(state); both branches continue alone."""
    tok, interesting, realistic = _inputs(case)
    prefix = data.draw(id_streams(tok, interesting, realistic, max_size=15))
    left = data.draw(id_streams(tok, interesting, realistic, max_size=10))
    right = data.draw(id_streams(tok, interesting, realistic, max_size=10))
    state, deltas = _stream(tok, [prefix])
    fork = copy.deepcopy(state)
    out_left = deltas[0] + tok.decode_incremental(left, state) + tok.decode_incremental([], state, final=True)
    out_right = deltas[0] + tok.decode_incremental(right, fork) + tok.decode_incremental([], fork, final=True)
    assert out_left == tok.decode(prefix + left)
    assert out_right == tok.decode(prefix + right)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_shallow_copy_forks_a_state(case, data):
    """No kind mutates a value inside the state in place, so `dict(state)` forks a stream as
    cheaply as decode_hypothesis needs: the copy continues as if the original never went on."""
    tok, interesting, realistic = _inputs(case)
    prefix = data.draw(id_streams(tok, interesting, realistic, max_size=15))
    left = data.draw(id_streams(tok, interesting, realistic, max_size=10))
    right = data.draw(id_streams(tok, interesting, realistic, max_size=10))
    state, deltas = _stream(tok, [prefix])
    fork = dict(state)
    snapshot = copy.deepcopy(state)
    tok.decode_incremental(left, state)
    tok.decode_incremental([], state, final=True)
    assert fork == snapshot
    out_right = deltas[0] + tok.decode_incremental(right, fork) + tok.decode_incremental([], fork, final=True)
    assert out_right == tok.decode(prefix + right)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_split_of_short_streams(case):
    """Exhaustive: every way to cut a few short streams into chunks."""
    tok, interesting, realistic = _inputs(case)
    streams = [list(r[:6]) for r in realistic[:3]]
    streams.append(list(interesting[:6]))
    streams.append([0, tok.vocab_size - 1, *sorted(tok.special_ids)[:2], *interesting[-2:]])
    for ids in streams:
        n = len(ids)
        for mask in range(1 << max(n - 1, 0)):
            chunks, start = [], 0
            for k in range(1, n):
                if mask >> (k - 1) & 1:
                    chunks.append(ids[start:k])
                    start = k
            chunks.append(ids[start:])
            state, deltas = _stream(tok, chunks)
            assert state["text"] == tok.decode(ids)
            assert "".join(deltas) + tok.decode_incremental([], state, final=True) == tok.decode(ids)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bad_ids_raise_and_leave_state_unchanged(case):
    import oasr_tok

    tok, interesting, realistic = _inputs(case)
    good = (realistic[0][:5] if realistic and realistic[0] else []) or list(interesting[:3])
    state: dict = {}
    tok.decode_incremental(good, state)
    before = copy.deepcopy(state)
    for bad in ([tok.vocab_size], [-1], [good[0] if good else 0, 2**70], ["7"], [1.5], [None]):
        with pytest.raises(oasr_tok.InvalidIdError) as info:
            tok.decode_incremental(bad, state)
        assert isinstance(info.value, ValueError)
        assert state == before
        with pytest.raises(ValueError):
            tok.decode(bad)
        with pytest.raises(ValueError):
            tok.token_pieces(bad)
    message = str(pytest.raises(ValueError, tok.decode, [tok.vocab_size]).value)
    assert str(tok.vocab_size) in message and str(tok.vocab_size - 1) in message


#: Values a stream state's entries never hold: wrong types, negative and huge counts, foreign
#: tuples, and a text shorter than its recorded tail.
FORGED = [
    None,
    "x",
    b"\xff",
    -1,
    -(2**70),
    2**70,
    3,
    7,
    (),
    (None,) * 5,
    (1, 2, 3, 4, 5, 6, 7, 8),
    (False, False, b"\xe4" * 100, False, False),
    (True, True, "s", True, True),
    [1],
    {"a": 1},
]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forged_state_raises_stream_state_error_and_is_left_alone(case):
    """A state the library did not make gets a StreamStateError (or, when the forgery happens
    to be a state this kind could have made, decodes): never another exception, never a crash."""
    import oasr_tok

    tok, interesting, realistic = _inputs(case)
    ids = (realistic[0][:10] if realistic and realistic[0] else []) or list(interesting[:6]) or [0]
    state: dict = {}
    tok.decode_incremental(ids[:5], state)
    for key in [*state, "text"]:
        for value in FORGED:
            forged = {**state, key: value}
            before = copy.deepcopy(forged)
            try:
                tok.decode_incremental(ids[5:], forged)
                tok.decode_incremental([], forged, final=True)
            except oasr_tok.StreamStateError:
                assert forged == before
    with pytest.raises(oasr_tok.StreamStateError):
        tok.decode_incremental(ids[5:], {**state, "text": ""[:0], "_tail": 10**6})


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ids_as_tuple_array_and_numpy(case):
    import array

    import numpy as np

    tok, interesting, realistic = _inputs(case)
    ids = list(itertools.islice(itertools.chain(*realistic, interesting), 30))
    expected = tok.token_pieces(ids)
    assert tok.token_pieces(tuple(ids)) == expected
    assert tok.token_pieces(array.array("q", ids)) == expected
    assert tok.token_pieces(np.array(ids, dtype=np.int64)) == expected
    assert tok.token_pieces(np.array(ids, dtype=np.int32)) == expected
    assert tok.decode(np.array(ids, dtype=np.int64)) == tok.decode(ids)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_closed_stream_refuses_more_ids(case):
    import oasr_tok

    tok, interesting, realistic = _inputs(case)
    state: dict = {}
    tok.decode_incremental([], state, final=True)
    assert tok.decode_incremental([], state, final=True) == ""
    with pytest.raises(oasr_tok.StreamStateError) as info:
        tok.decode_incremental([tok.vocab_size - 1], state)
    # One wording for every kind (oasr_tok.errors.stream_closed_error), saying how to go on.
    assert str(info.value) == "this stream was closed with final=True; start a new state ({}) to decode more"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_decode_batch_is_decode_per_hypothesis(case):
    tok, interesting, realistic = _inputs(case)
    batch = [list(r) for r in realistic[:4]] + [list(interesting[:5]), []]
    assert tok.decode_batch(batch) == [tok.decode(ids) for ids in batch]
