"""Translate a `tokenizers` decoder (the "decoder" of a tokenizer.json) into a PieceTable.

`tokenizers` decodes in three steps (tokenizer/mod.rs `decode`): ids become token strings
(special tokens, and ids with no token, are dropped), the decoder's `decode_chain` turns the
list of strings into a list of strings, and those are joined with "". A decoder whose steps
are *context-free* — each token rendered on its own, except for three rules the compiled
PieceTable knows — streams at constant cost per token. The rules, read from the Rust source
(decoders/*.rs, pre_tokenizers/metaspace.rs) and checked against the installed runtime:

* ByteLevel: every token becomes bytes (its characters through the byte alphabet, or its own
  UTF-8 when a character lies outside it), and the whole list is one lossy UTF-8 string
  (`String::from_utf8_lossy`: one U+FFFD per maximal invalid subpart) -> PieceTable mode
  "bytes".
* ByteFallback: a token spelled `<0xHH>` (6 bytes, parsed by `u8::from_str_radix`, which also
  takes lower case and a leading "+") is a byte; a run of them renders as its UTF-8 when the
  whole run is valid, else as one U+FFFD per byte -> byte_rule "whole_run".
* Metaspace and WordPiece treat token 0 (the first token left after special tokens are
  dropped) differently from the others -> a "first" table. Metaspace drops *every*
  replacement character of token 0 unless prepend_scheme is "never", and turns the others
  into spaces; WordPiece keeps token 0 as it is and, for the others, removes the prefix or
  prepends a space; its clean-up then rewrites each token *on its own* (so nothing ever
  rewrites across tokens, and no tail needs holding for it).
* Replace (plain string pattern) and Strip before any fusing step act on each token.
* Fuse (and the end of the chain, which joins with "") glues everything into one string; a
  Strip(" ", 1, 0) after that drops one leading space of the whole text -> lead "one_space".
* No decoder at all: the runtime joins the token strings with " " -> a "first" table whose
  later pieces start with a space.

* CTC (first in the chain): the runtime first collapses consecutive equal token strings (after
  dropping special tokens, so a special between two equal tokens does not separate them),
  then per token removes the pad token and, with cleanup, applies WordPiece's clean-up and
  turns the delimiter into a space, dropping tokens left empty. The per-token part is a table
  rewrite (empty -> skipped, which also keeps Metaspace's first-token rule waiting); the
  collapse is the CTCStream wrapper (_engine/ctc.pyx), given `repeat_classes`.

* BPEDecoder (alone): the suffix (`</w>`) becomes a space in every token but the last, where
  it is dropped. The table renders the space form; a CTCStream holds the last visible token
  back and shows its last form as the tail (given `last_pieces`).

Anything else (regex Replace, Strip after ByteFallback without Fuse, a
per-token step after a fusing one, ...) either depends on neighbours we would have to hold
or is something we have not proved exact, so it is refused with UnsupportedDecoderError
rather than guessed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._bytelevel import tokens_bytes
from .api import (
    FLAG_BYTE,
    FLAG_SKIP,
    MalformedAssetError,
    PieceTable,
    UnsupportedDecoderError,
)

if TYPE_CHECKING:
    from .api import CTCStream


__all__ = [
    "UnsupportedDecoderError",
    "DecoderPlan",
    "compile_decoder",
    "table_from_tokens",
    "fallback_byte",
    "repeat_classes",
    "stream_for",
]

_HEX = set("0123456789abcdefABCDEF")


def fallback_byte(token: str) -> int | None:
    """The byte ByteFallback reads from `token`, exactly as the Rust decoder does: the token
    is 6 bytes long, starts with "<0x", ends with ">", and bytes 3..5 parse with
    u8::from_str_radix(_, 16) (an optional "+" then hex digits)."""
    if len(token) > 6 or not token.startswith("<0x") or not token.endswith(">"):
        return None
    raw = token.encode("utf-8")
    if len(raw) != 6:
        return None
    digits = token[3:-1]
    if len(digits) != 2:  # bytes 3..5 are not two characters: not a valid str slice of digits
        return None
    if digits[0] == "+":
        digits = digits[1:]
    if not digits or any(c not in _HEX for c in digits):
        return None
    return int(digits, 16)


def _wordpiece_cleanup(text: str) -> str:
    # decoders/wordpiece.rs `cleanup`, in the same order (each replace sees the previous one's output).
    for old, new in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" do not", " don't"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(old, new)
    return text


# A per-token step: (token, is_first) -> token.
TokenStep = Callable[[str, bool], str]


@dataclass
class DecoderPlan:
    """What a decoder chain does, in PieceTable terms."""

    steps: list[TokenStep] = field(default_factory=list)  # per-token rewrites, in order
    first_dependent: bool = False  # some step treats token 0 differently
    mode: str = "text"  # "bytes" for ByteLevel
    byte_fallback: bool = False
    lead: str = "none"
    # The CTC decoder, when it opens the chain: it collapses repeats (by token string, after
    # special tokens were dropped) before anything else, then rewrites each token on its own
    # and drops those left empty. None otherwise.
    ctc: TokenStep | None = None
    # BPEDecoder: how a token renders when it is the last one (its suffix dropped, where every
    # other token's suffix becomes a space). None otherwise.
    last: TokenStep | None = None
    # When every step is a plain-string Replace (Llama/Mistral chains): their (old, new) pairs,
    # which a whole vocabulary can take at once (render_all). None when any step is another.
    replacements: list[tuple[str, str]] | None = field(default_factory=list)

    def render(self, token: str, first: bool) -> str:
        for step in self.steps:
            token = step(token, first)
        return token

    def render_all(self, tokens: list[str]) -> list[str]:
        """render(t, False) of every token: for a chain of Replace steps, each replace made once
        over the whole vocabulary joined by a character none of them holds (a tenth of a call per
        token: benchmarks/RESULTS.md § Measurements behind the code), else a call per token."""
        pairs = self.replacements
        if pairs is not None:
            joined = "\x00".join(tokens)
            if joined.count("\x00") == len(tokens) - 1 and not any("\x00" in old + new for old, new in pairs):
                for old, new in pairs:
                    joined = joined.replace(old, new)
                return joined.split("\x00") if tokens else []
        return [self.render(t, False) for t in tokens]


def _flatten(decoder: Any, where: str) -> list[dict]:
    if decoder is None:
        return []
    if not isinstance(decoder, dict) or "type" not in decoder:
        raise UnsupportedDecoderError(f"{where}: the decoder step {decoder!r} has no type", path=where)
    if decoder["type"] == "Sequence":
        out: list[dict] = []
        for inner in _typed(decoder, "decoders", list, [], where) or []:
            out.extend(_flatten(inner, where))
        return out
    return [decoder]


_TYPE_NAMES = {
    str: "a string",
    bool: "true or false",
    int: "a count (an integer >= 0)",
    list: "a list",
    dict: "an object",
}


def _typed(step: dict, key: str, kind: type, default: Any, where: str) -> Any:
    """step[key] (`default` when absent, or null where the default is None) of the JSON type
    tokenizers' own deserializer requires of it (which refuses the file otherwise): else a
    MalformedAssetError naming the file, the step and the key."""
    value = step.get(key, default)
    if value is None and default is None:
        return None
    if type(value) is not kind or (isinstance(value, int) and value < 0):
        raise MalformedAssetError(
            f"{where}: the decoder step {json.dumps(step, ensure_ascii=False)[:200]}: {key!r} must be "
            f"{_TYPE_NAMES[kind]}, got {json.dumps(value, ensure_ascii=False)[:80]}",
            path=where,
        )
    return value


def compile_decoder(decoder: dict | None, where: str = "tokenizer.json") -> DecoderPlan:
    """The PieceTable plan for a decoder given as tokenizer.json's "decoder" value (None: no
    decoder). UnsupportedDecoderError (naming `where` and the decoder) when no exact plan exists."""
    plan = DecoderPlan()
    if decoder is None:
        # No decoder: the runtime joins the token strings with a space.
        plan.steps.append(lambda t, first: t if first else " " + t)
        plan.first_dependent = True
        plan.replacements = None
        return plan
    chain = _flatten(decoder, where)
    fused = False  # every token has been glued into one string (or bytes) already

    def refuse(step: dict, why: str) -> UnsupportedDecoderError:
        return UnsupportedDecoderError(
            f"{where}: the decoder step {json.dumps(step, ensure_ascii=False)} is not supported: {why}; "
            "oasr_tok refuses decoders it cannot stream exactly rather than guess",
            path=where,
        )

    for position, step in enumerate(chain):
        kind = step["type"]
        if kind == "CTC":
            if position != 0:
                raise refuse(step, "CTC is supported only as the first step (its repeat collapse sees the raw tokens)")
            plan.ctc = _ctc_step(step, where)
            continue
        if fused:
            # After fusing there is one string: only a one-space leading strip is a known rule.
            if (
                kind == "Strip"
                and step.get("content") == " "
                and step.get("stop", 0) == 0
                and step.get("start", 0) in (0, 1)
            ):
                if step.get("start", 0) == 1:
                    if plan.lead != "none":
                        raise refuse(step, "a second leading strip")
                    plan.lead = "one_space"
                continue
            if kind == "Fuse":
                continue
            raise refuse(step, "it acts on the text after the tokens were fused")
        if plan.byte_fallback and kind != "Fuse":
            # ByteFallback turned each run into one or several strings; a per-token step here
            # would see those, not our ids.
            raise refuse(step, "only Fuse may follow ByteFallback")
        if kind == "Replace":
            pattern = _typed(step, "pattern", dict, {}, where)
            if "String" not in pattern:
                raise refuse(step, "only plain-string Replace patterns are supported (not regexes)")
            old, new = _typed(pattern, "String", str, "", where), _typed(step, "content", str, "", where)
            if old == "":
                raise refuse(step, "an empty Replace pattern")

            def replace(t: str, first: bool, old: str = old, new: str = new) -> str:
                return t.replace(old, new)

            plan.steps.append(replace)
            if plan.replacements is not None:
                plan.replacements.append((old, new))
        elif kind == "Strip":
            content = _typed(step, "content", str, " ", where)
            start, stop = _typed(step, "start", int, 0, where), _typed(step, "stop", int, 0, where)
            if stop:
                # strip.rs indexes from the end without a bound check: an empty token (or one
                # made only of `content`, shorter than start + stop) makes the runtime panic.
                raise refuse(step, "a per-token Strip from the end panics in the runtime on short tokens")

            def strip(t: str, first: bool, c: str = content, a: int = start, b: int = stop) -> str:
                return _strip(t, c, a, b)

            plan.steps.append(strip)
            plan.replacements = None
        elif kind == "Metaspace":
            replacement = _typed(step, "replacement", str, "\u2581", where)
            scheme = _typed(step, "prepend_scheme", str, None, where)
            if scheme is None:  # older files: add_prefix_space
                scheme = "never" if _typed(step, "add_prefix_space", bool, None, where) is False else "always"
            drop_first = scheme != "never"

            def metaspace(t: str, first: bool, r: str = replacement, d: bool = drop_first) -> str:
                return t.replace(r, "") if (first and d) else t.replace(r, " ")

            plan.steps.append(metaspace)
            plan.replacements = None
            plan.first_dependent = plan.first_dependent or drop_first
        elif kind == "WordPiece":
            prefix, cleanup = _typed(step, "prefix", str, "##", where), _typed(step, "cleanup", bool, True, where)

            def wordpiece(t: str, first: bool, p: str = prefix, c: bool = cleanup) -> str:
                if not first:
                    t = t.replace(p, "", 1) if t.startswith(p) else " " + t
                return _wordpiece_cleanup(t) if c else t

            plan.steps.append(wordpiece)
            plan.replacements = None
            plan.first_dependent = True
        elif kind == "BPEDecoder":
            # decoders/bpe.rs: the suffix becomes " " in every token but the last, "" there.
            if len(chain) != 1:
                raise refuse(step, "BPEDecoder is supported only on its own")
            suffix = _typed(step, "suffix", str, "</w>", where)

            def suffix_to_space(t: str, first: bool, x: str = suffix) -> str:
                return t.replace(x, " ")

            def suffix_dropped(t: str, first: bool, x: str = suffix) -> str:
                return t.replace(x, "")

            plan.steps.append(suffix_to_space)
            plan.replacements = None
            plan.last = suffix_dropped
        elif kind == "ByteFallback":
            plan.byte_fallback = True
        elif kind == "Fuse":
            fused = True
        elif kind == "ByteLevel":
            plan.mode = "bytes"
            fused = True
        else:
            raise refuse(step, f"decoder type {kind!r} depends on neighbouring tokens or is unknown to oasr_tok")
    if plan.mode == "bytes" and plan.byte_fallback:
        raise refuse(decoder, "ByteFallback together with ByteLevel")
    if plan.mode == "bytes" and plan.first_dependent:
        raise refuse(decoder, "a first-token rule before ByteLevel")
    return plan


def _ctc_step(step: dict, where: str) -> TokenStep:
    # decoders/ctc.rs, after the dedup: the pad token is removed wherever it occurs in the
    # token, then (only with cleanup on) WordPiece's clean-up and the delimiter -> space.
    pad = _typed(step, "pad_token", str, "<pad>", where)
    delimiter = _typed(step, "word_delimiter_token", str, "|", where)
    cleanup = _typed(step, "cleanup", bool, True, where)

    def ctc(token: str, first: bool) -> str:
        token = token.replace(pad, "") if pad else token
        if cleanup:
            token = _wordpiece_cleanup(token).replace(delimiter, " ") if delimiter else _wordpiece_cleanup(token)
        return token

    return ctc


def repeat_classes(tokens: Sequence[str | None]) -> list[int]:
    """For the CTC decoder's collapse: one class per id, equal for ids that spell the same
    token string (the runtime compares strings), -1 for ids dropped before the decoder."""
    first_id: dict[str, int] = {}
    return [-1 if t is None else first_id.setdefault(t, i) for i, t in enumerate(tokens)]


def _strip(token: str, content: str, start: int, stop: int) -> str:
    # decoders/strip.rs: drop up to `start` leading and `stop` trailing `content` characters.
    lo = 0
    while lo < min(start, len(token)) and token[lo] == content:
        lo += 1
    hi = len(token)
    dropped = 0
    while dropped < stop and hi > lo and token[hi - 1] == content:
        hi -= 1
        dropped += 1
    return token[lo:hi]


def stream_for(
    tokens: Sequence[str | None], plan: DecoderPlan, where: str = "tokenizer.json"
) -> PieceTable | CTCStream:
    """The compiled renderer for token strings indexed by id: a PieceTable, wrapped in a
    CTCStream when the plan has a neighbour rule (CTC's repeat collapse, BPEDecoder's last token)."""
    table = table_from_tokens(tokens, plan, where)
    if plan.ctc is not None:
        from .api import CTCStream

        return CTCStream(table, repeat_classes(tokens))
    if plan.last is not None:
        from .api import CTCStream

        last = plan.last
        return CTCStream(table, last_pieces=[None if t is None else last(t, False) for t in tokens])
    return table


def table_from_tokens(tokens: Sequence[str | None], plan: DecoderPlan, where: str = "tokenizer.json") -> PieceTable:
    """The PieceTable for token strings indexed by id (None: the id renders nothing)."""
    size = len(tokens)
    flags = bytearray(size)
    values = bytearray(size)
    if plan.mode == "bytes":
        rendered: list[str | None] = list(tokens)
        for i, token in enumerate(tokens):
            if token is not None and plan.ctc is not None:
                token = plan.ctc(token, False) or None
            if token is None:
                flags[i] = FLAG_SKIP
                rendered[i] = None
            elif plan.steps:
                rendered[i] = plan.render(token, False)
        return PieceTable(tokens_bytes(rendered), flags=bytes(flags), mode="bytes", lead=plan.lead)
    pieces = [""] * size
    first: list[str] | None = [""] * size if plan.first_dependent else None
    steps = plan.steps
    # Every token's rendering at once where the chain allows it (render_all); else per token.
    bulk = plan.render_all([t or "" for t in tokens]) if steps and plan.ctc is None else None
    for i, token in enumerate(tokens):
        if token is not None and plan.ctc is not None:
            token = plan.ctc(token, False) or None  # CTC drops what it leaves empty
        if token is None:
            flags[i] = FLAG_SKIP
            continue
        rest = bulk[i] if bulk is not None else plan.render(token, False) if steps else token
        pieces[i] = rest
        if first is not None:
            first[i] = plan.render(token, True)
        # (fallback_byte's first test said inline: a call per token was most of a ByteFallback
        # table's load; benchmarks/RESULTS.md § Measurements behind the code)
        if plan.byte_fallback and (rest[:3] == "<0x" or (first is not None and first[i][:3] == "<0x")):
            value = fallback_byte(rest)
            if first is not None and fallback_byte(first[i]) != value:
                raise UnsupportedDecoderError(
                    f"{where}: token {i} ({token!r}) is a byte piece in one position and not in another "
                    "after the decoder's first-token rule; oasr_tok cannot stream that exactly",
                    path=where,
                )
            if value is not None:
                flags[i] = FLAG_BYTE
                values[i] = value
    return PieceTable(
        pieces,
        first_pieces=first,
        flags=bytes(flags),
        byte_values=bytes(values),
        mode="text",
        byte_rule="whole_run",
        lead=plan.lead,
    )
