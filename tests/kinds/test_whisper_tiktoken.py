"""The whisper kind from openai-whisper's own vocabulary, multilingual.tiktoken.

Two references: openai-whisper itself (its answers recorded in
fixtures/whisper-tiktoken/expected.json by fixtures/make_whisper_tiktoken_expected.py, which
loads `whisper/tokenizer.py` from the sdist: get_encoding's layout for 99 and 100 languages,
`encoding.encode`, `Tokenizer.decode`), and the tokenizer.json of the same model
(faster-whisper-base): every id, special id, timestamp, prompt block, piece and token time
must be the same from both sources."""

from __future__ import annotations

import json
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.errors import EncodeError, MalformedAssetError, SpecError
from oasr_tok.kinds.whisper import LANGUAGE_CODES, WhisperTokenizer

from cases import MULTISCRIPT
from paths import own, shared, subprocess_env

TIKTOKEN = shared("whisper-tiktoken/multilingual.tiktoken")
EXPECTED = json.loads(Path(own("whisper-tiktoken/expected.json")).read_text(encoding="utf-8"))
_built: dict[int, WhisperTokenizer] = {}


def from_tiktoken(num_languages: int = 99) -> WhisperTokenizer:
    if num_languages not in _built:
        tok = build_tokenizer(TokenizerSpec("whisper", {"tiktoken": TIKTOKEN}, {"num_languages": num_languages}))
        assert isinstance(tok, WhisperTokenizer)
        _built[num_languages] = tok
    return _built[num_languages]


def from_tokenizer_json() -> WhisperTokenizer:
    if -1 not in _built:
        tok = build_tokenizer(
            TokenizerSpec("whisper", {"tokenizer": shared("whisper/faster-whisper-base/tokenizer.json")})
        )
        assert isinstance(tok, WhisperTokenizer)
        _built[-1] = tok
    return _built[-1]


# -- against openai-whisper ----------------------------------------------------------------------


def test_language_codes_are_openai_whispers():
    assert list(LANGUAGE_CODES) == EXPECTED["languages"]


@pytest.mark.parametrize("num_languages", [99, 100])
def test_layout_is_get_encodings(num_languages):
    tok, want = from_tiktoken(num_languages), EXPECTED["layouts"][str(num_languages)]
    assert tok.vocab_size == want["n_vocab"]
    for name in (
        "eot",
        "sot",
        "sot_prev",
        "sot_lm",
        "no_speech",
        "no_timestamps",
        "transcribe",
        "translate",
        "timestamp_begin",
    ):
        assert getattr(tok, name) == want[name], name
    assert tok.language_ids == want["languages"]
    assert list(tok.language_ids) == list(LANGUAGE_CODES[:num_languages])
    for name, token_id in want["special_tokens"].items():
        assert tok.id_to_piece(token_id) == name
    assert tok.id_to_piece(tok.vocab_size - 1) == want["last_timestamp"] == "<|30.00|>"
    assert tok.special_ids == frozenset(range(want["eot"], want["n_vocab"]))
    for key, sequence in want["sot_sequences"].items():
        language, task = key.split("/")
        assert tok.sot_sequence(language, task, timestamps=False) == sequence


def test_rank_50256_is_the_empty_byte_string():
    tok = from_tiktoken()
    assert EXPECTED["layouts"]["99"]["rank_50256"] == ""
    assert tok.id_to_piece(50256) == "" and tok.decode([50256]) == ""
    assert tok.token_pieces([50256, 50256]) == ["", ""]


@pytest.mark.parametrize("num_languages", [99, 100])
def test_decode_is_openai_whispers(num_languages):
    tok = from_tiktoken(num_languages)
    cases = EXPECTED["layouts"][str(num_languages)]["decode"]
    assert len(cases) >= 60
    for case in cases:
        assert tok.decode(case["ids"]) == case["text"], case
        assert tok.decode(case["asked"]) == case["text"], case
        assert "".join(tok.token_pieces(case["ids"])) == case["text"]
        state: dict = {}
        streamed = "".join(tok.decode_incremental([i], state) for i in case["ids"])
        assert streamed + tok.decode_incremental([], state, final=True) == case["text"]


@pytest.mark.parametrize("num_languages", [99, 100])
def test_encode_is_openai_whispers(num_languages):
    tok = from_tiktoken(num_languages)
    for text, want in EXPECTED["layouts"][str(num_languages)]["encode"]:
        if isinstance(want, str):  # openai-whisper's encoding refuses control markup in text
            assert want.startswith("ValueError")
            with pytest.raises(EncodeError, match="disallowed special token"):
                tok.encode(text)
        else:
            assert tok.encode(text) == want, text


# -- against the tokenizer.json of the same model ------------------------------------------------


