"""The oasr-tok command line, end to end as a subprocess (`python -m oasr_tok`). Its oracle is
the library (and, where it applies, the reference library): the command must print what the
API returns, stream as it settles, and refuse bad input with one line on stderr and a
non-zero exit status, never a traceback."""

from __future__ import annotations

import json
import select
import subprocess
import sys

import pytest

from oasr_tok.loading.resolution import load

from paths import PACKAGE_PARENT, ROOT, require_shared, shared, subprocess_env

ICEFALL = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")
QWEN = shared("huggingface/qwen3")
ENV = subprocess_env(PYTHONIOENCODING="ascii")  # the CLI must not rely on the locale


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "oasr_tok", *args],
        input=stdin.encode("utf-8"),
        capture_output=True,
        env=ENV,
        cwd=PACKAGE_PARENT,
    )


def out(result) -> str:
    return result.stdout.decode("utf-8")


def err(result) -> str:
    return result.stderr.decode("utf-8")


def assert_user_error(result, code: int, *fragments: str) -> None:
    assert result.returncode == code, err(result)
    assert "Traceback" not in err(result)
    for fragment in fragments:
        assert fragment in err(result)


# -- describe ---------------------------------------------------------------------------------------


def test_describe_text_and_json():
    text = run("describe", ICEFALL)
    assert text.returncode == 0 and "symbol_table" in out(text) and "evidence" in out(text)
    for args in (("describe", "--json", ICEFALL), ("--json", "describe", ICEFALL)):
        result = run(*args)
        assert result.returncode == 0
        data = json.loads(out(result))
        assert data["kind"] == "symbol_table" and data["vocab_size"] == 502
        assert data["special_ids"]["ranges"] == [[0, 2], [500, 501]]


def test_describe_bad_paths():
    assert_user_error(run("describe", "/no/such/dir"), 1, "/no/such/dir")
    result = run("--json", "describe", str(ROOT / "oasr_tok"))
    assert_user_error(result, 1)
    payload = json.loads(err(result))
    assert payload["error"] == "ResolveError" and "Known kinds" in payload["message"]


# -- decode -------------------------------------------------------------------------------------------


def test_decode_ids_as_arguments_matches_sentencepiece():
    import sentencepiece as spm

    model = shared("sentencepiece/icefall-librispeech-bpe500.model")
    ids = spm.SentencePieceProcessor(model_file=model).encode("HELLO WORLD IT IS FINE")
    expected = spm.SentencePieceProcessor(model_file=model).decode(ids)
    assert out(run("decode", model, *map(str, ids))) == expected + "\n"
    assert out(run("decode", model, json.dumps(ids))) == expected + "\n"


def test_decode_stdin_one_json_list_per_line_stays_aligned():
    tok = load(QWEN)
    hyps = [tok.encode("你好，世界"), [], tok.encode("an n-best list\twith a tab"), tok.encode("😀 emoji")]
    stdin = "\n".join(json.dumps(h) if h else "" for h in hyps) + "\n"
    result = run("decode", QWEN, stdin=stdin)
    assert result.returncode == 0, err(result)
    assert out(result).split("\n")[:-1] == [tok.decode(h) for h in hyps]
    ints = run("decode", QWEN, stdin="\n".join(" ".join(map(str, h)) for h in hyps) + "\n")
    assert out(ints) == out(result)
    as_json = run("decode", "--json", QWEN, stdin=stdin)
    rows = [json.loads(line) for line in out(as_json).splitlines()]
    assert rows == [{"ids": h, "text": tok.decode(h)} for h in hyps]


@pytest.mark.parametrize(
    "stdin, fragments",
    [
        ("[5, 6]\n[1, 99999]\n", ["line 2", "99999", "0 ... 501"]),
        ('[5, "seven"]\n', ["line 1", "seven"]),
        ("[5, 6.5]\n", ["line 1", "6.5"]),
        ("[5, 6\n", ["line 1", "malformed JSON"]),
        ('{"ids": [5]}\n', ["line 1", "JSON list"]),
        ("[-1]\n", ["line 1", "-1"]),
    ],
)
def test_decode_bad_stdin(stdin, fragments):
    result = run("decode", ICEFALL, stdin=stdin)
    assert_user_error(result, 3, *fragments)
    if stdin.startswith("[5, 6]\n"):
        assert out(result) == load(ICEFALL).decode([5, 6]) + "\n"  # what came before was printed


