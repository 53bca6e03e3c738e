"""gguf: the tokenizer llama.cpp carries inside a GGUF file (`tokenizer.ggml.*`).

decode(ids) is llama.cpp's `llama_detokenize(vocab, ids, remove_special=False,
unparse_special=False)` (src/llama-vocab.cpp of the llama.cpp that llama-cpp-python 0.3.36
vendors), its bytes decoded as UTF-8 with one U+FFFD per maximal invalid subpart:

* each id renders a byte string (token_to_piece): control, unknown, unused and undefined
  tokens nothing (they are `special_ids`), user-defined tokens their own text, byte tokens
  `<0xNN>` one byte, normal tokens their text with `▁` turned into a space (SPM, UGM, WPM,
  and BPE vocabularies that escape whitespace, e.g. gemma4) or mapped back through the GPT-2
  byte alphabet (other BPE vocabularies; a code point outside the alphabet renders as
  llama.cpp's `[UNK_BYTE_0x..]` marker);
* when `add_space_prefix` holds, the first id of the call loses one leading space, whatever it
  is: a control token first (BOS) consumes the rule and renders nothing;
* `clean_spaces` (on for BPE and WPM unless the `pre` type turns it off) then rewrites the
  whole text: " ?" " !" " ." " ," lose the space, " ' " becomes "'", and " 's" " 'm" " 're"
  " 've" lose the space. These rules reach across tokens, so the stream holds back the few
  characters a later token may still change (oasr_tok/_clean_spaces.pyx).

The vocabulary is read as llama.cpp's loader reads it, with its refusals (no
`tokenizer.ggml.model`, an unknown model or `pre` type, score or type arrays shorter than the
token list, duplicate token strings, keys of the wrong type) and its fix-ups: an empty token
is renamed `[EMPTY_<id>]`; tokens whose text marks an end of turn or generation are forced
control; control tokens whose text contains "unused" are marked unused; gpt-oss's channel
markers are user-defined; `<|end|>` is not an end of generation when `<|return|>` and
`<|call|>` exist; gemma4's `</s>` is a normal token.

encode(text) runs a `tokenizers` runtime built from the GGUF metadata, as `transformers`
does when it loads a GGUF (see _gguf_encode.py); decoding never needs `tokenizers`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from .._clean_spaces import CleanSpacesStream
from .._ids import join_pieces
from .._piece_table import FLAG_END_FIRST, FLAG_SKIP, PieceTable, TableMethods
from ..assets import register_value_reader
from ..errors import EncodeError, MalformedAssetError
from ..spec import TokenizerSpec
from ..specials import SpecialTokens, SpecialTokensBuilder
from ..tokenizer import Tokenizer
from ._bytelevel import CHAR_TO_BYTE
from ._common import checked_text, existing_file, reject_unknown_options
from ._gguf_reader import GGUFMetadata, ValueType, read_gguf_metadata, vocabulary_only_gguf

__all__ = ["GGUFTokenizer", "GGUFVocab", "llama_clean_spaces", "load_vocab"]

# llama_token_attr (include/llama.h)
ATTR_UNDEFINED = 0
ATTR_UNKNOWN = 1 << 0
ATTR_UNUSED = 1 << 1
ATTR_NORMAL = 1 << 2
ATTR_CONTROL = 1 << 3
ATTR_USER_DEFINED = 1 << 4
ATTR_BYTE = 1 << 5
ATTR_LSTRIP = 1 << 7  # matched in text: whitespace before it is dropped
ATTR_RSTRIP = 1 << 8  # matched in text: whitespace after it is dropped

# llama_token_type (the values stored in tokenizer.ggml.token_type) -> attribute
_TYPE_TO_ATTR = {
    0: ATTR_UNDEFINED,
    1: ATTR_NORMAL,
    2: ATTR_UNKNOWN,
    3: ATTR_CONTROL,
    4: ATTR_USER_DEFINED,
    5: ATTR_UNUSED,
    6: ATTR_BYTE,
}

# tokenizer.ggml.model -> llama.cpp's vocabulary type. Anything else is refused.
MODEL_TYPES = {"llama": "SPM", "gpt2": "BPE", "bert": "WPM", "t5": "UGM", "gemma4": "BPE"}

# BPE `pre` types llama.cpp 0.3.36 knows, and what each changes from the BPE defaults
# (clean_spaces on, whitespace not escaped): "noclean", "escape", "bos" (add_bos), "sep"
# (add_sep), "nobos" (no default BOS id).
_PRE_FLAGS: dict[str, frozenset[str]] = {}


def _pre(flags: str, *names: str) -> None:
    for name in names:
        _PRE_FLAGS[name] = frozenset(flags.split())


_pre(
    "",
    "default",
    "minicpm5",
    "falcon",
    "mpt",
    "starcoder",
    "gpt-2",
    "phi-2",
    "jina-es",
    "jina-de",
    "gigachat",
    "jina-v2-es",
    "jina-v2-de",
    "a.x-4.0",
    "mellum",
    "modern-bert",
    "jais-2",
    "whitespace",
    "refact",
    "stablelm2",
    "olmo",
    "dbrx",
    "smaug-bpe",
    "jais",
    "codeshell",
    "bloom",
    "gpt3-finnish",
    "exaone",
    "exaone4",
    "exaone-moe",
    "minerva-7b",
    "megrez",
    "mellum2",
)
_pre("bos", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano")
_pre(
    "noclean",
    "deepseek-llm",
    "deepseek-coder",
    "deepseek-v3",
    "spark2_5",
    "youtu",
    "command-r",
    "qwen2",
    "deepseek-r1-qwen",
    "kormo",
    "f2llmv2",
    "qwen35",
    "poro-chat",
    "viking",
    "smollm",
    "gpt-4o",
    "llama4",
    "kanana2",
    "talkie",
    "granite-embed-multi-97m",
    "tiny_aya",
    "cohere2moe",
    "superbpe",
    "trillion",
    "granite-docling",
    "bailingmoe",
    "bailingmoe2",
    "llada-moe",
    "seed-coder",
    "hunyuan",
    "hunyuan-dense",
    "hy_v4",
    "joyai-llm",
    "kimi-k2",
    "ufakzeka",
    "grok-2",
    "afmoe",
    "laguna",
    "minimax-m2",
    "solar-open",
)
_pre("escape", "gemma4", "granite-embed-multi-311m")
_pre("noclean escape", "sarvam-moe")
_pre("sep", "jina-v1-en", "jina-v2-code", "roberta-bpe")
_pre("nobos", "chatglm-bpe", "glm4", "glm5")
_pre("noclean bos", "tekken", "chameleon")

K_MODEL = "tokenizer.ggml.model"
K_PRE = "tokenizer.ggml.pre"
K_TOKENS = "tokenizer.ggml.tokens"
K_TYPES = "tokenizer.ggml.token_type"
K_SCORES = "tokenizer.ggml.scores"
K_MERGES = "tokenizer.ggml.merges"
K_CHARSMAP = "tokenizer.ggml.precompiled_charsmap"
K_TEMPLATE = "tokenizer.chat_template"

# role -> keys that set it, in llama.cpp's order (the deprecated prefix/suffix/middle last).
_SPECIAL_KEYS: tuple[tuple[str, str], ...] = (
    ("bos", "tokenizer.ggml.bos_token_id"),
    ("eos", "tokenizer.ggml.eos_token_id"),
    ("eot", "tokenizer.ggml.eot_token_id"),
    ("eom", "tokenizer.ggml.eom_token_id"),
    ("unk", "tokenizer.ggml.unknown_token_id"),
    ("sep", "tokenizer.ggml.seperator_token_id"),
    ("pad", "tokenizer.ggml.padding_token_id"),
    ("mask", "tokenizer.ggml.mask_token_id"),
    ("fim_pre", "tokenizer.ggml.fim_pre_token_id"),
    ("fim_suf", "tokenizer.ggml.fim_suf_token_id"),
    ("fim_mid", "tokenizer.ggml.fim_mid_token_id"),
    ("fim_pad", "tokenizer.ggml.fim_pad_token_id"),
    ("fim_rep", "tokenizer.ggml.fim_rep_token_id"),
    ("fim_sep", "tokenizer.ggml.fim_sep_token_id"),
    ("fim_pre", "tokenizer.ggml.prefix_token_id"),
    ("fim_suf", "tokenizer.ggml.suffix_token_id"),
    ("fim_mid", "tokenizer.ggml.middle_token_id"),
)
# Default special ids per vocabulary type (None = LLAMA_TOKEN_NULL); llama.cpp's member defaults
# are bos 1, eos 2, unk 0.
_DEFAULT_IDS: dict[str, dict[str, int | None]] = {
    "llama": {"bos": 1, "eos": 2, "unk": 0, "sep": None, "pad": None, "mask": None},
    "bert": {"bos": 101, "eos": None, "unk": 100, "sep": 102, "pad": 0, "mask": 103},
    "gpt2": {"bos": 11, "eos": 11, "unk": None, "sep": None, "pad": None, "mask": None},
    "t5": {"bos": None, "eos": 1, "unk": 2, "sep": None, "pad": 0, "mask": None},
    "gemma4": {"bos": None, "eos": None, "unk": None, "sep": None, "pad": None, "mask": None},
}
_ROLES = (
    "bos",
    "eos",
    "eot",
    "eom",
    "unk",
    "sep",
    "pad",
    "mask",
    "fim_pre",
    "fim_suf",
    "fim_mid",
    "fim_pad",
    "fim_rep",
    "fim_sep",
)

# Token texts the loader recognises (llama-vocab.cpp, "auto-detect special tokens by text").
_EOT_TEXTS = (
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
)
_EOM_TEXTS = ("<|eom_id|>",)
_FIM_TEXTS = {
    "fim_pre": (
        "<|fim_prefix|>",
        "<fim-prefix>",
        "<fim_prefix>",
        "<｜fim▁begin｜>",
        "<PRE>",
        "▁<PRE>",
        "<|code_prefix|>",
        "<|prefix|>",
    ),
    "fim_suf": (
        "<|fim_suffix|>",
        "<fim-suffix>",
        "<fim_suffix>",
        "<｜fim▁hole｜>",
        "<SUF>",
        "▁<SUF>",
        "<|code_suffix|>",
        "<|suffix|>",
    ),
    "fim_mid": (
        "<|fim_middle|>",
        "<fim-middle>",
        "<fim_middle>",
        "<｜fim▁end｜>",
        "<MID>",
        "▁<MID>",
        "<|code_middle|>",
        "<|middle|>",
    ),
    "fim_pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "fim_rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "fim_sep": ("<|file_sep|>",),
}
_EOG_TEXTS = frozenset(
    (
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<eos>",
        "<turn|>",
        "<|tool_response>",
        "<｜end▁of▁sentence｜>",
        "[e~[",
    )
)
_ALWAYS_RENDERED = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>")  # gpt-oss


@dataclass
class GGUFVocab:
    """A GGUF vocabulary as llama.cpp's loader leaves it."""

    path: str
    model: str  # tokenizer.ggml.model
    vocab_type: str  # "SPM", "BPE", "WPM", "UGM"
    pre: str  # tokenizer.ggml.pre ("" when absent)
    texts: list[str]  # token strings (surrogateescape str: exact bytes)
    attrs: list[int]  # llama_token_attr flags, after the loader's fix-ups
    ids: dict[str, int | None]  # bos, eos, eot, eom, unk, sep, pad, mask, fim_*
    eog_ids: frozenset[int]
    add_bos: bool
    add_eos: bool
    add_sep: bool
    add_space_prefix: bool
    remove_extra_whitespaces: bool
    clean_spaces: bool
    escape_whitespaces: bool
    chat_template: str | None
    meta: GGUFMetadata = field(repr=False)


