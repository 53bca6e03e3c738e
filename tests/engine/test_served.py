"""oasr_tok._engine.served (a request's text in a serving engine's output step: what vLLM's
detokenizer shows, over a Stream) and oasr_tok._engine.token_table, without vLLM (the vLLM
tests are tests/integrations): the text is shown where tokenizers' own DecodeStream shows it
(run beside it), stop strings are vLLM's rule (serving_reference.vllm_stop), a step's streams go
through one batch, and the per-id tables check every id."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenizers.decoders import DecodeStream

import oasr_tok
from oasr_tok._engine.served import ServedText, step_served
from oasr_tok._engine.stream import held_bytes_of
from oasr_tok._engine.token_table import TokenTable
from oasr_tok.errors import InvalidIdError, StreamStateError

from paths import shared
from serving_reference import vllm_stop
from strategies import served_texts

STOP = object()  # the engine's own stop (vLLM's FinishReason.STOP)


def qwen3():
    return oasr_tok.load(shared("huggingface/qwen3"))


def _tok():
    tok = _tok.__dict__.get("tok")
    if tok is None:
        tok = _tok.tok = qwen3()
    return tok


def served(tok, prompt=(), request_id="req", **kwargs) -> ServedText:
    return ServedText(tok.new_stream(prefill=list(prompt) or None), tok, request_id, **kwargs)


def step(dets: list[ServedText], rows: list[list[int]], finish=None) -> list[str | None]:
    """One engine step through step_served (outputs and request states as vLLM's, duck-typed),
    then each request's update, as vLLM's loop calls it."""
    outputs = [
        SimpleNamespace(request_id=str(k), new_token_ids=row, finish_reason=finish, error=None, new_logprobs=None)
        for k, row in enumerate(rows)
    ]
    states = {str(k): SimpleNamespace(detokenizer=det, queue=None) for k, det in enumerate(dets)}
    step_served(outputs, states, STOP)
    return [det.update(out.new_token_ids, finish is STOP) for det, out in zip(dets, outputs)]


POOL_TEXTS = ("a 🫠 b", "𝔘𝔫𝔦", " 天", "é", "\ufffd", "x\ufffdy", "中文", "hello")


@st.composite
def garbage_ids(draw) -> list[int]:
    """Characters split and interleaved, invalid bytes, real U+FFFD, specials, any id."""
    tok = _tok()
    pool = [i for t in POOL_TEXTS for i in tok.encode(t)] + [151643, 151645]
    return draw(st.lists(st.one_of(st.sampled_from(pool), st.integers(0, tok.vocab_size - 1)), min_size=1, max_size=16))


@settings(deadline=None, max_examples=80)
@example(ids=[40666, 102], cut=0)  # " \xe5\xa4", "\xa9": DecodeStream holds the space with 天's bytes
@given(ids=garbage_ids(), cut=st.integers(0, 3))
def test_text_is_shown_where_decodestream_shows_it(ids, cut):
    """After each id, the text shown is what tokenizers' DecodeStream(ids=prompt) has shown by
    then (it shows nothing while the text ends inside a character or in U+FFFD)."""
    tok = _tok()
    cut = min(cut, len(ids) - 1)
    prompt = ids[:cut]
    if tok.decode(prompt).endswith("\ufffd") or not tok.decode(ids).startswith(tok.decode(prompt)):
        return  # a prompt ending inside a character: DecodeStream prints it again (a deliberate difference)
    det = served(tok, prompt)
    reference = DecodeStream(ids=prompt, skip_special_tokens=True)
    backend = tok.backend
    shown = expected = ""
    for token_id in ids[cut:]:
        step([det], [[token_id]])
        shown += det.get_next_output_text(False, True)
        expected += reference.step(backend, token_id) or ""
        assert shown == expected


def _texts_per_id(tok, prompt, ids) -> list[str]:
    """The shown text after each id, one id per step (DecodeStream's rule: checked above)."""
    det = served(tok, prompt)
    out = []
    for token_id in ids:
        step([det], [[token_id]])
        out.append(det.output_text)
    return out


@settings(deadline=None, max_examples=80)
@given(
    text=served_texts(min_size=2, max_size=24),
    data=st.data(),
    include=st.booleans(),
    min_tokens=st.sampled_from([0, 0, 1, 3]),
)
def test_stop_strings_are_vllms_rule(text, data, include, min_tokens):
    """Stop strings cut from the text (straddling tokens, several at once, inside min_tokens),
    the ids in steps of 1-4: the text, the stop string and the ids kept are vLLM's rule's over the
    text each id shows."""
    tok = _tok()
    ids = tok.encode(text)
    if len(ids) < 2:
        return
    texts = _texts_per_id(tok, [], ids)
    full = texts[-1]
    stops = []
    for _ in range(data.draw(st.integers(1, 3))):
        if full and data.draw(st.booleans()):
            start = data.draw(st.integers(0, len(full) - 1))
            stops.append(full[start : start + data.draw(st.integers(1, 5))])
        else:
            stops.append(data.draw(served_texts(min_size=1, max_size=2)))
    stops = [s for s in stops if s]
    if not stops:
        return
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    buffer = max(len(s) for s in stops) - 1 if not include else 0
    det = served(tok, stops=stops, include_stop=include, min_tokens=min_tokens, stop_buffer_length=buffer)
    at, k, found = 0, 0, None
    while at < len(ids) and found is None:
        row = ids[at : at + sizes[k % len(sizes)]]
        found = step([det], [row])[0]
        at += len(row)
        k += 1
    expected_text, expected_stop, token, _ = vllm_stop(texts, stops, include, min_tokens)
    assert found == expected_stop
    assert det.output_text == expected_text
    assert det.token_ids == (ids if token is None else ids[: token + 1])


def test_the_engines_own_stop_id_is_not_shown():
    tok = _tok()
    ids = tok.encode("one two") + [151645]
    for include, shown in ((False, "one two"), (True, "one two")):
        det = served(tok, include_stop=include)
        assert step([det], [ids], finish=STOP) == [None]
        assert det.output_text == shown  # (skip_special_tokens: <|im_end|> renders nothing)
        assert det.token_ids == ids
    shows = tok.with_specials()
    det = ServedText(shows.new_stream(), shows, "req", include_stop=True)
    step([det], [ids], finish=STOP)
    assert det.output_text == "one two<|im_end|>"


def test_a_finished_request_shows_no_unfinished_character():
    """At the end, the flush's U+FFFD of a character the ids left unfinished is not shown (vLLM
    never shows it), nor the text DecodeStream held with it."""
    tok = _tok()
    ids = tok.encode("ab 🫠")[:-1]  # 🫠's last byte missing
    det = served(tok)
    step([det], [ids[:-1]])
    step([det], [ids[-1:]], finish="length")
    assert det.get_next_output_text(True, False) == "ab"


def test_the_stop_buffer_is_held_back_until_the_end():
    tok = _tok()
    ids = tok.encode("hello wonderful world")
    det = served(tok, stops=["world!"], stop_buffer_length=5)
    pieces = []
    for token_id in ids:
        step([det], [[token_id]])
        pieces.append(det.get_next_output_text(False, True))
    assert "".join(pieces) == "hello wonderful world"[:-5]
    assert det.get_next_output_text(False, False) == "hello wonderful world"[:-5]
    assert det.get_next_output_text(True, True) == "world"[-5:]
    assert det.get_next_output_text(True, False) == "hello wonderful world"


def test_added_tokens_after_added_tokens_are_their_content():
    tok = _tok().with_specials()
    ids = [151644, 151645, 151644]
    det = ServedText(tok.new_stream(), tok, "req", added={151644: "<A>", 151645: "<B>"})
    step([det], [ids])
    assert det.output_text == "<|im_start|><B><A>"


def test_one_batch_per_step_and_per_id_position(monkeypatch):
    tok = _tok()
    calls = []
    original = type(tok).decode_incremental_batch

    def counting(self, new_ids, states, final=False, **kwargs):
        calls.append([[i] if isinstance(i, int) else list(i) for i in new_ids])  # (one id a stream: a 1-D buffer)
        return original(self, new_ids, states, final, **kwargs)

    monkeypatch.setattr(type(tok), "decode_incremental_batch", counting)
    dets = [served(tok) for _ in range(5)]
    step(dets, [[1], [2], [3], [4], [5]])
    assert calls == [[[1], [2], [3], [4], [5]]]
    calls.clear()
    step(dets, [[1, 2], [3], [], [4, 5, 6], [7]])
    assert calls == [[[1], [3], [4], [7]], [[2], [5]], [[6]]]


def test_a_bad_id_names_the_request_and_moves_no_stream():
    tok = _tok()
    dets = [served(tok, request_id=f"req-{k}") for k in range(3)]
    ids = tok.encode("hello there")
    with pytest.raises(InvalidIdError, match="request 'req-1'.*151669"):
        outputs = [
            SimpleNamespace(request_id=str(k), new_token_ids=row, finish_reason=None, error=None, new_logprobs=None)
            for k, row in enumerate([ids, [tok.vocab_size], ids])
        ]
        states = {str(k): SimpleNamespace(detokenizer=d, queue=None) for k, d in enumerate(dets)}
        step_served(outputs, states, STOP)
    for det in dets:  # nothing moved: the same step again, good, gives what it gives
        assert det.update(ids, False) is None
        assert det.output_text == "hello there"


def test_a_bool_or_a_numpy_id_is_read_as_the_kind_reads_it():
    tok = _tok()
    det = served(tok, request_id="req-b")
    with pytest.raises(oasr_tok.NonIntegerIdError, match="req-b"):
        step([det], [[True]])
    det = served(tok)
    step([det], [[np.int64(tok.encode("hi")[0])]])
    assert det.output_text == "hi"


def test_an_update_that_is_not_the_steps_is_refused():
    tok = _tok()
    det = served(tok)
    step_served(
        [SimpleNamespace(request_id="r", new_token_ids=[1, 2], finish_reason=None, error=None, new_logprobs=None)],
        {"r": SimpleNamespace(detokenizer=det, queue=None)},
        STOP,
    )
    with pytest.raises(StreamStateError, match="did not take"):
        det.update([9], False)


def test_held_bytes():
    tok = _tok()
    stream = tok.new_stream()
    first, second = tok.encode(" 天")
    stream.feed([first])
    assert stream.held_bytes == 2
    assert held_bytes_of([stream, tok.new_stream()]) == b"\x01\x00"
    stream.feed([second])
    assert stream.held_bytes == 0
    with pytest.raises(StreamStateError, match="not a Stream"):
        held_bytes_of([stream, {}])


def test_piece_bytes_are_each_ids_own():
    tok = _tok().with_specials()
    raw = tok._table.piece_bytes()
    assert len(raw) == tok.vocab_size
    ids = tok.encode("a 🫠 café<|im_end|>")
    assert b"".join(raw[i] for i in ids) == "a 🫠 café<|im_end|>".encode()
    mistral = oasr_tok.load(shared("huggingface/mistral-7b"))
    table = mistral._table.piece_bytes()
    assert table[mistral.piece_to_id("<0xE4>")] == b"\xe4"
    assert table[mistral.piece_to_id("\u2581Hello")] == b" Hello"
    assert table[1] == b""  # <s>: skipped by this view


# -- the token table ------------------------------------------------------------------------------


def test_a_token_table_makes_each_string_once():
    asked = []

    def fill(ids):
        asked.append(list(ids))
        return [f"<{i}>" + ("\ufffd" if i % 2 else "") for i in ids]

    table = TokenTable(10, fill)
    assert table.size == 10
    assert table.strings([3, 1, 3]) == ["<3>\ufffd", "<1>\ufffd", "<3>\ufffd"]
    assert table.strings(np.array([3, 4])) == ["<3>\ufffd", "<4>"]
    assert asked == [[1, 3], [4]]
    grid = np.array([[4, 3], [4, 4]], dtype=np.int64)
    assert table.rows([grid, grid.astype(np.int32), [[1], [2, 3]]]) == [
        ([["<4>", "<3>\ufffd"], ["<4>", "<4>"]], b"\x01\x00"),
        ([["<4>", "<3>\ufffd"], ["<4>", "<4>"]], b"\x01\x00"),
        ([["<1>\ufffd"], ["<2>", "<3>\ufffd"]], b"\x01\x01"),
    ]
    assert table.fffd_positions([1, 2, 4, 3]) == [0, 3]
    assert table.rows([np.array([[7, 8]], dtype=np.uint8)]) == [([["<7>\ufffd", "<8>"]], b"\x01")]


def test_a_token_table_checks_every_id_first():
    table = TokenTable(4, lambda ids: [str(i) for i in ids])
    for bad in ([[1, 4]], np.array([[1, -1]]), np.array([[0, 9]], dtype=np.int32)):
        with pytest.raises(InvalidIdError):
            table.rows([np.array([[0, 1]]), bad])
    assert table.strings([0]) == ["0"]
    with pytest.raises(InvalidIdError):
        table.strings([5])
    with pytest.raises(InvalidIdError, match="3 dimensions"):
        table.rows([np.zeros((1, 1, 1), dtype=np.int64)])
    with pytest.raises(TypeError, match="not a str"):
        TokenTable(2, lambda ids: [b"x" for _ in ids]).strings([0])
    with pytest.raises(TypeError, match="list"):
        TokenTable(2, lambda ids: "x").strings([0])
    with pytest.raises(ValueError):
        TokenTable(-1, str)


class SlotOutput:
    """An output whose fields are slots (member descriptors, as vLLM's msgspec EngineCoreOutput
    has): step_served reads its fields, and a subclass's own, as getattr does."""

    __slots__ = ("request_id", "new_token_ids", "finish_reason", "error", "new_logprobs")

    def __init__(self, request_id, new_token_ids, finish_reason=None, error=None, new_logprobs=None):
        self.request_id, self.new_token_ids, self.finish_reason = request_id, new_token_ids, finish_reason
        self.error, self.new_logprobs = error, new_logprobs


class DoubledOutput(SlotOutput):
    """A subclass whose ids are a property: its ids are the property's, not the base's slot."""

    __slots__ = ()

    @property
    def new_token_ids(self):  # type: ignore[override]
        return self.doubled

    @new_token_ids.setter
    def new_token_ids(self, ids):
        self.doubled = ids + ids


DoubledOutput.doubled = SlotOutput.new_token_ids  # the base's slot, under another name


class LoudOutput(SlotOutput):
    """A subclass that reads its own attributes: read by getattr."""

    __slots__ = ("first",)

    def __init__(self, request_id, new_token_ids):
        super().__init__(request_id, new_token_ids)
        self.first = new_token_ids[:1]

    def __getattribute__(self, name):
        return object.__getattribute__(self, "first" if name == "new_token_ids" else name)


def test_outputs_with_slots_read_as_by_getattr():
    tok = _tok()
    ids = tok.encode("héllo 天 there")
    by_attr, by_slot, doubled, loud, firsts = (served(tok, request_id=k) for k in "abcde")
    for at in range(0, len(ids), 2):
        row = ids[at : at + 2]
        outputs = [
            SimpleNamespace(request_id="a", new_token_ids=row, finish_reason=None, error=None, new_logprobs=None),
            SlotOutput("b", row),
            DoubledOutput("c", row),
            LoudOutput("d", row),
            SimpleNamespace(request_id="e", new_token_ids=row[:1], finish_reason=None, error=None, new_logprobs=None),
        ]
        dets = (by_attr, by_slot, doubled, loud, firsts)
        states = {k: SimpleNamespace(detokenizer=d, queue=None) for k, d in zip("abcde", dets)}
        logprobs = step_served(outputs, states, STOP)
        assert logprobs is None
        for det, out in zip(dets, outputs):
            det.update(out.new_token_ids, False)
    assert by_attr.output_text == by_slot.output_text == tok.decode(ids)
    assert doubled.output_text == tok.decode([i for at in range(0, len(ids), 2) for i in ids[at : at + 2] * 2])
    assert loud.output_text == firsts.output_text != by_attr.output_text
    unset = SlotOutput.__new__(SlotOutput)  # a slot never set: getattr's own AttributeError
    with pytest.raises(AttributeError, match="request_id"):
        step_served([unset], {}, STOP)


def test_a_refused_step_leaves_every_request_as_it_was():
    tok = _tok()
    first, second = served(tok, request_id="one"), served(tok, request_id="two")
    ids = tok.encode("hello there")
    states = {"1": SimpleNamespace(detokenizer=first, queue=None), "2": SimpleNamespace(detokenizer=second, queue=None)}
    pending = ids[:1]
    step_served([SlotOutput("2", pending)], states, STOP)  # the second's text not taken
    with pytest.raises(StreamStateError, match="'two'.*did not take"):
        step_served([SlotOutput("1", ids[:1]), SlotOutput("2", ids[1:2])], states, STOP)
    second.update(pending, False)  # the second takes its step; the first never moved
    assert step([first, second], [ids[:1], ids[1:]]) == [None, None]
    assert first.output_text == tok.decode(ids[:1]) and second.output_text == tok.decode(ids)


# -- what step_served does of update and get_next_output_text ahead of vLLM's loop ----------------


def _reference_text(ids: list[int]) -> str:
    """tokenizers' own decode of Qwen3's ids (its Tokenizer loaded once)."""
    reference = _reference_text.__dict__.get("tokenizer")
    if reference is None:
        from tokenizers import Tokenizer

        reference = _reference_text.tokenizer = Tokenizer.from_file(str(shared("huggingface/qwen3/tokenizer.json")))
    return reference.decode(ids)


def test_an_update_with_another_stop_terminated_than_the_step_is_refused():
    """The step did update's work for the output's own finish reason; an update that says
    otherwise is refused, naming the request (it would take another text)."""
    tok = _tok()
    det = served(tok, request_id="req-s")
    row = tok.encode("hello there")[:1]
    step_served([SlotOutput("r", row)], {"r": SimpleNamespace(detokenizer=det, queue=None)}, STOP)
    with pytest.raises(StreamStateError, match="'req-s'.*stop_terminated"):
        det.update(row, True)
    assert det.update(row, False) is None
    assert det.output_text == _reference_text(row)


@pytest.mark.parametrize("taken", ["every step", "every other step", "cumulative between", "update outside a step"])
def test_deltas_made_in_the_step_are_the_texts_own(taken):
    """A delta step_served makes for get_next_output_text(False, True) is handed out only when it
    is still the text's next one: a step whose delta nobody took (vLLM's stream_interval), a
    cumulative call between, an update outside a step: each delta is the text's next one (the
    text is tokenizers' decode), and the deltas' concatenation the text itself."""
    tok = _tok()
    ids = tok.encode("hello there, wonderful world of streams and deltas")
    det = served(tok, stops=["never!"], stop_buffer_length=5)
    shown = []
    for k, token_id in enumerate(ids):
        if taken == "update outside a step" and k % 3 == 2:
            assert det.update([token_id], False) is None
        else:
            step([det], [[token_id]])
        if (taken == "every other step" and k % 2) or (taken == "update outside a step" and k % 3 == 1):
            continue
        if taken == "cumulative between" and k % 4 == 1:
            assert det.get_next_output_text(False, False) == _reference_text(ids[: k + 1])[:-5]
        shown.append(det.get_next_output_text(False, True))
        # each delta is what the text has beyond what was handed out, less the stop buffer
        assert "".join(shown) == _reference_text(ids[: k + 1])[:-5]
    step([det], [[]], finish="length")
    shown.append(det.get_next_output_text(True, True))
    assert "".join(shown) == _reference_text(ids) == det.output_text


class _ShadowedOutput(SlotOutput):
    """A slot's name taken over by a property: getattr reads the property, so must the step."""

    __slots__ = ()

    good = [0]

    @property
    def new_token_ids(self):
        return self.good


class _GuardedOutput(SlotOutput):
    """A class that reads its attributes its own way: the step must ask it."""

    __slots__ = ()

    def __getattribute__(self, name):
        if name == "request_id":
            return "0"
        return object.__getattribute__(self, name)


def test_outputs_are_read_as_getattr_reads_them_whatever_their_class():
    """step_served reads an output's slots itself where its class is a plain slotted one
    (EngineCoreOutput's case): what it reads is what getattr gives, for every class of a step,
    mixed, a slot shadowed by a property and a class with its own __getattribute__."""
    tok = _tok()
    ids = tok.encode("the café opens at nine")
    dets = [served(tok) for _ in range(4)]
    plain = [served(tok) for _ in range(4)]
    for at in range(len(ids)):
        outputs = [
            SlotOutput("0", ids[at : at + 1]),
            SimpleNamespace(
                request_id="1", new_token_ids=ids[at : at + 1], finish_reason=None, error=None, new_logprobs=None
            ),
            SlotOutput("2", ids[at : at + 1]),
            _GuardedOutput("unread", ids[at : at + 1]),  # its request_id is "0"'s: a second output for it
        ]
        states = {str(k): SimpleNamespace(detokenizer=d, queue=None) for k, d in enumerate(dets[:3])}
        with pytest.raises(StreamStateError, match="did not take"):
            step_served(outputs, states, STOP)  # "0" twice in a step: the guarded class was asked
        outputs.pop()
        step_served(outputs, states, STOP)
        for det, mirror, out in zip(dets, plain, outputs):
            assert det.update(out.new_token_ids, False) is None
            mirror.update(out.new_token_ids, False)
            assert det.output_text == mirror.output_text
    assert dets[0].output_text == dets[1].output_text == "the café opens at nine"
    shadowed = _ShadowedOutput.__new__(_ShadowedOutput)
    for name, value in [("request_id", "0"), ("finish_reason", None), ("error", None), ("new_logprobs", None)]:
        setattr(shadowed, name, value)
    SlotOutput.new_token_ids.__set__(shadowed, [999_999_999])  # its slot: a bad id; the property: a good one
    det = served(tok)
    step_served([shadowed], {"0": SimpleNamespace(detokenizer=det, queue=None)}, STOP)
    assert det.update(shadowed.good, False) is None and det.output_text == tok.decode([0])


def test_an_unset_slot_is_the_attribute_error_getattr_gives():
    out = SlotOutput("0", [])
    del out.new_token_ids
    with pytest.raises(AttributeError, match="new_token_ids"):
        step_served([out], {"0": SimpleNamespace(detokenizer=served(_tok()), queue=None)}, STOP)
