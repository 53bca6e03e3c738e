"""NeMo .nemo archives: resolution by model_config.yaml's tokenizer.type, members named inside
the archive (never extracted, weights never read), and each kind against its reference:
SentencePiece's decode (bpe), tokenizers' BertWordPieceTokenizer (wpe), the port of NeMo's
AggregateTokenizer / CanaryTokenizer in tests/nemo_reference.py (agg), NeMo's label join (char).
Fixtures: fixtures/nemo/*.nemo (fixtures/make_asr_formats.py)."""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import tarfile

import pytest
import sentencepiece as spm
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import BertWordPieceTokenizer

import oasr_tok
from oasr_tok import AssetNotFoundError, MalformedAssetError, ResolveError, TokenizerSpec, build_tokenizer
from oasr_tok.files.archive import read_member

import elsewhere
from nemo_reference import CanaryTokenizer, SentencePieceTokenizer, canary2_user_turn
from paths import own, subprocess_env

ARCHIVES = ("bpe", "wpe", "canary", "char")


def archive(name: str) -> str:
    return own(f"nemo/{name}.nemo")


def members(name: str) -> dict[str, bytes]:
    with tarfile.open(archive(name), "r:*") as tar:
        return {m.name[2:]: tar.extractfile(m).read() for m in tar if m.isfile()}


def config(name: str) -> dict:
    return yaml.safe_load(members(name)["model_config.yaml"])


_LOADED: dict = {}


def loaded(name: str):
    if name not in _LOADED:
        _LOADED[name] = oasr_tok.load(archive(name))
    return _LOADED[name]


def reference_canary() -> CanaryTokenizer:
    content = members("canary")
    langs = config("canary")["tokenizer"]["langs"]
    return CanaryTokenizer(
        {lang: SentencePieceTokenizer(content[sub["model_path"][len("nemo:") :]]) for lang, sub in langs.items()}
    )


def test_each_type_resolves_to_its_kind_and_names_the_members_it_read():
    kinds = {name: oasr_tok.resolve(archive(name)).kind for name in ARCHIVES}
    assert kinds == {"bpe": "sentencepiece", "wpe": "wordpiece", "canary": "aggregate", "char": "symbol_table"}
    for name in ARCHIVES:
        described = oasr_tok.describe(archive(name))
        read = dict(described.evidence)["members"]
        assert "model_weights.ckpt" not in read.split("not read:")[0]
        assert "model_config.yaml" in read
        for path in described.files.values():
            assert path.startswith(archive(name) + "::")
    assert oasr_tok.resolve(own("nemo/canary.nemo")).options["langs"] == ["spl_tokens", "en", "es"]


@settings(max_examples=200)
@given(data=st.data())
def test_aggregate_decode_is_nemo_ids_to_text_without_the_special_ids(data):
    ours, ref = loaded("canary"), reference_canary()
    ids = data.draw(st.lists(st.integers(0, ours.vocab_size - 1), max_size=40))
    assert ours.decode(ids) == ref.ids_to_text([i for i in ids if i not in ours.special_ids])
    assert [ours.language_of(i) for i in ids] == [ref.langs_by_token_id[i] for i in ids]
    assert [ours.id_to_piece(i) for i in ids] == ref.ids_to_tokens(ids)


def test_aggregate_ids_languages_and_canary_specials_match_nemo():
    ours, ref = loaded("canary"), reference_canary()
    assert ours.vocab_size == ref.vocab_size
    assert ours.offsets == ref.token_id_offset
    assert ours.canary_tokens == ref.special_tokens
    assert ours.special_ids == frozenset(range(ref.token_id_offset["en"]))
    for text, lang in (("hello world good morning", "en"), ("hola mundo buenos días", "es")):
        ids = ours.encode_language(text, lang)
        assert ids == ref.text_to_ids(text, lang)
        assert ours.decode(ids) == ref.ids_to_text(ids) == " " + text  # NeMo keeps the leading space
        assert ref.ids_to_lang(ids) == lang


def test_canary_prompts_match_nemo():
    ours, ref = loaded("canary"), reference_canary()
    assert ours.canary_prompt("en", "en", version=1) == ref._tokenize_special_prompt(
        "<|startoftranscript|><|en|><|transcribe|><|en|><|pnc|>"
    )
    assert ours.canary_prompt("en", "es", version=1, pnc=False) == ref._tokenize_special_prompt(
        "<|startoftranscript|><|en|><|translate|><|es|><|nopnc|>"
    )
    for kwargs, slots in (
        ({}, {}),
        ({"timestamps": True, "itn": True}, {"timestamp": "<|timestamp|>", "itn": "<|itn|>"}),
        ({"pnc": False, "diarize": True}, {"pnc": "<|nopnc|>", "diarize": "<|diarize|>"}),
    ):
        text = canary2_user_turn("en", "es", **slots)
        expected = [ref.special_tokens[t + ">"] for t in text.split(">") if t]
        assert ours.canary_prompt("en", "es", **kwargs) == expected


