"""Streams (and Revisions) that travel to a fresh process mid-generation (docs/scale.md § Streams
that travel): moved mid-hold (a byte sequence or another held tail), mid-stop-hold, mid-envelope
and right after a prefill, to a process that loaded the same files (by reference: the stream's
state only), to one that did not (the tokenizer by value, or by spec: where to load it from),
and to one that holds only another tokenizer (refused by reference; by value it brings its own,
never decodes with the other). The oracle is the same stream continued here, unmoved: every
delta, the stop match and the text must be the ones it gives; with no rules, the deltas joined
are decode(all ids) (contract 2).

One child process per receiving situation serves every case (each message loaded on its own, so
a refusal is a result, not a dead child); the cases are one per kind and the real files the issue
names (Qwen3, Whisper large-v3, Mistral's SentencePiece model, llama.cpp's Qwen2 GGUF vocabulary).
In-process, every contract case moves without its text."""

from __future__ import annotations

import functools
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import Stream, StreamStateError, TokenizerNotHeldError, Travel

from cases import all_cases
from paths import ROOT
from strategies import id_streams

CASES = all_cases()
BY_NAME = {case.name: case for case in CASES}
REAL = ["huggingface/qwen3", "whisper/large-v3", "sentencepiece/mistral-v1.model", "gguf/ggml-vocab-qwen2"]
MOVED = sorted({c.name.split("/")[0]: c.name for c in CASES}.values()) + REAL
QWEN3 = "huggingface/qwen3"
OTHER = "huggingface/qwen2-audio-like"  # what the "holds only another" process holds: Qwen's kind, other files

# The receiving process: loads the named cases' tokenizers (the same files), then continues each
# message one id a call and flushes; a message it cannot load is reported with its error.
_RECEIVE = """
import pickle, sys
import oasr_tok, example_kind
oasr_tok.register_kind(example_kind.KIND, replace=True)
from cases import all_cases
names = pickle.load(sys.stdin.buffer)
held = [case.tokenizer() for case in all_cases() if case.name in names]
out = {}
for label, blob, rest in pickle.load(sys.stdin.buffer):
    try:
        stream = pickle.loads(blob)
    except oasr_tok.TokenizerError as exc:
        out[label] = ("refused", type(exc).__name__, str(exc))
        continue
    deltas = []
    for token_id in rest:
        if stream.closed:
            break
        deltas.append(stream.feed([token_id]))
    deltas.append(stream.feed([], final=True))
    try:
        text = stream.text
    except oasr_tok.StreamStateError:
        text = None
    fingerprint = stream.tokenizer.fingerprint
    out[label] = ("moved", deltas, stream.stop, text, fingerprint, any(stream.tokenizer is h for h in held))
sys.stdout.buffer.write(pickle.dumps(out))
"""