def test_decode_bad_arguments():
    assert_user_error(run("decode", ICEFALL, "5", "x"), 3, "'x'")
    assert_user_error(run("decode", ICEFALL, "5", "502"), 3, "502")
    assert_user_error(run("decode", "/no/such/file.txt", "5"), 1, "/no/such/file.txt")
    assert_user_error(run("decode"), 2, "path")
    assert_user_error(run("frobnicate"), 2, "frobnicate")


def test_decode_malformed_asset_names_file_and_line(tmp_path):
    table = tmp_path / "units.txt"
    table.write_text("<blank> 0\n<unk> 1\nA two\n", encoding="utf-8")
    assert_user_error(run("decode", str(tmp_path), "2"), 1, "units.txt:3")


# -- stream ---------------------------------------------------------------------------------------------


def test_stream_prints_deltas_as_they_settle():
    import tokenizers

    backend = tokenizers.Tokenizer.from_file(require_shared("huggingface/qwen3/tokenizer.json"))
    ids = backend.encode("ok 你好 😀 done").ids
    reference = backend.decode(ids, skip_special_tokens=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "oasr_tok", "stream", "--json", QWEN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        cwd=PACKAGE_PARENT,
    )
    emitted = ""
    try:
        for k, token_id in enumerate(ids):
            proc.stdin.write(f"{token_id}\n".encode())
            proc.stdin.flush()
            # Lockstep: the answer to this line must arrive before any more input is sent.
            ready, _, _ = select.select([proc.stdout], [], [], 120)
            assert ready, f"no delta printed for line {k + 1}"
            emitted += json.loads(proc.stdout.readline())["delta"]
            # Settled text only: a prefix of the reference decode of the ids so far.
            assert backend.decode(ids[: k + 1], skip_special_tokens=True).startswith(emitted)
        proc.stdin.close()
        last = json.loads(proc.stdout.readline())
        assert last["final"] is True and emitted + last["delta"] == reference == last["text"]
        assert proc.wait() == 0
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            stream.close()


def test_stream_plain_accepts_ints_and_json_lists():
    tok = load(ICEFALL)
    ids = [5, 6, 7, 8, 9, 10, 11, 12]
    result = run("stream", ICEFALL, stdin="5 6\n7\n\n[8, 9]\n10 11 12\n")
    assert result.returncode == 0
    assert out(result) == tok.decode(ids) + "\n"


def test_stream_bad_input_stops_with_the_line():
    result = run("stream", ICEFALL, stdin="5 6\n7 600\n8\n")
    assert_user_error(result, 3, "line 2", "600")
    assert out(result).startswith(load(ICEFALL).decode([5, 6]))
    assert_user_error(run("stream", ICEFALL, stdin="[5, 6\n"), 3, "malformed JSON")
    assert_user_error(run("stream", ICEFALL, stdin="5 six\n"), 3, "six")


# -- words -----------------------------------------------------------------------------------------------


def test_words_json_in_json_out():
    tok = load(ICEFALL)
    ids = [5, 6, 7, 8, 9, 10]
    starts = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    request = {"ids": ids, "starts": starts, "ends": [s + 0.05 for s in starts]}
    result = run("words", ICEFALL, stdin=json.dumps(request))
    assert result.returncode == 0, err(result)
    data = json.loads(out(result))
    expected = tok.word_timings(ids, starts, request["ends"])
    assert data["text"] == tok.decode(ids)
    assert [(w["text"], w["start"], w["end"], w["first_token"], w["last_token"]) for w in data["words"]] == [
        (w.text, w.start, w.end, w.first_token, w.last_token) for w in expected
    ]
    for word in data["words"]:
        assert word["text"] in data["text"]
    # JSON lines: one answer per request.
    lines = run("words", ICEFALL, stdin=json.dumps(request) + "\n" + json.dumps({"ids": [5], "starts": [1.0]}) + "\n")
    assert [json.loads(line)["text"] for line in out(lines).splitlines()] == [tok.decode(ids), tok.decode([5])]


