"""Where a tiktoken rank file's special tokens come from: the file holds the ranks only.

* **Meta's layouts** ("llama3", "llama4"): the special tokens Meta's own tokenizer.py
  (llama_models/llama3/tokenizer.py, llama_models/llama4/tokenizer.py, llama-models 0.3.0)
  lays after the ranks, reserved ranges included, with its split pattern, roles and stop
  tokens. tests/kinds/test_tiktoken.py holds them to the installed package's own lists.
* **tokenizer_config.json**: every entry of its `added_tokens_decoder` at its declared id, as
  vLLM's Kimi-Audio tokenizer (vllm/tokenizers/kimi_audio.py, 0.33.0) reads them: all of them
  are tiktoken special tokens (whatever their "special" flag), decode's skip list.
* **the caller**: option `special_tokens`, a {text: id} mapping.

A `SpecialLayout` says which ids hold which special text, the split pattern where the source
knows it, and the roles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._common import declared_roles
from ..api import ID_SLACK, MalformedAssetError, SpecError, json_id, short_repr

__all__ = [
    "LLAMA3_PATTERN",
    "LLAMA4_PATTERN",
    "META_LAYOUTS",
    "SpecialLayout",
    "config_layout",
    "given_layout",
    "llama3_special_tokens",
    "llama4_special_tokens",
    "meta_layout",
]

#: Meta's Llama 3 split pattern (llama_models/llama3/tokenizer.py `Tokenizer.pat_str`).
LLAMA3_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
#: Meta's Llama 4 split pattern (llama_models/llama4/tokenizer.py `Tokenizer.O200K_PATTERN`).
LLAMA4_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def llama3_special_tokens() -> tuple[str, ...]:
    """The 256 special tokens Meta's Llama 3 tokenizer lays after its 128,000 ranks, in id order."""
    named = (
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>",
        "<|finetune_right_pad_id|>",
        "<|step_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eom_id|>",  # end of message
        "<|eot_id|>",  # end of turn
        "<|python_tag|>",
        "<|image|>",
    )
    return named + tuple(f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(named)))


def _reserved(name: str, count: int, start: int = 0) -> tuple[str, ...]:
    return tuple(f"<|{name}_reserved_special_token_{i}|>" for i in range(start, start + count))


def llama4_special_tokens() -> tuple[str, ...]:
    """The 2,048 special tokens Meta's Llama 4 tokenizer lays after its 200,000 ranks: the basic
    five, the text post-training block, the vision block, the reasoning block, then reserved
    tokens up to 2,048."""
    basic = ("<|begin_of_text|>", "<|end_of_text|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")
    text_post_train = (
        "<|header_start|>",
        "<|header_end|>",
        "<|eom|>",
        "<|eot|>",
        "<|step|>",
        *_reserved("text_post_train", 6),
        "<|python_start|>",
        "<|python_end|>",
        "<|finetune_right_pad|>",
        *_reserved("text_post_train", 61, 8),
    )
    vision = (
        "<|image_start|>",
        "<|image_end|>",
        *_reserved("vision", 2),
        "<|tile_x_separator|>",
        "<|tile_y_separator|>",
        *_reserved("vision", 4, 2),
        "<|image|>",
        *_reserved("vision", 1, 6),
        "<|patch|>",
        *_reserved("vision", 1041, 7),
    )
    reasoning = (*_reserved("reasoning", 8), "<|reasoning_thinking_start|>", "<|reasoning_thinking_end|>")
    named = basic + text_post_train + vision + reasoning
    return named + tuple(f"<|reserved_special_token_{i}|>" for i in range(2048 - len(named)))


@dataclass(frozen=True)
class SpecialLayout:
    """The special tokens of a rank file: `tokens` (id -> text), the split `pattern` where the
    source says it (None: the caller must give one to encode), the text of each role it
    names (`roles`: "bos" -> "<|begin_of_text|>"), the texts of its stop tokens beside eos,
    whether encode(add_special_tokens=True) puts bos in front, and `source` (a sentence)."""

    tokens: dict[int, str]
    source: str
    pattern: str | None = None
    roles: dict[str, str | None] = field(default_factory=dict)
    stops: tuple[str, ...] = ()
    add_bos: bool = False
    #: the number of ranks the layout was made for (Meta's), or None
    ranks: int | None = None


