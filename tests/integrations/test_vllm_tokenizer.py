"""tokenizer_mode="oasr" as vLLM 0.33's TokenizerLike, for every kind, through vLLM's own
get_tokenizer; where vLLM's mode "hf" reads the same tokenizer.json, every answer the protocol
shares with it is mode "hf"'s (decode with and without special tokens, convert_ids_to_tokens,
convert_tokens_to_string, convert_tokens_to_ids, the vocabulary, the added vocabulary, special
ids by role, encode, __call__, the chat template)."""

from __future__ import annotations

import json
import pickle
import random
from typing import _get_protocol_attrs  # type: ignore[attr-defined]

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paths import shared
from strategies import served_texts
from vllm_reference import HF_FOLDERS, KIND_PATHS, require_vllm, tokenizer

require_vllm()

from vllm.tokenizers import TokenizerLike, get_tokenizer  # noqa: E402
from vllm.tokenizers.registry import TokenizerRegistry  # noqa: E402

from oasr_tok.errors import (  # noqa: E402
    AssetNotFoundError,
    EncodeNotSupportedError,
    InvalidIdError,
    ResolveError,
    TokenizerError,
)
from oasr_tok.integrations.vllm import MODE, register  # noqa: E402
from oasr_tok.integrations.vllm.tokenizer import OasrTokenizer  # noqa: E402

# Where mode "hf" and oasr_tok read the same specials (a tokenizer_config.json names them):
# transformers names none for Moonshine (no config), and only six of qwen2-audio-like's 3,288.
NAMED_SPECIALS = ("qwen3", "mistral-7b")


def pair(name: str):
    return tokenizer(HF_FOLDERS[name], "hf"), tokenizer(HF_FOLDERS[name], "oasr")


def test_the_mode_is_registered():
    register()
    register()  # idempotent
    assert TokenizerRegistry.tokenizers[MODE] == ("oasr_tok.integrations.vllm.tokenizer", "OasrTokenizer")
    assert TokenizerRegistry.load_tokenizer_cls(MODE) is OasrTokenizer


@pytest.mark.parametrize("kind", sorted(KIND_PATHS))
def test_every_kind_is_tokenizer_like(kind):
    tok = tokenizer(KIND_PATHS[kind], "oasr")
    assert isinstance(tok, OasrTokenizer)
    missing = [name for name in _get_protocol_attrs(TokenizerLike) if not hasattr(tok, name)]
    assert not missing, f"missing {missing}"
    inner = tok.tokenizer
    assert len(tok) == tok.vocab_size == inner.vocab_size
    assert tok.max_token_id == inner.vocab_size - 1
    assert tok.max_chars_per_token >= 1
    assert tok.is_fast and tok.truncation_side == "left"
    assert set(tok.all_special_ids) == set(inner.special_ids)
    assert tok.eos_token_id == inner.special_tokens.eos_id
    ids = [i for i in range(0, inner.vocab_size, max(1, inner.vocab_size // 200))]
    assert tok.decode(ids, skip_special_tokens=True) == inner.decode(ids)
    assert tok.decode(ids[3]) == inner.with_specials().decode([ids[3]])
    assert tok.batch_decode([ids, ids[:5]], skip_special_tokens=True) == [inner.decode(ids), inner.decode(ids[:5])]
    assert len(tok.convert_ids_to_tokens(ids)) == len(ids)
    assert hash(tok) == hash(id(tok))
    if inner.supports_encode:
        encoded = tok.encode("hello world", add_special_tokens=False)
        assert encoded == inner.encode("hello world", add_special_tokens=False)
        assert tok("hello world", add_special_tokens=False)["input_ids"] == encoded
        assert tok(["hello", "world"], add_special_tokens=False)["input_ids"] == [
            inner.encode("hello", add_special_tokens=False),
            inner.encode("world", add_special_tokens=False),
        ]
    else:
        with pytest.raises(EncodeNotSupportedError, match=inner.spec.kind):
            tok.encode("hello")
        with pytest.raises(EncodeNotSupportedError, match="decode-only"):
            tok("hello")


@pytest.mark.parametrize("name", sorted(HF_FOLDERS))
@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1))
def test_decode_and_tokens_are_mode_hfs(name, seed):
    hf, oa = pair(name)
    rng = random.Random(seed)
    specials = sorted(oa.tokenizer.special_ids)
    ids = [rng.randrange(len(oa)) if rng.random() < 0.8 else rng.choice(specials) for _ in range(rng.randrange(1, 30))]
    for skip in (True, False):
        assert oa.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip)
    assert oa.convert_ids_to_tokens(ids) == hf.convert_ids_to_tokens(ids)
    if name in NAMED_SPECIALS:
        assert oa.convert_ids_to_tokens(ids, skip_special_tokens=True) == hf.convert_ids_to_tokens(
            ids, skip_special_tokens=True
        )
    tokens = hf.convert_ids_to_tokens(ids)
    assert oa.convert_tokens_to_ids(tokens) == hf.convert_tokens_to_ids(tokens)


@pytest.mark.parametrize("name", sorted(HF_FOLDERS))
@settings(deadline=None, max_examples=30)
@given(text=served_texts(max_size=30))
def test_encode_and_token_strings_are_mode_hfs(name, text):
    hf, oa = pair(name)
    for add in (True, False):
        assert oa.encode(text, add_special_tokens=add) == hf.encode(text, add_special_tokens=add)
    assert oa(text)["input_ids"] == hf(text)["input_ids"]
    tokens = hf.convert_ids_to_tokens(hf.encode(text, add_special_tokens=False))
    assert oa.convert_tokens_to_string(tokens) == hf.convert_tokens_to_string(tokens)
    assert oa.encode(text, truncation=True, max_length=3) == hf.encode(text, truncation=True, max_length=3)


