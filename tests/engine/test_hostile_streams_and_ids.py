"""The compiled engine on hostile input: forged and foreign CTC, clean-spaces and Stream states, ids
and pad ids outside int64, collapse_ctc's arguments, envelope streams without a prompt.

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import copy

import pytest

import oasr_tok
from oasr_tok import (
    InvalidIdError,
    NonIntegerIdError,
    StreamStateError,
    TokenizerSpec,
    build_tokenizer,
)

from hostile import small_table
from paths import own


@pytest.mark.parametrize(
    "forged",
    [
        ("not a tuple", -1, "", 0),
        (("a", "b"), -1, "", 0),
        (None, 2**64, "", 0),
        (None, -5, "", 0),
        (None, 10**6, "", 0),
        (None, -1, 7, 0),
        (None, -1, "", "0"),
        None,
    ],
)
def test_a_ctc_stream_refuses_forged_inner_values(forged):
    """Hostile input, third round (issue 35), defect 2b: no silent wrong answers (a CTC stream's
    forged inner values)."""
    tok = oasr_tok.load(own("wav2vec2/base-960h"))
    state: dict = {}
    tok.decode_incremental([5, 6, 7], state)
    state["_ctc"] = forged
    before = copy.deepcopy(state)
    with pytest.raises(StreamStateError):
        tok.decode_incremental([8], state)
    assert state == before


def test_a_ctc_stream_never_continues_another_vocabularys_state():
    """Hostile input, third round (issue 35), defect 2b: no silent wrong answers (a CTC stream
    continuing another vocabulary's state)."""
    upper = oasr_tok.load(own("wav2vec2/base-960h"))
    lower = oasr_tok.load(own("wav2vec2/lower-case"))
    state: dict = {}
    upper.decode_incremental(upper.encode("HELLO WOR") if upper.supports_encode else [5, 6], state)
    before = copy.deepcopy(state)
    with pytest.raises(StreamStateError):
        lower.decode_incremental([5, 6], state)
    assert state == before


@pytest.mark.parametrize("forged", [{"text": "forged text"}, "sentencepiece"], ids=["text-only", "another-kinds"])
def test_the_gguf_clean_spaces_stream_refuses_a_state_without_its_record(forged):
    """Hostile input, third round (issue 35), defect 2c: no silent wrong answers (gguf's clean-
    spaces stream on a state without its record)."""
    tok = oasr_tok.load(own("gguf/gpt2-cleanspaces.gguf"))
    if forged == "sentencepiece":
        other = build_tokenizer(TokenizerSpec("sentencepiece", {"model": own("sentencepiece/bpe-bytefallback.model")}))
        forged = {}
        other.decode_incremental([5, 6, 7], forged)
    state = copy.deepcopy(forged)
    with pytest.raises(StreamStateError):
        tok.decode_incremental([5, 6], state)
    assert state == forged


def test_decode_batch_pad_id_outside_int64(tmp_path):
    """Hostile input, third round (issue 35), defect 3: typed errors, never a traceback (pad_id
    outside int64)."""
    tok = small_table(tmp_path)
    for pad in (2**63, -(2**63) - 1, 10**30):
        with pytest.raises(InvalidIdError, match="pad_id"):
            tok.decode_batch([[3, 4]], pad_id=pad)


def test_collapse_ctc_checks_its_arguments():
    """Hostile input, third round (issue 35), defect 3: typed errors, never a traceback
    (collapse_ctc's arguments)."""
    with pytest.raises(InvalidIdError, match="vocab_size"):
        oasr_tok.collapse_ctc([1, 2], 0, vocab_size=0)
    with pytest.raises(NonIntegerIdError, match="vocab_size"):
        oasr_tok.collapse_ctc([1, 2], 0, vocab_size="5")
    with pytest.raises(NonIntegerIdError, match="bool"):
        oasr_tok.collapse_ctc([1, 2], True)
    assert oasr_tok.collapse_ctc([1, 1, 0, 2], 0, vocab_size=2**63) == ([1, 2], [0, 3], [2, 4])


@pytest.mark.parametrize("folder", ["wav2vec2/base-960h", "huggingface/ctc-base-960h", "huggingface/bpe-suffix"])
def test_g6_an_envelope_stream_without_a_prompt_on_ctc_and_bpedecoder_files(folder):
    """Hostile input, fourth round (issue 44), finding G6.

    new_stream(envelope=...) without a prompt works on every kind: wav2vec2 and tokenizer.json
    files with a CTC or BPEDecoder decoder were refused ("not made by this tokenizer kind")."""
    tok = oasr_tok.load(own(folder))
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip() and i not in tok.special_ids][:8]
    stream = tok.new_stream(envelope="qwen3_asr")
    out = "".join(stream.feed([i]) for i in ids) + stream.feed([], final=True)
    assert out == tok.decode_envelope(ids, "qwen3_asr").text


def test_a_stream_of_one_tokenizer_is_refused_by_another():
    """Hostile input, fourth round (issue 44), the stream work (G1-G4, G9, G11): a Stream is
    refused by another tokenizer."""
    from oasr_tok.demo import DATA

    one = oasr_tok.load(DATA / "sentencepiece")
    other = oasr_tok.load(own("wav2vec2/base-960h"))
    stream = one.new_stream()
    with pytest.raises(StreamStateError, match="another tokenizer"):
        other.decode_incremental([1], stream)
    with pytest.raises(StreamStateError, match="another tokenizer"):
        other.decode_incremental_batch([[1]], [stream])
