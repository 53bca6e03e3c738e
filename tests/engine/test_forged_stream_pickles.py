"""Forged Stream and Revisions pickles, and refused batches (the fifth hostile-input campaign's
findings H1-H4, each test naming its finding). A forged pickle is made as a sender would make it:
the reduce tuples of a real stream with one field changed, pickled to bytes (`_forged`); the same
tuples unchanged load and go on (the control that shows the forging itself is sound).

The rules the fixes state once (not per field): every counter read from a pickle is checked
for the range of the C field it lands in (_engine/travel.py's `count`); an envelope parser is an
EnvelopeParser whose fields have the types a new one of its class holds; the record's fields
agree with each other and with the stream's text (StreamRecord.check_against); the ticket's
fingerprint is the tokenizer's (_engine/travel.py's `arrive`); a check of a stream writes
nothing (a Stream's step of no ids is no step; a dict state's dry step runs on a copy)."""

from __future__ import annotations

import pickle

import pytest

import oasr_tok
from oasr_tok import StopMatch, Stream, StreamStateError
from oasr_tok._engine.travel import TokenizerTicket

from cases import all_cases

CASES = all_cases()
BY_NAME = {case.name: case for case in CASES}
ONE_PER_KIND = list({c.name.split("/")[0]: c for c in CASES}.values())
RECORD_FIELDS = ("stops", "keeps_stop", "pending", "emitted", "tokens", "prompt_rest", "closed", "stop", "envelope")
STREAM_FIELDS = ("ticket", "cursor", "settled", "inner", "record", "maker")


class _Reduced:
    """Pickles as the reduce tuple it is given: what a forger sends."""

    def __init__(self, function, args) -> None:
        self.reduced = (function, tuple(args))

    def __reduce__(self):
        return self.reduced


def _forged(stream: Stream, **changes) -> bytes:
    """The bytes of `stream`'s pickle with the named fields (of the stream or of its record)
    replaced."""
    function, args = stream.__reduce__()
    fields = dict(zip(STREAM_FIELDS, args))
    record_function, record_args = args[4].__reduce__()
    record = dict(zip(RECORD_FIELDS, record_args))
    for name, value in changes.items():
        assert name in fields or name in record, name
        (fields if name in fields else record)[name] = value
    if "record" not in changes:
        fields["record"] = _Reduced(record_function, [record[name] for name in RECORD_FIELDS])
    return pickle.dumps(_Reduced(function, [fields[name] for name in STREAM_FIELDS]))


def _ids(case, n: int = 12) -> list[int]:
    tok, interesting, realistic = case.inputs()
    ids = [i for row in realistic for i in row] or list(interesting)
    return ids[:n]


def _qwen3():
    return BY_NAME["huggingface/qwen3"].tokenizer()


def _stopped_stream(tok, text: str, stop: list[str]) -> Stream:
    stream = tok.new_stream(stop=stop)
    for token_id in tok.encode(text):
        if not stream.closed:
            stream.feed([token_id])
    return stream


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_the_unchanged_tuples_load_and_go_on(case):
    """The control of every forgery below: a stream's own reduce tuples, pickled through the
    forging helper, load to an equal stream that goes on with the same deltas."""
    tok = case.tokenizer()
    ids = _ids(case)
    stream = tok.new_stream(prefill=ids[:3], stop=["\u2603\u2603"])
    stream.feed(ids[3:7])
    moved = pickle.loads(_forged(stream))
    assert moved == stream
    assert moved.feed(ids[7:]) + moved.feed([], final=True) == stream.feed(ids[7:]) + stream.feed([], final=True)


# -- H1: fields of the wrong type or out of range -------------------------------------------------


#: A kind that streams through a PieceTable, one that keeps its own state dict, FunASR's machine.
THREE_ENGINES = [BY_NAME["huggingface/qwen3"], BY_NAME["wav2vec2/base-960h"], ONE_PER_KIND[1]]


@pytest.mark.parametrize("case", THREE_ENGINES, ids=[c.name for c in THREE_ENGINES])
@pytest.mark.parametrize("field", ["emitted", "tokens"])
@pytest.mark.parametrize("value", [2**63, 2**200, -1, 1.0, True, "3"])
def test_h1_a_counter_out_of_range_is_a_stream_state_error(case, field, value):
    """Campaign finding H1: a Stream pickle whose counters are >= 2**63 raised OverflowError (the
    C field's conversion), and a float or a bool went in; each is refused with StreamStateError
    (a counter is an int a Py_ssize_t holds)."""
    tok = case.tokenizer()
    stream = tok.new_stream()
    stream.feed(_ids(case)[:4])
    with pytest.raises(StreamStateError):
        pickle.loads(_forged(stream, **{field: value}))


