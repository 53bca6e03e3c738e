"""decode_hypothesis: committed text from a hypothesis that changes (docs/decoding.md
§ Revisions), on every kind and case of tests/cases, with random revision scripts.

The oracles are the kind's `decode` (committed + partial is the transcript of the hypothesis),
its `decode_incremental` (what an exact stream of the same ids has settled), and the word
rules of `oasr_tok.core.words` applied to the *final* transcript (a commit point never falls inside
one of its words)."""

from __future__ import annotations

import copy
import itertools

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasr_tok import (
    InvalidIdError,
    NonIntegerIdError,
    StreamStateError,
    TimingError,
    TokenizerSpec,
    build_tokenizer,
)
from oasr_tok._engine.revisions import HypothesisState
from oasr_tok.core.revisions import WINDOW
from oasr_tok.core.words import group_words

from cases import all_cases
from paths import shared
from strategies import revision_scripts

CASES = all_cases()
IDS = [case.name for case in CASES]
# A script is a dozen calls: a third of the profile's examples per kind keeps the suite short.
FEW = settings(max_examples=max(10, settings().max_examples // 3))


# HypothesisState's fields, in the order it is made from them (and pickled).
_FIELDS = ("n", "window", "stream", "pending", "skip", "history", "searched", "tag", "closed", "starts")


def _fields(state: dict) -> dict:
    """The fields of a state's record, by name, as copy and pickle see them."""
    cls, args = state["_hypothesis"].__reduce__()
    assert cls is HypothesisState
    return dict(zip(_FIELDS, args, strict=True))


def _refused(tok, ids, state: dict, when: str, **changes) -> None:
    """A record with these fields changed is refused with StreamStateError: when it is "built"
    (as an unpickled one would be), or when it is "used" by the next call, which then leaves the
    forged state exactly as it was."""
    if when == "built":
        with pytest.raises(StreamStateError):
            HypothesisState(**{**_fields(state), **changes})
        return
    forged = {**state, "_hypothesis": HypothesisState(**{**_fields(state), **changes})}
    _refused_on_use(tok, ids, forged)


def _refused_on_use(tok, ids, forged: dict) -> None:
    keep = copy.deepcopy(forged)
    with pytest.raises(StreamStateError):
        tok.decode_hypothesis(ids, forged)
    assert forged == keep


def _word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of `text` under the word rules."""
    spans = []
    pos = 0
    for word in group_words([text], [0]) if text else []:
        pos = text.index(word.text, pos)
        spans.append((pos, pos + len(word.text)))
        pos += len(word.text)
    return spans


def _inside_a_word(text: str, at: int) -> bool:
    return any(a < at < b for a, b in _word_spans(text))


def _lettered_words_after(text: str, at: int) -> int:
    """How many words of `text` that contain a letter end after position `at`."""
    from oasr_tok._engine.words import char_class

    return sum(1 for a, b in _word_spans(text) if b > at and any(char_class(c) in (2, 3) for c in text[a:b]))


def _run(tok, hypotheses, final, agreement):
    """Feed the script; yield (hypothesis, delta, partial, state copy) per call, final last."""
    state: dict = {}
    for hyp in hypotheses:
        delta, partial = tok.decode_hypothesis(hyp, state, agreement=agreement)
        yield hyp, delta, partial, copy.deepcopy(state)
    delta, partial = tok.decode_hypothesis(final, state, final=True, agreement=agreement)
    yield final, delta, partial, state


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_committed_text_grows_agrees_and_ends_between_words(case, data):
    tok, interesting, realistic = case.inputs()
    hypotheses, final = data.draw(revision_scripts(tok, interesting, realistic))
    agreement = data.draw(st.sampled_from([1, 2, 3]))
    committed = ""
    committed_ids: list[int] = []
    commits: list[str] = []  # the committed text after each call so far
    revised = False
    for hyp, delta, partial, state in _run(tok, hypotheses, final, agreement):
        # Committed text only grows, by exactly the deltas.
        assert state["committed"] == committed + delta
        committed = state["committed"]
        # A revision is reported exactly when the hypothesis contradicts committed ids.
        agrees = list(hyp[: len(committed_ids)]) == committed_ids
        assert (state["revision"] is None) == agrees
        if state["revision"] is not None:
            position, old, new = state["revision"]
            assert list(old) == committed_ids[position:] and list(new) == list(hyp[position : len(committed_ids)])
            revised = True
        else:
            text = tok.decode(hyp)
            assert committed + partial == text
            # Every commit so far is a prefix of this transcript and ends between its words.
            for earlier in commits + [committed]:
                assert text.startswith(earlier)
                assert not _inside_a_word(text, len(earlier)), (earlier, text)
        # Positional re-anchoring: committed ids stay, the hypothesis's ids after them follow.
        committed_ids = committed_ids + list(hyp[len(committed_ids) : state["committed_tokens"]])
        commits.append(committed)
    assert partial == ""
    if not revised:
        assert committed == tok.decode(final)
    assert state["committed_tokens"] == len(committed_ids)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_growing_hypotheses_trail_the_exact_stream_by_one_word(case, data):
    tok, interesting, realistic = case.inputs()
    hypotheses, final = data.draw(revision_scripts(tok, interesting, realistic, growing=True))
    agreement = data.draw(st.sampled_from([1, 2]))
    stream: dict = {}
    fed = 0
    emitted: list[str] = [""]  # what decode_incremental settled after each hypothesis
    state: dict = {}
    for hyp in hypotheses:
        emitted.append(emitted[-1] + tok.decode_incremental(hyp[fed:], stream))
        fed = len(hyp)
        tok.decode_hypothesis(hyp, state, agreement=agreement)
        committed = state["committed"]
        # agreement=1 commits from this hypothesis; agreement=2 from what two agree on: the
        # previous one's ids, when the hypothesis only grows.
        reference = emitted[-1] if agreement == 1 else emitted[-2]
        assert reference.startswith(committed)
        assert _lettered_words_after(reference, len(committed)) <= 1, (committed, reference)
        assert not _inside_a_word(reference, len(committed))
    tok.decode_hypothesis(final, state, final=True)
    assert state["committed"] == tok.decode(final)


def _streamed_pieces(tok, ids):
    """What each id settled when streamed one at a time; the final flush on the last
    non-special id (the ABC's token_pieces, run on the kind's own decode_incremental)."""
    state: dict = {}
    pieces = [tok.decode_incremental([i], state) for i in ids]
    rest = tok.decode_incremental([], state, final=True)
    if rest:
        last = max((k for k, i in enumerate(ids) if i not in tok.special_ids), default=len(ids) - 1)
        pieces[last] += rest
    return pieces


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_committed_words_are_the_words_of_the_stream(case, data):
    tok, interesting, realistic = case.inputs()
    hypotheses, final = data.draw(revision_scripts(tok, interesting, realistic, growing=True))
    times = [10 * k for k in range(len(final))]
    state: dict = {}
    words = []
    for hyp in hypotheses:
        delta, _partial, new = tok.decode_hypothesis(hyp, state, agreement=1, times=times[: len(hyp)])
        assert "".join("".join(w.text for w in new).split()) == "".join(delta.split())
        words += new
    _delta, _partial, new = tok.decode_hypothesis(final, state, final=True, times=times)
    words += new
    if final:
        assert words == group_words(_streamed_pieces(tok, final), times)
    else:
        assert words == []


@pytest.mark.parametrize(
    "case", CASES[:1] + [c for c in CASES if c.name.startswith(("huggingface/qwen3", "funasr"))], ids=lambda c: c.name
)
def test_bad_input_raises_and_leaves_the_state_as_it_was(case):
    tok, _interesting, realistic = case.inputs()
    ids = realistic[0] if realistic else list(range(3, 40))
    state: dict = {}
    for k in range(1, len(ids), 3):
        tok.decode_hypothesis(ids[:k], state)
    before = copy.deepcopy(state)
    bad = [[*ids, tok.vocab_size], [*ids, -1], [*ids, "x"], [*ids, 1.5], "abc", None]
    for hyp in bad:
        with pytest.raises((InvalidIdError, NonIntegerIdError)):
            tok.decode_hypothesis(hyp, state)
        assert state == before
    with pytest.raises(StreamStateError):
        tok.decode_hypothesis(ids, state, agreement=0)
    with pytest.raises(TimingError):
        tok.decode_hypothesis(ids, state, times=[0.0])
    assert state == before
    for forged in ({"_hypothesis": (1, 2, 3)}, {"_hypothesis": "x"}, {"committed": 5}):
        _refused_on_use(tok, ids + ids, forged)
    # A stream state of the wrong shape: the kind's own decode_incremental refuses it (FunASR),
    # or it is not a table's snapshot.
    _refused(tok, ids + ids, before, "used", stream={"text": 5, "_tail": 1})
    tok.decode_hypothesis(ids, state, final=True)
    assert state["committed"] == tok.decode(ids)
    with pytest.raises(StreamStateError, match="closed"):
        tok.decode_hypothesis(ids, state)


@pytest.fixture(scope="module")
def bpe():
    return build_tokenizer(
        TokenizerSpec("sentencepiece", {"model": shared("sentencepiece/icefall-librispeech-bpe500.model")})
    )


def test_the_cat_becomes_the_caterpillar_without_a_half_word(bpe):
    cat = bpe.encode("THE CAT")  # ▁THE ▁CA T
    longer = bpe.encode("THE CATERPILLAR SAT")  # ▁THE ▁CA TER P I LL AR ▁SA T
    state: dict = {}
    seen = []
    for h in (cat, cat, cat, longer[:-2], longer, longer):
        seen.append(bpe.decode_hypothesis(h, state))
        assert state["revision"] is None  # T -> TER was never committed: not a revision
    # "CAT" was agreed three times, but as the last word: never committed before its end is known.
    assert [d for d, _ in seen] == ["", "THE", "", "", "", " CATERPILLAR"]
    assert seen[2][1] == " CAT"
    assert bpe.decode_hypothesis(longer, state, final=True) == (" SAT", "")
    assert state["committed"] == "THE CATERPILLAR SAT"


def test_a_revision_of_committed_ids_keeps_the_committed_text_and_reanchors(bpe):
    first = bpe.encode("THE CAT SAT ON")
    state: dict = {}
    for h in (first, first):
        bpe.decode_hypothesis(h, state)
    assert state["committed"] == "THE CAT SAT"
    n = state["committed_tokens"]
    revised = bpe.encode("THE DOG SAT ON THE MAT")
    at = next(k for k in range(n) if revised[k] != first[k])
    delta, partial = bpe.decode_hypothesis(revised, state)
    assert delta == "" and state["committed"] == "THE CAT SAT"
    position, old, new = state["revision"]
    assert position == at and list(old) == first[at:n] and list(new) == revised[at:n]
    # The rest of the hypothesis is re-anchored after the committed ids, at the same position.
    assert state["committed"] + partial == bpe.decode(first[:n] + revised[n:])
    # Each hypothesis that still contradicts the committed ids is reported again; the agreed
    # rest after them commits as usual.
    delta, partial = bpe.decode_hypothesis(revised, state)
    assert state["revision"] == (position, old, new)
    assert state["committed"] == "THE CAT SAT" + delta and state["committed"] + partial == bpe.decode(
        first[:n] + revised[n:]
    )
    bpe.decode_hypothesis(revised, state, final=True)
    assert state["committed"] == bpe.decode(first[:n] + revised[n:])


class _Guarded(list):
    """A hypothesis that fails the test if anything before `limit` is read."""

    limit = 0

    def __getitem__(self, index):
        start = index.start if isinstance(index, slice) else index
        assert start is not None and start >= self.limit, f"read at {start}, window starts at {self.limit}"
        return list.__getitem__(self, index)

    def __iter__(self):
        raise AssertionError("the whole hypothesis was iterated")


def test_ids_behind_the_window_are_never_read_and_arrays_work(bpe):
    words = bpe.encode(" ".join(["HELLO WORLD"] * 200))
    state: dict = {}
    for k in range(20, len(words), 7):
        hyp = _Guarded(words[:k])
        hyp.limit = max(0, state.get("committed_tokens", 0) - WINDOW)
        times = _Guarded(range(k))
        times.limit = state.get("committed_tokens", 0)
        bpe.decode_hypothesis(hyp, state, times=times)
    assert state["committed_tokens"] > 2 * WINDOW
    twin: dict = {}
    for k in range(20, len(words), 7):
        bpe.decode_hypothesis(numpy.array(words[:k], dtype=numpy.int64), twin, times=numpy.arange(k))
    assert twin == state


def test_a_deep_copied_state_forks_the_stream(bpe):
    ids = bpe.encode("ONE TWO THREE FOUR FIVE SIX")
    state: dict = {}
    for k in range(1, len(ids)):
        bpe.decode_hypothesis(ids[:k], state)
    fork = copy.deepcopy(state)
    a = bpe.decode_hypothesis(ids + bpe.encode(" SEVEN"), state, final=True)
    b = bpe.decode_hypothesis(ids + bpe.encode(" SEVEN"), fork, final=True)
    assert a == b and state == fork


@settings(max_examples=30)
@given(st.lists(st.integers(0, 499), max_size=25))
def test_agreement_one_commits_at_the_word_boundaries_of_each_hypothesis(bpe, ids):
    state: dict = {}
    delta, partial = bpe.decode_hypothesis(ids, state, agreement=1)
    text = bpe.decode(ids)
    assert delta + partial == text
    assert _lettered_words_after(_settled(bpe, ids), len(delta)) <= 1


def _settled(tok, ids):
    return tok.decode_incremental(ids, {})


# -- the command line ---------------------------------------------------------------------------


def _cli(*args: str, stdin: str):
    import subprocess
    import sys

    from paths import PACKAGE_PARENT, subprocess_env

    return subprocess.run(
        [sys.executable, "-m", "oasr_tok", *args],
        check=False,
        input=stdin.encode("utf-8"),
        capture_output=True,
        env=subprocess_env(PYTHONIOENCODING="ascii"),
        cwd=PACKAGE_PARENT,
    )


def test_cli_stream_revisions_commits_words_and_reports_partials():
    import json

    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=shared("sentencepiece/icefall-librispeech-bpe500.model"))
    table = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")  # the same ids, piece for piece
    words = sp.encode("THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG")
    hyps = [words[:k] + sp.encode(" FROG")[: k % 2] for k in range(1, len(words) + 1)] + [words]
    stdin = "".join(json.dumps(h) + "\n" for h in hyps)
    events = [
        json.loads(line)
        for line in _cli("stream", "--revisions", "--json", table, stdin=stdin).stdout.decode().splitlines()
    ]
    assert len(events) == len(hyps) + 1 and events[-1]["final"] is True
    committed = ""
    for hyp, event in zip(hyps, events):
        committed += event["committed"]
        assert committed + event["partial"] == sp.decode(hyp)  # the reference decode
        assert "revision" not in event
    committed += events[-1]["committed"]
    assert committed == events[-1]["text"] == sp.decode(words)
    # Committed text grew by whole words only.
    assert all(
        e["committed"] == "" or e["committed"].strip() in sp.decode(words).split() or e is events[-1] for e in events
    )
    plain = _cli("stream", "--revisions", table, stdin=stdin)
    assert plain.returncode == 0 and plain.stdout.decode() == sp.decode(words) + "\n"
    assert plain.stderr.decode().splitlines()[-1] == events[-2]["partial"]
    bad = _cli("stream", "--revisions", table, stdin="[5, 6]\n[5, 6, 600]\n")
    assert bad.returncode == 3 and b"line 2" in bad.stderr and b"600" in bad.stderr and b"Traceback" not in bad.stderr


def test_the_demo_shows_a_flickering_naive_decode_beside_a_growing_committed_stream():
    from oasr_tok import demo

    for entry in demo.load_manifest():
        record = demo.run_entry(entry)
        if record["status"] != "ok":
            continue
        rows = record["revisions"]
        naive = [row["naive"] for row in rows]
        assert any(not b.startswith(a) for a, b in itertools.pairwise(naive)), entry["kind"]  # it flickers
        committed = [row["committed"] for row in rows]
        assert all(b.startswith(a) for a, b in itertools.pairwise(committed))  # this never does
        assert committed[-1] == record["final"] and record["revisions_match_decode"] is True


def test_committed_text_a_caller_holds_is_never_changed_under_it(bpe):
    # state["committed"] grows in place when the state holds the only reference to it: a
    # reference the caller kept must still read the text as it was when it was taken.
    words = bpe.encode(" ".join(["HELLO WORLD"] * 30))
    state: dict = {}
    held = []
    for k in range(5, len(words), 4):
        bpe.decode_hypothesis(words[:k], state)
        text = state["committed"]
        held.append((text, (text + ".")[:-1]))  # the object, and an equal str of its own
    assert len({copied for _, copied in held}) > 3
    assert all(text == copied for text, copied in held)


def test_a_forged_stream_or_search_mark_raises_and_leaves_the_state_as_it_was(bpe):
    ids = bpe.encode("THE QUICK BROWN FOX JUMPS")
    state: dict = {}
    bpe.decode_hypothesis(ids, state)
    bpe.decode_hypothesis(ids, state)  # agreed: committed up to the last word
    fields = _fields(state)
    stream, history = fields["stream"], fields["history"]
    assert type(stream) is tuple and len(stream) == 6  # the table's snapshot of the commit point
    more = ids + ids[:3]
    # What a record can check itself is refused when it is made ...
    _refused(bpe, more, state, "built", stream="not a state")
    _refused(bpe, more, state, "built", searched=len(history[-1]) + 1)
    _refused(bpe, more, state, "built", searched=-1)
    _refused(bpe, more, state, "built", tag="another table")
    _refused(bpe, more, state, "built", skip=2)
    _refused(bpe, more, state, "built", pending=(5,))
    _refused(bpe, more, state, "built", n=-1)
    _refused(bpe, more, state, "built", history=([1, 2],))
    _refused(bpe, more, state, "built", closed=1)
    _refused(bpe, more, state, "built", starts=(0.0,) * (len(fields["pending"]) + 1))
    # ... what only the tokenizer can tell, when it is used.
    _refused(bpe, more, state, "used", stream={"text": "", "_s": stream[:5]})
    _refused(bpe, more, state, "used", stream=(*stream[:2], b"\xff", *stream[3:]))
    _refused(bpe, more, state, "used", stream=(*stream[:4], True, stream[5]))
    _refused(bpe, more, state, "used", tag=fields["tag"] + 1)
    for bad in (tuple(fields.values())[:9], "x"):
        _refused_on_use(bpe, more, {**state, "_hypothesis": bad})
    assert bpe.decode_hypothesis(ids, state) == ("", bpe.decode(ids)[len(state["committed"]) :])


def test_a_record_pickles_copies_and_compares_by_its_fields(bpe):
    import pickle

    _ids, state = _streamed_with_a_window(bpe)
    record = state["_hypothesis"]
    for twin in (pickle.loads(pickle.dumps(record)), copy.copy(record), copy.deepcopy(record)):
        assert type(twin) is HypothesisState and twin == record and twin is not record
        assert twin.__reduce__() == record.__reduce__()
    assert record != HypothesisState(**{**_fields(state), "searched": 0, "history": ()})
    with pytest.raises(TypeError):
        hash(record)


def test_a_shallow_copy_of_the_state_forks_the_stream(bpe):
    """A record only this state holds is updated in place; one a shallow copy of the state (or
    anyone) also holds is replaced, so the copy goes on as if the original never had."""
    ids = bpe.encode(" ".join(["ONE TWO THREE FOUR FIVE SIX SEVEN"] * 3))
    state: dict = {}
    for k in range(2, len(ids) // 2, 2):
        bpe.decode_hypothesis(ids[:k], state)
    assert state["committed_tokens"] > 0
    fork, held = dict(state), state["_hypothesis"]
    untouched = copy.deepcopy(state)
    script = [ids[:k] for k in range(len(ids) // 2, len(ids), 2)]
    for hyp in script:
        bpe.decode_hypothesis(hyp, state)
    assert fork == untouched and held == untouched["_hypothesis"]
    assert state["committed_tokens"] > untouched["committed_tokens"]
    for hyp in script:
        bpe.decode_hypothesis(hyp, fork)
    assert fork == state


def test_a_bad_id_inside_the_window_raises_and_leaves_the_state_as_it_was(bpe):
    ids = bpe.encode(" ".join(["HELLO WORLD"] * 20))
    state: dict = {}
    for k in range(5, len(ids), 3):
        bpe.decode_hypothesis(ids[:k], state)
    n = state["committed_tokens"]
    assert n > 5
    before = copy.deepcopy(state)
    # Equal in value to the committed id there, but not an id: refused like any other non-id.
    for bad in (bpe.vocab_size, -1, float(ids[n - 2]), "x", True):
        hyp = list(ids)
        hyp[n - 2] = bad
        with pytest.raises((InvalidIdError, NonIntegerIdError)):
            bpe.decode_hypothesis(hyp, state)
        assert state == before


def _own(tok):
    """A tokenizer of tok's spec that is no other's, to re-class or patch (a copy of a tokenizer
    is the tokenizer itself)."""
    return build_tokenizer(tok.spec)


def _spied(tok):
    """A tokenizer like tok whose class has a decode_incremental of its own: the kind's,
    counting its calls in the class's `calls`."""

    class Spied(type(tok)):  # type: ignore[misc]
        calls = 0

        def decode_incremental(self, new_ids, state, final=False):
            Spied.calls += 1
            return super().decode_incremental(new_ids, state, final)

    spied = _own(tok)
    spied.__class__ = Spied
    return spied


def test_a_decode_incremental_of_its_own_is_honoured(bpe):
    """The kinds that stream through a PieceTable are stepped by the table directly, unless
    their class or the instance has a decode_incremental of its own: that one is then called."""
    ids = bpe.encode("THE QUICK BROWN FOX JUMPS OVER")
    expected: dict = {}
    for k in range(3, len(ids) + 1, 3):
        bpe.decode_hypothesis(ids[:k], expected)

    spied = _spied(bpe)
    Spied = type(spied)
    on_its_own = _own(bpe)
    on_its_own.decode_incremental = spied.decode_incremental  # the instance's own
    for tok in (spied, on_its_own):
        Spied.calls = 0
        state: dict = {}
        for k in range(3, len(ids) + 1, 3):
            tok.decode_hypothesis(ids[:k], state)
        assert Spied.calls > 0
        assert state["committed"] == expected["committed"]
        assert state["committed_tokens"] == expected["committed_tokens"]

    # A class given its own decode_incremental after a stream began: the next call notices (the
    # table's stream cannot be continued by another decode_incremental: the state is refused,
    # as it was), and a new stream runs it.
    class Patched(type(bpe)):  # type: ignore[misc]
        pass

    calls = []
    kinds_own = type(bpe).decode_incremental

    def counted(self, new_ids, state, final=False):
        calls.append(len(new_ids))
        return kinds_own(self, new_ids, state, final)

    patched = _own(bpe)
    patched.__class__ = Patched
    begun: dict = {}
    patched.decode_hypothesis(ids[:3], begun)
    assert not calls
    Patched.decode_incremental = counted  # type: ignore[method-assign]
    before = copy.deepcopy(begun)
    with pytest.raises(StreamStateError, match="another tokenizer"):
        patched.decode_hypothesis(ids[:6], begun)
    assert begun == before
    state = {}
    for k in range(3, len(ids) + 1, 3):
        patched.decode_hypothesis(ids[:k], state)
    assert calls
    assert state["committed"] == expected["committed"]


@pytest.fixture(scope="module")
def paraformer():
    return build_tokenizer(
        TokenizerSpec("funasr_char", {"tokens": shared("funasr_char/paraformer-zh-vocab8404/tokens.json")})
    )


def _paraformer_script(tok) -> list[list[int]]:
    """A growing hypothesis of Chinese characters and English words, its newest ids rewritten
    on every other call."""
    ids = tok.encode("今天天气很好 we went to the park 然后 we had lunch 在 the garden 很开心")
    script = []
    for k in range(2, len(ids) + 1, 2):
        hyp = ids[:k]
        script.append(hyp[:-1] + [ids[0]] if k % 4 == 0 else hyp)
    return [*script, ids]


def test_funasr_is_stepped_from_its_own_value_unless_it_has_a_decode_incremental_of_its_own(paraformer):
    """FunASR's machine is stepped from the frozen value its stream state holds (the record's
    stream is that value: what decode_incremental of the committed ids leaves in state["_funasr"]);
    a decode_incremental of the class's or the instance's own is called instead."""
    script = _paraformer_script(paraformer)
    state: dict = {}
    outputs = []
    for hyp in script:
        outputs.append(paraformer.decode_hypothesis(hyp, state))
        n = state["committed_tokens"]
        if n:
            stream: dict = {}
            paraformer.decode_incremental(hyp[:n], stream)
            assert _fields(state)["stream"] == stream["_funasr"]
    assert state["committed_tokens"] > 0
    outputs.append(paraformer.decode_hypothesis(script[-1], state, final=True))
    assert state["committed"] == paraformer.decode(script[-1])

    spied = _spied(paraformer)
    Spied = type(spied)
    on_its_own = _own(paraformer)
    on_its_own.decode_incremental = spied.decode_incremental  # the instance's own
    for tok in (spied, on_its_own):
        Spied.calls = 0
        walked: dict = {}
        got = [tok.decode_hypothesis(hyp, walked) for hyp in script]
        got.append(tok.decode_hypothesis(script[-1], walked, final=True))
        assert Spied.calls > len(script)
        assert type(_fields(walked)["stream"]) is dict  # the kind's own state dict
        assert got == outputs and walked["committed"] == state["committed"]


def test_a_forged_funasr_value_is_refused_when_used(paraformer):
    script = _paraformer_script(paraformer)
    state: dict = {}
    for hyp in script[:8]:
        paraformer.decode_hypothesis(hyp, state)
    assert state["committed_tokens"] > 0
    value = _fields(state)["stream"]
    for bad in ((), (1, 2), (9, *value[1:]), (value[0], ("x",), *value[2:]), {"_funasr": value}):
        _refused(paraformer, script[8], state, "used", stream=bad)


def _streamed_with_a_window(bpe):
    """Ids and a hypothesis state that has committed some of them (so its window is not empty)."""
    ids = bpe.encode(" ".join(["HELLO WORLD"] * 6))
    state: dict = {}
    for k in range(4, len(ids), 4):
        bpe.decode_hypothesis(ids[:k], state)
    return ids, state


def test_a_forged_window_is_a_forged_state(bpe):
    """The window holds committed ids, which were checked when they were committed: one that is
    not an id was put there by someone else. A record refuses what is not an int >= 0; an int
    that is not an id of this tokenizer is only ever compared with the hypothesis, and once the
    hypothesis differs from it there, it is reported as a forged state."""
    ids, state = _streamed_with_a_window(bpe)
    window = _fields(state)["window"]
    assert window
    for bad in ("x", -1, True, 2.0):
        _refused(bpe, list(ids), state, "built", window=window[:-1] + (bad,))
    _refused(bpe, list(ids), state, "used", window=window[:-1] + (bpe.vocab_size,))


def test_a_forged_window_entry_is_never_asked_to_compare_itself(bpe):
    """The window is compared with the hypothesis in C, over the hypothesis list's own items:
    an object planted in a forged window would never be asked whether it equals an id (its
    __eq__ could run anything: here it empties the very list being compared, which a loop that
    asked it would then read past); a record refuses it before that, when it is made."""
    ids, state = _streamed_with_a_window(bpe)
    window = _fields(state)["window"]
    hypothesis = list(ids)
    asked = []

    class Evil:
        def __eq__(self, other):
            asked.append(other)
            hypothesis.clear()
            return True

        __hash__ = object.__hash__

    class EvilInt(int):
        __eq__ = Evil.__eq__
        __hash__ = int.__hash__

    for bad in (Evil(), EvilInt(window[0])):
        _refused(bpe, hypothesis, state, "built", window=(bad,) + window[1:])
    assert asked == [] and hypothesis == ids


def test_a_call_made_from_inside_a_call_gets_the_same_results(bpe):
    """decode_hypothesis keeps scratch space between calls; a call made while another is under
    way (here from the hypothesis's own __len__) must not share it."""
    ids = bpe.encode(" ".join(["THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG"] * 2))
    hypotheses = [ids[:k] for k in range(3, len(ids) + 1, 3)]
    expected: dict = {}
    expected_inner: dict = {}
    plain = [bpe.decode_hypothesis(h, expected) for h in hypotheses]
    plain_inner = [bpe.decode_hypothesis(h[::-1], expected_inner) for h in hypotheses]

    class Nesting(list):
        def __len__(self):
            inner.append(bpe.decode_hypothesis(self[::-1], inner_state))
            return super().__len__()

    state: dict = {}
    inner_state: dict = {}
    inner: list = []
    got = [bpe.decode_hypothesis(Nesting(h), state) for h in hypotheses]
    assert got == plain and state == expected
    assert inner == plain_inner and inner_state == expected_inner
