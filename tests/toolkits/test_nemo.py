"""The NeMo-style adapter over every kind: the six conversions round-trip against the contract
(ids_to_text is decode, text_to_ids is encode, tokens are the vocabulary's own pieces, checked
against SentencePiece / `tokenizers` / the files themselves), special-id properties come from
the checkpoint's declarations, and decode-only kinds refuse the text-to-ids directions."""

from __future__ import annotations

import json
import os

import pytest

from oasr_tok import (
    EncodeError,
    EncodeNotSupportedError,
    NeMoTokenizer,
    PiecesNotSupportedError,
    SpecError,
)
from oasr_tok.loading.resolution import load

from cases import MULTISCRIPT
from paths import own, shared

# One checkpoint per kind (and both faces of huggingface: byte-level and Metaspace/WordPiece).
PATHS = {
    "symbol_table/icefall": shared("symbol_table/icefall-librispeech-bpe500.tokens.txt"),
    "symbol_table/wenet": shared("symbol_table/wenet-aishell2.units.txt"),
    "sentencepiece/icefall": shared("sentencepiece/icefall-librispeech-bpe500.model"),
    "sentencepiece/mistral": shared("sentencepiece/mistral-v1.model"),
    "huggingface/qwen3": shared("huggingface/qwen3"),
    "huggingface/mistral-7b": shared("huggingface/mistral-7b"),
    "huggingface/wordpiece-bert": own("huggingface/wordpiece-bert"),
    "whisper/faster-whisper-base": shared("whisper/faster-whisper-base"),
    "funasr_char/paraformer": shared("funasr_char/paraformer-zh-vocab8404"),
}
TEXTS = MULTISCRIPT + ("HELLO WORLD", "你好世界", "")

_adapters: dict[str, NeMoTokenizer] = {}


def adapter(name: str) -> NeMoTokenizer:
    if name not in _adapters:
        _adapters[name] = NeMoTokenizer(load(PATHS[name]))
    return _adapters[name]


def has_pieces(nemo: NeMoTokenizer) -> bool:
    try:
        nemo.tokenizer.id_to_piece(0)
    except PiecesNotSupportedError:
        return False
    return True


def reference_tokens(name: str, text: str, ids: list[int]) -> list[str] | None:
    """The pieces the reference library gives for `text`, where there is one."""
    path = PATHS[name]
    if name.startswith("sentencepiece/"):
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=path)
        if sp.unk_id() in ids:
            # SentencePiece spells an unknown stretch by its surface ("the"); our tokens are
            # vocabulary pieces ("<unk>"), so tokens_to_ids stays the exact inverse.
            return [sp.id_to_piece(i) for i in ids]
        return sp.encode(text, out_type=str)
    if name.startswith(("huggingface/", "whisper/")):
        import tokenizers

        return (
            tokenizers.Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
            .encode(text, add_special_tokens=False)
            .tokens
        )
    return None


@pytest.mark.parametrize("name", sorted(PATHS))
def test_six_conversions_round_trip(name):
    nemo = adapter(name)
    tok = nemo.tokenizer
    if not tok.supports_encode:
        for call in (nemo.text_to_ids, nemo.text_to_tokens):
            with pytest.raises(EncodeNotSupportedError, match="decode-only"):
                call("hello")
        return
    encoded = 0
    for text in TEXTS:
        try:
            expected_ids = tok.encode(text)
        except EncodeError:  # e.g. a character list without ":" — the adapter says the same
            with pytest.raises(EncodeError):
                nemo.text_to_ids(text)
            continue
        encoded += 1
        ids = nemo.text_to_ids(text)
        assert ids == expected_ids
        # NeMo's SentencePieceTokenizer decodes every id with SentencePiece (test_nemo_face below)
        sentencepiece = tok.spec.kind == "sentencepiece"
        assert nemo.ids_to_text(ids) == (tok.processor.decode(ids) if sentencepiece else tok.decode(ids))
        assert has_pieces(nemo), "every built-in kind spells its ids as pieces"
        tokens = nemo.text_to_tokens(text)
        if sentencepiece:  # encode_as_pieces: an unknown stretch keeps its text (test_nemo_face)
            assert tokens == tok.processor.encode_as_pieces(text)
            assert nemo.ids_to_tokens(ids) == [tok.processor.id_to_piece(i) for i in ids]
            continue
        assert tokens == nemo.ids_to_tokens(ids)
        assert nemo.tokens_to_ids(tokens) == ids
        assert nemo.tokens_to_text(tokens) == nemo.ids_to_text(ids)
        expected = reference_tokens(name, text, ids)
        if expected is not None:
            assert tokens == expected
    assert encoded >= 2


