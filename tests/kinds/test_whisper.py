"""The whisper kind against the `tokenizers` runtime (the oracle) on the real faster-whisper-base
file and the generated en / multilingual / large-v3 layouts. The contracts themselves run in
tests/testing/test_every_kind.py through tests/cases/whisper.py."""

from __future__ import annotations

import copy
import functools
import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.kinds._bytelevel import BYTE_TO_CHAR

from cases import MULTISCRIPT
from cases.whisper import FILES, decoder_outputs
from cases.whisper import runtime_decode as reference  # the oracle, one home
from paths import shared

NAMES = list(FILES)


@functools.cache
def load(name: str):
    """(our tokenizer, the tokenizers runtime) for one file."""
    from tokenizers import Tokenizer

    path = FILES[name]()
    return build_tokenizer(TokenizerSpec("whisper", {"tokenizer": path})), Tokenizer.from_file(path)


def byte_id(rt, value: int) -> int:
    return rt.token_to_id(BYTE_TO_CHAR[value])


@st.composite
def whisper_ids(draw, tok, rt, max_size=40):
    """Ids over the whole vocabulary, weighted towards single-byte tokens (CJK and emoji
    split, invalid bytes), control tokens and timestamps."""
    single_bytes = [byte_id(rt, b) for b in range(256)]
    controls = [
        tok.eot,
        tok.sot,
        tok.sot_prev,
        tok.sot_lm,
        tok.no_speech,
        tok.no_timestamps,
        tok.transcribe,
        tok.translate,
        *tok.all_language_tokens[:3],
    ]
    one = st.one_of(
        st.integers(0, tok.vocab_size - 1),
        st.integers(0, tok.eot - 1),
        st.sampled_from(single_bytes),
        st.sampled_from(controls),
        st.integers(tok.timestamp_begin, tok.timestamp_end),
        st.sampled_from([0, tok.vocab_size - 1, tok.eot - 1]),
    )
    return draw(st.lists(one, max_size=max_size))


# -- decode against the runtime -------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_ordinary_ids_decode_as_the_runtime(name, data):
    tok, rt = load(name)
    ids = data.draw(
        st.lists(
            st.one_of(st.integers(0, tok.eot - 1), st.sampled_from([byte_id(rt, b) for b in range(256)])), max_size=40
        )
    )
    assert tok.decode(ids) == rt.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_any_ids_decode_as_the_runtime_without_specials_and_prompts(name, data):
    tok, rt = load(name)
    ids = data.draw(whisper_ids(tok, rt))
    assert tok.decode(ids) == reference(tok, rt, ids)
    pieces = tok.token_pieces(ids)
    assert "".join(pieces) == tok.decode(ids)
    times = tok.token_times(ids)
    assert len(times) == len(ids) and times == sorted(times) and all(0.0 <= t <= 30.0 for t in times)


@pytest.mark.parametrize("name", NAMES)
def test_multiscript_text_round_trips(name):
    tok, rt = load(name)
    for text in MULTISCRIPT:
        ids = tok.encode(text)
        assert ids == rt.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids) == rt.decode(ids) == text


@pytest.mark.parametrize("name", NAMES)
def test_decoder_shaped_outputs_render_only_the_transcript(name):
    tok, rt = load(name)
    for ids in decoder_outputs(tok):
        assert tok.decode(ids) == reference(tok, rt, ids)
    transcript = tok.encode(" Hello world, this is a test.")
    prompt = tok.encode(" Previous window 以前的 text.")
    en, ts = tok.language_ids["en"], tok.timestamp_begin
    framed = [tok.sot_prev, *prompt, tok.sot, en, tok.transcribe, ts, *transcript, ts + 100, tok.eot]
    assert tok.decode(framed) == rt.decode(transcript) == " Hello world, this is a test."


@pytest.mark.parametrize("name", NAMES)
def test_timestamps_and_control_tokens_never_leak(name):
    """The runtime drops ids it does not know (timestamps in the older files) but prints the
    ones it knows as non-special added tokens (large-v3's spelled-out timestamps): decode drops both."""
    tok, rt = load(name)
    hello = tok.encode(" hello")
    ts = tok.timestamp_begin
    ids = [tok.sot, tok.language_ids["en"], tok.transcribe, ts, *hello, ts + 50, tok.eot]
    assert tok.decode(ids) == " hello"
    if rt.id_to_token(ts) is not None:  # large-v3: the runtime itself would leak it
        assert rt.decode(ids, skip_special_tokens=True) == "<|0.00|> hello<|1.00|>"
    assert set(range(tok.eot, tok.vocab_size)) == set(tok.special_ids) - set(range(tok.eot))
    for i in (tok.eot, tok.sot_prev, ts, tok.timestamp_end, tok.vocab_size - 1):
        assert tok.token_pieces([i]) == [""]


