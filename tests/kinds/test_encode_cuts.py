"""Which tokenizer.json pipelines a re-decoding session may cut (oasr_tok/kinds/_encode_cuts.py):
exactly Qwen2's (NFC or no normaliser, its Split regex, byte-level, BPE without dropout), with
added tokens that match the same whatever is around them. Anything else gets no plan, and its
sessions re-encode the whole text (tests/engine/test_session.py checks both give qwen-asr's
prefixes)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

import oasr_tok
from oasr_tok.kinds._encode_cuts import QWEN2_SPLIT, session_plan

from paths import require_shared

tokenizers = pytest.importorskip("tokenizers")


@functools.cache
def qwen3_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(require_shared("huggingface/qwen3/tokenizer.json")).read_text("utf-8"))
    return data


@functools.cache
def small_qwen3() -> str:
    """Qwen3's pipeline around a byte-level BPE of 256 tokens and no merges (what the plan reads is
    the pipeline; a whole vocabulary would only make each variant slow to build)."""
    data = {key: value for key, value in qwen3_json().items() if key != "model"}
    alphabet = tokenizers.pre_tokenizers.ByteLevel.alphabet()
    data["model"] = {**qwen3_json()["model"], "vocab": {c: i for i, c in enumerate(sorted(alphabet))}, "merges": []}
    data["added_tokens"] = [{**token, "id": 256 + n} for n, token in enumerate(data["added_tokens"])]
    return json.dumps(data)


def plan_of(change) -> Any:
    data = json.loads(small_qwen3())
    change(data)
    backend = tokenizers.Tokenizer.from_str(json.dumps(data))
    return session_plan(backend, ((b"",) * 301, "replace"))


def test_the_qwen3_files_get_the_qwen2_rule():
    tok = oasr_tok.load(require_shared("huggingface/qwen3/tokenizer.json"))
    rule, pairs, pieces, errors, encode = tok._session_plan()
    assert rule == "qwen2" and errors == "replace" and len(pieces) == tok.vocab_size
    assert pieces[151645] == b"<|im_end|>"  # the special ids' text: qwen-asr decodes them
    assert (ord("m") << 21 | ord("_")) in pairs and (ord("<") << 21 | ord("|")) in pairs
    assert encode("a <think>b") == tok.encode("a <think>b")
    assert tok._session_plan() is tok._session_plan()  # made once
    assert tok.with_specials()._session_plan() == tok._session_plan()


def test_the_split_regex_is_qwen3s():
    assert qwen3_json()["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] == QWEN2_SPLIT
    assert plan_of(lambda data: None) is not None


def _added(**flags):
    def change(data):
        data["added_tokens"].append(
            {
                "id": 300,
                "content": "<x>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": False,
                **flags,
            }  # fmt: skip
        )

    return change


def _regex(pattern):
    def change(data):
        data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = pattern

    return change


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_added(lstrip=True), id="an added token that strips white space before it"),
        pytest.param(_added(rstrip=True), id="... after it"),
        pytest.param(_added(single_word=True), id="an added token matched as a whole word only"),
        pytest.param(_added(normalized=True), id="a normalised added token (matched after NFC)"),
        pytest.param(lambda data: data.update(normalizer={"type": "NFKC"}), id="NFKC"),
        pytest.param(
            _regex(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"), id="GPT-2's regex"
        ),
        pytest.param(_regex(QWEN2_SPLIT.replace(r"\p{N}|", r"\p{N}{1,3}|")), id="Llama 3's digit groups"),
        pytest.param(lambda data: data["model"].update(dropout=0.1), id="BPE dropout"),
        pytest.param(
            lambda data: data.update(
                truncation={"max_length": 8, "strategy": "LongestFirst", "stride": 0, "direction": "Right"}
            ),
            id="truncation",
        ),  # fmt: skip
        pytest.param(
            lambda data: data["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True), id="a prefix space"
        ),
    ],
)
def test_other_pipelines_get_no_plan(change):
    assert plan_of(change) is None


@pytest.mark.parametrize("folder", ["huggingface/mistral-7b", "huggingface/moonshine"])
def test_other_files_get_no_plan(folder):
    assert oasr_tok.load(require_shared(f"{folder}/tokenizer.json"))._session_plan() is None


def test_kinds_without_a_plan_have_no_hook():
    tok = oasr_tok.load(require_shared("sentencepiece/mistral-v1.model"))
    assert getattr(tok, "_session_plan", None) is None