@pytest.mark.parametrize("name", sorted(PATHS))
def test_every_id_spells_a_piece_that_maps_back(name):
    nemo = adapter(name)
    assert has_pieces(nemo), "every built-in kind spells its ids as pieces"
    vocab = nemo.vocab
    assert len(vocab) == nemo.vocab_size
    first = {}
    for token_id, piece in enumerate(vocab):
        first.setdefault(piece, token_id)
    assert nemo.tokens_to_ids(vocab) == [first[p] for p in vocab]
    # Rendering tokens is decoding their ids: special pieces render nothing (SentencePiece
    # models: as SentencePiece renders them, as NeMo's SentencePieceTokenizer does).
    special = sorted(nemo.tokenizer.special_ids)[:5]
    expected = nemo.tokenizer.processor.decode(special) if nemo.tokenizer.spec.kind == "sentencepiece" else ""
    assert nemo.tokens_to_text([vocab[i] for i in special]) == expected


def test_pieces_are_the_files_own_spelling():
    nemo = adapter("symbol_table/icefall")
    with open(PATHS["symbol_table/icefall"], encoding="utf-8") as handle:
        table = {int(i): p for p, i in (line.split() for line in handle)}
    assert nemo.vocab == [table[i] for i in range(len(table))]
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=PATHS["sentencepiece/mistral"])
    assert adapter("sentencepiece/mistral").vocab == [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def test_unknown_tokens_and_bad_ids_are_named():
    nemo = adapter("symbol_table/icefall")
    with pytest.raises(EncodeError, match="no-such-piece"):
        nemo.tokens_to_ids(["▁THE", "no-such-piece"])
    with pytest.raises(ValueError, match="502"):
        nemo.ids_to_tokens([5, 502])
    with pytest.raises(ValueError, match="502"):
        nemo.ids_to_text([502])


def _config_id(folder: str, key: str) -> int | None:
    import tokenizers

    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as handle:
        value = json.load(handle)[key]
    return (
        None
        if value is None
        else tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json")).token_to_id(value)
    )


def test_special_ids_from_the_checkpoints_declarations():
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=PATHS["sentencepiece/mistral"])
    m = adapter("sentencepiece/mistral")
    assert (m.bos_id, m.eos_id, m.unk_id, m.pad_id) == (sp.bos_id(), sp.eos_id(), sp.unk_id(), None)
    for name in ("huggingface/qwen3", "huggingface/mistral-7b"):
        nemo, folder = adapter(name), PATHS[name]
        assert nemo.eos_id == _config_id(folder, "eos_token") is not None
        assert nemo.bos_id == _config_id(folder, "bos_token")
        assert nemo.pad_id == _config_id(folder, "pad_token")
        assert nemo.unk_id == _config_id(folder, "unk_token")
    # Qwen3 declares bos_token: null; the adapter must not invent one.
    assert adapter("huggingface/qwen3").bos_id is None


