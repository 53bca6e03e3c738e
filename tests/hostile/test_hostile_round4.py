"""Hostile input, fourth round (issue 44): each defect found, a test written from its
description. G1-G4, G9 and G11 (the stream defects) are tests/engine/test_streams.py's."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

import oasr_tok
from oasr_tok import EncodeError, InvalidIdError, MalformedAssetError, NonIntegerIdError, StreamStateError
from oasr_tok.toolkits.hf_ctc import Wav2Vec2CTCDecoder

from paths import own


def test_g5_qwen3_asr_language_is_the_first_line_that_starts_with_language(tmp_path):
    """qwen-asr's parse_asr_output takes the first line that starts with "language " (a bare
    "language" line, stripped, does not): `language \\n\\nlanguage English <asr_text>...` is
    English, for decode_envelope and for a stream's envelope alike."""
    tok = _bytelevel(tmp_path)
    raw = "language \n\nlanguage English<asr_text>one two"
    ids = tok.encode(raw)
    assert tok.decode(ids) == raw
    transcript = tok.decode_envelope(ids, "qwen3_asr")
    assert (transcript.language, transcript.text) == ("English", "one two")
    stream = tok.new_stream(envelope="qwen3_asr")
    text = "".join(stream.feed([i]) for i in ids) + stream.feed([], final=True)
    assert (stream.envelope.get("language"), text) == ("English", "one two")
    # (a header that does not start with "language" is not held as one: docs/envelopes.md)
    for header, language in (
        ("language Chinese\nx", "Chinese"),
        ("language \n language german", "German"),
        ("language", None),
    ):
        assert tok.decode_envelope(tok.encode(f"{header}<asr_text>hi"), "qwen3_asr").language == language


@pytest.mark.parametrize("folder", ["wav2vec2/base-960h", "huggingface/ctc-base-960h", "huggingface/bpe-suffix"])
def test_g6_an_envelope_stream_without_a_prompt_on_ctc_and_bpedecoder_files(folder):
    """new_stream(envelope=...) without a prompt works on every kind: wav2vec2 and tokenizer.json
    files with a CTC or BPEDecoder decoder were refused ("not made by this tokenizer kind")."""
    tok = oasr_tok.load(own(folder))
    ids = [i for i in range(tok.vocab_size) if tok.decode([i]).strip() and i not in tok.special_ids][:8]
    stream = tok.new_stream(envelope="qwen3_asr")
    out = "".join(stream.feed([i]) for i in ids) + stream.feed([], final=True)
    assert out == tok.decode_envelope(ids, "qwen3_asr").text


def _bytelevel(tmp_path, added=()):
    runtime = Tokenizer(models.BPE())
    runtime.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    runtime.decoder = decoders.ByteLevel()
    from tokenizers.trainers import BpeTrainer

    trainer = BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    runtime.train_from_iterator(["language English<asr_text>one two 你好 🎉 Chinese german hi foo"] * 4, trainer)
    if added:
        runtime.add_tokens([AddedToken(t) for t in added])
    path = tmp_path / "tokenizer.json"
    runtime.save(str(path))
    return oasr_tok.load(str(tmp_path))


def _added_with_normalizer(folder, tokens, normalizer, normalized=None) -> Tokenizer:
    runtime = Tokenizer(models.BPE())
    runtime.decoder = decoders.ByteLevel()
    flags = normalized or [True] * len(tokens)
    runtime.add_tokens([AddedToken(t, normalized=flag) for t, flag in zip(tokens, flags)])
    runtime.normalizer = normalizer
    runtime.save(os.path.join(folder, "tokenizer.json"))
    return runtime


def test_added_tokens_under_a_bytelevel_normalizer_decode_as_tokenizers_does(tmp_path):
    """Tokenizer(BPE()), decoder ByteLevel, add_tokens(["kuća", "međa"]), normalizer ByteLevel:
    the runtime keeps a normalized added token as the normalizer writes it ("meÄĳa") and decodes
    [0, 1] as "kućameđa"; we read the raw content and printed 'ku\\x07ame\\x11a'."""
    runtime = _added_with_normalizer(tmp_path, ["kuća", "međa"], normalizers.ByteLevel())
    tok = oasr_tok.load(str(tmp_path))
    assert tok.decode([0, 1]) == runtime.decode([0, 1]) == "kućameđa"
    assert tok.token_pieces([0, 1]) == ["kuća", "međa"]
    assert tok.id_to_piece(1) == runtime.id_to_token(1) == "meÄĳa"
    stream = tok.new_stream()
    assert [stream.feed([0]), stream.feed([1])] == ["kuća", "međa"]


