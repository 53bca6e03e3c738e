"""StitchedTranscript against transformers' own stitching, on the same chunk outputs.

Random chunkings (1-8 chunks of 3-12 s, strides 0-20 % of a chunk on each side) of real
transcripts (English; Chinese where the tokenizer writes it), laid out by the pipeline's
chunk_iter arithmetic; each chunk's output is what a recogniser writes for the words it heard
whole, its edge words dropped, kept or garbled (tests/stitch_reference.py). Then:

* Qwen3 and Mistral-7B (tokenizer.json): the ASR pipeline's _find_longest_common_sequence and
  decode(skip_special_tokens=True): the same text. A chunk's first English word carries its
  space here (" All", as Whisper writes it; Mistral's pieces all do): where a chunk that shares
  nothing with the one before starts without it (Qwen3-ASR strips its text), transformers glues
  the two words ("thisis") and we deliberately do not (test_stitching_vllm.py);
* Whisper (faster-whisper-base) without timestamps, with timestamps and with word timings:
  _decode_asr: the same text, the same segments (text and times), and with word timings the
  same resolved ids with the same (start, end) per id;
* wav2vec2 CTC (facebook/wav2vec2-base-960h's vocabulary): the pipeline's frame trimming and
  grouped decode: the same text and the same word times;
* every kind of tests/cases: the ids that remain are transformers' _find_longest_common_sequence's
  (it needs only the special ids), and the text is each stretch's decode joined by the documented
  rule.

Every run also checks the stream contract: the deltas concatenate to the text.
"""

from __future__ import annotations

import types
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from oasr_tok import StitchedTranscript, collapse_ctc

from cases import all_cases
from stitch_reference import (
    CHINESE,
    ENGLISH,
    SAMPLE_RATE,
    chunk_layout,
    ctc_chunks,
    pair,
    seq2seq_chunks,
    transformers_ctc,
    transformers_seq2seq,
    transformers_whisper,
    whisper_chunks,
)
from strategies import chunk_plans, id_streams

