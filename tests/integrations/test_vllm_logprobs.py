"""Logprob token strings with tokenizer_mode="oasr": the strings vLLM shows for the sampled and
top-k ids of every position (and of the prompt) are the ones its mode "hf" shows on the same
tokenizer.json -- SentencePiece leading spaces put back, the U+FFFD of a character split across
tokens decoded again with the sampled ids before it -- made by one table lookup per step
(oasr_tok._engine.token_table); and the bytes OpenAI's logprobs carry are each id's own."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strategies import served_texts
from vllm_reference import HF_FOLDERS, Request, drive, require_vllm, split_steps, tokenizer

require_vllm()

from vllm.tokenizers.detokenizer_utils import convert_ids_list_to_tokens  # noqa: E402

from oasr_tok.errors import InvalidIdError  # noqa: E402


def pair(name: str):
    return tokenizer(HF_FOLDERS[name], "hf"), tokenizer(HF_FOLDERS[name], "oasr")


def split_character_ids(hf) -> list[int]:
    """Ids of byte pieces and of tokens that end inside a character (a U+FFFD alone)."""
    found = []
    for text in ("a 🫠 b", "𝔘𝔫𝔦", "中", "é", "🙂🌶️", "東京"):
        found += hf.encode(text, add_special_tokens=False)
    return [i for i in found if hf.decode([i]).endswith("\ufffd")]


@pytest.mark.parametrize("name", sorted(HF_FOLDERS))
def test_every_ids_string_is_mode_hfs(name):
    """vLLM's convert_ids_list_to_tokens (decode([id]) per id, leading spaces restored) on mode
    "hf", and the table on mode "oasr", over a sample of the whole vocabulary: specials, byte
    pieces, word-boundary pieces, the last ids."""
    hf, oa = pair(name)
    size = len(oa)
    ids = list(range(min(size, 600))) + list(range(0, size, 37)) + list(range(size - 100, size))
    ids += split_character_ids(hf)
    assert oa.token_strings.strings(ids) == convert_ids_list_to_tokens(hf, ids)


@st.composite
def logprob_requests(draw, name: str) -> list[Request]:
    hf, oa = pair(name)
    pool = split_character_ids(hf) + sorted(oa.tokenizer.special_ids)[:20]
    out = []
    for _ in range(draw(st.integers(1, 3))):
        ids = hf.encode(draw(served_texts(min_size=2, max_size=20)), add_special_tokens=False)
        if len(ids) < 2:
            ids = ids + hf.encode(" ok", add_special_tokens=False)
        k = draw(st.integers(0, 5))
        one = st.one_of(st.integers(0, len(oa) - 1), st.sampled_from(pool))
        top = [[i, *draw(st.lists(one, min_size=k, max_size=k))] for i in ids[1:]]
        prompt_top = (
            [[i, *draw(st.lists(one, min_size=k, max_size=k))] for i in ids[1:2]] if draw(st.booleans()) else None
        )
        sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
        out.append(
            Request(
                ids[:2] if prompt_top else ids[:1],
                split_steps(ids[1:], sizes),
                top_k=top,
                prompt_top_k=prompt_top,
                params={"flat_logprobs": draw(st.booleans())},
            )
        )
    return out


@pytest.mark.parametrize("name", sorted(HF_FOLDERS))
@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_logprob_strings_are_mode_hfs(name, data):
    """Through vLLM's output step: every position's strings, the sampled one's rank and the
    prompt's logprob strings, as mode "hf" gives them (U+FFFD corrected with context)."""
    hf, oa = pair(name)
    batch = data.draw(logprob_requests(name))
    for kind in ("DELTA", "FINAL_ONLY"):
        ours, theirs = drive(oa, batch, kind), drive(hf, batch, kind)
        # (the texts are test_vllm_output_step.py's: a ByteFallback run's deltas may differ)
        assert [(s.logprobs, s.prompt_logprobs, s.token_ids) for s in ours] == [
            (s.logprobs, s.prompt_logprobs, s.token_ids) for s in theirs
        ]
        assert any(s.logprobs for s in ours)


def test_split_character_is_corrected_with_context():
    """Byte-level tokens that split 🫠 show U+FFFD alone; vLLM's _verify_tokens re-decodes them
    with the sampled ids before them: "" while the character is unfinished, " 🫠" at the token
    that completes it -- in both modes."""
    hf, oa = pair("qwen3")
    ids = hf.encode("a 🫠 b", add_special_tokens=False)
    assert any(hf.decode([i]).endswith("\ufffd") for i in ids)
    batch = [Request(ids[:1], split_steps(ids[1:], [1]), top_k=[[i, i] for i in ids[1:]])]
    ours, theirs = drive(oa, batch, "DELTA")[0], drive(hf, batch, "DELTA")[0]
    assert ours.logprobs == theirs.logprobs
    assert [s for position in ours.logprobs for _, s, _ in position] == ["", "", " 🫠", " b"]


def test_bytes_are_each_ids_own():
    """OpenAI's logprobs `bytes`: what the id adds to a text in the middle of it -- the partial
    bytes of a character split across tokens, a piece's leading space, a special's text."""
    hf, oa = pair("qwen3")
    ids = hf.encode("a 🫠 café", add_special_tokens=False)
    raw = oa.token_strings.token_bytes(ids)
    assert b"".join(raw) == "a 🫠 café".encode()
    assert any(len(b) and b.decode("utf-8", "replace").endswith("\ufffd") for b in raw)  # a partial character
    assert oa.token_strings.token_bytes([151645]) == [b"<|im_end|>"]
    _, mistral = pair("mistral-7b")
    hello = mistral.tokenizer.piece_to_id("\u2581Hello")
    byte = mistral.tokenizer.piece_to_id("<0xE4>")
    assert mistral.token_strings.token_bytes([hello, byte]) == [b" Hello", b"\xe4"]


def test_one_lookup_per_step(monkeypatch):
    """The sampled and top-k ids of every request of a step are looked up in one call."""
    hf, oa = pair("qwen3")
    calls = []
    table = oa.token_strings
    original = type(table).rows

    def counting(self, arrays):
        calls.append(len(arrays))
        return original(self, arrays)

    monkeypatch.setattr(type(table), "rows", counting)
    ids = hf.encode("the quick brown fox jumps", add_special_tokens=False)
    batch = [Request(ids[:1], split_steps(ids[1:], [1]), top_k=[[i, 1, 2, 3] for i in ids[1:]]) for _ in range(16)]
    assert [s.as_tuple() for s in drive(oa, batch, "DELTA")] == [s.as_tuple() for s in drive(hf, batch, "DELTA")]
    assert calls == [16] * (len(ids) - 1)


def test_an_id_past_the_vocabulary_is_refused():
    _, oa = pair("qwen3")
    with pytest.raises(InvalidIdError, match=f"{len(oa)}"):
        oa.token_strings.strings([1, len(oa)])
    import numpy as np

    with pytest.raises(InvalidIdError, match="out of range"):
        oa.token_strings.rows([np.array([[1, 2], [3, len(oa) + 5]])])
    with pytest.raises(InvalidIdError, match="-1"):
        oa.token_strings.rows([np.array([[1, -1]], dtype=np.int32)])
    batch = [Request([1], [[2]], top_k=[[2, len(oa)]])]
    with pytest.raises(InvalidIdError):
        drive(oa, batch, "DELTA")
