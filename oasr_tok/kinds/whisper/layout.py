"""Whisper's two vocabularies as files: a Hugging Face tokenizer.json (`read_whisper_layout`:
the control block found from its tokens' contents) and openai-whisper's .tiktoken
(`read_tiktoken_layout`: the block laid out after the ranks as its `get_encoding` does); both
give a `WhisperLayout`, the ids of the control tokens."""

from __future__ import annotations

import re

from .._bytelevel import BYTE_TO_CHAR
from .._ranks import read_rank_file
from ..api import (
    MalformedAssetError,
    SpecError,
    all_json_ids,
    check_id_span,
    json_id,
    read_json,
    short_repr,
)

#: <|0.00|> ... <|30.00|>
TIMESTAMP_COUNT = 1501
#: seconds between two timestamp tokens
TIMESTAMP_STEP = 0.02
PER_SECOND = 50  # 1 / TIMESTAMP_STEP, exact: k / 50 is the correctly rounded k * 0.02

#: The control tokens after the languages, in Whisper's order; nospeech was nocaptions before large-v3.
_TASK_BLOCK = (
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nospeech|>",
    "<|notimestamps|>",
)
_LANGUAGE = re.compile(r"<\|([a-z]{2,3}(?:-[A-Za-z]+)?)\|>")
_TIMESTAMP = re.compile(r"<\|(\d+(?:\.\d*)?)\|>")

#: Whisper's language codes in openai-whisper's order (its `LANGUAGES`); a model has the first
#: 99 (100 from large-v3 on, which added "yue").
LANGUAGE_CODES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt "
    "la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc "
    "ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
).split()


class WhisperLayout:
    """The ids of Whisper's control tokens, found in one tokenizer.json."""

    __slots__ = (
        "eot",
        "sot",
        "languages",
        "translate",
        "transcribe",
        "sot_lm",
        "sot_prev",
        "no_speech",
        "no_timestamps",
        "tokens",
        "special_below_eot",
        "max_id",
    )

    eot: int
    sot: int
    languages: dict[str, int]  # language code -> its token id, in the file's order
    translate: int
    transcribe: int
    sot_lm: int
    sot_prev: int
    no_speech: int
    no_timestamps: int
    tokens: dict[int, str]  # id -> its token string, as the tokenizer.json spells it
    special_below_eot: frozenset[int]
    max_id: int

    def __init__(
        self,
        *,
        eot: int,
        sot: int,
        languages: dict[str, int],
        translate: int,
        transcribe: int,
        sot_lm: int,
        sot_prev: int,
        no_speech: int,
        no_timestamps: int,
        tokens: dict[int, str],
        special_below_eot: frozenset[int],
        max_id: int,
    ) -> None:
        self.eot, self.sot, self.languages = eot, sot, languages
        self.translate, self.transcribe, self.sot_lm, self.sot_prev = translate, transcribe, sot_lm, sot_prev
        self.no_speech, self.no_timestamps = no_speech, no_timestamps
        self.tokens, self.special_below_eot, self.max_id = tokens, special_below_eot, max_id

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
    if not all_json_ids(vocab.values()):
        token, token_id = next((t, i) for t, i in vocab.items() if json_id(i) is None)
        raise _malformed(path, f"vocab entry {short_repr(token)} has id {short_repr(token_id)}")
    tokens: dict[int, str] = dict(zip(vocab.values(), vocab.keys()))  # (built in C)
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
    by_content = dict(zip(tokens.values(), tokens.keys()))  # the inverse (a later id wins), built in C
    if "<|nospeech|>" not in by_content and "<|nocaptions|>" in by_content:
        by_content["<|nospeech|>"] = by_content["<|nocaptions|>"]
    missing = [t for t in ("<|endoftext|>", "<|startoftranscript|>", *_TASK_BLOCK) if t not in by_content]
    if missing:
        raise _malformed(path, f"it lacks the control token(s) {', '.join(missing)}")
    eot, sot = by_content["<|endoftext|>"], by_content["<|startoftranscript|>"]
    task_ids = [by_content[t] for t in _TASK_BLOCK]
    if sot != eot + 1 or task_ids != list(range(task_ids[0], task_ids[0] + len(_TASK_BLOCK))):
        raise _malformed(
            path,
            f"its control tokens are not in Whisper's order (eot {eot}, sot {sot}, "
            f"translate ... notimestamps at {task_ids})",
        )
    languages: dict[str, int] = {}
    for token_id in range(sot + 1, task_ids[0]):
        match = _LANGUAGE.fullmatch(tokens.get(token_id, ""))
        if match is None:
            raise _malformed(
                path,
                f"id {token_id} ({tokens.get(token_id)!r}) lies between "
                "<|startoftranscript|> and <|translate|> but is not a language token",
            )
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
        expected = (token_id - begin) / PER_SECOND
        if match is None or abs(float(match.group(1)) - expected) > TIMESTAMP_STEP / 4:
            raise _malformed(path, f"id {token_id} is {token!r}, where timestamp <|{expected:.2f}|> belongs")
    return WhisperLayout(
        eot=eot,
        sot=sot,
        languages=languages,
        translate=task_ids[0],
        transcribe=task_ids[1],
        sot_lm=task_ids[2],
        sot_prev=task_ids[3],
        no_speech=task_ids[4],
        no_timestamps=task_ids[5],
        tokens=tokens,
        special_below_eot=frozenset(i for i in special if i < eot),
        max_id=max(tokens),
    )


def read_tiktoken_layout(path: str, num_languages: int = 99) -> tuple[WhisperLayout, list[bytes]]:
    """Parse an openai-whisper `.tiktoken` file (`base64(bytes) rank` per line, rank = line
    number) and lay the control block out after its ranks as `get_encoding` does. The layout
    spells each rank as the tokenizer.json of the same model does (the byte-level alphabet),
    and the ranks' bytes. MalformedAssetError names the file and line."""
    if (
        isinstance(num_languages, bool)
        or not isinstance(num_languages, int)
        or not 0 <= num_languages <= len(LANGUAGE_CODES)
    ):
        raise SpecError(
            f"whisper: option num_languages must be an integer 0 ... {len(LANGUAGE_CODES)}, got {num_languages!r}"
        )
    ranks = read_rank_file(path, "Whisper .tiktoken")
    eot = len(ranks)
    tokens: dict[int, str] = {rank: "".join([BYTE_TO_CHAR[b] for b in piece]) for rank, piece in enumerate(ranks)}
    controls = [
        "<|endoftext|>",
        "<|startoftranscript|>",
        *[f"<|{code}|>" for code in LANGUAGE_CODES[:num_languages]],
        *_TASK_BLOCK,
    ]
    for offset, name in enumerate(controls):
        tokens[eot + offset] = name
    sot, translate = eot + 1, eot + 2 + num_languages
    layout = WhisperLayout(
        eot=eot,
        sot=sot,
        languages={code: sot + 1 + k for k, code in enumerate(LANGUAGE_CODES[:num_languages])},
        translate=translate,
        transcribe=translate + 1,
        sot_lm=translate + 2,
        sot_prev=translate + 3,
        no_speech=translate + 4,
        no_timestamps=translate + 5,
        tokens=tokens,
        special_below_eot=frozenset(),
        max_id=translate + 5,
    )
    return layout, ranks