@settings(max_examples=25, deadline=None)
@given(
    tokens=st.lists(
        st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=4),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    which=st.sampled_from(["ByteLevel", "NFC", "Lowercase", "NFKC+ByteLevel"]),
    data=st.data(),
)
def test_added_tokens_under_any_normalizer_decode_as_tokenizers_does(tmp_path_factory, tokens, which, data):
    folder = tmp_path_factory.mktemp("added")
    normalizer = {
        "ByteLevel": normalizers.ByteLevel(),
        "NFC": normalizers.NFC(),
        "Lowercase": normalizers.Lowercase(),
        "NFKC+ByteLevel": normalizers.Sequence([normalizers.NFKC(), normalizers.ByteLevel()]),
    }[which]
    # (tokenizers' stream.rs test_decoding_with_added_bpe adds one with normalized(false))
    normalized = data.draw(st.lists(st.booleans(), min_size=len(tokens), max_size=len(tokens)))
    runtime = _added_with_normalizer(folder, tokens, normalizer, normalized)
    size = runtime.get_vocab_size(with_added_tokens=True)
    tok = oasr_tok.load(str(folder))
    ids = data.draw(st.lists(st.integers(0, size - 1), max_size=8))
    assert tok.decode(ids) == runtime.decode(ids, skip_special_tokens=True)
    assert "".join(tok.token_pieces(ids)) == tok.decode(ids)


@pytest.mark.parametrize("bad", [1.0, "3", None, True, False, [1], object()])
def test_g7_unknown_ids_unk_refuses_what_is_not_an_id_with_a_typed_error(bad):
    """Wav2Vec2CTCDecoder(tok, unknown_ids="unk"): a float, str or None id gave a bare TypeError
    and True/False were read as ids 1/0; everywhere else such an id is a NonIntegerIdError."""
    ctc = Wav2Vec2CTCDecoder(oasr_tok.load(own("wav2vec2/base-960h")), unknown_ids="unk")
    with pytest.raises(NonIntegerIdError):
        ctc.decode([5, bad])
    with pytest.raises(NonIntegerIdError):
        ctc.convert_ids_to_tokens([bad])
    with pytest.raises(InvalidIdError):
        ctc.decode([5, -1])
    assert ctc.decode([5, 10**6]) == ctc.decode([5, ctc.unk_token_id])  # past every table: <unk>


def test_g8_merges_nested_thousands_deep_are_a_typed_error_naming_the_file(tmp_path):
    """A tokenizer.json whose merges nest 100,000 deep loads (decoding never reads the merges),
    then the first encode raised a bare RecursionError: a MalformedAssetError naming the file."""
    runtime = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")]))
    runtime.decoder = decoders.ByteLevel()
    path = tmp_path / "tokenizer.json"
    runtime.save(str(path))
    data = json.loads(path.read_text())
    data["model"]["merges"] = "MERGES"
    text = json.dumps(data).replace('"MERGES"', "[" * 100_000 + "]" * 100_000)
    path.write_text(text)
    tok = oasr_tok.load(str(tmp_path))
    assert tok.decode([0, 1]) == "ab"
    with pytest.raises(MalformedAssetError, match="nested too deeply") as info:
        tok.encode("ab")
    assert str(path) in str(info.value)


def test_g10_batch_decode_gives_the_offset_columns_asked_for_only():
    """batch_decode(..., output_char_offsets=True) whose first row was empty returned a
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
    from oasr_tok.demo import DATA

    tok = oasr_tok.load(DATA / "sentencepiece")
    with pytest.raises(EncodeError, match="list of lines"):
        oasr_tok.toolkits.hotwords.encode_lines(tok, lines)


def test_the_transformers_face_gives_transformers_text_by_default():
    """Wav2Vec2CTCDecoder exists to be transformers' decoder: skip_special_tokens drops the blank
    before grouping repeats, as transformers 5 does (H E L <pad> L O: HELO); the CTC-correct
    order is drop_pad_before_grouping=False (HELLO)."""
    tok = oasr_tok.load(own("wav2vec2/base-960h"))
    default, ctc_order = Wav2Vec2CTCDecoder(tok), Wav2Vec2CTCDecoder(tok, drop_pad_before_grouping=False)
    h, e, ell, o = (tok.piece_to_id(c) for c in "HELO")
    frames = [h, e, ell, default.pad_token_id, ell, o]
    assert default.decode(frames, skip_special_tokens=True) == "HELO"
    assert ctc_order.decode(frames, skip_special_tokens=True) == "HELLO"
    assert default.decode(frames) == ctc_order.decode(frames) == "HELLO"


def test_a_stream_of_one_tokenizer_is_refused_by_another():
    from oasr_tok.demo import DATA

    one = oasr_tok.load(DATA / "sentencepiece")
    other = oasr_tok.load(own("wav2vec2/base-960h"))
    stream = one.new_stream()
    with pytest.raises(StreamStateError, match="another tokenizer"):
        other.decode_incremental([1], stream)
    with pytest.raises(StreamStateError, match="another tokenizer"):
        other.decode_incremental_batch([[1]], [stream])
