"""One transcript from many chunks (rules: docs/stitching.md).

Audio longer than a model's window is cut into overlapping chunks and each chunk is generated on
its own. `StitchedTranscript` takes the chunks' ids one chunk at a time and gives one transcript:

* the overlap is removed on token ids exactly as transformers removes it: the ASR pipeline's
  ``_find_longest_common_sequence`` for sequence-to-sequence models, Whisper's ``_decode_asr``
  (timestamps, strides, word timings) for the whisper kind, and the pipeline's frame trimming for
  CTC (`pipeline_overlap`, `whisper_overlap` are the two matching rules as functions);
* where two chunks share nothing (no overlap found), the join is what the script needs: no space
  between two characters of scripts written without spaces, else the whitespace the tokens wrote,
  else one space (never two);
* every time is the chunk's real start plus the time inside the chunk;
* a speech model's envelope (Qwen3-ASR's ``language X<asr_text>``, SenseVoice's tags) is read per
  chunk: one language for the transcript, never the header's text in it;
* what `add` returns is settled: the deltas are a prefix of every later text (no retraction).

It imports nothing above this floor: the tokenizer is a parameter, used through its public calls
(``check_ids``, ``special_ids``, ``new_stream``, ``token_pieces``, ``word_timings``,
``id_to_piece``).
"""

from __future__ import annotations

import copy
import math
import operator
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ChunkError, InvalidIdError, NonIntegerIdError, TimingError, short_repr
from .cues import joins_without_space
from .envelopes import new_parser, whisper_language
from .segments import Segment, segment_words

__all__ = ["METHODS", "StitchedTranscript", "pipeline_overlap", "whisper_overlap"]

#: The stitching rules, by the transformers code each follows.
METHODS = ("seq2seq", "whisper", "ctc")

#: Seconds per Whisper timestamp step (transformers: chunk_length / max_source_positions).
WHISPER_TIME_PRECISION = 30 / 1500

#: The times each method reads (add's arguments); any other given is refused.
_READS = {"seq2seq": ("times",), "whisper": ("token_timestamps",), "ctc": ("frames", "frame_count")}


# -- the two matching rules, on id lists --------------------------------------------------------


def pipeline_overlap(sequence: Sequence[int], new: Sequence[int]) -> int:
    """How many ids at the start of `new` the end of `sequence` already holds: transformers' ASR
    pipeline ``_find_longest_common_sequence`` for one chunk (``sequence.extend(new[index:])``).

    For each length i of ``new[:i]`` it counts the positions where ``sequence[-i:]`` agrees, and
    keeps the i with the best ``matches / i + i / 10000`` among those with more than one match
    (the first such i on a tie); 0 when none. Where ``sequence`` is shorter than i, its ids are
    compared right-aligned (transformers' numpy comparison raises there under numpy 2, or
    broadcasts a one-id sequence: docs/stitching.md § Deviations).

    It counts agreeing pairs instead of comparing every window: each pair of equal ids (p in the
    last len(new) of `sequence`, q in `new`) agrees in exactly one window, i = len(sequence) - p + q.
    """
    size = len(new)
    if size < 2:
        return 0
    where: dict[int, list[int]] = {}
    for q, token in enumerate(new):
        where.setdefault(token, []).append(q)
    tail = sequence[-size:] if len(sequence) > size else sequence
    counts = [0] * (size + 1)
    m = len(tail)
    for p, token in enumerate(tail):
        positions = where.get(token)
        if positions is None:
            continue
        base = m - p
        for q in positions:
            i = base + q
            if i > size:
                break
            counts[i] += 1
    best = 0.0
    index = 0
    for i in range(2, size + 1):
        matches = counts[i]
        if matches > 1:
            matching = matches / i + i / 10000.0
            if matching > best:
                best = matching
                index = i
    return index


def whisper_overlap(
    left: Sequence[int],
    right: Sequence[int],
    left_times: Sequence[Any] | None = None,
    right_times: Sequence[Any] | None = None,
) -> tuple[int, int, bool]:
    """Where two overlapping token lists are cut: transformers' Whisper
    ``_find_longest_common_sequence`` for one pair. Returns ``(left_mid, right_mid, matched)``:
    the join is ``left[:left_mid] + right[right_mid:]``; `matched` is False when no alignment had
    more than one agreeing id (then the join is the whole of both).

    Every alignment of `right` against `left` is scored ``matches / i + i / 10000`` (i: the
    alignment's position, 1 to len(left) + len(right) - 1); with times (one comparable value per
    id, transformers' word timestamps), an agreeing pair counts only if the left id's time is not
    after the right one's. The best alignment is cut in the middle of its overlap, the left list
    trusted for the first half, the right for the second. Each pair of equal ids (a, b) agrees in
    exactly one alignment, i = len(left) - a + b, so only those pairs are visited."""
    n_left = len(left)
    n_right = len(right)
    where: dict[int, list[int]] = {}
    for b, token in enumerate(right):
        where.setdefault(token, []).append(b)
    counts: dict[int, int] = {}
    timed = left_times is not None and right_times is not None
    for a, token in enumerate(left):
        positions = where.get(token)
        if positions is None:
            continue
        base = n_left - a
        for b in positions:
            if timed and not left_times[a] <= right_times[b]:  # type: ignore[index]
                continue
            i = base + b
            counts[i] = counts.get(i, 0) + 1
    best = 0.0
    best_i = 0
    for i, matches in counts.items():
        if matches > 1:
            matching = matches / i + i / 10000.0
            # (the first best in increasing i, as transformers scans them)
            if matching > best or (matching == best and i < best_i):
                best = matching
                best_i = i
    if not best_i:
        return n_left, 0, False
    left_start = max(0, n_left - best_i)
    left_stop = min(n_left, n_left + n_right - best_i)
    right_start = max(0, best_i - n_left)
    right_stop = min(n_right, best_i)
    return (left_stop + left_start) // 2, (right_stop + right_start) // 2, True


# -- a chunk as given ------------------------------------------------------------------------------


class _Tokens:
    """Token ids with what travels with them: absolute (start, end) seconds or None, and
    log-probabilities or None. Sliced and joined together, so they never drift apart."""

    __slots__ = ("ids", "times", "logprobs")

    def __init__(
        self, ids: list[int], times: list[tuple[float, float]] | None = None, logprobs: list[float] | None = None
    ) -> None:
        self.ids, self.times, self.logprobs = ids, times, logprobs

    def cut(self, a: int, b: int | None = None) -> _Tokens:
        return _Tokens(
            self.ids[a:b],
            None if self.times is None else self.times[a:b],
            None if self.logprobs is None else self.logprobs[a:b],
        )

    def spliced(self, a: int, other: _Tokens, b: int) -> _Tokens:
        """These tokens up to `a`, then `other`'s from `b` (other carries the same kinds of values)."""
        return _Tokens(
            self.ids[:a] + other.ids[b:],
            None if self.times is None or other.times is None else self.times[:a] + other.times[b:],
            None if self.logprobs is None or other.logprobs is None else self.logprobs[:a] + other.logprobs[b:],
        )

    def keep(self, flags: Sequence[bool]) -> _Tokens:
        return _Tokens(
            [t for t, f in zip(self.ids, flags) if f],
            None if self.times is None else [t for t, f in zip(self.times, flags) if f],
            None if self.logprobs is None else [t for t, f in zip(self.logprobs, flags) if f],
        )


