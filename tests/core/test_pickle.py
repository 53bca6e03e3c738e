"""Pickling by spec (pickle_mode = "spec"; by value: test_pickle_value.py): every kind ships to a worker as its TokenizerSpec (a few hundred bytes, not
its tables), rebuilds there, and decodes an n-best list exactly as the parent does. The unit a
worker runs is decode_batch on a slice of a large n-best list; shown with a spawn-context
multiprocessing pool (the start method that shares nothing with the parent)."""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import random

import pytest

from oasr_tok import NeMoTokenizer, Tokenizer, TokenizerSpec, build_tokenizer
from oasr_tok.kinds.symbol_table import SymbolTableTokenizer
from oasr_tok.loading.resolution import load

from paths import shared
from tekken_files import derived as derived_tekken

PATHS = {
    "symbol_table": shared("symbol_table/wenet-aishell2.units.txt"),
    "sentencepiece": shared("sentencepiece/mistral-v1.model"),
    "huggingface/qwen3": shared("huggingface/qwen3"),
    "huggingface/qwen2-audio-like": shared("huggingface/qwen2-audio-like"),
    "whisper": shared("whisper/faster-whisper-base"),
    "funasr_char": shared("funasr_char/paraformer-zh-vocab8404"),
    "tekken": derived_tekken(),
    "whisper/tiktoken": shared("whisper-tiktoken/multilingual.tiktoken"),
}
TEXTS = ("你好世界", "HELLO WORLD", "the quick brown fox 😀", "naïve café")

_built: dict[str, Tokenizer] = {}


def tokenizer(name: str) -> Tokenizer:
    if name not in _built:
        _built[name] = load(PATHS[name])
    return _built[name]


def nbest(tok: Tokenizer, size: int, seed: int) -> list[list[int]]:
    """A large n-best list: encoded texts where the kind encodes, random ids everywhere
    (specials, byte pieces, timestamps included), and empty hypotheses."""
    rng = random.Random(seed)
    base: list[list[int]] = [[]]
    if tok.supports_encode:
        for text in TEXTS:
            try:
                base.append(tok.encode(text))
            except ValueError:  # a character list cannot spell every text
                pass
    specials = sorted(tok.special_ids)
    hyps = []
    for k in range(size):
        hyp = list(base[k % len(base)])
        for _ in range(rng.randrange(0, 12)):
            pool = specials if specials and rng.random() < 0.1 else None
            hyp.insert(rng.randrange(len(hyp) + 1), rng.choice(pool) if pool else rng.randrange(tok.vocab_size))
        hyps.append(hyp)
    return hyps


# -- in the worker ---------------------------------------------------------------------------------

_worker_tok: Tokenizer | None = None


def _install(tok: Tokenizer) -> None:
    """Pool initializer: the tokenizer arrives pickled (by spec) once per worker."""
    global _worker_tok
    _worker_tok = tok


def _decode_slice(hyps: list[list[int]]) -> tuple[int, list[str]]:
    assert _worker_tok is not None
    return os.getpid(), _worker_tok.decode_batch(hyps)


# -- tests ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PATHS))
def test_pickles_by_spec_and_decodes_the_same(name):
    tok = tokenizer(name)
    tok.pickle_mode = "spec"  # the default is by value (tests/core/test_pickle_value.py)
    try:
        payload = pickle.dumps(tok)
    finally:
        tok.pickle_mode = "value"
    assert len(payload) < 4096  # the spec, not the tables
    clone = pickle.loads(payload)
    assert type(clone) is type(tok) and clone.spec == tok.spec
    assert clone.vocab_size == tok.vocab_size and clone.special_ids == tok.special_ids
    hyps = nbest(tok, 200, seed=1)
    assert clone.decode_batch(hyps) == [tok.decode(h) for h in hyps]
    state_a: dict = {}
    state_b: dict = {}
    for chunk in hyps[3], hyps[4]:
        assert clone.decode_incremental(chunk, state_b) == tok.decode_incremental(chunk, state_a)


@pytest.mark.parametrize("name", sorted(PATHS))
def test_spawned_workers_decode_an_nbest_list(name):
    tok = tokenizer(name)
    hyps = nbest(tok, 3000, seed=7)
    expected = [tok.decode(h) for h in hyps]
    slices = [hyps[i : i + 250] for i in range(0, len(hyps), 250)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(2, initializer=_install, initargs=(tok,)) as pool:
        answers = pool.map(_decode_slice, slices)
    assert {pid for pid, _ in answers} - {os.getpid()}  # really decoded elsewhere
    assert [text for _, texts in answers for text in texts] == expected


def test_paths_are_absolute_so_workers_need_no_shared_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(os.path.dirname(PATHS["symbol_table"]))
    tok = load(os.path.basename(PATHS["symbol_table"]))
    monkeypatch.chdir(tmp_path)
    assert pickle.loads(pickle.dumps(tok)).decode([3, 4, 5]) == tok.decode([3, 4, 5])


def test_legacy_sentencepiece_symbol_table_pickles():
    tok = SymbolTableTokenizer.from_sentencepiece_model(shared("sentencepiece/icefall-librispeech-bpe500.model"))
    clone = pickle.loads(pickle.dumps(tok))
    assert clone.decode(list(range(3, 60))) == tok.decode(list(range(3, 60)))


@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_copy_is_the_tokenizer_itself(name, monkeypatch):
    """Copies (copy.copy, deepcopy of what holds one) share the tokenizer and never pickle it."""
    tok = tokenizer(name)

    def no_pickling(self, protocol=None):
        raise AssertionError("copied through pickling")

    monkeypatch.setattr(type(tok), "__reduce_ex__", no_pickling)
    assert copy.copy(tok) is tok
    held = {"tokenizer": tok, "state": {"text": "x"}}
    copied = copy.deepcopy(held)
    assert copied["tokenizer"] is tok and copied["state"] == held["state"]
    assert copied["state"] is not held["state"]


def test_a_tokenizer_without_a_spec_is_copied_but_refuses_pickling_clearly():
    bare = SymbolTableTokenizer(["<blk>", "<sos/eos>", "<unk>", "\u2581A"])
    assert copy.copy(bare) is bare and copy.deepcopy(bare) is bare
    with pytest.raises(TypeError, match="not built from a TokenizerSpec"):
        pickle.dumps(bare)


def test_the_nemo_adapter_pickles_with_its_overrides():
    nemo = NeMoTokenizer(
        build_tokenizer(TokenizerSpec("symbol_table", {"units": PATHS["symbol_table"]}, {"special_ids": [0, 1, 5234]})),
        special_tokens={"pad": 0},
    )
    clone = pickle.loads(pickle.dumps(nemo))
    assert clone.special_token_ids() == nemo.special_token_ids()
    assert clone.ids_to_tokens([5, 6, 7]) == nemo.ids_to_tokens([5, 6, 7])