def _receive(names: list[str], messages: list[tuple[str, bytes, list[int]]]) -> dict:
    """What a fresh process that loaded the tokenizers of `names` makes of each message."""
    payload = pickle.dumps(names) + pickle.dumps(messages)
    done = subprocess.run(
        [sys.executable, "-c", _RECEIVE], input=payload, capture_output=True, cwd=ROOT / "tests", check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return pickle.loads(done.stdout)


def _continued(stream: Stream, rest: list[int], text: bool = True) -> tuple[list[str], object, str | None]:
    """The oracle: the stream itself continued here as the receiver continues its copy."""
    deltas = []
    for token_id in rest:
        if stream.closed:
            break
        deltas.append(stream.feed([token_id]))
    deltas.append(stream.feed([], final=True))
    return deltas, stream.stop, stream.text if text else None


#: Characters that byte-level and byte-fallback vocabularies spell with several ids.
RARE = "龘𠀋 🫠 naïve"


def _ids(case) -> list[int]:
    tok, interesting, realistic = case.inputs()
    ids = [i for row in realistic for i in row] or list(interesting) * 3
    if tok.supports_encode:
        try:
            ids = tok.encode(RARE) + ids
        except oasr_tok.TokenizerError:  # a vocabulary that cannot spell them
            pass
    return ids[:60]


def _record(stream: Stream):
    return stream.__reduce__()[1][4]


def _holds_bytes(stream: Stream) -> bool:
    cursor = stream.__reduce__()[1][1]
    return cursor is not None and bool(cursor[2])


def _fed(tok, ids, **options) -> tuple[Stream, str]:
    stream = tok.new_stream(**options)
    out = "".join(stream.feed([i]) for i in ids)
    return stream, out


@functools.cache
def scenarios(case) -> dict[str, tuple[Stream, list[int]]]:
    """label -> (a stream of the case, moved here; the ids it goes on with), for each situation the
    case's ids reach: mid-generation after a prompt, mid-hold (mid-byte-sequence where the kind
    holds bytes), mid-stop-hold, right after a prefill that holds text, mid-envelope (Qwen3).
    Made once per case: a test pickles these streams and continues forks of them, never them."""
    tok = case.tokenizer()
    ids = _ids(case)
    out: dict[str, tuple[Stream, list[int]]] = {}
    stream = tok.new_stream(prefill=ids[:4])
    for i in ids[4:12]:
        stream.feed([i])
    out["mid-generation"] = (stream, ids[12:40])
    # One stream fed an id at a time: where it holds bytes (or other text) back, and what it has
    # said before each id (where a stop string's start can be held).
    scratch, said, holding, saids = tok.new_stream(), "", None, [""]
    for k in range(1, len(ids) - 1):
        said += scratch.feed([ids[k - 1]])
        saids.append(said)
        if "mid-byte-sequence" not in out and _holds_bytes(scratch):
            out["mid-byte-sequence"] = (scratch.fork(), ids[k:])
        elif holding is None and scratch.text != said:
            holding = (scratch.fork(), ids[k:])
    if "mid-byte-sequence" not in out and holding is not None:
        out["mid-hold"] = holding
    whole = tok.decode(ids)
    for k in range(3, len(ids) - 2):
        said = saids[k]
        if len(said) < 2 or not said[-2:].strip() or said[-2:] in said[:-2]:
            continue
        stops = [said[-2:] + "\u2603"]  # its start is held back, and it never completes
        later = whole[len(said) - 1 : len(said) + 2]
        if len(later) == 3 and whole.find(later) == len(said) - 1:
            stops.append(later)  # completes after the move
        stream, _ = _fed(tok, ids[:k], stop=stops)
        if not stream.closed and _record(stream).pending:
            out["mid-stop-hold"] = (stream, ids[k:])
            break
    for m in range(2, len(ids) - 1):
        stream = tok.new_stream(prefill=ids[:m])
        if _record(stream).prompt_rest:
            out["after-prefill-holding"] = (stream, ids[m:])
            break
    out["after-prefill"] = (tok.new_stream(prefill=ids[:5]), ids[5:30])
    if case.name == QWEN3:
        spoken = tok.encode("language English<asr_text> hello 你好龘 world, the end")
        for k in (2, 5, 9, len(spoken) - 4):
            stream, _ = _fed(tok, spoken[:k], envelope="qwen3_asr", stop=["the e"])
            out[f"mid-envelope@{k}"] = (stream, spoken[k:])
    return out


def _messages(names: list[str], travel: Travel) -> tuple[list[tuple[str, bytes, list[int]]], dict]:
    """The pickled scenarios of `names` (as `travel` says) and, for each, what it gives here."""
    messages, expected = [], {}
    for name in names:
        for label, (stream, rest) in scenarios(BY_NAME[name]).items():
            key = f"{name} {label}"
            with oasr_tok.travelling(travel):
                messages.append((key, pickle.dumps(stream), rest))
            expected[key] = _continued(stream.fork(), rest), stream.tokenizer.fingerprint
    return messages, expected


def _check_moved(got: dict, expected: dict, text: bool) -> None:
    assert set(got) == set(expected)
    for key, ((deltas, stop, whole), fingerprint) in expected.items():
        outcome = got[key]
        assert outcome[0] == "moved", (key, outcome)
        _, got_deltas, got_stop, got_text, got_print, _ = outcome
        assert (got_deltas, got_stop, got_print) == (deltas, stop, fingerprint), key
        assert got_text == (whole if text else None), key


def test_the_scenarios_are_reached_on_the_real_files():
    """The moves are not vacuous: the real files reach a held byte sequence, a stop-string hold
    and a prompt that holds text; Qwen3 moves inside its envelope."""
    for name in REAL:
        labels = set(scenarios(BY_NAME[name]))
        assert {"mid-byte-sequence", "mid-stop-hold", "after-prefill"} <= labels, (name, labels)
    assert {"after-prefill-holding", "mid-envelope@2"} <= set(scenarios(BY_NAME[QWEN3]))


@pytest.mark.parametrize("text", [True, False], ids=["with-text", "state-only"])
def test_moved_by_reference_to_a_process_that_loaded_the_same_files(text):
    """The default (what a server expects): the message is the stream's state and its
    tokenizer's fingerprint; the receiver finds the tokenizer it loaded itself and goes on with
    exactly the deltas; without the text, the same deltas and no text to read."""
    messages, expected = _messages(MOVED, Travel(text=text))
    got = _receive(MOVED, messages)
    _check_moved(got, expected, text)
    assert all(outcome[5] for outcome in got.values())  # each found the receiver's own tokenizer


@pytest.mark.parametrize("mode", ["value", "spec"])
def test_moved_to_a_process_that_did_not_load_the_files(mode):
    """The user's choice where the receiver may not hold the tokenizer: it travels by value (its
    files in the message) or by spec (where to load it from); the receiver builds it once and
    goes on with exactly the deltas."""
    messages, expected = _messages(MOVED, Travel(tokenizer=mode))
    _check_moved(_receive([], messages), expected, True)


def test_by_reference_to_a_process_that_holds_none_of_them_is_refused():
    messages, _ = _messages(MOVED[:3] + [QWEN3], Travel())
    got = _receive([], messages)
    assert {outcome[:2] for outcome in got.values()} == {("refused", "TokenizerNotHeldError")}


def test_a_stream_of_one_tokenizer_never_decodes_with_another():
    """A stream of Qwen3's tokenizer sent to a process that holds only another tokenizer of the
    same kind: by reference it is refused (the fingerprints differ); by value it brings its own
    and goes on with Qwen3's deltas, never the other's."""
    stream, rest = scenarios(BY_NAME[QWEN3])["mid-byte-sequence"]
    expected = _continued(stream.fork(), rest)
    messages = []
    for mode in ("reference", "value"):
        with oasr_tok.travelling(tokenizer=mode):
            messages.append((mode, pickle.dumps(stream), rest))
    got = _receive([OTHER], messages)
    assert got["reference"][:2] == ("refused", "TokenizerNotHeldError")
    moved, deltas, stop, text, fingerprint, was_held = got["value"]
    assert (deltas, stop, text) == expected and fingerprint == stream.tokenizer.fingerprint and not was_held
    other = BY_NAME[OTHER].tokenizer()
    assert other.fingerprint != fingerprint and other.spec.kind == stream.tokenizer.spec.kind


def test_revisions_move_by_reference_and_by_value():
    """Revisions travel as a Stream does: by reference to a process that loaded the same files,
    with or without their committed text, and by value to one that did not."""
    tok = BY_NAME[QWEN3].tokenizer()
    ids = tok.encode("the quick brown fox jumps over the lazy dog, 你好龘世界, and then some more words")
    revisions = tok.new_revisions()
    for k in range(1, 14):
        tok.decode_hypothesis(ids[:k], revisions)
    code = (
        "import pickle, sys, oasr_tok\nfrom cases import all_cases\n"
        "names = pickle.load(sys.stdin.buffer)\n"
        "held = [c.tokenizer() for c in all_cases() if c.name in names]\n"
        "out = []\n"
        "for blob in pickle.load(sys.stdin.buffer):\n"
        "    r = pickle.loads(blob)\n"
        "    hyps = pickle.load(sys.stdin.buffer)\n"
        "    steps = [r.tokenizer.decode_hypothesis(h, r) for h in hyps]\n"
        "    steps.append(r.tokenizer.decode_hypothesis(hyps[-1], r, final=True))\n"
        "    try:\n        committed = r.committed\n    except oasr_tok.StreamStateError:\n        committed = None\n"
        "    out.append((steps, committed))\n"
        "sys.stdout.buffer.write(pickle.dumps(out))\n"
    )
    hypotheses = [ids[:k] for k in range(14, len(ids) + 1)]
    cases = [("reference", True, [QWEN3]), ("reference", False, [QWEN3]), ("value", True, [])]
    for mode, text, names in cases:
        with oasr_tok.travelling(tokenizer=mode, text=text):
            blob = pickle.dumps(revisions)
        here = revisions.fork()
        steps = [tok.decode_hypothesis(h, here) for h in hypotheses]
        steps.append(tok.decode_hypothesis(hypotheses[-1], here, final=True))
        payload = pickle.dumps(names) + pickle.dumps([blob]) + pickle.dumps(hypotheses)
        done = subprocess.run(
            [sys.executable, "-c", code], input=payload, capture_output=True, cwd=ROOT / "tests", check=False
        )
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        ((got_steps, committed),) = pickle.loads(done.stdout)
        assert got_steps == steps and committed == (here.committed if text else None), (mode, text)


# -- in this process, every contract case ----------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@settings(max_examples=4)
@given(data=st.data())
def test_every_case_moves_without_its_text(case, data):
    """Travel(text=False) on every contract case: the message drops the text (a kind whose
    streaming keeps a dict keeps only its held tail), and the stream goes on with the same deltas
    and stop; its text is no longer there to read."""
    tok, interesting, realistic = case.inputs()
    _registered(case)
    head = data.draw(id_streams(tok, interesting, realistic, max_size=20))
    rest = data.draw(id_streams(tok, interesting, realistic, max_size=12))
    stops = data.draw(st.sampled_from([None, ["e"], ["the", "。"]]))
    stream = tok.new_stream(prefill=head[:4], stop=stops)
    for token_id in head[4:]:
        if not stream.closed:
            stream.feed([token_id])
    with oasr_tok.travelling(text=False):
        blob = pickle.dumps(stream)
    moved = pickle.loads(blob)
    # the tokenizer this process holds with the same fingerprint: `tok`, or another built from the
    # same files by an earlier test of this worker (either is the tokenizer that made the stream)
    assert moved.tokenizer.fingerprint == tok.fingerprint and moved.tokenizer.spec.kind == tok.spec.kind
    assert _continued(moved, rest, text=False)[:2] == _continued(stream, rest)[:2]
    with pytest.raises(StreamStateError, match="without its text"):
        moved.text  # noqa: B018
    again = pickle.loads(pickle.dumps(moved))  # it stays without its text
    with pytest.raises(StreamStateError, match="without its text"):
        again["text"]


def test_a_state_only_message_does_not_grow_with_the_transcript():
    tok = BY_NAME[QWEN3].tokenizer()
    ids = tok.encode("the quick brown fox jumps over the lazy dog. " * 200)
    short, long = tok.new_stream(), tok.new_stream()
    short.feed(ids[:10])
    long.feed(ids)
    with oasr_tok.travelling(text=False):
        sizes = len(pickle.dumps(short)), len(pickle.dumps(long))
    assert sizes[1] - sizes[0] <= 8 and sizes[1] < 1024  # (its counters are bigger numbers)
    assert len(pickle.dumps(long)) > len(pickle.dumps(short)) + len(long.text) - 100


def test_in_this_process_a_stream_finds_its_own_tokenizer(monkeypatch):
    """By reference, by value and by spec alike, a process that holds the tokenizer unpickles a
    stream onto it (or onto another it holds with the same fingerprint) and builds nothing."""
    from oasr_tok.core import pickling

    tok = BY_NAME[QWEN3].tokenizer()
    stream = tok.new_stream()
    stream.feed(tok.encode("hello 你好"))
    monkeypatch.setattr(pickling, "build", lambda spec: pytest.fail("built a tokenizer the process holds"))
    for mode in ("reference", "value", "spec"):
        with oasr_tok.travelling(tokenizer=mode):
            assert pickle.loads(pickle.dumps(stream)).tokenizer.fingerprint == tok.fingerprint


def test_a_tokenizer_that_is_not_held_is_named_in_the_error():
    tok = BY_NAME[QWEN3].tokenizer()
    stream = tok.new_stream()
    function, args = stream.__reduce__()
    ticket = args[0]
    from oasr_tok._engine.travel import TokenizerTicket

    unknown = TokenizerTicket("0" * 64, "huggingface", None, None)
    with pytest.raises(TokenizerNotHeldError, match="huggingface tokenizer .fingerprint 0000"):
        function(unknown, *args[1:])
    assert ticket.fingerprint == tok.fingerprint and ticket.kind == "huggingface"


def _registered(case) -> None:
    if case.name.startswith("letters/"):
        import example_kind

        oasr_tok.register_kind(example_kind.KIND, replace=True)


def test_a_prompts_held_text_rendered_otherwise_after_an_id_still_loads():
    """Regression (found by test_streams.py's pickled-stream property on FunASR's parity mode):
    FunASR's rules rewrite the end of the text, so after a generated id the prompt's held text,
    still waiting to be seen again, may be no part of what the decoder holds back. That is a
    state steps make: it loads and goes on with the same deltas."""
    tok = BY_NAME["funasr_char/odd[parity]"].tokenizer()
    stream = tok.new_stream(prefill=[0, 12, 5, 23, 24])
    stream.feed([25])
    assert _record(stream).prompt_rest and stream.__reduce__()[1][3].get("_tail") == 0
    moved = pickle.loads(pickle.dumps(stream))
    assert moved == stream
    assert moved.feed([4]) + moved.feed([], final=True) == stream.feed([4]) + stream.feed([], final=True)


def test_a_tokenizer_stays_held_when_another_of_the_same_files_goes():
    """Regression (found by the contract suite's pickled-stream property in a whole-suite worker):
    two tokenizers of the same files, both fingerprinted by one lookup; the second is dropped.
    The first is still held: a stream of it unpickles by reference (it raised
    TokenizerNotHeldError: the one table entry per fingerprint had named the dropped one)."""
    import gc

    from elsewhere import holding_nothing

    spec = BY_NAME[QWEN3].tokenizer().spec
    with holding_nothing():
        first = oasr_tok.build_tokenizer(spec)
        second = oasr_tok.build_tokenizer(spec)
        assert first is not second and first.fingerprint == second.fingerprint
        blob = pickle.dumps(second.new_stream())
        assert pickle.loads(blob).tokenizer.fingerprint == first.fingerprint  # a lookup: both printed
        del second
        gc.collect()
        stream = first.new_stream(prefill=first.encode("the café"))
        moved = pickle.loads(pickle.dumps(stream))
        assert moved.tokenizer is first