@pytest.mark.parametrize(
    "stdin, fragments",
    [
        ('{"ids": [5, 6], "starts": [0.0]}', ["starts"]),
        ('{"ids": [5, 6], "start": [0.0, 1.0]}', ["start"]),
        ('{"ids": [5, 6000], "starts": [0.0, 1.0]}', ["6000"]),
        ('{"ids": [5, 6], "starts": [1.0, 0.5]}', ["non-decreasing"]),
        ('{"ids": [5, 6], "starts": "0 1"}', ["starts", "list"]),
        ('{"ids": [5, 6], "starts": [0.0, 1.0], "scores": [-1.0, 0.5]}', ["scores[1]", "log-probability"]),
        ('{"ids": [5, 6], "starts": [0.0, 1.0], "scores": [-1.0]}', ["scores", "1 values for 2 tokens"]),
        ("[5, 6]", ["object"]),
        ('{"ids": [5, 6], "starts": [0.0, 1.0]', ["malformed JSON"]),
        ("", ["expected"]),
    ],
)
def test_words_bad_input(stdin, fragments):
    assert_user_error(run("words", ICEFALL, stdin=stdin), 3, *fragments)


# -- demo, help, module and script ------------------------------------------------------------------------


def test_demo_is_wired_to_oasr_tok_demo():
    result = run("demo", "--help")
    assert result.returncode == 0 and "Traceback" not in err(result)
    assert "--json" in out(result)


def test_help_version_and_entry_point():
    assert run("--help").returncode == 0 and "describe" in out(run("--help"))
    assert run("--version").returncode == 0
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'oasr-tok = "oasr_tok.cli:main"' in pyproject


def test_main_returns_exit_codes_in_process(capsys):
    from oasr_tok.cli import main

    assert main(["decode", ICEFALL, "5", "6"]) == 0
    assert capsys.readouterr().out == load(ICEFALL).decode([5, 6]) + "\n"
    assert main(["decode", ICEFALL, "9999"]) == 3
    assert "9999" in capsys.readouterr().err
    assert main(["nonsense"]) == 2


# -- words --format: subtitles and CTM ---------------------------------------------------------------------


def _words_request(tok, text: str):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=shared("sentencepiece/icefall-librispeech-bpe500.model"))
    ids = sp.encode(text)
    starts = [round(0.25 * k, 2) for k in range(len(ids))]
    return {"ids": ids, "starts": starts}, tok.word_timings(ids, starts)


def test_words_format_srt_vtt_tsv_json_ctm():
    import srt
    import webvtt

    from oasr_tok.outputs import subtitles

    tok = load(ICEFALL)
    request, words = _words_request(tok, "HELLO WORLD THIS IS A LONG TEST OF THE SUBTITLE WRITERS FOR THE COMMAND LINE")
    result = run("words", ICEFALL, "--format", "srt", "--max-line-width", "20", stdin=json.dumps(request))
    assert result.returncode == 0, err(result)
    assert out(result) == subtitles.to_srt(subtitles.cues(words, max_line_width=20))
    parsed = list(srt.parse(out(result)))
    assert len(parsed) > 1 and " ".join(c.content.replace("\n", " ") for c in parsed) == " ".join(words.texts)
    vtt = run("words", ICEFALL, "--format", "vtt", stdin=json.dumps(request))
    assert " ".join(c.text.replace("\n", " ") for c in webvtt.from_string(out(vtt)).captions) == " ".join(words.texts)
    tsv = run("words", ICEFALL, "--format", "tsv", stdin=json.dumps(request))
    assert out(tsv) == subtitles.to_tsv(subtitles.cues(words))
    data = json.loads(out(run("words", ICEFALL, "--format", "json", stdin=json.dumps(request))))
    assert [w["word"].strip() for s in data["segments"] for w in s["words"]] == words.texts
    ctm = run("words", ICEFALL, "--format", "ctm", "--utterance", "spk1-001", stdin=json.dumps(request))
    assert out(ctm) == subtitles.to_ctm(words, "spk1-001")
    assert [line.split()[4] for line in out(ctm).splitlines()] == words.texts