def test_canary_timestamps_become_word_times():
    ours = loaded("canary")
    stamp = lambda n: ours.canary_tokens[f"<|{n}|>"]
    hello, world = ours.encode_language("hello", "en"), ours.encode_language("world", "en")
    ids = [stamp(4), *hello, stamp(9), stamp(10), *world, stamp(15)]
    words = ours.timestamp_words(ids)
    # frame x window_stride (0.01) x subsampling_factor (8), from the archive's config
    assert [(w.text, round(w.start, 6), round(w.end, 6)) for w in words] == [("hello", 0.32, 0.72), ("world", 0.8, 1.2)]
    text = ours.decode(ids)
    assert all(w.text in text for w in words) and text == " hello world"
    assert ours.timestamp_frame(stamp(9)) == 9 and ours.timestamp_frame(hello[0]) is None


@settings(max_examples=150)
@given(data=st.data())
def test_bpe_archive_decodes_like_sentencepiece_on_the_member(data):
    ours = loaded("bpe")
    model = members("bpe")[config("bpe")["tokenizer"]["model_path"][len("nemo:") :]]
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(model)
    ids = data.draw(st.lists(st.integers(0, ours.vocab_size - 1), max_size=30))
    assert ours.decode(ids) == sp.decode(ids)
    assert ours.encode("hello world") == sp.encode("hello world")


@settings(max_examples=150)
@given(data=st.data())
def test_wpe_archive_decodes_like_bert_wordpiece_on_the_member(data, tmp_path_factory):
    ours = loaded("wpe")
    folder = tmp_path_factory.mktemp("wpe")
    path = folder / "vocab.txt"
    path.write_bytes(members("wpe")[config("wpe")["tokenizer"]["vocab_path"][len("nemo:") :]])
    ref = BertWordPieceTokenizer(str(path))
    ids = data.draw(st.lists(st.integers(0, ours.vocab_size - 1), max_size=30))
    assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=True)


@settings(max_examples=150)
@given(data=st.data())
def test_char_archive_is_a_table_of_its_labels(data):
    ours = loaded("char")
    labels = config("char")["labels"]
    blank = len(labels)
    ids = data.draw(st.lists(st.integers(0, blank), max_size=30))
    # NeMo joins the labels of the non-blank ids; the symbol table also drops the transcript's
    # leading whitespace (documented in docs/kinds/nemo.md).
    assert ours.decode(ids) == "".join(labels[i] for i in ids if i != blank).lstrip()
    assert ours.special_ids == {blank}


def test_member_specs_survive_to_dict_pickling_and_spec_files(tmp_path):
    before = sorted(os.listdir(os.path.dirname(archive("canary"))))
    for name in ARCHIVES:
        tok = loaded(name)
        ids = list(range(0, tok.vocab_size, 3))
        spec = tok.spec
        assert TokenizerSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
        relative = spec.to_dict(relative_to=tmp_path)
        again = build_tokenizer(TokenizerSpec.from_dict(relative, base_dir=tmp_path))
        assert again.decode(ids) == tok.decode(ids)
        assert elsewhere.loads(pickle.dumps(tok)).decode(ids) == tok.decode(ids)
        spec_file = tmp_path / name / "tokenizer_spec.json"
        spec_file.parent.mkdir()
        spec_file.write_text(json.dumps(spec.to_dict(relative_to=spec_file.parent)), encoding="utf-8")
        assert oasr_tok.load(spec_file.parent).decode(ids) == tok.decode(ids)
    # In another process, from the pickle alone.
    blob = pickle.dumps(loaded("canary"))
    code = (
        "import pickle, sys; tok = pickle.loads(sys.stdin.buffer.read()); print(repr(tok.decode(list(range(60, 90)))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=blob, capture_output=True, env=subprocess_env(), check=True
    )
    assert out.stdout.decode().strip() == repr(loaded("canary").decode(list(range(60, 90))))
    assert sorted(os.listdir(os.path.dirname(archive("canary")))) == before  # nothing written beside the archives


