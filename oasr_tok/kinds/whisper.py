"""whisper: a Hugging Face Whisper tokenizer.json (byte-level BPE plus Whisper's control tokens).

Whisper's vocabulary is the byte-level BPE below `<|endoftext|>` (eot), then one block of
control tokens in a fixed order::

    eot, sot, <|xx|> per language (99, or 100 from large-v3 on), translate, transcribe,
    startoflm, startofprev, nospeech (nocaptions in older files), notimestamps,
    <|0.00|> <|0.02|> ... <|30.00|>   (1501 timestamps, 0.02 s apart)

Most tokenizer.json files in circulation stop at notimestamps: the timestamp ids exist only
in the model's vocabulary size. `vocab_size` therefore counts them (notimestamps id + 1 +
1501, or the `vocab_size` option). The layout is found from the control tokens' contents,
never from file names, so English-only (eot 50256), multilingual (eot 50257) and large-v3
(one more language) files all derive their own ids.

Rendering:

* every id >= eot renders nothing (`special_ids` is that whole block, timestamps included);
* the ordinary ids of a prompt block, `<|startofprev|>` ... `<|startoftranscript|>`, render
  nothing either: a prompt is the previous window's text fed back, not the transcript. Only
  `<|startoftranscript|>` closes the block; if it never comes, nothing after
  `<|startofprev|>` is rendered (the block is still open when the ids end);
* what remains is the byte-level rendering: the tokens' bytes, joined, decoded as lossy
  UTF-8 (one U+FFFD per maximal invalid subpart), exactly what `tokenizers`' ByteLevel
  decoder does. Bytes join across the dropped ids, as they do in `tokenizers` when special
  tokens are skipped.

Streaming and token pieces run on the compiled PieceTable in byte mode; the prompt-block rule
is the one piece of context, kept in the stream state as a single bool (key "_whisper").
"""
from __future__ import annotations

import math
import re
import threading
from typing import Any, Sequence

from .._stream import FLAG_SKIP, PieceTable
from .._textbuf import check_owner
from ..base import Tokenizer
from ..errors import (
    BackendNotInstalledError,
    EncodeError,
    InvalidIdError,
    MalformedAssetError,
    NonIntegerIdError,
    SpecError,
    StreamStateError,
    TimingError,
    short_repr,
)
from ..spec import TokenizerSpec
from ._bytelevel import token_bytes
from ._common import ID_SLACK, check_id_span, checked_text, json_id, read_json, reject_unknown_options

__all__ = ["WhisperTokenizer", "WhisperLayout", "read_whisper_layout", "TIMESTAMP_COUNT", "TIMESTAMP_STEP"]

#: <|0.00|> ... <|30.00|>
TIMESTAMP_COUNT = 1501
#: seconds between two timestamp tokens
TIMESTAMP_STEP = 0.02
_PER_SECOND = 50  # 1 / TIMESTAMP_STEP, exact: k / 50 is the correctly rounded k * 0.02

#: The control tokens after the languages, in Whisper's order; nospeech was nocaptions before large-v3.
_TASK_BLOCK = ("<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>")
_LANGUAGE = re.compile(r"<\|([a-z]{2,3}(?:-[A-Za-z]+)?)\|>")
_TIMESTAMP = re.compile(r"<\|(\d+(?:\.\d*)?)\|>")
_STATE_KEY = "_whisper"  # True while a prompt block is open


def _seconds(value: Any, name: str) -> float:
    """A time in seconds given to a helper: a finite real number (TimingError otherwise)."""
    if isinstance(value, (bool, str, bytes)):
        raise TimingError(f"{name} must be a number of seconds, got {short_repr(value)}")
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        raise TimingError(f"{name} must be a number of seconds, got {short_repr(value)}") from None
    if not math.isfinite(seconds):
        raise TimingError(f"{name} must be a finite number of seconds, got {short_repr(value)}")
    return seconds


