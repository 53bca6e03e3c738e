"""HuggingFace tokenizers' bindings/python/tests/bindings/test_decoders.py (huggingface/tokenizers
at 09069717e94e1a22010d340bb947d7e49ef2baa9), translated: each upstream test_decoding case is a
tokenizer.json whose WordLevel vocabulary holds the case's token strings (ids in order of first
appearance) and whose decoder is the case's, read by oasr_tok's huggingface kind; the
expected value is the upstream literal, and the runtime's decode of the same ids and the
decoder's own decode of the tokens say the same in this run. Each case is also streamed one
id at a time (the pieces concatenate to it, nothing taken back).

Not translated: test_instantiate, test_can_modify and test_manual_reload test the Python decoder
objects themselves (construction, pickling, attribute setters); oasr_tok has no decoder objects.
test_manual_reload's point, a decoder written out with all its fields, is what the runtime
saves and what every case here reads.
"""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer
from tokenizers.decoders import (
    CTC,
    BPEDecoder,
    ByteFallback,
    ByteLevel,
    Fuse,
    Metaspace,
    Replace,
    Sequence,
    Strip,
    WordPiece,
)
from tokenizers.models import WordLevel

from oasr_tok import TokenizerSpec, build_tokenizer

CASES = [
    # (upstream class, decoder, tokens, expected)
    ("TestByteLevel", ByteLevel(), ["My", "Ġname", "Ġis", "ĠJohn"], "My name is John"),
    ("TestReplace", Replace("_", " "), ["My", "_name", "_is", "_John"], "My name is John"),
    ("TestWordPiece", WordPiece(), ["My", "na", "##me", "is", "Jo", "##hn"], "My name is John"),
    ("TestWordPiece", WordPiece(), ["I", "'m", "Jo", "##hn"], "I'm John"),
    ("TestWordPiece", WordPiece(prefix="__", cleanup=False), ["My", "na", "__me", "is", "Jo", "__hn"], "My name is John"),
    ("TestWordPiece", WordPiece(prefix="__", cleanup=False), ["I", "'m", "Jo", "__hn"], "I 'm John"),
    ("TestByteFallback", ByteFallback(), ["My", " na", "me"], "My name"),
    ("TestByteFallback", ByteFallback(), ["<0x61>"], "a"),
    ("TestByteFallback", ByteFallback(), ["<0xE5>"], "�"),
    ("TestByteFallback", ByteFallback(), ["<0xE5>", "<0x8f>"], "��"),
    ("TestByteFallback", ByteFallback(), ["<0xE5>", "<0x8f>", "<0xab>"], "叫"),
    ("TestByteFallback", ByteFallback(), ["<0xE5>", "<0x8f>", "a"], "��a"),
    ("TestByteFallback", ByteFallback(), ["<0xE5>", "<0x8f>", "<0xab>", "a"], "叫a"),
    ("TestFuse", Fuse(), ["My", " na", "me"], "My name"),
    ("TestStrip", Strip(content="_", left=1, right=0), ["_My", " na", "me", " _-", "__-"], "My name _-_-"),
    ("TestMetaspace", Metaspace(), ["▁My", "▁name", "▁is", "▁John"], "My name is John"),
    ("TestMetaspace", Metaspace(replacement="-", prepend_scheme="never"), ["-My", "-name", "-is", "-John"], " My name is John"),
    ("TestBPEDecoder", BPEDecoder(), ["My</w>", "na", "me</w>", "is</w>", "Jo", "hn</w>"], "My name is John"),
    ("TestBPEDecoder", BPEDecoder(suffix="_"), ["My_", "na", "me_", "is_", "Jo", "hn_"], "My name is John"),
    ("TestCTCDecoder", CTC(), ["<pad>", "<pad>", "h", "e", "e", "l", "l", "<pad>", "l", "o", "o", "o", "<pad>"], "hello"),
    ("TestCTCDecoder", CTC(pad_token="[PAD]"), ["[PAD]", "[PAD]", "h", "e", "e", "l", "l", "[PAD]", "l", "o", "o", "o", "[PAD]"], "hello"),
    ("TestSequenceDecoder", Sequence([CTC(), Metaspace()]), ["▁", "▁", "H", "H", "i", "i", "▁", "y", "o", "u"], "Hi you"),
]  # fmt: skip


@pytest.mark.parametrize("upstream, decoder, tokens, expected", CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_decoding(tmp_path, upstream, decoder, tokens, expected):
    vocab: dict[str, int] = {}
    for token in tokens:
        vocab.setdefault(token, len(vocab))
    runtime = Tokenizer(WordLevel(vocab, unk_token=tokens[0]))
    runtime.decoder = decoder
    path = tmp_path / "tokenizer.json"
    runtime.save(str(path))
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": str(path)}))
    ids = [vocab[t] for t in tokens]
    assert tok.decode(ids) == expected
    assert runtime.decode(ids) == decoder.decode(tokens) == expected
    state: dict = {}
    streamed = ""
    for token_id in ids:
        streamed += tok.decode_incremental([token_id], state)
        assert expected.startswith(streamed)
    assert streamed + tok.decode_incremental([], state, final=True) == expected
    assert "".join(tok.token_pieces(ids)) == expected
