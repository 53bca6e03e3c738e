"""The server loop on every kind: streams primed from a prompt (only its tail read), stop
strings (vLLM's rule, held back so that no delta holds a possible start of one), and many
streams in one call, each exactly what its own decode_incremental gives."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import InvalidIdError, StreamStateError

from cases import all_cases
from serving_reference import continuation, vllm_stop
from strategies import id_streams, splits

CASES = all_cases()
IDS = [c.name for c in CASES]


def _feed(tok, state, ids, final=True) -> list[str]:
    """The deltas of `ids` fed one at a time (stopping where the stream stops), and the flush."""
    out = []
    for token_id in ids:
        if state.get("stop") is not None:
            break
        out.append(tok.decode_incremental([token_id], state))
    if final and state.get("stop") is None:
        out.append(tok.decode_incremental([], state, final=True))
    return out


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_a_prefilled_stream_emits_exactly_the_continuation(case, data):
    tok, interesting, realistic = case.inputs()
    prompt = data.draw(id_streams(tok, interesting, realistic, max_size=90), label="prompt")
    generated = data.draw(id_streams(tok, interesting, realistic, max_size=20), label="generated")
    state = tok.new_stream(prefill=prompt)
    chunks = data.draw(splits(generated))
    deltas = [tok.decode_incremental(chunk, state) for chunk in chunks]
    deltas.append(tok.decode_incremental([], state, final=True))
    assert "".join(deltas) == continuation(tok.decode, prompt, generated)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_stop_strings_follow_vllms_rule_and_no_delta_holds_a_possible_start(case, data):
    tok, interesting, realistic = case.inputs()
    ids = data.draw(id_streams(tok, interesting, realistic, max_size=40), label="ids")
    plain: dict = {}
    settled = []
    for token_id in ids:
        settled.append((settled[-1] if settled else "") + tok.decode_incremental([token_id], plain))
    text = tok.decode(ids)
    # Stop strings that occur (spanning one token or many), and ones that never do.
    stops = []
    for _ in range(data.draw(st.integers(1, 4))):
        if text and data.draw(st.booleans()):
            a = data.draw(st.integers(0, len(text) - 1))
            b = data.draw(st.integers(a + 1, min(len(text), a + 12)))
            stops.append(text[a:b])
        else:
            stops.append(data.draw(st.text(min_size=1, max_size=4)))
    include = data.draw(st.booleans())
    state = tok.new_stream(stop=stops, include_stop=include)
    deltas = _feed(tok, state, ids)
    expected, stop, token, at = vllm_stop(settled, stops, include)
    if stop is None:
        # No stop inside the settled text: the flush may still complete one (held text).
        if state["stop"] is None:
            assert "".join(deltas) == text
            return
        # The flush's text belongs to the last token (as token_pieces puts it there).
        expected, stop, token, at = vllm_stop([*settled[:-1], text], stops, include)
    assert "".join(deltas) == expected
    assert state["stop"] == oasr_tok.StopMatch(stop, token, at)
    # No delta before the last held a stop string's text that the stream then cut off.
    assert len("".join(deltas[:-1])) <= (at + len(stop) if include else at)


def test_a_stopped_stream_refuses_more_ids_and_is_left_as_it_was():
    tok = CASES[0].tokenizer()
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip()][:6]
    text = tok.decode(ids)
    state = tok.new_stream(stop=[text[len(text) // 2 :]])
    _feed(tok, state, ids, final=False)
    assert state["stop"] is not None
    before = copy.deepcopy(state)
    with pytest.raises(StreamStateError, match="stopped"):
        tok.decode_incremental(ids[:1], state)
    assert state == before
    assert tok.decode_incremental([], state, final=True) == ""


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_a_batch_is_each_streams_own_decode_incremental(case, data):
    tok, interesting, realistic = case.inputs()
    n = data.draw(st.integers(1, 5))
    streams = [data.draw(id_streams(tok, interesting, realistic, max_size=12)) for _ in range(n)]
    stops = [data.draw(st.sampled_from([None, ["a"], ["the", "。"]])) for _ in range(n)]
    # A plain {} or a stream new_stream made: with stop strings, a prompt's tail, or neither.
    kinds = [data.draw(st.sampled_from(["plain", "new_stream", "prefilled"])) for _ in range(n)]
    prompt = realistic[0][:7] if realistic else []

    def fresh(kind: str, stop):
        if kind == "plain" and not stop:
            return {}
        return tok.new_stream(prefill=prompt if kind == "prefilled" else None, stop=stop)

    batch_states = [fresh(kind, s) for kind, s in zip(kinds, stops)]
    loop_states = [fresh(kind, s) for kind, s in zip(kinds, stops)]
    width = data.draw(st.sampled_from([1, 2]))  # one id per stream and step (the compiled path), or two
    for step in range(0, max(map(len, streams)) + width, width):
        final = step >= max(map(len, streams))
        rows = [
            ([] if state.get("stop") is not None else ids[step : step + width])
            for ids, state in zip(streams, batch_states)
        ]
        got = tok.decode_incremental_batch(rows, batch_states, final)
        want = [tok.decode_incremental(row, state, final) for row, state in zip(rows, loop_states)]
        assert got == want
        assert batch_states == loop_states  # (text, stop matches, stream records: all of it)


def test_a_batch_takes_one_id_per_stream_or_a_padded_array():
    tok = CASES[0].tokenizer()
    ids = [i for i in range(tok.vocab_size) if tok.decode([i])][:8]
    states = [{} for _ in range(3)]
    step = tok.decode_incremental_batch(np.array(ids[:3], dtype=np.int32), states)
    assert step == [tok.decode_incremental([i], {}) for i in ids[:3]]
    padded = np.array([ids[3:6], ids[5:8], ids[2:5]], dtype=np.int64)
    states = [{} for _ in range(3)]
    out = tok.decode_incremental_batch(padded, states, lengths=[3, 1, 0])
    assert out == [
        tok.decode_incremental(ids[3:6], {}),
        tok.decode_incremental(ids[5:6], {}),
        tok.decode_incremental([], {}),
    ]


def test_a_bad_id_or_state_in_one_stream_names_it_and_leaves_every_state_as_it_was():
    tok = CASES[0].tokenizer()
    good = [i for i in range(tok.vocab_size) if tok.decode([i])][:4]
    states = [{}, {}, {}]
    tok.decode_incremental_batch([good[:2], good[1:3], good[2:4]], states)
    before = copy.deepcopy(states)
    with pytest.raises(InvalidIdError, match="stream 1"):
        tok.decode_incremental_batch([good[:1], [tok.vocab_size], good[:1]], states)
    assert states == before
    foreign: dict = {}
    other = next(c for c in CASES if c.name.split("/")[0] != CASES[0].name.split("/")[0]).tokenizer()
    other.decode_incremental([0, 1], foreign)
    mixed = [states[0], foreign, states[2]]
    before = copy.deepcopy(mixed)
    with pytest.raises(StreamStateError, match="stream 1"):
        tok.decode_incremental_batch([good[:1], good[:1], good[:1]], mixed)
    assert mixed == before
    closed = [{}, {}]
    tok.decode_incremental_batch([good[:1], good[:1]], closed, final=True)
    before = copy.deepcopy(closed)
    with pytest.raises(StreamStateError, match="stream 0"):
        tok.decode_incremental_batch([good[:1], []], closed)
    assert closed == before
    with pytest.raises(StreamStateError, match="2 rows of ids for 3 streams"):
        tok.decode_incremental_batch([good[:1], good[:1]], [{}, {}, {}])


def test_new_stream_checks_its_arguments():
    tok = CASES[0].tokenizer()
    for stop in ([""], [5], "x" if False else 5):
        with pytest.raises(StreamStateError):
            tok.new_stream(stop=stop)
    with pytest.raises(StreamStateError):
        tok.new_stream(include_stop="yes")
    with pytest.raises(InvalidIdError):
        tok.new_stream(prefill=[tok.vocab_size])


def test_one_state_for_two_streams_of_a_batch_is_refused():
    tok = CASES[0].tokenizer()
    good = [i for i in range(tok.vocab_size) if tok.decode([i])][:2]
    shared: dict = {}
    with pytest.raises(StreamStateError, match="two streams"):
        tok.decode_incremental_batch([good[:1], good[1:]], [shared, shared])
    assert shared == {}
    # Among many streams, wherever the two places are (the check is a set of addresses).
    rng = random.Random(5)
    for _ in range(20):
        states: list[dict] = [{} for _ in range(rng.randrange(2, 3000))]
        a, b = rng.sample(range(len(states)), 2)
        states[b] = states[a]
        with pytest.raises(StreamStateError, match="two streams"):
            tok.decode_incremental_batch([good[:1]] * len(states), states)
        assert all(state == {} for state in states)
    distinct: list[dict] = [{} for _ in range(3000)]
    assert tok.decode_incremental_batch([good[:1]] * 3000, distinct) == [tok.decode(good[:1])] * 3000


def test_one_stream_for_two_places_of_a_batch_is_refused_and_nothing_moves():
    """A batch of Streams finds a Stream given twice as it plans (it marks each planned Stream
    busy, so the second place finds it busy and one of the places before it): refused naming the
    second place, every Stream left as a fork taken before shows and free to step again; with
    dicts in the batch the up-front check of addresses finds it."""
    tok = CASES[0].tokenizer()
    good = [i for i in range(tok.vocab_size) if tok.decode([i])][:2]
    rng = random.Random(7)
    for size in (2, 3, 300, 3000):
        streams = [tok.new_stream(stop=["zz"]) for _ in range(size)]
        for stream in streams:
            stream.feed(good[:1])
        a, b = sorted(rng.sample(range(size), 2))
        places: list = list(streams)
        places[b] = streams[a]
        forks = [stream.fork() for stream in streams]
        with pytest.raises(StreamStateError, match=f"stream {b}: one state is given for two streams"):
            tok.decode_incremental_batch(np.array([good[1]] * size), places)
        assert [stream.text for stream in streams] == [fork.text for fork in forks]
        # (none left busy, each where its fork is)
        assert [stream.feed(good[1:]) for stream in streams] == [fork.feed(good[1:]) for fork in forks]
        mixed: list = [{}] + places
        with pytest.raises(StreamStateError, match="one state is given for two streams"):
            tok.decode_incremental_batch([good[1:]] * (size + 1), mixed)
        assert mixed[0] == {}


@pytest.mark.parametrize("how", ["fork", "copy", "deepcopy"])
def test_a_fork_of_a_stream_is_independent(how):
    """stream.fork() (and copy.copy, copy.deepcopy) copies a stream: both go on with the same
    deltas, and what one is fed changes nothing of the other. No reference count decides it."""
    tok = CASES[0].tokenizer()
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip()][:6]
    text = tok.decode(ids)
    state = tok.new_stream(stop=[text[-2:]])
    tok.decode_incremental(ids[:2], state)
    fork = {"fork": state.fork, "copy": lambda: copy.copy(state), "deepcopy": lambda: copy.deepcopy(state)}[how]()
    assert fork == state and fork is not state
    a = _feed(tok, state, ids[2:])
    assert fork != state and fork["stop"] is None  # the fork was not fed
    b = _feed(tok, fork, ids[2:])
    assert a == b and state["stop"] == fork["stop"] and state["stop"] is not None


@pytest.mark.parametrize("stop", [None, ["zz"]])
def test_a_bad_id_in_a_stream_of_new_stream_leaves_it_as_it_was(stop):
    tok = CASES[0].tokenizer()
    good = [i for i in range(tok.vocab_size) if tok.decode([i])][:3]
    state = tok.new_stream(stop=stop)
    tok.decode_incremental(good[:2], state)
    before = copy.deepcopy(state)
    for bad in ([tok.vocab_size], [good[0], -1], ["x"]):
        with pytest.raises(InvalidIdError):
            tok.decode_incremental(bad, state)
        assert state == before


def test_a_forged_stream_record_is_refused_or_harmless():
    """The compiled record (_engine/stream_record.pyx) types its fields, and a Stream's fields are not
    the caller's to write: a Stream is read-only, and a forged pickle is refused."""
    from oasr_tok._engine.stream import _stream_from_fields
    from oasr_tok._engine.stream_record import StreamRecord

    with pytest.raises(TypeError):
        StreamRecord(["x"], False, "")  # stops: a tuple
    with pytest.raises(TypeError):
        StreamRecord(("",), False, "")  # an empty stop string
    with pytest.raises(TypeError):
        StreamRecord((5,), False, "")
    record = StreamRecord(("x",), False, "")
    with pytest.raises(TypeError):
        record.pending = 5  # type: ignore[assignment]
    with pytest.raises(AttributeError):
        record.stops = ("y",)  # type: ignore[misc]
    tok = CASES[0].tokenizer()
    state = tok.new_stream(stop=["zz"])
    with pytest.raises(TypeError, match="read-only"):
        state["_srv"] = object()  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        del state["text"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="new_stream"):
        oasr_tok.Stream()
    fields = state.__reduce__()[1]
    for k, forged in [(1, (True, True, b"\xff\xff", False, False, False)), (1, "nope"), (2, 5), (4, object())]:
        bad = list(fields)
        bad[k] = forged
        with pytest.raises(StreamStateError):
            _stream_from_fields(*bad)
    assert _stream_from_fields(*fields) == state


