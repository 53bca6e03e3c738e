"""`KindContract`: the contract suite of docs/decoding.md, as a base class a kind author
subclasses in their own tests (fsspec's `fsspec/tests/abstract` is the model). The subclass gives
the tokenizer, and the decode of the reference library it must equal; every test below then runs
on it. The project's own kinds run through this same class (tests/testing/test_every_kind.py).

The contracts, on hypothesis-drawn streams that mix realistic hypotheses with hostile ids (random
ids, the vocabulary's edges, specials mid-stream, byte runs that never complete, genuine U+FFFD,
blanks; HostileIds in strategies.py):

1. pieces: ``"".join(token_pieces(ids)) == decode(ids)``, one piece per id, ``""`` for specials;
2. streaming: after any split, ``state["text"] == decode(ids so far)``, and the deltas plus the
   ``final=True`` flush are ``decode(ids)`` (through a dict state and through ``new_stream``);
3. no retraction: what was emitted is a prefix of the decode of every continuation;

and decode equals the reference decode; bad ids get typed errors (``InvalidIdError``, also a
ValueError) and leave the state exactly as it was; forged states get ``StreamStateError``;
forks (``copy.deepcopy``, ``dict(state)``, ``Stream.fork``) and pickles (of the tokenizer, a dict
state, a Stream) go on exactly as the original would.
"""

from __future__ import annotations

import array
import copy
import itertools
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..errors import InvalidIdError, StreamStateError
from ..kinds.api import Tokenizer
from .strategies import HostileIds, id_streams, splits

__all__ = ["FORGED", "KindContract"]

ReferenceDecode = Callable[[list[int]], str]

#: Values a stream state's entries never hold: wrong types, negative and huge counts, foreign
#: tuples, and a text shorter than its recorded tail.
FORGED: tuple[object, ...] = (
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
)

#: Ids that are not ids of any vocabulary: past its end, negative, beyond 64 bits, not integers.
BAD_IDS: tuple[Callable[[int, int], list[Any]], ...] = (
    lambda size, good: [size],
    lambda size, good: [size + 1000],
    lambda size, good: [-1],
    lambda size, good: [good, 2**70],
    lambda size, good: [good, -(2**63)],
    lambda size, good: ["7"],
    lambda size, good: [1.5],
    lambda size, good: [None],
    lambda size, good: [good, float("nan")],
)