def _fail(path: str, message: str) -> MalformedAssetError:
    return MalformedAssetError(f"{path}: {message}", path=path)


def _key(meta: GGUFMetadata, key: str, kind: int, required: bool = False) -> Any:
    """A scalar key of exactly the type llama.cpp's loader asks for (it refuses any other)."""
    if key not in meta.values:
        if required:
            raise _fail(meta.path, f"GGUF key {key!r} is missing (llama.cpp refuses a file without it)")
        return None
    if meta.types[key][0] != kind:
        raise _fail(
            meta.path,
            f"GGUF key {key!r} at offset {meta.offsets[key]} is {meta.type_name(key)}, "
            f"llama.cpp expects {ValueType.NAMES[kind]}",
        )
    return meta.values[key]


def _array(meta: GGUFMetadata, key: str, elements: tuple[int, ...]) -> list[Any] | None:
    if key not in meta.values:
        return None
    kind, element = meta.types[key]
    if kind != ValueType.ARRAY or element not in elements:
        wanted = " or ".join(ValueType.NAMES[e] for e in elements)
        raise _fail(
            meta.path,
            f"GGUF key {key!r} at offset {meta.offsets[key]} is {meta.type_name(key)}, "
            f"llama.cpp expects an array of {wanted}",
        )
    values: list[Any] = meta.values[key]
    return values