@dataclass(slots=True)
class _Chunk:
    """A chunk as add() checked it: its layout in seconds (and as given), its ids and what the
    method reads besides them."""

    start: float  # seconds
    length: float
    left: float
    right: float
    raw: tuple[Any, Any, Any, Any]  # start, length, left, right in the caller's unit
    ids: list[int]
    times: list[tuple[float, float]] | None = None  # seq2seq: relative seconds per id
    token_timestamps: list[float] | None = None  # whisper: transformers' token_timestamps
    frames: tuple[list[int], list[int]] | None = None  # ctc: collapse_ctc's spans
    frame_count: int | None = None
    logprobs: list[float] | None = None
    shared: bool = False  # it shares audio with the chunk before it (their strides meet)

    @property
    def end(self) -> float:
        return self.start + self.length


# -- the text: runs of streams and the joins between them -------------------------------------------


class _Joiner:
    """The transcript's text as it is given out. Runs of tokens render through their own streams;
    between two runs the join is either plain (Whisper's segments, as transformers joins them) or a
    junction: where two chunks shared nothing, the whitespace is decided by the script (no space
    between two characters of scripts written without spaces; else the tokens' own whitespace,
    one side's only; else one space). Trailing whitespace is held until what follows it is known,
    so nothing given out is ever taken back."""

    def __init__(self) -> None:
        self.given: list[str] = []
        self.delta: list[str] = []  # what the current add/finish gave out
        self.size = 0  # characters given out
        self.held = ""  # trailing whitespace not given out yet
        self.last = ""  # the last non-whitespace character given out
        self.junction = False  # a junction waits for the next non-whitespace character
        self.junction_space = ""  # whitespace the tokens wrote at the pending junction
        # whether junction_space is the leading whitespace of the stretch being put now (it grows
        # while that stretch's puts are whitespace: a stretch may come in more than one put)
        self.junction_lead = False

    def mark_junction(self) -> None:
        if self.size or self.held:
            if not self.junction:
                self.junction_space = self.held
            self.junction = True
            self.junction_lead = False
            self.held = ""

    def put(self, text: str) -> str:
        if not text:
            return ""
        out = ""
        if self.junction:
            body = text.lstrip()
            lead = text[: len(text) - len(body)]
            if self.junction_lead:  # (the stretch's earlier puts were whitespace: this continues it)
                lead = self.junction_space + lead
            elif self.junction_space:  # (the earlier side's, or an earlier stretch's: it stands)
                lead = ""
            if not body:
                if lead:
                    self.junction_space = lead
                    self.junction_lead = True
                return ""
            self.junction = self.junction_lead = False
            if self.last and joins_without_space(self.last, body[0]):
                out = ""
            elif self.junction_space and not lead:
                out = self.junction_space
            elif lead:
                out = lead
            else:
                out = " " if self.last else ""
            self.junction_space = ""
            text = body
        body = text.rstrip()
        if body:
            out += self.held + body
            self.held = text[len(body) :]
            self.last = body[-1]
        else:
            self.held += text
        if out:  # (_give, inline: a put per segment)
            self.given.append(out)
            self.delta.append(out)
            self.size += len(out)
        return out

    def _give(self, out: str) -> None:
        if out:
            self.given.append(out)
            self.delta.append(out)
            self.size += len(out)

    def take_delta(self) -> str:
        out = "".join(self.delta)
        self.delta = []
        return out

    def finish(self) -> str:
        out = self.junction_space if self.junction else self.held
        self.junction = self.junction_lead = False
        self.held = self.junction_space = ""
        self._give(out)
        return out

    def text(self) -> str:
        if len(self.given) > 1:
            self.given = ["".join(self.given)]
        return self.given[0] if self.given else ""


# -- the transcript ------------------------------------------------------------------------------


