"""The server loop's oracles, in plain Python: vLLM's stop-string rule and the meaning of a
prompt's continuation, stated over whole texts.

vLLM 0.34 (vllm/v1/engine/detokenizer.py, `check_stop_strings`, since vLLM PR #49391): after
each generated token, for each stop string, search the output text from
``1 - new_char_count - len(stop)`` (counted from its end, so that only a match reaching into the
new characters is found); of the stop strings found, the one that ends earliest wins, ties going
to the order given (`end < best_end`); the output is cut before it, or after it with
include_stop_str_in_output. The token that stops is the one whose text made the match:
transformers' StopStringCriteria stops on the same token. (vLLM before that PR took the first
stop string in the list that was found: ` hello` with stops ["lo", "el"] gave ` hel`, now ` h`.)"""

from __future__ import annotations


def vllm_stop(
    texts: list[str], stops: list[str], include: bool, min_tokens: int = 0
) -> tuple[str, str | None, int | None, int | None]:
    """`texts[t]`: the output text after generated token t. (final output, the stop string,
    the token index that stopped, the offset the stop string starts at). With `min_tokens`
    (vLLM's SamplingParams.min_tokens), only a match reaching into the text of token
    min_tokens or a later one counts."""
    previous = len(texts[min_tokens - 1]) if 0 < min_tokens <= len(texts) else 0
    text = texts[-1] if texts else ""
    for t, text in enumerate(texts):
        if t < min_tokens:
            continue
        new_chars = len(text) - previous
        best: tuple[int, int, str] | None = None  # (end, start, stop)
        for stop in stops:
            start = max(0, len(text) + 1 - new_chars - len(stop))
            at = text.find(stop, start)
            if at == -1:
                continue
            if best is None or at + len(stop) < best[0]:
                best = (at + len(stop), at, stop)
        if best is not None:
            end, at, stop = best
            return text[: end if include else at], stop, t, at
        previous = len(text)
    return text, None, None, None


def continuation(decode, prompt: list[int], generated: list[int]) -> str:
    """What decode(prompt + generated) adds after the part of decode(prompt) it keeps."""
    whole, before = decode(prompt + generated), decode(prompt)
    k = 0
    while k < min(len(whole), len(before)) and whole[k] == before[k]:
        k += 1
    return whole[k:]
