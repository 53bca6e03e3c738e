"""NeMo's own SentencePieceTokenizer (nemo_toolkit 3.0.0's
nemo/collections/common/tokenizers/sentencepiece_tokenizer.py, unpacked by
fixtures/fetch_nemo.py and loaded by path: tests/peers/nemo_source.py) against
oasr_tok.NeMoTokenizer on the real SentencePiece models of ../shared/fixtures, in both of its
modes: non-legacy (special tokens are the model's own) and legacy (special tokens given as a
list or a dict and added past the model's pieces). NeMo computes every expected value in the
same run, on random texts that hold the special tokens and on random ids.

NeMo's own tests of these classes (tests/collections/common/test_spc_tokenizer.py and
friends) read models from NeMo's test-data archive, which is not reachable here; these
differential tests stand in for them (the issue's blocked part says so).

Deliberate differences, stated where they are checked: a role the model's own ids lack is
found by its conventional spelling here (icefall's <sos/eos> is bos and eos, the adapter's
docstring) or None, where NeMo answers -1 for pad/bos/eos and raises NameError for
sep/cls/mask outside legacy mode; tokens_to_ids of a piece the vocabulary lacks raises
EncodeError (NeMo gives the unk id).
"""

from __future__ import annotations

import random

import pytest

import oasr_tok
from oasr_tok import NeMoTokenizer

from cases import MULTISCRIPT
from nemo_source import nemo_classes
from paths import own, shared

MODELS = [
    "sentencepiece/icefall-librispeech-bpe500.model",
    "sentencepiece/mistral-v1.model",
    "sentencepiece/sherpa-zh-en-mix.model",
    "sentencepiece/wenet-librispeech-unigram5000.model",
]
LEGACY = {
    "list": ["<sep>", "<cls>", "</s>", "[MASK]", "<s>", "<unk>"],
    "dict": {
        "bos_token": "<s>",
        "eos_token": "</s>",
        "sep_token": "<sep>",
        "cls_token": "<cls>",
        "mask_token": "[MASK]",
        "pad_token": "<pad>",
    },
    # NeMo's legacy unk_id is the model's own unk whatever unk_token names (issue 44): a new
    # token named unk_token gets an id past the model, and unk_id does not move to it.
    "dict with unk_token": {"bos_token": "<s>", "unk_token": "<oov>", "sep_token": "<sep>"},
}


def _texts(specials, seed):
    rng = random.Random(seed)
    words = [w for text in MULTISCRIPT for w in text.split()] + ["", " ", "  ", "▁", "x"]
    out = ["", " ", "hello world", *(f"{s}" for s in specials), " ".join(specials), "".join(specials)]
    for _ in range(120):
        parts = []
        for _ in range(rng.randrange(1, 7)):
            parts.append(rng.choice(specials) if specials and rng.random() < 0.35 else rng.choice(words))
            parts.append(rng.choice(["", " ", "  "]))
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mode", [None, "list", "dict", "dict with unk_token"])
def test_nemo_sentencepiece_tokenizer(model, mode):
    SentencePieceTokenizer = nemo_classes()["SentencePieceTokenizer"]
    path = shared(model)
    given = LEGACY.get(mode) if mode else None
    theirs = SentencePieceTokenizer(path, special_tokens=given, legacy=given is not None)
    ours = NeMoTokenizer(oasr_tok.load(path), legacy_special_tokens=given)
    assert ours.vocab_size == theirs.vocab_size
    assert ours.vocab == theirs.vocab
    specials = list(given.values() if isinstance(given, dict) else given or ["</s>", "<unk>", "<s>"])
    for text in _texts(specials, model):
        assert ours.text_to_ids(text) == theirs.text_to_ids(text), text
        assert ours.text_to_tokens(text) == theirs.text_to_tokens(text), text
    rng = random.Random(model)
    extra = list(range(theirs.original_vocab_size, theirs.vocab_size))
    for _ in range(300):
        ids = [rng.randrange(theirs.vocab_size) for _ in range(rng.randrange(0, 16))]
        ids += rng.sample([0, 1, 2, *extra], min(3, 3 + len(extra)))
        rng.shuffle(ids)
        assert ours.ids_to_text(ids) == theirs.ids_to_text(ids), ids
        assert ours.ids_to_tokens(ids) == theirs.ids_to_tokens(ids), ids
        tokens = theirs.ids_to_tokens(ids)
        assert ours.tokens_to_ids(tokens) == [ours.token_to_id(t) for t in tokens]
        # a piece two ids spell maps to the lowest here; NeMo's piece_to_id agrees on these models
        assert ours.tokens_to_ids(tokens) == theirs.tokens_to_ids(tokens), tokens
    assert ours.unk_id == theirs.unk_id
    if given is None:
        for role in ("pad", "bos", "eos"):
            if getattr(theirs, f"{role}_id") != -1:  # (-1: the model has none; ours may name one by convention)
                assert getattr(ours, f"{role}_id") == getattr(theirs, f"{role}_id"), role
    elif isinstance(given, dict):
        for role in ("pad", "bos", "eos", "sep", "cls", "mask"):
            if f"{role}_token" in given:
                assert getattr(ours, f"{role}_id") == getattr(theirs, f"{role}_id"), role


