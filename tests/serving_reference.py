"""The server loop's oracles, in plain Python: vLLM's stop-string rule and the meaning of a
prompt's continuation, stated over whole texts.

vLLM (vllm/v1/engine/detokenizer.py, `check_stop_strings`, as of its 0.11 line): after each
generated token, for each stop string in the order given, search the output text from
``1 - new_char_count - len(stop)`` (counted from its end, so that only a match reaching into
the new characters is found); the first stop string found wins; the output is cut before it,
or after it with include_stop_str_in_output. The token that stops is the one whose text made
the match: transformers' StopStringCriteria stops on the same token."""

from __future__ import annotations


def vllm_stop(texts: list[str], stops: list[str], include: bool) -> tuple[str, str | None, int | None, int | None]:
    """`texts[t]`: the output text after generated token t. (final output, the stop string,
    the token index that stopped, the offset the stop string starts at)."""
    previous = 0
    text = ""
    for t, text in enumerate(texts):
        new_chars = len(text) - previous
        for stop in stops:
            start = max(0, len(text) + 1 - new_chars - len(stop))
            at = text.find(stop, start)
            if at == -1:
                continue
            end = at + len(stop) if include else at
            return text[:end], stop, t, at
        previous = len(text)
    return text, None, None, None


def continuation(decode, prompt: list[int], generated: list[int]) -> str:
    """What decode(prompt + generated) adds after the part of decode(prompt) it keeps."""
    whole, before = decode(prompt + generated), decode(prompt)
    k = 0
    while k < min(len(whole), len(before)) and whole[k] == before[k]:
        k += 1
    return whole[k:]
