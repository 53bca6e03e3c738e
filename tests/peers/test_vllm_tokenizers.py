"""vLLM's tokenizer tests that concern a tokenizer mode, translated onto local files for
tokenizer_mode="oasr".

Upstream: vllm-project/vllm v0.33.0 (the PyPI sdist vllm-0.33.0.tar.gz; git commit g4ba787ec9):

* tests/tokenizers_/test_basic.py: test_tokenizer_like_protocol (every attribute of
  TokenizerLike, here for every kind of mode "oasr"), test_special_tokens (BAAI/bge-base-en's
  "[UNK]" * 510 -> 512 ids; here the project's own WordPiece vocabulary, fixtures/wordpiece/
  uncased, which adds [CLS] and [SEP] the same way). Its other tests are about loading transformers' tokenizers from the
  hub at revisions (test_tokenizer_revision, the code_revision tests,
  test_hub_tokenizer_loads_from_local_snapshot): mode "oasr" reads local files, and a hub name
  through vLLM's snapshot of its non-weight files (tests/integrations/test_vllm_tokenizer.py's
  test_a_hub_repository_is_downloaded_as_mode_hf_does).
* tests/tokenizers_/test_registry.py: test_customized_tokenizer (a mode registered, loaded by
  TokenizerRegistry.load_tokenizer and get_tokenizer). Its other tests check mode "hf" and
  "mistral" argument resolution and transformers' config registration.
* tests/tokenizers_/test_hf.py: test_cached_tokenizer's consistency checks (special ids and
  tokens, vocabulary, length, encode) on a pickled copy, and
  test_cached_tokenizer_max_token_id_is_a_valid_id. Its other tests concern transformers'
  chat-template files and thread pools of CachedHfTokenizer.

tests/tokenizers_/test_mistral.py, test_deepseek_v4.py and test_deepseek_v41.py test other
modes' own tokenizers and encodings.
"""

from __future__ import annotations

import pickle
from typing import _get_protocol_attrs  # type: ignore[attr-defined]

import pytest

from paths import own
from vllm_reference import KIND_PATHS, require_vllm, tokenizer

require_vllm()

from vllm.tokenizers import TokenizerLike, get_tokenizer  # noqa: E402
from vllm.tokenizers.registry import TokenizerRegistry  # noqa: E402

from oasr_tok.integrations.vllm import MODE, register  # noqa: E402
from oasr_tok.integrations.vllm.tokenizer import OasrTokenizer  # noqa: E402


def _assert_tokenizer_like(tok: object) -> None:
    missing = [k for k in _get_protocol_attrs(TokenizerLike) if not hasattr(tok, k)]
    assert not missing, f"Missing attrs: {missing}"


@pytest.mark.parametrize("kind", sorted(KIND_PATHS))
def test_tokenizer_like_protocol(kind):
    tok = tokenizer(KIND_PATHS[kind], MODE)
    assert isinstance(tok, OasrTokenizer)
    _assert_tokenizer_like(tok)


@pytest.mark.parametrize("n_tokens", [510])
def test_special_tokens(n_tokens):
    tok = get_tokenizer(own("wordpiece/uncased"), tokenizer_mode=MODE)
    prompt_token_ids = tok.encode("[UNK]" * n_tokens)
    assert len(prompt_token_ids) == n_tokens + 2


def test_customized_tokenizer():
    register()
    assert TokenizerRegistry.tokenizers[MODE] == ("oasr_tok.integrations.vllm.tokenizer", "OasrTokenizer")
    path = own("wordpiece/uncased")
    for tok in (TokenizerRegistry.load_tokenizer(MODE, path), get_tokenizer(path, tokenizer_mode=MODE)):
        assert isinstance(tok, OasrTokenizer)
        assert tok.name_or_path == path
        inner = tok.tokenizer.special_tokens
        assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (inner.bos_id, inner.eos_id, inner.pad_id)


@pytest.mark.parametrize("kind", sorted(KIND_PATHS))
def test_cached_tokenizer(kind):
    reference = tokenizer(KIND_PATHS[kind], MODE)
    copy = pickle.loads(pickle.dumps(reference))
    _check_consistency(copy, reference)


def _check_consistency(target, expected):
    assert isinstance(target, type(expected))
    assert target.all_special_ids == expected.all_special_ids
    assert target.all_special_tokens == expected.all_special_tokens
    assert target.get_vocab() == expected.get_vocab()
    assert len(target) == len(expected)
    assert getattr(target, "padding_side", None) == getattr(expected, "padding_side", None)
    if expected.tokenizer.supports_encode:
        # (a Whisper .tiktoken file has no post-processor: its special tokens are the prompt's to add)
        specials = expected.tokenizer.spec.kind != "whisper" or "tokenizer" in expected.tokenizer.spec.files
        assert target.encode("prompt", add_special_tokens=specials) == expected.encode(
            "prompt", add_special_tokens=specials
        )


@pytest.mark.parametrize("kind", sorted(KIND_PATHS))
def test_cached_tokenizer_max_token_id_is_a_valid_id(kind):
    tok = tokenizer(KIND_PATHS[kind], MODE)
    expected = max(max(tok.get_vocab().values()), tok.vocab_size - 1)
    assert tok.max_token_id == expected
    assert tok.decode([tok.max_token_id]) == tok.tokenizer.with_specials().decode([tok.max_token_id])