def test_words_scores_give_confidences_in_json_and_ctm():
    from oasr_tok.outputs import subtitles

    tok = load(ICEFALL)
    request, _ = _words_request(tok, "HELLO WORLD AGAIN")
    request["scores"] = [-0.05 * (k + 1) for k in range(len(request["ids"]))]
    expected = tok.word_timings(request["ids"], request["starts"], None, request["scores"])
    data = json.loads(out(run("words", ICEFALL, stdin=json.dumps(request))))
    assert [w["confidence"] for w in data["words"]] == pytest.approx(expected.confidences)
    ctm = out(run("words", ICEFALL, "--format", "ctm", stdin=json.dumps(request)))
    assert ctm == subtitles.to_ctm(expected, "utt")
    assert [float(line.split()[5]) for line in ctm.splitlines()] == pytest.approx(expected.confidences, abs=5e-4)


def test_words_format_bad_option_is_a_user_error():
    tok = load(ICEFALL)
    request, _ = _words_request(tok, "HELLO WORLD")
    assert_user_error(
        run("words", ICEFALL, "--format", "srt", "--max-lines", "0", stdin=json.dumps(request)), 3, "max_lines"
    )
    assert_user_error(
        run("words", ICEFALL, "--format", "ctm", "--utterance", "a b", stdin=json.dumps(request)), 3, "utterance"
    )
    assert_user_error(run("words", ICEFALL, "--format", "xml", stdin=json.dumps(request)), 2)


# -- the prompt side for gguf and tekken (special tokens, stop ids, --keep-specials) -------------------


def _prompt_expected(name: str) -> dict:
    return json.loads((ROOT / "fixtures" / "gguf" / "expected" / f"{name}.prompt.json").read_text(encoding="utf-8"))


def test_describe_and_keep_specials_on_a_gguf():
    """describe lists llama.cpp's roles and end-of-generation ids; decode --keep-specials is
    llama_detokenize with unparse_special (the expected file written by llama.cpp)."""
    path = require_shared("gguf/ggml-vocab-qwen2.gguf")  # a child process cannot name it in our failure
    expected = _prompt_expected("ggml-vocab-qwen2")
    data = json.loads(out(run("--json", "describe", path)))
    assert data["kind"] == "gguf"
    assert data["special_tokens"]["eos"]["id"] == expected["roles"]["eos"]
    assert "GGUF key" in data["special_tokens"]["eos"]["source"]
    assert [e["id"] for e in data["stop_ids"]] == expected["stop_ids"]
    assert data["chat_templates"] == ["default"]
    text = out(run("describe", path))
    assert "stop ids:" in text and "<|im_end|>" in text and "end-of-generation" in text
    shown = {int(i) for i, piece in expected["special_pieces"].items() if piece}  # specials the view renders
    case = next(
        c
        for c in expected["detokenize_specials"]
        if len(c["ids"]) < 30
        and shown & set(c["ids"])
        and bytes.fromhex(c["bytes"]).decode("utf-8", "replace").isascii()
    )
    want = bytes.fromhex(case["bytes"]).decode("utf-8", "replace")
    result = run("decode", "--keep-specials", path, *map(str, case["ids"]))
    assert result.returncode == 0, err(result)
    assert out(result).rstrip("\n") == want
    plain = run("decode", path, *map(str, case["ids"]))
    assert out(plain).rstrip("\n") == load(path).decode(case["ids"]) != want


def test_describe_and_keep_specials_on_a_tekken_file():
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

    from tekken_files import path_of, reference

    path = path_of("derived")
    ref = reference("derived")
    data = json.loads(out(run("--json", "describe", path)))
    assert data["kind"] == "tekken"
    assert {role: data["special_tokens"][role]["id"] for role in ("bos", "eos", "pad", "unk")} == {
        "bos": ref.bos_id,
        "eos": ref.eos_id,
        "pad": ref.pad_id,
        "unk": ref.unk_id,
    }
    assert [e["id"] for e in data["stop_ids"]] == [ref.eos_id]
    assert "stop ids:" in out(run("describe", path))
    ids = [ref.bos_id, 3, *ref.encode("Transcribe this", bos=False, eos=False), 4, ref.eos_id]
    result = run("decode", "--keep-specials", path, *map(str, ids))
    assert result.returncode == 0, err(result)
    assert out(result).rstrip("\n") == ref.decode(ids, SpecialTokenPolicy.KEEP)
    assert out(run("decode", path, *map(str, ids))).rstrip("\n") == ref.decode(ids, SpecialTokenPolicy.IGNORE)
    streamed = run("stream", "--keep-specials", path, stdin="\n".join(map(str, ids)) + "\n")
    assert streamed.returncode == 0 and "[INST]" in out(streamed)