class WhisperLayout:
    """The ids of Whisper's control tokens, found in one tokenizer.json."""

    __slots__ = ("eot", "sot", "languages", "translate", "transcribe", "sot_lm", "sot_prev", "no_speech",
                 "no_timestamps", "tokens", "special_below_eot", "max_id")

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, fields[name])

    @property
    def timestamp_begin(self) -> int:
        return self.no_timestamps + 1

    @property
    def size(self) -> int:
        """The smallest vocabulary that holds the whole layout (timestamps included)."""
        return self.no_timestamps + 1 + TIMESTAMP_COUNT


def _malformed(path: str, why: str) -> MalformedAssetError:
    return MalformedAssetError(f"{path}: not a Whisper tokenizer.json: {why}", path=path)


def read_whisper_layout(path: str) -> WhisperLayout:
    """Parse `path` and locate Whisper's control tokens by their contents.
    MalformedAssetError (naming the file) for anything that is not a Whisper tokenizer.json."""
    data = read_json(path, "Whisper tokenizer.json")
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise _malformed(path, "it has no 'model' object")
    model, decoder = data["model"], data.get("decoder")
    vocab = model.get("vocab")
    if model.get("type", "BPE") != "BPE" or not isinstance(vocab, dict):
        raise _malformed(path, f"its model is {model.get('type')!r}, not a byte-level BPE with a vocab")
    if not isinstance(decoder, dict) or decoder.get("type") != "ByteLevel":
        kind = decoder.get("type") if isinstance(decoder, dict) else decoder
        raise _malformed(path, f"its decoder is {kind!r}, not ByteLevel")
    tokens: dict[int, str] = {}
    for token, token_id in vocab.items():
        if json_id(token_id) is None:
            raise _malformed(path, f"vocab entry {short_repr(token)} has id {short_repr(token_id)}")
        tokens[token_id] = token
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise _malformed(path, "'added_tokens' is not a list")
    special: set[int] = set()
    for entry in added:
        token_id = json_id(entry.get("id")) if isinstance(entry, dict) else None
        if token_id is None or not isinstance(entry.get("content"), str):
            raise _malformed(path, f"added token {short_repr(entry)} lacks a non-negative integer 'id' and a 'content'")
        tokens[token_id] = entry["content"]
        if entry.get("special"):
            special.add(token_id)
    if tokens:
        check_id_span(max(tokens), len(tokens), path, "its vocabulary")
    by_content = {token: token_id for token_id, token in tokens.items()}
    if "<|nospeech|>" not in by_content and "<|nocaptions|>" in by_content:
        by_content["<|nospeech|>"] = by_content["<|nocaptions|>"]
    missing = [t for t in ("<|endoftext|>", "<|startoftranscript|>", *_TASK_BLOCK) if t not in by_content]
    if missing:
        raise _malformed(path, f"it lacks the control token(s) {', '.join(missing)}")
    eot, sot = by_content["<|endoftext|>"], by_content["<|startoftranscript|>"]
    task_ids = [by_content[t] for t in _TASK_BLOCK]
    if sot != eot + 1 or task_ids != list(range(task_ids[0], task_ids[0] + len(_TASK_BLOCK))):
        raise _malformed(path, f"its control tokens are not in Whisper's order (eot {eot}, sot {sot}, "
                               f"translate ... notimestamps at {task_ids})")
    languages: dict[str, int] = {}
    for token_id in range(sot + 1, task_ids[0]):
        match = _LANGUAGE.fullmatch(tokens.get(token_id, ""))
        if match is None:
            raise _malformed(path, f"id {token_id} ({tokens.get(token_id)!r}) lies between "
                                   "<|startoftranscript|> and <|translate|> but is not a language token")
        languages[match.group(1)] = token_id
    begin = task_ids[-1] + 1
    for token_id in range(begin, begin + TIMESTAMP_COUNT):
        # Newer hub files spell the timestamps out; where they do, they must be where the layout
        # says (a file with other tokens after notimestamps is some other model's layout). The
        # spelling may vary ("<|0.0|>"), the value may not.
        token = tokens.get(token_id)
        if token is None:
            continue
        match = _TIMESTAMP.fullmatch(token)
        expected = (token_id - begin) / _PER_SECOND
        if match is None or abs(float(match.group(1)) - expected) > TIMESTAMP_STEP / 4:
            raise _malformed(path, f"id {token_id} is {token!r}, where timestamp <|{expected:.2f}|> belongs")
    return WhisperLayout(
        eot=eot, sot=sot, languages=languages, translate=task_ids[0], transcribe=task_ids[1], sot_lm=task_ids[2],
        sot_prev=task_ids[3], no_speech=task_ids[4], no_timestamps=task_ids[5], tokens=tokens,
        special_below_eot=frozenset(i for i in special if i < eot), max_id=max(tokens),
    )


