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

The same tokenizer is also built from openai-whisper's own vocabulary, `files={"tiktoken":
"multilingual.tiktoken"}` (or gpt2.tiktoken for English-only models), a `base64(bytes) rank`
line per rank. There the control block is not in the file: it is laid out after the ranks
exactly as openai-whisper's `get_encoding` lays it out (eot = the number of ranks, then sot,
the first `num_languages` of Whisper's language codes, the task tokens and the 1501
timestamps), so both sources of one model give the same ids. Rank 50256 of
multilingual.tiktoken is the empty byte string (it renders nothing), as id 50256 of the
tokenizer.json is the empty token.

Streaming and token pieces run on the compiled PieceTable in byte mode; the prompt-block rule
is the one piece of context: the table's prompt rule keeps it in the stream state as a single
bool (key "_prompt").
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._bytelevel import token_bytes, tokens_bytes
from .._common import checked_text, join_bytes, reject_unknown_options
from .._ranks import LazyEncoding, byte_table, tiktoken_encoding
from .._tokenizer_json import TokenizerJson, glance, is_whisper
from ..api import (
    ID_SLACK,
    TIKTOKEN_SET_ASIDE,
    TIKTOKEN_SUFFIX,
    WHISPER_TIKTOKEN_NAMES,
    BackendNotInstalledError,
    Detected,
    EncodeError,
    Found,
    InvalidIdError,
    MalformedAssetError,
    NonIntegerIdError,
    ResolveError,
    SetAside,
    SpecError,
    SpecialTokens,
    SpecialTokensBuilder,
    TableMethods,
    TimingError,
    Tokenizer,
    TokenizerSpec,
    folder_names,
    is_tiktoken_ranks,
    is_whisper_vocabulary,
    join_pieces,
    on_disk,
    read_json,
    short_repr,
)
from .layout import (
    LANGUAGE_CODES,
    PER_SECOND,
    TIMESTAMP_COUNT,
    TIMESTAMP_STEP,
    WhisperLayout,
    read_tiktoken_layout,
    read_whisper_layout,
)
from .words import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS, split_to_word_tokens, word_tokens

if TYPE_CHECKING:
    from ..api import Scores, Segment

__all__ = [
    "WhisperTokenizer",
    "WhisperLayout",
    "read_whisper_layout",
    "read_tiktoken_layout",
    "LANGUAGE_CODES",
    "TIMESTAMP_COUNT",
    "TIMESTAMP_STEP",
    "GPT2_PATTERN",
]


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


#: The pre-tokenizer regex openai-whisper gives tiktoken (GPT-2's).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class WhisperTokenizer(TableMethods, Tokenizer):
    """Whisper's tokenizer from a HF tokenizer.json (file role `tokenizer`) or openai-whisper's
    .tiktoken (role `tiktoken`, option `num_languages`, 99 by default). Option: `vocab_size`
    (default: the layout's, notimestamps id + 1 + 1501). encode() needs the `tokenizers` package
    (tokenizer.json) or `tiktoken` (.tiktoken); decoding needs neither."""

    supports_encode = True

    def __init__(
        self, path: str, vocab_size: int | None = None, *, tiktoken: bool = False, num_languages: int = 99
    ) -> None:
        self._ranks: list[bytes] | None = None
        if tiktoken:
            layout, self._ranks = read_tiktoken_layout(path, num_languages)
        else:
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
        texts: list[str | None] = list(map(layout.tokens.get, range(eot)))
        self._visible = [True] * eot
        for token_id in skipped:
            texts[token_id] = None
            self._visible[token_id] = False
        self._bytes: list[bytes] = tokens_bytes(texts)
        # decode_incremental and token_pieces are TableMethods' (the compiled engine), with the
        # prompt-block rule in the table.
        self._pieces = tuple(self._bytes) + (b"",) * (vocab_size - eot)  # (a tuple: _engine/join.pyx)
        prompt_stop = bytearray(vocab_size)
        prompt_stop[layout.sot_prev] = 1
        self._prompt_stop = bytes(prompt_stop)
        self._table = byte_table(self._pieces, self._special, prompt=(layout.sot_prev, layout.sot))
        self._runtime: Any = None
        self._runtime_lock = threading.Lock()
        #: openai-whisper's tiktoken Encoding of a .tiktoken source (its get_encoding), for encode
        self._encoding = LazyEncoding(self._openai_encoding) if self._ranks is not None else None

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> WhisperTokenizer:
        if "tiktoken" in spec.files:
            if "tokenizer" in spec.files:
                raise SpecError(
                    "whisper: give one vocabulary, file role 'tokenizer' (tokenizer.json) or "
                    "'tiktoken' (.tiktoken), not both"
                )
            reject_unknown_options(spec.options, ["vocab_size", "num_languages"], "whisper")
            tokenizer = cls(
                spec.file("tiktoken"),
                spec.options.get("vocab_size"),
                tiktoken=True,
                num_languages=spec.options.get("num_languages", 99),
            )
        else:
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
        return (token_id - self.timestamp_begin) / PER_SECOND

    def timestamp_id(self, seconds: float) -> int:
        """The timestamp id nearest to `seconds` (0 ... 30)."""
        value = _seconds(seconds, "seconds")
        step = round(value * PER_SECOND)
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
                seconds = (token_id - begin) / PER_SECOND
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

    def segments(
        self, ids: Sequence[int], offset: float = 0.0, duration: float = 30.0, scores: Scores | None = None
    ) -> list[Segment]:
        """One window's segments from its timestamp tokens, exactly as openai-whisper's
        transcribe splits them (oasr_tok.outputs.segments.whisper_segments states the rules): `offset`
        is the window's start in seconds, `duration` its length (30 s but for the last window).
        `scores`, one log-probability per id, give each segment whisper's `avg_logprob`."""
        from ..api import checked_scores, whisper_segments

        ids = self.check_ids(ids)
        for name, value in (("offset", offset), ("duration", duration)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise TimingError(f"option {name} must be a finite number >= 0, got {value!r}")
        return whisper_segments(
            ids,
            eot=self.eot,
            sot=self.sot,
            timestamp_begin=self.timestamp_begin,
            decode=self.decode,
            offset=offset,
            duration=duration,
            scores=None if scores is None else checked_scores(scores, len(ids)),
        )

    def split_to_word_tokens(
        self, tokens: Sequence[int], language: str | None = None
    ) -> tuple[list[str], list[list[int]]]:
        """openai-whisper's Tokenizer.split_to_word_tokens (words.py says how)."""
        return split_to_word_tokens(self, tokens, language)

    def word_tokens(
        self,
        tokens: Sequence[int],
        language: str | None = None,
        prepend_punctuations: str = PREPEND_PUNCTUATIONS,
        append_punctuations: str = APPEND_PUNCTUATIONS,
    ) -> list[tuple[str, list[int]]]:
        """The words openai-whisper times in add_word_timestamps, with their tokens (words.py
        says how)."""
        return word_tokens(self, tokens, language, prepend_punctuations, append_punctuations)

    def decode_with_timestamps(self, ids: Sequence[int]) -> str:
        """Every id rendered, control tokens and timestamps included ("<|0.00|> Hello<|1.08|>"),
        as openai-whisper's Tokenizer.decode_with_timestamps renders them: the bytes of all ids
        joined, then decoded as UTF-8 with U+FFFD for invalid bytes."""
        ids = self.check_ids(ids)
        eot, tokens, begin = self.eot, self._layout.tokens, self.timestamp_begin
        out: list[bytes] = []
        for token_id in ids:
            if token_id < eot and token_id not in self._layout.special_below_eot:
                out.append(self._bytes[token_id])
            elif self.is_timestamp(token_id) and token_id not in tokens:
                out.append(f"<|{(token_id - begin) * 0.02:.2f}|>".encode())
            else:
                out.append(tokens.get(token_id, "").encode("utf-8"))
        return join_bytes(out).decode("utf-8", "replace")

    # -- decoding -----------------------------------------------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        """The transcript: ids >= eot and prompt blocks dropped, the rest byte-level decoded."""
        # Without a prompt block (no <|startofprev|>), each id's bytes joined: the ids >= eot
        # and the skipped ones render b"" in the table's pieces.
        joined = join_pieces(self._pieces, ids, stops=self._prompt_stop)
        if joined is not None:
            return joined.decode("utf-8", "replace")
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
        return join_bytes(kept).decode("utf-8", "replace")

    # -- encoding -----------------------------------------------------------------------------

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """Ids for a prompt, as the `tokenizers` runtime encodes it: without special tokens
        by default (no sot/eot added); add_special_tokens=True runs the file's post-processor
        (transformers' `tok(text).input_ids`). Control markup written in the text (e.g.
        "<|en|>") is matched as the runtime matches added tokens, unless split_special_tokens.
        To prompt Whisper, send [sot_prev] + encode(" " + prompt) + sot_sequence(...)."""
        text = checked_text(text, "whisper")
        if self._ranks is not None:
            return self._encode_tiktoken(text, bool(add_special_tokens), split_special_tokens)
        runtime = self._split_backend() if split_special_tokens else self._backend()
        return list(runtime.encode(text, add_special_tokens=bool(add_special_tokens)).ids)

    def _encode_tiktoken(self, text: str, add_special_tokens: bool, split_special_tokens: bool) -> list[int]:
        """openai-whisper's `encoding.encode` (control markup in the text is refused, as there,
        unless split_special_tokens spells it out as plain text)."""
        if add_special_tokens:
            raise EncodeError(
                "whisper (.tiktoken) encode: a .tiktoken file has no post-processor to add special tokens; "
                "build the decoder prompt with sot_sequence()"
            )
        assert self._encoding is not None
        encoding = self._encoding.get()
        try:
            if split_special_tokens:
                return list(encoding.encode(text, disallowed_special=()))
            return list(encoding.encode(text))
        except ValueError as exc:  # openai-whisper's encoding refuses control markup in text
            raise EncodeError(f"whisper (.tiktoken) encode: {exc}") from None

    def _split_backend(self) -> Any:
        # A second runtime with encode_special_tokens on (a flag on the runtime: not per call).
        backend = self._backend()
        with self._runtime_lock:
            split = self.__dict__.get("_split_runtime")
            if split is None:
                from tokenizers import Tokenizer as Runtime

                split = Runtime.from_str(backend.to_str())
                split.encode_special_tokens = True
                self.__dict__["_split_runtime"] = split
            return split

    # -- the prompt side (docs/prompts.md) ---------------------------------------------------

    def _special_tokens(self) -> SpecialTokens:
        builder = SpecialTokensBuilder(self._vocab_size)
        builder.set("bos", self.sot, "Whisper's layout: <|startoftranscript|> starts every decoder prompt")
        builder.set("eos", self.eot, "Whisper's layout: <|endoftext|> (eot) ends a transcript")
        for role in ("pad", "unk", "sep", "cls", "mask"):
            builder.set(role, None, "Whisper has none")
        return builder.build()

    def _keep_specials(self) -> Tokenizer:
        return WhisperWithSpecials(self)

    def _openai_encoding(self) -> Any:
        """The tiktoken Encoding openai-whisper's get_encoding builds for this file."""
        assert self._ranks is not None
        layout = self._layout
        specials = {layout.tokens[i]: i for i in range(layout.eot, layout.no_timestamps + 1)}
        for step in range(TIMESTAMP_COUNT):
            specials[f"<|{step * TIMESTAMP_STEP:.2f}|>"] = layout.timestamp_begin + step
        return tiktoken_encoding(
            name=os.path.basename(self._path),
            pattern=GPT2_PATTERN,
            ranks=self._ranks,
            specials=specials,
            path=self._path,
            who="whisper encode from a .tiktoken file",
            extra="tekken",
            n_vocab=layout.size,
        )

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
                    self._runtime = Runtime.from_file(on_disk(self._path))
                except Exception as exc:  # the runtime's own parse error, whatever its type
                    raise MalformedAssetError(
                        f"{self._path}: tokenizers cannot load it: {exc}", path=self._path
                    ) from None
            return self._runtime


class WhisperWithSpecials(TableMethods, Tokenizer):
    """`WhisperTokenizer.with_specials()`: every id rendered, control tokens as their text
    (`<|startoftranscript|><|en|><|transcribe|>`), timestamps as Whisper spells them
    (`<|0.00|>`, also where the file lacks them) and prompt blocks shown. For the ids a
    tokenizer.json holds this is the `tokenizers` decode with skip_special_tokens=False
    (every token through the ByteLevel decoder, lossy UTF-8); special_ids is empty."""

    supports_encode = True

    def __init__(self, parent: WhisperTokenizer) -> None:
        self._parent = parent
        size = parent.vocab_size
        tokens = parent._layout.tokens
        self._bytes = tuple(
            [
                token_bytes(tokens[i])
                if i in tokens
                else (parent.id_to_piece(i).encode("utf-8") if parent.is_timestamp(i) else b"")
                for i in range(size)
            ]
        )
        self._table = byte_table(self._bytes, ())

    @property
    def vocab_size(self) -> int:
        return self._parent.vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset()

    def decode(self, ids: Sequence[int]) -> str:
        # (join_pieces reads and checks the ids as check_ids does: one piece per id)
        return join_pieces(self._bytes, ids).decode("utf-8", "replace")

    def id_to_piece(self, token_id: int) -> str:
        return self._parent.id_to_piece(token_id)

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        return self._parent.encode(text, add_special_tokens, split_special_tokens=split_special_tokens)


# -- recognising the files (the registry's detector for this kind) ----------------------------

_WHISPER_LANGUAGE = re.compile(r"<\|[a-z]{2,3}\|>")


def _json_found(summary: TokenizerJson, config: str | None) -> Found:
    languages = sorted(c for c in summary.added if _WHISPER_LANGUAGE.fullmatch(c))
    notimestamps = summary.added["<|notimestamps|>"]
    found = Found("whisper", {"tokenizer": summary.path}, source=os.path.basename(summary.path))
    found.evidence.append(
        (
            "kind",
            f"whisper: its added tokens include <|startoftranscript|> {summary.added['<|startoftranscript|>']}, "
            f"<|notimestamps|> {notimestamps} and {len(languages)} language tokens "
            f"({', '.join(languages[:4])}{' …' if len(languages) > 4 else ''}); {summary.structure}",
        )
    )
    if isinstance(notimestamps, int) and not isinstance(notimestamps, bool):
        found.evidence.append(
            (
                "vocab_size",
                f"derived by the kind: <|notimestamps|> {notimestamps} + 1 + 1501 timestamps "
                f"= {notimestamps + 1502}; the timestamp ids are not in tokenizer.json",
            )
        )
    found.evidence.append(("special_ids", "every id from <|endoftext|> (eot) to vocab_size - 1"))
    if config is not None:
        found.notes.append(f"{os.path.basename(config)} is not used by the whisper kind")
    return found


def _model_n_vocab(folder: str) -> tuple[int | None, str]:
    """n_vocab from a config.json ("n_vocab", openai-whisper's dims, or "vocab_size") or a
    dims.json beside a .tiktoken file, and where it came from."""
    for name, keys in (("config.json", ("n_vocab", "vocab_size")), ("dims.json", ("n_vocab",))):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        data = read_json(path, name)
        if isinstance(data, dict) and isinstance(data.get("dims"), dict):
            data = data["dims"]
        for key in keys:
            value = data.get(key) if isinstance(data, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                return value, f"{name} {key} {value}"
    return None, ""


def _tiktoken_found(path: str, order: int) -> Found:
    folder = os.path.dirname(path)
    with open(path, "rb") as handle:
        ranks = sum(1 for line in handle if line.strip())
    n_vocab, where = _model_n_vocab(folder)
    found = Found("whisper", {"tiktoken": path}, source=os.path.basename(path), order=order)
    found.evidence.append(
        (
            "kind",
            f"whisper: {os.path.basename(path)} is a tiktoken rank file ({ranks} 'base64 rank' lines), "
            "openai-whisper's vocabulary; its control block is laid out after the ranks as "
            "openai-whisper's get_encoding does",
        )
    )
    if n_vocab is None:
        num_languages = 99
        found.evidence.append(
            ("num_languages", "99, openai-whisper's default (no config.json or dims.json giving n_vocab beside it)")
        )
    else:
        num_languages = n_vocab - 51765 - (n_vocab >= 51865)
        if not 0 <= num_languages <= 100:
            raise ResolveError(
                f"{os.path.join(folder, where.split()[0])}: {where} is not a Whisper vocabulary "
                f"size (n_vocab - 51765 - (n_vocab >= 51865) = {num_languages} languages)"
            )
        found.evidence.append(("num_languages", f"{num_languages}, from {where}: n_vocab - 51765 - (n_vocab >= 51865)"))
    found.options["num_languages"] = num_languages
    found.evidence.append(
        ("special_ids", f"every id from <|endoftext|> ({ranks}, the number of ranks) to vocab_size - 1")
    )
    return found


def detect(path: str) -> list[Detected]:
    """A tokenizer.json with Whisper's special tokens (first), openai-whisper's
    multilingual.tiktoken / gpt2.tiktoken (recognised by content; the model's n_vocab beside
    them decides which comes first and how many languages it has); a single file of either (a
    rank file under another name only with multilingual.tiktoken's signature: any other rank
    file is the tiktoken kind's)."""
    out: list[Detected] = []
    if not os.path.isdir(path):
        if path.endswith(".json"):
            summary = glance(path)
            if summary is not None and is_whisper(summary):
                out.append(_json_found(summary, None))
        elif is_tiktoken_ranks(path) and is_whisper_vocabulary(path):
            out.append(_tiktoken_found(path, 1))
        return out
    names = folder_names(path)
    at = lambda name: os.path.join(path, name)
    if "tokenizer.json" in names:
        summary = glance(at("tokenizer.json"))
        if summary is not None and is_whisper(summary):
            config = at("tokenizer_config.json") if "tokenizer_config.json" in names else None
            out.append(_json_found(summary, config))
    present = [n for n in WHISPER_TIKTOKEN_NAMES if n in names]
    if present:
        n_vocab, _ = _model_n_vocab(path)
        # an English-only vocabulary size (51864) says gpt2.tiktoken is the model's
        if n_vocab is not None and n_vocab < 51865:
            present.reverse()
        for sub, name in enumerate(present):
            if is_tiktoken_ranks(at(name)):
                out.append(_tiktoken_found(at(name), 1 + sub))
            else:
                out.append(SetAside(name, "not a tiktoken rank file ('base64 rank' lines counting from 0)"))
    for name in names:
        if name.endswith(TIKTOKEN_SUFFIX) and name not in WHISPER_TIKTOKEN_NAMES:
            out.append(SetAside(name, TIKTOKEN_SET_ASIDE))
    return out