@pytest.mark.parametrize("value", [5, "qwen3_asr", {"_mode": "body"}, object, [], 2**70])
def test_h1_an_envelope_field_of_the_wrong_type_is_a_stream_state_error(value):
    """Campaign finding H1: a Stream pickle whose envelope field is not an envelope parser went
    on to an AttributeError at the next step ('int' object has no attribute 'copy'); it is
    refused when it is unpickled, with StreamStateError."""
    tok = _qwen3()
    stream = tok.new_stream(envelope="qwen3_asr")
    stream.feed(tok.encode("language English<asr_text>hello"))
    with pytest.raises(StreamStateError, match="envelope parser"):
        pickle.loads(_forged(stream, envelope=value))
    plain = tok.new_stream()
    with pytest.raises(StreamStateError, match="envelope parser"):
        pickle.loads(_forged(plain, envelope=value))


@pytest.mark.parametrize(
    ("changed", "dropped"),
    [
        ({"_mode": 5}, ()),  # a field of another type
        ({"_head": None}, ()),
        ({"fields": []}, ()),
        ({"tags": "language"}, ()),
        ({"_started": 1}, ()),
        ({"nonsense": 1}, ()),  # a field no parser of its class has
        ({}, ("_mode",)),  # a field missing
        ({}, None),  # no fields at all
    ],
)
def test_h1_an_envelope_parsers_own_fields_are_checked(changed, dropped):
    """Campaign finding H1, the parser's side: the parser is pickled with its fields, and a
    field missing, of another type than a new parser of its class holds, or unknown is refused
    with StreamStateError (not an AttributeError or TypeError in a later step)."""
    tok = _qwen3()
    stream = tok.new_stream(envelope="qwen3_asr")
    stream.feed(tok.encode("language English<asr"))
    parser = stream.__reduce__()[1][4].envelope
    fields = parser.__getstate__()
    forged = {} if dropped is None else {k: v for k, v in {**fields, **changed}.items() if k not in dropped}
    with pytest.raises(StreamStateError):
        pickle.loads(_forged(stream, envelope=_Reduced(_parser_from, (type(parser), forged))))
    # The control: the parser's own fields load and go on.
    moved = pickle.loads(_forged(stream, envelope=_Reduced(_parser_from, (type(parser), fields))))
    assert moved.feed(tok.encode("_text> hi")) == stream.feed(tok.encode("_text> hi"))


def _parser_from(cls, fields):
    parser = cls.__new__(cls)
    parser.__setstate__(fields)
    return parser


@pytest.mark.parametrize("value", [2**63, 2**64 + 5, -1])
def test_h1_a_revisions_counter_out_of_range_is_a_stream_state_error(value):
    """Campaign finding H1, on Revisions: the committed-id count of a pickled hypothesis record
    >= 2**63 raised OverflowError converting to its C field; it is StreamStateError."""
    from oasr_tok._engine.revisions import HypothesisState

    tok = _qwen3()
    revisions = tok.new_revisions()
    ids = tok.encode("the quick brown fox jumps over the lazy dog")
    for k in range(2, len(ids)):
        tok.decode_hypothesis(ids[:k], revisions)
    function, args = revisions.__reduce__()
    record = args[2]["_hypothesis"]
    fields = list(record.__reduce__()[1])
    fields[0] = value
    state = {**args[2], "_hypothesis": _Reduced(HypothesisState, fields)}
    with pytest.raises(StreamStateError):
        pickle.loads(pickle.dumps(_Reduced(function, (args[0], args[1], state, args[3]))))


# -- H3: fields that pass their own checks but disagree --------------------------------------------


def test_h3_a_pending_text_decode_never_produced_is_refused():
    """Campaign finding H3: a stop-string start held back (`pending`) that is a prefix of a stop
    string (its own check) but not the end of the stream's text was printed by the flush; it is
    refused when the pickle is read, so it is never printed."""
    tok = _qwen3()
    held = _stopped_stream(tok, "hello th", ["the"])
    assert held.feed([]) == "" and held.text.endswith("th")
    moved = pickle.loads(_forged(held))  # the control: "th" ends its text
    assert moved.feed([], final=True) == held.fork().feed([], final=True) == "th"
    for pending in ("t", "th"):
        other = _stopped_stream(tok, "hello world", ["the"])  # holds nothing back
        with pytest.raises(StreamStateError, match="disagree"):
            pickle.loads(_forged(other, pending=pending))
    with pytest.raises(StreamStateError, match="holds back"):
        pickle.loads(_forged(held, pending="t"))


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_h3_a_held_text_that_is_not_the_end_of_the_text_on_every_kind(case):
    """Campaign finding H3 on every kind: a pending text that is a prefix of a stop string but
    not the end of the stream's text, or more output counted than the text holds."""
    tok = case.tokenizer()
    stream = tok.new_stream(stop=["\u2603\u2604"])
    stream.feed(_ids(case)[:6])
    with pytest.raises(StreamStateError, match="disagree"):
        pickle.loads(_forged(stream, pending="\u2603"))
    with pytest.raises(StreamStateError, match="disagree"):
        pickle.loads(_forged(stream, emitted=len(stream.text) + 1))