def test_legacy_tokens_survive_pickling():
    import pickle

    path = shared(MODELS[1])
    ours = NeMoTokenizer(oasr_tok.load(path), {"unk": 0}, legacy_special_tokens=LEGACY["dict"])
    again = pickle.loads(pickle.dumps(ours))
    text = "<s>hello<sep> world</s>[MASK]"
    assert again.text_to_ids(text) == ours.text_to_ids(text)
    assert (again.vocab_size, again.bos_id, again.sep_id, again.unk_id) == (
        ours.vocab_size,
        ours.bos_id,
        ours.sep_id,
        0,
    )


# -- NeMo's tests/collections/common/test_spc_tokenizer.py (NVIDIA/NeMo, the version with
# TestSentencePieceTokenizerLegacy and TestSentencePieceTokenizer), translated. Its models
# m_common.model and m_new.model are in NeMo's test-data archive, which is not reachable:
# the legacy class runs on mistral-v1.model, the other on fixtures/sentencepiece/nemo-new.model
# (trained by fixtures/train_sentencepiece.py with m_new's layout: <cls> user-defined, <sep>
# control). Each assertion runs on NeMo 3.0's own class and on the adapter.

MODEL_SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "bos_token": "[CLS]",
    "mask_token": "[MASK]",
    "eos_token": "[SEP]",
    "cls_token": "[CLS]",
}
LEGACY_TEXT = "[CLS] a b c [MASK] e f [SEP] g h i [SEP]"


def _legacy_pair(with_specials=True):
    path = own("sentencepiece/nemo-new.model")
    theirs = nemo_classes()["SentencePieceTokenizer"](path, legacy=True)
    if with_specials:
        theirs.add_special_tokens(MODEL_SPECIAL_TOKENS)
    ours = NeMoTokenizer(oasr_tok.load(path), legacy_special_tokens=MODEL_SPECIAL_TOKENS if with_specials else None)
    return ours, theirs


def _new_pair():
    path = own("sentencepiece/nemo-new.model")
    return NeMoTokenizer(oasr_tok.load(path)), nemo_classes()["SentencePieceTokenizer"](path)


@pytest.mark.parametrize("side", ["oasr_tok", "nemo"])
class TestSentencePieceTokenizerLegacy:
    def test_add_special_tokens(self, side):
        tokenizer = _legacy_pair()[side == "nemo"]
        base = tokenizer.original_vocab_size if side == "nemo" else tokenizer.tokenizer.vocab_size
        assert tokenizer.vocab_size == base + len(set(MODEL_SPECIAL_TOKENS.values()))

    def test_text_to_tokens(self, side):
        tokens = _legacy_pair()[side == "nemo"].text_to_tokens(LEGACY_TEXT)
        assert len(tokens) == len(LEGACY_TEXT.split())
        assert (tokens.count("[CLS]"), tokens.count("[MASK]"), tokens.count("[SEP]")) == (1, 1, 2)

    def test_tokens_to_text(self, side):
        tokenizer = _legacy_pair(with_specials=False)[side == "nemo"]
        assert tokenizer.tokens_to_text(tokenizer.text_to_tokens(LEGACY_TEXT)) == LEGACY_TEXT

    def test_text_to_ids(self, side):
        tokenizer = _legacy_pair()[side == "nemo"]
        ids = tokenizer.text_to_ids(LEGACY_TEXT)
        assert len(ids) == len(LEGACY_TEXT.split())
        assert [ids.count(tokenizer.token_to_id(t)) for t in ("[CLS]", "[MASK]", "[SEP]")] == [1, 1, 2]

    def test_ids_to_text(self, side):
        tokenizer = _legacy_pair()[side == "nemo"]
        assert tokenizer.ids_to_text(tokenizer.text_to_ids(LEGACY_TEXT)) == LEGACY_TEXT

    def test_tokens_to_ids(self, side):
        tokenizer = _legacy_pair()[side == "nemo"]
        tokens = tokenizer.text_to_tokens(LEGACY_TEXT)
        ids = tokenizer.tokens_to_ids(tokens)
        assert len(ids) == len(tokens)
        assert [ids.count(tokenizer.token_to_id(t)) for t in ("[CLS]", "[MASK]", "[SEP]")] == [1, 1, 2]

    def test_ids_to_tokens(self, side):
        tokenizer = _legacy_pair()[side == "nemo"]
        tokens = tokenizer.text_to_tokens(LEGACY_TEXT)
        assert tokenizer.ids_to_tokens(tokenizer.tokens_to_ids(tokens)) == tokens


