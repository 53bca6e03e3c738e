"""Envelopes: decode_envelope and new_stream(envelope=...) on outputs written the way each model
writes them, against each model's own post-processing:

* qwen3_asr — the qwen-asr package's parse_asr_output and sensevoice — funasr's
  rich_transcription_postprocess: expected values made by fixtures/make_envelope_expected.py
  (which loads both from the published packages, commit/version in the file); the outputs are
  encoded with the real Qwen3 tokenizer.json, so tags arrive split over several tokens;
* whisper — openai-whisper's control tokens (sot, language, task, timestamps) on the real
  faster-whisper-base tokenizer.json, the language/task ids from openai-whisper's own layout
  (tests/whisper_transcribe_reference.py);
* canary — NeMo's Canary and Canary 2 prompt tokens (tests/nemo_reference.py, NeMo's own code
  ported) on the project's canary.nemo;
* voxtral — mistral-common's transcription request layout (lang:xx, [TRANSCRIBE]) on the
  demo's Voxtral-layout tekken.json (mistral-common's own ranks and audio specials), the text
  decoded by mistral-common.

Every stream is cut at every token boundary: its deltas concatenate to decode_envelope's text,
no delta holds a character of the envelope, and the words come out as soon as the envelope
allows (the cumulative output is the parse of what the kind's stream has settled so far).
"""

from __future__ import annotations

import json
import re
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import StreamStateError, TokenizerSpec, Transcript, UnknownEnvelopeError, build_tokenizer
from oasr_tok.outputs.envelopes import EnvelopeParser, envelope_formats, register_envelope

from paths import ROOT, own, shared