def test_h3_a_prompt_text_that_swallows_the_next_delta_is_refused():
    """Campaign finding H3: a prompt's held text (`prompt_rest`) forged to what the next ids
    print swallowed that output; it must be the text the decoder holds back, so it is refused."""
    tok = _qwen3()
    prompt = tok.encode("the quick brown")
    stream = tok.new_stream(prefill=prompt)
    after = stream.fork().feed(tok.encode(" fox jumps"))
    assert after == " fox jumps"
    for rest in (" fox", " fox jumps", " "):
        with pytest.raises(StreamStateError, match="prompt"):
            pickle.loads(_forged(stream, prompt_rest=rest))
    # A prompt that ends inside a character holds it: that held text, and only it, is accepted.
    split = tok.encode("你好龘")  # 龘 is two byte-level tokens
    assert len(split) == 3
    inside = tok.new_stream(prefill=split[:-1])
    rest = inside.__reduce__()[1][4].prompt_rest
    assert rest and pickle.loads(_forged(inside)) == inside
    with pytest.raises(StreamStateError, match="prompt"):
        pickle.loads(_forged(inside, prompt_rest=rest + "x"))


@pytest.mark.parametrize(
    "changes",
    [
        {"closed": False},  # a stop match on an open stream
        {"stop": StopMatch("nope", 2, 3)},  # not one of its stop strings
        {"stop": StopMatch("the", 99, 6)},  # at a token it never counted
        {"stop": StopMatch("the", 1, 0)},  # not where its output ends
        {"stop": StopMatch("the", -2, 6)},
        {"stop": StopMatch("the", 1.0, 6)},
        {"stop": StopMatch(5, 1, 6)},
    ],
)
def test_h3_a_stop_match_that_did_not_close_the_stream_is_refused(changes):
    """Campaign finding H3: a stop match with closed=False went on taking ids after its stop;
    every part of a stop match must agree with the record (closed, one of its stop strings, a
    counted token, where the output ends)."""
    tok = _qwen3()
    stopped = _stopped_stream(tok, "hello the end", ["the"])
    assert stopped.closed and stopped.stop is not None
    assert pickle.loads(_forged(stopped)).stop == stopped.stop  # the control
    with pytest.raises(StreamStateError, match="disagree"):
        pickle.loads(_forged(stopped, **changes))


def test_h3_a_stop_match_on_a_stream_that_never_stopped_is_refused():
    """Campaign finding H3: the stop match of another stream put on an open one."""
    tok = _qwen3()
    open_stream = _stopped_stream(tok, "hello there", ["zzz"])
    for closed in (False, True):
        with pytest.raises(StreamStateError, match="disagree"):
            pickle.loads(_forged(open_stream, stop=StopMatch("zzz", 0, 0), closed=closed))


def test_h3_a_closed_stream_that_still_holds_text_is_refused():
    """Campaign finding H3: a closed stream holds nothing back (its flush gave it out)."""
    tok = _qwen3()
    stream = _stopped_stream(tok, "hello th", ["the"])
    stream.feed([], final=True)
    with pytest.raises(StreamStateError, match="disagree"):
        pickle.loads(_forged(stream, pending="th"))


# -- H4: another tokenizer ----------------------------------------------------------------------------


