"""Streams that own their state (oasr_tok.Stream, docs/decoding.md § The server loop), on every
kind: pickles continued in another process, batches with a fault injected at every position
(every stream deep-compared before and after), and Python code that replaces, closes and
re-feeds other streams from inside a batch, and a second thread doing the same. A Stream's
contracts (the same deltas and text as a dict state, exactly decode's text, forks, pickles) are
the contract suite's: oasr_tok.testing, run on every case by tests/testing/test_every_kind.py."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import InvalidIdError, NonIntegerIdError, Stream, StreamStateError
from oasr_tok.outputs import envelopes
from oasr_tok.outputs.envelopes import EnvelopeParser, register_envelope

from cases import all_cases
from paths import ROOT
from serving_reference import continuation, vllm_stop
from strategies import id_streams, splits

CASES = all_cases()
IDS = [c.name for c in CASES]
ONE_PER_KIND = list({c.name.split("/")[0]: c for c in CASES}.values())


def _registered(case) -> None:
    """A pickle by value rebuilds its tokenizer through the registry: the suite's plug-in kind
    registered as its package would register it (tests/core/test_plugin_kind.py unregisters it when
    it is done, in whichever worker it ran)."""
    if case.name.startswith("letters/"):
        import example_kind

        oasr_tok.register_kind(example_kind.KIND, replace=True)


_CONTINUE = """
import pickle, sys
import oasr_tok, example_kind  # the suite's plug-in kind, registered as its package would register it
oasr_tok.register_kind(example_kind.KIND, replace=True)
stream, ids = pickle.loads(sys.stdin.buffer.read())
out = [stream.feed([i]) for i in ids] + [stream.feed([], final=True)]
sys.stdout.buffer.write(pickle.dumps((out, stream.text)))
"""


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
def test_a_stream_moves_to_another_process_mid_generation(case):
    """Preemption or migration: a stream pickled mid-generation with its tokenizer by value
    (Travel(tokenizer="value")) goes on in a fresh process with exactly the deltas it would
    have given here (by reference and by spec: tests/engine/test_stream_travel.py)."""
    tok, interesting, realistic = case.inputs()
    ids = (realistic[0] if realistic else interesting)[:30]
    stream = tok.new_stream(prefill=ids[:4])
    for token_id in ids[4:12]:
        stream.feed([token_id])
    with oasr_tok.travelling(tokenizer="value"):
        payload = pickle.dumps((stream, ids[12:]))
    done = subprocess.run(
        [sys.executable, "-c", _CONTINUE], input=payload, capture_output=True, cwd=ROOT / "tests", check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    here = [stream.feed([i]) for i in ids[12:]] + [stream.feed([], final=True)]
    assert pickle.loads(done.stdout) == (here, stream.text)


def test_the_mapping_view_reads_what_a_dict_state_holds():
    tok = CASES[0].tokenizer()
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip()][:5]
    stream = tok.new_stream(stop=["zzz"])
    stream.feed(ids)
    assert dict(stream.items()) == {"text": tok.decode(ids), "stop": None}
    assert list(stream) == ["text", "stop"] and len(stream) == 2 and "text" in stream and "_s" not in stream
    assert stream.get("envelope", 5) == 5 and stream.get("text") == tok.decode(ids)
    with pytest.raises(KeyError):
        stream["_tok"]
    assert isinstance(stream, Stream) and stream.tokenizer is tok
    from collections.abc import Mapping

    assert isinstance(stream, Mapping) and not isinstance(stream, dict)


def test_the_vllm_rule_of_stop_strings_that_complete_at_one_token():
    """vLLM 0.34 (PR #49391): of the stop strings that complete at the same token, the one that
    ends earliest in the text; ties by the caller's order (the earlier rule took the first in the
    list: ` hel`)."""
    assert vllm_stop([" hello"], ["lo", "el"], False) == (" h", "el", 0, 2)
    tok = _case("huggingface/qwen3").tokenizer()
    ids = tok.encode(" hello")
    for stops, want in ((["lo", "el"], (" h", "el")), (["el", "lo"], (" h", "el")), (["llo", "ll"], (" he", "ll"))):
        for feed in ("whole", "one id a call"):
            stream = tok.new_stream(stop=stops)
            chunks = [ids] if feed == "whole" else [[i] for i in ids]
            out = "".join(stream.feed(c) for c in chunks if not stream.closed) + stream.feed([], final=True)
            assert (out, stream.stop.text) == want


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_with_include_stop_nothing_is_held_back(case, data):
    """include_stop=True: nothing shown can be taken back, so every delta is the plain stream's
    delta until the token that completes a stop string (vLLM holds nothing back either)."""
    tok, interesting, realistic = case.inputs()
    ids = data.draw(id_streams(tok, interesting, realistic, max_size=30))
    text = tok.decode(ids)
    stops = [text[a : a + 3] for a in (len(text) // 3, len(text) // 2) if text[a : a + 3]] or ["zz"]
    stream, plain = tok.new_stream(stop=stops, include_stop=True), {}
    for token_id in ids:
        got, want = stream.feed([token_id]), tok.decode_incremental([token_id], plain)
        if stream.stop is not None:
            assert want.startswith(got)
            break
        assert got == want


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
@settings(max_examples=30)
@given(data=st.data())
def test_held_is_what_text_shows_beyond_the_deltas(case, data):
    """stream.held is the end of stream.text that no delta gave out yet (an unfinished
    character as decode renders it, a tail the kind may rewrite, a possible start of a stop
    string): after every step, the deltas so far plus held are the text; '' once closed."""
    tok, interesting, realistic = case.inputs()
    ids = data.draw(id_streams(tok, interesting, realistic, max_size=30), label="ids")
    chunks = data.draw(splits(ids), label="chunks")
    text = tok.decode(ids)
    stops = data.draw(st.sampled_from([None, [text[len(text) // 2 : len(text) // 2 + 2] or "zz", "\n\n"]]))
    stream = tok.new_stream(stop=stops)
    out: list[str] = []
    for chunk in chunks:
        if stream.closed:
            break
        out.append(stream.feed(chunk))
        if stream.stop is None:
            assert "".join(out) + stream.held == stream.text
    if not stream.closed:
        stream.feed([], final=True)
    assert stream.held == ""


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
@settings(max_examples=20)
@given(data=st.data())
def test_holding_names_the_streams_whose_held_is_not_empty(case, data):
    """holding(streams), the server loop's one pass over a batch: the places whose held is not
    '' (plain, with stop strings, primed with a prompt, closed)."""
    from oasr_tok._engine.stream import holding

    tok, interesting, realistic = case.inputs()
    streams = []
    for _ in range(data.draw(st.integers(1, 6))):
        kind = data.draw(st.sampled_from(["plain", "stops", "prefilled", "closed"]))
        prompt = data.draw(id_streams(tok, interesting, realistic, max_size=8))
        if kind == "stops":
            stream = tok.new_stream(stop=["e", "the", "。", "\n"])
        else:
            stream = tok.new_stream(prefill=prompt if kind == "prefilled" else None)
        stream.feed(data.draw(id_streams(tok, interesting, realistic, max_size=12)), final=kind == "closed")
        streams.append(stream)
    assert holding(streams) == [k for k, s in enumerate(streams) if s.held]
    with pytest.raises(StreamStateError, match="stream 1: not a Stream"):
        holding([streams[0], {}])


# -- batches ---------------------------------------------------------------------------------


def _fresh(tok, kind: str, prompt: list[int]):
    return {
        "plain": lambda: tok.new_stream(),
        "stops": lambda: tok.new_stream(stop=["e", "the", "。"]),
        "prefilled": lambda: tok.new_stream(prefill=prompt, stop=["zz"]),
    }[kind]()


@pytest.mark.parametrize("case", CASES, ids=IDS)
@given(data=st.data())
def test_a_batch_of_streams_is_each_streams_own_feed(case, data):
    tok, interesting, realistic = case.inputs()
    n = data.draw(st.integers(1, 6))
    rows = [data.draw(id_streams(tok, interesting, realistic, max_size=12)) for _ in range(n)]
    kinds = [data.draw(st.sampled_from(["plain", "stops", "prefilled"])) for _ in range(n)]
    prompt = realistic[0][:9] if realistic else []
    batch = [_fresh(tok, kind, prompt) for kind in kinds]
    loop = [_fresh(tok, kind, prompt) for kind in kinds]
    width = data.draw(st.sampled_from([1, 2, 3]))
    as_array = width == 1 and data.draw(st.booleans())
    for step in range(0, max(map(len, rows)) + width, width):
        final = step >= max(map(len, rows))
        chunk = [[] if s.closed else r[step : step + width] for r, s in zip(rows, batch)]
        if as_array and not final and all(len(c) == 1 for c in chunk):
            got = tok.decode_incremental_batch(np.array([c[0] for c in chunk], dtype=np.int64), batch)
        else:
            got = tok.decode_incremental_batch(chunk, batch, final)
        assert got == [s.feed(c, final) for c, s in zip(chunk, loop)]
        assert batch == loop


_FAULTS = ["id past the vocabulary", "negative id", "float id", "closed stream", "foreign stream", "given twice"]


@pytest.mark.parametrize("case", ONE_PER_KIND, ids=[c.name for c in ONE_PER_KIND])
@pytest.mark.parametrize("fault", _FAULTS)
def test_a_fault_at_any_position_of_a_batch_moves_no_stream(case, fault):
    """Every stream is checked before any moves: a fault at position k raises a typed error
    that names stream k, and every stream of the batch is exactly what it was."""
    tok, interesting, realistic = case.inputs()
    good = [i for i in (realistic[0] if realistic else interesting) if tok.decode([i])][:4] or [0]
    other = next(c for c in CASES if c.name.split("/")[0] != case.name.split("/")[0]).tokenizer()
    n = 5
    for k in range(n):
        streams = [tok.new_stream(stop=["zz"]) if j % 2 else tok.new_stream() for j in range(n)]
        for s in streams:
            s.feed(good[:2])
        rows = [[good[2 % len(good)]] for _ in range(n)]
        if fault == "id past the vocabulary":
            rows[k] = [tok.vocab_size]
        elif fault == "negative id":
            rows[k] = [-1]
        elif fault == "float id":
            rows[k] = [1.5]
        elif fault == "closed stream":
            streams[k].feed([], final=True)
        elif fault == "foreign stream":
            streams[k] = other.new_stream()
        before = [s.fork() for s in streams]
        batch = list(streams)
        if fault == "given twice":
            batch[k] = batch[(k + 1) % n]
        expected = (InvalidIdError, NonIntegerIdError, StreamStateError)
        with pytest.raises(expected) as info:
            tok.decode_incremental_batch(rows, batch)
        if fault != "given twice":
            assert f"stream {k}" in str(info.value)
        assert streams == before


class _Meddler(EnvelopeParser):
    """An envelope parser whose Python code reaches into other streams of the batch it runs in."""

    name = "meddler"
    victims: list = []
    action = "feed"
    seen: list = []

    def text(self, delta: str, final: bool) -> str:
        for victim in _Meddler.victims:
            try:
                if _Meddler.action == "feed":
                    victim.feed([1])
                elif _Meddler.action == "close":
                    victim.feed([], final=True)
                elif _Meddler.action == "read":
                    victim.text  # noqa: B018
                elif _Meddler.action == "fork":
                    victim.fork()
                elif _Meddler.action == "raise":
                    raise RuntimeError("the parser failed")
            except StreamStateError as exc:
                _Meddler.seen.append(str(exc))
        return delta


@pytest.mark.parametrize("action", ["feed", "close", "read", "fork", "raise"])
def test_python_code_inside_a_batch_cannot_touch_its_streams(action):
    """An envelope parser (Python code the batch runs) that feeds, closes, reads or forks other
    streams of the same batch gets a typed error for each: a batch's streams are busy until it
    returns; a parser that raises rolls every stream of the batch back."""
    tok = CASES[0].tokenizer()
    register_envelope("meddler", _Meddler, replace=True)
    try:
        _meddle(tok, action)
    finally:
        envelopes._FORMATS.pop("meddler", None)  # (the formats list other tests check stays as shipped)


def _meddle(tok, action):
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip() and i not in tok.special_ids][:3]
    plain = [tok.new_stream() for _ in range(3)]
    meddler = tok.new_stream(envelope="meddler")
    streams = [plain[0], meddler, plain[1], plain[2]]
    _Meddler.victims = []
    for s in streams:
        s.feed(ids[:1])
    _Meddler.victims = plain
    _Meddler.seen = []
    _Meddler.action = action
    before = [s.fork() for s in streams]
    rows = [[ids[1]]] * 4
    try:
        if action == "raise":
            with pytest.raises(RuntimeError, match="the parser failed"):
                tok.decode_incremental_batch(rows, streams)
            assert streams == before
            return
        out = tok.decode_incremental_batch(rows, streams)
    finally:
        _Meddler.victims = []
    step = tok.decode(ids[:2])[len(tok.decode(ids[:1])) :]
    assert out[0] == out[2] == out[3] == step
    assert len(_Meddler.seen) == 3 and all("being stepped" in m for m in _Meddler.seen)
    # Every stream moved once, as the batch stepped it, and nothing else.
    assert [s.text for s in plain] == [tok.decode(ids[:2])] * 3


def test_a_second_thread_meddling_with_a_batch_gets_typed_errors_only():
    """While batches run in one thread, another feeds, forks, reads and pickles the same streams:
    either its call runs between batches or it gets StreamStateError; the interpreter survives
    and every stream's text is decode's of what it was fed."""
    tok = CASES[0].tokenizer()
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip()][:50]
    streams = [tok.new_stream() for _ in range(256)]
    fed = [[] for _ in streams]
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def meddle():
        k = 0
        while not stop.is_set():
            s = streams[k % len(streams)]
            try:
                op = k % 4
                if op == 0:
                    with lock:
                        s.feed([ids[k % len(ids)]])
                        fed[k % len(streams)].append(ids[k % len(ids)])
                elif op == 1:
                    s.fork()
                elif op == 2:
                    s.text  # noqa: B018
                else:
                    pickle.dumps(s)
            except StreamStateError as exc:
                assert "being stepped" in str(exc)
            except BaseException as exc:  # pragma: no cover - the failure this test looks for
                errors.append(exc)
            k += 7

    thread = threading.Thread(target=meddle)
    thread.start()
    try:
        for t in range(200):
            step = [[ids[(t + j) % len(ids)]] for j in range(len(streams))]
            with lock:
                tok.decode_incremental_batch(step, streams)
                for j, row in enumerate(step):
                    fed[j] += row
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert [s.text for s in streams] == [tok.decode(f) for f in fed]


# -- prompts: read back as far as a rule needs (issue 44's G2 and G4) -----------------------------


def _case(name: str):
    found = [c for c in CASES if c.name == name]
    if not found:
        pytest.skip(f"{name} is not among this run's cases (its file is not here)")
    return found[0]


@example(run=81)  # a tail of 64 starts inside a character: U+FFFD for all of it before
@given(run=st.integers(60, 140))
@settings(max_examples=10, deadline=None)
def test_a_prompt_ending_in_a_long_bytefallback_run_continues_it(run):
    """G2: Mistral-7B spells CJK it has no piece for in <0xNN> byte pieces; a prompt that ends in
    a run longer than the 64-id tail (22+ such characters) was read from inside the run, which
    ByteFallback then rendered as U+FFFD. The continuation is decode's."""
    tok = _case("huggingface/mistral-7b").tokenizer()
    text = "㐀㐁㐂㐃㐄㐅㐆㐇㐈㐉" * 6
    ids = [i for i in tok.encode(text) if i not in tok.special_ids]
    byte_ids = [i for i in ids if tok.id_to_piece(i).startswith("<0x")]
    assert len(byte_ids) > 100, "the text must be spelled in byte pieces"
    # (the run ends on a whole character: ids[0] is "▁", each character three byte pieces)
    prompt, generated = ids[:run], ids[run : 1 + 3 * ((run + 11) // 3)]
    stream = tok.new_stream(prefill=prompt)
    out = "".join(stream.feed([i]) for i in generated) + stream.feed([], final=True)
    assert out == continuation(tok.decode, prompt, generated)
    assert any(ch in text for ch in out)  # the characters the run spells, not U+FFFD for all of it


def test_a_whisper_prompt_block_that_began_long_ago_stays_unprinted():
    """G4: a prompt ending inside a <|startofprev|> block that began more than 64 ids back: the
    block's text is never printed, as decode drops it."""
    tok = _case("whisper/faster-whisper-base").tokenizer()
    prev = tok.encode(" earlier words of the previous window" * 20)
    sot_prev = tok.piece_to_id("<|startofprev|>")
    prompt = [sot_prev, *prev]
    assert len(prompt) > 100
    more = tok.encode(" still the previous text")
    stream = tok.new_stream(prefill=prompt)
    out = "".join(stream.feed([i]) for i in more) + stream.feed([], final=True)
    assert out == continuation(tok.decode, prompt, more) == ""
    sot = tok.piece_to_id("<|startoftranscript|>")
    stream = tok.new_stream(prefill=prompt)
    spoken = tok.encode(" hello there")
    out = "".join(stream.feed([i]) for i in [sot, *spoken]) + stream.feed([], final=True)
    assert out == continuation(tok.decode, prompt, [sot, *spoken]) == tok.decode(spoken)


# -- revisions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
@settings(max_examples=20)
@given(data=st.data())
def test_new_revisions_is_decode_hypothesis_on_a_dict(case, data):
    tok, interesting, realistic = case.inputs()
    _registered(case)
    base = data.draw(id_streams(tok, interesting, realistic, max_size=25))
    revisions, state = tok.new_revisions(agreement=2), {}
    for k in range(0, len(base) + 1, 3):
        hypothesis = base[:k] + data.draw(st.lists(st.sampled_from(base or [0]), max_size=3))
        assert tok.decode_hypothesis(hypothesis, revisions) == tok.decode_hypothesis(hypothesis, state)
        assert revisions.committed == revisions["committed"] == state["committed"]
    copied = copy.deepcopy(revisions)
    assert tok.decode_hypothesis(base, revisions, final=True) == tok.decode_hypothesis(base, state, final=True)
    assert revisions.committed == state["committed"] == tok.decode(base)
    assert pickle.loads(pickle.dumps(copied)) == copied


def test_new_revisions_checks_its_agreement():
    tok = CASES[0].tokenizer()
    with pytest.raises(StreamStateError):
        tok.new_revisions(agreement=0)
    revisions = tok.new_revisions(agreement=3)
    with pytest.raises(StreamStateError, match="agreement=3"):
        tok.decode_hypothesis([1], revisions, agreement=2)


def test_a_parser_that_feeds_its_own_stream_gets_a_typed_error():
    """Re-entering a stream from inside its own step (its envelope parser feeding it) is refused:
    a stream is busy while it steps, so nothing interleaves with a step half done."""
    tok = CASES[0].tokenizer()
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip() and i not in tok.special_ids][:3]

    class Reentrant(EnvelopeParser):
        name = "reentrant"
        target = None
        seen: list = []

        def text(self, delta, final):
            try:
                Reentrant.target.feed([ids[0]])
            except StreamStateError as exc:
                Reentrant.seen.append(str(exc))
            return delta

    register_envelope("reentrant", Reentrant, replace=True)
    try:
        stream = tok.new_stream(envelope="reentrant")
    finally:
        envelopes._FORMATS.pop("reentrant", None)
    Reentrant.target = stream
    assert stream.feed(ids[:1]) == tok.decode(ids[:1])
    assert Reentrant.seen and "being stepped by another call" in Reentrant.seen[0]
    assert stream.text == tok.decode(ids[:1])
