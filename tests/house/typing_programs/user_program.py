"""A program written against oasr_tok's public API as a user writes it (DESIGN.md's names).

tests/house/test_typing.py type-checks it with mypy --strict against the installed package (its
stubs and py.typed), asserting the types the API promises with assert_type, and then runs it
on the package's symbol_table demo table: the names it uses exist and behave as typed."""

from __future__ import annotations

import sys
from array import array  # noqa: F401  (named in a string: it is generic for type checkers only)
from collections.abc import Sequence
from pathlib import Path
from typing import Any, assert_type

import numpy
import numpy.typing

import oasr_tok
from oasr_tok.kinds.whisper import WhisperTokenizer
from oasr_tok.outputs import subtitles


def stream(tok: oasr_tok.Tokenizer, ids: list[int]) -> str:
    state: dict[str, Any] = {}
    deltas = [tok.decode_incremental(ids[k : k + 2], state) for k in range(0, len(ids), 2)]
    deltas.append(tok.decode_incremental([], state, final=True))
    text: str = state["text"]
    assert "".join(deltas) == text == tok.decode(ids)
    return text


def timed(tok: oasr_tok.Tokenizer, ids: list[int]) -> list[oasr_tok.Word]:
    starts = [0.04 * k for k in range(len(ids))]
    words = tok.word_timings(ids, starts)
    assert_type(words, oasr_tok.Words)
    assert_type(words.starts, list[float])
    assert_type(words.first_token, "array[int]")
    assert_type(words[1:], oasr_tok.Words)
    as_list = words.to_list()
    assert words == as_list and len(words) == len(as_list)
    if len(words):
        first = words[0]
        assert_type(first, oasr_tok.Word)
        assert_type(first.start, float)
        assert_type(first.text, str)
        assert first.end >= first.start and 0 <= first.first_token <= first.last_token < len(ids)
        assert first.to_dict()["text"] == first.text
    frames = numpy.arange(len(ids), dtype=numpy.int64)  # NumPy times: frame numbers
    by_frame = tok.word_timings(ids, frames)
    assert by_frame.texts == words.texts and by_frame.starts == list(words.first_token)
    return list(words)


def hypotheses(tok: oasr_tok.Tokenizer, ids: list[int]) -> str:
    state: dict[str, Any] = {}
    for end in range(1, len(ids) + 1):
        committed, partial = tok.decode_hypothesis(ids[:end], state)
        assert_type(committed, str)
        assert_type(partial, str)
    timed_state: dict[str, Any] = {}
    delta, partial, words = tok.decode_hypothesis(
        ids, timed_state, final=True, times=[0.1 * k for k in range(len(ids))]
    )
    assert_type(words, list[oasr_tok.Word])
    closing = tok.decode_hypothesis(ids, state, final=True)
    assert_type(closing, tuple[str, str])
    committed_text: str = state["committed"]
    return committed_text


def frames_to_tokens() -> None:
    ids, starts, ends = oasr_tok.collapse_ctc([0, 5, 5, 0, 7, 7, 7, 0], 0)
    assert_type(ids, list[int])
    assert (ids, starts, ends) == ([5, 7], [1, 4], [3, 7])
    arrays = oasr_tok.collapse_ctc(numpy.array([0, 5, 5, 0, 7], dtype=numpy.int32), blank_id=0, vocab_size=10)
    assert_type(arrays[0], numpy.typing.NDArray[numpy.int64])
    assert arrays[0].tolist() == [5, 7]


def prompts(tok: oasr_tok.Tokenizer) -> list[int]:
    specials = tok.special_tokens
    assert_type(specials, oasr_tok.SpecialTokens)
    assert_type(specials.bos_id, int | None)
    assert_type(specials.stop_ids, frozenset[int])
    ids: list[int] = []
    if tok.supports_encode:
        ids = tok.encode("hello world", add_special_tokens=False)
        assert_type(tok.encode_batch(["a", "b"]), list[list[int]])
    if tok.chat_template is not None:
        rendered = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
        assert_type(rendered, str | list[int])
    view = tok.with_specials()
    assert_type(view, oasr_tok.Tokenizer)
    assert view.special_ids == frozenset()
    return ids


def whisper_only(tok: oasr_tok.Tokenizer, ids: list[int]) -> None:
    if isinstance(tok, WhisperTokenizer):
        for segment in tok.segments(ids, offset=30.0):
            assert_type(segment, oasr_tok.Segment)
            assert_type(segment.start, float)
        assert_type(tok.decode_with_timestamps(ids), str)


class Shout(oasr_tok.Tokenizer):
    """A plug-in kind, declared by its record as a built-in kind is (mypy --strict refused 0.2's
    detect / precedence attributes set on the factory)."""

    def __init__(self, spec: oasr_tok.TokenizerSpec) -> None:
        self.spec = spec

    @property
    def vocab_size(self) -> int:
        return 26

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset()

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(chr(65 + i) for i in self.check_ids(ids))


def detect_shout(path: str) -> dict[str, str] | None:
    return {"letters": path} if path.endswith(".shout") else None


def plug_in() -> None:
    record = oasr_tok.KindRecord("shout", Shout, detect_shout, precedence=5)
    assert_type(record.precedence, int)
    oasr_tok.register_kind(record)
    tok = oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec("shout", {}))
    assert tok.decode([7, 8]) == "HI"
    oasr_tok.unregister_tokenizer("shout")


def main(folder: str) -> None:
    units = str(Path(folder) / "symbol_table" / "tokens.txt")
    spec = oasr_tok.TokenizerSpec(kind="symbol_table", files={"units": units}, options={})
    assert oasr_tok.TokenizerSpec.from_dict(spec.to_dict()) == spec
    tok = oasr_tok.build_tokenizer(spec)
    assert_type(tok, oasr_tok.Tokenizer)
    assert_type(oasr_tok.load(units), oasr_tok.Tokenizer)
    assert_type(tok.vocab_size, int)
    assert_type(tok.special_ids, frozenset[int])
    ids = [i for i in range(259, tok.vocab_size, 23) if i not in tok.special_ids]  # past the 256 byte pieces
    assert_type(tok.decode(ids), str)
    pieces = tok.token_pieces(ids)
    assert_type(pieces, list[str])
    assert "".join(pieces) == stream(tok, ids)
    assert tok.decode_batch([ids, ids[:3]]) == [tok.decode(ids), tok.decode(ids[:3])]
    assert tok.decode_batch(numpy.array([ids, ids]), lengths=[3, 2]) == [tok.decode(ids[:3]), tok.decode(ids[:2])]
    words = timed(tok, ids)
    hypotheses(tok, ids)
    frames_to_tokens()
    prompts(tok)
    whisper_only(tok, ids)
    plug_in()
    cues = subtitles.cues(words)
    srt: str = subtitles.to_srt(cues)
    assert srt.startswith("1\n") or not words
    ctm: str = subtitles.to_ctm(words, "utt1")
    assert ctm.count("\n") == len(words)
    detok = oasr_tok.Detokenizer(unit_table=units)
    assert_type(detok.tokenizer, oasr_tok.Tokenizer)
    assert detok.decode(ids) == tok.decode(ids)


if __name__ == "__main__":
    main(sys.argv[1])