def test_both_sources_of_one_model_give_the_same_ids():
    a, b = from_tiktoken(), from_tokenizer_json()
    assert a.vocab_size == b.vocab_size
    assert a.special_ids == b.special_ids
    assert a.language_ids == b.language_ids
    for name in (
        "eot",
        "sot",
        "sot_prev",
        "sot_lm",
        "no_speech",
        "no_timestamps",
        "transcribe",
        "translate",
        "timestamp_begin",
        "timestamp_end",
    ):
        assert getattr(a, name) == getattr(b, name), name
    # The same spelling of every id, except the one this older tokenizer.json names differently.
    differ = [i for i in range(a.vocab_size) if a.id_to_piece(i) != b.id_to_piece(i)]
    assert differ == [a.no_speech]
    assert (a.id_to_piece(a.no_speech), b.id_to_piece(b.no_speech)) == ("<|nospeech|>", "<|nocaptions|>")
    # encode may differ (this tokenizer.json's merges split " the" of "over the lazy" as
    # "Ġ", "the"; openai-whisper keeps "Ġthe"), but both spell the text back.
    for text in MULTISCRIPT:
        assert a.decode(a.encode(text)) == b.decode(b.encode(text)) == text


def test_both_sources_render_and_time_every_stream_alike():
    a, b = from_tiktoken(), from_tokenizer_json()
    rng = random.Random(19)
    ts = a.timestamp_begin
    controls = [a.eot, a.sot, a.sot_prev, a.no_timestamps, a.transcribe, ts, ts + 7, ts + 300, a.timestamp_end]
    texts = [a.encode(t) for t in MULTISCRIPT]
    for _ in range(400):
        ids: list[int] = []
        for _ in range(rng.randrange(0, 10)):
            r = rng.random()
            if r < 0.4:
                ids.extend(rng.choice(texts)[: rng.randrange(1, 6)])
            elif r < 0.7:
                ids.append(rng.choice(controls))
            else:
                ids.append(rng.randrange(a.vocab_size))
        assert a.decode(ids) == b.decode(ids)
        assert a.token_pieces(ids) == b.token_pieces(ids)
        assert a.token_times(ids, offset=3.0) == b.token_times(ids, offset=3.0)
        times = a.token_times(ids)
        assert a.word_timings(ids, times) == b.word_timings(ids, times)
        assert a.decode_batch([ids, ids[:3]]) == b.decode_batch([ids, ids[:3]])


def test_pickles_by_spec():
    tok = build_tokenizer(TokenizerSpec("whisper", {"tiktoken": TIKTOKEN}, {"num_languages": 100}))
    tok.pickle_mode = "spec"  # the default is by value (tests/core/test_pickle_value.py)
    again = pickle.loads(pickle.dumps(tok))
    assert again.spec == tok.spec and again.vocab_size == tok.vocab_size
    ids = [tok.sot, *tok.encode(" hello 世界"), tok.eot]
    assert again.decode(ids) == tok.decode(ids) == " hello 世界"


def test_decoding_needs_no_tiktoken():
    script = (
        "import sys; sys.modules['tiktoken'] = None\n"
        "from oasr_tok import TokenizerSpec, build_tokenizer\n"
        "from oasr_tok.errors import BackendNotInstalledError\n"
        f"tok = build_tokenizer(TokenizerSpec('whisper', {{'tiktoken': {TIKTOKEN!r}}}))\n"
        "assert tok.decode([tok.sot, 15947, tok.eot]) == tok.id_to_piece(15947).replace('\\u0120', ' ')\n"
        "try:\n    tok.encode('x')\nexcept BackendNotInstalledError as e:\n    print('refused', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=subprocess_env()
    )
    assert done.returncode == 0, done.stderr
    assert "refused" in done.stdout and "tiktoken" in done.stdout


# -- bad files and options -----------------------------------------------------------------------

GOOD = "IQ== 0\nIg== 1\nIw== 2\n"
BAD = {
    "one field": ("IQ== 0\nIg==\n", 2),
    "rank gap": ("IQ== 0\nIg== 2\n", 2),
    "not base64": ("IQ== 0\n!!== 1\n", 2),
    "duplicate bytes": ("IQ== 0\nIQ== 1\n", 2),
    "rank not a number": ("IQ== zero\n", 1),
    "blank line": ("IQ== 0\n\nIg== 1\n", 2),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_bad_tiktoken_files_name_file_and_line(tmp_path, what):
    text, line = BAD[what]
    path = tmp_path / "multilingual.tiktoken"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MalformedAssetError) as caught:
        WhisperTokenizer(str(path), tiktoken=True)
    assert caught.value.path == str(path) and caught.value.line == line
    assert f"{path}:{line}" in str(caught.value)


def test_empty_and_non_utf8_files(tmp_path):
    path = tmp_path / "gpt2.tiktoken"
    path.write_bytes(b"")
    with pytest.raises(MalformedAssetError, match="no ranks"):
        WhisperTokenizer(str(path), tiktoken=True)
    path.write_bytes(b"IQ== 0\n\xff\xfe 1\n")
    with pytest.raises(MalformedAssetError, match=":2:"):
        WhisperTokenizer(str(path), tiktoken=True)