@cache
def expected() -> dict:
    with open(own("envelopes/expected.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def qwen():
    return build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": shared("huggingface/qwen3/tokenizer.json")}))


def stream(tok, ids, envelope, cut=None, **options):
    """The deltas of a new_stream(envelope=...) fed one id at a time (or in two calls at `cut`),
    the flush last; and the state."""
    state = tok.new_stream(envelope=envelope, **options)
    if cut is None:
        deltas = [tok.decode_incremental([i], state) for i in ids]
    else:
        deltas = [tok.decode_incremental(ids[:cut], state), tok.decode_incremental(ids[cut:], state)]
    deltas.append(tok.decode_incremental([], state, final=True))
    return deltas, state


def settled_prefixes(tok, ids):
    """What the kind's own stream has settled after each id (its held tail not yet text)."""
    state: dict = {}
    out, text = [], ""
    for i in ids:
        text += tok.decode_incremental([i], state)
        out.append(text)
    return out


# -- qwen3_asr ------------------------------------------------------------------------------------


QWEN_DEVIATIONS = {"Hi <asr_text>there"}


@pytest.mark.parametrize(
    "case", [c for c in expected()["qwen3_asr"] if c["raw"] not in QWEN_DEVIATIONS], ids=lambda c: repr(c["raw"][:30])
)
def test_qwen3_asr_is_parse_asr_output(qwen, case):
    language, text = case["language_text"]
    got = qwen.decode_envelope(qwen.encode(case["raw"]), "qwen3_asr")
    assert got.text == text
    assert (got.language or "") == language
    assert got.no_speech == (
        "language none" in case["raw"].split("<asr_text>")[0].lower() and "<asr_text>" in case["raw"]
    )
    assert got.parsed == ("<asr_text>" in case["raw"])


@pytest.mark.xfail(
    strict=True,
    reason="documented deviation (docs/envelopes.md § qwen3_asr): output that does not start as the header "
    "('language ...' or '<asr_text>') is text at once; parse_asr_output would cut it at a later tag",
)
def test_qwen3_asr_a_tag_after_plain_text_is_text(qwen):
    case = next(c for c in expected()["qwen3_asr"] if c["raw"] in QWEN_DEVIATIONS)
    assert qwen.decode_envelope(qwen.encode(case["raw"]), "qwen3_asr").text == case["language_text"][1]


def _qwen_partial(settled: str) -> str:
    """What may have been given out once the kind settled `settled`: the words as far as the
    envelope allows (the header complete, or the output not a header), trailing space held."""
    start = settled.lstrip()[:10]
    if not (
        "language ".startswith(start.lower()) or start.lower().startswith("language") or "<asr_text>".startswith(start)
    ):
        return settled.strip()  # not a header: the words from the first character
    if "<asr_text>" in settled:
        return settled.split("<asr_text>", 1)[1].strip()
    return ""


@pytest.mark.parametrize("case", expected()["qwen3_asr"], ids=lambda c: repr(c["raw"][:30]))
def test_qwen3_asr_streams_the_words_as_soon_as_the_header_allows(qwen, case):
    ids = qwen.encode(case["raw"])
    whole = qwen.decode_envelope(ids, "qwen3_asr")
    deltas, state = stream(qwen, ids, "qwen3_asr")
    assert "".join(deltas) == whole.text
    assert all("<asr_text>" not in d for d in deltas)
    out = ""
    for delta, settled in zip(deltas, settled_prefixes(qwen, ids)):
        out += delta
        assert out == _qwen_partial(settled), settled
    for cut in range(len(ids) + 1):
        assert "".join(stream(qwen, ids, "qwen3_asr", cut)[0]) == whole.text
    if whole.language:
        assert state["envelope"]["language"] == whole.language


def test_qwen3_asr_language_is_known_when_the_tag_arrives(qwen):
    ids = qwen.encode("language English<asr_text>hello there")
    state = qwen.new_stream(envelope="qwen3_asr")
    seen = []
    for i in ids:
        qwen.decode_incremental([i], state)
        seen.append(state["envelope"].get("language"))
    tag_done = next(k for k, p in enumerate(settled_prefixes(qwen, ids)) if "<asr_text>" in p)
    assert seen[tag_done] == "English" and seen[tag_done - 1] is None


# -- sensevoice -----------------------------------------------------------------------------------

_TAG = re.compile(r"<\|(zh|en|yue|ja|ko|nospeech|HAPPY|SAD|ANGRY|NEUTRAL|FEARFUL|DISGUSTED|SURPRISED|EMO_UNKNOWN|"
                  r"BGM|Speech|Applause|Laughter|Cry|Sneeze|Breath|Cough|Sing|Speech_Noise|GBG|Event_UNK|withitn|woitn)\|>")  # fmt: skip


@pytest.mark.parametrize("case", expected()["sensevoice"], ids=lambda c: repr(c["raw"][:40]))
def test_sensevoice_rich_text_is_funasrs_and_text_is_the_words(qwen, case):
    ids = qwen.encode(case["raw"])
    got = qwen.decode_envelope(ids, "sensevoice")
    assert got.rich == case["rich"]
    # the words alone: SenseVoice's tags taken out, the rest as written, stripped
    assert got.text == _TAG.sub("", case["raw"]).strip()
    tags = _TAG.findall(case["raw"])
    assert list(got.tags) == [f"<|{t}|>" for t in tags]
    if tags:
        languages = [t for t in tags if t in ("zh", "en", "yue", "ja", "ko")]
        assert got.language == (languages[0] if languages else None)
    deltas, _ = stream(qwen, ids, "sensevoice")
    assert "".join(deltas) == got.text
    assert not any("<|" in d and _TAG.search(d) for d in deltas)
    for cut in range(len(ids) + 1):
        assert "".join(stream(qwen, ids, "sensevoice", cut)[0]) == got.text


def test_sensevoice_fields(qwen):
    got = qwen.decode_envelope(qwen.encode("<|ja|><|HAPPY|><|BGM|><|withitn|>東京へようこそ"), "sensevoice")
    assert (got.language, got.emotion, got.event, got.itn, got.text) == ("ja", "HAPPY", "BGM", True, "東京へようこそ")
    silent = qwen.decode_envelope(qwen.encode("<|nospeech|><|Event_UNK|><|woitn|>"), "sensevoice")
    assert silent.no_speech and silent.language is None and silent.text == ""
    untagged = qwen.decode_envelope(qwen.encode("no tags at all"), "sensevoice")
    assert untagged.text == "no tags at all" and not untagged.parsed and "no SenseVoice tags" in untagged.problem
    cut = qwen.decode_envelope(qwen.encode("<|en|><|NEUT"), "sensevoice")
    assert cut.text == "<|NEUT" and not cut.parsed and "inside a tag" in cut.problem


def test_sensevoice_words_wait_only_for_a_possible_tag(qwen):
    ids = qwen.encode("<|en|><|NEUTRAL|><|Speech|><|woitn|>hello world, how are you")
    out = ""
    deltas, _ = stream(qwen, ids, "sensevoice")
    for delta, settled in zip(deltas, settled_prefixes(qwen, ids)):
        out += delta
        words = _TAG.sub("", settled)
        cut = words.rfind("<")
        if cut >= 0 and len(words) - cut < 16:  # a possible tag still arriving
            words = words[:cut]
        assert out == words.strip() or out == words.lstrip().rstrip(), settled


# -- whisper --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def whisper():
    return build_tokenizer(
        TokenizerSpec("whisper", {"tokenizer": shared("whisper/faster-whisper-base/tokenizer.json")})
    )


@pytest.mark.parametrize("language, task", [("en", "transcribe"), ("de", "translate"), ("zh", "transcribe")])
def test_whisper_envelope(whisper, language, task):
    ts = whisper.timestamp_begin
    sot = [whisper.sot, whisper.language_ids[language], whisper.piece_to_id(f"<|{task}|>")]
    body = [ts, *whisper.encode(" Hello world."), ts + 50, ts + 50, *whisper.encode(" 今天 🎉"), ts + 90]
    ids = [*sot, *body, whisper.eot]
    got = whisper.decode_envelope(ids, "whisper")
    assert got.text == whisper.decode(ids) == " Hello world. 今天 🎉"
    assert (got.language, got.task, got.timestamps) == (language, task, (0.0, 1.0, 1.0, 1.8))
    assert got.parsed and "<|startoftranscript|>" in got.tags
    for cut in range(len(ids) + 1):
        deltas, state = stream(whisper, ids, "whisper", cut)
        assert "".join(deltas) == got.text
        assert state["envelope"]["language"] == language and state["envelope"]["timestamps"] == [0.0, 1.0, 1.0, 1.8]


def test_whisper_stream_after_a_prompt_knows_the_language(whisper):
    prompt = [
        whisper.sot,
        whisper.language_ids["fr"],
        whisper.piece_to_id("<|transcribe|>"),
        whisper.piece_to_id("<|notimestamps|>"),
    ]
    state = whisper.new_stream(prefill=prompt, envelope="whisper")
    assert state["envelope"]["language"] == "fr" and state["envelope"]["task"] == "transcribe"
    assert whisper.decode_incremental(whisper.encode(" Bonjour"), state) == " Bonjour"
    nospeech = whisper.piece_to_id("<|nospeech|>") if "<|nospeech|>" in whisper.vocabulary else None
    if nospeech is not None:
        assert whisper.decode_envelope([whisper.sot, nospeech], "whisper").no_speech


# -- canary ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def canary():
    return oasr_tok.load(own("nemo/canary.nemo"))


def test_canary_v1_prompt_and_output(canary):
    prompt = canary.canary_prompt("en", "es", version=1)  # checked against NeMo in test_nemo_archive.py
    text = canary.encode_language("hola mundo", "es")
    ids = [*prompt, *text, canary.canary_tokens["<|endoftext|>"]]
    got = canary.decode_envelope(ids, "canary")
    assert (got.language, got.target_language, got.task) == ("en", "es", "translate")
    assert got.text == canary.decode(ids) and "hola" in got.text
    assert "<|startoftranscript|>" in got.tags and "<|pnc|>" in got.tags


def test_canary2_prompt_and_timestamps(canary):
    prompt = canary.canary_prompt("en", "en", timestamps=True, itn=True)
    stamp = lambda n: canary.canary_tokens[f"<|{n}|>"]
    body = [stamp(4), *canary.encode_language("hello", "en"), stamp(9)]
    ids = [*prompt, *body]
    got = canary.decode_envelope(ids, "canary")
    assert (got.language, got.target_language, got.task, got.itn, got.emotion) == (
        "en",
        "en",
        "transcribe",
        True,
        "undefined",
    )
    assert got.timestamps == (4, 9)
    for cut in range(len(ids) + 1):
        assert "".join(stream(canary, ids, "canary", cut)[0]) == got.text == canary.decode(ids)


# -- voxtral --------------------------------------------------------------------------------------


VOXTRAL = ROOT / "oasr_tok" / "data" / "demo" / "tekken" / "tekken.json"  # Voxtral's audio specials


@pytest.fixture(scope="module")
def voxtral():
    return build_tokenizer(TokenizerSpec("tekken", {"tekken": str(VOXTRAL)}))


def _special(tok, name):
    return next(i for i in tok.special_ids if tok.id_to_piece(i) == name)


@pytest.mark.parametrize("language", ["en", "fr", None])
def test_voxtral_transcription_request(voxtral, language):
    """The layout of mistral-common's _encode_instruct_transcription: bos, the user message
    with the audio, lang:xx (no space) when the request has a language, [TRANSCRIBE]."""
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    mc = Tekkenizer.from_file(str(VOXTRAL))
    prompt = [voxtral.special_tokens.bos_id, _special(voxtral, "[INST]")]
    prompt += [_special(voxtral, "[BEGIN_AUDIO]"), *[_special(voxtral, "[AUDIO]")] * 3, _special(voxtral, "[/INST]")]
    if language is not None:
        prompt += mc.encode(f"lang:{language}", bos=False, eos=False)
    prompt.append(_special(voxtral, "[TRANSCRIBE]"))
    answer = mc.encode(" Bonjour à tous, 会议开始了 🎉", bos=False, eos=True)
    ids = prompt + answer
    got = voxtral.decode_envelope(ids, "voxtral")
    assert got.text == mc.decode(answer, special_token_policy=SpecialTokenPolicy.IGNORE)
    assert got.language == language and got.task == "transcribe" and got.parsed
    for cut in range(0, len(ids) + 1, 3):
        assert "".join(stream(voxtral, ids, "voxtral", cut)[0]) == got.text
    # what a server streams: the answer after the prompt, the prompt given as prefill
    deltas, state = [], voxtral.new_stream(prefill=prompt, envelope="voxtral")
    deltas = [voxtral.decode_incremental([i], state) for i in answer] + [
        voxtral.decode_incremental([], state, final=True)
    ]
    assert "".join(deltas) == got.text and state["envelope"]["task"] == "transcribe"


def test_voxtral_prompt_without_transcribe_gives_its_text_and_says_so(voxtral):
    ids = [_special(voxtral, "[INST]"), _special(voxtral, "[/INST]"), *voxtral.encode("lang:en hello")]
    got = voxtral.decode_envelope(ids, "voxtral")
    assert got.text == "lang:en hello" and not got.parsed and "[TRANSCRIBE]" in got.problem


# -- the registry and errors ------------------------------------------------------------------------

#: The formats that read text and special ids only ("audio" needs the tokenizer's audio ids:
#: tests/outputs/test_audio_envelope.py runs it on tokenizers that have them)
TEXT_FORMATS = [name for name in envelope_formats() if name != "audio"]


def test_the_formats_and_an_unknown_one(qwen):
    assert envelope_formats() == ["audio", "canary", "qwen3_asr", "sensevoice", "voxtral", "whisper"]
    with pytest.raises(UnknownEnvelopeError, match="qwen3_asr"):
        qwen.decode_envelope([1], "qwen")
    with pytest.raises(UnknownEnvelopeError):
        qwen.new_stream(envelope=3)
    assert isinstance(qwen.decode_envelope([], "whisper"), Transcript)


def test_a_registered_format_streams_like_a_built_in(qwen):
    class Upper(EnvelopeParser):
        def text(self, delta: str, final: bool) -> str:
            return delta.upper()

    register_envelope("upper", Upper)
    try:
        ids = qwen.encode("hello world")
        assert qwen.decode_envelope(ids, "upper").text == "HELLO WORLD"
        assert "".join(stream(qwen, ids, "upper")[0]) == "HELLO WORLD"
        with pytest.raises(UnknownEnvelopeError, match="exists"):
            register_envelope("upper", Upper)
    finally:
        from oasr_tok.outputs import envelopes

        envelopes._FORMATS.pop("upper")


def test_an_envelope_stream_with_stop_strings_and_a_bad_id(qwen):
    ids = qwen.encode("language English<asr_text>one two. STOP three")
    state = qwen.new_stream(envelope="qwen3_asr", stop=["STOP"])
    out = ""
    for i in ids:
        out += qwen.decode_incremental([i], state)
        if state["stop"] is not None:
            break
    assert out == "one two. " and state["stop"].text == "STOP"
    fresh = qwen.new_stream(envelope="qwen3_asr")
    qwen.decode_incremental(ids[:3], fresh)
    before = fresh.fork()
    with pytest.raises(oasr_tok.InvalidIdError):
        qwen.decode_incremental([ids[3], 10**9], fresh)
    assert fresh == before
    with pytest.raises(StreamStateError):
        qwen.decode_incremental([1], {**qwen.new_stream(envelope="qwen3_asr"), "_tok": 5})


def test_envelope_streams_in_a_batch(qwen):
    outputs = ["language English<asr_text>one two", "language Chinese<asr_text>今天 🎉", "plain text"]
    rows = [qwen.encode(text) for text in outputs]
    states = [qwen.new_stream(envelope="qwen3_asr") for _ in rows]
    out = ["" for _ in rows]
    for step in range(max(map(len, rows))):
        ids = [row[step : step + 1] for row in rows]
        for k, delta in enumerate(qwen.decode_incremental_batch(ids, states)):
            out[k] += delta
    for k, delta in enumerate(qwen.decode_incremental_batch([[] for _ in rows], states, final=True)):
        out[k] += delta
    assert out == [qwen.decode_envelope(row, "qwen3_asr").text for row in rows] == ["one two", "今天 🎉", "plain text"]
    assert [s["envelope"].get("language") for s in states] == ["English", "Chinese", None]


@settings(max_examples=40)
@given(data=st.data())
def test_envelope_streams_in_a_batch_are_each_streams_own_decode_incremental(qwen, data):
    """The batch steps an envelope stream's usual id in its compiled call (a special id, stop
    strings or the flush send it down the per-stream rules): delta for delta and state for
    state what one decode_incremental per stream gives, specials mid-stream included."""
    pool = qwen.encode("language English<asr_text><|en|><|HAPPY|> 你好 🎉 lang:en \ufffd one two")
    specials = sorted(qwen.special_ids)[:8]
    ids = st.sampled_from(pool) | st.sampled_from(specials) | st.integers(0, qwen.vocab_size - 1)
    n = data.draw(st.integers(1, 4))
    streams = [data.draw(st.lists(ids, max_size=16)) for _ in range(n)]
    names = [data.draw(st.sampled_from(TEXT_FORMATS)) for _ in range(n)]
    batch = [qwen.new_stream(envelope=name) for name in names]
    loop = [qwen.new_stream(envelope=name) for name in names]
    for step in range(max(map(len, streams)) + 1):
        final = step == max(map(len, streams))
        rows = [row[step : step + 1] for row in streams]
        got = qwen.decode_incremental_batch(rows, batch, final)
        assert got == [qwen.decode_incremental(row, state, final) for row, state in zip(rows, loop)]
        # Whole streams, field by field (the parsers by their contents).
        assert batch == loop


@settings(max_examples=60)
@given(data=st.data())
def test_any_ids_any_format_any_cut_never_raise_and_concatenate(qwen, data):
    """Adversarial ids (specials mid-stream, bytes that never complete, U+FFFD, header-like
    text) through every format: no exception, and the deltas of any cut concatenate to
    decode_envelope's text."""
    pool = qwen.encode("language English<asr_text><|en|><|HAPPY|> 你好 🎉 [TRANSCRIBE] lang:en \ufffd")
    specials = sorted(qwen.special_ids)[:8]
    ids = data.draw(
        st.lists(st.sampled_from(pool) | st.sampled_from(specials) | st.integers(0, qwen.vocab_size - 1), max_size=30)
    )
    name = data.draw(st.sampled_from(TEXT_FORMATS))
    whole = qwen.decode_envelope(ids, name).text
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=4)))
    state = qwen.new_stream(envelope=name)
    out, at = [], 0
    for cut in cuts + [len(ids)]:
        out.append(qwen.decode_incremental(ids[at:cut], state))
        at = cut
    out.append(qwen.decode_incremental([], state, final=True))
    assert "".join(out) == whole