def test_special_ids_from_conventional_names():
    # icefall: <blk> 0, <sos/eos> 1 (both bos and eos), <unk> 2, in the table and in the model
    # (whose bos_id/eos_id are -1: <sos/eos> is a user-defined piece there).
    for name in ("symbol_table/icefall", "sentencepiece/icefall"):
        nemo = adapter(name)
        assert (nemo.blank_id, nemo.bos_id, nemo.eos_id, nemo.unk_id) == (0, 1, 1, 2)
        # NeMo's AutoTokenizer (auto_tokenizer.py) sets a missing sep to eos and a missing cls to bos.
        assert (nemo.pad_id, nemo.sep_id, nemo.cls_id, nemo.mask_id) == (None, 1, 1, None)
    wenet = adapter("symbol_table/wenet")
    assert (wenet.blank_id, wenet.unk_id, wenet.bos_id, wenet.eos_id) == (0, 1, 5234, 5234)
    bert = adapter("huggingface/wordpiece-bert")
    with open(os.path.join(PATHS["huggingface/wordpiece-bert"], "tokenizer.json"), encoding="utf-8") as handle:
        added = {a["content"]: a["id"] for a in json.load(handle)["added_tokens"]}
    assert (bert.pad_id, bert.unk_id, bert.cls_id, bert.sep_id, bert.mask_id) == tuple(
        added[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    )
    # ... and a missing eos to sep, a missing bos to cls (BERT has neither).
    assert (bert.eos_id, bert.bos_id) == (added["[SEP]"], added["[CLS]"])
    whisper = adapter("whisper/faster-whisper-base")
    with open(os.path.join(PATHS["whisper/faster-whisper-base"], "tokenizer.json"), encoding="utf-8") as handle:
        added = {a["content"]: a["id"] for a in json.load(handle)["added_tokens"]}
    assert whisper.eos_id == whisper.eod == added["<|endoftext|>"]
    assert whisper.bos_id == added["<|startoftranscript|>"]
    funasr = adapter("funasr_char/paraformer")
    with open(os.path.join(PATHS["funasr_char/paraformer"], "tokens.json"), encoding="utf-8") as handle:
        tokens = json.load(handle)
    roles = (funasr.blank_id, funasr.bos_id, funasr.eos_id, funasr.unk_id)
    if has_pieces(funasr):
        assert roles == tuple(tokens.index(t) for t in ("<blank>", "<s>", "</s>", "<unk>"))
    else:  # no pieces and no tokenizer.json: nothing names the roles, so none is invented
        assert roles == (None, None, None, None)


def test_overrides_and_their_errors():
    tok = load(PATHS["symbol_table/icefall"])
    nemo = NeMoTokenizer(tok, special_tokens={"pad": "<blk>", "mask": 7, "eos": None})
    assert (nemo.pad_id, nemo.mask_id, nemo.eos_id, nemo.bos_id) == (0, 7, None, 1)
    assert nemo.pad == nemo.pad_id and nemo.mask == 7
    with pytest.raises(SpecError, match="roles"):
        NeMoTokenizer(tok, special_tokens={"padding": 0})
    with pytest.raises(SpecError, match="<nope>"):
        _ = NeMoTokenizer(tok, special_tokens={"pad": "<nope>"}).pad_id
    with pytest.raises(ValueError, match="9999"):
        _ = NeMoTokenizer(tok, special_tokens={"pad": 9999}).pad_id
    with pytest.raises(SpecError, match="oasr_tok.Tokenizer"):
        NeMoTokenizer("not a tokenizer")


def test_roles_come_from_the_tokenizers_special_tokens():
    for name in ("huggingface/qwen3", "sentencepiece/mistral", "whisper/faster-whisper-base"):
        nemo = adapter(name)
        specials = nemo.tokenizer.special_tokens
        for role in ("bos", "eos", "pad", "unk", "mask"):
            declared = specials[role]
            if declared is not None:
                assert getattr(nemo, f"{role}_id") == declared
        assert nemo.stop_ids == specials.stop_ids


def test_nemo_tokenizer_spec_subclasses_nemos_own_class(monkeypatch):
    import abc
    import sys
    import types

    import oasr_tok.toolkits.nemo as adapter_module

    # The shape of nemo.collections.common.tokenizers.tokenizer_spec.TokenizerSpec: an ABC
    # with the six abstract conversions.
    class TokenizerSpec(abc.ABC):  # noqa: B024 (its abstract methods are made in the loop)
        for _name in (
            "text_to_tokens",
            "tokens_to_text",
            "tokens_to_ids",
            "ids_to_tokens",
            "text_to_ids",
            "ids_to_text",
        ):
            locals()[_name] = abc.abstractmethod(lambda self, *a: None)

    names = [
        "nemo",
        "nemo.collections",
        "nemo.collections.common",
        "nemo.collections.common.tokenizers",
        "nemo.collections.common.tokenizers.tokenizer_spec",
    ]
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules[names[-1]].TokenizerSpec = TokenizerSpec  # type: ignore[attr-defined]
    monkeypatch.setattr(adapter_module, "_NEMO_SPEC_CLASS", None)
    tok = load(PATHS["symbol_table/icefall"])
    spec = adapter_module.nemo_tokenizer_spec(tok)
    assert isinstance(spec, TokenizerSpec) and isinstance(spec, NeMoTokenizer)
    assert spec.ids_to_text([5, 6]) == tok.decode([5, 6]) and spec.eos_id == 1


def test_nemo_tokenizer_spec_without_nemo_is_a_typed_error(monkeypatch):
    import sys

    import oasr_tok.toolkits.nemo as adapter_module
    from oasr_tok import BackendNotInstalledError

    monkeypatch.setitem(sys.modules, "nemo", None)
    monkeypatch.setattr(adapter_module, "_NEMO_SPEC_CLASS", None)
    with pytest.raises(BackendNotInstalledError, match="NeMo"):
        adapter_module.nemo_tokenizer_spec(load(PATHS["symbol_table/icefall"]))


NEMO_MODELS = [
    "sentencepiece/icefall-librispeech-bpe500.model",
    "sentencepiece/mistral-v1.model",
    "sentencepiece/sherpa-zh-en-mix.model",
    "sentencepiece/wenet-librispeech-unigram5000.model",
]


@pytest.mark.parametrize("model", NEMO_MODELS)
def test_nemo_face_is_nemos_sentencepiece_tokenizer(model):
    """NeMo's SentencePieceTokenizer (non-legacy) is SentencePiece's encode_as_ids and
    decode_ids (nemo/collections/common/tokenizers/sentencepiece_tokenizer.py): a control
    symbol written in the text is spelled out, <unk> decodes as " ⁇ ", user-defined symbols
    print. The adapter equals it on 300 random id lists and on texts holding special
    spellings, while the tokenizer's own decode keeps its rule (specials left out)."""
    import random

    import sentencepiece as spm

    path = shared(model)
    sp = spm.SentencePieceProcessor(model_file=path)
    nemo = NeMoTokenizer(load(path))
    rng = random.Random(5)
    size = sp.get_piece_size()
    for _ in range(300):
        ids = [rng.randrange(size) for _ in range(rng.randrange(0, 20))] + rng.sample([0, 1, 2], 2)
        rng.shuffle(ids)
        assert nemo.ids_to_text(ids) == sp.decode_ids(ids), ids
    for text in ["hello </s> world", "<unk> <s> x", "<sos/eos> A <blk>", "今天 HELLO", ""]:
        assert nemo.text_to_ids(text) == sp.encode_as_ids(text), text
        assert nemo.text_to_tokens(text) == sp.encode_as_pieces(text), text
