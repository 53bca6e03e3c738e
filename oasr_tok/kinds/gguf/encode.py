"""encode for the gguf kind: a `tokenizers` runtime built from the GGUF metadata, the way
`transformers` builds one when it loads a GGUF (integrations/ggml.py), never a tokenizer of
our own. Reproduced (llama.cpp's goldens `*.gguf.inp` -> `*.gguf.out` pass):

* `llama` (SPM): a BPE model over the vocabulary with merges recovered from the scores, byte
  fallback, the `▁` prefix and space escaping as a normalizer (add_space_prefix);
* `gpt2` with the `pre` types whose regex is listed below: byte-level BPE from the vocabulary
  and merges, the `pre` type's split regex, then the GPT-2 byte alphabet.

User-defined tokens are matched in the text (llama.cpp does so even without parse_special);
control tokens are not. Anything else (bert, t5, gemma4, a `pre` without a regex here) is
refused by encode with an error naming it; decode does not depend on this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..api import (
    BackendNotInstalledError,
)

if TYPE_CHECKING:
    from .vocab import GGUFVocab

__all__ = ["build_encoder", "encode_refusal"]

# llama.cpp's pre-tokenizers (src/llama-vocab.cpp, llama-cpp-python 0.3.36's vendored copy):
# each `tokenizer.ggml.pre` name -> its regex_exprs, applied one after another to the pieces the
# one before left (`tokenizers`' Split, behaviour "isolated", in a Sequence is the same rule),
# and whether llama.cpp takes a piece that is a whole vocabulary entry as is (ignore_merges).
_GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
_CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
_LLAMA3 = (
    _CONTRACTIONS
    + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
_QWEN2 = (
    _CONTRACTIONS
    + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
_QWEN35 = (
    _CONTRACTIONS
    + "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
# (escaped: the literal characters include compatibility forms that editors normalise away)
_DEEPSEEK_LETTERS = "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+"
_TEKKEN = (
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+"
    "((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
_GPT4O = (
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
    + "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*"
    + "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
_REGEXES: dict[str, tuple[str, ...]] = {
    "default": ("[\\p{P}\\$\\+<=>\\^~\\|]+", _GPT2, "\\p{N}+", "[0-9][0-9][0-9]"),
    "llama3": (_LLAMA3,),
    "deepseek-llm": (
        "[\r\n]",
        _DEEPSEEK_LETTERS,
        "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
        "\\s+$",
        "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
        "\\p{N}+",
    ),
    "deepseek-coder": ("[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", "\\p{N}"),
    "falcon": ("[\\p{P}\\$\\+<=>\\^~\\|`]+", _GPT2, "[0-9][0-9][0-9]"),
    "starcoder": ("\\p{N}", _GPT2),
    "gpt2": (_GPT2,),
    "qwen2": (_QWEN2,),
    "qwen35": (_QWEN35,),
    "poro": (" ?[^(\\s|.,!?…。，、।۔،)]+",),
    "chatglm4": (_LLAMA3,),
    "viking": (" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"),
    "tekken": (_TEKKEN,),
    "gpt4o": (_GPT4O,),
    "seed-coder": (
        _CONTRACTIONS
        + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    "bailingmoe": (
        "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    ),
    "ufakzeka": ("[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",),
    "minicpm5": (
        "\\p{N}{1,3}",
        _CONTRACTIONS
        + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    "laguna": ("[^\\n]+|[\\n]+", _QWEN2),
    # (the rest as generated from llama-vocab.cpp, non-ASCII characters escaped)
    "deepseek3": (
        "\\p{N}{1,3}",
        "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    ),
    "exaone-moe": (
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    ),
    "granite-emb-multi": (
        "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    "jais2": (
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
    ),
    "spark2_5": (
        "\\p{N}{1,3}",
        "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
        "\\p{N}",
    ),
    "tiny-aya": (
        "\\d{1,3}(?=(?:\\d{3})*\\b)",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    "youtu": (
        "[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c\u3001-\u303f\ufe30-\ufe4f]+|[\u3105-\u312f]+|[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    "chameleon": (
        "<sentinel:[0-9]+>",
        "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
        "([\\t\\n]|    |  )",
        "\\p{N}",
        "[\\p{P}!-/:-@\\[-`{-~]",
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    ),
}
# tokenizer.ggml.pre -> (llama.cpp's pre type, ignore_merges), as llama_vocab::load reads them.
_PRE: dict[str, tuple[str, bool]] = {
    **dict.fromkeys(("default",), ("default", False)),
    **dict.fromkeys(
        ("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"),
        ("llama3", True),
    ),
    **dict.fromkeys(("dbrx", "smaug-bpe"), ("llama3", False)),
    "deepseek-llm": ("deepseek-llm", False),
    "deepseek-coder": ("deepseek-coder", False),
    "falcon": ("falcon", False),
    **dict.fromkeys(
        ("starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"), ("starcoder", False)
    ),
    **dict.fromkeys(
        (
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
            "jina-v1-en",
            "jina-v2-code",
            "roberta-bpe",
            "mpt",
            "olmo",
            "jais",
            "exaone4",
            "trillion",
            "granite-docling",
        ),
        ("gpt2", False),
    ),  # fmt: skip
    **dict.fromkeys(
        ("qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan"), ("qwen2", False)
    ),
    "qwen35": ("qwen35", False),
    **dict.fromkeys(("poro-chat", "bloom", "gpt3-finnish"), ("poro", False)),
    "chatglm-bpe": ("chatglm4", False),
    **dict.fromkeys(("glm4", "glm5"), ("chatglm4", True)),
    "viking": ("viking", False),
    "tekken": ("tekken", True),
    **dict.fromkeys(("gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"), ("gpt4o", False)),
    "seed-coder": ("seed-coder", False),
    **dict.fromkeys(("bailingmoe", "bailingmoe2", "llada-moe"), ("bailingmoe", False)),
    "ufakzeka": ("ufakzeka", False),
    "grok-2": ("qwen2", False),
    "minicpm5": ("minicpm5", True),
    "laguna": ("laguna", False),
    **dict.fromkeys(("deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"), ("deepseek3", False)),
    "exaone-moe": ("exaone-moe", False),
    "granite-embed-multi-97m": ("granite-emb-multi", True),
    "jais-2": ("jais2", False),
    "spark2_5": ("spark2_5", False),
    **dict.fromkeys(("tiny_aya", "cohere2moe"), ("tiny-aya", False)),
    "youtu": ("youtu", True),
    "chameleon": ("chameleon", False),
    "mellum2": ("starcoder", False),
    "solar-open": ("qwen2", False),
}
#: Pre-tokenizers llama.cpp splits with code of its own rather than its regexes (unicode.cpp's
#: custom splitters, a zero-width split, a whitespace session, SPM-style BPE): encode refuses
#: them by name rather than split another way.
_NOT_REPRODUCED = {
    "kimi-k2": "a hand-written splitter (unicode.cpp, Han excluded from its letters)",
    "afmoe": "a hand-written digit splitter (unicode.cpp, \\p{AFMoE_digits})",
    "superbpe": "a zero-width split between groups of three digits",
    "whitespace": "its whitespace session on raw UTF-8",
    "gemma4": "SPM-style BPE, read only with the gemma4 tokenizer model",
    "sarvam-moe": "SPM-style BPE on raw UTF-8",
    "granite-embed-multi-311m": "SPM-style BPE on raw UTF-8",
}


def encode_refusal(vocab: GGUFVocab) -> str | None:
    """Why encode cannot reproduce llama.cpp for this vocabulary, or None if it can."""
    if vocab.model in ("llama", "gemma4", "bert", "t5"):
        return None
    if vocab.model == "gpt2":
        if vocab.pre in _PRE:
            return None
        why = _NOT_REPRODUCED.get(vocab.pre, "a name llama.cpp 0.3.36 does not know")
        return f"{vocab.path}: encode does not reproduce llama.cpp's pre-tokenizer {vocab.pre!r} ({why}); decode works"
    return f"{vocab.path}: encode is not available for GGUF tokenizer model {vocab.model!r}; decode works"


def _spm_merges(texts: list[str], scores: list[float]) -> list[tuple[str, str]]:
    # transformers' GGUFTokenizerSkeleton: every split of a piece into two pieces of the
    # vocabulary is a merge, ranked by the merged piece's score.
    vocab = dict(zip(texts, scores))
    merges: list[tuple[str, str, float]] = []
    ids = {t: i for i, t in enumerate(texts)}
    for merge, score in vocab.items():
        local = [
            (merge[:k], merge[k:], score) for k in range(1, len(merge)) if merge[:k] in vocab and merge[k:] in vocab
        ]
        local.sort(key=lambda x: (ids[x[0]], ids[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2], reverse=True)
    return [(a, b) for a, b, _ in merges]


def _merges(vocab: GGUFVocab) -> list[tuple[str, str]]:
    value: Any = vocab.meta.values.get("tokenizer.ggml.merges")
    merges = value.load() if hasattr(value, "load") else list(value or [])
    # llama.cpp splits a merge at the first space after its first character (one without is
    # skipped: it has no second part)
    out = []
    for merge in merges:
        at = merge.find(" ", 1)
        if at >= 0:
            out.append((merge[:at], merge[at + 1 :]))
    return out


def _chinese(cpt: int) -> bool:
    # llm_tokenizer_wpm_session::is_chinese_char (the 0x2B920 bound is llama.cpp's, after HF's)
    return (
        0x4E00 <= cpt <= 0x9FFF
        or 0x3400 <= cpt <= 0x4DBF
        or 0x20000 <= cpt <= 0x2A6DF
        or 0x2A700 <= cpt <= 0x2B73F
        or 0x2B740 <= cpt <= 0x2B81F
        or 0x2B920 <= cpt <= 0x2CEAF
        or 0xF900 <= cpt <= 0xFAFF
        or 0x2F800 <= cpt <= 0x2FA1F
    )


#: llama.cpp's whitespace (gen-unicode-data.py: Unicode's White_Space property).
_WPM_WHITESPACE = frozenset([*range(0x09, 0x0E), *range(0x2000, 0x200B), 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029,
                             0x202F, 0x205F, 0x3000])  # fmt: skip


def _wpm_words(text: str, lowercase: bool, strip_accents: bool) -> list[str]:
    """llm_tokenizer_wpm_session::preprocess: each character's first NFD code point (when
    accents are stripped), whitespace ends a word, controls / NUL / U+FFFD dropped, accents
    dropped, lower-cased by the simple case mapping, and every punctuation mark, ASCII symbol
    and CJK ideograph a word of its own."""
    import unicodedata

    words = [""]
    for ch in text:
        if strip_accents:
            ch = unicodedata.normalize("NFD", ch)[0]
        cpt = ord(ch)
        if cpt in _WPM_WHITESPACE:
            if words[-1]:
                words.append("")
            continue
        category = unicodedata.category(ch)
        if cpt == 0 or cpt == 0xFFFD or (category[0] == "C" and category != "Cn"):
            continue
        if strip_accents and category[0] == "M":
            continue
        if lowercase:
            lowered = ch.lower()
            ch = lowered[0] if lowered else ch  # the simple mapping: İ is i, not i + U+0307
        if category[0] == "P" or (cpt < 0x7F and category[0] == "S") or _chinese(cpt):
            if words[-1]:
                words.append("")
            words[-1] = ch
            words.append("")
        else:
            words[-1] += ch
    if not words[-1]:
        words.pop()
    return words


def _wpm_encoder(vocab: GGUFVocab) -> Callable[[str], list[int]]:
    """llama.cpp's WPM (BERT) tokenizer: each word, with "▁" before it, cut greedily into the
    longest vocabulary entries from left to right; a word with a piece that matches nothing is
    the unknown token. Plain Python: no library tokenizes a "▁"-marked WordPiece vocabulary."""
    values = vocab.meta.values
    # llama_vocab's normalizer_options: both on unless the file says otherwise
    lowercase = bool(values.get("tokenizer.ggml.normalizer.lowercase", True))
    strip_accents = bool(values.get("tokenizer.ggml.normalizer.strip_accents", lowercase))
    table = {text.encode("utf-8", "surrogateescape"): i for i, text in enumerate(vocab.texts)}
    longest = max((len(k) for k in table), default=0)
    unk = vocab.ids["unk"]

    def encode(text: str) -> list[int]:
        out: list[int] = []
        for word in _wpm_words(text, lowercase, strip_accents):
            marked = ("\u2581" + word).encode("utf-8")
            n, start, i = len(marked), len(out), 0
            while i < n:
                for j in range(min(n, i + longest + 1), i, -1):
                    token = table.get(marked[i:j])
                    if token is not None:
                        out.append(token)
                        i = j
                        break
                else:
                    del out[start:]  # a piece matches nothing: the whole word is unknown
                    break
            if len(out) == start and unk is not None:
                out.append(unk)
        return out

    return encode


def build_encoder(vocab: GGUFVocab) -> Callable[[str], list[int]]:
    try:
        from tokenizers import (
            AddedToken,
            Regex,
            Tokenizer,
            decoders,
            models,
            normalizers,
            pre_tokenizers,
        )
    except ImportError as exc:
        raise BackendNotInstalledError(
            f"gguf encode needs the 'tokenizers' package ({exc}); install it with: pip install 'oasr_tok[gguf]'"
        ) from exc
    if vocab.model == "bert":
        return _wpm_encoder(vocab)
    if vocab.model == "t5":
        from .ugm import ugm_encoder

        return ugm_encoder(vocab)
    texts = vocab.texts
    token_ids = {t: i for i, t in enumerate(texts)}
    backend: Any
    if vocab.model == "llama":
        scores = vocab.meta.values.get("tokenizer.ggml.scores") or [0.0] * len(texts)
        unk = texts[vocab.ids["unk"]] if vocab.ids["unk"] is not None else None
        backend = Tokenizer(
            models.BPE(token_ids, _spm_merges(texts, list(scores)), unk_token=unk, fuse_unk=True, byte_fallback=True)
        )
        steps: list[Any] = [normalizers.Replace(" ", "\u2581")]
        if vocab.add_space_prefix:
            steps.insert(0, normalizers.Prepend("\u2581"))
        backend.normalizer = normalizers.Sequence(steps)
        backend.decoder = decoders.ByteFallback()
    elif vocab.model == "gemma4":
        # SPM-style BPE (llama.cpp's GEMMA4 pre type): spaces escaped as "▁", the text split
        # only at newline runs, merges over raw UTF-8, an unknown character spelled <0xNN>
        backend = Tokenizer(models.BPE(token_ids, _merges(vocab), byte_fallback=True, ignore_merges=False))
        backend.normalizer = normalizers.Replace(" ", "\u2581")
        backend.pre_tokenizer = pre_tokenizers.Split(Regex("[^\\n]+|[\\n]+"), behavior="isolated")
        backend.decoder = decoders.ByteFallback()
    else:
        pre, ignore_merges = _PRE[vocab.pre]
        backend = Tokenizer(models.BPE(token_ids, _merges(vocab), ignore_merges=ignore_merges))
        backend.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in _REGEXES[pre]]
            + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
        backend.decoder = decoders.ByteLevel()
    user = [i for i, a in enumerate(vocab.attrs) if a & 16 and not a & 9]
    if user:
        backend.add_tokens([AddedToken(texts[i], normalized=False, special=False) for i in user])

    def encode(text: str) -> list[int]:
        ids: list[int] = backend.encode(text, add_special_tokens=False).ids
        return ids

    return encode