class WhisperTokenizer(Tokenizer):
    """Whisper's tokenizer from a HF tokenizer.json. Option: `vocab_size` (default: the layout's,
    notimestamps id + 1 + 1501). encode() needs the `tokenizers` package; decoding does not."""

    supports_encode = True

    def __init__(self, path: str, vocab_size: int | None = None) -> None:
        layout = read_whisper_layout(path)
        needed = max(layout.size, layout.max_id + 1)
        if vocab_size is None:
            vocab_size = needed
        elif isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise SpecError(f"whisper: option vocab_size must be an integer, got {vocab_size!r}")
        elif vocab_size >= 2 * needed + ID_SLACK:
            raise SpecError(
                f"whisper: option vocab_size={vocab_size} is far beyond the {needed} ids the layout of {path} "
                "needs (a padded vocabulary adds a few ids, not millions)"
            )
        elif vocab_size < needed:
            raise SpecError(
                f"whisper: option vocab_size={vocab_size} is smaller than the layout of {path}, which needs "
                f"{needed} ids (notimestamps {layout.no_timestamps} + 1 + {TIMESTAMP_COUNT} timestamps)"
            )
        self._path = path
        self._layout = layout
        self._vocab_size = vocab_size
        eot = layout.eot
        skipped = set(layout.special_below_eot)
        self._special = frozenset(skipped) | frozenset(range(eot, vocab_size))
        # The bytes each id renders: ids the file lacks render nothing, as the runtime drops them.
        self._bytes: list[bytes] = [
            b"" if (i in skipped or i not in layout.tokens) else token_bytes(layout.tokens[i]) for i in range(eot)
        ]
        self._visible = [i not in skipped for i in range(eot)]
        flags = bytearray(vocab_size)
        for token_id in self._special:
            flags[token_id] = FLAG_SKIP
        self._table = PieceTable(self._bytes + [b""] * (vocab_size - eot), flags=bytes(flags), mode="bytes")
        self._sot_prev = layout.sot_prev
        self._table_step = self._table.decode_incremental
        self._table_pieces = self._table.token_pieces
        self._runtime: Any = None
        self._runtime_lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> "WhisperTokenizer":
        reject_unknown_options(spec.options, ["vocab_size"], "whisper")
        tokenizer = cls(spec.file("tokenizer"), spec.options.get("vocab_size"))
        tokenizer.spec = spec
        return tokenizer

    # -- the layout (fixed at load time, like openai/whisper's cached properties) -------------

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        """Every id from eot to vocab_size - 1 (control tokens and timestamps)."""
        return self._special

    @property
    def eot(self) -> int:
        return self._layout.eot

    @property
    def sot(self) -> int:
        return self._layout.sot

    @property
    def sot_prev(self) -> int:
        return self._layout.sot_prev

    @property
    def sot_lm(self) -> int:
        return self._layout.sot_lm

    @property
    def no_speech(self) -> int:
        """<|nospeech|> (spelled <|nocaptions|> before large-v3)."""
        return self._layout.no_speech

    @property
    def no_timestamps(self) -> int:
        return self._layout.no_timestamps

    @property
    def timestamp_begin(self) -> int:
        """The id of <|0.00|>."""
        return self._layout.timestamp_begin

    @property
    def timestamp_end(self) -> int:
        """The id of <|30.00|>."""
        return self._layout.timestamp_begin + TIMESTAMP_COUNT - 1

    @property
    def translate(self) -> int:
        return self._layout.translate

    @property
    def transcribe(self) -> int:
        return self._layout.transcribe

    @property
    def language_ids(self) -> dict[str, int]:
        """Language code -> id of its <|code|> token, in the file's order (a fresh copy)."""
        return dict(self._layout.languages)

    @property
    def all_language_codes(self) -> tuple[str, ...]:
        return tuple(self._layout.languages)

    @property
    def all_language_tokens(self) -> tuple[int, ...]:
        return tuple(self._layout.languages.values())

    def sot_sequence(self, language: str | None = None, task: str = "transcribe", timestamps: bool = True) -> list[int]:
        """The decoder's start: sot, then the language and task tokens (when a language is
        given, as multilingual models expect), then notimestamps unless timestamps are wanted."""
        ids = [self.sot]
        if language is not None:
            if not isinstance(language, str) or language not in self._layout.languages:
                raise EncodeError(
                    f"unknown Whisper language {short_repr(language)}; this file has {', '.join(self._layout.languages)}"
                )
            if task not in ("transcribe", "translate"):
                raise EncodeError(f"task must be 'transcribe' or 'translate', got {short_repr(task)}")
            ids += [self._layout.languages[language], self.transcribe if task == "transcribe" else self.translate]
        if not timestamps:
            ids.append(self.no_timestamps)
        return ids

    def id_to_piece(self, token_id: int) -> str:
        """The file's spelling of `token_id` ("Ġthe", "<|en|>"); timestamps the file lacks are
        spelled as Whisper spells them ("<|1.24|>"); an id the file has no token for (a padded
        vocabulary) is ""."""
        token_id = self.check_ids([token_id])[0]
        token = self._layout.tokens.get(token_id)
        if token is None and self.is_timestamp(token_id):
            token = f"<|{self.timestamp_seconds(token_id):.2f}|>"
        return token or ""

    # -- timestamps ---------------------------------------------------------------------------

    def is_timestamp(self, token_id: int) -> bool:
        return self.timestamp_begin <= token_id <= self.timestamp_end

    def timestamp_seconds(self, token_id: int) -> float:
        """Seconds (relative to the 30 s window) of a timestamp id: (id - timestamp_begin) * 0.02."""
        if isinstance(token_id, bool) or not hasattr(token_id, "__index__"):
            raise NonIntegerIdError(f"timestamp id must be an integer, got {short_repr(token_id)}")
        token_id = token_id.__index__()
        if not self.is_timestamp(token_id):
            raise InvalidIdError(
                f"id {token_id} is not a timestamp: timestamps are {self.timestamp_begin} ... {self.timestamp_end}"
            )
        return (token_id - self.timestamp_begin) / _PER_SECOND

    def timestamp_id(self, seconds: float) -> int:
        """The timestamp id nearest to `seconds` (0 ... 30)."""
        value = _seconds(seconds, "seconds")
        step = round(value * _PER_SECOND)
        if not 0 <= step < TIMESTAMP_COUNT:
            raise TimingError(f"{short_repr(seconds)} s is outside Whisper's timestamp range 0.00 ... 30.00 s")
        return self.timestamp_begin + step

    def token_times(self, ids: Sequence[int], offset: float = 0.0) -> list[float]:
        """A start time per id, from the timestamp tokens among them, for word_timings when the
        caller has no other times. The rule: a timestamp token's time is its own; the other
        tokens between two timestamps are spread evenly over their span (the j-th of n, counting
        from 0, gets t0 + (t1 - t0) * j / n, so the first starts at t0); tokens before the first timestamp get its time, those
        after the last get the last one's; with no timestamp at all every time is `offset`.
        Timestamps inside a prompt block (the previous window's) are ignored. Times never go
        backwards. `offset` (the window's start in seconds) is added to every time."""
        ids = self.check_ids(ids)
        offset = _seconds(offset, "offset")
        begin, end, sot, sot_prev = self.timestamp_begin, self.timestamp_end, self.sot, self.sot_prev
        marks: list[tuple[int, float]] = []  # (position, seconds) of the timestamps that count
        in_prompt = False
        for k, token_id in enumerate(ids):
            if token_id == sot_prev:
                in_prompt = True
            elif token_id == sot:
                in_prompt = False
            elif begin <= token_id <= end and not in_prompt:
                seconds = (token_id - begin) / _PER_SECOND
                marks.append((k, max(seconds, marks[-1][1]) if marks else seconds))
        if not marks:
            return [float(offset)] * len(ids)
        times = [marks[0][1]] * (marks[0][0] + 1)
        for (p, t0), (q, t1) in zip(marks, marks[1:]):
            between = q - p - 1  # the tokens p+1 ... q-1 share the span t0 ... t1
            times.extend(t0 + (t1 - t0) * j / between for j in range(between))
            times.append(t1)
        times.extend([marks[-1][1]] * (len(ids) - len(times)))
        return [t + offset for t in times]

    # -- decoding -----------------------------------------------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        """The transcript: ids >= eot and prompt blocks dropped, the rest byte-level decoded."""
        eot, sot, sot_prev, pieces, visible = self.eot, self.sot, self.sot_prev, self._bytes, self._visible
        kept: list[bytes] = []
        in_prompt = False
        for token_id in self.check_ids(ids):
            if token_id < eot:
                if not in_prompt and visible[token_id]:
                    kept.append(pieces[token_id])
            elif token_id == sot_prev:
                in_prompt = True
            elif token_id == sot:
                in_prompt = False
        return b"".join(kept).decode("utf-8", "replace")

    def _mask_prompts(self, ids: list[int], in_prompt: bool) -> tuple[list[int], bool]:
        """`ids` with every id inside a prompt block replaced by sot_prev (which renders
        nothing), and whether a block is still open at the end."""
        sot, sot_prev = self.sot, self.sot_prev
        masked = []
        for token_id in ids:
            if token_id == sot_prev:
                in_prompt = True
            elif token_id == sot:
                in_prompt = False
            masked.append(sot_prev if in_prompt else token_id)
        return masked, in_prompt

    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str:
        if type(new_ids) is not list:  # tuples, arrays: made a checked list once, here
            new_ids = self.check_ids(new_ids)
        if type(state) is not dict:
            check_owner(state, self._table.tag)  # raises the StreamStateError a non-dict gets
        if self._sot_prev not in new_ids and not state.get(_STATE_KEY):
            # The common case: no prompt block open or opening, the compiled engine does it all.
            return self._table_step(new_ids, state, final)
        in_prompt = state.get(_STATE_KEY, False)
        if type(in_prompt) is not bool:
            raise StreamStateError("this stream state was not made by a whisper tokenizer; start from {}")
        masked, still_open = self._mask_prompts(self.check_ids(new_ids), in_prompt)
        delta = self._table_step(masked, state, final)  # raises before touching state on failure
        if still_open or _STATE_KEY in state:
            state[_STATE_KEY] = still_open
        return delta

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        if type(ids) is not list:
            ids = self.check_ids(ids)
        if self._sot_prev not in ids:
            return self._table_pieces(ids)
        return self._table_pieces(self._mask_prompts(self.check_ids(ids), False)[0])

    # -- encoding -----------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Ids for a prompt, as the `tokenizers` runtime encodes it without special tokens
        (no sot/eot added). Control markup written in the text (e.g. "<|en|>") is matched as the
        runtime matches added tokens. To prompt Whisper, send [sot_prev] + encode(" " + prompt)
        + sot_sequence(...)."""
        text = checked_text(text, "whisper")
        return list(self._backend().encode(text, add_special_tokens=False).ids)

    def _backend(self) -> Any:
        with self._runtime_lock:
            if self._runtime is None:
                try:
                    from tokenizers import Tokenizer as Runtime
                except ImportError as exc:
                    raise BackendNotInstalledError(
                        f"whisper encode needs the 'tokenizers' package ({exc}); pip install 'oasr_tok[whisper]'"
                    ) from exc
                try:
                    self._runtime = Runtime.from_file(self._path)
                except Exception as exc:  # the runtime's own parse error, whatever its type
                    raise MalformedAssetError(f"{self._path}: tokenizers cannot load it: {exc}", path=self._path) from None
            return self._runtime
