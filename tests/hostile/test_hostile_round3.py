"""Hostile input, third round (issue 35): each defect the fuzzing campaign found, as a test of
its class — any id outside int64, any foreign or forged state, any hostile YAML or JSON, any
time in the float range — that failed before its fix."""

from __future__ import annotations

import copy
import io
import json
import math
import tarfile

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import (
    EncodeError,
    InvalidIdError,
    MalformedAssetError,
    NonIntegerIdError,
    SpecError,
    StreamStateError,
    TimingError,
    TokenizerSpec,
    UnknownKindError,
    build_tokenizer,
    subtitles,
)

from hostile import run_cli
from paths import own

# Every test here runs on the project's own small files or ones it writes: no ../shared needed.


def _table(tmp_path) -> oasr_tok.Tokenizer:
    path = tmp_path / "tokens.txt"
    path.write_text(
        "<blk> 0\n<sos/eos> 1\n<unk> 2\n" + "".join(f"{c} {i + 3}\n" for i, c in enumerate("▁abcdefgh")), "utf-8"
    )
    return oasr_tok.load(path)


# -- 1: a file never decides an allocation -----------------------------------------------------


def _nemo(path, yaml_text: str) -> str:
    with tarfile.open(path, "w") as archive:
        data = yaml_text.encode()
        info = tarfile.TarInfo("model_config.yaml")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return str(path)


LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


@pytest.mark.parametrize(
    "config",
    [
        LAUGHS + "tokenizer: {type: bpe, model_path: *i}\n",  # the 436-byte "billion laughs"
        LAUGHS + "tokenizer: *i\n",
        "base: &base {type: bpe, model_path: 'nemo:tokenizer.model'}\ntokenizer: *base\n",  # even a small alias
    ],
    ids=["laughs-under-model_path", "laughs-as-tokenizer", "small-alias"],
)
def test_a_nemo_config_with_yaml_aliases_is_refused_at_once(tmp_path, config):
    archive = _nemo(tmp_path / "model.nemo", config)
    for call in (oasr_tok.load, oasr_tok.resolve, oasr_tok.describe):
        with pytest.raises(MalformedAssetError, match="alias") as info:
            call(archive)
        assert len(str(info.value)) < 600