@pytest.mark.parametrize("name", NAMES)
def test_vocabulary_edges(name):
    tok, rt = load(name)
    assert tok.decode([0]) == rt.decode([0])
    assert tok.decode([tok.vocab_size - 1]) == ""
    assert tok.decode([0, tok.vocab_size - 1, 0]) == rt.decode([0, 0])


# -- prompt blocks --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_prompt_block_text_does_not_leak_even_when_unclosed(name):
    tok, rt = load(name)
    before, prompt = tok.encode(" kept"), tok.encode(" secret prompt")
    # The block is open until <|startoftranscript|>; if it never comes, nothing after it renders.
    ids = [*before, tok.sot_prev, *prompt]
    assert tok.decode(ids) == rt.decode(before) == " kept"
    assert tok.token_pieces(ids)[len(before) :] == [""] * (1 + len(prompt))
    state: dict = {}
    out = "".join(tok.decode_incremental([i], state) for i in ids)
    out += tok.decode_incremental([], state, final=True)
    assert out == " kept"


@pytest.mark.parametrize("name", NAMES)
def test_failed_call_inside_a_prompt_block_leaves_state_unchanged(name):
    tok, _ = load(name)
    state: dict = {}
    tok.decode_incremental([*tok.encode(" a"), tok.sot_prev, *tok.encode(" b")], state)
    before = copy.deepcopy(state)
    for bad in ([tok.sot, tok.vocab_size], [tok.sot, -1], [tok.sot, "1"]):
        with pytest.raises(oasr_tok.InvalidIdError):
            tok.decode_incremental(bad, state)
        assert state == before
    tok.decode_incremental([], state, final=True)
    closed = copy.deepcopy(state)
    with pytest.raises(oasr_tok.StreamStateError):
        tok.decode_incremental(tok.encode(" more"), state)  # ids that the open block would hide
    assert state == closed


@pytest.mark.parametrize("name", NAMES)
def test_forked_stream_inside_a_prompt_block(name):
    tok, rt = load(name)
    prompt, after = tok.encode(" old words"), tok.encode(" new words")
    state: dict = {}
    tok.decode_incremental([tok.sot_prev, *prompt], state)
    fork = copy.deepcopy(state)
    left = tok.decode_incremental(after, state) + tok.decode_incremental([], state, final=True)
    right = tok.decode_incremental([tok.sot, *after], fork) + tok.decode_incremental([], fork, final=True)
    assert left == ""
    assert right == rt.decode(after)


# -- byte-level pieces ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_split_character_goes_to_the_completing_token(name):
    tok, rt = load(name)
    zhong = [byte_id(rt, b) for b in "中".encode()]
    grin = [byte_id(rt, b) for b in "😀".encode()]
    assert tok.token_pieces(zhong) == ["", "", rt.decode(zhong)] == ["", "", "中"]
    # specials and timestamps in the middle of a character neither break nor carry it
    ids = [grin[0], tok.timestamp_begin, grin[1], tok.eot, grin[2], grin[3]]
    assert tok.token_pieces(ids) == ["", "", "", "", "", rt.decode(grin)]
    # a stream that ends mid-character puts the U+FFFD on its last non-special token
    cut = [zhong[0], zhong[1], tok.eot, tok.timestamp_begin]
    assert tok.token_pieces(cut) == ["", rt.decode(zhong[:2]), "", ""]
    state: dict = {}
    assert [tok.decode_incremental([i], state) for i in cut] == ["", "", "", ""]
    assert state["text"] == rt.decode(zhong[:2])
    assert tok.decode_incremental([], state, final=True) == rt.decode(zhong[:2])


