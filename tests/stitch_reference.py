"""transformers' chunk stitching, run on the same chunk outputs as oasr_tok's StitchedTranscript,
and realistic chunk outputs to run both on (tests/outputs/test_stitching.py).

The reference is transformers' own code, imported without torch (transformers 5.x):

* sequence-to-sequence: ``pipelines.automatic_speech_recognition._find_longest_common_sequence``
  and the tokenizer's ``decode(skip_special_tokens=True)``, as
  ``AutomaticSpeechRecognitionPipeline.postprocess`` runs them for type "seq2seq";
* Whisper: ``models.whisper.tokenization_whisper._decode_asr`` with the chunks' strides in
  seconds (what postprocess hands it) and, for word timings, ``token_timestamps``;
* CTC: postprocess's CTC lines need torch tensors, so they are ported here line for line:
  ``rescale_stride`` (imported), ``items[:, left:total_n - right]``, ``np.concatenate``,
  ``tokenizer.decode(items, skip_special_tokens=False)``, and for times
  ``decode(..., output_char_offsets=True)`` then ``_get_word_offsets`` and
  ``offset * align_to / sampling_rate``.

The chunk layout is the pipeline's ``chunk_iter`` arithmetic (ported: the function itself runs
the feature extractor on audio). A chunk's output is what a recogniser writes for the words it
heard whole: a timeline gives every word of a real transcript a time; a chunk holds the words
inside it, and a word its edge cut is dropped, kept or garbled as the plan says, so neighbouring
chunks agree on the audio they share and disagree at their edges.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from transformers import AutoTokenizer, Wav2Vec2CTCTokenizer, WhisperTokenizer
from transformers.models.whisper import tokenization_whisper
from transformers.pipelines.automatic_speech_recognition import _find_longest_common_sequence, rescale_stride

import oasr_tok

from paths import own, shared

logging.getLogger("transformers").setLevel(logging.ERROR)

SAMPLE_RATE = 16000
CTC_ALIGN = 320  # wav2vec2's inputs_to_logits_ratio

ENGLISH = (
    "All these conversations are what have kept me honest, kept me inspired, and kept me going. "
    "Every day, I learned from you. You made me a better President, and you made me a better man. "
    "I first came to Chicago when I was in my early twenties, still trying to figure out who I was, "
    "still searching for a purpose to my life. It was in neighborhoods not far from here where I "
    "began working with church groups in the shadows of closed steel mills."
)
CHINESE = (
    "今天我们讨论的是语音识别系统如何把很长的音频切成小段，每一段分别识别，然后再把结果拼接起来。"
    "拼接的时候不能重复词语，也不能丢掉词语，中文和日文之间不加空格。"
)


# -- the tokenizers, ours and transformers' --------------------------------------------------------


@cache
def pair(name: str) -> tuple[Any, Any]:
    """(ours, transformers') for a kind transformers loads."""
    if name in ("qwen3", "mistral-7b"):
        folder = shared(f"huggingface/{name}")
        return oasr_tok.load(folder), AutoTokenizer.from_pretrained(folder)
    if name == "whisper":
        folder = shared("whisper/faster-whisper-base")
        added = json.load(open(f"{folder}/tokenizer.json", encoding="utf-8"))["added_tokens"]
        # the hub's special_tokens_map lists every added token as special; this folder has only
        # tokenizer.json, so the list is given as the hub gives it
        theirs = WhisperTokenizer(
            tokenizer_file=f"{folder}/tokenizer.json", additional_special_tokens=[a["content"] for a in added]
        )
        return oasr_tok.load(folder), theirs
    if name == "wav2vec2":
        folder = own("wav2vec2/base-960h/vocab.json").rsplit("/", 1)[0]
        return oasr_tok.load(folder), Wav2Vec2CTCTokenizer.from_pretrained(folder)
    raise KeyError(name)


# -- transformers' side ------------------------------------------------------------------------------


def transformers_seq2seq(theirs: Any, chunks: list[list[int]]) -> str:
    """The pipeline's seq2seq stitching. Its numpy comparison of ``sequence[-i:]`` with
    ``new_sequence[:i]`` needs the transcript so far to be at least as long as the new chunk
    (numpy 2 refuses unequal lengths, and broadcasts a one-id transcript); the transcript is
    therefore started with ids that match nothing (negative), which compares the real ids
    right-aligned, and cut off again: transformers' own rule on every window it can compare."""
    pad = max((len(c) for c in chunks), default=0) + 1
    sequences = [np.array([[-k for k in range(pad, 0, -1)] + chunks[0]])] + [np.array([c]) for c in chunks[1:]]
    items = _find_longest_common_sequence(sequences, theirs)
    return theirs.decode([int(i) for i in items[pad:]], skip_special_tokens=True)


def transformers_seq2seq_unpadded(theirs: Any, chunks: list[list[int]]) -> str:
    items = _find_longest_common_sequence([np.array([c]) for c in chunks], theirs)
    return theirs.decode([int(i) for i in items], skip_special_tokens=True)


def transformers_whisper(theirs: Any, chunks: list[dict], return_timestamps: Any) -> tuple[str, dict, list]:
    """_decode_asr on the chunk outputs; also what it handed _collate_word_timestamps (the
    resolved tokens and their (start, end) times) for word timings."""
    outputs = []
    for c in chunks:
        out = {"tokens": np.array([c["ids"]]), "stride": c["stride_s"]}
        if c.get("token_timestamps") is not None:
            out["token_timestamps"] = np.array([c["token_timestamps"]])
        outputs.append(out)
    seen: list = []
    original = tokenization_whisper._collate_word_timestamps

    def spy(tokenizer, tokens, token_timestamps, language, return_language):
        seen.append((list(tokens), list(token_timestamps)))
        return original(tokenizer, tokens, token_timestamps, language, return_language)

    tokenization_whisper._collate_word_timestamps = spy
    try:
        text, optional = tokenization_whisper._decode_asr(
            theirs, outputs, return_timestamps=return_timestamps, return_language=False, time_precision=0.02
        )
    finally:
        tokenization_whisper._collate_word_timestamps = original
    return text, optional, seen


def transformers_ctc(theirs: Any, chunks: list[dict]) -> tuple[str, list[tuple[str, float, float]]]:
    """AutomaticSpeechRecognitionPipeline.postprocess for type "ctc", return_timestamps="word"."""
    final_items = []
    for c in chunks:
        items = np.array([c["frames"]])
        total_n, left, right = rescale_stride([c["stride"]], 1 / CTC_ALIGN)[0]
        right_n = total_n - right
        final_items.append(items[:, left:right_n])
    items = np.concatenate(final_items, axis=1).squeeze(0)
    text = theirs.decode(items, skip_special_tokens=False)
    offsets = theirs.decode(items, skip_special_tokens=False, output_char_offsets=True)["char_offsets"]
    offsets = theirs._get_word_offsets(offsets, theirs.replace_word_delimiter_char)
    words = [
        (o["word"], o["start_offset"] * CTC_ALIGN / SAMPLE_RATE, o["end_offset"] * CTC_ALIGN / SAMPLE_RATE)
        for o in offsets
    ]
    return text, words


# -- the layout: the pipeline's chunk_iter ---------------------------------------------------------


def chunk_layout(total: int, chunk_len: int, stride_left: int, stride_right: int) -> list[tuple[int, int, int, int]]:
    """(start, length, left, right) in samples, as transformers' chunk_iter cuts `total`."""
    out = []
    step = chunk_len - stride_left - stride_right
    for start in range(0, total, step):
        end = start + chunk_len
        length = min(end, total) - start
        left = 0 if start == 0 else stride_left
        is_last = end >= total
        right = 0 if is_last else stride_right
        if length > left:
            out.append((start, length, left, right))
        if is_last:
            break
    return out


# -- realistic chunk outputs -------------------------------------------------------------------------


@dataclass
class Unit:
    """A stretch of the transcript's ids that no word boundary cuts, and when it was said."""

    ids: list[int]
    start: int  # samples
    end: int


def units_of(tok: Any, ids: list[int]) -> list[list[int]]:
    """The ids cut where words start (a token shared by two words keeps them in one unit; ids
    between words go with the word after them)."""
    words = tok.word_timings(ids, list(range(len(ids))))
    pieces = tok.token_pieces(ids)
    cuts = []
    reach = -1
    for w in words:
        if w.first_token > reach:
            cut = w.first_token
            while cut > reach + 1 and pieces[cut - 1].isspace():
                cut -= 1
            cuts.append(cut)
        reach = max(reach, w.last_token)
    if not cuts or cuts[0] != 0:
        cuts.insert(0, 0)
    bounds = [*cuts, len(ids)]
    return [ids[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def timeline(units: list[list[int]], plan: dict) -> list[Unit]:
    """The units laid out from 0.2 s, with the plan's durations and pauses, until `total`."""
    rng = random.Random(plan["seed"])
    out = []
    at = SAMPLE_RATE // 5
    k = 0
    while units:
        ids = units[k % len(units)]
        length = rng.randrange(SAMPLE_RATE // 8, SAMPLE_RATE * 6 // 10)
        if at + length > plan["total"] - SAMPLE_RATE // 5:
            break
        out.append(Unit(ids, at, at + length))
        at += length + rng.choice([0, 0, rng.randrange(0, SAMPLE_RATE // 4)])
        k += 1
    return out


def heard(line: list[Unit], start: int, end: int, edges: tuple[str, str], rng: random.Random) -> list[Unit]:
    """The units a recogniser writes for the audio [start, end): those inside it, and those its
    edges cut dropped, kept or garbled (another unit's ids) as `edges` says."""
    out = []
    for unit in line:
        if unit.end <= start or unit.start >= end:
            continue
        if unit.start >= start and unit.end <= end:
            out.append(unit)
            continue
        action = edges[0] if unit.start < start else edges[1]
        if action == "keep":
            out.append(unit)
        elif action == "garble":
            other = line[rng.randrange(len(line))]
            out.append(Unit(other.ids, max(unit.start, start), min(unit.end, end)))
    return out


def seq2seq_chunks(tok: Any, text: str, plan: dict, eos: int | None = None) -> list[dict]:
    line = timeline(units_of(tok, tok.encode(text)), plan)
    rng = random.Random(plan["seed"] + 1)
    chunks = []
    for (start, length, left, right), edges in zip(plan["layout"], plan["edges"]):
        units = heard(line, start, start + length, edges, rng)
        ids = [i for u in units for i in u.ids]
        if eos is not None:
            ids.append(eos)
        chunks.append({"ids": ids, "start": start, "length": length, "stride": (left, right)})
    return chunks


def whisper_chunks(
    tok: Any, text: str, plan: dict, timestamps: bool, words: bool = False, segment: tuple[int, int] = (1, 5)
) -> list[dict]:
    """Whisper's output per chunk: <|startoftranscript|><|lang|><|transcribe|>, then either
    <|notimestamps|> and the text, or segments of `segment` units between timestamp ids (consecutive
    pairs between segments, a single one at the end, the last segment sometimes cut off); then
    <|endoftext|>. With `words`, the cross-attention times transformers' generate gives (one per
    id, the end of each id)."""
    # Whisper writes a space before a Latin text's first word, none before a Chinese one
    spoken = " " + text.strip() if text.strip()[:1].isascii() else text.strip()
    line = timeline(units_of(tok, tok.encode(spoken)), plan)
    rng = random.Random(plan["seed"] + 2)
    language = plan.get("language", "en")
    tb = tok.timestamp_begin
    chunks = []
    for (start, length, left, right), edges in zip(plan["layout"], plan["edges"]):
        units = heard(line, start, start + length, edges, rng)
        ids = [tok.sot, tok.language_ids[language], tok.transcribe]
        times = [0.0, 0.0, 0.0]

        def at(sample: int, start: int = start, length: int = length) -> int:
            return max(0, min(round((sample - start) / SAMPLE_RATE / 0.02), round(length / SAMPLE_RATE / 0.02)))

        if not timestamps:
            ids.append(tok.no_timestamps)
            times.append(0.0)
            for u in units:
                _spread(ids, times, u, start)
        else:
            k = 0
            begin = None
            while k < len(units):
                group = units[k : k + rng.randint(*segment)]
                k += len(group)
                if begin is None:
                    begin = at(group[0].start)
                    ids.append(tb + begin)
                    times.append(max(times[-1], begin * 0.02))
                for u in group:
                    _spread(ids, times, u, start)
                if k >= len(units) and rng.random() < 0.3:
                    break  # cut off: no closing timestamp
                end = max(at(group[-1].end), begin)
                ids.append(tb + end)
                times.append(max(times[-1], end * 0.02))
                if k < len(units):
                    begin = max(end, at(units[k].start))
                    ids.append(tb + begin)
                    times.append(max(times[-1], begin * 0.02))
        ids.append(tok.eot)
        times.append(times[-1])
        times = [max(times[: j + 1]) for j in range(len(times))]
        chunks.append(
            {
                "ids": ids,
                "start": start,
                "length": length,
                "stride": (left, right),
                "stride_s": (length / SAMPLE_RATE, left / SAMPLE_RATE, right / SAMPLE_RATE),
                "token_timestamps": times if words else None,
            }
        )
    return chunks


def _spread(ids: list[int], times: list[float], unit: Unit, start: int) -> None:
    """A unit's ids, each ending a share of the unit's time later, on the 0.02 s grid of the
    cross-attention frames Whisper's token timestamps come from."""
    m = len(unit.ids)
    for j, token in enumerate(unit.ids):
        ids.append(token)
        seconds = (unit.start - start + (j + 1) * (unit.end - unit.start) / m) / SAMPLE_RATE
        times.append(round(seconds / 0.02) * 0.02)


def ctc_chunks(tok: Any, text: str, plan: dict) -> list[dict]:
    """CTC argmax frames of the whole audio (each character of a unit held 1-2 frames, blanks
    between, the word delimiter between words), cut into the plan's chunks, with the frames at a
    chunk's edges garbled where the plan says (what a model that hears half a sound emits)."""
    rng = random.Random(plan["seed"] + 3)
    total_frames = plan["total"] // CTC_ALIGN
    frames = [tok.blank_id] * total_frames
    letters = {tok.id_to_piece(i): i for i in range(tok.vocab_size)}
    at = 5
    for word in text.upper().split():
        chars = [letters[c] for c in word if c in letters]
        need = sum(2 for _ in chars) + 2
        if at + need >= total_frames - 5:
            break
        for c in chars:
            for _ in range(rng.randint(1, 2)):
                frames[at] = c
                at += 1
            if rng.random() < 0.4:
                at += 1  # a blank
        frames[at] = tok.word_delimiter_id
        at += 1 + rng.randint(0, 3)
    visible = sorted(set(letters.values()) - tok.special_ids)
    chunks = []
    for (start, length, left, right), edges in zip(plan["layout"], plan["edges"]):
        first = start // CTC_ALIGN
        n = length // CTC_ALIGN
        piece = frames[first : first + n]
        for side, action in zip((0, 1), edges):
            if action == "garble" and piece:
                for _ in range(rng.randint(1, 4)):
                    k = (
                        rng.randrange(0, min(6, len(piece)))
                        if side == 0
                        else len(piece) - 1 - rng.randrange(0, min(6, len(piece)))
                    )
                    piece[k] = rng.choice(visible)
        chunks.append({"frames": piece, "start": start, "length": length, "stride": (length, left, right)})
    return chunks