def load_vocab(path: str) -> GGUFVocab:
    """Read `path` and apply llama.cpp's vocabulary loader (llama_vocab::impl::load)."""
    # The merges (150k strings for Qwen) are only needed by encode: checked now, read then.
    return vocab_from_metadata(read_gguf_metadata(path, defer=frozenset([K_MERGES])))


def vocab_from_metadata(meta: GGUFMetadata) -> GGUFVocab:
    path = meta.path
    model = _key(meta, K_MODEL, ValueType.STRING, required=True)
    pre = _key(meta, K_PRE, ValueType.STRING) or ""
    _key(meta, "tokenizer.ggml.token_type_count", ValueType.UINT32)
    if model not in MODEL_TYPES:
        raise _fail(
            path,
            f"GGUF tokenizer model {model!r} is not supported by the gguf kind "
            f"(supported: {', '.join(sorted(MODEL_TYPES))})",
        )
    vocab_type = MODEL_TYPES[model]
    ids: dict[str, int | None] = {role: None for role in _ROLES}
    ids.update({"bos": 1, "eos": 2, "unk": 0})
    ids.update(_DEFAULT_IDS[model])
    add_space_prefix = add_bos = add_eos = add_sep = False
    clean_spaces = False
    escape_whitespaces = True
    if model in ("gpt2", "gemma4"):
        merges = _array(meta, K_MERGES, (ValueType.STRING,))
        if merges is None and not (model == "gpt2" and pre == "kimi-k2"):
            raise _fail(
                path, f"GGUF key {K_MERGES!r} is missing: llama.cpp cannot load a BPE vocabulary without merges"
            )
        if model == "gemma4":
            pre = "gemma4"
    if model == "bert":
        add_sep = True
    if model == "t5":
        charsmap = _array(meta, K_CHARSMAP, (ValueType.INT8, ValueType.UINT8))
        if charsmap is not None:
            if len(charsmap) < 4:
                raise _fail(path, f"GGUF key {K_CHARSMAP!r}: precompiled_charsmap too small for its size header")
            blob = bytes(b & 0xFF for b in charsmap[:4])
            if int.from_bytes(blob, meta.byte_order == "<" and "little" or "big") + 4 >= len(charsmap):
                raise _fail(path, f"GGUF key {K_CHARSMAP!r}: its size header points past the end of the array")
    if vocab_type == "BPE":
        clean_spaces = True
        escape_whitespaces = False
        key_pre = pre or "default"
        if key_pre not in _PRE_FLAGS:
            raise _fail(path, f"unknown pre-tokenizer type {pre!r} (llama.cpp 0.3.36 refuses it)")
        flags = _PRE_FLAGS[key_pre]
        clean_spaces = "noclean" not in flags
        escape_whitespaces = "escape" in flags
        add_bos = add_bos or "bos" in flags
        add_sep = add_sep or "sep" in flags
        if "nobos" in flags:
            ids["bos"] = None
    elif vocab_type == "SPM":
        add_space_prefix, clean_spaces, add_bos, add_eos = True, False, True, False
    elif vocab_type == "WPM":
        add_space_prefix, clean_spaces, add_bos, add_eos, add_sep = False, True, True, False, True
    elif vocab_type == "UGM":
        add_bos, add_eos = False, True
    prefix = _key(meta, "tokenizer.ggml.add_space_prefix", ValueType.BOOL)
    if prefix is not None:
        add_space_prefix = prefix
    remove_extra = bool(_key(meta, "tokenizer.ggml.remove_extra_whitespaces", ValueType.BOOL))

    tokens = _array(meta, K_TOKENS, (ValueType.STRING,))
    if tokens is None:
        raise _fail(path, f"GGUF key {K_TOKENS!r} is missing: there is no vocabulary in this file")
    n = len(tokens)
    scores = _array(meta, K_SCORES, (ValueType.INT32, ValueType.FLOAT32))
    if scores is not None and len(scores) < n:
        raise _fail(path, f"GGUF key {K_SCORES!r} has {len(scores)} entries for {n} tokens")
    types = _array(meta, K_TYPES, (ValueType.INT32,))
    if types is not None and len(types) < n:
        raise _fail(path, f"GGUF key {K_TYPES!r} has {len(types)} entries for {n} tokens")

    texts = list(tokens)
    if not all(texts):
        texts = [text or f"[EMPTY_{i}]" for i, text in enumerate(texts)]
    token_to_id = dict(zip(texts, range(n)))
    if len(token_to_id) != n:
        seen: dict[str, int] = {}
        for i, text in enumerate(texts):
            if text in seen:
                raise _fail(
                    path,
                    f"GGUF key {K_TOKENS!r}: token {i} {text!r} repeats token {seen[text]} "
                    "(llama.cpp refuses duplicate token strings)",
                )
            seen[text] = i
    if types is None:
        attrs = [ATTR_NORMAL] * n
    else:
        table = _TYPE_TO_ATTR.get
        attrs = [table(t, ATTR_UNDEFINED) for t in types[:n]]

    # special ids: a default outside the vocabulary is disabled; a key outside it is ignored
    for role, key in _SPECIAL_KEYS:
        current = ids[role]
        if current is not None and current >= n:
            ids[role] = current = None
        value = _key(meta, key, ValueType.UINT32)
        if value is not None and value < n:
            ids[role] = value
    for name, flag in (("add_bos_token", "bos"), ("add_eos_token", "eos"), ("add_sep_token", "sep")):
        value = _key(meta, f"tokenizer.ggml.{name}", ValueType.BOOL)
        if value is not None:
            if flag == "bos":
                add_bos = value
            elif flag == "eos":
                add_eos = value
            else:
                add_sep = value
    if pre == "gemma4" or pre == "granite-embed-multi-311m":
        add_bos = True
    _key(meta, "tokenizer.ggml.normalizer.lowercase", ValueType.BOOL)
    _key(meta, "tokenizer.ggml.normalizer.strip_accents", ValueType.BOOL)
    _array(meta, "tokenizer.ggml.suppress_tokens", (ValueType.INT32,))

    def force_control(token_id: int) -> None:
        if not attrs[token_id] & ATTR_CONTROL:
            attrs[token_id] |= ATTR_CONTROL

    # "first found" roles: llama.cpp walks an unordered_map, so with several candidates its
    # pick depends on the hash order. We take the first in the order of llama.cpp's list
    # (<|eot_id|>, <|im_end|>, ... before <|endoftext|>), which is its pick on every fixture;
    # the stop ids do not depend on it (every candidate is forced control by the EOG pass).
    for role, candidates in (("eot", _EOT_TEXTS), ("eom", _EOM_TEXTS), *_FIM_TEXTS.items()):
        if ids[role] is None:
            found = [token_to_id[t] for t in candidates if t in token_to_id]
            if found:
                ids[role] = found[0]
                force_control(found[0])
    token_id: int | None  # the loops below reuse it for lookups that may miss
    for token_id in [i for i, a in enumerate(attrs) if a & ATTR_CONTROL]:
        if "unused" in texts[token_id]:
            attrs[token_id] |= ATTR_UNUSED
    eog: set[int] = {i for i in (ids["fim_pad"], ids["fim_rep"], ids["fim_sep"]) if i is not None}
    for text in _EOG_TEXTS:
        token_id = token_to_id.get(text)
        if token_id is not None:
            eog.add(token_id)
            force_control(token_id)
    for text in _ALWAYS_RENDERED:
        token_id = token_to_id.get(text)
        if token_id is not None:
            attrs[token_id] = ATTR_USER_DEFINED
    for role in ("eos", "eot", "eom"):
        if ids[role] is not None:
            eog.add(ids[role])  # type: ignore[arg-type]
    eog_texts = {texts[i]: i for i in eog if 0 <= i < n}
    if "<|end|>" in eog_texts and (
        ("<|return|>" in eog_texts and ("<|call|>" in eog_texts or "<|calls|>" in eog_texts))
        or (("<|call|>" in eog_texts or "<|calls|>" in eog_texts) and "<|flush|>" in eog_texts)
    ):
        end_id = eog_texts["<|end|>"]
        eog.discard(end_id)
        attrs[end_id] = ATTR_USER_DEFINED
    if "</s>" in eog_texts and ("<|tool_response>" in eog_texts or "<|plamo:eos|>" in eog_texts):
        s_id = eog_texts["</s>"]
        eog.discard(s_id)
        attrs[s_id] = ATTR_NORMAL

    _strip_attributes_by_name(meta, pre, texts, token_to_id, attrs)
    template = meta.values.get(K_TEMPLATE)
    return GGUFVocab(
        path=path,
        model=model,
        vocab_type=vocab_type,
        pre=pre,
        texts=texts,
        attrs=attrs,
        ids=ids,
        eog_ids=frozenset(eog),
        add_bos=bool(add_bos),
        add_eos=bool(add_eos),
        add_sep=bool(add_sep),
        add_space_prefix=bool(add_space_prefix),
        remove_extra_whitespaces=remove_extra,
        clean_spaces=clean_spaces,
        escape_whitespaces=escape_whitespaces,
        chat_template=template if isinstance(template, str) else None,
        meta=meta,
    )


