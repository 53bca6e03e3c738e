"""The toolkits' faces on hostile input: transformers' Wav2Vec2CTCDecoder (unknown ids, offset
columns, its text by default), sherpa-onnx's hotword lines.

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import pytest

import oasr_tok
from oasr_tok import (
    EncodeError,
    InvalidIdError,
    NonIntegerIdError,
)
from oasr_tok.toolkits.hf_ctc import Wav2Vec2CTCDecoder

from paths import own


@pytest.mark.parametrize("bad", [1.0, "3", None, True, False, [1], object()])
def test_g7_unknown_ids_unk_refuses_what_is_not_an_id_with_a_typed_error(bad):
    """Hostile input, fourth round (issue 44), finding G7.

    Wav2Vec2CTCDecoder(tok, unknown_ids="unk"): a float, str or None id gave a bare TypeError
    and True/False were read as ids 1/0; everywhere else such an id is a NonIntegerIdError."""
    ctc = Wav2Vec2CTCDecoder(oasr_tok.load(own("wav2vec2/base-960h")), unknown_ids="unk")
    with pytest.raises(NonIntegerIdError):
        ctc.decode([5, bad])
    with pytest.raises(NonIntegerIdError):
        ctc.convert_ids_to_tokens([bad])
    with pytest.raises(InvalidIdError):
        ctc.decode([5, -1])
    assert ctc.decode([5, 10**6]) == ctc.decode([5, ctc.unk_token_id])  # past every table: <unk>


def test_g10_batch_decode_gives_the_offset_columns_asked_for_only():
    """Hostile input, fourth round (issue 44), finding G10.

    batch_decode(..., output_char_offsets=True) whose first row was empty returned a
    word_offsets column not asked for, filled with None (transformers takes the first row's
    keys); the columns are those asked for."""
    ctc = Wav2Vec2CTCDecoder(oasr_tok.load(own("wav2vec2/base-960h")))
    rows = [[], [11, 5, 15, 15, 8], [24, 22, 5]]
    out = ctc.batch_decode(rows, output_char_offsets=True)
    assert list(out.keys()) == ["text", "char_offsets"] and out.word_offsets is None
    assert len(out.char_offsets) == 3 and all(isinstance(c, list) for c in out.char_offsets)
    out = ctc.batch_decode(rows, output_word_offsets=True)
    assert list(out.keys()) == ["text", "word_offsets"] and out.char_offsets is None


@pytest.mark.parametrize("lines", [None, 5, 1.5, object()])
def test_g12_hotwords_encode_lines_refuses_what_is_not_a_list_of_lines(lines):
    """Hostile input, fourth round (issue 44), finding G12."""
    from oasr_tok.demo import DATA

    tok = oasr_tok.load(DATA / "sentencepiece")
    with pytest.raises(EncodeError, match="list of lines"):
        oasr_tok.toolkits.hotwords.encode_lines(tok, lines)


def test_the_transformers_face_gives_transformers_text_by_default():
    """Hostile input, fourth round (issue 44), the peers' text by default: wav2vec2's
    transformers face.

    Wav2Vec2CTCDecoder exists to be transformers' decoder: skip_special_tokens drops the blank
    before grouping repeats, as transformers 5 does (H E L <pad> L O: HELO); the CTC-correct
    order is drop_pad_before_grouping=False (HELLO)."""
    tok = oasr_tok.load(own("wav2vec2/base-960h"))
    default, ctc_order = Wav2Vec2CTCDecoder(tok), Wav2Vec2CTCDecoder(tok, drop_pad_before_grouping=False)
    h, e, ell, o = (tok.piece_to_id(c) for c in "HELO")
    frames = [h, e, ell, default.pad_token_id, ell, o]
    assert default.decode(frames, skip_special_tokens=True) == "HELO"
    assert ctc_order.decode(frames, skip_special_tokens=True) == "HELLO"
    assert default.decode(frames) == ctc_order.decode(frames) == "HELLO"
