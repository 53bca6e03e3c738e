"""The huggingface kind with a CTC decoder (a wav2vec2-style tokenizer.json), exact to the
`tokenizers` runtime: repeats collapsed by token string after special tokens are dropped, the
pad removed, the delimiter turned into a space, clean-up per token; also before Metaspace
(Sequence([CTC, Metaspace]), as in tokenizers' bindings/python/tests/bindings/test_decoders.py).
Fixtures: fixtures/huggingface/ctc-* (fixtures/make_asr_formats.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import decoders

from oasr_tok import TokenizerSpec, build_tokenizer

from paths import own

NAMES = ["ctc-base-960h", "ctc-metaspace"]
_BUILT: dict = {}


def tok_for(name: str):
    if name not in _BUILT:
        _BUILT[name] = build_tokenizer(
            TokenizerSpec("huggingface", {"tokenizer": own(f"huggingface/{name}/tokenizer.json")})
        )
    return _BUILT[name]


def runtime(tok, ids):
    return tok.backend.decode(ids, skip_special_tokens=True)


def test_the_runtime_decoders_behave_as_their_tests_say():
    # tokenizers' test_decoders.py (TestCTCDecoding): the behaviour the plan is built on.
    assert (
        decoders.CTC().decode(["<pad>", "<pad>", "h", "e", "e", "l", "l", "<pad>", "l", "o", "o", "o", "<pad>"])
        == "hello"
    )
    assert decoders.CTC().decode(["a", "<pad>", "a"]) == "aa"  # the pad (a string here) separates
    assert (
        decoders.Sequence([decoders.CTC(), decoders.Metaspace()]).decode(
            ["▁", "▁", "H", "H", "i", "i", "▁", "y", "o", "u"]
        )
        == "Hi you"
    )


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=200)
@given(data=st.data())
def test_decode_pieces_and_any_split_match_the_runtime(name, data):
    tok = tok_for(name)
    small = st.integers(0, tok.vocab_size - 1)
    run = st.tuples(small, st.integers(1, 3)).map(lambda p: [p[0]] * p[1])  # CTC-like repeats
    ids = [i for chunk in data.draw(st.lists(run, max_size=25)) for i in chunk]
    expected = runtime(tok, ids)
    assert tok.decode(ids) == expected
    pieces = tok.token_pieces(ids)
    assert len(pieces) == len(ids) and "".join(pieces) == expected
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=6)))
    state: dict = {}
    emitted = ""
    for a, b in zip([0, *cuts], [*cuts, len(ids)]):
        emitted += tok.decode_incremental(ids[a:b], state)
        so_far = runtime(tok, ids[:b])
        assert state["text"] == so_far and expected.startswith(emitted)
    emitted += tok.decode_incremental([], state, final=True)
    assert emitted == expected


def test_a_repeat_across_a_chunk_boundary_renders_nothing():
    tok = tok_for("ctc-base-960h")
    h, e, pad, bar, unk = (tok.backend.token_to_id(t) for t in ("H", "E", "<pad>", "|", "<unk>"))
    state: dict = {}
    assert tok.decode_incremental([h, e], state) == "HE"
    assert tok.decode_incremental([e], state) == ""  # the same E, one chunk later
    assert tok.decode_incremental([pad, e], state) == ""  # <pad> is special: dropped before the collapse
    assert tok.decode_incremental([bar, e], state) == " E"
    assert state["text"] == runtime(tok, [h, e, e, pad, e, bar, e]) == "HE E"
    assert tok.token_pieces([h, e, e, unk, e, bar, bar, e]) == ["H", "E", "", "", "", " ", "", "E"]


def test_bpe_decoder_holds_only_what_the_last_token_may_still_change():
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": own("huggingface/bpe-suffix/tokenizer.json")}))
    ids = tok.encode("hello world speech")
    expected = runtime(tok, ids)
    assert expected == "hello world speech"
    state: dict = {}
    emitted = ""
    for k, token_id in enumerate(ids):
        emitted += tok.decode_incremental([token_id], state)
        assert state["text"] == runtime(tok, ids[: k + 1])
        assert expected.startswith(emitted)
    # the last token's text is out (both its forms begin with it); only the space its suffix
    # becomes if another token follows waits (DecodeStream prints the same, no later)
    assert emitted == "hello world speech" and state["text"] == expected
    emitted += tok.decode_incremental([], state, final=True)
    assert emitted == expected
    assert "".join(tok.token_pieces(ids)) == expected