class KindContract:
    """The contract suite for one tokenizer: subclass it in a test module (the class name must
    start with ``Test``) and give a ``tokenizer`` fixture, and a ``reference_decode`` fixture
    (``ids -> str``: the reference library's decode of the same files) or a ``reference_note``
    saying which test compares the kind with its reference instead. ``interesting_ids`` (ids
    the streams should use often) and ``realistic_ids`` (whole hypotheses, e.g. encoded texts)
    are optional. Give the fixtures class scope: the tokenizer is built once, and hypothesis
    refuses function-scoped fixtures.

    Example (a test module of a plug-in kind):

        import pytest
        from oasr_tok.testing import KindContract

        class TestShoutKind(KindContract):
            @pytest.fixture(scope="class")
            @classmethod
            def tokenizer(cls):
                oasr_tok.register_kind(shout_kind.KIND)
                return oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec("shout", {}))

            @pytest.fixture(scope="class")
            @classmethod
            def reference_decode(cls, tokenizer):
                return lambda ids: "".join(" " if i == 26 else chr(65 + i) for i in ids if i != 27)

    Needs pytest and hypothesis (``pip install 'oasr_tok[testing]'``); hypothesis' settings
    profile decides how many streams each property draws.
    """

    # -- the fixtures a subclass gives ----------------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def tokenizer(cls) -> Tokenizer:
        raise pytest.UsageError(f"{cls.__name__} must give a `tokenizer` fixture (KindContract's docstring)")

    @pytest.fixture(scope="class")
    @classmethod
    def reference_decode(cls, tokenizer: Tokenizer) -> ReferenceDecode | None:
        return None

    @pytest.fixture(scope="class")
    @classmethod
    def reference_note(cls) -> str:
        return ""

    @pytest.fixture(scope="class")
    @classmethod
    def interesting_ids(cls, tokenizer: Tokenizer) -> list[int]:
        return []

    @pytest.fixture(scope="class")
    @classmethod
    def realistic_ids(cls, tokenizer: Tokenizer) -> list[list[int]]:
        return []

    # -- what the suite works out from them -----------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def hostile_ids(cls, tokenizer: Tokenizer) -> HostileIds:
        return HostileIds.of(tokenizer)

    @pytest.fixture(scope="class")
    @classmethod
    def streams(
        cls,
        tokenizer: Tokenizer,
        interesting_ids: list[int],
        realistic_ids: list[list[int]],
        hostile_ids: HostileIds,
    ) -> Callable[..., st.SearchStrategy[list[int]]]:
        """streams(max_size): the id streams every property draws."""
        return lambda max_size=40: id_streams(tokenizer, interesting_ids, realistic_ids, max_size, hostile_ids)

    # -- 1. pieces -------------------------------------------------------------------------------

    @given(data=st.data())
    def test_pieces_concatenate_to_decode(self, tokenizer: Tokenizer, streams: Any, data: st.DataObject) -> None:
        ids = data.draw(streams(), label="ids")
        pieces = tokenizer.token_pieces(ids)
        assert len(pieces) == len(ids)
        assert "".join(pieces) == tokenizer.decode(ids)
        for token_id, piece in zip(ids, pieces):
            if token_id in tokenizer.special_ids:
                assert piece == ""

    @given(data=st.data())
    def test_decode_is_the_reference_decode(
        self,
        tokenizer: Tokenizer,
        reference_decode: ReferenceDecode | None,
        reference_note: str,
        streams: Any,
        data: st.DataObject,
    ) -> None:
        """decode may be a compiled join, so it is not itself the oracle: the reference
        library's decode is, on the same drawn ids (or the note says which test compares them)."""
        if reference_decode is None:
            assert reference_note, "give a reference_decode fixture, or a reference_note saying why there is none"
            return
        ids = data.draw(streams(40), label="ids")
        assert tokenizer.decode(ids) == reference_decode(ids)

    # -- 2. streaming and 3. no retraction --------------------------------------------------------

    @given(data=st.data())
    def test_any_split_streams_to_decode_without_retraction(
        self, tokenizer: Tokenizer, streams: Any, data: st.DataObject
    ) -> None:
        ids = data.draw(streams(), label="ids")
        chunks = data.draw(splits(ids), label="chunks")
        state: dict[str, Any] = {}
        emitted = ""
        seen: list[int] = []
        for chunk in chunks:
            emitted += tokenizer.decode_incremental(chunk, state)
            seen += chunk
            full = tokenizer.decode(seen)
            assert state["text"] == full
            assert full.startswith(emitted)
        emitted += tokenizer.decode_incremental([], state, final=True)
        assert emitted == tokenizer.decode(ids)
        assert state["text"] == emitted

    @given(data=st.data())
    def test_emitted_text_survives_every_continuation(
        self, tokenizer: Tokenizer, streams: Any, data: st.DataObject
    ) -> None:
        ids = data.draw(streams(20), label="ids")
        more = data.draw(streams(12), label="continuation")
        state: dict[str, Any] = {}
        deltas = [tokenizer.decode_incremental([i], state) for i in ids]
        assert tokenizer.decode(ids + more).startswith("".join(deltas))
        running = ""  # per token too: each prefix's emission survives the rest of the stream
        for k, delta in enumerate(deltas):
            running += delta
            assert tokenizer.decode(ids[: k + 1] + more).startswith(running)

    def test_every_split_of_short_streams(
        self,
        tokenizer: Tokenizer,
        interesting_ids: list[int],
        realistic_ids: list[list[int]],
        hostile_ids: HostileIds,
    ) -> None:
        """Exhaustive: every way to cut a few short streams into chunks."""
        size = tokenizer.vocab_size
        runs = [list(r[:6]) for r in realistic_ids[:3]]
        runs.append(list(interesting_ids[:6]))
        runs.append([0, size - 1, *sorted(tokenizer.special_ids)[:2], *interesting_ids[-2:]])
        runs.append([*hostile_ids.fragments[:3], *hostile_ids.specials[:1], *hostile_ids.fragments[-2:]])
        for ids in runs:
            n = len(ids)
            for mask in range(1 << max(n - 1, 0)):
                cut = [k for k in range(1, n) if mask >> (k - 1) & 1]
                chunks = [ids[a:b] for a, b in zip([0, *cut], [*cut, n])]
                state: dict[str, Any] = {}
                deltas = [tokenizer.decode_incremental(chunk, state) for chunk in chunks]
                assert state["text"] == tokenizer.decode(ids)
                assert "".join(deltas) + tokenizer.decode_incremental([], state, final=True) == tokenizer.decode(ids)

    def test_hostile_streams_keep_the_contracts(self, tokenizer: Tokenizer, hostile_ids: HostileIds) -> None:
        """Streams made of what breaks naive streaming: byte runs that never complete (ended by
        the flush, by a special, by a plain id), genuine U+FFFD pieces, blanks, the vocabulary's
        edges and specials mid-stream; fed one id a call and whole, every prefix checked."""
        fragments, specials = list(hostile_ids.fragments[:6]), list(hostile_ids.specials[:3])
        plain = list(hostile_ids.spaced[:2]) or list(hostile_ids.edges[-1:])
        cases = [
            fragments,
            fragments[:1] * 5,
            [*fragments[:2], *specials, *fragments[2:4]],
            [*fragments[:3], *plain, *fragments[3:]],
            [*hostile_ids.edges, *specials, *hostile_ids.edges],
            [*hostile_ids.empty[:3], *fragments[:2], *hostile_ids.empty[:3]],
            [*specials, *plain, *specials],
        ]
        for ids in (c for c in cases if c):
            whole = tokenizer.decode(ids)
            assert "".join(tokenizer.token_pieces(ids)) == whole
            state: dict[str, Any] = {}
            emitted = ""
            for k, token_id in enumerate(ids):
                emitted += tokenizer.decode_incremental([token_id], state)
                assert state["text"] == tokenizer.decode(ids[: k + 1])
                assert whole.startswith(emitted)
            assert emitted + tokenizer.decode_incremental([], state, final=True) == whole
            at_once: dict[str, Any] = {}
            assert tokenizer.decode_incremental(ids, at_once) + tokenizer.decode_incremental([], at_once, True) == whole

    # -- streams that own their state ---------------------------------------------------------------

    @given(data=st.data())
    def test_a_stream_gives_what_a_dict_state_gives_and_decode(
        self, tokenizer: Tokenizer, streams: Any, data: st.DataObject
    ) -> None:
        """Contracts 2 and 3 through a Stream: any split, the deltas of a Stream equal those of
        {} (feed and decode_incremental alike), its text is decode's after every step, and the
        deltas plus the flush are decode(ids)."""
        ids = data.draw(streams(40), label="ids")
        chunks = data.draw(splits(ids), label="chunks")
        stream, state = tokenizer.new_stream(), dict[str, Any]()
        by_method = data.draw(st.booleans(), label="feed or decode_incremental")
        seen: list[int] = []
        out = []
        for chunk in chunks:
            got = stream.feed(chunk) if by_method else tokenizer.decode_incremental(chunk, stream)
            assert got == tokenizer.decode_incremental(chunk, state)
            seen += chunk
            assert stream.text == state.get("text", "") == tokenizer.decode(seen)
            assert stream["text"] == stream.text
            out.append(got)
        out.append(stream.feed([], final=True))
        assert "".join(out) == tokenizer.decode(ids)
        assert stream.closed and stream.text == tokenizer.decode(ids)

    # -- forks and pickles ---------------------------------------------------------------------------

    @given(data=st.data())
    def test_forked_state_continues_identically(self, tokenizer: Tokenizer, streams: Any, data: st.DataObject) -> None:
        """Beam search forks a stream with copy.deepcopy(state); both branches continue alone."""
        prefix, left, right = (
            data.draw(streams(n), label=label) for n, label in ((15, "prefix"), (10, "l"), (10, "r"))
        )
        state: dict[str, Any] = {}
        head = tokenizer.decode_incremental(prefix, state)
        fork = copy.deepcopy(state)
        out_left = head + tokenizer.decode_incremental(left, state) + tokenizer.decode_incremental([], state, True)
        out_right = head + tokenizer.decode_incremental(right, fork) + tokenizer.decode_incremental([], fork, True)
        assert out_left == tokenizer.decode(prefix + left)
        assert out_right == tokenizer.decode(prefix + right)

    @given(data=st.data())
    def test_shallow_copy_forks_a_state(self, tokenizer: Tokenizer, streams: Any, data: st.DataObject) -> None:
        """No kind mutates a value inside the state in place, so `dict(state)` forks a stream
        as cheaply as decode_hypothesis needs: the copy continues as if the original never went on."""
        prefix, left, right = (
            data.draw(streams(n), label=label) for n, label in ((15, "prefix"), (10, "l"), (10, "r"))
        )
        state: dict[str, Any] = {}
        head = tokenizer.decode_incremental(prefix, state)
        fork = dict(state)
        snapshot = copy.deepcopy(state)
        tokenizer.decode_incremental(left, state)
        tokenizer.decode_incremental([], state, final=True)
        assert fork == snapshot
        out_right = head + tokenizer.decode_incremental(right, fork) + tokenizer.decode_incremental([], fork, True)
        assert out_right == tokenizer.decode(prefix + right)

    @given(data=st.data())
    def test_a_fork_goes_on_as_the_stream_would_and_changes_nothing_of_it(
        self, tokenizer: Tokenizer, streams: Any, data: st.DataObject
    ) -> None:
        prefix, left, right = (
            data.draw(streams(n), label=label) for n, label in ((15, "prefix"), (10, "l"), (10, "r"))
        )
        stream = tokenizer.new_stream()
        head = stream.feed(prefix)
        fork = stream.fork()
        assert fork == stream
        stream.feed(left)
        stream.feed([], final=True)
        out_right = head + fork.feed(right) + fork.feed([], final=True)
        assert out_right == tokenizer.decode(prefix + right)

    @settings(max_examples=15)
    @given(data=st.data())
    def test_a_pickled_stream_goes_on_with_the_same_deltas(
        self, tokenizer: Tokenizer, streams: Any, data: st.DataObject
    ) -> None:
        head, rest = data.draw(streams(20), label="head"), data.draw(streams(20), label="rest")
        stops = data.draw(st.sampled_from([None, ["e"], ["the", "。"]]), label="stop strings")
        stream = tokenizer.new_stream(prefill=head[:5], stop=stops)
        for token_id in head[5:]:
            if stream.closed:
                break
            stream.feed([token_id])
        moved = pickle.loads(pickle.dumps(stream))
        assert moved == stream
        for token_id in rest:
            if stream.closed:
                assert moved.closed
                break
            assert moved.feed([token_id]) == stream.feed([token_id])
        assert moved.feed([], final=True) == stream.feed([], final=True)
        assert moved == stream and moved.stop == stream.stop

    def test_a_pickled_tokenizer_and_state_go_on_as_the_originals(
        self, tokenizer: Tokenizer, interesting_ids: list[int], realistic_ids: list[list[int]], hostile_ids: HostileIds
    ) -> None:
        """A worker gets the tokenizer and a stream's dict state by pickle: the copy decodes
        every id as the original does, and the state continues with the same deltas."""
        ids = [*itertools.islice(itertools.chain(*realistic_ids), 24), *interesting_ids[:8], *hostile_ids.fragments[:4]]
        ids += [*hostile_ids.edges, *hostile_ids.specials[:2]]
        copied = pickle.loads(pickle.dumps(tokenizer))
        assert copied.vocab_size == tokenizer.vocab_size and copied.special_ids == tokenizer.special_ids
        assert copied.decode(ids) == tokenizer.decode(ids)
        assert copied.token_pieces(ids) == tokenizer.token_pieces(ids)
        half = len(ids) // 2
        state: dict[str, Any] = {}
        tokenizer.decode_incremental(ids[:half], state)
        moved = pickle.loads(pickle.dumps(state))
        assert copied.decode_incremental(ids[half:], moved) == tokenizer.decode_incremental(ids[half:], state)
        assert copied.decode_incremental([], moved, final=True) == tokenizer.decode_incremental([], state, final=True)
        assert moved == state

    # -- what is not an id, and what is not a state ------------------------------------------------

    def test_bad_ids_raise_and_leave_state_unchanged(
        self, tokenizer: Tokenizer, interesting_ids: list[int], realistic_ids: list[list[int]]
    ) -> None:
        good = (realistic_ids[0][:5] if realistic_ids and realistic_ids[0] else []) or list(interesting_ids[:3])
        size = tokenizer.vocab_size
        state: dict[str, Any] = {}
        tokenizer.decode_incremental(good, state)
        before = copy.deepcopy(state)
        for make in BAD_IDS:
            bad = make(size, good[0] if good else 0)
            with pytest.raises(InvalidIdError) as info:
                tokenizer.decode_incremental(bad, state)
            assert isinstance(info.value, ValueError)
            assert state == before
            for call in (tokenizer.decode, tokenizer.token_pieces, tokenizer.new_stream().feed):
                with pytest.raises(InvalidIdError):
                    call(bad)
        message = str(pytest.raises(ValueError, tokenizer.decode, [size]).value)
        assert str(size) in message and str(size - 1) in message

    def test_forged_state_raises_stream_state_error_and_is_left_alone(
        self, tokenizer: Tokenizer, interesting_ids: list[int], realistic_ids: list[list[int]]
    ) -> None:
        """A state the library did not make gets a StreamStateError (or, when the forgery
        happens to be a state this kind could have made, decodes): never another exception."""
        ids = (realistic_ids[0][:10] if realistic_ids and realistic_ids[0] else []) or list(interesting_ids[:6]) or [0]
        state: dict[str, Any] = {}
        tokenizer.decode_incremental(ids[:5], state)
        for key in [*state, "text"]:
            for value in FORGED:
                forged = {**state, key: value}
                before = copy.deepcopy(forged)
                try:
                    tokenizer.decode_incremental(ids[5:], forged)
                    tokenizer.decode_incremental([], forged, final=True)
                except StreamStateError:
                    assert forged == before
        with pytest.raises(StreamStateError):
            tokenizer.decode_incremental(ids[5:], {**state, "text": "", "_tail": 10**6})

    def test_closed_stream_refuses_more_ids(self, tokenizer: Tokenizer) -> None:
        state: dict[str, Any] = {}
        tokenizer.decode_incremental([], state, final=True)
        assert tokenizer.decode_incremental([], state, final=True) == ""
        with pytest.raises(StreamStateError) as info:
            tokenizer.decode_incremental([tokenizer.vocab_size - 1], state)
        # One wording for every kind (oasr_tok.errors.stream_closed_error), saying how to go on.
        assert str(info.value) == "this stream was closed with final=True; start a new state ({}) to decode more"

    # -- ids in every form, and n-best lists -----------------------------------------------------------

    def test_ids_as_tuple_array_and_numpy(
        self, tokenizer: Tokenizer, interesting_ids: list[int], realistic_ids: list[list[int]], hostile_ids: HostileIds
    ) -> None:
        ids = list(itertools.islice(itertools.chain(*realistic_ids, interesting_ids, hostile_ids.fragments), 30))
        expected = tokenizer.token_pieces(ids)
        forms: list[Any] = [tuple(ids), array.array("q", ids), memoryview(array.array("q", ids))]
        numpy: Any
        try:
            import numpy
        except ImportError:  # numpy is not this suite's dependency: the buffer protocol is, above
            numpy = None
        if numpy is not None:
            forms += [numpy.array(ids, dtype=numpy.int64), numpy.array(ids, dtype=numpy.int32)]
        for form in forms:
            assert tokenizer.token_pieces(form) == expected
            assert tokenizer.decode(form) == tokenizer.decode(ids)

    def test_decode_batch_is_decode_per_hypothesis(
        self, tokenizer: Tokenizer, interesting_ids: list[int], realistic_ids: list[list[int]]
    ) -> None:
        batch = [list(r) for r in realistic_ids[:4]] + [list(interesting_ids[:5]), []]
        assert tokenizer.decode_batch(batch) == [tokenizer.decode(ids) for ids in batch]
