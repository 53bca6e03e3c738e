"""Forged, foreign and missing stream states (issue 12, items 3-6), and the compiled funasr
machine's bounds. The contract: a state the library did not make, or that another tokenizer
made, gets a StreamStateError and is left exactly as it was; a state it made can only ever
continue to state["text"] == decode(ids so far), as a canonical str."""

from __future__ import annotations

import copy
import functools
import sys

import pytest

from oasr_tok import StreamStateError

from cases import all_cases
from hostile import in_child

# One case per kind: the properties are about the state, not about the vocabulary.
_FIRST: dict = {}
for _case in all_cases():
    _FIRST.setdefault(_case.name.split("/")[0], _case)
CASES = list(_FIRST.values())
IDS = [case.name for case in CASES]


def canonical(text: str) -> bool:
    """Whether `text` is stored as CPython requires (the narrowest kind its characters need):
    a copy built character by character has the same size and compares equal."""
    copy_ = "".join(list(text))
    return copy_ == text and sys.getsizeof(copy_) == sys.getsizeof(text) and hash(copy_) == hash(text)


def _ids(case) -> list[int]:
    tok, interesting, realistic = case.inputs()
    ids = [i for stream in realistic for i in stream][:40] or list(interesting[:20])
    return ids + list(interesting[:20])


def _started(case, upto: int = 12):
    tok = case.tokenizer()
    ids = _ids(case)
    state: dict = {}
    tok.decode_incremental(ids[:upto], state)
    return tok, ids, state


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_state_that_is_not_a_dict(case):
    tok = case.tokenizer()
    for state in (None, [], "state", 5, ()):
        with pytest.raises(StreamStateError):
            tok.decode_incremental([], state)
        with pytest.raises(StreamStateError):
            tok.decode_incremental(_ids(case)[:3], state)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("tail", [1, 3, 10**6])
def test_a_tail_without_text(case, tail):
    """Item 4: the tail is checked against the text even when there is no text."""
    tok = case.tokenizer()
    state = {"_tail": tail}
    with pytest.raises(StreamStateError):
        tok.decode_incremental(_ids(case)[:3], state)
    assert state == {"_tail": tail}  # nothing written, not even text = ""
    _, _, made = _started(case)
    forged = {k: v for k, v in made.items() if k != "text"}
    if forged.get("_tail"):
        before = copy.deepcopy(forged)
        with pytest.raises(StreamStateError):
            tok.decode_incremental(_ids(case)[12:15], forged)
        assert forged == before


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_forged_tail_or_level_never_makes_a_wrong_or_non_canonical_text(case):
    """Item 5: every forged `_tail` in range, and a forged `_level`, either raise (state left
    alone) or continue to the true decode, stored canonically."""
    tok, ids, state = _started(case)
    rest = ids[12:20]
    real = state.get("_tail", 0)
    for key, values in (
        ("_tail", range(0, len(state["text"]) + 1)),
        ("_level", (0, 1, 2, 4)),
        ("_wide", (0, 1, len(state["text"]) - 1)),
    ):
        for value in values:
            if key == "_tail" and value == real:
                continue
            forged = {**copy.deepcopy(state), key: value}
            before = copy.deepcopy(forged)
            try:
                tok.decode_incremental(rest, forged)
                tok.decode_incremental([], forged, final=True)
            except StreamStateError:
                assert forged == before
                continue
            assert forged["text"] == tok.decode(ids[:20]), (key, value)
            assert canonical(forged["text"]), (key, value)


def test_a_forged_tail_cannot_narrow_a_wide_text_in_place():
    """The exploit behind item 5: a state whose text needs UCS-2, told that its tail is all of
    it, must not be cut in place to an ASCII string kept in UCS-2 storage."""
    from oasr_tok.kinds.symbol_table import SymbolTableTokenizer

    tok = SymbolTableTokenizer(["<blk>", "<sos/eos>", "<unk>", "中", "▁a", "b"])
    state: dict = {}
    tok.decode_incremental([3, 4, 5], state)
    assert state["text"] == "中 ab"
    for forged in ({**state, "_tail": 4}, {**state, "_tail": 4, "_level": 2}, {**state, "_tail": 1}):
        before = dict(forged)
        with pytest.raises(StreamStateError):
            tok.decode_incremental([5], forged)
        assert forged == before


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_another_tokenizers_state_is_refused(case):
    """Item 6: a state another kind (or another vocabulary) made is not continued."""
    tok, ids, _ = _started(case)
    for other in CASES:
        if other is case:
            continue
        _, _, foreign = _started(other)
        before = copy.deepcopy(foreign)
        with pytest.raises(StreamStateError):
            tok.decode_incremental(ids[12:14], foreign)
        assert foreign == before