# -- the layout -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_layout_derives_from_the_control_tokens(name):
    tok, rt = load(name)
    ask = rt.token_to_id
    assert tok.eot == ask("<|endoftext|>")
    assert tok.sot == ask("<|startoftranscript|>")
    assert tok.translate == ask("<|translate|>")
    assert tok.transcribe == ask("<|transcribe|>")
    assert tok.sot_lm == ask("<|startoflm|>")
    assert tok.sot_prev == ask("<|startofprev|>")
    assert tok.no_speech == (ask("<|nospeech|>") if ask("<|nospeech|>") is not None else ask("<|nocaptions|>"))
    assert tok.no_timestamps == ask("<|notimestamps|>")
    assert tok.timestamp_begin == tok.no_timestamps + 1
    assert tok.vocab_size == tok.no_timestamps + 1 + 1501
    assert tok.language_ids == {code: ask(f"<|{code}|>") for code in tok.all_language_codes}
    assert list(tok.all_language_tokens) == list(range(tok.sot + 1, tok.translate))
    # the runtime's own post-processor starts a sequence with sot, notimestamps
    assert rt.encode("x").ids[:2] == tok.sot_sequence(timestamps=False)
    assert tok.sot_sequence("en", "translate") == [tok.sot, ask("<|en|>"), tok.translate]


