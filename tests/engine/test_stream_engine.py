"""The compiled PieceTable engine against a plain statement of its rules, on generated tables
and every combination of byte rule, lead rule and first table."""

from __future__ import annotations

import codecs
import copy

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok._engine.piece_table import FLAG_BYTE, FLAG_END_FIRST, FLAG_KEEP_FIRST, FLAG_SKIP, PieceTable

ALPHABET = ["a", "b", " ", "\u3000", "é", "中", "\ufffd", "😀", "", "  x"]
BYTES = [
    0x20,
    0x41,
    0xC3,
    0xA9,
    0xE4,
    0xB8,
    0xAD,
    0xF0,
    0x9F,
    0x98,
    0x80,
    0xFF,
    0xC0,
    0xED,
    0xA0,
    0xEF,
    0xBF,
    0xBD,
    0xF4,
    0x90,
]


def _per_byte(exc):
    return "\ufffd", exc.start + 1


codecs.register_error("test.per_byte", _per_byte)


@st.composite
def tables(draw):
    mode = draw(st.sampled_from(["text", "bytes"]))
    n = draw(st.integers(1, 12))
    lead = draw(st.sampled_from(["none", "one_space", "whitespace"]))
    # "ignore" (bbpe: bytes that never become a character print nothing) is for mode "bytes"
    rule = draw(st.sampled_from(["replace", "per_byte", "whole_run"] + (["ignore"] if mode == "bytes" else [])))
    flags, values, pieces, firsts = [], [], [], []
    with_first = draw(st.booleans())
    for _ in range(n):
        flag = draw(
            st.sampled_from(
                [0, 0, 0, FLAG_SKIP, FLAG_SKIP | FLAG_END_FIRST, FLAG_KEEP_FIRST]
                + ([FLAG_BYTE, FLAG_BYTE] if mode == "text" else [])
            )
        )
        flags.append(flag)
        values.append(draw(st.sampled_from(BYTES)))
        if mode == "bytes":
            # Mostly short pieces; some long enough to pass the engine's cached (7-byte) and
            # stack-buffer (64-byte) joins.
            pieces.append(
                bytes(
                    draw(
                        st.lists(st.sampled_from(BYTES), max_size=3)
                        | st.lists(st.sampled_from(BYTES), min_size=6, max_size=70)
                    )
                )
            )
            # A first piece: the piece, or the piece without its first byte (llama.cpp's rule).
            firsts.append(pieces[-1][draw(st.integers(0, 1)) :] if with_first else pieces[-1])
        else:
            pieces.append(draw(st.sampled_from(ALPHABET)))
            firsts.append(draw(st.sampled_from(ALPHABET)) if with_first else pieces[-1])
    return dict(
        mode=mode,
        lead=lead,
        rule=rule,
        flags=flags,
        values=values,
        pieces=pieces,
        firsts=firsts if with_first else None,
    )


def build(t):
    return PieceTable(
        t["pieces"],
        first_pieces=t["firsts"],
        flags=bytes(t["flags"]),
        byte_values=bytes(t["values"]),
        mode=t["mode"],
        byte_rule=t["rule"],
        lead=t["lead"],
    )


