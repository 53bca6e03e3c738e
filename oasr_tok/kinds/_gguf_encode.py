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

from ..errors import BackendNotInstalledError

if TYPE_CHECKING:
    from ._gguf_vocab import GGUFVocab

__all__ = ["build_encoder", "encode_refusal"]

# llama-vocab.cpp's regex_exprs per pre type (one expression each), for the pre types whose
# split llama.cpp does with a single regex that `tokenizers` runs the same way.
_PRE_REGEX = {
    "qwen2": "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "gpt-2": "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
}
_PRE_REGEX["deepseek-r1-qwen"] = _PRE_REGEX["qwen2"]


def encode_refusal(vocab: GGUFVocab) -> str | None:
    """Why encode cannot reproduce llama.cpp for this vocabulary, or None if it can."""
    if vocab.model == "llama":
        return None
    if vocab.model == "gpt2":
        if vocab.pre in _PRE_REGEX:
            return None
        return (
            f"{vocab.path}: encode does not reproduce llama.cpp's pre-tokenizer {vocab.pre!r} "
            f"(reproduced: {', '.join(sorted(_PRE_REGEX))}); decode works"
        )
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
    else:
        merges_value: Any = vocab.meta.values.get("tokenizer.ggml.merges")
        merges_list = merges_value.load() if hasattr(merges_value, "load") else list(merges_value or [])
        merges = [tuple(m.split(" ", 1)) for m in merges_list if " " in m[1:]]
        backend = Tokenizer(models.BPE(token_ids, merges, ignore_merges=False))
        backend.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(_PRE_REGEX[vocab.pre]), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        backend.decoder = decoders.ByteLevel()
    user = [i for i, a in enumerate(vocab.attrs) if a & 16 and not a & 9]
    if user:
        backend.add_tokens([AddedToken(texts[i], normalized=False, special=False) for i in user])

    def encode(text: str) -> list[int]:
        ids: list[int] = backend.encode(text, add_special_tokens=False).ids
        return ids

    return encode
