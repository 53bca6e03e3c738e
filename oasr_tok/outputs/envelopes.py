"""What a speech model writes around its words, parsed: the envelope (rules: docs/envelopes.md).

Qwen3-ASR answers ``language English<asr_text>hello``; SenseVoice writes
``<|en|><|NEUTRAL|><|Speech|><|woitn|>hello``; Whisper and Canary put language, task and
timestamp tokens around the text; Voxtral's prompt ends ``lang:en[TRANSCRIBE]`` and its realtime
mode pads the output with marker tokens. An envelope parser takes a stream's ids as they come:
the special ids as tags (their spellings), the text of the others as the kind's own stream
renders it, and gives out the words only, filling its fields as soon as each is known.

One parser serves both faces: ``tok.decode_envelope(ids, name)`` runs a fresh parser over all
the ids at once; ``tok.new_stream(envelope=name)`` keeps one in the stream's record
(serving.py), so the deltas of a stream always concatenate to ``decode_envelope(ids).text``.
A parser never raises on what a model wrote: an envelope that does not parse gives its text
unchanged, with ``parsed=False`` and the reason in ``problem``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    InvalidIdError,
    NonIntegerIdError,
    StreamStateError,
    TokenizerError,
    UnknownEnvelopeError,
    short_repr,
)

__all__ = [
    "AudioIds",
    "AudioParser",
    "AudioRun",
    "EnvelopeParser",
    "Transcript",
    "envelope_formats",
    "new_parser",
    "register_envelope",
    "sensevoice_rich_text",
    "whisper_language",
]


@dataclass(frozen=True)
class Transcript:
    """A model's output with its envelope taken apart: `text` is the words alone; the fields
    are what the envelope said (None where it said nothing): `language` (the source language:
    a code, or Qwen3-ASR's language name), `target_language` (Canary), `task` ("transcribe" or
    "translate"), `emotion` and `event` (SenseVoice, Canary 2's emotion), `itn` (whether the
    text is inverse-normalised), `timestamps` (Whisper: seconds; Canary: its frame numbers),
    `no_speech` (the model said there is no speech), `tags` (the envelope's own tags, in order),
    `rich` (SenseVoice: funasr's rich transcription, emoji for emotion and events), `parsed`
    (False when the envelope did not parse; then `problem` says why and `text` is the output
    unchanged), `audio` (the "audio" envelope: the audio-codec id runs, in order)."""

    text: str
    language: str | None = None
    target_language: str | None = None
    task: str | None = None
    emotion: str | None = None
    event: str | None = None
    itn: bool | None = None
    timestamps: tuple[float, ...] = ()
    no_speech: bool = False
    tags: tuple[str, ...] = ()
    rich: str | None = None
    parsed: bool = True
    problem: str | None = None
    audio: tuple[AudioRun, ...] = ()


#: A bound on how many audio ids a layout may declare (Kimi-Audio: 16,896; Step-Audio 2: 6,562), so
#: that a corrupt one is refused before a stream's table of id flags is sized from it.
MAX_AUDIO_IDS = 1 << 22


@dataclass(frozen=True)
class AudioIds:
    """Which ids of a generation are audio-codec ids: `start` ... `end` - 1 (`end` None: up
    to the end of the tokenizer's vocabulary, Step-Audio 2's "at or after the first audio id").
    `source` says where the layout was declared (compared by the ids alone)."""

    start: int
    end: int | None = None
    source: str = field(default="given by the caller", compare=False)

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"AudioIds.{name} must be an id (an integer >= 0), got {value!r}")
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"AudioIds: end {self.end} must lie past start {self.start}")
        if self.end is not None and self.end - self.start > MAX_AUDIO_IDS:
            raise ValueError(
                f"AudioIds: {self.end - self.start} audio ids, more than {MAX_AUDIO_IDS} (a codec has thousands)"
            )

    def limit(self, vocab_size: int) -> int:
        """The end of the audio ids for a tokenizer of `vocab_size` ids."""
        return vocab_size if self.end is None else self.end


@dataclass(frozen=True)
class AudioRun:
    """Consecutive audio-codec ids of a generation: `ids`, `token_index` (the index of the first
    among the generated ids, 0 for the first id after the prompt) and `char_offset` (where they
    sit in the text: how many characters of it had been given out before them). A stream hands
    out what it has at each take_audio(); a run still growing then continues in the next piece,
    whose token_index is this one's plus len(ids), at the same char_offset."""

    ids: tuple[int, ...]
    token_index: int
    char_offset: int


_MISSING = object()
_FIELDS = ("language", "target_language", "task", "emotion", "event", "itn", "no_speech")


class EnvelopeParser:
    """One stream's parse. The caller feeds, in order: `text(delta, final)` for what the kind's
    stream settled (the last call with final=True) and `special(piece)` for a special id's
    spelling; both return the words to give out. `known()` is the fields so far (what
    state["envelope"] shows); `transcript(text)` the result once the stream is final."""

    name = ""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.tags: list[str] = []
        self.timestamps: list[float] = []
        self.problem: str | None = None
        # the whitespace rule of formats that strip their text (Qwen3-ASR, SenseVoice)
        self._started = False
        self._spaces = ""
        self._known: tuple[Any, dict[str, Any]] | None = None

    def special(self, piece: str) -> str:
        return ""

    def text(self, delta: str, final: bool) -> str:
        return delta

    def after_prompt(self) -> None:
        """The prompt's special ids were fed (new_stream's prefill); generated ids follow."""

    def bind(self, tok: Any) -> None:
        """Made for `tok` (its stream or decode_envelope): a format whose rules depend on the
        tokenizer's ids reads them here (the "audio" envelope: which ids are audio)."""

    #: The audio ids this parser takes out of the text, start ... end - 1 (the "audio" envelope
    #: binds them), else None: feed() sends them to audio() and never to the kind's stream.
    audio_span: tuple[int, int] | None = None

    #: The type a field that a new parser holds as None takes once it is filled in (a pickled
    #: parser's field is checked against it); a field not named here takes a str (a header field).
    _LATER: dict[str, type] = {}

    def audio(self, token_id: int, index: int) -> None:
        """An audio id (one of audio_span) arrived, the `index`-th generated id."""

    def copy(self) -> EnvelopeParser:
        other = type(self).__new__(type(self))
        other.__dict__.update(copy.deepcopy(self.__getstate__()))  # (a copy of checked fields: not checked again)
        other._known = None
        return other

    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        state.pop("_known", None)  # a cache of known(): made again
        return state

    def __setstate__(self, state: Any) -> None:
        """A pickled parser (a stream's, moved to another worker): its fields are the ones a new
        parser of its class has, each of the same type (one that starts as None: None or a
        str), or StreamStateError — never an AttributeError or TypeError in a later step. A
        class whose parsers cannot be made without arguments is taken as it comes."""
        if type(state) is not dict or not all(type(key) is str for key in state):
            raise StreamStateError(f"a pickled {type(self).__name__} holds no fields; start a new stream")
        try:
            fresh: dict[str, Any] | None = vars(type(self)())
        except Exception:
            fresh = None
        if fresh is not None:
            fresh = {key: value for key, value in fresh.items() if key != "_known"}
            for key, value in fresh.items():
                have = state.get(key, _MISSING)
                if have is _MISSING or not (
                    type(have) is type(value)
                    or (value is None and (have is None or type(have) is self._LATER.get(key, str)))
                ):
                    raise StreamStateError(
                        f"a pickled {type(self).__name__}'s field {key!r} is {short_repr(have)}, not a "
                        f"{type(value).__name__} as a parser of its class holds; start a new stream"
                    )
            extra = sorted(set(state) - set(fresh))
            if extra:
                raise StreamStateError(f"a pickled {type(self).__name__} has fields it never holds: {extra}")
        self.__dict__.update(state)
        self._known = None

    def set_first(self, name: str, value: Any) -> None:
        """A field as the first tag that states it says (later ones are kept in `tags`)."""
        if name not in self.fields:
            self.fields[name] = value

    def known(self) -> dict[str, Any]:
        # the same dict while nothing was added (a stream asks after every step)
        signature = (len(self.fields), len(self.tags), len(self.timestamps), self.problem)
        if self._known is not None and self._known[0] == signature:
            return self._known[1]
        out = self._fields_known()
        self._known = (signature, out)
        return out

    def _fields_known(self) -> dict[str, Any]:
        out = dict(self.fields)
        if self.timestamps:
            out["timestamps"] = list(self.timestamps)
        if self.problem is not None:
            out["problem"] = self.problem
        return out

    def transcript(self, text: str) -> Transcript:
        values = {name: self.fields[name] for name in _FIELDS if name in self.fields}
        return Transcript(
            text,
            timestamps=tuple(self.timestamps),
            tags=tuple(self.tags),
            parsed=self.problem is None,
            problem=self.problem,
            **values,
        )

    def stripped(self, delta: str, final: bool) -> str:
        """`delta` as part of a text that is .strip()ped as a whole: leading whitespace dropped,
        trailing whitespace held until more text follows it (dropped at the end)."""
        if not self._started:
            delta = delta.lstrip()
            if not delta:
                return ""
            self._started = True
        text = self._spaces + delta
        body = text.rstrip()
        self._spaces = "" if final else text[len(body) :]
        return body


# -- Qwen3-ASR ----------------------------------------------------------------------------------

_ASR_TEXT = "<asr_text>"
_LANGUAGE = "language "


class Qwen3ASRParser(EnvelopeParser):
    """Qwen3-ASR's answer, as the qwen-asr package's parse_asr_output reads it (without its
    repetition repair): ``language <Name><asr_text><text>``; the text stripped; the language
    name capitalised; ``language None`` is no speech. Before the tag arrives the output is
    held only while it can still be that header (it starts with "language" or the tag);
    output that cannot is the text itself, at once (parse_asr_output would wait for a tag
    anywhere: the one documented deviation)."""

    name = "qwen3_asr"

    def __init__(self) -> None:
        super().__init__()
        self._mode = "head"
        self._head = ""

    def text(self, delta: str, final: bool) -> str:
        if self._mode != "head":
            return self.stripped(delta, final)
        self._head += delta
        # Whether the output can still be the header depends on its first characters only, so
        # the decision is the same however the output was cut into deltas.
        start = self._head.lstrip()[: len(_ASR_TEXT)]
        header = (
            _LANGUAGE.startswith(start.lower()) or start.lower().startswith("language") or _ASR_TEXT.startswith(start)
        )
        if header and _ASR_TEXT in self._head:
            meta, rest = self._head.split(_ASR_TEXT, 1)
            self._head = ""
            self._mode = "body"
            self._read_meta(meta)
            return self.stripped(rest, final)
        if header and not final:
            return ""  # still possibly the header
        self._mode = "plain"
        self.problem = "no <asr_text> tag: the whole output is the text, its language unknown"
        held, self._head = self._head, ""
        return self.stripped(held, final)

    def _read_meta(self, meta: str) -> None:
        self.tags.append(meta.strip())
        self.tags.append(_ASR_TEXT)
        if "language none" in meta.lower():
            self.fields["no_speech"] = True
            return
        # qwen-asr's parse_asr_output: the first line that starts with "language " names it
        # (a blank or other line before it is passed over).
        for line in meta.splitlines():
            line = line.strip()
            if line.lower().startswith(_LANGUAGE):
                value = line[len(_LANGUAGE) :].strip()
                if value:
                    self.fields["language"] = value[:1].upper() + value[1:].lower()
                break


# -- SenseVoice -------------------------------------------------------------------------------

# SenseVoice's tags (funasr's emoji_dict keys) by what they say, in funasr's table order.
_SV_LANGUAGES = ("zh", "en", "yue", "ja", "ko", "nospeech")
_SV_EMOTIONS = ("HAPPY", "SAD", "ANGRY", "NEUTRAL", "FEARFUL", "DISGUSTED", "SURPRISED", "EMO_UNKNOWN")
_SV_EVENTS = ("BGM", "Speech", "Applause", "Laughter", "Cry", "Sneeze", "Breath", "Cough", "Sing", "Speech_Noise",
              "GBG", "Event_UNK")  # fmt: skip
_SV_ITN = {"withitn": True, "woitn": False}
_SV_TAGS = {f"<|{name}|>" for name in (*_SV_LANGUAGES, *_SV_EMOTIONS, *_SV_EVENTS, *_SV_ITN)}
_SV_PREFIXES = frozenset(tag[:k] for tag in _SV_TAGS for k in range(1, len(tag)))
_SV_LONGEST = max(map(len, _SV_TAGS))
_SV_TAG = re.compile("|".join(re.escape(tag) for tag in sorted(_SV_TAGS, key=len, reverse=True)))


class SenseVoiceParser(EnvelopeParser):
    """SenseVoice's output: ``<|lang|><|EMOTION|><|Event|><|withitn|>`` before each segment's
    text. The tags of SenseVoice's tables are taken out wherever they are (a tag split over
    several tokens is held until it is whole); any other text is the words, stripped as a
    whole. The first of each kind of tag sets its field; `rich` (decode_envelope) is funasr's
    rich_transcription_postprocess of the whole output."""

    name = "sensevoice"

    def __init__(self) -> None:
        super().__init__()
        self._hold = ""
        #: decode_envelope keeps the whole output for `rich`; a stream does not (unbounded).
        self.raw: list[str] | None = None

    def special(self, piece: str) -> str:
        # a tokenizer that has SenseVoice's tags as special ids: the same tags, by id
        return self.text(piece, False) if piece in _SV_TAGS else ""

    def text(self, delta: str, final: bool) -> str:
        if self.raw is not None:
            self.raw.append(delta)
        text = self._hold + delta
        self._hold = ""
        out = []
        at = 0
        for match in _SV_TAG.finditer(text):
            out.append(text[at : match.start()])
            self._tag(match.group())
            at = match.end()
        rest = text[at:]
        if final and rest[-_SV_LONGEST:] in _SV_PREFIXES:
            self.problem = f"the output ends inside a tag ({rest[-_SV_LONGEST:]!r}): given as text"
        if not final:
            # the longest end of the text that could still become a tag waits for the next delta
            for size in range(min(len(rest), _SV_LONGEST - 1), 0, -1):
                if rest[-size:] in _SV_PREFIXES:
                    self._hold = rest[-size:]
                    rest = rest[:-size]
                    break
        out.append(rest)
        if final and not self.tags and self.problem is None:
            self.problem = "no SenseVoice tags: the whole output is the text"
        return self.stripped("".join(out), final)

    def _tag(self, tag: str) -> None:
        self.tags.append(tag)
        name = tag[2:-2]
        if name in _SV_LANGUAGES:
            if name == "nospeech":
                self.fields["no_speech"] = True
            else:
                self.set_first("language", name)
        elif name in _SV_EMOTIONS:
            self.set_first("emotion", name)
        elif name in _SV_EVENTS:
            self.set_first("event", name)
        else:
            self.set_first("itn", _SV_ITN[name])

    def transcript(self, text: str) -> Transcript:
        base = super().transcript(text)
        if self.raw is None:
            return base
        return Transcript(**{**base.__dict__, "rich": sensevoice_rich_text("".join(self.raw))})


# funasr's tables (funasr/utils/postprocess_utils.py), in its order: the emoji each tag becomes.
_RICH_EMOJI = {
    "<|nospeech|><|Event_UNK|>": "❓", "<|zh|>": "", "<|en|>": "", "<|yue|>": "", "<|ja|>": "", "<|ko|>": "",
    "<|nospeech|>": "", "<|HAPPY|>": "😊", "<|SAD|>": "😔", "<|ANGRY|>": "😡", "<|NEUTRAL|>": "", "<|BGM|>": "🎼",
    "<|Speech|>": "", "<|Applause|>": "👏", "<|Laughter|>": "😀", "<|FEARFUL|>": "😰", "<|DISGUSTED|>": "🤢",
    "<|SURPRISED|>": "😮", "<|Cry|>": "😭", "<|EMO_UNKNOWN|>": "", "<|Sneeze|>": "🤧", "<|Breath|>": "",
    "<|Cough|>": "😷", "<|Sing|>": "", "<|Speech_Noise|>": "", "<|withitn|>": "", "<|woitn|>": "", "<|GBG|>": "",
    "<|Event_UNK|>": "",
}  # fmt: skip
_RICH_EMOTION = {"<|HAPPY|>": "😊", "<|SAD|>": "😔", "<|ANGRY|>": "😡", "<|NEUTRAL|>": "", "<|FEARFUL|>": "😰",
                 "<|DISGUSTED|>": "🤢", "<|SURPRISED|>": "😮"}  # fmt: skip
# (funasr's event table gives Cough the sneezing face; its emoji table the masked one)
_RICH_EVENT = {"<|BGM|>": "🎼", "<|Speech|>": "", "<|Applause|>": "👏", "<|Laughter|>": "😀", "<|Cry|>": "😭",
               "<|Sneeze|>": "🤧", "<|Breath|>": "", "<|Cough|>": "🤧"}  # fmt: skip
_RICH_EMOTION_MARKS = frozenset("😊😔😡😰🤢😮")
_RICH_EVENT_MARKS = frozenset("🎼👏😀😭🤧😷")


def _rich_segment(s: str) -> str:
    counts = {}
    for tag in _RICH_EMOJI:
        counts[tag] = s.count(tag)
        s = s.replace(tag, "")
    emotion = "<|NEUTRAL|>"
    for tag in _RICH_EMOTION:
        if counts[tag] > counts[emotion]:
            emotion = tag
    for tag, mark in _RICH_EVENT.items():
        if counts[tag] > 0:
            s = mark + s
    s = s + _RICH_EMOTION[emotion]
    for mark in _RICH_EMOTION_MARKS | _RICH_EVENT_MARKS:
        s = s.replace(" " + mark, mark).replace(mark + " ", mark)
    return s.strip()


def sensevoice_rich_text(raw: str) -> str:
    """funasr's rich_transcription_postprocess: SenseVoice's tags as emoji (emotion after a
    segment, events before it), segments joined; tests/outputs/test_envelopes.py checks it against
    funasr's own function on every case of fixtures/envelopes/expected.json."""
    s = raw.replace("<|nospeech|><|Event_UNK|>", "❓")
    for name in _SV_LANGUAGES:
        s = s.replace(f"<|{name}|>", "<|lang|>")
    parts = [_rich_segment(part).strip(" ") for part in s.split("<|lang|>")]

    def event_of(text: str) -> str | None:
        return text[0] if text and text[0] in _RICH_EVENT_MARKS else None

    def emotion_of(text: str) -> str | None:
        return text[-1] if text and text[-1] in _RICH_EMOTION_MARKS else None

    out = " " + parts[0]
    current = event_of(out)
    for part in parts[1:]:
        if not part:
            continue
        if event_of(part) == current and event_of(part) is not None:
            part = part[1:]
        if not part:
            continue
        current = event_of(part)
        if emotion_of(part) is not None and emotion_of(part) == emotion_of(out):
            out = out[:-1]
        out += part.strip()
    return out.replace("The.", " ").strip()


# -- Whisper and Canary: tags are special ids ---------------------------------------------------

_TAG = re.compile(r"<\|(.+)\|>")
_WHISPER_TIME = re.compile(r"\d+\.\d\d")
_FRAME = re.compile(r"\d+")


def _language_code(name: str) -> bool:
    # Whisper's codes (openai-whisper's LANGUAGES) and Canary's are two or three lower-case letters
    return 2 <= len(name) <= 3 and name.isascii() and name.isalpha() and name.islower()


def whisper_language(piece: str) -> str | None:
    """The language code a Whisper special token names (``<|en|>``: "en"), else None."""
    match = _TAG.fullmatch(piece)
    if match is None or not _language_code(match.group(1)):
        return None
    return match.group(1)


class WhisperParser(EnvelopeParser):
    """openai-whisper's control tokens: <|startoftranscript|>, the language (<|en|>), the task
    (<|transcribe|> / <|translate|>), <|notimestamps|>, timestamps (<|1.08|>: seconds),
    <|nospeech|>; the text is the kind's own decode (the control block renders nothing)."""

    name = "whisper"

    def special(self, piece: str) -> str:
        match = _TAG.fullmatch(piece)
        if match is None:
            return ""
        name = match.group(1)
        if _WHISPER_TIME.fullmatch(name):
            self.timestamps.append(float(name))
            return ""
        self.tags.append(piece)
        if name in ("transcribe", "translate"):
            self.set_first("task", name)
        elif name in ("nospeech", "nocaptions"):
            self.fields["no_speech"] = True
        elif _language_code(name):
            self.set_first("language", name)
        return ""


class CanaryParser(EnvelopeParser):
    """NeMo Canary's prompt and output tokens (the canary and canary2 prompt formats): the
    source then the target language (<|en|><|de|>), the task (<|transcribe|> / <|translate|>;
    Canary 2 states none: translate when the two languages differ), <|pnc|> / <|nopnc|>,
    <|itn|> / <|noitn|>, <|timestamp|> / <|notimestamp|>, <|diarize|> / <|nodiarize|>,
    <|emo:...|>, and the frame timestamps (<|12|>) of the timestamped models."""

    name = "canary"

    def special(self, piece: str) -> str:
        match = _TAG.fullmatch(piece)
        if match is None:
            return ""
        name = match.group(1)
        if _FRAME.fullmatch(name):
            self.timestamps.append(int(name))
            return ""
        self.tags.append(piece)
        if name in ("transcribe", "translate"):
            self.set_first("task", name)
        elif name.startswith("emo:"):
            self.set_first("emotion", name[4:])
        elif name in ("itn", "noitn"):
            self.set_first("itn", name == "itn")
        elif name in ("pnc", "nopnc", "timestamp", "notimestamp", "diarize", "nodiarize"):
            self.set_first(name.removeprefix("no"), not name.startswith("no"))
        elif _language_code(name):
            if "language" not in self.fields:
                self.fields["language"] = name
            else:
                self.set_first("target_language", name)
                if "task" not in self.fields or self.fields.get("_task_implied"):
                    self.fields["task"] = "transcribe" if name == self.fields["language"] else "translate"
                    self.fields["_task_implied"] = True
        return ""

    def _fields_known(self) -> dict[str, Any]:
        out = super()._fields_known()
        out.pop("_task_implied", None)
        return out


# -- Voxtral (mistral-common transcription) -------------------------------------------------------

_LANG_PREFIX = re.compile(r"lang:(\S+)")


class VoxtralParser(EnvelopeParser):
    """mistral-common's transcription request and Voxtral's answer: a prompt ([INST] ...
    [/INST]) whose end may say the language (``lang:en``) before [TRANSCRIBE]; then the text.
    Ids after the prompt (what a server streams) are the text from the first one. Realtime
    output's [STREAMING_PAD] / [STREAMING_WORD] markers print nothing."""

    name = "voxtral"

    def __init__(self) -> None:
        super().__init__()
        self._in_prompt = False
        self._held = ""

    def special(self, piece: str) -> str:
        if piece in ("[INST]", "[BEGIN_AUDIO]", "[AUDIO]", "[/INST]"):
            if not self._in_prompt:
                self.tags.append("[INST]" if piece != "[/INST]" else piece)
            self._in_prompt = True
            if piece == "[/INST]":
                self._held = ""  # what follows [/INST] may say the language
            return ""
        if piece == "[TRANSCRIBE]":
            self.tags.append(piece)
            match = _LANG_PREFIX.fullmatch(self._held.strip())
            if match is not None:
                self.set_first("language", match.group(1))
            elif self._held.strip():
                self.tags.append(self._held)
            self.set_first("task", "transcribe")
            self._in_prompt = False
            self._held = ""
        return ""

    def after_prompt(self) -> None:
        self._in_prompt = False
        self._held = ""

    def text(self, delta: str, final: bool) -> str:
        if not self._in_prompt:
            return delta
        self._held += delta
        if not final:
            return ""
        self.problem = "the prompt has no [TRANSCRIBE] marker: the text after [/INST] is given as the text"
        held, self._held = self._held, ""
        self._in_prompt = False
        return held


# -- text and audio-codec ids in one generation ---------------------------------------------------


class AudioParser(EnvelopeParser):
    """A generation that interleaves text ids with audio-codec ids (Step-Audio 2: every id at or
    after `<audio_0>`'s; Kimi-Audio: `kimia_token_offset` and the `kimia_audio_output_vocab`
    ids after it). The audio ids never reach the kind's stream: the text is exactly the decode
    of the text ids (a character split by audio ids joins across them), and the audio ids come
    out as AudioRuns (take_audio; decode_envelope's Transcript.audio). An id that is neither a
    text id of the tokenizer nor an audio id is refused (InvalidIdError) before anything moves.

    The layout: the AudioIds given (`new_stream(envelope=AudioIds(...))`), else the one the
    tokenizer declares (`tok.audio_ids`: the tiktoken kind reads Kimi-Audio's config.json), else
    Step-Audio 2's: the id of a `<audio_0>` token and every id after it, as vLLM's
    StepAudio2Tokenizer tells them (`is_step_audio_token`)."""

    name = "audio"
    _LATER = {"layout": AudioIds, "audio_span": tuple}

    def __init__(self, layout: AudioIds | None = None) -> None:
        super().__init__()
        self.layout = layout
        self.audio_span = None
        self._chars = 0
        self._runs: list[AudioRun] = []
        self._open: list[int] = []
        self._open_index = 0
        self._open_offset = 0

    def bind(self, tok: Any) -> None:
        layout = self.layout
        if layout is None:
            layout = getattr(tok, "audio_ids", None)
        if layout is None:
            layout = _first_audio_token(tok)
        if not isinstance(layout, AudioIds):
            raise UnknownEnvelopeError(
                "the 'audio' envelope needs to know which ids are audio: this tokenizer declares none (no audio_ids "
                "from its checkpoint's config, no <audio_0> token); give new_stream(envelope=AudioIds(start, end))"
            )
        self.layout = layout
        self.audio_span = (layout.start, layout.limit(tok.vocab_size))

    def text(self, delta: str, final: bool) -> str:
        self._chars += len(delta)
        return delta

    def audio(self, token_id: int, index: int) -> None:
        if self._open and index != self._open_index + len(self._open):
            self._close()
        if not self._open:
            self._open_index, self._open_offset = index, self._chars
        self._open.append(token_id)

    def _close(self) -> None:
        if self._open:
            self._runs.append(AudioRun(tuple(self._open), self._open_index, self._open_offset))
            self._open = []

    def take_audio(self) -> list[AudioRun]:
        """The audio ids that came since the last call, as runs (a run still growing is handed
        out as far as it came, and continues in the next call's first run)."""
        self._close()
        runs, self._runs = self._runs, []
        return runs

    def id_flags(self, tok: Any) -> bytes:
        """One byte per id up to the end of the text and audio ids: 0 a text id, 1 a special id
        (the parser reads it), 2 an audio id, 3 neither (refused). Made once per tokenizer and
        layout, kept on the tokenizer."""
        span = self.audio_span
        if (
            type(span) is not tuple
            or len(span) != 2
            or any(type(v) is not int for v in span)
            or not 0 <= span[0] < span[1]
            or span[1] > tok.vocab_size + MAX_AUDIO_IDS
        ):
            raise StreamStateError(
                f"an audio envelope's ids must be 0 <= start < end, ending at most {MAX_AUDIO_IDS} ids past the "
                f"vocabulary ({tok.vocab_size}), got {span!r}"
            )
        start, end = span
        cache = getattr(tok, "__dict__", None)
        key = f"_oasr_audio_flags_{start}_{end}"
        flags = cache.get(key) if cache is not None else None
        if type(flags) is bytes:
            return flags
        size = tok.vocab_size
        marks = bytearray(max(size, end))
        for token_id in tok.special_ids:
            if 0 <= token_id < size:
                marks[token_id] = 1
        marks[size:] = b"\x03" * (len(marks) - size)
        marks[start:end] = b"\x02" * (end - start)
        flags = bytes(marks)
        if cache is not None:
            cache[key] = flags
        return flags

    def checked_ids(self, tok: Any, ids: Any) -> list[int]:
        """`ids` as a list of text and audio ids: InvalidIdError (NonIntegerIdError) naming the
        first that is neither, as check_ids names a bad id."""
        assert self.audio_span is not None
        start, end = self.audio_span
        size = tok.vocab_size
        values = ids.tolist() if hasattr(ids, "tolist") else ids
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            checked: list[int] = tok.check_ids(values)  # (its own error for a non-sequence)
            return checked
        out: list[int] = []
        for position, value in enumerate(values):
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise NonIntegerIdError(f"token id {value!r} at position {position} is not an integer")
            token_id = value.__index__()
            if not (0 <= token_id < size or start <= token_id < end):
                raise InvalidIdError(
                    f"token id {token_id} at position {position} is neither a text id (0 ... {size - 1}) "
                    f"nor an audio id ({start} ... {end - 1})"
                )
            out.append(token_id)
        return out

    def text_ids(self, ids: list[int]) -> list[int]:
        """`ids` without the audio ids (a prompt's: only its text primes the stream)."""
        assert self.audio_span is not None
        start, end = self.audio_span
        return [token_id for token_id in ids if not start <= token_id < end]

    def transcript(self, text: str) -> Transcript:
        base = super().transcript(text)
        return Transcript(**{**base.__dict__, "audio": tuple(self.take_audio())})


def _first_audio_token(tok: Any) -> AudioIds | None:
    """Step-Audio 2's layout: `<audio_0>`'s id and every id after it (vLLM's StepAudio2Tokenizer:
    first_audio_token_id = vocab.get("<audio_0>"), is_step_audio_token(id) = id >= it)."""
    try:
        first = tok.piece_to_id("<audio_0>")
    except TokenizerError:
        return None
    return AudioIds(first, None, source="the id of <audio_0> in the vocabulary (Step-Audio 2's layout)")


# -- the registry -------------------------------------------------------------------------------

_FORMATS: dict[str, Callable[[], EnvelopeParser]] = {
    "qwen3_asr": Qwen3ASRParser,
    "sensevoice": SenseVoiceParser,
    "whisper": WhisperParser,
    "canary": CanaryParser,
    "voxtral": VoxtralParser,
    "audio": AudioParser,
}


def register_envelope(name: str, factory: Callable[[], EnvelopeParser], *, replace: bool = False) -> None:
    """Make `factory()` (a fresh EnvelopeParser per stream) the envelope format `name`."""
    if not isinstance(name, str) or not name:
        raise UnknownEnvelopeError(f"an envelope format needs a non-empty name, got {name!r}")
    if not callable(factory):
        raise UnknownEnvelopeError(f"the factory of envelope format {name!r} must be callable")
    if name in _FORMATS and not replace:
        raise UnknownEnvelopeError(f"envelope format {name!r} exists; pass replace=True to replace it")
    _FORMATS[name] = factory


def envelope_formats() -> list[str]:
    return sorted(_FORMATS)


def new_parser(name: Any, tok: Any = None) -> EnvelopeParser:
    """A fresh parser of the format `name` (or the "audio" envelope of the AudioIds given),
    bound to `tok` when given."""
    if isinstance(name, AudioIds):
        parser: EnvelopeParser = AudioParser(name)
        if tok is not None:
            parser.bind(tok)
        return parser
    factory = _FORMATS.get(name) if isinstance(name, str) else None
    if factory is None:
        raise UnknownEnvelopeError(
            f"unknown envelope format {name!r}; known: {', '.join(envelope_formats())} "
            "(oasr_tok.outputs.envelopes.register_envelope adds one)"
        )
    parser = factory()
    if not isinstance(parser, EnvelopeParser):
        raise UnknownEnvelopeError(f"the factory of envelope format {name!r} made a {type(parser).__name__}")
    if tok is not None:
        parser.bind(tok)
    return parser


def feed(
    tok: Any, parser: EnvelopeParser, ids: list[int], step: Callable[..., str], final: bool, start: int = 0
) -> str:
    """The words of `ids` through `parser`; `step(ids, final=False)` is the kind's stream step
    rendering their text (decode_incremental on one state, or a Stream's own step). `start`:
    the index of ids[0] among the generated ids. The parser's audio ids (audio_span) go to its
    audio() and never to the kind's step."""
    special = tok.special_ids
    span = parser.audio_span
    if not final and len(ids) == 1 and ids[0] not in special and (span is None or not span[0] <= ids[0] < span[1]):
        return parser.text(step(ids), False)  # a server loop's usual step
    out: list[str] = []
    run: list[int] = []
    for k, token_id in enumerate(ids):
        if span is not None and span[0] <= token_id < span[1]:
            if run:
                out.append(parser.text(step(run), False))
                run = []
            parser.audio(token_id, start + k)
        elif token_id in special:
            if run:
                out.append(parser.text(step(run), False))
                run = []
            # the special id still goes through the kind's stream: it may end a byte run
            out.append(parser.text(step([token_id]), False))
            out.append(parser.special(tok.id_to_piece(token_id)))
        else:
            run.append(token_id)
    if run:
        out.append(parser.text(step(run), False))
    if final:
        out.append(parser.text(step([], True), True))
    return "".join(out)


def prime(tok: Any, parser: EnvelopeParser, prompt_tail: Iterable[int]) -> None:
    """The prompt's special ids (Whisper's <|en|><|transcribe|>, Voxtral's [TRANSCRIBE]) say
    what the envelope knows before the first generated id; the prompt's text is not read."""
    special = tok.special_ids
    for token_id in prompt_tail:
        if token_id in special:
            parser.special(tok.id_to_piece(token_id))


def decode_envelope(tok: Any, ids: Any, name: Any) -> Transcript:
    parser = new_parser(name, tok)
    if isinstance(parser, SenseVoiceParser):
        parser.raw = []
    checked = parser.checked_ids(tok, ids) if isinstance(parser, AudioParser) else tok.check_ids(ids)
    state: dict[str, Any] = {}
    text = feed(tok, parser, checked, lambda new, final=False: tok.decode_incremental(new, state, final), True)
    return parser.transcript(text)