def reference(t, ids):
    """The rules, stated plainly: strip skips, join pieces, decode byte runs, apply the lead rule."""
    first = t["firsts"] is not None
    if t["mode"] == "bytes":
        joined = []
        for i in ids:
            if t["flags"][i] & FLAG_SKIP:
                # A skipped id renders nothing; FLAG_END_FIRST still ends the first rule.
                first = first and not t["flags"][i] & FLAG_END_FIRST
                continue
            joined.append(t["firsts"][i] if first else t["pieces"][i])
            first = first and bool(t["flags"][i] & FLAG_KEEP_FIRST)
        text = b"".join(joined).decode("utf-8", "ignore" if t["rule"] == "ignore" else "replace")
    else:

        def run_text(run):
            if t["rule"] == "whole_run":
                try:
                    return bytes(run).decode("utf-8")
                except UnicodeDecodeError:
                    return "\ufffd" * len(run)
            return bytes(run).decode("utf-8", "test.per_byte" if t["rule"] == "per_byte" else "replace")

        parts, run = [], []
        for i in ids:
            if t["flags"][i] & FLAG_SKIP:
                first = first and not t["flags"][i] & FLAG_END_FIRST
                continue
            if t["flags"][i] & FLAG_BYTE:
                run.append(t["values"][i])
            else:
                if run:
                    parts.append(run_text(run))
                    run = []
                parts.append(t["firsts"][i] if first else t["pieces"][i])
            if first and not t["flags"][i] & FLAG_KEEP_FIRST:
                first = False
        if run:
            parts.append(run_text(run))
        text = "".join(parts)
    if t["lead"] == "one_space" and text.startswith(" "):
        text = text[1:]
    elif t["lead"] == "whitespace":
        text = text.lstrip()
    return text


@st.composite
def table_and_ids(draw):
    t = draw(tables())
    ids = draw(st.lists(st.integers(0, len(t["pieces"]) - 1), max_size=25))
    more = draw(st.lists(st.integers(0, len(t["pieces"]) - 1), max_size=8))
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=5)))
    return t, ids, more, cuts


# A valid character then an invalid byte in one whole run: the character must not be emitted.
WHOLE_RUN_TRAP = (
    dict(
        mode="text",
        lead="none",
        rule="whole_run",
        flags=[FLAG_BYTE] * 4,
        values=[0xC3, 0xA9, 0xFF, 0x41],
        pieces=["", "", "", ""],
        firsts=None,
    ),
    [0, 1, 2],
    [3],
    [2],
)


@given(table_and_ids())
@example(WHOLE_RUN_TRAP)
def test_engine_matches_the_plain_rules(case):
    t, ids, more, cuts = case
    table = build(t)
    expected = reference(t, ids)
    pieces = table.token_pieces(ids)
    assert len(pieces) == len(ids) and "".join(pieces) == expected
    for token_id, piece in zip(ids, pieces):
        if t["flags"][token_id] & FLAG_SKIP:
            assert piece == ""
    state: dict = {}
    emitted = ""
    for a, b in zip([0, *cuts], [*cuts, len(ids)]):
        emitted += table.decode_incremental(ids[a:b], state)
        assert state["text"] == reference(t, ids[:b])
        # No retraction: what is out survives any continuation.
        assert reference(t, ids[:b] + more).startswith(emitted)
    fork = copy.deepcopy(state)
    emitted_fork = emitted + table.decode_incremental(more, fork) + table.decode_incremental([], fork, final=True)
    assert emitted_fork == reference(t, ids + more)
    emitted += table.decode_incremental([], state, final=True)
    assert emitted == expected == state["text"]


@given(table_and_ids())
@example(WHOLE_RUN_TRAP)
def test_step_snapshot_is_one_call_per_id(case):
    """step_snapshot (decode_hypothesis's steps, on a decoder state without a state dict)
    settles, per id, what a decode_incremental call per id settles, holds back what that
    stream holds back, and its snapshot is that stream's decoder state."""
    t, ids, more, cuts = case
    table = build(t)
    cut = cuts[0] if cuts else 0
    one_by_one: dict = {}
    table.decode_incremental(ids[:cut], one_by_one)
    settled, snapshot, held = table.step_snapshot(ids[:cut], table.fresh_snapshot)
    assert "".join(settled) + held == one_by_one.get("text", "")
    rest = ids[cut:] + more
    per_id, after, held = table.step_snapshot(rest, snapshot)
    assert per_id == [table.decode_incremental([i], one_by_one) for i in rest]
    text = one_by_one.get("text", "")
    assert held == text[len(text) - one_by_one.get("_tail", 0) :]
    assert "".join(settled + per_id) + held == reference(t, ids + more)
    decoder = one_by_one.get("_s", table.fresh_snapshot[:5])
    assert after == (*decoder, one_by_one.get("_prompt", False))