def test_a_state_continues_on_an_equal_tokenizer():
    """The tag is a fingerprint of the tables, not of the instance: a tokenizer rebuilt from
    the same files (a pickled one in a worker) continues the stream."""
    case = CASES[0]
    tok, ids, state = _started(case)
    clone = case.build()
    assert clone is not tok
    clone.decode_incremental(ids[12:20], state)
    assert state["text"] == tok.decode(ids[:20])


@pytest.mark.parametrize(
    "frozen",
    [
        (0, ("", False, False, (), 2**70, 0, "", False), None, "", ""),  # a huge int
        (0, ("", False, False, (5,), 0, 0, "", False), None, "", ""),  # a non-str element
        (0, ("", False, False, ("a",), 0, 0, "x", False), None, "", ""),  # held non-whitespace
        (0, ("", 1, False, (), 0, 0, "", False), None, "", ""),  # an int for a bool
        (0, ("", False, False, (), 7, 0, "", False), None, "", ""),  # no such element kind
        (9, ("", False, False, (), 0, 0, "", False), None, "", ""),  # no such branch
        (0, ("", False, False, (), 0, 0, "", False), None, b"", ""),  # bytes for text
        ["not", "a", "tuple", "at", "all"],
    ],
)
def test_forged_funasr_states(frozen):
    case = _FIRST["funasr_char"]
    tok, ids, state = _started(case)
    forged = {**state, "_funasr": frozen}
    before = copy.deepcopy(forged)
    with pytest.raises(StreamStateError):
        tok.decode_incremental(ids[12:16], forged)
    assert forged == before


def test_the_compiled_funasr_machine_checks_its_bounds():
    """Item 3, in a child process (an out-of-bounds write may crash or corrupt the heap):
    an owned Track cannot start with pending elements, and attribute() checks what it reads."""
    result = in_child("""
        from oasr_tok._engine.funasr import Track, attribute, CJK, SKIP
        out = {}
        try:
            track = Track(("", True, False, ("a", "b", "c"), 0, 0, "", False), True)
            for _ in range(3):
                track.parity_step(CJK, "中")   # pops an element the owners never recorded
            out["owned"] = "accepted"
        except ValueError as exc:
            out["owned"] = "ValueError"
        for info, ids in (([("x",)], [0]), (["not a tuple"], [0]), ([None], [0]),
                          ([(CJK, "a", True, True, False, "a")], [5]),
                          ([(CJK, "a", True, True, False, "a")], [-1])):
            try:
                attribute(ids, info, False)
                out.setdefault("attribute", []).append("accepted")
            except (TypeError, IndexError, ValueError) as exc:
                out.setdefault("attribute", []).append(type(exc).__name__)
        print(json.dumps(out))
    """)
    assert result["owned"] == "ValueError"
    assert "accepted" not in result["attribute"], result


ALL = all_cases()


@functools.cache
def _foreign_state(name: str) -> dict:
    case = next(c for c in ALL if c.name == name)
    return _started(case)[2]


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_every_tokenizers_state_is_refused_by_every_other(case):
    """One rule for every stream state: it carries the identity of the tokenizer and stream
    kind that made it, checked before anything else is read. Every case's state, fed to every
    other case's tokenizer (the same kind from other files included: an upper-case CTC
    vocabulary's state to a lower-case one), is refused and left as it was — unless the two
    render alike (the same table read from tokens.txt and tokens.json; a with_specials view of
    a tokenizer without specials), which the tags fingerprint: then the stream goes on, and
    both decode every id list of both cases the same."""
    tok, ids, _ = _started(case)
    continued = []
    for other in ALL:
        if other is case:
            continue
        foreign = copy.deepcopy(_foreign_state(other.name))
        before = copy.deepcopy(foreign)
        try:
            tok.decode_incremental(ids[12:14], foreign)
        except StreamStateError:
            assert foreign == before, other.name
        else:
            theirs = other.tokenizer()
            probes = [ids, _ids(other), list(range(min(tok.vocab_size, theirs.vocab_size)))]
            if tok.vocab_size != theirs.vocab_size or any(tok.decode(p) != theirs.decode(p) for p in probes):
                continued.append(other.name)
    assert not continued, f"{case.name} continued the states of {continued}"