def test_h4_a_stream_pickle_with_another_tokenizer_swapped_in_is_refused():
    """Campaign finding H4: a Stream pickle with another kind's tokenizer swapped in went on (a
    dict state was refused). The pickle records the fingerprint of the tokenizer that made it,
    and a tokenizer that travels with it must have that fingerprint."""
    tok = _qwen3()
    stream = tok.new_stream()
    stream.feed(tok.encode("hello world"))
    ticket = stream.__reduce__()[1][0]
    for other_name in ("sentencepiece/mistral-v1.model", "huggingface/qwen2-audio-like", "wav2vec2/base-960h"):
        other = BY_NAME[other_name].tokenizer()
        swapped = _Reduced(TokenizerTicket, (ticket.fingerprint, ticket.kind, None, other))
        with pytest.raises(StreamStateError, match="another"):
            pickle.loads(_forged(stream, ticket=swapped))
    # The very tokenizer sent along with the right fingerprint is the control.
    along = _Reduced(TokenizerTicket, (ticket.fingerprint, ticket.kind, None, tok))
    assert pickle.loads(_forged(stream, ticket=along)) == stream
    # Not a ticket at all (the tokenizer itself, as a stream pickled before tickets carried it).
    for not_a_ticket in (tok, None, "huggingface", (ticket.fingerprint, None)):
        with pytest.raises(StreamStateError, match="ticket"):
            pickle.loads(_forged(stream, ticket=not_a_ticket))


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_h4_a_ticket_swapped_for_another_streams_is_refused(case):
    """Campaign finding H4, the other half: the ticket of another tokenizer's stream put on this
    stream's state. The decoder state names the decoder that made it (a table's tag; a state
    dict's own "_tok"), so it does not go on on the tokenizer the swapped ticket names."""
    tok = case.tokenizer()
    stream = tok.new_stream()
    stream.feed(_ids(case)[:5])
    for other_case in ONE_PER_KIND:
        other = other_case.tokenizer()
        if other.fingerprint == tok.fingerprint:
            continue
        ticket = other.new_stream().__reduce__()[1][0]
        with pytest.raises(StreamStateError):
            pickle.loads(_forged(stream, ticket=ticket))
    for maker in (None, 5, "tag", 2**70):
        if stream.__reduce__()[1][5] is not None or maker is not None:
            with pytest.raises(StreamStateError):
                pickle.loads(_forged(stream, maker=maker))


def test_h4_a_revisions_pickle_with_another_tokenizer_swapped_in_is_refused():
    """Campaign finding H4, on Revisions: the same fingerprint check."""
    tok = _qwen3()
    revisions = tok.new_revisions()
    ids = tok.encode("hello world again")
    for k in range(1, len(ids) + 1):
        tok.decode_hypothesis(ids[:k], revisions)
    function, args = revisions.__reduce__()
    other = BY_NAME["huggingface/qwen2-audio-like"].tokenizer()
    swapped = _Reduced(TokenizerTicket, (args[0].fingerprint, args[0].kind, None, other))
    with pytest.raises(StreamStateError, match="another"):
        pickle.loads(pickle.dumps(_Reduced(function, (swapped, *args[1:]))))
    assert pickle.loads(pickle.dumps(revisions)) == revisions


# -- H2: a refused batch writes nothing ---------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_h2_a_refused_mixed_batch_leaves_every_stream_as_it_was(case):
    """Campaign finding H2: a decode_incremental_batch of Streams and a non-Stream is refused
    after a dry step of each Stream, and on wav2vec2 and the clean-spaces GGUF that dry step
    wrote their kind's state into a fresh stream. A check writes nothing: every Stream equals a
    fork taken before and pickles to the same bytes, and a dict state in the batch is as it was."""
    tok = case.tokenizer()
    ids = _ids(case, 8)
    fresh = tok.new_stream()
    fed = tok.new_stream(stop=["\u2603"])
    fed.feed(ids[:3])
    prompted = tok.new_stream(prefill=ids[:4])
    streams = [fresh, fed, prompted]
    forks = [s.fork() for s in streams]
    pickles = [pickle.dumps(s) for s in streams]
    state: dict = {}
    for bad in (5, "state", {"text": 5}):
        with pytest.raises(StreamStateError):
            tok.decode_incremental_batch([ids[4:5]] * 5, [*streams, state, bad])
        assert state == {}
        for stream, fork, before in zip(streams, forks, pickles):
            assert stream == fork
            assert pickle.dumps(stream) == before
    # The same streams then step as their forks do.
    assert tok.decode_incremental_batch([ids[4:6]] * 3, streams) == [f.feed(ids[4:6]) for f in forks]


def test_h2_a_stream_step_of_no_ids_writes_nothing():
    """Campaign finding H2's rule, on its own: feeding a Stream no ids without final is no step,
    on every kind whose streaming is its own (a state dict inside the Stream)."""
    for case in CASES:
        tok = case.tokenizer()
        stream = tok.new_stream()
        before = pickle.dumps(stream)
        assert stream.feed([]) == "" and tok.decode_incremental([], stream) == ""
        assert pickle.dumps(stream) == before, case.name


def test_the_typed_errors_are_stream_state_errors():
    assert issubclass(oasr_tok.TokenizerNotHeldError, StreamStateError)
    assert issubclass(oasr_tok.TokenizerNotHeldError, LookupError)