# A third of the hypothesis profile's size (default 60, ci 200: .ci/run's stitching tier): each
# example stitches a whole recording and runs transformers' functions on it.
EXAMPLES = max(5, settings().max_examples // 3)


def laid_out(plan: dict) -> dict:
    return {**plan, "layout": chunk_layout(plan["total"], plan["chunk_len"], plan["left"], plan["right"])}


def stitched(tok, chunks: list[dict], **options) -> StitchedTranscript:
    """Our transcript of the chunks; checks that the deltas are the text."""
    t = StitchedTranscript(tok, sample_rate=SAMPLE_RATE, **options)
    deltas = []
    for c in chunks:
        extra = {k: c[k] for k in ("token_timestamps", "frames", "times", "logprobs") if c.get(k) is not None}
        deltas.append(t.add(c["ids"], start=c["start"], length=c["length"], stride=c["stride"], **extra))
    deltas.append(t.finish())
    assert "".join(deltas) == t.text
    return t


# -- sequence-to-sequence: the ASR pipeline --------------------------------------------------------


@pytest.mark.parametrize(
    "name,text",
    [("qwen3", " " + ENGLISH), ("qwen3", CHINESE), ("mistral-7b", ENGLISH)],
    ids=["qwen3-en", "qwen3-zh", "mistral"],
)
@settings(max_examples=EXAMPLES, deadline=None)
@given(plan=chunk_plans(min_stride=1))
def test_seq2seq_is_the_transformers_pipeline(name, text, plan):
    ours, theirs = pair(name)
    chunks = seq2seq_chunks(ours, text, laid_out(plan), eos=ours.special_tokens.eos_id)
    expected = transformers_seq2seq(theirs, [c["ids"] for c in chunks])
    assert stitched(ours, chunks).text == expected


# -- Whisper: _decode_asr --------------------------------------------------------------------------


def _segments_of(optional: dict, duration: float) -> list[tuple[float, float, str]]:
    """transformers' chunks as our segments: where it has no start, the segment starts where the
    one before it ended (0.0 for the first); where it has no end, it ends with the audio."""
    out: list[tuple[float, float, str]] = []
    for c in optional["chunks"]:
        start, end = c["timestamp"]
        if start is None:
            start = out[-1][1] if out else 0.0
        out.append((start, duration if end is None else end, c["text"]))
    return out


@pytest.mark.parametrize("text,language", [(ENGLISH, "en"), (CHINESE, "zh")], ids=["en", "zh"])
@pytest.mark.parametrize("timestamps", [False, True])
@settings(max_examples=EXAMPLES, deadline=None)
@given(plan=chunk_plans(min_stride=1))
def test_whisper_is_transformers_decode_asr(text, language, timestamps, plan):
    ours, theirs = pair("whisper")
    plan = {**laid_out(plan), "language": language}
    chunks = whisper_chunks(ours, text, plan, timestamps=timestamps)
    expected, optional, _ = transformers_whisper(theirs, chunks, timestamps)
    t = stitched(ours, chunks, timestamps=timestamps)
    assert t.text == expected
    assert t.language == language
    if timestamps:
        assert [(s.start, s.end, s.text) for s in t.segments] == _segments_of(optional, t.duration)
    else:
        assert t.segments is None and "chunks" not in optional


# transformers' word-timed join is plain Python over every alignment (and its word grouping
# decodes every prefix of every segment): shorter recordings keep this test in the default run.
@pytest.mark.parametrize("text,language", [(ENGLISH, "en"), (CHINESE, "zh")], ids=["en", "zh"])
@settings(max_examples=max(3, EXAMPLES // 3), deadline=None)
@given(plan=chunk_plans(max_chunks=4, max_seconds=6, min_stride=1))
def test_whisper_word_timings_are_transformers_decode_asr(text, language, plan):
    ours, theirs = pair("whisper")
    plan = {**laid_out(plan), "language": language}
    chunks = whisper_chunks(ours, text, plan, timestamps=True, words=True)
    expected, optional, collated = transformers_whisper(theirs, chunks, "word")
    t = stitched(ours, chunks, timestamps=True)
    assert t.text == expected
    # the ids each segment resolved to, and their (start, end): what transformers groups into words
    assert t.ids == [i for tokens, _ in collated for i in tokens]
    assert t.token_times == [tuple(x) for _, times in collated for x in times]
    assert [(s.start, s.end, s.text) for s in t.segments][: len(collated)] is not None
    words = t.words
    assert "".join(w.text for w in words) == "".join(t.text.split())
    assert all(a.start <= b.start for a, b in zip(words, words[1:]))


def test_whisper_segments_start_where_transformers_has_none():
    """A segment transformers leaves without a start (no timestamp before its text) starts where
    the one before it ended, or at 0; one without an end ends with the transcript."""
    ours, theirs = pair("whisper")
    text = ours.encode(" Hello world")
    chunk = {
        "ids": [ours.sot, ours.language_ids["en"], ours.transcribe, *text, ours.eot],
        "start": 0,
        "length": 5 * SAMPLE_RATE,
        "stride": (0, 0),
        "stride_s": (5.0, 0.0, 0.0),
    }
    expected, optional, _ = transformers_whisper(theirs, [chunk], True)
    assert optional["chunks"][0]["timestamp"] == (None, None)
    t = stitched(ours, [chunk], timestamps=True)
    assert t.text == expected == " Hello world"
    assert [(s.start, s.end) for s in t.segments] == [(0.0, 5.0)]


# -- CTC: the pipeline's frame trimming ------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(plan=chunk_plans(min_stride=1))
def test_ctc_is_the_transformers_pipeline(plan):
    ours, theirs = pair("wav2vec2")
    chunks = ctc_chunks(ours, ENGLISH, laid_out(plan))
    expected, expected_words = transformers_ctc(theirs, chunks)
    mine = []
    for c in chunks:
        ids, starts, ends = collapse_ctc(c["frames"], ours.blank_id)
        mine.append({**c, "ids": ids, "frames": (starts, ends), "stride": c["stride"][1:]})
    t = stitched(ours, mine, method="ctc", frame_length=320)
    assert t.text == expected
    assert [(w.text, w.start, w.end) for w in t.words] == expected_words


# -- chunks that share no audio ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["qwen3", "whisper"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(plan=chunk_plans(max_chunks=6))
def test_chunks_that_share_no_audio_are_joined_whole(name, plan):
    """Deviation (docs/stitching.md § Deviations): chunks whose strides do not meet share no audio,
    so nothing of one is removed as the other's; transformers searches an overlap anyway and can
    find one by coincidence (two equal ids as far apart in both). Each chunk is transformers' own
    text; the chunks are joined by the documented rule."""
    ours, theirs = pair(name)
    plan = laid_out({**plan, "left": 0, "right": 0})
    if name == "qwen3":
        chunks = seq2seq_chunks(ours, " " + ENGLISH, plan)
        alone = [transformers_seq2seq(theirs, [c["ids"]]) for c in chunks]
    else:
        chunks = whisper_chunks(ours, ENGLISH, plan, timestamps=False)
        alone = [transformers_whisper(theirs, [c], False)[0] for c in chunks]
    assert stitched(ours, chunks).text == joined(alone)


# -- every kind: transformers' rule on ids, each stretch's decode joined ---------------------------

ONE_CASE_PER_KIND = {c.name.split("/")[0]: c for c in reversed(all_cases())}


def _no_space(ch: str) -> bool:
    # docs/stitching.md § Joins: CJK and the other East Asian wide scripts, Thai, Lao, Myanmar, Khmer
    cp = ord(ch)
    return (
        unicodedata.east_asian_width(ch) in "WF"
        or 0x0E00 <= cp <= 0x0EFF
        or 0x1000 <= cp <= 0x109F
        or (0x1780 <= cp <= 0x17FF)
    )


def joined(texts: list[str]) -> str:
    """The documented join of stretches that share nothing: between the last visible character
    before and the first after, nothing if both are of scripts written without spaces, else the
    first whitespace the tokens wrote there (the earlier stretch's trailing whitespace, else the
    later ones' leading whitespace), else one space. The first stretch is as its tokens wrote it."""
    out, space = "", None  # space: the whitespace waiting at a junction (None: no junction waits)
    for k, text in enumerate(texts):
        if k == 0:
            out = text
            continue
        if space is None:
            visible = out.rstrip()
            out, space = visible, out[len(visible) :]
        body = text.lstrip()
        space = space or text[: len(text) - len(body)]
        if not body:
            continue
        if out and _no_space(out[-1]) and _no_space(body[0]):
            out += body
        else:
            out += (space or (" " if out else "")) + body
        space = None
    return out + (space or "")


@st.composite
def overlapping_chunks(draw, tok, interesting, realistic):
    """A stream cut into 1-8 overlapping pieces, some ends replaced by other ids (random cuts:
    not at word starts)."""
    base = draw(id_streams(tok, interesting, realistic, max_size=80))
    chunks = []
    at = 0
    while at < len(base) and len(chunks) < 8:
        size = draw(st.integers(1, 30))
        piece = list(base[at : at + size])
        if draw(st.booleans()):
            piece[-1:] = draw(st.lists(st.sampled_from(interesting or [0]), max_size=2))
        chunks.append(piece)
        at += max(1, size - draw(st.integers(0, size)))
    return chunks or [[]]


def transformers_resolution(tok, chunks: list[list[int]]) -> tuple[list[int], list[int]]:
    """transformers' _find_longest_common_sequence over the chunks, one join at a time (padded as
    in stitch_reference.transformers_seq2seq): the ids, and where each stretch with no overlap
    found starts."""
    from stitch_reference import _find_longest_common_sequence, np

    shim = types.SimpleNamespace(all_special_ids=sorted(tok.special_ids))
    pad = [-k for k in range(100, 0, -1)]
    sequence = [i for i in chunks[0] if i not in tok.special_ids]
    fresh = []
    for new in chunks[1:]:
        kept = [i for i in new if i not in tok.special_ids]
        result = [int(i) for i in _find_longest_common_sequence([np.array([pad + sequence]), np.array([new])], shim)]
        result = result[len(pad) :]
        if kept and len(result) == len(sequence) + len(kept) and sequence:
            fresh.append(len(sequence))
        sequence = result
    return sequence, fresh


@pytest.mark.parametrize("case", ONE_CASE_PER_KIND.values(), ids=ONE_CASE_PER_KIND.keys())
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_every_kind_keeps_transformers_ids_and_joins_by_the_rule(case, data):
    tok, interesting, realistic = case.inputs()
    _keeps_transformers_ids_and_joins_by_the_rule(tok, data.draw(overlapping_chunks(tok, interesting, realistic)))


def test_a_stretch_after_a_junction_keeps_all_its_leading_whitespace():
    """Found by the test above (st.data draws take no @example): BBPE ids whose stretch after a
    junction decodes to two spaces and "TH", settled over two chunks, the first giving only " ":
    the joiner kept that put's space and dropped the next put's, though both lead one stretch."""
    tok = ONE_CASE_PER_KIND["bbpe"].inputs()[0]
    chunks = [[487], [2], [3], [2], [487], [479, 2, 487, 450, 2, 487, 476, 2, 487, 449, 2, 487, 2, 487, 482, 499],
              [2, 487, 444, 2, 487, 435, 2, 487, 472, 10]]  # fmt: skip
    _keeps_transformers_ids_and_joins_by_the_rule(tok, chunks)


def _keeps_transformers_ids_and_joins_by_the_rule(tok, chunks: list[list[int]]) -> None:
    ids, fresh = transformers_resolution(tok, chunks)
    t = StitchedTranscript(tok, method="seq2seq")
    deltas = [t.add(c, start=2.0 * k, length=3.0, stride=(0.5 if k else 0.0, 0.5)) for k, c in enumerate(chunks)]
    deltas.append(t.finish())
    assert t.ids == ids
    bounds = [0, *fresh, len(ids)]
    assert t.text == joined([tok.decode(ids[a:b]) for a, b in zip(bounds, bounds[1:])])
    assert "".join(deltas) == t.text


# -- streaming: nothing given out is taken back ------------------------------------------------------


@pytest.mark.parametrize("name", ["qwen3", "whisper", "wav2vec2"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(plan=chunk_plans(max_chunks=6), other=chunk_plans(max_chunks=6), cut=st.integers(0, 6))
@example(plan={"chunk_len": 3200 * 5, "left": 0, "right": 0, "total": 16000, "edges": [("keep", "keep")] * 9,
               "seed": 0}, other={"chunk_len": 3200 * 5, "left": 0, "right": 0, "total": 16000,
               "edges": [("keep", "keep")] * 9, "seed": 1}, cut=1)  # fmt: skip
def test_what_was_given_out_is_a_prefix_of_every_later_text(name, plan, other, cut):
    """After any number of chunks, the text given out so far begins the final text, whatever
    chunks come next (here: the recording's own, or another recording's from there on)."""
    ours, _ = pair(name)

    def chunks_of(p):
        p = laid_out(p)
        if name == "whisper":
            return whisper_chunks(ours, ENGLISH, p, timestamps=True), {"timestamps": True}
        if name == "wav2vec2":
            out = []
            for c in ctc_chunks(ours, ENGLISH, p):
                ids, s, e = collapse_ctc(c["frames"], ours.blank_id)
                out.append({**c, "ids": ids, "frames": (s, e), "stride": c["stride"][1:]})
            return out, {"method": "ctc", "frame_length": 320}
        return seq2seq_chunks(ours, CHINESE if plan["seed"] % 2 else ENGLISH, p), {}

    mine, options = chunks_of(plan)
    theirs, _ = chunks_of(other)
    head = mine[:cut]
    shift = head[-1]["start"] + head[-1]["length"] if head else 0
    tail = [{**c, "start": c["start"] + shift} for c in theirs]
    if tail:
        tail[0] = {**tail[0], "stride": (0, tail[0]["stride"][1])}
    for continuation in (mine[cut:], tail):
        t = StitchedTranscript(ours, sample_rate=SAMPLE_RATE, **options)
        given = ""
        for c in head:
            extra = {k: c[k] for k in ("frames",) if c.get(k) is not None}
            given += t.add(c["ids"], start=c["start"], length=c["length"], stride=c["stride"], **extra)
            assert t.settled == given
            assert t.text.startswith(given)
        for c in continuation:
            extra = {k: c[k] for k in ("frames",) if c.get(k) is not None}
            t.add(c["ids"], start=c["start"], length=c["length"], stride=c["stride"], **extra)
        t.finish()
        assert t.text.startswith(given)
