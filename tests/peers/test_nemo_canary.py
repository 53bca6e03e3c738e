"""NeMo 3.0's own AggregateTokenizer and CanaryTokenizer (loaded by path from its wheel:
tests/peers/nemo_source.py) against oasr_tok's aggregate kind and its NeMo face, on the
Canary-layout archive fixtures/nemo/canary.nemo (fixtures/make_asr_formats.py; its
sub-models are real SentencePiece models): the offsets, each id's language and piece,
ids_to_text (every sub-vocabulary's <unk> and the special tokens as spelled, the face) and
decode (the special ids left out, the kind's rule), text_to_ids per language, the Canary
special tokens and the spl_tokens prompt. NeMo computes every expected value in the same run.
tests/nemo_reference.py (a plain port, kept for the tests that run without the peers' files)
is checked against the same classes here.

NeMo's own tests of these classes need checkpoints from its test-data archive, which is not
reachable; these differential tests stand in for them."""

from __future__ import annotations

import random
import tarfile

import pytest
import yaml

import oasr_tok
from oasr_tok import NeMoTokenizer

from nemo_reference import CanaryTokenizer as PortedCanary
from nemo_reference import SentencePieceTokenizer as PortedSentencePiece
from nemo_source import nemo_classes
from paths import own


@pytest.fixture(scope="module")
def canary(tmp_path_factory):
    archive = own("nemo/canary.nemo")
    with tarfile.open(archive, "r:*") as tar:
        content = {m.name[2:]: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    langs = yaml.safe_load(content["model_config.yaml"])["tokenizer"]["langs"]
    folder = tmp_path_factory.mktemp("canary")
    classes = nemo_classes()
    subs = {}
    for lang, sub in langs.items():
        path = folder / f"{lang}.model"
        path.write_bytes(content[sub["model_path"][len("nemo:") :]])
        subs[lang] = classes["SentencePieceTokenizer"](str(path))
    theirs = classes["CanaryTokenizer"](subs)
    ported = PortedCanary(
        {lang: PortedSentencePiece(content[sub["model_path"][len("nemo:") :]]) for lang, sub in langs.items()}
    )
    return oasr_tok.load(archive), theirs, ported


def test_offsets_languages_and_special_tokens(canary):
    ours, theirs, ported = canary
    assert ours.vocab_size == theirs.vocab_size == ported.vocab_size
    assert ours.offsets == theirs.token_id_offset == ported.token_id_offset
    assert ours.canary_tokens == theirs.special_tokens == ported.special_tokens
    rng = random.Random(3)
    ids = [rng.randrange(ours.vocab_size) for _ in range(2000)] + list(range(ours.vocab_size))
    assert [ours.language_of(i) for i in ids] == [theirs.langs_by_token_id[i] for i in ids]
    assert [ours.id_to_piece(i) for i in ids] == theirs.ids_to_tokens(ids) == ported.ids_to_tokens(ids)


def test_ids_to_text_as_nemo_and_decode_without_the_special_ids(canary):
    ours, theirs, ported = canary
    nemo = NeMoTokenizer(ours)
    rng = random.Random(11)
    for _ in range(400):
        ids = [rng.randrange(ours.vocab_size) for _ in range(rng.randrange(0, 30))]
        assert nemo.ids_to_text(ids) == theirs.ids_to_text(ids) == ported.ids_to_text(ids), ids
        assert nemo.ids_to_tokens(ids) == theirs.ids_to_tokens(ids)
        kept = [i for i in ids if i not in ours.special_ids]
        assert ours.decode(ids) == theirs.ids_to_text(kept)


@pytest.mark.parametrize(
    "text, lang",
    [
        ("hello world good morning", "en"),
        ("hola mundo buenos días", "es"),
        ("HELLO   world, naïve 今天", "en"),
        ("", "en"),
    ],
)
def test_text_to_ids_per_language(canary, text, lang):
    ours, theirs, _ = canary
    ids = ours.encode_language(text, lang)
    assert ids == theirs.text_to_ids(text, lang)
    assert ours.decode(ids) == theirs.ids_to_text(ids)
    if ids:
        assert theirs.ids_to_lang(ids) == lang


@pytest.mark.parametrize(
    "prompt",
    [
        "<|startoftranscript|><|en|><|transcribe|><|en|><|pnc|>",
        "<|startoftranscript|><|en|><|translate|><|es|><|nopnc|>",
    ],
)
def test_spl_tokens_prompt_is_canarys(canary, prompt):
    ours, theirs, ported = canary
    expected = theirs.text_to_ids(prompt, "spl_tokens")
    assert ours.encode_language(prompt, "spl_tokens") == expected == ported._tokenize_special_prompt(prompt)
    assert ours.canary_prompt(
        "en", prompt.split("<|")[4][:2], version=1, pnc="nopnc" not in prompt
    ) == theirs._tokenize_special_prompt(prompt)
