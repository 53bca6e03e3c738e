"""The tiktoken kind against tiktoken itself, case by case, on Meta's two tokenizer.model files:
Meta's own Tokenizer (llama_models/llama3|4/tokenizer.py, its tiktoken Encoding) is the other side.

* ids: random runs of ranks, every special id (each one at least once per file), every reserved
  one, the byte ranks of characters split across tokens (lead and continuation bytes, valid and
  not), the vocabulary's edges. tok.decode / decode_bytes == Encoding.decode / decode_bytes of
  the ids without the special ones; with_specials().decode / decode_bytes == Encoding.decode /
  decode_bytes of all of them; every fifth run is also streamed (one id at a time and in
  random chunks): the deltas join to the decode. Ids past the end (n_vocab, beyond, -1, 2**63)
  are refused by InvalidIdError, where tiktoken raises KeyError / OverflowError.
* text: random user-like text (tests/strategies.py random_text: every script, emoji, whitespace
  runs, text that looks like special tokens). encode(split_special_tokens=True) == Meta's
  encode(bos=False, eos=False); encode() == Encoding.encode(allowed_special="all").

The default run is small (SIZES["default"]); CI's long tier runs it with HYPOTHESIS_PROFILE=ci,
SIZES["ci"]: 2 files x (45,000 id runs + 8,000 texts x 2 encodes) = 122,000 cases, plus the
refusals and the every-special sweep. Each test reports its count on failure."""

from __future__ import annotations

import os
import random

import pytest

import oasr_tok
from oasr_tok.errors import InvalidIdError

from cases.tiktoken import SPLIT_BYTES, meta_file, meta_tokenizer
from strategies import random_text

PROFILE = "ci" if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else "default"
#: (id runs, texts) per file
SIZES = {"default": (1500, 250), "ci": (45_000, 8_000)}
ID_RUNS, TEXTS = SIZES[PROFILE]


@pytest.fixture(scope="module", params=["llama3", "llama4"])
def pair(request):
    return oasr_tok.load(meta_file(request.param)), meta_tokenizer(request.param).model


def _id_runs(tok, count: int, rng: random.Random):
    """`count` id runs; the specials are dealt out so that each occurs in some run."""
    single = {tok.id_to_bytes(i): i for i in range(tok.num_ranks) if len(tok.id_to_bytes(i)) == 1}
    bytes_ranks = [single[bytes([b])] for b in SPLIT_BYTES] + [single[bytes([b])] for b in range(0x80, 0x100)]
    special = sorted(tok.special_ids)
    rng.shuffle(special)
    edges = [0, 1, tok.num_ranks - 1, tok.num_ranks, tok.vocab_size - 1]
    dealt = 0
    for k in range(count):
        ids = []
        for _ in range(rng.randrange(0, 24)):
            pick = rng.random()
            if pick < 0.45:
                ids.append(rng.randrange(tok.num_ranks))
            elif pick < 0.75:
                ids.append(rng.choice(bytes_ranks))  # bytes of characters split across tokens
            elif pick < 0.85:
                ids.append(rng.choice(edges))
            else:
                ids.append(rng.choice(special))
        if dealt < len(special):
            share = -(-len(special) // max(1, count - k))
            for token_id in special[dealt : dealt + share]:
                ids.insert(rng.randrange(len(ids) + 1), token_id)
            dealt += share
        yield ids


def test_ids_decode_as_tiktoken(pair):
    tok, enc = pair
    rng = random.Random(f"ids {tok.vocab_size}")
    view = tok.with_specials()
    special = tok.special_ids
    seen: set[int] = set()
    for case, ids in enumerate(_id_runs(tok, ID_RUNS, rng)):
        kept = [i for i in ids if i not in special]
        seen.update(ids)
        assert tok.decode(ids) == enc.decode(kept), (case, ids)
        assert tok.decode_bytes(ids) == enc.decode_bytes(kept), (case, ids)
        assert view.decode(ids) == enc.decode(ids), (case, ids)
        assert view.decode_bytes(ids) == enc.decode_bytes(ids), (case, ids)
        if case % 5 == 0:
            expected = enc.decode(kept)
            stream = tok.new_stream()
            assert "".join(stream.feed([i]) for i in ids) + stream.feed([], final=True) == expected, (case, ids)
            cuts = sorted(rng.randrange(len(ids) + 1) for _ in range(3))
            chunks = [ids[a:b] for a, b in zip([0, *cuts], [*cuts, len(ids)])]
            state: dict = {}
            text = "".join(tok.decode_incremental(c, state) for c in chunks) + tok.decode_incremental([], state, True)
            assert text == expected, (case, ids, cuts)
    assert special <= seen  # every special id, every reserved one among them


def test_ids_past_the_end_are_refused(pair):
    tok, enc = pair
    for bad in (tok.vocab_size, tok.vocab_size + 1, tok.vocab_size + 10_000, -1, 2**31, 2**63, -(2**63)):
        for decode in (tok.decode, tok.decode_bytes, tok.with_specials().decode, tok.token_pieces):
            with pytest.raises(InvalidIdError):
                decode([tok.num_ranks - 1, bad])
        with pytest.raises((KeyError, OverflowError, ValueError)):
            enc.decode([bad])
        stream = tok.new_stream()
        with pytest.raises(InvalidIdError):
            stream.feed([1, bad])
        assert stream.feed([], final=True) == ""  # the refused call moved nothing


def test_text_encodes_as_tiktoken(pair):
    tok, enc = pair
    rng = random.Random(f"text {tok.vocab_size}")
    for case in range(TEXTS):
        text = random_text(rng)
        assert tok.encode(text, split_special_tokens=True) == enc.encode(text, disallowed_special=()), (case, text)
        assert tok.encode(text) == enc.encode(text, allowed_special="all"), (case, text)