class StitchedTranscript:
    """One transcript from many chunks' generations (docs/stitching.md).

    Give it each chunk's ids in order, with where the chunk really starts, how long it is and
    its strides (the audio it shares with its neighbours); it removes the overlap on token ids
    as transformers does, joins the rest as the script needs, and times everything from the
    chunk's real start. `add` returns the text that chunk settled; `finish` the rest.

    Args:
        tokenizer: any oasr_tok tokenizer (duck-typed: check_ids, special_ids, new_stream,
            token_pieces, word_timings, id_to_piece).
        method: "seq2seq" (transformers' ASR pipeline: any generating model), "whisper"
            (transformers' Whisper ``_decode_asr``; the default for a tokenizer with Whisper's
            timestamp ids) or "ctc" (the pipeline's frame trimming; chunks give frame spans).
        envelope: an envelope format (oasr_tok.outputs.envelopes: "qwen3_asr", "sensevoice",
            ...) read from each chunk's output: its language kept, its header never text.
        sample_rate: when given, chunk starts, lengths and strides are sample counts (ints);
            otherwise they are seconds.
        frame_length: CTC only: one frame's length, in the unit of the starts (320 samples, or
            0.02 s, for wav2vec2).
        timestamps: Whisper only: whether the chunks were generated with timestamps (as
            transformers' return_timestamps: a language change closes the text only without
            them); by default, whether a timestamp id has been seen.
        time_precision: Whisper only: seconds per timestamp step (0.02).

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> t = oasr_tok.StitchedTranscript(tok)
        >>> t.add(tok.encode("the cafe opens at nine"), start=0.0, length=3.0, stride=(0.0, 0.5))
        'the cafe opens at nine'
        >>> t.add(tok.encode("opens at nine tomorrow"), start=2.0, length=3.0, stride=(0.5, 0.0))
        ' tomorrow'
        >>> t.finish(), t.text, t.duration
        ('', 'the cafe opens at nine tomorrow', 5.0)
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        method: str | None = None,
        envelope: str | None = None,
        sample_rate: int | None = None,
        frame_length: float | None = None,
        timestamps: bool | None = None,
        time_precision: float = WHISPER_TIME_PRECISION,
    ) -> None:
        self._tok = tokenizer
        if method is None:
            method = "whisper" if getattr(tokenizer, "timestamp_begin", None) is not None else "seq2seq"
        if method not in METHODS:
            raise ChunkError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if method == "whisper" and getattr(tokenizer, "timestamp_begin", None) is None:
            raise ChunkError("method 'whisper' needs a Whisper tokenizer (one with timestamp ids: timestamp_begin)")
        if envelope is not None:
            new_parser(envelope)  # UnknownEnvelopeError for an unknown name, now
            if method == "whisper" and envelope != "whisper":
                raise ChunkError("method 'whisper' reads Whisper's own language tokens: leave envelope unset")
        if sample_rate is not None:
            if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate <= 0:
                raise ChunkError(f"sample_rate must be a positive int (samples per second), got {sample_rate!r}")
        if method == "ctc":
            if frame_length is None:
                raise ChunkError("method 'ctc' needs frame_length: one frame in samples (320) or seconds (0.02)")
            frame_length = _positive(frame_length, "frame_length", integer=sample_rate is not None)
        elif frame_length is not None:
            raise ChunkError("frame_length is for method 'ctc' only")
        if not (isinstance(time_precision, (int, float)) and math.isfinite(time_precision) and time_precision > 0):
            raise ChunkError(f"time_precision must be a positive number of seconds, got {time_precision!r}")
        if timestamps not in (None, True, False):
            raise ChunkError(f"timestamps must be None, True or False, got {timestamps!r}")
        self.method = method
        self.envelope = None if method == "whisper" else envelope
        self.sample_rate = sample_rate
        self.frame_length = frame_length
        self._special = frozenset(tokenizer.special_ids)
        self._joiner = _Joiner()
        self._ids: list[int] = []
        self._times: list[tuple[float, float]] | None = None
        self._logprobs: list[float] | None = None
        self._timed: bool | None = None  # fixed by the first chunk: every chunk gives times, or none
        self._scored: bool | None = None
        self._runs: list[int] = []  # the first id of each run
        self._run_open = False
        self._stream: Any = None  # the open run's stream, made when it first renders
        self._pending: list[int] = []  # the open run's ids not rendered yet
        self._fresh = False  # the next settled ids start a run after a junction
        self._last: _Chunk | None = None
        self._count = 0
        self._languages: list[str | None] = []
        # Whisper's segments as (start, end, text, first_token, last_token): made Segments when read
        self._segments: list[tuple[float, float, str, int, int]] | None = [] if method == "whisper" else None
        self._finished = False
        self._preview: StitchedTranscript | None = None
        if method == "whisper":
            self._whisper = _WhisperState(tokenizer, timestamps, float(time_precision))
        elif method == "ctc":
            self._ctc_last: tuple[int, float] | None = None  # (id, absolute end of its kept frames)
            self._ctc_blocks: list[list[Any]] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> StitchedTranscript:
        """An independent copy (its streams forked) that shares the tokenizer."""
        memo[id(self._tok)] = self._tok
        other = object.__new__(type(self))
        memo[id(self)] = other
        for name, value in self.__dict__.items():
            setattr(other, name, None if name == "_preview" else copy.deepcopy(value, memo))
        return other

    # -- what it has made ----------------------------------------------------------------------

    @property
    def settled(self) -> str:
        """The text given out so far (the concatenation of every delta `add` returned)."""
        return self._joiner.text()

    @property
    def text(self) -> str:
        """The transcript: after `finish`, the concatenation of every delta; before it, what
        `finish` would give now."""
        return self._final().settled

    @property
    def finished(self) -> bool:
        """Whether `finish` was called (the transcript takes no more chunks)."""
        return self._finished

    @property
    def language(self) -> str | None:
        """The one language: the one most chunks state (the earliest on a tie), None if none
        does (`languages` has each chunk's)."""
        counts: dict[str, int] = {}
        for name in self._languages:
            if name:
                counts[name] = counts.get(name, 0) + 1
        if not counts:
            return None
        most = max(counts.values())
        return next(name for name in self._languages if name and counts[name] == most)

    @property
    def languages(self) -> list[str | None]:
        """Each chunk's language as its envelope (or Whisper's language token) stated it."""
        return list(self._languages)

    @property
    def duration(self) -> float:
        """Seconds from 0 to the end of the last chunk (0.0 before any)."""
        return self._last.end if self._last is not None else 0.0

    @property
    def chunks(self) -> int:
        """How many chunks were added."""
        return self._count

    @property
    def ids(self) -> list[int]:
        """The transcript's ids: every chunk's, its overlap and envelope removed (no special ids
        for seq2seq, no timestamp or control ids for Whisper, the collapsed tokens for CTC)."""
        return list(self._final()._ids)

    @property
    def logprobs(self) -> list[float] | None:
        """One log-probability per id of `ids`, where the chunks gave them."""
        final = self._final()
        return None if final._logprobs is None else list(final._logprobs)

    @property
    def token_times(self) -> list[tuple[float, float]] | None:
        """(start, end) in seconds from the start of the audio, per id of `ids`, where known."""
        final = self._final()
        final._ctc_seconds()
        return None if final._times is None else list(final._times)

    @property
    def words(self) -> Any:
        """The transcript's timed words (the tokenizer's `Words`, times in seconds from the start
        of the audio, first_token/last_token indices into `ids`), or None without token times."""
        final = self._final()
        return final._make_words()

    @property
    def segments(self) -> list[Segment] | None:
        """Timed segments, times in seconds from the start of the audio: Whisper's, cut at its
        timestamp ids as transformers cuts them; otherwise the words grouped into sentences
        (segments.segment_words); None without times. first_token/last_token index `ids`."""
        final = self._final()
        if final.method == "whisper":
            if final._segments is None or not final._whisper.with_timestamps():
                return None
            return [Segment(*row) for row in final._segments]
        words = final._make_words()
        if words is None:
            return None
        out = []
        for seg in segment_words(words):
            first, last = words[seg.first_token], words[seg.last_token]
            out.append(Segment(seg.start, seg.end, seg.text, first.first_token, last.last_token))
        return out

    # -- adding chunks ---------------------------------------------------------------------------

    def add(
        self,
        ids: Any,
        *,
        start: float,
        length: float,
        stride: tuple[float, float] = (0, 0),
        times: Any = None,
        token_timestamps: Any = None,
        frames: Any = None,
        frame_count: int | None = None,
        logprobs: Any = None,
    ) -> str:
        """Add the next chunk's generation; return the text it settled (never taken back).

        Args:
            ids: the chunk's ids as the model generated them (a list, tuple or integer buffer);
                for CTC, the collapsed tokens (oasr_tok.collapse_ctc's ids).
            start: where the chunk really starts in the audio (samples with sample_rate, else
                seconds).
            length: the chunk's length (same unit).
            stride: (left, right): how much of the chunk's start and end is shared with the
                chunk before and after it (transformers' stride; same unit).
            times: seq2seq: each id's start, or (starts, ends), in seconds from the chunk's start.
            token_timestamps: whisper: one time per id in seconds from the chunk's start, as
                transformers' generate(return_token_timestamps=True) gives (id k runs from
                value k - 1 to value k): word timings.
            frames: ctc: (starts, ends) of each token's frames (oasr_tok.collapse_ctc's).
            frame_count: ctc: the chunk's frame count (by default its length / frame_length,
                rounded as transformers rounds it).
            logprobs: one log-probability per id (kept with the ids the overlap leaves).

        Raises:
            ChunkError: the chunk is out of order, overlaps the previous one by more than their
                strides, or its start/length/stride are not times; or the transcript is finished.
            InvalidIdError: an id outside the vocabulary (the message names the chunk).
            TimingError: times or logprobs of the wrong length, not numbers, or going back.
        A refused chunk leaves the transcript exactly as it was.
        """
        chunk = self._checked(ids, start, length, stride, times, token_timestamps, frames, frame_count, logprobs)
        self._preview = None
        self._last = chunk
        self._count += 1
        if self.method == "whisper":
            self._whisper.feed(self, chunk)
        elif self.method == "ctc":
            self._add_ctc(chunk)
        else:
            self._add_seq2seq(chunk)
        self._render()
        return self._joiner.take_delta()

    def finish(self) -> str:
        """Close the transcript: settle what the last chunk left pending; return that text."""
        if self._finished:
            return ""
        self._preview = None
        if self.method == "whisper":
            self._whisper.finish(self)
        self._end_run()
        self._joiner.finish()
        self._finished = True
        return self._joiner.take_delta()

    def _ctc_seconds(self) -> None:
        """The CTC tokens' frame spans as seconds from the start of the audio (made when first
        asked for, once finished: a transcript whose times nobody reads never makes them)."""
        if self.method != "ctc" or self._times is not None:
            return
        frame, rate = self.frame_length, self.sample_rate
        assert frame is not None
        times: list[tuple[float, float]] = []
        for origin, first, last, end in self._ctc_blocks:
            if rate is not None:  # samples: whole numbers until one division
                times += [((origin + s * frame) / rate, (origin + e * frame) / rate) for s, e in zip(first, last)]
            else:
                times += [(origin + s * frame, origin + e * frame) for s, e in zip(first, last)]
            if end is not None:
                times[-1] = (times[-1][0], end / rate if rate is not None else end)
        self._times = times

    def _final(self) -> StitchedTranscript:
        """Itself once finished; else a finished copy (kept until the next add)."""
        if self._finished:
            return self
        if self._preview is None:
            preview = copy.deepcopy(self)
            preview.finish()
            self._preview = preview
        return self._preview

    # -- checks (all before anything moves) ----------------------------------------------------

    def _checked(
        self,
        ids: Any,
        start: Any,
        length: Any,
        stride: Any,
        times: Any,
        token_timestamps: Any,
        frames: Any,
        frame_count: Any,
        logprobs: Any,
    ) -> _Chunk:
        k = self._count
        where = f"chunk {k}"
        if self._finished:
            raise ChunkError(f"{where}: the transcript was finished; start a new StitchedTranscript")
        if type(ids) is not list and hasattr(ids, "feed") and hasattr(ids, "text"):
            raise NonIntegerIdError(
                f"{where}: a Stream keeps no ids (only its text): give the ids you fed it, as a list or array"
            )
        try:
            checked_ids = self._tok.check_ids(ids)
        except InvalidIdError as error:
            raise type(error)(f"{where}: {error}") from None
        raw = self._layout(where, start, length, stride)
        rate = self.sample_rate
        if rate is None:
            start_s, length_s, left_s, right_s = raw  # (floats already: _unit)
        else:
            start_s, length_s, left_s, right_s = raw[0] / rate, raw[1] / rate, raw[2] / rate, raw[3] / rate
        if self._last is not None:
            before = self._last
            if raw[0] < before.raw[0]:
                raise ChunkError(
                    f"{where} starts at {raw[0]!r}, before chunk {k - 1} ({before.raw[0]!r}): chunks must come in order"
                )
            overlap = before.raw[0] + before.raw[1] - raw[0]
            allowed = before.raw[3] + raw[2]
            slack = 0 if self.sample_rate is not None else 1e-9 * max(1.0, abs(before.raw[0] + before.raw[1]))
            if overlap > allowed + slack:
                raise ChunkError(
                    f"{where} overlaps chunk {k - 1} by {overlap!r}, more than their strides allow "
                    f"({before.raw[3]!r} right of chunk {k - 1} + {raw[2]!r} left of chunk {k})"
                )
        n = len(checked_ids)
        chunk = _Chunk(start_s, length_s, left_s, right_s, raw, checked_ids)
        chunk.shared = self._last is not None and self._last.raw[3] + raw[2] > 0
        if logprobs is not None:
            chunk.logprobs = _numbers(logprobs, n, f"{where}: logprobs")
            for j, value in enumerate(chunk.logprobs):
                if value > 0.0:
                    raise TimingError(f"{where}: logprobs[{j}] = {value!r}: a log-probability is <= 0")
        if self._scored is not None and self._scored != (logprobs is not None):
            raise TimingError(
                f"{where}: {'no ' if logprobs is None else ''}logprobs, but the chunks before "
                f"{'had them' if self._scored else 'did not'}: give them for every chunk or none"
            )
        if times is not None or token_timestamps is not None or frames is not None or frame_count is not None:
            given = {"times": times, "token_timestamps": token_timestamps, "frames": frames, "frame_count": frame_count}
            for name, value in given.items():
                if value is not None and name not in _READS[self.method]:
                    raise TimingError(f"{where}: {name} is not read by method {self.method!r}")
        if self.method == "seq2seq" and times is not None:
            chunk.times = self._relative_times(times, n, where)
        elif self.method == "whisper" and token_timestamps is not None:
            values = _numbers(token_timestamps, n, f"{where}: token_timestamps")
            _ordered(values, f"{where}: token_timestamps")
            chunk.token_timestamps = values
        elif self.method == "ctc":
            if frames is None:
                raise TimingError(f"{where}: method 'ctc' needs frames=(starts, ends): collapse_ctc's frame spans")
            chunk.frames = self._frames(frames, n, where)
            chunk.frame_count = self._frame_count(chunk, frame_count, where)
        timed = self.method == "ctc" or chunk.times is not None or chunk.token_timestamps is not None
        if self._timed is not None and self._timed != timed:
            raise TimingError(
                f"{where}: {'no ' if not timed else ''}times, but the chunks before "
                f"{'had them' if self._timed else 'did not'}: give them for every chunk or none"
            )
        self._timed, self._scored = timed, logprobs is not None
        return chunk

    def _layout(self, where: str, start: Any, length: Any, stride: Any) -> tuple[Any, Any, Any, Any]:
        try:
            left, right = stride
        except (TypeError, ValueError):
            raise ChunkError(f"{where}: stride must be a pair (left, right), got {short_repr(stride)}") from None
        if not (
            self.sample_rate is not None
            and type(start) is int
            and type(length) is int
            and type(left) is int
            and type(right) is int
            and start >= 0
            and length >= 0
            and left >= 0
            and right >= 0
        ):  # (sample counts pass at once; anything else is read and checked one by one)
            unit = self._unit
            start, length = unit(start, where, "start"), unit(length, where, "length")
            left, right = unit(left, where, "stride left"), unit(right, where, "stride right")
        if length <= 0:
            raise ChunkError(f"{where}: length must be positive, got {length!r}")
        if left + right > length:
            raise ChunkError(f"{where}: its strides ({left!r} + {right!r}) are longer than the chunk ({length!r})")
        return start, length, left, right

    def _unit(self, value: Any, chunk: str, name: str) -> Any:
        """`value` as a sample count (with sample_rate) or seconds; ChunkError naming it if not."""
        # the usual values (an int count, float seconds) pass without building a message
        if self.sample_rate is not None:
            if type(value) is int and value >= 0:
                return value
        elif type(value) is float and 0.0 <= value < math.inf:
            return value
        where = f"{chunk}: {name}"
        if self.sample_rate is not None:
            if isinstance(value, bool):
                raise ChunkError(f"{where} = {value!r} is not a sample count")
            try:
                count = operator.index(value)
            except TypeError:
                raise ChunkError(f"{where} = {short_repr(value)} is not a sample count (an int)") from None
            if count < 0:
                raise ChunkError(f"{where} = {count!r}: must not be negative")
            return count
        if isinstance(value, (bool, str, bytes)) or value is None:
            raise ChunkError(f"{where} = {short_repr(value)} is not a number of seconds")
        try:
            seconds = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ChunkError(f"{where} = {short_repr(value)} is not a number of seconds") from None
        if not math.isfinite(seconds) or seconds < 0:
            raise ChunkError(f"{where} = {value!r}: must be finite and not negative")
        return seconds

    def _relative_times(self, times: Any, n: int, where: str) -> list[tuple[float, float]]:
        pair = isinstance(times, tuple) and len(times) == 2 and all(hasattr(c, "__len__") for c in times)
        starts, ends = times if pair else (times, None)
        starts = _numbers(starts, n, f"{where}: times (starts)")
        _ordered(starts, f"{where}: times (starts)")
        if ends is None:
            ends = [*starts[1:], starts[-1]] if starts else []
        else:
            ends = _numbers(ends, n, f"{where}: times (ends)")
            for j, (s, e) in enumerate(zip(starts, ends)):
                if e < s:
                    raise TimingError(f"{where}: times: id {j} ends ({e!r}) before it starts ({s!r})")
        return list(zip(starts, ends))

    def _frames(self, frames: Any, n: int, where: str) -> tuple[list[int], list[int]]:
        try:
            starts, ends = frames
        except (TypeError, ValueError):
            raise TimingError(f"{where}: frames must be (starts, ends), got {short_repr(frames)}") from None
        out = []
        for name, values in (("starts", starts), ("ends", ends)):
            if isinstance(values, (str, bytes)):
                raise TimingError(f"{where}: frames {name} must be frame numbers (ints)")
            try:
                column = list(map(operator.index, values))
            except TypeError:
                raise TimingError(f"{where}: frames {name} must be frame numbers (ints)") from None
            if len(column) != n:
                raise TimingError(f"{where}: frames {name} has {len(column)} values for {n} ids")
            out.append(column)
        starts, ends = out
        # each token's frames are not empty and come after the previous token's (so both columns
        # rise, which _add_ctc's bisections rely on)
        lt, le = operator.lt, operator.le
        if (starts and starts[0] < 0) or not (all(map(lt, starts, ends)) and all(map(le, ends, starts[1:]))):
            j = next(j for j in range(n) if starts[j] < (ends[j - 1] if j else 0) or ends[j] <= starts[j])
            raise TimingError(
                f"{where}: frames of id {j} ({starts[j]}, {ends[j]}) go back or are empty: "
                "each token's frames come after the previous token's"
            )
        return starts, ends

    def _frame_count(self, chunk: _Chunk, frame_count: Any, where: str) -> int:
        if frame_count is not None:
            try:
                count = operator.index(frame_count)
            except TypeError:
                raise ChunkError(f"{where}: frame_count must be an int, got {short_repr(frame_count)}") from None
        else:
            # transformers' rescale_stride: token_n = round(input_n * ratio), ratio = 1 / align_to
            count = int(round(chunk.raw[1] * (1 / self.frame_length)))  # type: ignore[operator]
        if count < 0:
            raise ChunkError(f"{where}: frame_count must not be negative, got {count}")
        # (frames past the count are a model's padding frames: trimmed, as transformers trims them)
        return count

    # -- runs ------------------------------------------------------------------------------------

    def _start_run(self, header: Sequence[int] = (), junction: bool = False) -> None:
        """End the current run and start another; its stream reads the chunk's envelope header
        first when there is an envelope (so a header split over tokens is taken apart whole)."""
        self._end_run()
        if junction:
            self._joiner.mark_junction()
        self._fresh = False
        self._run_open = True
        self._pending = list(header)
        self._runs.append(len(self._ids))

    def _render(self) -> None:
        """Feed the run's waiting ids to its stream (made now if it has none yet)."""
        if self._pending:
            if self._stream is None:
                self._stream = self._tok.new_stream(envelope=self.envelope) if self.envelope else self._tok.new_stream()
            pending, self._pending = self._pending, []
            self._put(self._stream.feed(pending))

    def _end_run(self) -> None:
        if not self._run_open:
            return
        if self._stream is None and not self.envelope:
            # a run that ends in the call that began it: its decode is what a stream would give
            if self._pending:
                self._put(self._tok.decode(self._pending))
        else:
            self._render()
            if self._stream is not None:
                self._put(self._stream.feed([], final=True))
        self._stream = None
        self._pending = []
        self._run_open = False

    def _settle(self, tokens: _Tokens, header: Sequence[int] = ()) -> None:
        """Append settled ids to the transcript; they render when the call ends (_render) or
        when their run does."""
        if not tokens.ids:
            return
        if not self._run_open or self._fresh:
            self._start_run(header, junction=self._fresh)
        self._keep(tokens)
        self._pending += tokens.ids

    def _keep(self, tokens: _Tokens) -> None:
        """Append ids to the transcript's, with their times and log-probabilities."""
        if tokens.times is not None:
            if self._times is None:
                self._times = []
            self._times.extend(tokens.times)
        if tokens.logprobs is not None:
            if self._logprobs is None:
                self._logprobs = []
            self._logprobs.extend(tokens.logprobs)
        self._ids.extend(tokens.ids)

    def _put(self, text: str) -> None:
        out = self._joiner.put(text)
        if out and self.method == "whisper":
            self._whisper.text(out)

    # -- envelopes -----------------------------------------------------------------------------

    def _header(self, ids: list[int]) -> tuple[int, str | None]:
        """(h, language): ids[:h] are the chunk's envelope header, ids[h:] its words (h is the
        first id that carried a character of the words: the bytes of the first character and
        special ids just before it count as the words'); the language the header states."""
        if self.envelope is None:
            return 0, None
        stream = self._tok.new_stream(envelope=self.envelope)
        first = len(ids)
        for k, token in enumerate(ids):
            if stream.feed([token]):
                first = k
                break
        else:
            if stream.feed([], final=True):
                if (stream.envelope or {}).get("problem"):
                    return 0, None  # not a header: the whole output is the words
                first = len(ids) - 1
        language = (stream.envelope or {}).get("language")
        if first == len(ids):
            return first, language
        pieces = self._tok.token_pieces(ids[: first + 1])
        h = first
        while h > 0 and pieces[h - 1] == "":
            h -= 1
        return h, language

    # -- seq2seq: transformers' pipeline ---------------------------------------------------------

    def _add_seq2seq(self, chunk: _Chunk) -> None:
        h, language = self._header(chunk.ids)
        self._languages.append(language)
        times = None
        if chunk.times is not None:
            times = [(chunk.start + s, chunk.start + e) for s, e in chunk.times]
        tokens = _Tokens(chunk.ids, times, chunk.logprobs).cut(h)
        special = self._special
        if any(t in special for t in tokens.ids):
            tokens = tokens.keep([t not in special for t in tokens.ids])
        # chunks whose strides do not meet share no audio: nothing of one is in the other
        index = pipeline_overlap(self._ids, tokens.ids) if self._ids and chunk.shared else 0
        if index == 0 and self._ids and tokens.ids:
            self._fresh = True
        self._settle(tokens.cut(index), chunk.ids[:h] if index == 0 else ())

    # -- ctc: the pipeline's frame trimming ------------------------------------------------------

    def _add_ctc(self, chunk: _Chunk) -> None:
        h, language = self._header(chunk.ids)
        self._languages.append(language)
        assert chunk.frames is not None and chunk.frame_count is not None
        total = chunk.frame_count
        length = chunk.raw[1]
        # transformers' rescale_stride: the strides in frames, rounded as it rounds them
        left = int(round(chunk.raw[2] / length * total)) if length else 0
        right = int(round(chunk.raw[3] / length * total)) if length else 0
        lo, hi = left, total - right
        frame = self.frame_length
        assert frame is not None
        starts, ends = chunk.frames
        # the tokens with frames in [lo, hi): both columns rise, so two bisections find them, and
        # only the first and the last can have frames outside
        a = max(bisect_right(ends, lo, h), h)
        b = max(bisect_left(starts, hi, a), a)
        kept_ids = chunk.ids[a:b]
        first, last = starts[a:b], ends[a:b]
        if kept_ids:
            first[0], last[-1] = max(first[0], lo), min(last[-1], hi)
        origin = chunk.raw[0]
        logprobs = None if chunk.logprobs is None else chunk.logprobs[a:b]
        if kept_ids and self._ctc_last is not None and first[0] == lo:
            # the frames join the previous chunk's: a token held across the join is one token
            token, end = self._ctc_last
            if kept_ids[0] == token and abs(origin + lo * frame - end) < frame:
                previous = self._ctc_blocks[-1]
                previous[3] = max(previous[0] + previous[2][-1] * frame, origin + last[0] * frame)
                kept_ids, first, last = kept_ids[1:], first[1:], last[1:]
                logprobs = None if logprobs is None else logprobs[1:]
        if chunk.ids[a:b]:
            # a token whose kept frames run to the end of the kept part may go on in the next chunk
            self._ctc_last = (chunk.ids[b - 1], origin + hi * frame) if ends[b - 1] >= hi else None
        elif total - right > left:
            self._ctc_last = None  # frames were kept and all were blank: nothing can merge
        if kept_ids:
            # times stay frames until they are asked for (_ctc_seconds): [origin, first, last, end of the last]
            self._ctc_blocks.append([origin, first, last, None])
        tokens = _Tokens(kept_ids, None, logprobs)
        self._settle(tokens, chunk.ids[:h])

    # -- words -------------------------------------------------------------------------------------

    def _make_words(self) -> Any:
        if not self._timed:
            return None
        self._ctc_seconds()
        if self._times is None:
            return self._tok.word_timings([], [])
        bounds = [*self._runs, len(self._ids)]
        out: list[Any] = []
        words_type = word_type = None
        floor = 0.0
        for a, b in zip(bounds, bounds[1:]):
            if a == b:
                continue
            # Two chunks time the audio they share each their own way: a start before the one of
            # the id kept before it is raised to it, so words stay in order.
            starts, ends = [], []
            for start, end in self._times[a:b]:
                floor = max(floor, start)
                starts.append(floor)
                ends.append(max(end, floor))
            scores = None if self._logprobs is None else self._logprobs[a:b]
            words = self._tok.word_timings(self._ids[a:b], starts, ends, scores=scores)
            words_type = type(words)
            for w in words:
                word_type = type(w)
                out.append(
                    word_type(
                        w.text, w.start, w.end, w.first_token + a, w.last_token + a, getattr(w, "confidence", None)
                    )
                )
        if words_type is None:
            return self._tok.word_timings([], [])
        return words_type(out)


# -- Whisper: transformers' _decode_asr, one chunk at a time ----------------------------------------


class _WhisperState:
    """transformers' Whisper ``_decode_asr`` state machine, fed one chunk at a time. Each token
    is a language code (a language change closes the text when there are no timestamps), another
    control id (ignored), a timestamp (a pair closes a segment; timestamps inside a stride are
    skipped) or text. The text tokens of a segment may come from several chunks: they are joined
    by `whisper_overlap`, left to right, so what is left of each join is settled at once."""

    def __init__(self, tok: Any, timestamps: bool | None, time_precision: float) -> None:
        self.tb = tok.timestamp_begin
        self.special = frozenset(filter(self.tb.__gt__, tok.special_ids))
        self.low = min(self.special, default=self.tb)  # every id below it is text
        self.languages: dict[int, str | None] = {}  # control id -> the language it names
        self.sot = _id_of(tok, "sot", "<|startoftranscript|>")
        self.sot_prev = _id_of(tok, "sot_prev", "<|startofprev|>")
        self.tp = time_precision
        self.timestamps = timestamps
        self.seen_timestamp = False
        self.piece = tok.id_to_piece
        self.last_language: str | None = None
        self.segment_start: float | None = None
        self.skip = False
        self.left: _Tokens | None = None  # the pending tail of the segment's joins
        self.entries = 0  # sequences waiting in the segment (transformers' previous_tokens)
        self.segment_first = 0  # first id of the open segment
        self.parts: list[str] = []  # its text, as given out
        self.carry = 0  # whitespace the segment before it held, given out with this one's text
        # segments closed, whose settling waits for settle_wholes: (ids, times, logprobs, start, end)
        self.wholes: list[tuple[list[int], Any, Any, float | None, float | None]] = []
        self.words = False  # word timings (transformers' return_timestamps="word")
        self.shared = False  # the chunk being read shares audio with the one before it

    def with_timestamps(self) -> bool:
        """transformers' return_timestamps: the option, else whether the chunks carry times."""
        if self.timestamps is None:
            return self.seen_timestamp or self.words
        return bool(self.timestamps)

    def text(self, out: str) -> None:
        if self.carry:
            cut = min(self.carry, len(out))
            out = out[cut:]
            self.carry -= cut
        if out:
            self.parts.append(out)

    # the segment's sequences, joined as they come

    def push(self, owner: StitchedTranscript, tokens: _Tokens) -> None:
        self.entries += 1
        if self.left is None:
            self.left = tokens
            return
        self.settle_wholes(owner)
        self.settle_join(owner, tokens, *self.join(tokens))

    def join(self, tokens: _Tokens) -> tuple[int, int, bool]:
        """Where the segment's pending tail and the next sequence are cut (whisper_overlap)."""
        left = self.left
        assert left is not None
        if not self.shared:  # chunks whose strides do not meet share no audio
            return len(left.ids), 0, False
        if self.words:
            return whisper_overlap(left.ids, tokens.ids, left.times, tokens.times)
        return whisper_overlap(left.ids, tokens.ids)

    def settle_join(
        self, owner: StitchedTranscript, tokens: _Tokens, left_mid: int, right_mid: int, matched: bool
    ) -> None:
        """Settle the pending tail up to the cut; what follows the cut in `tokens` is pending now."""
        left = self.left
        assert left is not None
        owner._settle(left.cut(0, left_mid))
        if not matched and (left.ids or len(owner._ids) > self.segment_first) and tokens.ids:
            owner._fresh = True
        self.left = tokens.cut(right_mid)

    def end(self, owner: StitchedTranscript, tokens: _Tokens, start: float | None, end: float | None) -> None:
        """The segment's last sequence, then its close: from timestamp `start` to timestamp `end`
        (None: a language change)."""
        left = self.left
        whole: _Tokens | None = tokens
        if left is not None:
            left_mid, right_mid, matched = self.join(tokens)
            whole = left.spliced(left_mid, tokens, right_mid) if matched else None
        if whole is not None and self.plain(owner):
            self.left = None
            self.entries = 0
            self.wholes.append((whole.ids, whole.times, whole.logprobs, start, end))
        else:
            self.settle_wholes(owner)
            if left is None:
                self.left = tokens
            else:
                self.entries += 1
                self.settle_join(owner, tokens, left_mid, right_mid, matched)
            self.close(owner, start, end)
        self.segment_start = None

    @staticmethod
    def plain(owner: StitchedTranscript) -> bool:
        """Whether a segment settled now joins the text plainly: no run open, none starting
        after a junction, no junction waiting in the joiner (settle_wholes keeps it so)."""
        return not (owner._run_open or owner._fresh or owner._joiner.junction)

    def settle_wholes(self, owner: StitchedTranscript) -> None:
        """What push and close do for each segment end() put in `wholes`, in one step: their
        ids are all known and they are joined without a junction (no run open, none waiting;
        settling them opens none and leaves none), so each segment is one run whose text is its
        decode, and the joiner takes their texts plainly, as one put (the whitespace it holds
        back is the last segment's). Called before anything else settles and when a chunk ends."""
        wholes = self.wholes
        if not wholes:
            return
        self.wholes = []
        decode = owner._tok.decode
        ids, runs, segments = owner._ids, owner._runs, owner._segments
        assert segments is not None
        first = self.segment_first
        texts = []
        for segment_ids, times, logprobs, start, end in wholes:
            text = ""
            if segment_ids:
                text = decode(segment_ids)
                runs.append(len(ids))
                if times is None and logprobs is None:
                    ids += segment_ids
                else:
                    owner._keep(_Tokens(segment_ids, times, logprobs))
            texts.append(text)
            last = len(ids) - 1
            seg_start = start if start is not None else (segments[-1][1] if segments else 0.0)
            segments.append((seg_start, end if end is not None else owner.duration, text, first, last))
            first = last + 1
        self.segment_first = first
        joiner = owner._joiner
        joiner.put("".join(texts))
        self.carry = len(joiner.held)
        owner._fresh = False

    def close(self, owner: StitchedTranscript, start: float | None, end: float | None) -> None:
        """transformers resolves the segment's sequences and appends a chunk."""
        self.settle_wholes(owner)
        if self.left is not None:
            owner._settle(self.left)
        owner._end_run()
        self.left = None
        self.entries = 0
        held = owner._joiner.held
        text = "".join(self.parts) + held[self.carry :]
        self.parts = []
        self.carry = len(held)
        self.add_segment(owner, start, end, text)

    def add_segment(self, owner: StitchedTranscript, start: float | None, end: float | None, text: str) -> None:
        """The closed segment's row: from `start` (else where the one before it ended) to `end`
        (else the end of the audio)."""
        last = len(owner._ids) - 1
        segments = owner._segments
        if segments is not None:
            seg_start = start if start is not None else (segments[-1][1] if segments else 0.0)
            seg_end = end if end is not None else owner.duration
            segments.append((seg_start, seg_end, text, self.segment_first, last))
        self.segment_first = last + 1
        owner._fresh = False

    # one chunk

    def feed(self, owner: StitchedTranscript, chunk: _Chunk) -> None:
        tb, tp = self.tb, self.tp
        ids = chunk.ids
        stamps = chunk.token_timestamps
        self.words = words = stamps is not None
        self.shared = chunk.shared
        if ids and ids[0] == self.sot_prev:  # transformers' _strip_prompt
            cut = ids.index(self.sot) if self.sot in ids else len(ids)
            ids = ids[cut:]
            if stamps is not None:
                stamps = stamps[cut:]
        n = len(ids)
        offset = chunk.start
        # Text ids are the most; the loop visits the others (ids at or above the lowest control id)
        # and takes the text between them in slices.
        low = self.low
        controls = [i for i, token in enumerate(ids) if token >= low]
        last_timestamp = None
        first_timestamp: float = tb
        right_stride_start = chunk.length - chunk.right
        if chunk.left:
            first_timestamp = chunk.left / tp + tb
        if chunk.right:
            for i in reversed(controls):  # (every timestamp is a control id)
                token = ids[i]
                if token >= tb:
                    if last_timestamp is not None and (token - tb) * tp < right_stride_start:
                        break
                    last_timestamp = token
        cur_max = 0.0
        prev_segments_len = 0.0
        penultimate = 0.0
        current: list[int] = []
        current_times: list[tuple[float, float]] = []
        current_logprobs: list[float] = []
        logprobs = chunk.logprobs
        if logprobs is not None and len(logprobs) != n:
            logprobs = logprobs[len(logprobs) - n :]
        scored = logprobs is not None
        besides = words or scored  # (what travels with the ids)
        language_seen: str | None = None
        special = self.special
        # the state transformers keeps, in locals while the chunk is read (end() is given the start
        # and empties the segment: entries 0)
        skip, entries, segment_start, seen = self.skip, self.entries, self.segment_start, False
        # whether a segment that opens and closes in this chunk goes straight to `wholes` (what
        # end() does with it; only end() and push() change the answer)
        plain = self.left is None and self.plain(owner)
        wholes = self.wholes
        rounded: tuple[float, float] = (math.nan, math.nan)  # the last time and its rounding
        at = 0  # the chunk's ids before `at` are taken
        for i in controls:
            token = ids[i]
            if token < tb and token not in special:
                continue  # an id among the control ids that is text after all: the next slice takes it
            if i > at:
                if current:
                    current += ids[at:i]
                else:
                    current = ids[at:i]
                if besides:
                    if logprobs is not None:
                        current_logprobs += logprobs[at:i]
                    if stamps is not None:
                        current_times += [
                            (round((stamps[j - 1] if j else 0.0) + offset, 2), round(stamps[j] + offset, 2))
                            for j in range(at, i)
                        ]
            at = i + 1
            if token >= tb:
                seen = True
                timestamp = (token - tb) * tp
                if timestamp < cur_max:
                    last_was_single_ending = i >= 2 and not (ids[i - 1] >= tb and ids[i - 2] >= tb)
                    if last_was_single_ending:
                        prev_segments_len += tp * 1500
                    else:
                        cur_max = penultimate
                        prev_segments_len += penultimate
                penultimate = cur_max
                cur_max = timestamp
                if last_timestamp and token >= last_timestamp:
                    skip = True
                elif skip or (entries and token < first_timestamp):
                    skip = False
                else:
                    moment = timestamp + offset + prev_segments_len
                    if moment != rounded[0]:  # (a segment's end and the next one's start: one rounding)
                        rounded = moment, round(moment, 2)
                    time = rounded[1]
                    if segment_start is None:
                        segment_start = time
                    elif time != segment_start:
                        if plain and not entries:
                            wholes.append((current, current_times if words else None,
                                           current_logprobs if scored else None, segment_start, time))  # fmt: skip
                        else:
                            tokens = _Tokens(
                                current, current_times if words else None, current_logprobs if scored else None
                            )
                            self.end(owner, tokens, segment_start, time)
                            plain = self.plain(owner)
                        current, current_times, current_logprobs = [], [], []
                        entries, segment_start = 0, None
            else:
                language = self.languages.get(token, "")
                if language == "":
                    language = self.languages[token] = whisper_language(self.piece(token))
                if language is not None:
                    if language_seen is None:
                        language_seen = language
                    if seen:
                        self.seen_timestamp = True
                    if self.last_language and language != self.last_language and not self.with_timestamps():
                        tokens = _Tokens(
                            current, current_times if words else None, current_logprobs if scored else None
                        )
                        self.end(owner, tokens, segment_start, None)
                        plain = self.plain(owner)
                        current, current_times, current_logprobs = [], [], []
                        entries, segment_start = 0, None
                    self.last_language = language
        if at < n:
            current += ids[at:]
            if logprobs is not None:
                current_logprobs += logprobs[at:]
            if stamps is not None:
                current_times += [
                    (round((stamps[j - 1] if j else 0.0) + offset, 2), round(stamps[j] + offset, 2))
                    for j in range(at, n)
                ]
        if seen:
            self.seen_timestamp = True
        self.skip, self.entries, self.segment_start = skip, entries, segment_start
        owner._languages.append(language_seen)
        if current:
            self.push(owner, _Tokens(current, current_times if words else None, current_logprobs if scored else None))
        elif not self.entries:
            self.segment_start = None
        self.settle_wholes(owner)

    def finish(self, owner: StitchedTranscript) -> None:
        if self.entries:
            self.close(owner, self.segment_start, None)


# -- small checks ----------------------------------------------------------------------------------


def _id_of(tok: Any, name: str, piece: str) -> int | None:
    value = getattr(tok, name, None)
    if isinstance(value, int):
        return value
    try:
        return int(tok.piece_to_id(piece))
    except Exception:
        return None


def _positive(value: Any, name: str, *, integer: bool) -> Any:
    if integer:
        try:
            count = operator.index(value)
        except TypeError:
            raise ChunkError(f"{name} must be a positive int (samples), got {short_repr(value)}") from None
        if count <= 0:
            raise ChunkError(f"{name} must be a positive int (samples), got {count}")
        return count
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ChunkError(f"{name} must be a positive number of seconds, got {short_repr(value)}")
    return float(value)


def _numbers(values: Any, n: int, where: str) -> list[float]:
    if isinstance(values, (str, bytes)):
        raise TimingError(f"{where} must be numbers, one per id, got {type(values).__name__}")
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError, OverflowError):
        raise TimingError(f"{where} must be numbers, one per id, got {short_repr(values)}") from None
    if len(out) != n:
        raise TimingError(f"{where} has {len(out)} values for {n} ids: give one per id")
    for j, value in enumerate(out):
        if not math.isfinite(value):
            raise TimingError(f"{where}[{j}] = {value!r} is not finite")
    return out


def _ordered(values: list[float], where: str) -> None:
    previous = 0.0
    for j, value in enumerate(values):
        if value < previous:
            what = "is negative" if j == 0 else f"goes back (after {previous!r})"
            raise TimingError(f"{where}[{j}] = {value!r} {what}")
        previous = value