def _strip_attributes_by_name(
    meta: GGUFMetadata, pre: str, texts: list[str], token_to_id: dict[str, int], attrs: list[int]
) -> None:
    """llama.cpp's "set attributes by model/tokenizer/architecture name": jina-v2 and
    nomic-bert-moe / jina-bert-v3 give <mask> LSTRIP, modern-bert gives [MASK] LSTRIP, a
    general.name containing phi-3 / phi3 gives every control, user-defined and unknown token
    RSTRIP (and </s>), except <unk>, <s> and <|endoftext|>; for those llama.cpp looks each of
    the four up and fails to load a file that lacks one."""
    name = meta.values.get("general.name")
    name = name.lower() if isinstance(name, str) else ""
    arch = meta.values.get("general.architecture")
    arch = arch if isinstance(arch, str) else ""
    if any(p in pre for p in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or any(
        a in arch for a in ("nomic-bert-moe", "jina-bert-v3")
    ):
        if "<mask>" in token_to_id:
            attrs[token_to_id["<mask>"]] |= ATTR_LSTRIP
    elif "phi-3" in name or "phi3" in name:
        for i, attr in enumerate(attrs):
            if attr & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN):
                attrs[i] |= ATTR_RSTRIP
        for text, value in (("</s>", True), ("<unk>", False), ("<s>", False), ("<|endoftext|>", False)):
            if text not in token_to_id:
                raise _fail(
                    meta.path,
                    f"general.name {name!r} asks for llama.cpp's Phi-3 token rules, but the "
                    f"vocabulary has no {text!r} token (llama.cpp fails to load it)",
                )
            i = token_to_id[text]
            attrs[i] = attrs[i] | ATTR_RSTRIP if value else attrs[i] & ~ATTR_RSTRIP
    elif "modern-bert" in name:
        if "[MASK]" in token_to_id:
            attrs[token_to_id["[MASK]"]] |= ATTR_LSTRIP