def test_real_file_layout_matches_its_model_config():
    tok, _ = load("faster-whisper-base")
    with open(shared("whisper/faster-whisper-base/config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert list(tok.all_language_tokens) == config["lang_ids"]
    assert tok.eot == 50257 and tok.timestamp_begin == 50364
    assert tok.vocab_size == 51865
    assert tok.no_speech == 50362  # spelled <|nocaptions|> in this file


def test_generated_layouts_differ_where_whisper_versions_do():
    en, _ = load("en")
    multi, _ = load("multilingual")
    v3, rt = load("large-v3")
    assert len(en.language_ids) == len(multi.language_ids) == 99
    assert len(v3.language_ids) == 100 and v3.all_language_codes[-1] == "yue"
    assert en.eot + 1 == multi.eot  # GPT-2 keeps eot inside its vocabulary, the multilingual one after it
    assert v3.timestamp_begin == rt.token_to_id("<|0.00|>")
    assert v3.timestamp_end == rt.token_to_id("<|30.00|>")
    assert v3.vocab_size == rt.get_vocab_size(with_added_tokens=True)


def test_timestamp_seconds_match_the_spelled_out_tokens():
    tok, rt = load("large-v3")
    for token_id in range(tok.timestamp_begin, tok.timestamp_end + 1):
        assert tok.timestamp_seconds(token_id) == float(rt.id_to_token(token_id)[2:-2])
        assert tok.timestamp_id(tok.timestamp_seconds(token_id)) == token_id
    for not_a_timestamp in (tok.no_timestamps, tok.timestamp_end + 1, 0):
        with pytest.raises(oasr_tok.InvalidIdError):
            tok.timestamp_seconds(not_a_timestamp)
    with pytest.raises(ValueError):
        tok.timestamp_id(30.5)


# -- token_times ----------------------------------------------------------------------------------


def test_token_times_spread_tokens_between_timestamps():
    tok, _ = load("faster-whisper-base")
    t = tok.timestamp_id
    a, b, c = tok.encode(" one two three")[:3]
    en = tok.language_ids["en"]
    ids = [tok.sot, en, tok.transcribe, t(1.0), a, b, c, t(1.6), t(1.6), a, t(2.0), b, tok.eot]
    times = tok.token_times(ids, offset=30.0)
    expected = [1.0, 1.0, 1.0, 1.0, 1.0, 1.2, 1.4, 1.6, 1.6, 1.6, 2.0, 2.0, 2.0]
    assert times == pytest.approx([30.0 + e for e in expected])
    assert tok.token_times([a, b]) == [0.0, 0.0]


def test_token_times_ignore_prompt_timestamps_and_never_go_back():
    tok, _ = load("faster-whisper-base")
    t = tok.timestamp_id
    a, b = tok.encode(" one two")[:2]
    ids = [tok.sot_prev, t(20.0), a, t(25.0), tok.sot, t(2.0), a, b, t(1.0), b]
    times = tok.token_times(ids)
    assert times[:6] == [2.0] * 6
    assert times == sorted(times)
    assert times[-1] == 2.0  # the backwards <|1.00|> is held at 2.0


# -- errors ---------------------------------------------------------------------------------------


def spec(path, **options):
    return TokenizerSpec("whisper", {"tokenizer": str(path)}, options)


def test_missing_file(tmp_path):
    missing = tmp_path / "nope" / "tokenizer.json"
    with pytest.raises(oasr_tok.AssetNotFoundError) as info:
        build_tokenizer(spec(missing))
    assert str(missing) in str(info.value)


@pytest.mark.parametrize("other", ["huggingface/qwen3/tokenizer.json", "huggingface/moonshine/tokenizer.json"])
def test_other_tokenizer_json_is_refused_by_name(other):
    path = shared(other)
    with pytest.raises(oasr_tok.MalformedAssetError) as info:
        build_tokenizer(spec(path))
    assert path in str(info.value) and "not a Whisper tokenizer.json" in str(info.value)
    assert info.value.path == path


def _edited(tmp_path, edit):
    with open(FILES["multilingual"](), encoding="utf-8") as handle:
        data = json.load(handle)
    edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_malformed_layouts_are_refused(tmp_path):
    def swap_tasks(data):
        for entry in data["added_tokens"]:
            if entry["content"] in ("<|translate|>", "<|transcribe|>"):
                entry["content"] = "<|transcribe|>" if entry["content"] == "<|translate|>" else "<|translate|>"

    def drop_notimestamps(data):
        data["added_tokens"] = [e for e in data["added_tokens"] if e["content"] != "<|notimestamps|>"]

    def misplaced_timestamp(data):
        last = max(e["id"] for e in data["added_tokens"])
        data["added_tokens"].append(
            {**data["added_tokens"][-1], "id": last + 1, "content": "<|0.02|>", "special": False}
        )

    def other_model_after_notimestamps(data):  # a derived layout: more control tokens, then timestamps
        last = max(e["id"] for e in data["added_tokens"])
        data["added_tokens"].append({**data["added_tokens"][-1], "id": last + 1, "content": "<|SPECIAL_TOKEN_1|>"})

    for edit, words in (
        (swap_tasks, "order"),
        (drop_notimestamps, "<|notimestamps|>"),
        (misplaced_timestamp, "<|0.02|>"),
        (other_model_after_notimestamps, "SPECIAL_TOKEN_1"),
    ):
        path = _edited(tmp_path, edit)
        with pytest.raises(oasr_tok.MalformedAssetError) as info:
            build_tokenizer(spec(path))
        assert str(path) in str(info.value) and words in str(info.value)
    bad_json = tmp_path / "broken.json"
    bad_json.write_text('{"model":\n  {', encoding="utf-8")
    with pytest.raises(oasr_tok.MalformedAssetError) as info:
        build_tokenizer(spec(bad_json))
    assert info.value.line == 2 and str(bad_json) in str(info.value)


def test_timestamp_spelling_may_vary_but_not_its_value(tmp_path):
    def short_spelling(data):
        last = max(e["id"] for e in data["added_tokens"])
        data["added_tokens"].append(
            {**data["added_tokens"][-1], "id": last + 1, "content": "<|0.0|>", "special": False}
        )
        data["added_tokens"].append(
            {**data["added_tokens"][-1], "id": last + 2, "content": "<|0.020|>", "special": False}
        )

    tok = build_tokenizer(spec(_edited(tmp_path, short_spelling)))
    assert tok.id_to_piece(tok.timestamp_begin + 1) == "<|0.020|>"
    assert tok.timestamp_seconds(tok.timestamp_begin + 1) == 0.02


def test_vocab_size_option():
    path = FILES["faster-whisper-base"]()
    with pytest.raises(oasr_tok.SpecError) as info:
        build_tokenizer(spec(path, vocab_size=51864))
    assert "51864" in str(info.value) and "51865" in str(info.value)
    for bad in ("51865", 51865.0, True):
        with pytest.raises(oasr_tok.SpecError):
            build_tokenizer(spec(path, vocab_size=bad))
    with pytest.raises(oasr_tok.SpecError):
        build_tokenizer(spec(path, vocab_sz=51865))
    padded = build_tokenizer(spec(path, vocab_size=51872))  # a checkpoint that pads its vocabulary
    assert padded.vocab_size == 51872 and 51871 in padded.special_ids
    assert padded.decode([51871, *padded.encode(" hi")]) == " hi"
    with pytest.raises(oasr_tok.InvalidIdError):
        padded.timestamp_seconds(51871)


def test_pickles_by_spec():
    tok, _ = load("large-v3")
    ids = decoder_outputs(tok)[1]
    tok.pickle_mode = "spec"  # the default is by value (tests/core/test_pickle_value.py)
    try:
        clone = pickle.loads(pickle.dumps(tok))
    finally:
        tok.pickle_mode = "value"
    assert clone.decode(ids) == tok.decode(ids) and clone.spec == tok.spec


@pytest.mark.parametrize("name", NAMES)
def test_id_to_piece_spells_as_the_file(name):
    tok, rt = load(name)
    for token_id in (0, 220, tok.eot - 1, tok.eot, tok.sot_prev, tok.no_timestamps):
        assert tok.id_to_piece(token_id) == rt.id_to_token(token_id)
    # timestamps the file lacks are spelled as the files that carry them spell them
    _, v3 = load("large-v3")
    assert tok.id_to_piece(tok.timestamp_begin + 62) == v3.id_to_token(v3.token_to_id("<|0.00|>") + 62) == "<|1.24|>"
    with pytest.raises(oasr_tok.InvalidIdError):
        tok.id_to_piece(tok.vocab_size)


def test_encode_takes_text_only():
    tok, _ = load("multilingual")
    with pytest.raises(oasr_tok.EncodeError):
        tok.encode(b"bytes")  # type: ignore[arg-type]


def test_special_added_token_below_eot_is_skipped_like_the_runtime(tmp_path):
    """A file that marks an ordinary-range token special (none of the published ones does):
    decode skips it as the runtime does with skip_special_tokens, and special_ids says so."""
    from tokenizers import Tokenizer

    with open(FILES["multilingual"](), encoding="utf-8") as handle:
        data = json.load(handle)
    token = next(t for t, i in data["model"]["vocab"].items() if i == 300)
    data["added_tokens"].append(
        {
            "id": 300,
            "content": token,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
    )
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tok, rt = build_tokenizer(spec(path)), Tokenizer.from_file(str(path))
    ids = [299, 300, 301, tok.eot]
    assert 300 in tok.special_ids and 299 not in tok.special_ids
    assert tok.decode(ids) == rt.decode(ids, skip_special_tokens=True) == rt.decode([299, 301])
    assert rt.decode([299, 301]) != rt.decode([299, 300, 301], skip_special_tokens=False)
    assert tok.token_pieces(ids)[1] == ""


def test_word_timings_from_token_times():
    tok, _ = load("faster-whisper-base")
    t = tok.timestamp_id
    hello, world = tok.encode(" Hello world")
    ids = [tok.sot, tok.language_ids["en"], tok.transcribe, t(1.0), hello, world, t(3.0), tok.eot]
    words = tok.word_timings(ids, tok.token_times(ids, offset=10.0))
    # the rule: two tokens spread over 1.00 ... 3.00, the window starting at 10 s
    assert [(w.text, w.start, w.end, w.first_token, w.last_token) for w in words] == [
        ("Hello", 11.0, 12.0, 4, 4),
        ("world", 12.0, 13.0, 5, 5),
    ]


def test_the_runtime_itself_drops_timestamps_it_does_not_know():
    """Why vocab_size must count the timestamps: the older files lack them and the runtime
    drops them without a word; decode agrees with it on such decoder outputs."""
    tok, rt = load("faster-whisper-base")
    assert rt.id_to_token(tok.timestamp_begin) is None and rt.get_vocab_size() == tok.timestamp_begin
    for ids in decoder_outputs(tok)[1:3]:
        assert tok.decode(ids) == rt.decode(ids, skip_special_tokens=True)


def test_decoding_does_not_load_the_runtime():
    """Only encode needs `tokenizers`; the module and every decoding path work without it."""
    import subprocess
    import sys

    _, rt = load("faster-whisper-base")
    text_ids = rt.encode(" Hello 世界", add_special_tokens=False).ids
    code = (
        "import sys; from oasr_tok.kinds.whisper import WhisperTokenizer\n"
        f"tok = WhisperTokenizer({FILES['faster-whisper-base']()!r})\n"
        f"ids = [tok.sot, *{text_ids!r}, tok.timestamp_begin, tok.eot]\n"
        f"assert tok.decode(ids) == ''.join(tok.token_pieces(ids)) == {rt.decode(text_ids)!r}\n"
        "assert 'tokenizers' not in sys.modules\n"
    )
    from paths import PACKAGE_PARENT, subprocess_env

    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PACKAGE_PARENT, capture_output=True, text=True, env=subprocess_env()
    )
    assert result.returncode == 0, result.stderr