def test_a_tiny_vocabulary_lays_its_control_block_after_its_ranks(tmp_path):
    path = tmp_path / "tiny.tiktoken"
    path.write_text(GOOD, encoding="utf-8")
    tok = build_tokenizer(TokenizerSpec("whisper", {"tiktoken": str(path)}, {"num_languages": 2}))
    assert (tok.eot, tok.sot, tok.all_language_codes, tok.translate, tok.no_timestamps) == (3, 4, ("en", "zh"), 7, 12)
    assert tok.vocab_size == 13 + 1501
    assert tok.decode([tok.sot, 0, 1, 2, tok.eot]) == '!"#'


@pytest.mark.parametrize(
    "options, match",
    [
        ({"num_languages": 101}, "num_languages"),
        ({"num_languages": "99"}, "num_languages"),
        ({"num_languages": True}, "num_languages"),
        ({"languages": 3}, "unknown option"),
    ],
)
def test_bad_options_raise_spec_error(options, match):
    with pytest.raises(SpecError, match=match):
        build_tokenizer(TokenizerSpec("whisper", {"tiktoken": TIKTOKEN}, options))


def test_num_languages_needs_the_tiktoken_source_and_one_source_only():
    tokenizer_json = shared("whisper/faster-whisper-base/tokenizer.json")
    with pytest.raises(SpecError, match="unknown option"):
        build_tokenizer(TokenizerSpec("whisper", {"tokenizer": tokenizer_json}, {"num_languages": 99}))
    with pytest.raises(SpecError, match="not both"):
        build_tokenizer(TokenizerSpec("whisper", {"tokenizer": tokenizer_json, "tiktoken": TIKTOKEN}))


# -- resolution ----------------------------------------------------------------------------------


def test_a_tiktoken_file_alone_resolves_to_whisper_and_is_no_symbol_table():
    from oasr_tok import describe
    from oasr_tok.files.detection import is_tiktoken_ranks

    assert is_tiktoken_ranks(TIKTOKEN)
    assert not is_tiktoken_ranks(shared("symbol_table/icefall-librispeech-bpe500.tokens.txt"))
    d = describe(TIKTOKEN)
    assert d.kind == "whisper" and d.options == {"num_languages": 99} and d.vocab_size == 51865
    assert "tiktoken rank file" in dict(d.evidence)["kind"]


@pytest.mark.parametrize(
    "n_vocab, where, num_languages",
    [
        (51865, "config.json", 99),
        (51866, "config.json", 100),
        (51866, "dims.json", 100),
        (None, None, 99),
    ],
)
def test_a_folder_with_multilingual_tiktoken_takes_num_languages_from_n_vocab(tmp_path, n_vocab, where, num_languages):
    import shutil

    from oasr_tok import describe, load

    shutil.copy(TIKTOKEN, tmp_path / "multilingual.tiktoken")
    if where is not None:
        (tmp_path / where).write_text(json.dumps({"n_vocab": n_vocab}), encoding="utf-8")
    d = describe(tmp_path)
    assert d.kind == "whisper" and d.options == {"num_languages": num_languages}
    assert d.vocab_size == (n_vocab or 51865) == load(tmp_path).vocab_size
    assert str(num_languages) in dict(d.evidence)["num_languages"]


def test_hf_config_vocab_size_also_gives_n_vocab_and_nonsense_is_refused(tmp_path):
    import shutil

    from oasr_tok import resolve
    from oasr_tok.errors import ResolveError

    shutil.copy(TIKTOKEN, tmp_path / "multilingual.tiktoken")
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 51866}), encoding="utf-8")
    assert resolve(tmp_path).options == {"num_languages": 100}
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 32000}), encoding="utf-8")
    with pytest.raises(ResolveError, match="config.json"):
        resolve(tmp_path)


def test_a_tiktoken_file_under_a_table_name_is_set_aside(tmp_path):
    import shutil

    from oasr_tok import resolve
    from oasr_tok.errors import ResolveError

    shutil.copy(TIKTOKEN, tmp_path / "tokens.txt")
    with pytest.raises(ResolveError, match="tiktoken"):
        resolve(tmp_path)


def test_tokenizer_json_beside_a_tiktoken_file_wins_and_both_are_whisper(tmp_path):
    import shutil

    from oasr_tok import describe

    shutil.copy(TIKTOKEN, tmp_path / "multilingual.tiktoken")
    shutil.copy(shared("whisper/faster-whisper-base/tokenizer.json"), tmp_path / "tokenizer.json")
    d = describe(tmp_path)
    assert d.kind == "whisper" and "tokenizer" in d.files
    assert [(lost["kind"], lost["source"]) for lost in d.lost] == [("whisper", "multilingual.tiktoken")]


def test_demo_entry_is_what_tiktoken_prints():
    import base64

    import tiktoken

    from oasr_tok import demo
    from oasr_tok.kinds.whisper import GPT2_PATTERN

    entry = next(e for e in demo.load_manifest() if "tiktoken" in e["files"])
    path = demo.DATA / entry["files"]["tiktoken"]
    ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in path.read_text().splitlines())}
    encoding = tiktoken.Encoding(name="demo", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    tok = WhisperTokenizer(str(path), tiktoken=True, num_languages=entry["options"]["num_languages"])
    assert encoding.decode([i for i in entry["ids"] if i < tok.eot]) == entry["expected"] == tok.decode(entry["ids"])