# -- token_to_piece ---------------------------------------------------------------------------

_ESCAPED_SPACE = "\u2581".encode()
# The GPT-2 byte alphabet as a str.translate table: its characters map to the byte they stand
# for (as chr(byte)), every other character below U+0100 to a marker that latin-1 cannot encode.
_NOT_MAPPED = "\U0010ffff"
_BYTE_TABLE = {cp: _NOT_MAPPED for cp in range(256)}
_BYTE_TABLE.update({ord(char): chr(byte) for char, byte in CHAR_TO_BYTE.items()})


def _strtol_hex2(text: bytes) -> int:
    """strtol(text, NULL, 16) on the (at most) two characters llama.cpp passes, as a byte."""
    s = text.decode("latin-1")
    i = 0
    while i < len(s) and s[i] in " \t\n\v\f\r":
        i += 1
    sign = 1
    if i < len(s) and s[i] in "+-":
        sign = -1 if s[i] == "-" else 1
        i += 1
    digits = ""
    if s[i : i + 2].lower() == "0x" and i + 2 < len(s) and s[i + 2] in "0123456789abcdefABCDEF":
        i += 2
    while i < len(s) and s[i] in "0123456789abcdefABCDEF":
        digits += s[i]
        i += 1
    return (sign * int(digits, 16) if digits else 0) & 0xFF


def _lenient_code_points(raw: bytes) -> list[int]:
    """unicode_cpts_from_utf8: lead bytes decide the length, continuation bytes are only
    checked for their top bits (no overlong, surrogate or range checks); an invalid byte
    becomes U+FFFD and is skipped alone."""
    out: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b < 0x80:
            out.append(b)
            i += 1
            continue
        if b & 0x40 == 0:
            width = 0
        elif b & 0x20 == 0:
            width = 2
        elif b & 0x10 == 0:
            width = 3
        elif b & 0x08 == 0:
            width = 4
        else:
            width = 0
        if width and i + width - 1 < n and all(raw[i + k] & 0xC0 == 0x80 for k in range(1, width)):
            value = b & (0x7F >> width)
            for k in range(1, width):
                value = (value << 6) | (raw[i + k] & 0x3F)
            out.append(value)
            i += width
        else:
            out.append(0xFFFD)
            i += 1
    return out


def _cpt_to_utf8(cpt: int, where: str) -> bytes:
    if cpt <= 0x7F:
        return bytes([cpt])
    if cpt <= 0x7FF:
        return bytes([0xC0 | (cpt >> 6), 0x80 | (cpt & 0x3F)])
    if cpt <= 0xFFFF:
        return bytes([0xE0 | (cpt >> 12), 0x80 | ((cpt >> 6) & 0x3F), 0x80 | (cpt & 0x3F)])
    if cpt <= 0x10FFFF:
        return bytes([0xF0 | (cpt >> 18), 0x80 | ((cpt >> 12) & 0x3F), 0x80 | ((cpt >> 6) & 0x3F), 0x80 | (cpt & 0x3F)])
    raise MalformedAssetError(f"{where}: invalid code point U+{cpt:X} (llama.cpp fails to load this vocabulary)")


