"""files.read_json leaves a tokenizer.json's model.merges unparsed (files._parsed): everything
else is what json.loads gives, the cut is kept only when it was model.merges, and every error
still names the file's own line. _jsonscan.array_end, which finds where the array ends, is
checked against json.dumps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oasr_tok._engine.jsonscan import array_end
from oasr_tok.errors import MalformedAssetError
from oasr_tok.files.readers import read_json, reading_once

from paths import shared

REAL = [
    "huggingface/qwen3/tokenizer.json",
    "huggingface/mistral-7b/tokenizer.json",
    "huggingface/moonshine/tokenizer.json",
    "huggingface/qwen2-audio-like/tokenizer.json",
    "whisper/faster-whisper-base/tokenizer.json",
]

json_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | json_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_text, inner, max_size=4),
    max_leaves=20,
)


@given(st.lists(json_values, max_size=6), json_text, st.booleans(), st.sampled_from([None, 0, 2]))
@example(['a"]b', "\\", '\\"[{'], "", False, None)
def test_array_end_is_where_json_dumps_ends_the_array(items, after, ascii_only, indent) -> None:
    dumped = json.dumps(items, ensure_ascii=ascii_only, indent=indent).encode()
    data = b'{"k": ' + dumped + b', "after": ' + json.dumps(after, ensure_ascii=False).encode() + b"}"
    start = data.index(b"[")
    assert array_end(data, start) == start + len(dumped)


def test_array_end_refuses_what_is_not_a_closed_array() -> None:
    assert array_end(b'["a", "b"', 0) == -1
    assert array_end(b'["a\\"]', 0) == -1  # the bracket is inside the string
    assert array_end(b"{}", 0) == -1
    assert array_end(b"[]", 5) == -1
    assert array_end(b"[]", -1) == -1
    assert array_end(b"", 0) == -1


@pytest.mark.parametrize("relative", REAL)
def test_a_real_tokenizer_json_reads_as_json_loads_less_the_merges(relative: str) -> None:
    path = shared(relative)
    full = json.loads(Path(path).read_text(encoding="utf-8"))
    read = read_json(path, "tokenizer.json")
    assert full["model"]["merges"], "the fixture has merges"
    assert read["model"]["merges"] == []
    full["model"]["merges"] = []
    assert read == full


def _write(tmp_path: Path, text: str, name: str = "tokenizer.json") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


MODEL = '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": %s}, "decoder": null}'


@pytest.mark.parametrize(
    "text",
    [
        '{"merges": 5, "model": {}}',  # not an array
        '{"vocab": {"merges": [1, 2]}}',  # an array, but no model: parsed again in full
        '{"model": {"merges": ["a b"]}, "other": {"merges": ["c d"]}}',  # named twice
        '["merges", ["a b"]]',  # not a key
    ],
)
def test_anything_but_one_model_merges_array_is_parsed_in_full(tmp_path: Path, text: str) -> None:
    assert read_json(_write(tmp_path, text), "x.json") == json.loads(text)


def test_a_string_that_spells_the_key_is_not_the_key(tmp_path: Path) -> None:
    text = '{"x": "\\"merges\\": [1]", "model": {"merges": ["a b"]}}'
    expected = json.loads(text)
    expected["model"]["merges"] = []
    assert read_json(_write(tmp_path, text), "x.json") == expected


def test_errors_name_the_files_own_line(tmp_path: Path) -> None:
    merges = "[\n" + ",\n".join(f'"a{i} b"' for i in range(50)) + "\n]"
    broken = (MODEL % merges).replace('"decoder": null', '"decoder": nul')
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(broken)
    with pytest.raises(MalformedAssetError) as got:
        read_json(_write(tmp_path, broken), "tokenizer.json")
    assert got.value.line == expected.value.lineno == 52


def test_the_merges_are_not_read_so_a_broken_entry_there_does_not_stop_a_decode(tmp_path: Path) -> None:
    # Decoding needs no merges; the runtime, which does, reads the file itself at the first encode.
    path = _write(tmp_path, MODEL % '["a b" "b a"]')  # a comma missing
    with reading_once():
        assert read_json(path, "tokenizer.json")["model"] == {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}