def test_step_snapshot_checks_the_ids_and_the_snapshot():
    table = PieceTable(["a", "b"], flags=bytes(2))
    with pytest.raises(oasr_tok.InvalidIdError, match=r"token id 2 at position 1"):
        table.step_snapshot([1, 2], table.fresh_snapshot)
    for forged in (
        table.fresh_snapshot[:5],
        (*table.fresh_snapshot[:5], 1),
        (False, False, b"\xff", False, False, False),  # not an unfinished character
        (False, False, b"", False, False, True),  # a prompt block, in a table without the rule
    ):
        with pytest.raises(oasr_tok.StreamStateError):
            table.step_snapshot([0], forged)
    closed = (False, False, b"", False, True, False)
    assert table.step_snapshot([], closed) == ([], closed, "")
    with pytest.raises(oasr_tok.StreamStateError, match="closed"):
        table.step_snapshot([0], closed)


def test_bad_ids_leave_the_state_alone_and_name_the_id():
    table = PieceTable(["a", "b"], flags=bytes(2))
    state: dict = {}
    table.decode_incremental([0], state)
    before = dict(state)
    with pytest.raises(oasr_tok.InvalidIdError, match=r"token id 2 at position 1 .* 0 \.\.\. 1"):
        table.decode_incremental([1, 2], state)
    with pytest.raises(oasr_tok.NonIntegerIdError, match="'x' at position 0"):
        table.decode_incremental(["x"], state)
    with pytest.raises(oasr_tok.InvalidIdError):
        table.token_pieces([0, 2**80])
    assert state == before


@pytest.mark.parametrize("length", [5, 6, 7, 8, 60, 61, 62, 63, 64, 65, 200])
def test_byte_runs_of_every_join_size_decode_as_python_does(length):
    """Joins up to 7 bytes go through the decode cache, up to 64 through a stack buffer, longer
    ones through the heap: all must agree with bytes.decode("utf-8", "replace")."""
    body = ("é中" * length).encode()[:length]
    pieces = [b"\xe4", body, b"\xb8\xad", b"\xf0\x9f", b"\x98\x80" + body, b"\xed\xa0", b"\xff"]
    table = PieceTable(pieces, mode="bytes")
    for ids in ([0, 1, 2], [1, 1, 0, 2], [3, 4, 1, 3], [5, 1, 6, 1], [0, 0, 1], [1, 3], list(range(7)) * 2):
        expected = b"".join(pieces[i] for i in ids).decode("utf-8", "replace")
        assert "".join(table.token_pieces(ids)) == expected
        state: dict = {}
        streamed = "".join(table.decode_incremental([i], state) for i in ids)
        assert streamed + table.decode_incremental([], state, final=True) == expected


@pytest.mark.parametrize(
    "held",
    [
        "not ours",
        (False, False, "ab", False, False),
        (False, False, None, False, False),
        (False, False, b"\xe4\xb8\xe4\xb8", False, False),
    ],
)
def test_foreign_state_is_refused(held):
    text_table = PieceTable(["a"], flags=bytes(1))
    byte_table = PieceTable([b"a"], mode="bytes")
    for table in (text_table, byte_table):
        state = {"_s": held}
        if table is text_table and isinstance(held, tuple) and type(held[2]) is bytes:
            continue  # a text table may hold a long byte run
        with pytest.raises(oasr_tok.StreamStateError):
            table.decode_incremental([0], state)
        assert state == {"_s": held}


def test_malformed_tables_are_refused():
    with pytest.raises(ValueError):
        PieceTable(["a", "b"], flags=bytes(1))
    with pytest.raises(TypeError):
        PieceTable([b"a"], flags=bytes(1))
    with pytest.raises(ValueError):
        PieceTable(["a"], mode="nope")