#: name -> (rank count, special tokens, pattern, roles, stop tokens beside eos, the file it is Meta's)
META_LAYOUTS: dict[str, tuple[int, Any, str, dict[str, str | None], tuple[str, ...], str]] = {
    "llama3": (
        128000,
        llama3_special_tokens,
        LLAMA3_PATTERN,
        {"bos": "<|begin_of_text|>", "eos": "<|end_of_text|>", "pad": "<|finetune_right_pad_id|>"},
        ("<|eom_id|>", "<|eot_id|>"),
        "llama_models/llama3/tokenizer.py",
    ),
    "llama4": (
        200000,
        llama4_special_tokens,
        LLAMA4_PATTERN,
        {"bos": "<|begin_of_text|>", "eos": "<|end_of_text|>", "pad": "<|finetune_right_pad|>"},
        ("<|eom|>", "<|eot|>"),
        "llama_models/llama4/tokenizer.py",
    ),
}


def meta_layout(name: str, num_ranks: int, path: str) -> SpecialLayout:
    """Meta's layout `name` after the `num_ranks` ranks of `path` (Meta's tokenizer.py lays its
    special tokens after however many ranks the file has; a file of another size is refused,
    since the layout is that of Meta's file)."""
    expected, names, pattern, roles, stops, where = META_LAYOUTS[name]
    if num_ranks != expected:
        raise SpecError(
            f"tiktoken: special_tokens {name!r} is Meta's layout for its {expected}-rank tokenizer.model, "
            f"but {path} has {num_ranks} ranks"
        )
    tokens = dict(zip(range(num_ranks, num_ranks + 1_000_000), names()))
    return SpecialLayout(
        tokens=tokens,
        source=f"Meta's {name} layout ({where}: {len(tokens)} special tokens after the ranks, reserved ones included)",
        pattern=pattern,
        roles=dict(roles),
        stops=stops,
        add_bos=True,
        ranks=expected,
    )


def _checked_tokens(pairs: Mapping[int, str], num_ranks: int, where: str, path: str, error: type[Exception]) -> None:
    """Special tokens past the ranks, each text at one id, no id absurdly far out."""
    seen: dict[str, int] = {}
    for token_id, text in sorted(pairs.items()):
        if token_id < num_ranks:
            raise _error(
                error, path, f"{where}: id {token_id} ({text!r}) is rank {token_id} of the file, not a special id"
            )
        if text in seen:
            raise _error(error, path, f"{where}: {text!r} is both id {seen[text]} and id {token_id}")
        seen[text] = token_id
    # (as files.readers.check_id_span: a corrupt id is refused before a table is sized from it)
    if pairs and max(pairs) >= 2 * (num_ranks + len(pairs)) + ID_SLACK:
        raise _error(
            error,
            path,
            f"{where}: id {max(pairs)} lies far beyond the {num_ranks} ranks and {len(pairs)} special tokens",
        )


def _error(error: type[Exception], path: str, why: str) -> Exception:
    if error is MalformedAssetError:
        return MalformedAssetError(f"{path}: {why}", path=path)
    return error(f"tiktoken: {why}")


def config_layout(
    entries: Mapping[int, Mapping[str, Any]], config: Mapping[str, Any], num_ranks: int, path: str
) -> SpecialLayout:
    """The layout a tokenizer_config.json at `path` declares: every added_tokens_decoder entry
    (read by kinds._common.read_added_tokens) a special token at its id, the roles its
    bos_token / eos_token / ... name."""
    tokens = {token_id: str(entry["content"]) for token_id, entry in entries.items()}
    _checked_tokens(tokens, num_ranks, "added_tokens_decoder", path, MalformedAssetError)
    return SpecialLayout(
        tokens=tokens,
        source=f"{path}: added_tokens_decoder ({len(tokens)} special tokens, all skipped by decode as vLLM's "
        "kimi_audio tokenizer skips them)",
        roles=declared_roles([config]),
    )


def given_layout(value: Any, num_ranks: int, path: str) -> SpecialLayout:
    """The caller's option special_tokens: {text: id}."""
    if not isinstance(value, Mapping):
        raise SpecError(
            f"tiktoken: option special_tokens must be 'llama3', 'llama4' or a {{text: id}} mapping, got {short_repr(value)}"
        )
    tokens: dict[int, str] = {}
    for text, token_id in value.items():
        if not isinstance(text, str) or not text or json_id(token_id) is None:
            raise SpecError(
                f"tiktoken: option special_tokens maps a non-empty text to an id >= 0, got {short_repr(text)}: "
                f"{short_repr(token_id)}"
            )
        if token_id in tokens:
            raise SpecError(f"tiktoken: option special_tokens gives id {token_id} to {tokens[token_id]!r} and {text!r}")
        tokens[token_id] = text
    _checked_tokens(tokens, num_ranks, "option special_tokens", path, SpecError)
    return SpecialLayout(tokens=tokens, source=f"option special_tokens ({len(tokens)} special tokens)")
