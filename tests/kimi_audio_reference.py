"""A line-by-line port of how vLLM 0.33.0 reads and streams a Kimi-Audio tokenizer:
vllm/tokenizers/kimi_audio.py (`_load_tiktoken_encoding`, and of `KimiAudioTokenizer` the
reading in `__init__`, `_add_kimiaudio_special_tokens`, `get_added_vocab`, `decode`,
`convert_ids_to_tokens`, `convert_tokens_to_ids`, `convert_tokens_to_string`, `is_fast`,
`__len__`, `all_special_tokens`) and vllm/tokenizers/detokenizer_utils.py (the slow path vLLM
streams it by: `detokenize_incrementally`, `convert_prompt_ids_to_tokens`,
`_convert_tokens_to_string_with_added_encoders`) as vllm/v1/engine/detokenizer.py's
`SlowIncrementalDetokenizer` drives it (`stream` below). Only `pybase64` is base64 here, and
transformers' AddedToken a str (vLLM reads it through str()). tests/kinds/test_tiktoken.py
runs it beside the tiktoken kind on a Kimi-Audio-style folder.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import tiktoken

#: vLLM's kimi_audio pattern (its _load_tiktoken_encoding's pat_str).
KIMI_AUDIO_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
#: vLLM's hard-coded Kimi-Audio specials (_add_kimiaudio_special_tokens)
KIMIAUDIO_SPECIAL_TOKENS = {
    "<|im_media_begin|>": 151661,
    "<|im_media_end|>": 151663,
    "<|im_kimia_text_blank|>": 151666,
    "<|im_msg_end|>": 151645,
    "<|im_kimia_user_msg_start|>": 151670,
    "<|im_kimia_assistant_msg_start|>": 151671,
}


def _load_tiktoken_encoding(vocab_file: Path, special_tokens: dict[str, int]) -> tuple[Any, dict[str, int]]:
    mergeable_ranks: dict[bytes, int] = {}
    with open(vocab_file, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) == 2:
                token_b64 = parts[0]
                rank = int(parts[1])
                token_bytes = base64.b64decode(token_b64)
                mergeable_ranks[token_bytes] = rank
    tokenizer = tiktoken.Encoding(
        name=str(vocab_file),
        pat_str=KIMI_AUDIO_PATTERN,
        mergeable_ranks=mergeable_ranks,
        special_tokens=special_tokens,
    )
    return tokenizer, special_tokens


class KimiAudioTokenizer:
    def __init__(self, vocab_file: Path) -> None:
        special_tokens: dict[str, int] = {}
        tokenizer_config = vocab_file.parent / "tokenizer_config.json"
        if tokenizer_config.is_file():
            with open(tokenizer_config, encoding="utf-8") as f:
                config = json.load(f)
                added_tokens = config.get("added_tokens_decoder", {})
                for token_id_str, token_info in added_tokens.items():
                    token_id = int(token_id_str)
                    content = token_info.get("content", "")
                    if content:
                        special_tokens[content] = token_id
        self._tokenizer, self._special_tokens = _load_tiktoken_encoding(vocab_file, special_tokens)
        self._token_to_id: dict[str, int] = {}
        self._id_to_token: dict[int, str] = {}
        for token_bytes, token_id in self._tokenizer._mergeable_ranks.items():
            token_str = token_bytes.decode("utf-8", errors="replace")
            self._token_to_id[token_str] = token_id
            self._id_to_token[token_id] = token_str
        self._added_tokens_decoder: dict[int, Any] = {}
        for token_str, token_id in KIMIAUDIO_SPECIAL_TOKENS.items():
            if token_id not in self._added_tokens_decoder:
                self._added_tokens_decoder[token_id] = token_str
                if token_str not in self._token_to_id:
                    self._token_to_id[token_str] = token_id
                if token_id not in self._id_to_token:
                    self._id_to_token[token_id] = token_str
        self._bos_token_id = 151643
        self._eos_token_id = 151644
        self._pad_token_id = self._eos_token_id
        self._unk_token_id = self._pad_token_id

    is_fast = False

    @property
    def all_special_tokens(self) -> list[str]:
        return list(self._added_tokens_decoder.values())

    def __len__(self) -> int:
        return self._tokenizer.n_vocab

    def get_added_vocab(self) -> dict[str, int]:
        return {str(token): token_id for token_id, token in self._added_tokens_decoder.items()}

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        if isinstance(ids, int):
            ids = [ids]
        if skip_special_tokens:
            special_ids = set(self._special_tokens.values())
            ids = [token_id for token_id in ids if token_id not in special_ids]
        return str(self._tokenizer.decode(ids))

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        if isinstance(tokens, str):
            return self._token_to_id.get(tokens, self._unk_token_id)
        return [self._token_to_id.get(token, self._unk_token_id) for token in tokens]

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> list[str]:
        tokens = []
        for token_id in ids:
            if skip_special_tokens and token_id in self._added_tokens_decoder:
                continue
            tokens.append(self._id_to_token.get(token_id, "<|unk|>"))
        return tokens

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        token_ids = self.convert_tokens_to_ids(tokens)
        return self.decode(token_ids, skip_special_tokens=False)


# -- vllm/tokenizers/detokenizer_utils.py ---------------------------------------------------------

INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET = 5


def _replace_none_with_empty(tokens: list[Any]) -> None:
    for i, token in enumerate(tokens):
        if token is None:
            tokens[i] = ""


def _convert_tokens_to_string_with_added_encoders(
    tokenizer: Any, output_tokens: list[str], skip_special_tokens: bool, spaces_between_special_tokens: bool
) -> str:
    sub_texts: list[str] = []
    current_sub_text: list[str] = []
    convert_tokens_to_string = tokenizer.convert_tokens_to_string
    added_vocab_set = set(tokenizer.get_added_vocab())
    all_special_tokens = set(tokenizer.all_special_tokens) if skip_special_tokens else ()
    for token in output_tokens:
        if token in all_special_tokens:
            continue
        if token in added_vocab_set:
            if current_sub_text:
                sub_texts.append(convert_tokens_to_string(current_sub_text))
                current_sub_text.clear()
            sub_texts.append(token)
        else:
            current_sub_text.append(token)
    if current_sub_text:
        sub_texts.append(convert_tokens_to_string(current_sub_text))
    if spaces_between_special_tokens:
        return " ".join(sub_texts)
    return "".join(sub_texts)


def convert_prompt_ids_to_tokens(
    tokenizer: Any, prompt_ids: list[int], skip_special_tokens: bool = False
) -> tuple[list[str], int, int]:
    new_tokens = tokenizer.convert_ids_to_tokens(
        prompt_ids[-INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET - 2 :], skip_special_tokens=skip_special_tokens
    )
    read_offset = len(new_tokens)
    prefix_offset = max(read_offset - INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET, 0)
    _replace_none_with_empty(new_tokens)
    return new_tokens, prefix_offset, read_offset


def detokenize_incrementally(
    tokenizer: Any,
    all_input_ids: list[int],
    prev_tokens: list[str] | None,
    prefix_offset: int,
    read_offset: int,
    skip_special_tokens: bool = False,
    spaces_between_special_tokens: bool = True,
) -> tuple[list[str], str, int, int]:
    new_token_id = all_input_ids[-1]
    is_first_iter = prev_tokens is None
    if is_first_iter:
        (prev_tokens, prefix_offset, read_offset) = convert_prompt_ids_to_tokens(
            tokenizer, all_input_ids[:-1], skip_special_tokens=skip_special_tokens
        )
    assert prev_tokens is not None
    if 0 <= new_token_id < len(tokenizer):
        new_tokens = tokenizer.convert_ids_to_tokens([new_token_id], skip_special_tokens=skip_special_tokens)
        if isinstance(new_tokens, str):
            new_tokens = [new_tokens]
        else:
            _replace_none_with_empty(new_tokens)
    else:
        new_tokens = [""]
    output_token_count = len(prev_tokens) + len(new_tokens)
    window_start = 0 if is_first_iter else min(prefix_offset, read_offset, len(prev_tokens))
    output_tokens = (prev_tokens[window_start:] if window_start else prev_tokens) + new_tokens
    if is_first_iter:
        new_tokens = output_tokens
    if tokenizer.is_fast or not tokenizer.get_added_vocab():
        prefix_text = tokenizer.convert_tokens_to_string(
            output_tokens[prefix_offset - window_start : read_offset - window_start]
        )
        new_text = tokenizer.convert_tokens_to_string(output_tokens[prefix_offset - window_start :])
    else:
        prefix_text = _convert_tokens_to_string_with_added_encoders(
            tokenizer,
            output_tokens[prefix_offset - window_start : read_offset - window_start],
            skip_special_tokens=skip_special_tokens,
            spaces_between_special_tokens=spaces_between_special_tokens,
        )
        new_text = _convert_tokens_to_string_with_added_encoders(
            tokenizer,
            output_tokens[prefix_offset - window_start :],
            skip_special_tokens=skip_special_tokens,
            spaces_between_special_tokens=spaces_between_special_tokens,
        )
    if len(new_text) <= len(prefix_text) or new_text.endswith("�"):
        return new_tokens, "", prefix_offset, read_offset
    new_text = new_text[len(prefix_text) :]
    return new_tokens, new_text, read_offset, output_token_count


def stream(tokenizer: KimiAudioTokenizer, prompt: list[int], generated: list[int]) -> str:
    """vllm/v1/engine/detokenizer.py's SlowIncrementalDetokenizer over `generated` after
    `prompt` (its __init__, then update's loop of decode_next, one id at a time), with vLLM's
    defaults skip_special_tokens=True, spaces_between_special_tokens=True: the output text."""
    tokens, prefix_offset, read_offset = convert_prompt_ids_to_tokens(tokenizer, prompt, skip_special_tokens=True)
    token_ids = list(prompt)
    output_text = ""
    for new_token_id in generated:
        token_ids.append(new_token_id)
        new_tokens, decoded_text, prefix_offset, read_offset = detokenize_incrementally(
            tokenizer, token_ids, tokens, prefix_offset, read_offset, skip_special_tokens=True
        )
        tokens.extend(new_tokens)
        output_text += decoded_text
    return output_text
