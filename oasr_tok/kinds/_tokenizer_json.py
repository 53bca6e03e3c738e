"""What a tokenizer.json says of itself at a glance, for the detectors of the kinds that read
one (huggingface, whisper): its model and decoder types and its added tokens."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from .api import (
    MalformedAssetError,
    read_json,
    short_repr,
)

__all__ = ["TokenizerJson", "glance"]


@dataclass(frozen=True)
class TokenizerJson:
    path: str
    model: str
    decoder: str
    #: content -> id of every added token, and the number marked special
    added: dict[str, Any]
    special: int

    @property
    def structure(self) -> str:
        return f"tokenizers model {self.model}, decoder {self.decoder}, {len(self.added)} added tokens"


@functools.lru_cache(maxsize=4)
def _glance(path: str, stamp: tuple[int, int]) -> TokenizerJson | None:
    data = read_json(path, os.path.basename(path))
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        return None
    listed = data.get("added_tokens") or []
    if not isinstance(listed, list):
        raise MalformedAssetError(f"{path}: 'added_tokens' is not a list", path=path)
    added = [a for a in listed if isinstance(a, dict) and isinstance(a.get("content"), str)]
    decoder_step = data.get("decoder")
    decoder = decoder_step.get("type", "none") if isinstance(decoder_step, dict) else short_repr(decoder_step)
    return TokenizerJson(
        path,
        str(data["model"].get("type", "?")),
        str(decoder),
        {a["content"]: a.get("id") for a in added},
        sum(1 for a in added if a.get("special")),
    )


def glance(path: str) -> TokenizerJson | None:
    """The summary of the tokenizer.json at `path`, None if the JSON is not one (no 'model'
    object); typed errors for a file that is not JSON. Read once per version of the file."""
    stat = os.stat(path)
    return _glance(path, (stat.st_mtime_ns, stat.st_size))


#: The two added tokens that make a tokenizer.json Whisper's (language tokens are further evidence).
WHISPER_MARKERS = ("<|startoftranscript|>", "<|notimestamps|>")


def is_whisper(summary: TokenizerJson) -> bool:
    return all(marker in summary.added for marker in WHISPER_MARKERS)