def _rewrite(
    tmp_path, name: str, *, config_text: str | None = None, drop: str | None = None, gzip: bool = False
) -> str:
    content = members(name)
    if config_text is not None:
        content["model_config.yaml"] = config_text.encode("utf-8")
    if drop is not None:
        content = {k: v for k, v in content.items() if k != drop}
    path = tmp_path / f"{name}.nemo"
    with tarfile.open(path, "w:gz" if gzip else "w:") as tar:
        for member, data in content.items():
            info = tarfile.TarInfo(f"./{member}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_bad_archives_give_typed_errors_naming_file_and_member(tmp_path):
    cfg = config("bpe")
    model = cfg["tokenizer"]["model_path"][len("nemo:") :]
    # a member the config points to is missing
    missing = _rewrite(tmp_path, "bpe", drop=model)
    with pytest.raises(MalformedAssetError, match=f"{missing}.*{model}.*not a member"):
        oasr_tok.load(missing)
    # the config points outside the archive
    elsewhere = yaml.safe_dump({**cfg, "tokenizer": {**cfg["tokenizer"], "model_path": "/tmp/tokenizer.model"}})
    (tmp_path / "x").mkdir()
    path = _rewrite(tmp_path / "x", "bpe", config_text=elsewhere)
    with pytest.raises(MalformedAssetError, match="tokenizer.model_path.*not a nemo:<member>"):
        oasr_tok.load(path)
    # an unknown tokenizer type is refused, naming it
    (tmp_path / "y").mkdir()
    path = _rewrite(tmp_path / "y", "bpe", config_text=yaml.safe_dump({**cfg, "tokenizer": {"type": "tiktoken"}}))
    with pytest.raises(ResolveError, match="'tiktoken'"):
        oasr_tok.load(path)
    # no model_config.yaml
    (tmp_path / "z").mkdir()
    path = _rewrite(tmp_path / "z", "bpe", drop="model_config.yaml")
    with pytest.raises(MalformedAssetError, match="model_config.yaml"):
        oasr_tok.load(path)
    # truncated: cut inside the tokenizer member
    raw = open(archive("bpe"), "rb").read()
    cut = tmp_path / "cut.nemo"
    cut.write_bytes(raw[: raw.index(b"model_config") // 2])
    with pytest.raises(MalformedAssetError) as info:
        oasr_tok.load(cut)
    assert str(cut) in str(info.value)
    # not a tar at all
    junk = tmp_path / "junk.nemo"
    junk.write_bytes(b"\x00not a tar" * 100)
    with pytest.raises(MalformedAssetError, match="junk.nemo"):
        oasr_tok.load(junk)
    # a member read directly that is not there
    with pytest.raises(AssetNotFoundError, match="no member 'nope.model'"):
        read_member(archive("bpe") + "::nope.model", "SentencePiece model")
    # a gzip archive (NeMo before 1.7) reads the same
    (tmp_path / "g").mkdir()
    old = _rewrite(tmp_path / "g", "canary", gzip=True)
    assert oasr_tok.load(old).decode(list(range(60, 100))) == loaded("canary").decode(list(range(60, 100)))


def test_bad_char_labels_name_the_archive(tmp_path):
    cfg = config("char")
    path = _rewrite(
        tmp_path,
        "char",
        config_text=yaml.safe_dump({**cfg, "labels": ["a", "b", "a"], "decoder": {"vocabulary": ["a", "b", "a"]}}),
    )
    with pytest.raises(MalformedAssetError, match="'a' is given twice") as info:
        oasr_tok.load(path)
    assert path in str(info.value)


def test_a_folder_with_one_archive_resolves_to_it(tmp_path):
    shutil.copy(archive("canary"), tmp_path / "model.nemo")
    assert oasr_tok.resolve(tmp_path).kind == "aggregate"


def test_canary_spl_tokens_text_is_canarytokenizers():
    """NeMo's CanaryTokenizer.text_to_ids(text, "spl_tokens") is _tokenize_special_prompt: each
    special token its id, no "▁" before the first (the plain aggregate rule would prepend one)."""
    ours, ref = loaded("canary"), reference_canary()
    for prompt in (
        "<|startoftranscript|><|en|><|transcribe|><|en|><|pnc|>",
        "<|startoftranscript|><|en|><|translate|><|es|><|nopnc|>",
    ):
        assert ours.encode_language(prompt, "spl_tokens") == ref._tokenize_special_prompt(prompt)
    with pytest.raises(oasr_tok.EncodeError, match="not a Canary special token"):
        ours.encode_language("<|en|> hello", "spl_tokens")


def test_the_nemo_face_of_an_aggregate_renders_as_nemos_aggregate_tokenizer():
    """NeMo's AggregateTokenizer.ids_to_text joins every id's piece (each sub-vocabulary's
    <unk>, Canary's specials as spelled) with "▁" as a space; the adapter equals it on random
    ids, while the tokenizer's own decode keeps its rule (specials left out)."""
    import random

    from oasr_tok import NeMoTokenizer

    ours, ref = loaded("canary"), reference_canary()
    nemo = NeMoTokenizer(ours)
    rng = random.Random(9)
    for _ in range(300):
        ids = [rng.randrange(ours.vocab_size) for _ in range(rng.randrange(0, 25))]
        assert nemo.ids_to_text(ids) == ref.ids_to_text(ids), ids
        assert nemo.ids_to_tokens(ids) == ref.ids_to_tokens(ids)
