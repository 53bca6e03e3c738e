"""The "audio" envelope: text and audio-codec ids in one generation, on two layouts made from real
files (tests/audio_files.py): Step-Audio 2's (<audio_0> and every id after it, on Qwen3's
tokenizer.json: the huggingface kind) and Kimi-Audio's (config.json's kimia_token_offset and
kimia_audio_output_vocab: ids past the text vocabulary, on Llama 3's ranks: the tiktoken kind);
and a range given by the caller, with a gap between the vocabulary and the audio ids.

Random interleavings, fed in every kind of split and in batches: the text deltas concatenate to
the kind's decode of the text ids alone (so no audio id ever reaches the text), the AudioRuns
are the audio ids in order, each run maximal, at its generated index, and at the text offset the
plain stream of the text ids before it had reached; forks and pickles go on identically; an id
that is neither text nor audio is refused by InvalidIdError before any stream moves."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import InvalidIdError, StreamStateError
from oasr_tok.errors import UnknownEnvelopeError
from oasr_tok.outputs.envelopes import AudioIds, AudioRun

from audio_files import AUDIO_CODES, AUDIO_OFFSET, STEP_AUDIO_CODES, kimi_tokenizer, step_audio_folder
from cases import MULTISCRIPT
from cases.tiktoken import meta_file
from strategies import interleaved, splits


@pytest.fixture(scope="module")
def step_audio(tmp_path_factory):
    return oasr_tok.load(step_audio_folder(tmp_path_factory.mktemp("audio")))


@pytest.fixture(scope="module")
def kimi(tmp_path_factory):
    return kimi_tokenizer(tmp_path_factory.mktemp("audio"))


@pytest.fixture(scope="module")
def gapped():
    """Llama 3 with audio ids the caller gives, 1,744 ids past its vocabulary (a gap between)."""
    return oasr_tok.load(meta_file("llama3")), AudioIds(130_000, 140_000)


def _text_pool(tok) -> list[int]:
    """Text ids as a model writes them (several scripts, emoji: characters split across tokens),
    single byte tokens that complete or break characters, and special ids."""
    pool = sorted({i for text in MULTISCRIPT for i in tok.encode(text)})
    pool += tok.encode("中😀é")[:3]
    pool += sorted(tok.special_ids)[:6]
    return pool


def _layouts(step_audio, kimi, gapped):
    tok, given_layout = gapped
    return {
        "step_audio_2": (step_audio, "audio"),
        "kimi_audio": (kimi, "audio"),
        "given": (tok, given_layout),
    }


def _span(tok, envelope) -> tuple[int, int]:
    layout = envelope if isinstance(envelope, AudioIds) else tok.audio_ids if hasattr(tok, "audio_ids") else None
    if layout is None:
        layout = AudioIds(tok.piece_to_id("<audio_0>"))
    return layout.start, layout.limit(tok.vocab_size)


def _merged(runs: list[AudioRun]) -> list[AudioRun]:
    """Pieces handed out by successive takes, joined back into whole runs."""
    out: list[AudioRun] = []
    for run in runs:
        last = out[-1] if out else None
        if last is not None and run.token_index == last.token_index + len(last.ids):
            assert run.char_offset == last.char_offset
            out[-1] = AudioRun(last.ids + run.ids, last.token_index, last.char_offset)
        else:
            out.append(run)
    return out


def _expected(tok, ids: list[int], span: tuple[int, int]) -> tuple[str, list[AudioRun]]:
    """The text (the kind's decode of the text ids) and the whole audio runs, each at the offset
    a plain stream of the text ids before it had reached."""
    start, end = span
    is_audio = [start <= i < end for i in ids]
    text_ids = [i for i, audio in zip(ids, is_audio) if not audio]
    runs: list[AudioRun] = []
    k = 0
    while k < len(ids):
        if not is_audio[k]:
            k += 1
            continue
        first = k
        while k < len(ids) and is_audio[k]:
            k += 1
        before = [i for i, audio in zip(ids[:first], is_audio[:first]) if not audio]
        reached = tok.new_stream().feed(before)
        runs.append(AudioRun(tuple(ids[first:k]), first, len(reached)))
    return tok.decode(text_ids), runs


# -- where the layouts come from -------------------------------------------------------------------


def test_the_layouts_are_declared_by_the_checkpoints(step_audio, kimi):
    assert kimi.audio_ids == AudioIds(AUDIO_OFFSET, AUDIO_OFFSET + AUDIO_CODES)  # config.json
    folder = kimi.spec.files["tiktoken"].rsplit("/", 1)[0]
    assert "kimia_token_offset" in dict(oasr_tok.describe(folder).evidence)["audio_ids"]
    first = step_audio.piece_to_id("<audio_0>")
    assert first + STEP_AUDIO_CODES == step_audio.vocab_size  # <audio_6561> is the last id
    stream = step_audio.new_stream(envelope="audio")
    assert stream.feed([first, first + 1]) == "" and stream.take_audio() == [AudioRun((first, first + 1), 0, 0)]


def test_a_tokenizer_that_declares_no_audio_ids_says_what_to_give():
    tok = oasr_tok.load(meta_file("llama3"))
    with pytest.raises(UnknownEnvelopeError, match="AudioIds"):
        tok.new_stream(envelope="audio")
    with pytest.raises(UnknownEnvelopeError, match="AudioIds"):
        tok.decode_envelope([1, 2], "audio")
    with pytest.raises(StreamStateError, match="audio"):
        tok.new_stream().take_audio()
    with pytest.raises(ValueError, match="past start"):
        AudioIds(10, 5)
    # a layout far past the vocabulary is refused before a table of id flags is sized from it
    with pytest.raises(ValueError, match="audio ids"):
        AudioIds(0, 10**9)
    with pytest.raises(StreamStateError, match="past the vocabulary"):
        tok.new_stream(envelope=AudioIds(10**12, 10**12 + 5))


# -- the demux, against the kind's own decode ------------------------------------------------------


@settings(max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize("layout", ["step_audio_2", "kimi_audio", "given"])
def test_any_split_gives_the_text_of_the_text_ids_and_the_audio_runs(step_audio, kimi, gapped, layout, data):
    tok, envelope = _layouts(step_audio, kimi, gapped)[layout]
    span = _span(tok, envelope)
    ids = data.draw(interleaved(_text_pool(tok), span))
    text, runs = _expected(tok, ids, span)
    assert tok.decode_envelope(ids, envelope).text == text
    assert list(tok.decode_envelope(ids, envelope).audio) == runs
    stream = tok.new_stream(envelope=envelope)
    deltas, taken = [], []
    for chunk in data.draw(splits(ids)):
        deltas.append(stream.feed(chunk))
        if data.draw(st.booleans()):
            taken += stream.take_audio()
    deltas.append(stream.feed([], final=True))
    taken += stream.take_audio()
    assert "".join(deltas) == text
    assert _merged(taken) == runs
    # every delta is a prefix step of the text: nothing of an audio id, nothing taken back
    assert text.startswith("".join(deltas[:-1]))


@settings(max_examples=25)
@given(data=st.data())
def test_a_batch_is_each_streams_own_feed(step_audio, kimi, gapped, data):
    """Audio streams of every layout and plain streams in one decode_incremental_batch, one id
    per stream per step (a list of rows, or a 1-D array): delta for delta, stream for stream,
    take for take what each stream's own feed gives."""
    layouts = _layouts(step_audio, kimi, gapped)
    tok, envelope = layouts[data.draw(st.sampled_from(sorted(layouts)))]
    span = _span(tok, envelope)
    n = data.draw(st.integers(1, 4))
    rows = [data.draw(interleaved(_text_pool(tok), span, max_size=20)) for _ in range(n)]
    plain = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    # a plain stream gets text ids only (an audio id past its vocabulary is its error)
    rows = [[i for i in row if not span[0] <= i < span[1]] if p else row for row, p in zip(rows, plain)]
    make = lambda p: tok.new_stream() if p else tok.new_stream(envelope=envelope)
    batch, alone = [make(p) for p in plain], [make(p) for p in plain]
    steps = max(map(len, rows), default=0)
    for step in range(steps + 1):
        final = step == steps
        chunk = [row[step : step + 1] for row in rows]
        if not final and all(chunk) and data.draw(st.booleans()):
            got = tok.decode_incremental_batch(np.array([c[0] for c in chunk], dtype=np.int64), batch)
        else:
            got = tok.decode_incremental_batch(chunk, batch, final)
        assert got == [s.feed(c, final) for s, c in zip(alone, chunk)]
        assert batch == alone
        for b, a, p in zip(batch, alone, plain):
            if not p:
                assert b.take_audio() == a.take_audio()


@settings(max_examples=20)
@given(data=st.data())
@pytest.mark.parametrize("layout", ["step_audio_2", "kimi_audio"])
def test_forks_and_pickles_go_on_identically(step_audio, kimi, gapped, layout, data):
    tok, envelope = _layouts(step_audio, kimi, gapped)[layout]
    span = _span(tok, envelope)
    ids = data.draw(interleaved(_text_pool(tok), span))
    cut = data.draw(st.integers(0, len(ids)))
    stream = tok.new_stream(envelope=envelope)
    head = stream.feed(ids[:cut])
    taken = stream.take_audio() if data.draw(st.booleans()) else []
    fork, moved = stream.fork(), pickle.loads(pickle.dumps(stream))
    assert fork == stream == moved
    tails = [s.feed(ids[cut:], final=True) for s in (stream, fork, moved)]
    assert tails[0] == tails[1] == tails[2]
    rest = [s.take_audio() for s in (stream, fork, moved)]
    assert rest[0] == rest[1] == rest[2]
    text, runs = _expected(tok, ids, span)
    assert head + tails[0] == text and _merged(taken + rest[0]) == runs


def test_a_prompt_primes_with_its_text_only(kimi):
    """Audio ids in the prompt are not its text: the prompt's last text bytes (a character it
    began) join the generated ones across them."""
    first = kimi.audio_ids.start
    byte = {kimi.id_to_bytes(i): i for i in range(kimi.num_ranks) if len(kimi.id_to_bytes(i)) == 1}
    e4, b8, ad = (byte[bytes([b])] for b in "中".encode())
    prompt = [*kimi.encode("Say it: "), first, e4, first + 1, b8]
    generated = [first + 5, ad, *kimi.encode(" ok")]
    stream = kimi.new_stream(prefill=prompt, envelope="audio")
    out = stream.feed(generated) + stream.feed([], final=True)
    assert out == "中 ok"
    assert kimi.decode([i for i in prompt + generated if i < first]) == "Say it: " + out
    assert stream.take_audio() == [AudioRun((first + 5,), 0, 0)]


# -- ids that are neither text nor audio -------------------------------------------------------------


def test_ids_outside_both_are_refused_and_nothing_moves(step_audio, kimi, gapped):
    tok, layout = gapped
    for tokenizer, envelope, bad in (
        (tok, layout, 129_000),  # in the gap between the vocabulary and the audio ids
        (tok, layout, 140_000),  # past the audio ids
        (kimi, "audio", AUDIO_OFFSET + AUDIO_CODES),
        (step_audio, "audio", step_audio.vocab_size),
        (tok, layout, -1),
    ):
        ids = [*tokenizer.encode("hi 中"), 5]
        stream = tokenizer.new_stream(envelope=envelope)
        stream.feed(ids[:2])
        before = stream.fork()
        with pytest.raises(InvalidIdError, match=str(bad)):
            stream.feed([ids[2], bad])
        assert stream == before
        with pytest.raises(InvalidIdError, match=str(bad)):
            tokenizer.decode_envelope([ids[0], bad], envelope)
        other = tokenizer.new_stream(envelope=envelope)
        with pytest.raises(InvalidIdError, match=f"stream 1: .*{bad}"):
            tokenizer.decode_incremental_batch([[ids[2]], [bad]], [stream, other])
        assert stream == before and other == tokenizer.new_stream(envelope=envelope)
        assert stream.feed(ids[2:], final=True) + before.feed([], final=True) != None  # noqa: E711 (still usable)


def test_a_plain_stream_beside_an_audio_one_keeps_its_own_range(gapped):
    tok, layout = gapped
    audio, plain = tok.new_stream(envelope=layout), tok.new_stream()
    assert tok.decode_incremental_batch([[layout.start], [9906]], [audio, plain]) == ["", "Hello"]
    with pytest.raises(InvalidIdError, match="stream 1"):
        tok.decode_incremental_batch([[9906], [layout.start]], [audio, plain])
    assert audio.take_audio() == [AudioRun((layout.start,), 0, 0)]
