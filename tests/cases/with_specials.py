"""The with_specials() views run through the contract suite: one case per kind and file type
(the views render special ids as text, so their streams must keep the three contracts too).
The view's own special_ids is empty, so the parent's special ids are fed in as interesting."""

from __future__ import annotations

from cases import KindCase, funasr_char, gguf, huggingface, sentencepiece, symbol_table, tekken, tiktoken, whisper

_PICKED = {
    "huggingface/qwen3",
    "huggingface/mistral-7b",
    "huggingface/moonshine",
    "huggingface/wordpiece-bert",
    "huggingface/metaspace-first",
    "whisper/faster-whisper-base",
    # gguf: SPM with add_space_prefix, byte-level BPE with fillers, clean_spaces over special text
    "gguf/ggml-vocab-llama-spm",
    "gguf/ggml-vocab-qwen2",
    "gguf/gpt2-cleanspaces",
    "gguf/gemma4-bpe",
    # tekken: names that cut byte runs, in both layouts
    "tekken/tekken_240911",
    "tekken/derived",
    # tiktoken: every special rendered, bytes joined across them (tiktoken's decode)
    "tiktoken/llama3",
}


def _view_case(case: KindCase) -> KindCase:
    def interesting(view, case=case):
        parent = case.tokenizer()
        special = sorted(parent.special_ids)
        return list(case.interesting(parent)) + special[:40] + special[-40:]

    def realistic(view, case=case):
        return case.inputs()[2]

    return KindCase(
        f"with_specials/{case.name}",
        lambda case=case: case.tokenizer().with_specials(),
        interesting=interesting,
        realistic=realistic,
        reference_note="a with_specials() view renders special tokens as text: tests/core/test_prompts.py compares it with "
        "transformers keeping specials (test_with_specials_decode_equals_transformers_keeping_specials)",
    )


def _picked(cases: list[KindCase], first: int = 0) -> list[KindCase]:
    chosen = [c for c in cases if c.name in _PICKED]
    return chosen or cases[:first]


CASES = [
    _view_case(c)
    for c in (
        _picked(huggingface.CASES)
        + _picked(whisper.CASES, 1)
        + _picked(gguf.CASES)
        + _picked(tekken.CASES)
        + _picked(tiktoken.CASES)
        + sentencepiece.CASES
        + symbol_table.CASES[:2]
        + funasr_char.CASES[:1]
    )
]