def test_a_nemo_config_nested_deeper_than_any_recursion_limit(tmp_path):
    archive = _nemo(tmp_path / "model.nemo", "tokenizer: " + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(MalformedAssetError, match="nested too deeply|not valid YAML"):
        oasr_tok.load(archive)


@given(st.one_of(st.integers(10**6, 10**30), st.sampled_from([10**7, 10**8, 2**63, 2**64])))
@example(10**7)
def test_a_wav2vec2_vocab_with_an_id_far_beyond_its_entries_is_refused(tmp_path_factory, big):
    folder = tmp_path_factory.mktemp("w2v")
    (folder / "vocab.json").write_text(json.dumps({"<pad>": 0, "|": 1, "a": 2, "b": big}), "utf-8")
    with pytest.raises(MalformedAssetError, match="vocab.json") as info:
        oasr_tok.load(folder)
    assert str(folder) in str(info.value) and str(big) in str(info.value)


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.json", "tokens.json", "tekken.json", "tokenizer_spec.json"])
def test_json_nested_deeper_than_any_recursion_limit(tmp_path, name):
    (tmp_path / name).write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    for call in (oasr_tok.load, oasr_tok.describe):
        with pytest.raises(MalformedAssetError, match="nested too deeply") as info:
            call(tmp_path)
        assert name in str(info.value)


# -- 2: no silent wrong answers ----------------------------------------------------------------

OUTSIDE_INT64 = st.one_of(st.integers(min_value=2**63), st.integers(max_value=-(2**63) - 1))


@given(big=OUTSIDE_INT64, where=st.integers(0, 5))
@example(big=2**63, where=1)
@example(big=-(2**63) - 1, where=1)
def test_decode_hypothesis_refuses_an_id_outside_int64(tmp_path_factory, big, where):
    tok = _table(tmp_path_factory.mktemp("t"))
    state: dict = {}
    tok.decode_hypothesis([3, 4, 5, 6, 7], state)
    before = copy.deepcopy(state)
    hypothesis = [3, 4, 5, 6, 7, 8]
    hypothesis[where] = big
    with pytest.raises(InvalidIdError, match=str(big)):
        tok.decode_hypothesis(hypothesis, state)
    assert state == before


def test_an_agreement_beyond_any_history_never_commits_before_the_end(tmp_path):
    tok = _table(tmp_path)
    state: dict = {}
    for n in range(2, 8):
        assert tok.decode_hypothesis([3, 4, 5, 3, 6, 7][:n], state, agreement=2**63)[0] == ""
    committed, partial = tok.decode_hypothesis([3, 4, 5, 3, 6, 7], state, final=True, agreement=2**63)
    assert committed == tok.decode([3, 4, 5, 3, 6, 7]) and partial == ""


def test_decode_hypothesis_on_a_state_that_lost_its_record_is_refused(tmp_path):
    tok = _table(tmp_path)
    state: dict = {}
    for n in range(3, 9):
        tok.decode_hypothesis([3, 4, 5, 3, 6, 7, 3, 8][:n], state)
    assert state["committed"]
    del state["_hypothesis"]
    before = copy.deepcopy(state)
    with pytest.raises(StreamStateError, match="lost its record"):
        tok.decode_hypothesis([3, 4, 5, 3, 6, 7, 3, 8, 4], state)
    assert state == before


@pytest.mark.parametrize(
    "forged",
    [
        ("not a tuple", -1, "", 0),
        (("a", "b"), -1, "", 0),
        (None, 2**64, "", 0),
        (None, -5, "", 0),
        (None, 10**6, "", 0),
        (None, -1, 7, 0),
        (None, -1, "", "0"),
        None,
    ],
)
def test_a_ctc_stream_refuses_forged_inner_values(forged):
    tok = oasr_tok.load(own("wav2vec2/base-960h"))
    state: dict = {}
    tok.decode_incremental([5, 6, 7], state)
    state["_ctc"] = forged
    before = copy.deepcopy(state)
    with pytest.raises(StreamStateError):
        tok.decode_incremental([8], state)
    assert state == before


def test_a_ctc_stream_never_continues_another_vocabularys_state():
    upper = oasr_tok.load(own("wav2vec2/base-960h"))
    lower = oasr_tok.load(own("wav2vec2/lower-case"))
    state: dict = {}
    upper.decode_incremental(upper.encode("HELLO WOR") if upper.supports_encode else [5, 6], state)
    before = copy.deepcopy(state)
    with pytest.raises(StreamStateError):
        lower.decode_incremental([5, 6], state)
    assert state == before


@pytest.mark.parametrize("forged", [{"text": "forged text"}, "sentencepiece"], ids=["text-only", "another-kinds"])
def test_the_gguf_clean_spaces_stream_refuses_a_state_without_its_record(forged):
    tok = oasr_tok.load(own("gguf/gpt2-cleanspaces.gguf"))
    if forged == "sentencepiece":
        other = build_tokenizer(TokenizerSpec("sentencepiece", {"model": own("sentencepiece/bpe-bytefallback.model")}))
        forged = {}
        other.decode_incremental([5, 6, 7], forged)
    state = copy.deepcopy(forged)
    with pytest.raises(StreamStateError):
        tok.decode_incremental([5, 6], state)
    assert state == forged


FLOATS = st.floats(allow_nan=True, allow_infinity=True)


@given(start=FLOATS, end=FLOATS)
@example(start=2.0, end=1.0)
@example(start=-1.0, end=1.0)
@example(start=math.nan, end=1.0)
@example(start=0.0, end=math.inf)
@example(start=0.0, end=1.8e305)
def test_every_writer_refuses_or_writes_any_float_time(start, end):
    cue = subtitles.Cue(start, end, "a")
    ok = all(math.isfinite(t) and t >= 0 and math.isfinite(t * 1000.0) for t in (start, end)) and end >= start
    for write in (subtitles.to_srt, subtitles.to_vtt, subtitles.to_tsv, subtitles.to_json):
        if ok:
            text = write([cue])
            if write is subtitles.to_json:
                assert json.loads(text)["segments"][0]["end"] == end
        else:
            with pytest.raises(TimingError):
                write([cue])


def test_to_json_takes_numpy_times_and_refuses_nan_in_a_whisper_result():
    text = subtitles.to_json([subtitles.Cue(np.float32(0.5), np.float64(1.25), "a")])
    assert json.loads(text)["segments"][0]["start"] == 0.5
    result = {"text": " a", "segments": [{"start": np.float32(0.5), "end": 1.0, "text": " a"}]}
    assert json.loads(subtitles.to_json(result))["segments"][0]["start"] == 0.5
    for bad in (math.nan, -1.0, math.inf):
        with pytest.raises(TimingError):
            subtitles.to_json({"segments": [{"start": bad, "end": 1.0, "text": "a"}]})


# -- 3: typed errors, never a traceback ----------------------------------------------------------


def test_decode_batch_pad_id_outside_int64(tmp_path):
    tok = _table(tmp_path)
    for pad in (2**63, -(2**63) - 1, 10**30):
        with pytest.raises(InvalidIdError, match="pad_id"):
            tok.decode_batch([[3, 4]], pad_id=pad)


def test_collapse_ctc_checks_its_arguments():
    with pytest.raises(InvalidIdError, match="vocab_size"):
        oasr_tok.collapse_ctc([1, 2], 0, vocab_size=0)
    with pytest.raises(NonIntegerIdError, match="vocab_size"):
        oasr_tok.collapse_ctc([1, 2], 0, vocab_size="5")
    with pytest.raises(NonIntegerIdError, match="bool"):
        oasr_tok.collapse_ctc([1, 2], True)
    assert oasr_tok.collapse_ctc([1, 1, 0, 2], 0, vocab_size=2**63) == ([1, 2], [0, 3], [2, 4])


def test_the_cli_revisions_and_words_on_hostile_input(tmp_path):
    table = str(tmp_path / "tokens.txt")
    _table(tmp_path)
    out = run_cli(["stream", "--revisions", table], b"[3, 4, \xff]\n")
    assert out.returncode == 3 and out.stderr.decode().count("\n") == 1 and b"Traceback" not in out.stderr
    out = run_cli(["stream", "--revisions", "--agreement", str(10**30), table], b"[3, 4]\n[3, 4, 5]\n")
    assert out.returncode == 0, out.stderr
    out = run_cli(["words", "--format", "srt", table], b'{"ids": [3, 4], "starts": [0, 1.7e308]}\n')
    assert out.returncode == 3 and b"Traceback" not in out.stderr and out.stderr.decode().count("\n") == 1


# -- 4: accepted or unclear ----------------------------------------------------------------------


@pytest.mark.parametrize("times", [[0.0, math.nan, 1.0], [3.0, 2.0, 1.0], ["a", "b", "c"], [0.0, None, 1.0]])
def test_decode_hypothesis_checks_times_at_once(tmp_path, times):
    tok = _table(tmp_path)
    state: dict = {}
    with pytest.raises(TimingError):
        tok.decode_hypothesis([3, 4, 5], state, times=times)
    assert state == {}


def test_a_spec_file_with_bad_options_or_an_unknown_kind_names_the_file(tmp_path):
    _table(tmp_path)
    spec_file = tmp_path / "tokenizer_spec.json"
    for content, error in (
        ({"kind": "symbol_table", "files": {"units": "tokens.txt"}, "options": {"nonsense": 1}}, SpecError),
        ({"kind": "no_such_kind", "files": {"units": "tokens.txt"}, "options": {}}, UnknownKindError),
    ):
        spec_file.write_text(json.dumps(content), "utf-8")
        with pytest.raises(error) as info:
            oasr_tok.load(tmp_path)
        assert str(spec_file) in str(info.value)


@pytest.mark.parametrize("flag", ["no", 0, 1, "", [True], None])
def test_encode_flags_are_booleans_not_truth_values(flag):
    tok = oasr_tok.load(own("funasr_char/small/tokens.json"))
    if flag is not None:
        with pytest.raises(EncodeError, match="add_special_tokens"):
            tok.encode("a", add_special_tokens=flag)
    with pytest.raises(EncodeError, match="split_special_tokens"):
        tok.encode("a", split_special_tokens=flag)
