"""resolve / load / describe: every layout of ../shared/fixtures resolves to the right kind with
the right special ids; ambiguous, unrecognised and malformed directories are refused or
explained. Layouts are built in tmp dirs from symlinks to the shared files (never copies into
the repository). Expected special ids are facts of the files (their README and their lines),
or answers of the reference libraries — never resolve's own output."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys

import pytest

import oasr_tok
from oasr_tok import (
    AssetNotFoundError,
    MalformedAssetError,
    ResolveError,
    SpecError,
    TokenizerSpec,
    build_tokenizer,
)
from oasr_tok.loading.description import describe
from oasr_tok.loading.resolution import load, resolve

from cases import FIRST_KINDS
from paths import PACKAGE_PARENT, ROOT, require_shared, shared, subprocess_env


def layout(folder, files: dict[str, str]) -> str:
    """A directory whose entries link to shared fixture files (or hold literal text)."""
    os.makedirs(folder, exist_ok=True)
    for name, source in files.items():
        target = os.path.join(folder, name)
        if source.startswith("text:"):
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(source[len("text:") :])
        else:
            os.symlink(require_shared(source), target)
    return str(folder)


@functools.cache
def load_once(path: str):
    """load(path), once per path: the large HF vocabularies take seconds to build."""
    return load(path)


def _table_ids(path: str, wanted) -> set[int]:
    """Ids of a `piece id` table whose piece satisfies `wanted` (an independent reading)."""
    ids = set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) == 2 and wanted(fields[0]):
                ids.add(int(fields[1]))
    return ids


ICEFALL = "symbol_table/icefall-librispeech-bpe500.tokens.txt"

# Special ids the README and the files' own lines state: icefall/sherpa <blk> <sos/eos> <unk>
# at 0 1 2 and #N at the end; WeNet <blank> 0, <unk> 1, <sos/eos> last; Paraformer units
# <blank> <sos> <eos> first, <unk> last.
TABLES = {
    "icefall-librispeech-bpe500.tokens.txt": ("tokens.txt", {0, 1, 2, 500, 501}),
    "sherpa-zh-char.tokens.txt": ("tokens.txt", {0, 1, 2, 5537, 5538}),
    "sherpa-zh-en-mix.tokens.txt": ("tokens.txt", {0, 1, 2, 6254, 6255, 6256}),
    "wenet-aishell2.units.txt": ("units.txt", {0, 1, 5234}),
    "wenet-librispeech-unigram5000.units.txt": ("units.txt", {0, 1, 5001}),
    "wenet-paraformer.units.txt": ("units.txt", {0, 1, 2, 8403}),
}


@pytest.mark.parametrize("source", sorted(TABLES))
def test_unit_table_layouts_resolve_with_their_special_ids(tmp_path, source):
    name, expected = TABLES[source]
    folder = layout(tmp_path / "model", {name: f"symbol_table/{source}"})
    spec = resolve(folder)
    assert spec.kind == "symbol_table"
    assert spec.files == {"units": os.path.join(folder, name)}
    tok = load(folder)
    assert tok.special_ids == frozenset(expected)
    named = {"<blk>", "<blank>", "<sos/eos>", "<sos>", "<eos>", "<unk>"}  # the README's control symbols
    markup = _table_ids(shared(f"symbol_table/{source}"), named.__contains__)
    disambiguation = _table_ids(shared(f"symbol_table/{source}"), lambda p: p[:1] == "#" and p[1:].isdigit())
    assert tok.special_ids == frozenset(markup | disambiguation)


def test_wenet_id_2_is_text_not_special(tmp_path):
    # The default [0, 1, 2] would strip id 2, which WeNet uses for a real token ("'").
    folder = layout(tmp_path / "wenet", {"units.txt": "symbol_table/wenet-aishell2.units.txt"})
    tok = load(folder)
    assert 2 not in tok.special_ids
    assert tok.decode([2]) == "'"
    assert tok.decode([0, 1, 5234]) == ""
    assert 45 not in tok.special_ids  # <space> is text in WeNet's char tables, not markup


def test_disambiguation_symbols_are_special_and_render_nothing(tmp_path):
    folder = layout(tmp_path / "icefall", {"tokens.txt": ICEFALL})
    tok = load(folder)
    assert tok.decode([500, 501]) == ""
    assert {500, 501} <= tok.special_ids


def test_sentencepiece_models_resolve_with_specials_asked_of_sentencepiece(tmp_path):
    import sentencepiece as spm

    for name in (
        "icefall-librispeech-bpe500.model",
        "sherpa-zh-en-mix.model",
        "wenet-librispeech-unigram5000.model",
        "mistral-v1.model",
    ):
        folder = layout(tmp_path / name, {"bpe.model": f"sentencepiece/{name}"})
        spec = resolve(folder)
        assert spec.kind == "sentencepiece" and spec.files == {"model": os.path.join(folder, "bpe.model")}
        sp = spm.SentencePieceProcessor(model_file=shared(f"sentencepiece/{name}"))
        control = {i for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)}
        # icefall's <blk> and <sos/eos> are user-defined pieces: markup by name, not by type.
        named = {i for i in range(3) if sp.id_to_piece(i) in ("<blk>", "<sos/eos>")}
        assert set(spec.options["special_ids"]) == control | named == {0, 1, 2}


def test_sentencepiece_model_decodes_as_sentencepiece_does(tmp_path):
    import sentencepiece as spm

    folder = layout(tmp_path / "m", {"tokenizer.model": "sentencepiece/mistral-v1.model"})
    sp = spm.SentencePieceProcessor(model_file=shared("sentencepiece/mistral-v1.model"))
    ids = sp.encode("Hello wörld, 你好 🎉")
    assert load(folder).decode([1] + ids + [2]) == sp.decode(ids)


def _hf_special_ids(folder: str) -> set[int]:
    """The special added tokens the `tokenizers` runtime and tokenizer_config.json declare."""
    import tokenizers

    backend = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    ids = {i for i, t in backend.get_added_tokens_decoder().items() if t.special}
    config = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(config):
        with open(config, encoding="utf-8") as handle:
            declared = json.load(handle).get("added_tokens_decoder", {})
        ids |= {int(i) for i, entry in declared.items() if entry.get("special")}
    return ids


@pytest.mark.parametrize("name", ["mistral-7b", "moonshine", "qwen3", "qwen2-audio-like"])
def test_huggingface_directories(name):
    folder = shared(f"huggingface/{name}")
    spec = resolve(folder)
    assert spec.kind == "huggingface"
    has_config = os.path.exists(os.path.join(folder, "tokenizer_config.json"))
    assert set(spec.files) == ({"tokenizer", "tokenizer_config"} if has_config else {"tokenizer"})
    tok = load_once(folder)
    assert tok.special_ids == frozenset(_hf_special_ids(folder))


def test_qwen2_audio_single_tokenizer_json_brings_its_config():
    # Without the config 3285 declared tokens would be missing (README: vocab 154931).
    spec = resolve(shared("huggingface/qwen2-audio-like/tokenizer.json"))
    assert spec.files["tokenizer_config"] == shared("huggingface/qwen2-audio-like/tokenizer_config.json")
    assert load_once(shared("huggingface/qwen2-audio-like/tokenizer.json")).vocab_size == 154931


def test_whisper_is_recognised_from_its_special_tokens():
    folder = shared("whisper/faster-whisper-base")
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as handle:
        eot = next(a["id"] for a in json.load(handle)["added_tokens"] if a["content"] == "<|endoftext|>")
    spec = resolve(folder)
    assert spec.kind == "whisper" and set(spec.files) == {"tokenizer"}
    tok = load(folder)
    assert tok.vocab_size == 51865  # README: timestamps up to 51864 exist only in the model
    assert tok.special_ids == frozenset(range(eot, 51865))


def test_whisper_not_decided_by_names(tmp_path):
    fake = layout(tmp_path / "whisper-large-v3", {"tokenizer.json": "huggingface/moonshine/tokenizer.json"})
    real = layout(tmp_path / "qwen-chat", {"tokenizer.json": "whisper/faster-whisper-base/tokenizer.json"})
    assert resolve(fake).kind == "huggingface"
    assert resolve(real).kind == "whisper"


def _paraformer_specials() -> set[int]:
    with open(shared("funasr_char/paraformer-zh-vocab8404/tokens.json"), encoding="utf-8") as handle:
        tokens = json.load(handle)
    return {tokens.index(m) for m in ("<blank>", "<s>", "</s>", "<unk>")}


def test_paraformer_directory_prefers_tokens_json():
    folder = shared("funasr_char/paraformer-zh-vocab8404")
    spec = resolve(folder)
    assert spec.kind == "funasr_char"
    assert spec.files == {"tokens": os.path.join(folder, "tokens.json")}
    assert set(spec.options["special_ids"]) == _paraformer_specials() == {0, 1, 2, 8403}
    d = describe(folder)
    assert [(e["kind"], e["source"]) for e in d.lost] == [("funasr_char", "tokens.txt")]
    assert d.special_ids == [0, 1, 2, 8403] and d.error is None


def test_paraformer_one_per_line_tokens_txt(tmp_path):
    folder = layout(tmp_path / "p", {"tokens.txt": "funasr_char/paraformer-zh-vocab8404/tokens.txt"})
    spec = resolve(folder)
    assert spec.kind == "funasr_char" and set(spec.options["special_ids"]) == _paraformer_specials()


# Every shared fixture file, pointed at directly.
SINGLE_FILES = {
    **{f"symbol_table/{name}": ("symbol_table", ids) for name, (_, ids) in TABLES.items()},
    "sentencepiece/icefall-librispeech-bpe500.model": ("sentencepiece", {0, 1, 2}),
    "sentencepiece/sherpa-zh-en-mix.model": ("sentencepiece", {0, 1, 2}),
    "sentencepiece/wenet-librispeech-unigram5000.model": ("sentencepiece", {0, 1, 2}),
    "sentencepiece/mistral-v1.model": ("sentencepiece", {0, 1, 2}),
    "huggingface/moonshine/tokenizer.json": ("huggingface", None),
    "huggingface/mistral-7b/tokenizer.json": ("huggingface", None),
    "huggingface/qwen3/tokenizer.json": ("huggingface", None),
    "whisper/faster-whisper-base/tokenizer.json": ("whisper", None),
    "funasr_char/paraformer-zh-vocab8404/tokens.json": ("funasr_char", {0, 1, 2, 8403}),
    "funasr_char/paraformer-zh-vocab8404/tokens.txt": ("funasr_char", {0, 1, 2, 8403}),
}


@pytest.mark.parametrize("relative", sorted(SINGLE_FILES))
def test_every_shared_file_resolves_on_its_own(relative):
    kind, special = SINGLE_FILES[relative]
    spec = resolve(shared(relative))
    assert spec.kind == kind
    tok = load_once(shared(relative))
    if special is not None:
        assert tok.special_ids == frozenset(special)
    else:
        folder = os.path.dirname(shared(relative))
        if kind == "huggingface":
            assert tok.special_ids == frozenset(_hf_special_ids(folder))


# -- ambiguity: the fixed order decides and describe says who lost -----------------------------


def test_tokenizer_json_beats_sentencepiece_model(tmp_path):
    folder = layout(
        tmp_path / "mistral",
        {
            "tokenizer.json": "huggingface/mistral-7b/tokenizer.json",
            "tokenizer_config.json": "huggingface/mistral-7b/tokenizer_config.json",
            "tokenizer.model": "sentencepiece/mistral-v1.model",
        },
    )
    d = describe(folder)
    assert d.kind == "huggingface"
    assert [(e["kind"], e["source"]) for e in d.lost] == [("sentencepiece", "tokenizer.model")]
    assert "order of evidence" in d.lost[0]["reason"] and "precedence" in d.lost[0]["reason"]
    assert "lost" in d.text() and "tokenizer.model" in d.text()


def test_sentencepiece_model_beats_unit_table(tmp_path):
    # The sherpa/icefall layout: bpe.model beside tokens.txt (same ids).
    folder = layout(
        tmp_path / "sherpa", {"bpe.model": "sentencepiece/icefall-librispeech-bpe500.model", "tokens.txt": ICEFALL}
    )
    d = describe(folder)
    assert d.kind == "sentencepiece"
    assert [e["kind"] for e in d.lost] == ["symbol_table"]


def test_units_txt_beats_tokens_txt(tmp_path):
    folder = layout(tmp_path / "two", {"units.txt": "symbol_table/wenet-aishell2.units.txt", "tokens.txt": ICEFALL})
    d = describe(folder)
    assert d.files == {"units": os.path.join(folder, "units.txt")}
    assert d.lost[0]["source"] == "tokens.txt" and "preferred" in d.lost[0]["reason"]


def test_spec_file_comes_first_and_round_trips(tmp_path):
    folder = layout(
        tmp_path / "ckpt", {"tokens.txt": ICEFALL, "bpe.model": "sentencepiece/icefall-librispeech-bpe500.model"}
    )
    written = TokenizerSpec("symbol_table", {"units": os.path.join(folder, "tokens.txt")}, {"special_ids": [0]})
    with open(os.path.join(folder, "tokenizer_spec.json"), "w", encoding="utf-8") as handle:
        json.dump(written.to_dict(relative_to=folder), handle)
    assert resolve(folder) == written
    d = describe(folder)
    assert d.kind == "symbol_table" and d.special_ids == [0]
    assert {e["kind"] for e in d.lost} == {"sentencepiece", "symbol_table"}
    # The spec travels with the folder: relative paths are read against its new place.
    moved = shutil.move(folder, tmp_path / "moved")
    assert resolve(moved).files == {"units": os.path.join(moved, "tokens.txt")}
    assert resolve(os.path.join(moved, "tokenizer_spec.json")) == resolve(moved)


def test_same_rank_ambiguity_is_refused(tmp_path):
    folder = layout(
        tmp_path / "two-models",
        {"a.model": "sentencepiece/mistral-v1.model", "b.model": "sentencepiece/icefall-librispeech-bpe500.model"},
    )
    with pytest.raises(ResolveError) as info:
        resolve(folder)
    assert "a.model" in str(info.value) and "b.model" in str(info.value) and "tokenizer_spec.json" in str(info.value)


def test_a_lone_model_with_any_name_is_used(tmp_path):
    folder = layout(
        tmp_path / "one", {"train_960_unigram5000.model": "sentencepiece/wenet-librispeech-unigram5000.model"}
    )
    assert resolve(folder).kind == "sentencepiece"


# -- unrecognised, malformed -----------------------------------------------------------------------


def test_unrecognised_directory_names_files_and_kinds(tmp_path):
    folder = layout(
        tmp_path / "weights",
        {"model.safetensors": "text:not a tokenizer", "README.md": "text:hi", "tokens.txt": "text:apple\nbanana\n"},
    )
    with pytest.raises(ResolveError) as info:
        resolve(folder)
    message = str(info.value)
    for name in ("model.safetensors", "README.md", "tokens.txt", "without @@"):
        assert name in message
    for kind in oasr_tok.available_kinds():
        assert kind in message


def test_empty_directory_and_missing_path(tmp_path):
    with pytest.raises(ResolveError, match="Files seen: none"):
        resolve(tmp_path)
    with pytest.raises(AssetNotFoundError) as info:
        resolve(tmp_path / "nope")
    assert info.value.path == str(tmp_path / "nope")


def test_config_without_tokenizer_json_is_not_enough(tmp_path):
    folder = layout(tmp_path / "cfg", {"tokenizer_config.json": "huggingface/qwen3/tokenizer_config.json"})
    with pytest.raises(ResolveError, match="no tokenizer.json"):
        resolve(folder)


def test_malformed_conventional_files_raise_with_file_and_line(tmp_path):
    bad_json = layout(tmp_path / "j", {"tokenizer.json": 'text:{\n  "model": oops\n}'})
    with pytest.raises(MalformedAssetError) as info:
        resolve(bad_json)
    assert info.value.path.endswith("tokenizer.json") and info.value.line == 2
    bad_table = layout(tmp_path / "t", {"units.txt": "text:<blank> 0\n<unk> 1\nA 2\nB x\nC 4\n"})
    with pytest.raises(MalformedAssetError) as info:
        resolve(bad_table)
    assert info.value.path.endswith("units.txt") and info.value.line == 4


def test_a_junk_model_file_is_set_aside_not_fatal(tmp_path):
    folder = layout(
        tmp_path / "junk", {"lm.model": "text:this is a language model, not sentencepiece", "tokens.txt": ICEFALL}
    )
    d = describe(folder)
    assert d.kind == "symbol_table"
    assert d.rejected and d.rejected[0][0] == "lm.model" and "SentencePiece" in d.rejected[0][1]


def test_spec_file_errors_name_the_file(tmp_path):
    folder = layout(tmp_path / "s", {"tokenizer_spec.json": 'text:{"kind": "symbol_table", "fils": {}}'})
    with pytest.raises(SpecError, match="tokenizer_spec.json"):
        resolve(folder)
    folder = layout(
        tmp_path / "s2", {"tokenizer_spec.json": 'text:{"kind": "symbol_table", "files": {"units": "gone.txt"}}'}
    )
    with pytest.raises(AssetNotFoundError, match="gone.txt"):
        resolve(folder)


# -- describe ----------------------------------------------------------------------------------------


def test_describe_dict_is_json_and_summarises_many_specials():
    d = describe(shared("whisper/faster-whisper-base"))
    data = json.loads(json.dumps(d.to_dict()))
    assert data["kind"] == "whisper" and data["vocab_size"] == 51865 and data["supports_encode"] is True
    assert data["special_ids"]["count"] == len(d.special_ids)
    assert data["special_ids"]["ranges"][-1][1] == 51864
    assert {e["about"] for e in data["evidence"]} >= {"kind", "files", "special_ids", "encode"}
    assert "<|startoftranscript|>" in next(e["reason"] for e in data["evidence"] if e["about"] == "kind")
    text = str(d)
    assert "whisper" in text and "51865" in text and "evidence" in text


def test_describe_decode_only_table():
    d = describe(shared(ICEFALL))
    assert d.supports_encode is False and d.vocab_size == 502
    assert d.special_pieces == {0: "<blk>", 1: "<sos/eos>", 2: "<unk>", 500: "#0", 501: "#1"}
    assert "icefall/sherpa layout" in d.text()


def test_describe_reports_a_build_failure_instead_of_raising(tmp_path):
    folder = layout(
        tmp_path / "broken",
        {
            "tokenizer_spec.json": 'text:{"kind": "symbol_table", "files": {"units": "t.txt"}, '
            '"options": {"special_ids": [9999]}}',
            "t.txt": ICEFALL,
        },
    )
    d = describe(folder)
    assert d.error is not None and "9999" in d.error
    assert d.to_dict()["error"] == d.error and "ERROR" in d.text()


def test_load_matches_build_tokenizer_of_resolve():
    path = shared("symbol_table/sherpa-zh-en-mix.tokens.txt")
    assert load(path).decode(list(range(3, 40))) == build_tokenizer(resolve(path)).decode(list(range(3, 40)))


def test_import_oasr_tok_stays_light():
    code = (
        "import sys, oasr_tok, oasr_tok.cli, oasr_tok.toolkits.nemo; "
        "heavy = [m for m in ('tokenizers', 'sentencepiece') if m in sys.modules]; "
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PACKAGE_PARENT, capture_output=True, text=True, env=subprocess_env()
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_demo_data_resolves_as_the_demo_declares_it():
    # demo.json (written by the demo's author) names each folder's kind and spec.
    root = ROOT / "oasr_tok" / "data" / "demo"
    with open(root / "demo.json", encoding="utf-8") as handle:
        entries = json.load(handle)["entries"]
    assert {e["kind"] for e in entries} == FIRST_KINDS
    for entry in entries:
        declared = build_tokenizer(
            TokenizerSpec.from_dict(
                {"kind": entry["kind"], "files": entry["files"], "options": entry["options"]}, base_dir=root
            )
        )
        folder = os.path.dirname(str(root / next(iter(entry["files"].values()))))
        assert resolve(folder).kind == entry["kind"]
        assert load(folder).special_ids == declared.special_ids


def test_kaldi_words_txt_and_tagged_tables(tmp_path):
    words = "<eps> 0\n!SIL 1\n<UNK> 2\nHELLO 3\nWORLD 4\n#0 5\n<s> 6\n</s> 7\n"
    folder = layout(tmp_path / "lang", {"words.txt": "text:" + words})
    d = describe(folder)
    assert d.kind == "symbol_table" and d.special_ids == [0, 2, 5, 6, 7]
    assert any("word table" in note for note in d.notes)
    # SenseVoice-style tags are markup; an id-only line (sherpa's space) keeps it a table.
    tagged = "<unk> 0\n<s> 1\n</s> 2\n<|zh|> 3\n<|HAPPY|> 4\n\u2581hello 5\n6\nworld 7\n"
    folder = layout(tmp_path / "sense", {"tokens.txt": "text:" + tagged})
    tok = load(folder)
    assert tok.special_ids == frozenset({0, 1, 2, 3, 4})
    assert tok.decode([3, 4, 5, 6, 7]) == "hello world"


def test_start_of_transcript_alone_is_not_whisper(tmp_path):
    # Whisper needs both <|startoftranscript|> and <|notimestamps|> (the latter fixes its layout).
    with open(shared("huggingface/moonshine/tokenizer.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    data["added_tokens"].append(
        {
            "id": 32768,
            "content": "<|startoftranscript|>",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
    )
    folder = tmp_path / "almost"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    assert resolve(folder).kind == "huggingface"


def test_a_list_named_units_txt_is_set_aside_with_the_reason(tmp_path):
    folder = layout(tmp_path / "u", {"units.txt": "text:<blank>\n<unk>\nA\n"})
    with pytest.raises(ResolveError, match="a unit table needs 'piece id' lines"):
        resolve(folder)


def _own_files() -> list[tuple[str, str]]:
    from paths import OWN

    found = [(f"whisper/{d}", "whisper") for d in sorted(os.listdir(OWN / "whisper"))]
    found += [(f"huggingface/{d}", "huggingface") for d in sorted(os.listdir(OWN / "huggingface"))]
    found += [
        (f"sentencepiece/{m}", "sentencepiece")
        for m in sorted(os.listdir(OWN / "sentencepiece"))
        if m.endswith(".model")
    ]
    return found


@pytest.mark.parametrize("relative, kind", _own_files())
def test_the_projects_trained_fixtures_resolve(relative, kind):
    from paths import own

    assert resolve(own(relative)).kind == kind


def test_load_asks_no_detector_ranked_below_the_first_find(tmp_path, monkeypatch) -> None:
    """load and resolve stop asking once no later detector can outrank what was found: a
    broken file of a kind ranked below is not read (nor its kind's module imported), while
    describe, which reports every candidate, still asks every detector."""
    shutil.copy(shared("huggingface/mistral-7b/tokenizer.json"), tmp_path / "tokenizer.json")
    (tmp_path / "tokens.txt").write_bytes(b"a 0\nb 1\n\xff\xfe 2\n")  # not UTF-8: symbol_table refuses it
    assert load(tmp_path).spec.kind == "huggingface"
    assert resolve(tmp_path).kind == "huggingface"
    with pytest.raises(MalformedAssetError, match=r"tokens.txt:3"):
        describe(tmp_path)
    # The detectors load asks: those ranked up to the winner's precedence, in order.
    from oasr_tok.core import registry
    from oasr_tok.loading import resolution

    asked: list[str] = []
    ask = resolution._ask

    def spy(entry, path):
        asked.append(entry.name)
        return ask(entry, path)

    monkeypatch.setattr(resolution, "_ask", spy)
    load(tmp_path)
    order = [entry.name for entry in registry.detectors()]
    winner = next(e for e in registry.detectors() if e.name == "huggingface")
    assert asked == [e.name for e in registry.detectors() if e.precedence <= winner.precedence]
    assert asked == order[: len(asked)] and "symbol_table" not in asked