class _CountedRow(list):
    """A row of ids that counts how often it is read (a list subclass is read as any sequence)."""

    reads = 0

    def __iter__(self):
        type(self).reads += 1
        return super().__iter__()


def test_a_batch_mixing_dicts_and_streams_reads_each_row_once_and_is_each_own_step():
    # Issue 51: the three batch paths read a mixed batch's ids three times; the one engine once.
    tok = CASES[0].tokenizer()
    good = [i for i in range(tok.vocab_size) if tok.decode([i])][:6]
    # A Stream first: the old batch of Streams read every row, found a dict and left them to the loop.
    batch_states = [tok.new_stream(), {}, tok.new_stream(stop=["zz"]), {}]
    loop_states = [tok.new_stream(), {}, tok.new_stream(stop=["zz"]), {}]
    for step in range(3):
        plain = [good[step : step + 2], good[step + 1 : step + 2], good[step : step + 1], []]
        _CountedRow.reads = 0
        got = tok.decode_incremental_batch([_CountedRow(row) for row in plain], batch_states)
        assert _CountedRow.reads == len(plain)
        assert got == [tok.decode_incremental(row, state) for row, state in zip(plain, loop_states)]
        assert batch_states == loop_states


def test_an_empty_batch_takes_no_ids():
    tok = CASES[0].tokenizer()
    assert tok.decode_incremental_batch([], []) == []
    assert tok.decode_incremental_batch(np.zeros(0, dtype=np.int64), []) == []
    with pytest.raises(StreamStateError, match="2 ids for 0 streams"):
        tok.decode_incremental_batch(np.array([1, 2], dtype=np.int64), [])
    with pytest.raises(StreamStateError, match="1 rows of ids for 0 streams"):
        tok.decode_incremental_batch([[1]], [])


def test_code_a_batch_runs_that_empties_the_callers_lists_changes_nothing_it_steps():
    # Compiled code trusts no caller: an id's __index__ (user code the batch runs while reading
    # the ids) empties the rows and states lists the caller passed; the batch steps its own copies.
    tok = CASES[0].tokenizer()
    good = [i for i in range(tok.vocab_size) if tok.decode([i])][:3]
    rows: list = []
    states: list = []

    class Meddling:
        def __index__(self) -> int:
            rows.clear()
            states.clear()
            return good[1]

    from oasr_tok._engine.batch import feed_batch

    rows[:] = [[good[0]], [Meddling()], [good[2]]]
    states[:] = [tok.new_stream(), {}, tok.new_stream()]
    kept = list(states)
    got = feed_batch(tok, rows, states, False, False)
    assert got == [tok.decode_incremental([i], {}) for i in good]
    assert [state.get("text") if isinstance(state, dict) else state.text for state in kept] == got
