"""How a text becomes the modeling units of a `tokens.txt` model, as sherpa-onnx's text2token
makes them for hotwords and keywords (sherpa_onnx/utils.py, 2.0.1; tests/toolkits/test_hotwords.py holds
the two to the same lines):

* ``cjkchar``: every character of the text, whitespace dropped;
* ``bpe``: the SentencePiece model's pieces of the text (``bpe.model`` beside the table);
* ``cjkchar+bpe``: each CJK ideograph (U+4E00 ... U+9FFF) on its own, the stretches between
  them (when not blank) in SentencePiece pieces;
* ``fpinyin``: each character's pinyin with its tone mark (pypinyin's first reading);
  ``ppinyin``: that pinyin cut into its initial and its final (pypinyin's tone_convert).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .api import (
    BackendNotInstalledError,
    SpecError,
)

__all__ = ["MODELING_UNITS", "unit_splitter"]

MODELING_UNITS = ("cjkchar", "bpe", "cjkchar+bpe", "fpinyin", "ppinyin")
_CJK = re.compile(r"([\u4e00-\u9fff])")


def _pinyin(partial: bool) -> Callable[[str], list[str]]:
    try:
        from pypinyin import pinyin
        from pypinyin.contrib.tone_convert import to_finals_tone, to_initials
    except ImportError as exc:
        raise BackendNotInstalledError(
            f"pinyin modeling units need the 'pypinyin' package ({exc}); install it with: pip install 'oasr_tok[hotwords]'"
        ) from exc

    def split(text: str) -> list[str]:
        syllables = [reading[0] for reading in pinyin(text)]
        if not partial:
            return syllables
        out: list[str] = []
        for syllable in syllables:
            initial, final = to_initials(syllable, strict=False), to_finals_tone(syllable, strict=False)
            if not initial and not final:
                out.append(syllable)
            else:
                out += [part for part in (initial, final) if part]
        return out

    return split


def unit_splitter(modeling_unit: str, sentencepiece: Any = None) -> Callable[[str], list[str]]:
    """text -> its modeling units, for `modeling_unit` (a SentencePiece processor for the bpe ones)."""
    if modeling_unit not in MODELING_UNITS:
        raise SpecError(
            f"symbol_table: option modeling_unit must be one of {', '.join(MODELING_UNITS)}, got {modeling_unit!r}"
        )
    if modeling_unit == "cjkchar":
        return lambda text: list("".join(text.split()))
    if modeling_unit in ("fpinyin", "ppinyin"):
        return _pinyin(modeling_unit == "ppinyin")
    if sentencepiece is None:
        raise SpecError(f"symbol_table: modeling_unit {modeling_unit!r} needs the bpe.model (file role 'bpe_model')")
    if modeling_unit == "bpe":
        return lambda text: list(sentencepiece.encode(text, out_type=str))

    def mixed(text: str) -> list[str]:
        out: list[str] = []
        for part in _CJK.split(text):
            if not part.strip():
                continue
            out += [part] if _CJK.fullmatch(part) else list(sentencepiece.encode_as_pieces(part))
        return out

    return mixed
