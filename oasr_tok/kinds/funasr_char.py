"""funasr_char: Paraformer's token list (tokens.json, or tokens.txt one token per line), rendered
the way FunASR's `sentence_postprocess` renders it (mode "parity", the default) or with its
data-losing quirks fixed (mode "clean"). docs/kinds/funasr_char.md states every rule.

How the rendering is organised (both modes):

1. Special ids are stripped, then the words FunASR washes out (`<s>`, `</s>`, `<unk>`, `<OOV>`).
2. A small machine turns each remaining token into *elements* (FunASR's `word_lists`): CJK
   tokens as they are, English words followed by a " " element, `x@@` pieces collected into a
   pending word, anything else as it is. A CJK token after an English word removes the last
   element (FunASR's `alpha_blank` pop).
3. Runs of single ASCII letters separated by " " elements become one upper-cased element
   (`a b c` -> `ABC`), the elements are joined and the text is stripped.

In parity mode FunASR first picks a branch from the WHOLE sentence (all "Chinese", all
"alpha", or mixed). For every token whose per-token class agrees with its sentence-level class
the three branches render identically; only "divergent" tokens (none in the real Paraformer
vocabulary: a token with a space inside, `a中`, ...) make the choice visible. Streaming runs the
mixed machine and, once a divergent token appears while the choice is still open, a second
machine for the open branch, emitting only what both agree on.

Streaming is O(1) amortised per token: only the end of the element list can still change (the
element a CJK token may pop, a single letter that may start a run, the " " that a run may
swallow, trailing whitespace the final strip removes), so at most a few elements are held.
The machine (token steps and held end) is compiled: oasr_tok/_engine/funasr.pyx; `decode` below
runs its token steps over the whole list and applies the abbreviation rule in one pass.

`token_pieces` is not the streamed deltas: it runs the token steps once more, recording which
tokens each element came from, so every character lands on the token whose text printed it
(`g@@ p@@ u` -> g, p, u) and word timings match FunASR's merged time stamps.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ._common import checked_text, reject_unknown_options, special_ids_option
from .api import (
    Detected,
    EncodeError,
    Found,
    KindRecord,
    MalformedAssetError,
    SetAside,
    SpecError,
    Stream,
    StreamStateError,
    Tokenizer,
    TokenizerSpec,
    check_owner,
    check_state,
    commit_text,
    feed_for,
    folder_names,
    funasr_machine,
    gather,
    is_tiktoken_ranks,
    parse_json,
    plain_text_candidate,
    read_json,
    read_text,
    short_repr,
    sniff_text_table,
    stream_closed_error,
    table_tag,
    text_lines,
)

__all__ = ["FunASRCharTokenizer", "read_token_list"]


KIND_NAME = "funasr_char"
MODES = ("parity", "clean")
DEFAULT_SPECIALS = ("<blank>", "<s>", "</s>", "<unk>")
# sentence_postprocess drops these words whether or not they are special ids.
WASHED = frozenset(("<s>", "</s>", "<unk>", "<OOV>"))
CONT = "@@"

# Token classes for the per-token machine, and the machine (FunASR's element rules, compiled).
SKIP, CJK, PIECE = funasr_machine.SKIP, funasr_machine.CJK, funasr_machine.PIECE
WORD, OTHER, DIGITS = funasr_machine.WORD, funasr_machine.OTHER, funasr_machine.DIGITS
_Track = funasr_machine.Track
_abbreviate = funasr_machine.abbreviate
_attribute = funasr_machine.attribute
# Sentence branch (parity): nothing seen yet, still all-Chinese, still all-alpha, mixed.
B_EMPTY, B_CHINESE, B_ALPHA, B_MIXED = 0, 1, 2, 3


# -- FunASR's predicates, stated exactly ------------------------------------------------------

# FunASR's "Chinese" is the CJK Unified Ideographs block and nothing else (no extensions, no
# compatibility ideographs); every rule below that says CJK means this range.
CJK_FIRST, CJK_LAST = "\u4e00", "\u9fff"


def _cjk(ch: str) -> bool:
    return CJK_FIRST <= ch <= CJK_LAST


def _chinese_string(s: str) -> bool:
    """FunASR's isChinese applied to a whole string: Python's string ORDER, not a per-character
    test, so "1@@" counts (it sorts between "0" and "9") and "9@@" does not."""
    return CJK_FIRST <= s <= CJK_LAST or "0" <= s <= "9" or s == "@"


def _washed(token: str) -> str:
    """What the sentence-level tests look at: the token without spaces and markup words."""
    for markup in (" ", "</s>", "<s>", "<unk>", "<OOV>"):
        token = token.replace(markup, "")
    return token


def sentence_chinese(token: str) -> bool:
    """The token passes isAllChinese(list of tokens)."""
    return _chinese_string(_washed(token))


def sentence_alpha(token: str) -> bool:
    """The token passes isAllAlpha(list of tokens)."""
    cur = _washed(token)
    if cur == "'":
        return True
    return cur.isalpha() and not _chinese_string(cur)


def _chinese_char(ch: str) -> bool:
    return _cjk(ch) or "0" <= ch <= "9" or ch == "@"


def token_chinese(token: str) -> bool:
    """isAllChinese(token): every CHARACTER a CJK ideograph, an ASCII digit or "@"."""
    return token != "" and all(_chinese_char(ch) for ch in token)


def token_alpha(token: str) -> bool:
    """isAllAlpha(token): every character a letter outside U+4E00..U+9FFF, or an apostrophe."""
    return token != "" and all(ch == "'" or (ch.isalpha() and not _cjk(ch)) for ch in token)


# -- reading the token list -----------------------------------------------------------------

_TABLE_LINE = re.compile(r"^\S+\s+0$")


def read_token_list(path: str) -> list[str]:
    """Tokens indexed by id, from a tokens.json list or a tokens.txt (one token per line, id =
    line index, trailing whitespace dropped as FunASR's reader does). Empty, duplicate or
    non-string tokens raise MalformedAssetError naming the file and the line (or element)."""
    text = read_text(path, "token list")
    if path.lower().endswith(".json"):
        return _json_tokens(path, text)
    lines = text_lines(text)
    if not lines:
        raise MalformedAssetError(f"{path}:1: the token list is empty", path=path, line=1)
    if _TABLE_LINE.match(lines[0].rstrip()):
        raise MalformedAssetError(
            f"{path}:1: {lines[0].rstrip()!r} looks like a 'piece id' symbol table; funasr_char reads one "
            "token per line (use kind 'symbol_table' for this file)",
            path=path,
            line=1,
        )
    tokens: list[str] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        token = raw.rstrip()
        if token == "":
            raise MalformedAssetError(
                f"{path}:{number}: empty line; a token list has one token per line", path=path, line=number
            )
        if token in first_line:
            raise MalformedAssetError(
                f"{path}:{number}: token {token!r} is listed twice (first on line {first_line[token]})",
                path=path,
                line=number,
            )
        first_line[token] = number
        tokens.append(token)
    return tokens


def _json_tokens(path: str, text: str) -> list[str]:
    data = parse_json(path, text, "tokens.json")
    if not isinstance(data, list):
        raise MalformedAssetError(f"{path}: expected a JSON list of tokens, got {type(data).__name__}", path=path)
    if not data:
        raise MalformedAssetError(f"{path}: the token list is empty", path=path)
    seen: dict[str, int] = {}
    for index, token in enumerate(data):
        if not isinstance(token, str):
            raise MalformedAssetError(
                f"{path}: element {index} (id {index}) must be a string token, got {short_repr(token)}", path=path
            )
        if token in seen:
            raise MalformedAssetError(
                f"{path}: token {token!r} is listed twice (ids {seen[token]} and {index})", path=path
            )
        seen[token] = index
    return list(data)


# -- the machine -------------------------------------------------------------------------------
# Track (compiled, oasr_tok/_engine/funasr.pyx) holds one rendering in progress: the token steps of
# the element rules (parity_step, clean_step, clean_close) and the held end of the element list
# (settle releases what no later token can change, rest renders what ending now would add).


def _thaw(frozen: tuple | None) -> tuple[int, _Track, _Track | None, str, str]:
    """(branch, main Track, open-branch Track or None, main text, open-branch text) from the
    plain data kept in state["_funasr"]; StreamStateError if it is not such data."""
    if frozen is None:
        return B_EMPTY, _Track(), None, "", ""
    try:
        if type(frozen) is not tuple:
            raise TypeError
        branch, main_data, alt_data, mbuf, abuf = frozen
        main = _Track(main_data)
        alt = None if alt_data is None else _Track(alt_data)
        if not (isinstance(mbuf, str) and isinstance(abuf, str) and branch in (B_EMPTY, B_CHINESE, B_ALPHA, B_MIXED)):
            raise TypeError
    except (TypeError, ValueError, OverflowError):
        raise StreamStateError("stream state['_funasr'] is not a funasr_char stream state") from None
    return branch, main, alt, mbuf, abuf


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


class FunASRCharTokenizer(Tokenizer):
    """Paraformer token list. Options: `special_ids` (default: the ids of <blank>, <s>, </s>,
    <unk> present in the list), `mode` ("parity", default, or "clean")."""

    supports_encode = True

    def __init__(self, tokens: Sequence[str], special_ids: Sequence[int] | None = None, mode: str = "parity") -> None:
        if mode not in MODES:
            raise SpecError(f"{KIND_NAME}: option mode must be one of {list(MODES)}, got {short_repr(mode)}")
        self._tokens = list(tokens)
        self._mode = mode
        self._clean = mode == "clean"
        size = len(self._tokens)
        self._index = {token: i for i, token in enumerate(self._tokens)}
        default = [self._index[t] for t in DEFAULT_SPECIALS if t in self._index]
        options = {} if special_ids is None else {"special_ids": list(special_ids)}
        self._special = special_ids_option(options, default, size, KIND_NAME)
        # Per id: (class, machine text, sentence-chinese, sentence-alpha, divergent, branch text)
        self._info = [self._classify(i, t) for i, t in enumerate(self._tokens)]
        self._skipped = bytes(entry[0] == SKIP for entry in self._info)  # decode's gather leaves these out
        self._longest = max((len(t) for t in self._tokens), default=0)
        # Recorded in every stream state, so a state another tokenizer made is refused.
        self._tag = table_tag((KIND_NAME, mode, self._tokens, sorted(self._special)))
        self._last_rest: tuple[Any, str] = (None, "")

    def _classify(self, token_id: int, token: str) -> tuple:
        if token_id in self._special or token in WASHED:
            return (SKIP, "", False, False, False, "")
        if self._clean:
            if token != "" and all(_cjk(ch) for ch in token):
                cls, text = CJK, token
            elif CONT in token:
                cls, text = PIECE, token.replace(CONT, "")
            elif token != "" and all("0" <= ch <= "9" for ch in token):
                cls, text = DIGITS, token
            elif token_alpha(token):
                cls, text = WORD, token
            else:
                cls, text = OTHER, token
            return (cls, text, False, False, False, "")
        if token_chinese(token):
            cls, text = CJK, token
        elif CONT in token:
            cls, text = PIECE, token.replace(CONT, "")
        elif token_alpha(token):
            cls, text = WORD, token
        else:
            cls, text = OTHER, token
        chinese, alpha = sentence_chinese(token), sentence_alpha(token)
        # Divergent: the sentence-level branch would render it differently from the mixed rules.
        divergent = (chinese and cls != CJK) or (alpha and cls != WORD)
        branch_text = token.replace(" ", "") if chinese else token
        return (cls, text, chinese, alpha, divergent, branch_text)

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> FunASRCharTokenizer:
        reject_unknown_options(spec.options, ["special_ids", "mode"], KIND_NAME)
        tokens = read_token_list(spec.file("tokens"))
        index = {t: i for i, t in enumerate(tokens)}
        default = [index[t] for t in DEFAULT_SPECIALS if t in index]
        special = special_ids_option(spec.options, default, len(tokens), KIND_NAME)
        tokenizer = cls(tokens, sorted(special), spec.options.get("mode", "parity"))
        tokenizer.spec = spec
        return tokenizer

    @property
    def vocab_size(self) -> int:
        return len(self._tokens)

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    @property
    def mode(self) -> str:
        return self._mode

    def id_to_piece(self, token_id: int) -> str:
        """The token as the list spells it ("and@@", "中", "<s>")."""
        return self._tokens[self.check_ids([token_id])[0]]

    id_to_token = id_to_piece

    # -- whole decode: the plain statement of the rules ---------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        info = self._info  # per id: (class, machine text, sentence-Chinese, sentence-alpha, divergent, branch text)
        kept = gather(info, ids, self._skipped)  # [info[i] for i in ids if info[i][0] != SKIP], the ids checked
        track = _Track()
        if self._clean:
            for entry in kept:
                track.clean_step(entry[0], entry[1])
            track.clean_close()
            elements = track.pend
        elif kept and all(entry[2] for entry in kept):
            elements = [entry[5] for entry in kept]  # the all-Chinese branch
        elif kept and all(entry[3] for entry in kept):
            elements = [x for entry in kept for x in (entry[5], " ")]  # the all-alpha branch
        else:
            for entry in kept:
                track.parity_step(entry[0], entry[1])
            elements = track.pend  # a dangling `@@` word is lost
        return "".join(_abbreviate(elements)).strip()

    # -- streaming ----------------------------------------------------------------------------

    def _advance(self, frozen: tuple | None, ids: Sequence[int], pieces: list[str]) -> tuple:
        """Feed `ids` to the stream `frozen`, appending each id's settled text to `pieces`.
        State: (branch, main track, open-branch track or None, main text and open-branch text
        settled by their tracks but not yet agreed on)."""
        branch, main, alt, mbuf, abuf = _thaw(frozen)
        info, clean = self._info, self._clean
        for token_id in ids:
            cls, text, chinese, alpha, divergent, branch_text = info[token_id]
            if cls == SKIP:
                pieces.append("")
                continue
            out: list[str] = []
            if clean:
                main.clean_step(cls, text)
                main.settle(out)
                pieces.append("".join(out))
                continue
            if branch == B_EMPTY:
                branch = B_CHINESE if chinese else B_ALPHA if alpha else B_MIXED
            elif (branch == B_CHINESE and not chinese) or (branch == B_ALPHA and not alpha):
                branch = B_MIXED
                if alt is not None:  # decided: the mixed rendering wins
                    out.append(mbuf)
                    alt, mbuf, abuf = None, "", ""
            if divergent and alt is None and branch != B_MIXED:
                alt = main.copy()
                alt.blank = False  # the Chinese and alpha branches never pop
            main.parity_step(cls, text)
            if alt is None:
                main.settle(out)
            else:
                mout: list[str] = []
                aout: list[str] = []
                main.settle(mout)
                alt.pend.append(branch_text)
                if branch == B_ALPHA:
                    alt.pend.append(" ")
                alt.settle(aout)
                mbuf += "".join(mout)
                abuf += "".join(aout)
                agreed = _common_prefix(mbuf, abuf)
                if agreed:
                    out.append(mbuf[:agreed])
                    mbuf, abuf = mbuf[agreed:], abuf[agreed:]
            pieces.append("".join(out))
        return (branch, main.freeze(), None if alt is None else alt.freeze(), mbuf, abuf)

    def _rest(self, frozen: tuple | None) -> str:
        """The text that ending the sentence now adds to what was emitted."""
        if frozen is None:
            return ""
        branch, main, alt, mbuf, abuf = _thaw(frozen)
        if alt is not None:  # still undecided: the open branch is the current decode
            return abuf + alt.rest(False)
        return main.rest(self._clean)

    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any] | Stream, final: bool = False) -> str:
        """Stream `new_ids`; returns the text no continuation can change. See Tokenizer."""
        if type(state) is Stream:  # a stream new_stream made (_engine/stream.pyx)
            return feed_for(self, state, new_ids, final)
        new = self.check_ids(new_ids)
        check_owner(state, self._tag)
        closed = state.get("_closed", False)
        frozen = state.get("_funasr")
        if type(closed) is not bool or ("_funasr" not in state and "_tok" in state):
            raise StreamStateError("this stream state is not a funasr_char stream state; start from {}")
        # What the text must end with: the tail its own machine state holds back. The last
        # state this tokenizer made is remembered with its tail (frozen states are immutable
        # tuples, so the same object has the same tail): the usual call renders nothing extra.
        last = self._last_rest
        held = last[1] if last[0] is frozen and frozen is not None else self._rest(frozen)
        check_state(state, self._tag, "" if closed else held)
        if closed:
            if new:
                raise stream_closed_error()
            return ""
        pieces: list[str] = []
        if new:
            frozen = self._advance(frozen, new, pieces)
        delta = "".join(pieces)
        rest = self._rest(frozen)
        if final:
            commit_text(state, delta + rest, "", self._tag)
            delta += rest
        else:
            commit_text(state, delta, rest, self._tag)
            self._last_rest = (frozen, rest)
        state["_funasr"] = frozen
        state["_closed"] = bool(final)
        return delta

    # decode_hypothesis steps this kind's machine itself, from the frozen value state["_funasr"]
    # holds, instead of one decode_incremental call (and a state-dict copy) per agreed id
    # (oasr_tok/core/revisions.py, § Kinds that step a value): _advance and _rest are those steps,
    # and they are exactly what decode_incremental runs.
    _steps_reproduce = decode_incremental
    _fresh_stream: tuple = (B_EMPTY, _Track().freeze(), None, "", "")

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        """One string per id: each character of decode(ids) on the token whose text printed it
        (a `@@` word split over its pieces, an abbreviation letter by letter), a separator the
        rules insert on the token that prints the text after it, "" for text the rules drop.
        docs/kinds/funasr_char.md, § Token pieces."""
        return _attribute(ids, self._info, self._clean)  # (reads and checks the ids as check_ids does)

    # -- encode (hotwords) --------------------------------------------------------------------

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """Ids for a hotword or prompt: CJK characters, digits and other symbols one token per
        character; words of letters and apostrophes through `@@` pieces, greedy longest match
        (tried as written, then lower-cased). EncodeError names a character the list lacks.
        A special token written in the text ("<s>") is its id unless split_special_tokens;
        Paraformer adds no bos/eos, so add_special_tokens changes nothing."""
        text = checked_text(text, KIND_NAME)
        return self.encode_with_special_text(text, self._encode_plain, split_special_tokens)

    def _keep_specials(self) -> FunASRCharTokenizer:
        # FunASR's sentence_postprocess with nothing stripped first: <blank> shows; <s>, </s>,
        # <unk> are still dropped by FunASR's own rule (WASHED), as FunASR prints them.
        return FunASRCharTokenizer(self._tokens, special_ids=[], mode=self._mode)

    def _encode_plain(self, text: str) -> list[int]:
        ids: list[int] = []
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch.isspace():
                i += 1
                continue
            if ch == "'" or (ch.isalpha() and not _cjk(ch)):
                j = i
                while j < n and (text[j] == "'" or (text[j].isalpha() and not _cjk(text[j]))):
                    j += 1
                ids.extend(self._encode_word(text, i, j))
                i = j
                continue
            token_id = self._index.get(ch)
            if token_id is None or token_id in self._special:
                raise EncodeError(
                    f"{KIND_NAME}: cannot encode {ch!r} (offset {i} of {short_repr(text)}): the token list has no such token"
                )
            ids.append(token_id)
            i += 1
        return ids

    def _encode_word(self, text: str, start: int, end: int) -> list[int]:
        word = text[start:end]
        ids, stuck = self._greedy(word)
        if ids is None and word.lower() != word:
            lowered, _ = self._greedy(word.lower())
            if lowered is not None:
                return lowered
        if ids is None:
            raise EncodeError(
                f"{KIND_NAME}: cannot encode {word[stuck]!r} (offset {start + stuck} of {short_repr(text)}): no token "
                f"or '@@' piece of the token list covers the word {short_repr(word)} from there"
            )
        return ids

    def _greedy(self, word: str) -> tuple[list[int] | None, int]:
        """Longest-match pieces: `x@@` for every piece but the last, the plain token last."""
        index, special = self._index, self._special
        ids: list[int] = []
        i, n = 0, len(word)
        while i < n:
            for j in range(min(n, i + self._longest), i, -1):
                token = word[i:j] if j == n else word[i:j] + CONT
                token_id = index.get(token)
                if token_id is not None and token_id not in special:
                    ids.append(token_id)
                    i = j
                    break
            else:
                return None, i
        return ids, n

    def __repr__(self) -> str:
        return f"<FunASRCharTokenizer mode={self._mode!r} vocab_size={self.vocab_size}>"


# -- recognising the files (the registry's detector for this kind) ----------------------------

_FUNASR_MARKERS = ("<blank>", "<s>", "</s>", "<unk>")


def _found(path: str, pieces: list[str], form: str, order: int) -> Found:
    continuation = sum(1 for p in pieces if p.endswith("@@"))
    markers = {m: pieces.index(m) for m in _FUNASR_MARKERS if m in pieces}
    found = Found(
        "funasr_char",
        {"tokens": path},
        {"special_ids": sorted(markers.values())},
        source=os.path.basename(path),
        order=order,
    )
    found.evidence.append(
        (
            "kind",
            f"funasr_char: {form} of {len(pieces)} tokens, {continuation} with @@ continuation; "
            f"FunASR markers {', '.join(markers) or 'none'}",
        )
    )
    found.evidence.append(
        (
            "special_ids",
            "the ids of FunASR's <blank>, <s>, </s>, <unk>: "
            + (", ".join(f"{m} {i}" for m, i in markers.items()) or "none present"),
        )
    )
    return found


def _json_list(path: str) -> list[str] | None:
    data = read_json(path, os.path.basename(path))
    if isinstance(data, list) and data and all(isinstance(p, str) for p in data):
        return data
    return None


def _listed(path: str) -> Detected:
    """A file of one token per line: Paraformer's list when it has @@ pieces or FunASR's
    markers, else the reason it is set aside."""
    pieces = read_token_list(path)
    if any(p.endswith("@@") for p in pieces) or any(m in pieces for m in _FUNASR_MARKERS):
        return _found(path, pieces, "one token per line", 1)
    return SetAside(os.path.basename(path), "one token per line, but without @@ pieces or FunASR markers")


def detect(path: str) -> list[Detected]:
    """Paraformer's token list: tokens.json (a JSON array of strings), then tokens.txt written
    one token per line with @@ pieces or FunASR's <blank> <s> </s> <unk>; a single file of either."""
    if not os.path.isdir(path):
        if path.endswith(".json"):
            pieces = _json_list(path)
            return [] if pieces is None else [_found(path, pieces, "a JSON array", 0)]
        if plain_text_candidate(path) and sniff_text_table(path) == "list":
            return [_listed(path)]
        return []
    names = folder_names(path)
    out: list[Detected] = []
    if "tokens.json" in names:
        at = os.path.join(path, "tokens.json")
        pieces = _json_list(at)
        out.append(
            SetAside("tokens.json", "not a JSON array of token strings")
            if pieces is None
            else _found(at, pieces, "a JSON array", 0)
        )
    if "tokens.txt" in names:
        at = os.path.join(path, "tokens.txt")
        if not is_tiktoken_ranks(at) and sniff_text_table(at) == "list":
            out.append(_listed(at))
    return out


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: FunASR's token list before a
# `piece id` unit table.
KIND = KindRecord("funasr_char", FunASRCharTokenizer.from_spec, detect, precedence=60)
