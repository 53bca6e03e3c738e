"""The strings vLLM's logprobs show per token id, and the UTF-8 bytes OpenAI's `logprobs.bytes`
carry, for all the ids of a step in one call (docs/engines.md § vLLM, "Logprobs").

vLLM (vllm/tokenizers/detokenizer_utils.py `convert_ids_list_to_tokens`) shows for an id the text
it decodes to alone, special tokens shown (`decode([id])`), with the leading spaces a
SentencePiece-style decode strips put back from the raw piece's leading markers, when the
tokenizer's pre-tokenizer is a Metaspace one (`get_leading_space_marker`); a string that then
ends in U+FFFD (a piece of a character split across tokens) is decoded again with the sampled ids
before it (vllm/v1/engine/logprobs.py `_verify_tokens`, applied by logprobs.py with vLLM's own
code). vLLM does it one id at a time through the tokenizer; here each id's string is made once
per process and kept in a compiled table (oasr_tok._engine.token_table), and a step's k x batch
ids are looked up by one call, which also says which rows hold a string ending in U+FFFD.

The bytes of an id are its own: the bytes it adds to a text in the middle of it, from the kind's
PieceTable where it has one (a byte-fallback or byte-level piece of a character split across
tokens is that character's partial bytes, not the U+FFFD its string shows).
"""

from __future__ import annotations

import json
from typing import Any

from oasr_tok._engine.token_table import TokenTable
from oasr_tok.errors import PiecesNotSupportedError

__all__ = ["TokenStrings", "leading_space_marker"]

#: The SentencePiece word-boundary marker (vLLM's default Metaspace replacement).
MARKER = "\u2581"


def leading_space_marker(tokenizer: Any) -> str | None:
    """vLLM's get_leading_space_marker, for an oasr_tok tokenizer: the Metaspace replacement of
    a tokenizer.json's pre-tokenizer (as transformers loads it: the kind's runtime), None for
    another pre-tokenizer; for the kinds with SentencePiece pieces (sentencepiece, gguf, a
    NeMo archive's model, symbol_table) the marker their pieces spell, which transformers'
    conversion of such a model to a fast tokenizer makes a Metaspace one; else None."""
    backend = getattr(tokenizer, "backend", None)
    if backend is not None and hasattr(backend, "pre_tokenizer"):
        pre = backend.pre_tokenizer
        if pre is None:
            return None
        config = json.loads(pre.__getstate__())
        if config.get("type") == "Metaspace":
            return str(config.get("replacement", MARKER))
        if config.get("type") == "Sequence":
            for sub in config.get("pretokenizers", []):
                if sub.get("type") == "Metaspace":
                    return str(sub.get("replacement", MARKER))
        return None
    try:
        vocabulary = tokenizer.vocabulary
    except PiecesNotSupportedError:
        return None
    return MARKER if any(piece.startswith(MARKER) for piece in vocabulary) else None


def _restore_leading_spaces(raw: str, text: str, marker: str) -> str:
    """vLLM's _restore_leading_spaces: the spaces a decode stripped, put back."""
    markers = len(raw) - len(raw.lstrip(marker))
    if markers == 0:
        return text
    missing = markers - (len(text) - len(text.lstrip(" ")))
    return " " * missing + text if missing > 0 else text


class TokenStrings:
    """Per id, the string vLLM shows for it in logprobs and its own UTF-8 bytes (module
    docstring), for one OasrTokenizer. `rows(arrays)` is the step's one call."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.view = tokenizer.view(False)  # special tokens shown, as vLLM's decode([id]) shows them
        self.marker = leading_space_marker(tokenizer.tokenizer)
        self.table = TokenTable(tokenizer.vocab_size, self._strings_of)

    def _strings_of(self, ids: list[int]) -> list[str]:
        """The strings of `ids` (the table asks for the ones it has not seen yet)."""
        decode, marker, tok = self.view.decode, self.marker, self.tokenizer
        out = []
        for i in ids:
            text = decode([i])
            if marker is not None:
                text = _restore_leading_spaces(tok._piece(i), text, marker)
            out.append(text)
        return out

    def strings(self, ids: Any) -> list[str]:
        """The strings of a list (or 1-D array) of ids, in order."""
        return self.table.strings(ids)

    def rows(self, arrays: list[Any]) -> list[tuple[list[list[str]], bytes]]:
        """For each 2-D id array (positions x k, one request's step: LogprobsLists.logprob_token_ids)
        its rows of strings and, per row, 1 where a string of it ends in U+FFFD (vLLM re-decodes
        those with context), in one call."""
        return self.table.rows(arrays)

    def token_bytes(self, ids: Any) -> list[bytes]:
        """The bytes each id adds to a text in the middle of it (OpenAI's logprobs `bytes`): a
        piece of a character split across tokens is that character's partial bytes."""
        table = self.__dict__.get("_bytes")
        if table is None:
            table = self.__dict__["_bytes"] = self._piece_bytes()
        return [table[i] for i in self.view.check_ids(ids)]

    def _piece_bytes(self) -> tuple[bytes, ...]:
        engine = getattr(self.view, "_table", None)
        piece_bytes = getattr(engine, "piece_bytes", None)
        if piece_bytes is not None:
            return tuple(piece_bytes())
        # No PieceTable (CTC, FunASR, WordPiece ... kinds): an id's text alone is whole characters.
        return tuple(s.encode("utf-8") for s in self.strings(range(self.tokenizer.vocab_size)))