@pytest.mark.parametrize("name", sorted(HF_FOLDERS))
def test_vocabulary_and_specials_are_mode_hfs(name):
    hf, oa = pair(name)
    assert oa.get_vocab() == hf.get_vocab()
    assert oa.get_added_vocab() == hf.get_added_vocab()
    assert oa.max_token_id == hf.max_token_id
    assert oa.max_chars_per_token == hf.max_chars_per_token
    assert len(oa) == len(hf)
    assert oa.num_special_tokens_to_add() == hf.num_special_tokens_to_add()
    if name in NAMED_SPECIALS:
        assert set(oa.all_special_ids) == set(hf.all_special_ids)
        assert set(oa.all_special_tokens) == set(hf.all_special_tokens)
        assert (oa.bos_token_id, oa.eos_token_id, oa.pad_token_id) == (
            hf.bos_token_id,
            hf.eos_token_id,
            hf.pad_token_id,
        )
    else:
        # transformers names fewer (module docstring); skip_special_tokens drops the same ids
        assert set(hf.all_special_ids) <= set(oa.all_special_ids)
        shown = sorted(oa.all_special_ids)[:50]
        assert oa.decode(shown, skip_special_tokens=True) == hf.decode(shown, skip_special_tokens=True) == ""


def test_chat_template_is_mode_hfs():
    hf, oa = pair("qwen3")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 世界"}]
    for add in (True, False):
        text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=add)
        assert oa.apply_chat_template(messages, tokenize=False, add_generation_prompt=add) == text
        assert oa.apply_chat_template(conversation=messages, add_generation_prompt=add) == text
        ids = hf.apply_chat_template(messages, tokenize=True, add_generation_prompt=add, return_dict=False)
        assert oa.apply_chat_template(messages, tokenize=True, add_generation_prompt=add) == ids
    assert oa.get_chat_template() == hf.get_chat_template(None) == oa.chat_template
    assert oa.get_chat_template("{{ messages }}") == "{{ messages }}"


def test_vllms_renderer_serves_the_mode():
    """vLLM's renderer registry knows mode "oasr" (HfRenderer over the tokenizer's own chat
    template) once a mode-"oasr" tokenizer is loaded."""
    from vllm.renderers.registry import RENDERER_REGISTRY

    pair("qwen3")
    assert RENDERER_REGISTRY.load_renderer_cls(MODE).__name__ == "HfRenderer"


def test_a_pickle_is_the_same_tokenizer():
    """vLLM's test_cached_tokenizer consistency checks, on a pickled copy."""
    _, oa = pair("qwen3")
    copy = pickle.loads(pickle.dumps(oa))
    assert isinstance(copy, OasrTokenizer)
    assert copy.all_special_ids == oa.all_special_ids
    assert copy.all_special_tokens == oa.all_special_tokens
    assert copy.get_vocab() == oa.get_vocab()
    assert len(copy) == len(oa)
    assert copy.encode("prompt") == oa.encode("prompt")


def test_a_hub_repository_is_downloaded_as_mode_hf_does(monkeypatch, tmp_path):
    """A name that is no local path is vLLM's: its files other than weights are downloaded
    (vLLM's get_non_weight_snapshot_path), then read like a local folder."""
    from vllm.transformers_utils import repo_utils

    asked = []

    def snapshot(repo_id, revision=None, cache_dir=None, token=None):
        asked.append((repo_id, revision, cache_dir))
        return shared("huggingface/qwen3")

    monkeypatch.setattr(repo_utils, "get_non_weight_snapshot_path", snapshot)
    tok = OasrTokenizer.from_pretrained("Qwen/Qwen3-0.6B", revision="main", download_dir=str(tmp_path))
    assert asked == [("Qwen/Qwen3-0.6B", "main", str(tmp_path))]
    assert tok.name_or_path == "Qwen/Qwen3-0.6B"
    assert tok.decode(tok.encode("hi there", add_special_tokens=False)) == "hi there"


# -- bad input: a typed error naming it ----------------------------------------------------------


def test_an_id_past_the_vocabulary_is_named():
    _, oa = pair("qwen3")
    for call in (
        lambda: oa.decode([1, len(oa)]),
        lambda: oa.convert_ids_to_tokens([len(oa) + 7]),
        lambda: oa.decode(-1),
    ):
        with pytest.raises(InvalidIdError, match="out of range"):
            call()


def test_missing_tokenizer_files_are_named(tmp_path):
    empty = tmp_path / "model"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    with pytest.raises(ResolveError, match=str(empty)):
        get_tokenizer(str(empty), tokenizer_mode=MODE)
    missing = tmp_path / "gone.gguf"
    with pytest.raises(TokenizerError) as caught:
        OasrTokenizer.from_pretrained(str(missing.parent / "nowhere" / "model.gguf"))
    assert "nowhere" in str(caught.value)


def test_another_kinds_files_are_named(tmp_path):
    """A tokenizer_spec.json that calls a SentencePiece model a tokenizer.json: the kind's error
    names the file, no tokenizer is made."""
    model = shared("sentencepiece/mistral-v1.model")
    (tmp_path / "tokenizer_spec.json").write_text(
        json.dumps({"kind": "huggingface", "files": {"tokenizer": model}, "options": {}})
    )
    with pytest.raises(TokenizerError, match="mistral-v1.model"):
        get_tokenizer(str(tmp_path), tokenizer_mode=MODE)
    with pytest.raises(AssetNotFoundError):
        (tmp_path / "tokenizer_spec.json").write_text(
            json.dumps({"kind": "sentencepiece", "files": {"model": str(tmp_path / "absent.model")}, "options": {}})
        )
        get_tokenizer(str(tmp_path), tokenizer_mode=MODE)