NEW_TEXT = "<cls> a b c <sep> e f g h i </s>"
NEW_TOKENS = ["<cls>", "a", "b", "c", "<sep>", "e", "f", "<sep>", "g", "h", "i", "</s>"]


@pytest.mark.parametrize("side", ["oasr_tok", "nemo"])
class TestSentencePieceTokenizer:
    def test_text_to_tokens(self, side):
        # <cls> is a user-defined symbol of the model; <unk>, <sep>, <s> and </s> are control symbols
        tokens = _new_pair()[side == "nemo"].text_to_tokens(NEW_TEXT)
        assert (tokens.count("<cls>"), tokens.count("<sep>"), tokens.count("</s>")) == (1, 0, 0)

    def test_tokens_to_text(self, side):
        tokenizer = _new_pair()[side == "nemo"]
        text = "<cls> a b c e f g h i"
        assert tokenizer.tokens_to_text(tokenizer.text_to_tokens(text)) == text

    def test_text_to_ids(self, side):
        tokenizer = _new_pair()[side == "nemo"]
        ids = tokenizer.text_to_ids(NEW_TEXT)
        assert [ids.count(tokenizer.token_to_id(t)) for t in ("<cls>", "<sep>", "</s>")] == [1, 0, 0]

    def test_ids_to_text(self, side):
        tokenizer = _new_pair()[side == "nemo"]
        assert tokenizer.ids_to_text(tokenizer.text_to_ids(NEW_TEXT)) == NEW_TEXT

    def test_tokens_to_ids(self, side):
        tokenizer = _new_pair()[side == "nemo"]
        ids = tokenizer.tokens_to_ids(NEW_TOKENS)
        assert len(ids) == len(NEW_TOKENS)
        assert [ids.count(tokenizer.token_to_id(t)) for t in ("<cls>", "</s>", "<sep>")] == [1, 1, 2]

    def test_ids_to_tokens(self, side):
        tokenizer = _new_pair()[side == "nemo"]
        assert tokenizer.ids_to_tokens(tokenizer.tokens_to_ids(NEW_TOKENS)) == NEW_TOKENS

    # encode / decode / batch_encode_plus / batch_decode belong to a NeMo branch whose
    # SentencePieceTokenizer has them; NeMo 3.0's (the class this face mirrors) has none.
    @pytest.mark.xfail(strict=True, raises=AttributeError, reason="NeMo 3.0's SentencePieceTokenizer has no encode")
    def test_encode(self, side):
        assert isinstance(_new_pair()[side == "nemo"].encode("This text should encode"), list)

    @pytest.mark.xfail(strict=True, raises=AttributeError, reason="NeMo 3.0's SentencePieceTokenizer has no decode")
    def test_decode(self, side):
        tokenizer = _new_pair()[side == "nemo"]
        text = "ole ole [SEP] ole ola [SEP]"
        assert tokenizer.decode(tokenizer.text_to_ids(text)) == text

    @pytest.mark.xfail(
        strict=True, raises=AttributeError, reason="NeMo 3.0's SentencePieceTokenizer has no batch_encode_plus"
    )
    def test_batch_encode_plus(self, side):
        assert "input_ids" in _new_pair()[side == "nemo"].batch_encode_plus(["Welcome to NeMo!", "This is fun"])

    @pytest.mark.xfail(
        strict=True, raises=AttributeError, reason="NeMo 3.0's SentencePieceTokenizer has no batch_decode"
    )
    def test_batch_decode(self, side):
        tokenizer = _new_pair()[side == "nemo"]
        texts = ["Jaki to jest język?", "Kropka."]
        assert tokenizer.batch_decode([tokenizer.text_to_ids(t) for t in texts]) == texts
