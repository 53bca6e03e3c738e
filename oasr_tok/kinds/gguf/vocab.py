"""The vocabulary of a GGUF file (`tokenizer.ggml.*`) as llama.cpp's loader leaves it
(src/llama-vocab.cpp of the llama.cpp that llama-cpp-python 0.3.36 vendors): the token texts,
their attributes after the loader's fix-ups, the special ids by role and the flags
(add_bos, add_space_prefix, clean_spaces, ...). Read with llama.cpp's refusals: no
`tokenizer.ggml.model`, an unknown model or `pre` type, score or type arrays shorter than the
token list, duplicate token strings, keys of the wrong type. The gguf kind (gguf.py) decodes
with it, its encoder (_gguf_encode.py) encodes with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api import (
    MalformedAssetError,
)
from .reader import GGUFMetadata, ValueType, read_gguf_metadata

__all__ = ["GGUFVocab", "load_vocab", "vocab_from_metadata"]

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
SPECIAL_KEYS: tuple[tuple[str, str], ...] = (
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


def fail(path: str, message: str) -> MalformedAssetError:
    return MalformedAssetError(f"{path}: {message}", path=path)


def _key(meta: GGUFMetadata, key: str, kind: int, required: bool = False) -> Any:
    """A scalar key of exactly the type llama.cpp's loader asks for (it refuses any other)."""
    if key not in meta.values:
        if required:
            raise fail(meta.path, f"GGUF key {key!r} is missing (llama.cpp refuses a file without it)")
        return None
    if meta.types[key][0] != kind:
        raise fail(
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
        raise fail(
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
        raise fail(
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
            raise fail(path, f"GGUF key {K_MERGES!r} is missing: llama.cpp cannot load a BPE vocabulary without merges")
        if model == "gemma4":
            pre = "gemma4"
    if model == "bert":
        add_sep = True
    if model == "t5":
        charsmap = _array(meta, K_CHARSMAP, (ValueType.INT8, ValueType.UINT8))
        if charsmap is not None:
            if len(charsmap) < 4:
                raise fail(path, f"GGUF key {K_CHARSMAP!r}: precompiled_charsmap too small for its size header")
            blob = bytes(b & 0xFF for b in charsmap[:4])
            if int.from_bytes(blob, meta.byte_order == "<" and "little" or "big") + 4 >= len(charsmap):
                raise fail(path, f"GGUF key {K_CHARSMAP!r}: its size header points past the end of the array")
    if vocab_type == "BPE":
        clean_spaces = True
        escape_whitespaces = False
        key_pre = pre or "default"
        if key_pre not in _PRE_FLAGS:
            raise fail(path, f"unknown pre-tokenizer type {pre!r} (llama.cpp 0.3.36 refuses it)")
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
        raise fail(path, f"GGUF key {K_TOKENS!r} is missing: there is no vocabulary in this file")
    n = len(tokens)
    scores = _array(meta, K_SCORES, (ValueType.INT32, ValueType.FLOAT32))
    if scores is not None and len(scores) < n:
        raise fail(path, f"GGUF key {K_SCORES!r} has {len(scores)} entries for {n} tokens")
    types = _array(meta, K_TYPES, (ValueType.INT32,))
    if types is not None and len(types) < n:
        raise fail(path, f"GGUF key {K_TYPES!r} has {len(types)} entries for {n} tokens")

    texts = list(tokens)
    if not all(texts):
        texts = [text or f"[EMPTY_{i}]" for i, text in enumerate(texts)]
    token_to_id = dict(zip(texts, range(n)))
    if len(token_to_id) != n:
        seen: dict[str, int] = {}
        for i, text in enumerate(texts):
            if text in seen:
                raise fail(
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
    for role, key in SPECIAL_KEYS:
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
                raise fail(
                    meta.path,
                    f"general.name {name!r} asks for llama.cpp's Phi-3 token rules, but the "
                    f"vocabulary has no {text!r} token (llama.cpp fails to load it)",
                )
            i = token_to_id[text]
            attrs[i] = attrs[i] | ATTR_RSTRIP if value else attrs[i] & ~ATTR_RSTRIP
    elif "modern-bert" in name:
        if "[MASK]" in token_to_id:
            attrs[token_to_id["[MASK]"]] |= ATTR_LSTRIP
