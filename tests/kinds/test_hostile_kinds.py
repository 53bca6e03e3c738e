"""The kinds on hostile arguments and options: encode of what is not text and its flags, Whisper's
helpers, an absurd vocab_size option, added tokens under any normalizer (tokenizers the oracle).

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import math
import os
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

import oasr_tok
from oasr_tok import (
    EncodeError,
    NonIntegerIdError,
    TimingError,
    TokenizerSpec,
    build_tokenizer,
)

from hostile import in_child
from paths import own, shared

WHISPER_EN = own("whisper/en/tokenizer.json")


BYTELEVEL = own("huggingface/bytelevel-bpe/tokenizer.json")


ICEFALL_MODEL = shared("sentencepiece/icefall-librispeech-bpe500.model")


def _encoders():
    return {
        "sentencepiece": build_tokenizer(TokenizerSpec("sentencepiece", {"model": ICEFALL_MODEL})),
        "huggingface": build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": BYTELEVEL})),
        "whisper": build_tokenizer(TokenizerSpec("whisper", {"tokenizer": WHISPER_EN})),
        "funasr_char": oasr_tok.load(own("funasr_char/small/tokens.json")),
    }


def _added_with_normalizer(folder, tokens, normalizer, normalized=None) -> Tokenizer:
    runtime = Tokenizer(models.BPE())
    runtime.decoder = decoders.ByteLevel()
    flags = normalized or [True] * len(tokens)
    runtime.add_tokens([AddedToken(t, normalized=flag) for t, flag in zip(tokens, flags)])
    runtime.normalizer = normalizer
    runtime.save(os.path.join(folder, "tokenizer.json"))
    return runtime


def test_an_absurd_whisper_vocab_size_option_is_refused():
    """Hostile input, issue 12, finding 2: one absurd id must not size every table."""
    result = in_child(
        "import oasr_tok\n"
        f"spec = oasr_tok.TokenizerSpec('whisper', {{'tokenizer': {WHISPER_EN!r}}}, {{'vocab_size': 10**12}})\n"
        "try:\n"
        "    oasr_tok.build_tokenizer(spec)\n"
        "    out = None\n"
        "except BaseException as exc:\n"
        "    out = [type(exc).__name__, str(exc)]\n"
        "print(json.dumps(out))\n",
        memory_mb=1024,
    )
    assert result[0] == "SpecError" and "far beyond" in result[1]


@pytest.mark.parametrize("text", [None, 5, b"abc", ["a"], "a\ud800b", "\udfff"])
def test_encode_refuses_non_text_with_encode_error(text):
    """Hostile input, issue 12, finding 12: encode errors are the same everywhere."""
    for name, tok in _encoders().items():
        with pytest.raises(EncodeError) as info:
            tok.encode(text)
        assert len(str(info.value)) < 300, name


def test_whisper_helpers_check_their_arguments():
    """Hostile input, issue 12, finding 12: whisper's helpers check their arguments."""
    tok = build_tokenizer(TokenizerSpec("whisper", {"tokenizer": WHISPER_EN}))
    for seconds in (math.nan, math.inf, "x", "1.0", None, 10**400, 31.0, -1):
        with pytest.raises(TimingError):
            tok.timestamp_id(seconds)
    assert tok.timestamp_id(Fraction(1, 50)) == tok.timestamp_begin + 1
    for language in ("xx", "", 5, ["en"]):
        with pytest.raises(EncodeError):
            tok.sot_sequence(language)
    with pytest.raises(EncodeError):
        tok.sot_sequence("en", task="dance")
    ids = [tok.timestamp_begin, 0, tok.timestamp_begin + 10]
    for offset in ("x", math.nan, math.inf, None, [1.0]):
        with pytest.raises(TimingError):
            tok.token_times(ids, offset=offset)
    with pytest.raises(NonIntegerIdError):
        tok.timestamp_seconds(1.5)


@pytest.mark.parametrize("flag", ["no", 0, 1, "", [True], None])
def test_encode_flags_are_booleans_not_truth_values(flag):
    """Hostile input, third round (issue 35), defect 4: accepted or unclear (encode's flags are
    booleans, not truth values)."""
    tok = oasr_tok.load(own("funasr_char/small/tokens.json"))
    if flag is not None:
        with pytest.raises(EncodeError, match="add_special_tokens"):
            tok.encode("a", add_special_tokens=flag)
    with pytest.raises(EncodeError, match="split_special_tokens"):
        tok.encode("a", split_special_tokens=flag)


def test_added_tokens_under_a_bytelevel_normalizer_decode_as_tokenizers_does(tmp_path):
    """Hostile input, fourth round (issue 44), added tokens under a ByteLevel normalizer (a
    regression).

    Tokenizer(BPE()), decoder ByteLevel, add_tokens(["kuća", "međa"]), normalizer ByteLevel:
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
    """Hostile input, fourth round (issue 44), added tokens under a ByteLevel normalizer, as a
    class: any normalizer."""
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
