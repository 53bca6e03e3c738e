"""The demo (`python -m oasr_tok demo`): it runs on the package's own files, streams every
kind correctly, reports a missing backend with its install hint and carries on."""

from __future__ import annotations

import json
import sys

import pytest

from oasr_tok import demo
from oasr_tok.core.registry import builtin_kinds

from cases import FIRST_KINDS


def run(capsys, *argv):
    code = demo.main(list(argv))
    return code, capsys.readouterr().out


def test_json_output_covers_every_kind_and_checks_out(capsys):
    code, out = run(capsys, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True
    by_kind = {record["kind"]: record for record in report["kinds"]}
    # Every kind with demo files runs (fixtures/make_demo_data.py makes them); the eleven the
    # project started with all have them, and nothing else is in the demo.
    assert set(by_kind) == {entry["kind"] for entry in demo.load_manifest()}
    assert set(by_kind) <= set(builtin_kinds())
    assert set(by_kind) >= FIRST_KINDS
    for kind, record in by_kind.items():
        assert record["status"] == "ok", (kind, record.get("error"))
        assert record["stream_matches_decode"] is True
        assert record["matches_reference_library"] in (True, None)
        # The partials only ever grow by what was emitted, and end at the final text.
        emitted = ""
        for step in record["steps"]:
            emitted += step["delta"]
            assert step["partial"] == emitted + step["held"]
        assert emitted + record["flush"] == record["final"]
        # The words are pieces of the final text, in order.
        position = 0
        for word in record["words"]:
            at = record["final"].find(word["text"], position)
            assert at >= 0 and record["final"][position:at].strip() == ""
            position = at + len(word["text"])
        assert len(record["words"]) >= 5
        # A few SubRip cues of those words: valid SRT, the words' text in order.
        import srt

        cues = list(srt.parse(record["srt"]))
        assert 1 <= len(cues) <= 3
        shown = "".join(c.content for c in cues).replace("\n", "").replace(" ", "")
        assert "".join(w["text"] for w in record["words"]).replace(" ", "").startswith(shown)


def test_reference_libraries_agree_with_the_manifest():
    """The manifest's expected texts are what SentencePiece / tokenizers print for the ids."""
    import sentencepiece as spm
    from tokenizers import Tokenizer

    entries = {entry["kind"]: entry for entry in demo.load_manifest()}
    sp = spm.SentencePieceProcessor(model_file=str(demo.DATA / entries["sentencepiece"]["files"]["model"]))
    assert sp.decode(entries["sentencepiece"]["ids"]) == entries["sentencepiece"]["expected"]
    hf = Tokenizer.from_file(str(demo.DATA / entries["huggingface"]["files"]["tokenizer"]))
    assert hf.decode(entries["huggingface"]["ids"], skip_special_tokens=True) == entries["huggingface"]["expected"]


def test_text_output(capsys):
    code, out = run(capsys)
    assert code == 0
    for kind in {entry["kind"] for entry in demo.load_manifest()}:
        assert f"== {kind}" in out
    assert "partial" in out and "final" in out and "words" in out and " --> " in out
    assert "NO" not in out


def test_one_kind(capsys):
    code, out = run(capsys, "--kind", "funasr_char", "--json")
    assert code == 0
    assert [record["kind"] for record in json.loads(out)["kinds"]] == ["funasr_char"]


def test_unknown_kind_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        demo.main(["--kind", "nope"])
    assert exit_info.value.code == 2


def test_missing_backend_shows_the_install_hint_and_goes_on(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # import sentencepiece -> ImportError
    code, out = run(capsys, "--json")
    assert code == 0
    by_kind = {record["kind"]: record for record in json.loads(out)["kinds"]}
    assert by_kind["sentencepiece"]["status"] == "backend missing"
    assert by_kind["sentencepiece"]["install"] == "pip install 'oasr_tok[sentencepiece]'"
    assert by_kind["symbol_table"]["status"] == "ok" and by_kind["funasr_char"]["status"] == "ok"
    code, out = run(capsys)
    assert "pip install 'oasr_tok[sentencepiece]'" in out


def test_package_data_is_small():
    files = [path for path in demo.DATA.rglob("*") if path.is_file()]
    assert {path.name for path in files} >= {"demo.json", "tokens.txt", "bpe.model", "tokenizer.json", "tokens.json"}
    assert sum(path.stat().st_size for path in files) < 200_000


def test_make_demo_data_remakes_one_kind_and_leaves_the_others(tmp_path):
    """fixtures/make_demo_data.py --kind NAME: the named kind's files and manifest entries are
    made again (the script is deterministic: they come back byte for byte), every other kind's
    are left exactly as they were, even where they differ from what the script would make."""
    import shutil
    import subprocess

    from paths import ROOT, subprocess_env

    pytest.importorskip("sentencepiece")
    pytest.importorskip("tokenizers")
    pytest.importorskip("gguf")
    out = tmp_path / "demo"
    shutil.copytree(demo.DATA, out)
    shutil.rmtree(out / "funasr_char")
    (out / "wordpiece" / "vocab.txt").write_text("left as it is\n", encoding="utf-8")
    manifest = json.loads((out / "demo.json").read_text(encoding="utf-8"))
    script = [sys.executable, str(ROOT / "fixtures" / "make_demo_data.py")]
    done = subprocess.run(
        [*script, "--kind", "funasr_char", "--out", str(out)], capture_output=True, text=True, env=subprocess_env()
    )
    assert done.returncode == 0, done.stderr
    for name in (demo.DATA / "funasr_char").iterdir():
        assert (out / "funasr_char" / name.name).read_bytes() == name.read_bytes()
    assert (out / "wordpiece" / "vocab.txt").read_text(encoding="utf-8") == "left as it is\n"
    assert json.loads((out / "demo.json").read_text(encoding="utf-8")) == manifest
    refused = subprocess.run(
        [*script, "--kind", "nope", "--out", str(out)], capture_output=True, text=True, env=subprocess_env()
    )
    assert refused.returncode == 2 and "no demo files are made for ['nope']" in refused.stderr
