"""The peers oasr_tok is measured against, written over the native runtimes so every side
pays the same Python call overhead and reads the same ids.

Streaming peers share one shape: a class whose `step(token_id)` takes one id and returns the
text it lets out. How each reaches transcript position N before the timed tokens is part of
the methodology (see README.md): the constant-state peers are re-streamed, the stateless
re-decoders just get the prefix.
"""

from __future__ import annotations


class DecodeStreamPeer:
    """`tokenizers.decoders.DecodeStream.step`, the runtime's own streaming decoder."""

    name = "DecodeStream"

    def __init__(self, runtime, prefix: list[int]) -> None:
        from tokenizers.decoders import DecodeStream

        self.runtime = runtime
        self.stream = DecodeStream(skip_special_tokens=True)
        step = self.stream.step
        for token_id in prefix:  # streamed, so its window is exactly what N steps leave
            step(runtime, token_id)

    def step(self, token_id: int) -> str:
        return self.stream.step(self.runtime, token_id) or ""


def _is_cjk(cp: int) -> bool:
    # The ranges transformers' TextStreamer._is_chinese_char tests.
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class RedecodePrefixPeer:
    """What transformers' TextIteratorStreamer does per token: decode the whole token cache
    again and print what lies past the last printed offset, up to the last space (all of it
    after a newline or a CJK character). Θ(N) per token."""

    name = "re-decode prefix"

    def __init__(self, runtime, prefix: list[int]) -> None:
        self.runtime = runtime
        self.cache = list(prefix)
        self.print_len = 0
        if self.cache:
            self._emit()

    def _emit(self) -> str:
        text = self.runtime.decode(self.cache, skip_special_tokens=True)
        if text.endswith("\n"):
            out = text[self.print_len :]
            self.cache, self.print_len = [], 0
        elif text and _is_cjk(ord(text[-1])):
            out = text[self.print_len :]
            self.print_len += len(out)
        else:
            out = text[self.print_len : text.rfind(" ") + 1]
            self.print_len += len(out)
        return out

    def step(self, token_id: int) -> str:
        self.cache.append(token_id)
        return self._emit()


class VllmWindowPeer:
    """vLLM's detokenize_incrementally: the ids become token strings once; each step decodes
    tokens[prefix_offset:] and tokens[prefix_offset:read_offset] with the runtime's decoder
    and lets out the difference, unless it ends in U+FFFD. As in vLLM, `prev_tokens +
    new_tokens` builds the output token list anew each step, and a stream that starts at a
    prompt of N tokens begins with prefix_offset = N - 5, read_offset = N."""

    name = "vLLM window"
    INITIAL_OFFSET = 5  # vLLM's INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET

    def __init__(self, runtime, prefix: list[int], special: frozenset[int]) -> None:
        self.runtime = runtime
        self.decode_tokens = runtime.decoder.decode
        self.to_token = runtime.id_to_token
        self.special = special
        self.tokens = [self.to_token(i) for i in prefix if i not in special]
        self.prefix_offset = max(len(self.tokens) - self.INITIAL_OFFSET, 0)
        self.read_offset = len(self.tokens)

    def step(self, token_id: int) -> str:
        new_tokens = [] if token_id in self.special else [self.to_token(token_id) or ""]
        output_tokens = self.tokens + new_tokens
        prefix_text = self.decode_tokens(output_tokens[self.prefix_offset : self.read_offset])
        new_text = self.decode_tokens(output_tokens[self.prefix_offset :])
        self.tokens.extend(new_tokens)
        if len(new_text) <= len(prefix_text) or new_text.endswith("\ufffd"):
            return ""
        self.prefix_offset, self.read_offset = self.read_offset, len(output_tokens)
        return new_text[len(prefix_text) :]


class SentencePiecePartialPeer:
    """SentencePiece's decode of every partial hypothesis (what a recogniser front end
    without a streaming detokenizer does). Θ(N) per token."""

    name = "sentencepiece partial"

    def __init__(self, processor, prefix: list[int]) -> None:
        self.decode = processor.decode
        self.cache = list(prefix)
        self.printed = len(self.decode(self.cache)) if self.cache else 0

    def step(self, token_id: int) -> str:
        self.cache.append(token_id)
        text = self.decode(self.cache)
        out = text[self.printed :]
        self.printed = len(text)
        return out


def hf_special_ids(runtime) -> frozenset[int]:
    """The runtime's special added tokens (what skip_special_tokens skips)."""
    return frozenset(i for i, t in runtime.get_added_tokens_decoder().items() if t.special)


__all__ = ["DecodeStreamPeer", "RedecodePrefixPeer", "VllmWindowPeer", "SentencePiecePartialPeer", "hf_special_ids"]