def _bpe_decode_text(raw: bytes, where: str) -> bytes:
    """llama_decode_text: each code point back to its GPT-2 byte; one outside the alphabet
    renders as "[UNK_BYTE_0x<its utf-8 in hex><the whole token text>]"."""
    try:
        text = raw.decode("utf-8")
        return text.translate(_BYTE_TABLE).encode("latin-1")
    except (UnicodeDecodeError, UnicodeEncodeError):
        pass
    out = bytearray()
    for cpt in _lenient_code_points(raw):
        utf8 = _cpt_to_utf8(cpt, where)
        byte = CHAR_TO_BYTE.get(utf8.decode("utf-8", "surrogatepass")) if cpt < 0x110000 else None
        if byte is not None and len(utf8) == len(chr(cpt).encode("utf-8", "surrogatepass")):
            out.append(byte)
        else:
            out += b"[UNK_BYTE_0x" + utf8.hex().encode() + raw + b"]"
    return bytes(out)


def _bpe_decode_all(texts: list[str], where: str) -> list[bytes]:
    """_bpe_decode_text for many tokens: every character of a mapped token is one byte, so one
    translate and one encode of the joined texts, cut at the token lengths; the
    token-by-token rule only when some token falls outside the alphabet."""
    try:
        joined = "".join(texts).translate(_BYTE_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        joined = None
    if joined is not None:
        ends = list(accumulate(map(len, texts)))
        return [joined[start:end] for start, end in zip([0, *ends], ends)]
    out: list[bytes] = []
    for k, text in enumerate(texts):
        try:
            out.append(text.translate(_BYTE_TABLE).encode("latin-1"))
        except UnicodeEncodeError:
            out.append(_bpe_decode_text(text.encode("utf-8", "surrogateescape"), f"{where}: token {k}"))
    return out


def token_pieces_bytes(vocab: GGUFVocab, special: bool = False) -> list[bytes]:
    """What token_to_piece(id, special) renders for every id: with special=False b"" for
    control and unknown ids; with special=True (unparse_special) their own text."""
    pieces = _plain_pieces_bytes(vocab)
    if special:
        texts = vocab.texts
        for i, attr in enumerate(vocab.attrs):
            if attr & (ATTR_UNKNOWN | ATTR_CONTROL):
                pieces[i] = texts[i].encode("utf-8", "surrogateescape")
    return pieces


def _plain_pieces_bytes(vocab: GGUFVocab) -> list[bytes]:
    path = vocab.path
    unescape = vocab.vocab_type != "BPE" or vocab.escape_whitespaces
    attrs = vocab.attrs
    # token_to_piece tests the attributes in this order: control or unknown (nothing),
    # user-defined (its text), normal, byte; anything else renders nothing.
    silent = ATTR_UNKNOWN | ATTR_CONTROL
    user = [i for i, a in enumerate(attrs) if a & ATTR_USER_DEFINED and not a & silent]
    normal = [i for i, a in enumerate(attrs) if a & ATTR_NORMAL and not a & (silent | ATTR_USER_DEFINED)]
    byte = [i for i, a in enumerate(attrs) if a & ATTR_BYTE and not a & (silent | ATTR_USER_DEFINED | ATTR_NORMAL)]
    texts = vocab.texts
    pieces: list[bytes] = [b""] * len(attrs)
    if unescape:
        for i in normal:
            pieces[i] = texts[i].encode("utf-8", "surrogateescape").replace(_ESCAPED_SPACE, b" ")
    else:
        for i, piece in zip(normal, _bpe_decode_all([texts[i] for i in normal], path)):
            pieces[i] = piece
    for i in user:
        pieces[i] = texts[i].encode("utf-8", "surrogateescape")
    for i in byte:
        raw = texts[i].encode("utf-8", "surrogateescape")
        if vocab.vocab_type == "WPM":
            raise _fail(
                path, f"token {i} {texts[i]!r} is typed byte in a WordPiece vocabulary (llama.cpp aborts on it)"
            )
        if len(raw) < 3:
            raise _fail(path, f"byte token {i} {texts[i]!r} is too short to hold a byte value")
        pieces[i] = bytes([_strtol_hex2(raw[3:5])])
    return pieces


def special_ids_of(vocab: GGUFVocab) -> frozenset[int]:
    renders, silent = ATTR_USER_DEFINED | ATTR_NORMAL | ATTR_BYTE, ATTR_UNKNOWN | ATTR_CONTROL
    return frozenset([i for i, a in enumerate(vocab.attrs) if a & silent or not a & renders])


# -- clean_spaces -----------------------------------------------------------------------------

_CLEAN_PUNCT = re.compile(r" (?=[?!.,])")
_CLEAN_QUOTE = re.compile(r" ' ")
_CLEAN_CONTRACTION = re.compile(r" (?='(?:[sm]|re|ve))")


def llama_clean_spaces(text: str) -> str:
    """The three passes of llama_detokenize's clean_spaces, on the decoded text. They only
    move ASCII, so running them on the str equals running them on the bytes before decoding."""
    text = _CLEAN_PUNCT.sub("", text)
    text = _CLEAN_QUOTE.sub("'", text)
    return _CLEAN_CONTRACTION.sub("", text)


# -- the tokenizer ----------------------------------------------------------------------------

_OPTIONS: list[str] = []
_C_SPACE = " \t\n\v\f\r"


class GGUFTokenizer(TableMethods, Tokenizer):
    """The tokenizer inside a GGUF file, exact to llama.cpp's llama_detokenize."""

    def __init__(self, vocab: GGUFVocab, keep_specials: bool = False) -> None:
        self.vocab = vocab
        # keep_specials: the with_specials() view, llama_detokenize with unparse_special on.
        self._pieces = token_pieces_bytes(vocab, special=keep_specials)
        self._special = frozenset() if keep_specials else special_ids_of(vocab)
        self._size = len(self._pieces)
        # Ids that render nothing (the special ids; in the view, unused and undefined ones).
        skip = bytearray(self._size)
        for i, piece in enumerate(self._pieces):
            if not piece:
                skip[i] = FLAG_SKIP
        # The leading-space rule is llama.cpp's: the first id of the call loses one leading
        # space. In a stream, the first id renders its "first" piece and ends the rule, an id
        # that renders nothing included (a control id first keeps the next id's space).
        self._first = first = None
        if vocab.add_space_prefix:
            self._first = first = [piece[1:] if piece[:1] == b" " else piece for piece in self._pieces]
            self._keeps_none = bytes(self._size)  # decode: no id keeps the first rule past itself
            for i in range(self._size):
                if skip[i]:
                    skip[i] |= FLAG_END_FIRST
        raw = PieceTable(list(self._pieces), first_pieces=first, flags=bytes(skip), mode="bytes")
        # decode_incremental and token_pieces are TableMethods': the table's compiled engine,
        # or, with clean_spaces, the transducer over it.
        self._table = CleanSpacesStream(raw, self._special) if vocab.clean_spaces else raw
        self._encoder: Any = None
        self._encoder_error: str | None = None

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> GGUFTokenizer:
        reject_unknown_options(spec.options, _OPTIONS, "gguf")
        path = existing_file(spec.file("gguf"), "GGUF")
        tokenizer = cls(load_vocab(path))
        tokenizer.spec = spec
        return tokenizer

    # -- the contract ------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    def id_to_piece(self, token_id: int) -> str:
        """The vocabulary's token string ("▁the", "Ġthe", "<0x0A>", "<|im_end|>")."""
        return self.vocab.texts[self.check_ids([token_id])[0]]

    def decode(self, ids: Sequence[int]) -> str:
        # llama_detokenize: every id's piece joined; with add_space_prefix the first id's
        # piece loses one leading space (its "first" piece; no id keeps the rule past itself).
        if self._first is None:
            raw: bytes = join_pieces(self._pieces, ids)
        else:
            raw = join_pieces(self._pieces, ids, self._first, self._keeps_none)
        text = raw.decode("utf-8", "replace")
        return llama_clean_spaces(text) if self.vocab.clean_spaces else text

    # -- encode ------------------------------------------------------------------------------

    @property
    def supports_encode(self) -> bool:  # type: ignore[override]
        from ._gguf_encode import encode_refusal

        return encode_refusal(self.vocab) is None

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """llama.cpp's `llama_tokenize(text, add_special, parse_special)` with add_special =
        add_special_tokens (None: False) and parse_special = not split_special_tokens: the text
        is cut at the spelling of every control, unknown and user-defined token (longest token
        first, each over the whole text, as tokenizer_st_partition does; with
        split_special_tokens only the user-defined ones), each stretch between is encoded on
        its own, and add_special_tokens adds bos / eos (WordPiece: bos and sep) as the file's
        add_bos_token / add_eos_token say."""
        text = checked_text(text, "gguf")
        encoder = self._plain_encoder()
        ids: list[int] = []
        for part in self._partition(text, not split_special_tokens):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids.extend(encoder(part))
        return self._add_specials(ids) if add_special_tokens else ids

    def _plain_encoder(self) -> Any:
        if self._encoder is None:
            from ._gguf_encode import build_encoder, encode_refusal

            refusal = encode_refusal(self.vocab)
            if refusal is not None:
                raise EncodeError(refusal)
            self._encoder = build_encoder(self.vocab)
        return self._encoder

    def _partition(self, text: str, parse_special: bool) -> list[str | int]:
        """tokenizer_st_partition: for each special token, longest text first (ties by id), every
        occurrence in every stretch not yet matched becomes that token."""
        key = "_oasr_partition_control" if parse_special else "_oasr_partition_user"
        order = self.__dict__.get(key)
        if order is None:
            wanted = ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN if parse_special else ATTR_USER_DEFINED
            attrs, texts = self.vocab.attrs, self.vocab.texts
            found = [
                i
                for i, a in enumerate(attrs)
                if a & wanted and (parse_special or not a & (ATTR_CONTROL | ATTR_UNKNOWN))
            ]
            order = [
                (texts[i], i) for i in sorted(found, key=lambda i: -len(texts[i].encode("utf-8", "surrogateescape")))
            ]
            self.__dict__[key] = order
        attrs = self.vocab.attrs
        parts: list[str | int] = [text] if text else []
        for token_text, token_id in order:
            if not any(type(p) is str and token_text in p for p in parts):
                continue
            lstrip, rstrip = attrs[token_id] & ATTR_LSTRIP, attrs[token_id] & ATTR_RSTRIP
            cut: list[str | int] = []
            for part in parts:
                if type(part) is not str or token_text not in part:
                    cut.append(part)
                    continue
                stretches = part.split(token_text)
                for k, stretch in enumerate(stretches):
                    if k:
                        cut.append(token_id)
                        if rstrip:  # the whitespace right after the token (C isspace: ASCII only)
                            stretch = stretch.lstrip(_C_SPACE)
                    if lstrip and k < len(stretches) - 1:
                        stretch = stretch.rstrip(_C_SPACE)
                    if stretch:
                        cut.append(stretch)
            parts = cut
        return parts

    def _add_specials(self, ids: list[int]) -> list[int]:
        # tokenize_impl's add_special: SPM, UGM and BPE add bos / eos as add_bos / add_eos say;
        # WordPiece always adds bos in front and sep at the end.
        v = self.vocab
        if v.vocab_type == "WPM":
            head, tail = v.ids["bos"], v.ids["sep"]
        else:
            head = v.ids["bos"] if v.add_bos else None
            tail = v.ids["eos"] if v.add_eos else None
        return [*([head] if head is not None else []), *ids, *([tail] if tail is not None else [])]

    # -- the prompt side (docs/prompts.md) ---------------------------------------------------

    def _special_tokens(self) -> SpecialTokens:
        """The roles llama.cpp reports (llama_vocab_bos/eos/unk/pad/sep/cls/mask: a GGUF key, or
        llama.cpp's default for the vocabulary type) and its end-of-generation set as stop ids."""
        v = self.vocab
        builder = SpecialTokensBuilder(self._size)
        keys = dict(_SPECIAL_KEYS[:8])
        for role, ours in (
            ("bos", "bos"),
            ("eos", "eos"),
            ("unk", "unk"),
            ("pad", "pad"),
            ("sep", "sep"),
            ("mask", "mask"),
            ("cls", "bos"),
        ):
            token_id = v.ids[ours]
            key = keys[ours]
            if role == "cls":
                why = "llama.cpp's cls is its bos (llama_vocab_cls)"
            elif key in v.meta.values and token_id == v.meta.values[key]:
                why = f"GGUF key {key}"
            elif token_id is None:
                why = f"none in this GGUF ({key} absent or out of range)"
            else:
                why = f"llama.cpp's default for a {v.model!r} vocabulary ({key} absent)"
            if token_id is not None:
                why += f" ({v.texts[token_id]!r})"
            builder.set(role, token_id, why)
        for token_id in sorted(v.eog_ids):
            why = "llama.cpp's end-of-generation set"
            for role in ("eos", "eot", "eom"):
                if v.ids[role] == token_id:
                    why = f"llama.cpp's end-of-generation set: its {role} token"
                    break
            builder.stop(token_id, f"{why} ({v.texts[token_id]!r})")
        builder.add_bos = v.add_bos or v.vocab_type == "WPM"
        builder.add_eos = v.add_eos
        return builder.build()

    def _vocabulary(self) -> dict[str, int]:
        # llama.cpp refuses duplicate token strings, so every text names one id.
        return dict(zip(self.vocab.texts, range(self._size)))

    def _keep_specials(self) -> Tokenizer:
        return GGUFWithSpecials(self)

    def _chat_templates(self) -> dict[str, str]:
        """`tokenizer.chat_template` as "default" and `tokenizer.chat_template.<name>` by name,
        the keys llama_model_chat_template(model, name) reads."""
        templates: dict[str, str] = {}
        values = self.vocab.meta.values
        if self.vocab.chat_template is not None:
            templates["default"] = self.vocab.chat_template
        prefix = K_TEMPLATE + "."
        for key in sorted(k for k in values if k.startswith(prefix)):
            value = values[key]
            if isinstance(value, str):
                templates[key[len(prefix) :]] = value
        return templates

    # -- metadata ----------------------------------------------------------------------------

    @property
    def stop_ids(self) -> frozenset[int]:
        """The end-of-generation ids llama.cpp derives (special_eog_ids); the same set as
        special_tokens.stop_ids."""
        return self.vocab.eog_ids

    def describe_details(self) -> dict[str, Any]:
        """Plain data for `describe`: model type, pre, the special ids, the add_* flags, the
        stop ids and whether a chat template is present."""
        v = self.vocab
        return {
            "model": v.model,
            "vocab_type": v.vocab_type,
            "pre": v.pre,
            **{f"{role}_id": v.ids[role] for role in ("bos", "eos", "eot", "eom", "unk", "pad", "sep")},
            "add_bos": v.add_bos,
            "add_eos": v.add_eos,
            "add_space_prefix": v.add_space_prefix,
            "clean_spaces": v.clean_spaces,
            "stop_ids": sorted(v.eog_ids),
            "has_chat_template": v.chat_template is not None,
            "gguf_version": v.meta.version,
            "byte_order": "little" if v.meta.byte_order == "<" else "big",
        }


def _vocabulary_for_value(path: str) -> tuple[bytes, str]:
    # A GGUF model file is gigabytes of tensors: by value it travels as its vocabulary only.
    import os

    return vocabulary_only_gguf(path), os.path.basename(path)


register_value_reader(".gguf", _vocabulary_for_value)


class GGUFWithSpecials(GGUFTokenizer):
    """`GGUFTokenizer.with_specials()`: llama_detokenize(ids, remove_special=False,
    unparse_special=True): control and unknown tokens render their own text ("<s>",
    "<|im_end|>"), then the same leading-space and clean_spaces rules run over the whole text.
    Unused and undefined ids still render nothing. special_ids is empty; encode is the parent's."""

    def __init__(self, parent: GGUFTokenizer) -> None:
        super().__init__(parent.vocab, keep_specials=True)
        self._parent = parent

    @property
    def supports_encode(self) -> bool:  # type: ignore[override]
        return self._parent.supports_encode

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        return self._parent.encode(text, add_special_tokens, split_special_tokens=split_special_tokens)
