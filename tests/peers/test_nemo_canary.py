"""NeMo 3.0's own AggregateTokenizer and CanaryTokenizer (loaded by path from its wheel:
tests/peers/nemo_source.py) against oasr_tok's aggregate kind and its NeMo face, on the
Canary-layout archive fixtures/nemo/canary.nemo (fixtures/make_asr_formats.py; its
sub-models are real SentencePiece models): the offsets, each id's language and piece,
ids_to_text (every sub-vocabulary's <unk> and the special tokens as spelled, the face) and
decode (the special ids left out, the kind's rule), text_to_ids per language, the Canary
special tokens and the spl_tokens prompt. NeMo computes every expected value in the same run.
tests/nemo_reference.py (a plain port, kept for the tests that run without the peers' files)
is checked against the same classes here.

NeMo's test_canary_prompt_formatter.py is translated at the end (its tokenizers built by NeMo's
own functions at test time, as its conftest builds them); its answer ids are a strict xfail
(the trainer here gives 'TEST' other ids, to NeMo's side as to ours)."""

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


# -- NeMo's tests/collections/common/prompt_formatters/test_canary_prompt_formatter.py
# (NVIDIA/NeMo at 2350356dfb4a2a0c4255b280eddf4db37d6e6ceb) with its conftest.py's tokenizers,
# built here as the conftest builds them (NeMo 3.0's own create_spt_model and
# CanaryTokenizer.build_special_tokenizer, the sentencepiece trainer underneath). NeMo's
# CanaryPromptFormatter is prompt plumbing, not a tokenizer (it imports torch): its encode_dialog
# is the spl_tokens prompt (the context) and the answer's text_to_ids + <|endoftext|>, which
# is what the translation asks of both sides.

TOKENIZER_TRAIN_TEXT = """
Example system message.
Example user message.
Example assistant message.
TEST
[INST]
[/INST]
<s>
</s>
<<SYS>>
<</SYS>>
User: Assistant:
user model
Instruct Output 
\\n\\n
<start_of_turn> <end_of_turn>
<|
|>
<|en|> <|de|> <|fr|> <|es|> <|transcribe|> <|translate|> <|pnc|> <|nopnc|> <|startoftranscript|> <|endoftext|>
Feel free to add new tokens for your own tests!?
But know that if you do so, you may need to update the token IDs in the existing tests! 
So, it might be a good idea to create a new tokenizer instead when adding new prompt formats.
"""  # noqa: W291 (the upstream text, trailing spaces included)


@pytest.fixture(scope="module")
def formatter_tokenizers(tmp_path_factory):
    classes = nemo_classes()
    bpe_dir = tmp_path_factory.mktemp("bpe_tokenizer")
    (bpe_dir / "text.txt").write_text(TOKENIZER_TRAIN_TEXT)
    classes["create_spt_model"](
        str(bpe_dir / "text.txt"),
        vocab_size=512,
        sample_size=-1,
        do_lower_case=False,
        output_dir=str(bpe_dir),
        remove_extra_whitespaces=True,
        bos=True,
        eos=True,
        user_defined_symbols=["\n", "<|im_start|>", "<|im_end|>"],
    )
    spl_dir = tmp_path_factory.mktemp("spl_tokens")
    classes["CanaryTokenizer"].build_special_tokenizer(["transcribe", "en"], spl_dir)
    return _canary_pair(spl_dir, bpe_dir)


def _canary_pair(spl_dir, en_dir):
    """Ours (the aggregate kind) and NeMo's CanaryTokenizer over the same two model folders."""
    classes = nemo_classes()
    spl, en = (classes["SentencePieceTokenizer"](str(d / "tokenizer.model")) for d in (spl_dir, en_dir))
    theirs = classes["CanaryTokenizer"](tokenizers={"spl_tokens": spl, "en": en})
    ours = oasr_tok.build_tokenizer(
        oasr_tok.TokenizerSpec(
            "aggregate",
            {"spl_tokens": str(spl_dir / "tokenizer.model"), "en": str(en_dir / "tokenizer.model")},
            {"langs": ["spl_tokens", "en"]},
        )
    )
    return ours, theirs


def _encode_dialog(tok, answer=None):
    """What CanaryPromptFormatter.encode_dialog gives for the user turn of these tests."""
    context = tok.canary_prompt("en", "en", version=1) if hasattr(tok, "canary_prompt") else None
    if context is None:  # NeMo's: the user turn's template, slots filled, as spl_tokens
        context = tok.text_to_ids("<|startoftranscript|><|en|><|transcribe|><|en|><|pnc|>", "spl_tokens")
    if answer is None:
        return {"input_ids": context, "context_ids": context}
    if hasattr(tok, "encode_language"):
        answer_ids = tok.encode_language(answer, "en") + [tok.canary_tokens["<|endoftext|>"]]
    else:
        answer_ids = tok.text_to_ids(answer, "en") + [tok.eos_id]
    return {"input_ids": context + answer_ids, "context_ids": context, "answer_ids": answer_ids}


@pytest.mark.parametrize("side", ["oasr_tok", "nemo"])
@pytest.mark.xfail(
    strict=True,
    reason="the answer's ids are those of a model trained at test time: the sentencepiece trainer "
    "installed here gives other ids to 'TEST' than the one the literal was written with, on "
    "NeMo's side as on ours (both equal each other: the next test)",
)
def test_canary_prompt_formatter_training(formatter_tokenizers, side):
    ans = _encode_dialog(formatter_tokenizers[side == "nemo"], "TEST")
    assert ans["input_ids"] == [4, 8, 7, 8, 5, 11, 91, 30, 40, 3]
    assert ans["context_ids"] == [4, 8, 7, 8, 5]
    assert ans["answer_ids"] == [11, 91, 30, 40, 3]


@pytest.mark.parametrize("side", ["oasr_tok", "nemo"])
def test_canary_prompt_formatter_inference(formatter_tokenizers, side):
    ans = _encode_dialog(formatter_tokenizers[side == "nemo"])
    assert ans["input_ids"] == ans["context_ids"] == [4, 8, 7, 8, 5]


def test_canary_prompt_formatter_training_as_nemo_gives_it_here(formatter_tokenizers):
    ours, theirs = formatter_tokenizers
    for answer in ("TEST", "Example user message.", "Feel free to add new tokens!?"):
        expected = _encode_dialog(theirs, answer)
        assert _encode_dialog(ours, answer) == expected
        assert expected["context_ids"] == [4, 8, 7, 8, 5] and expected["answer_ids"][-1] == 3
        assert ours.decode(expected["answer_ids"]) == theirs.ids_to_text(expected["answer_ids"][:-1])


# -- NeMo's tests/collections/asr/test_custom_tokenizer.py (NVIDIA/NeMo at
# 221a81463dff0cf93d13118326aaaaeca54c0d7d), translated. It was written for an older
# CanaryTokenizer.build_special_tokenizer(dir) with module constants SPECIAL_TOKENS and
# UNUSED_SPECIAL_TOKENS (a 32-piece special model), which NeMo 3.0 no longer has; its
# ASRBPEMixin config plumbing (torch) stands here as the aggregate spec of the same two folders.


@pytest.fixture(scope="module")
def custom_tokenizers(tmp_path_factory):
    classes = nemo_classes()
    spl_dir = tmp_path_factory.mktemp("spl_tokens")
    classes["CanaryTokenizer"].build_special_tokenizer([], spl_dir)
    lang_dir = tmp_path_factory.mktemp("klingon_tokens")
    (lang_dir / "text.txt").write_text("a\nb\nc\nd\n")
    classes["create_spt_model"](
        str(lang_dir / "text.txt"), vocab_size=8, sample_size=-1, do_lower_case=False, output_dir=str(lang_dir)
    )
    return _canary_pair(spl_dir, lang_dir)


def test_canary_tokenizer_build_special_tokenizer(custom_tokenizers):
    # NeMo 3.0's layout of the special model: <unk>, its DEFAULT_TOKENS, "▁"; the aggregate's
    # special sub-vocabulary is exactly it
    ours, theirs = custom_tokenizers
    spl = theirs.tokenizers_dict["spl_tokens"]
    pieces = [spl.tokenizer.IdToPiece(i) for i in range(spl.tokenizer.vocab_size())]
    assert pieces[0] == "<unk>" and pieces[-1] == "▁"
    assert [ours.id_to_piece(i) for i in range(len(pieces))] == pieces
    assert ours.special_ids == frozenset(range(len(pieces)))


def test_canary_tokenizer_init_from_cfg(custom_tokenizers):
    ours, theirs = custom_tokenizers
    assert set(theirs.tokenizers_dict) == {"spl_tokens", "en"}
    sizes = {lang: t.vocab_size for lang, t in theirs.tokenizers_dict.items()}
    assert ours.offsets == theirs.token_id_offset == {"spl_tokens": 0, "en": sizes["spl_tokens"]}
    assert ours.vocab_size == sum(sizes.values())
    assert ours.encode_language("<|startoftranscript|>", "spl_tokens") == theirs.text_to_ids(
        "<|startoftranscript|>", lang_id="spl_tokens"
    )
    assert ours.encode_language("a", "en") == theirs.text_to_ids("a", lang_id="en")


@pytest.mark.xfail(
    strict=True,
    reason="the literals are the older NeMo's: a 32-piece special model (SPECIAL_TOKENS + "
    "UNUSED_SPECIAL_TOKENS) and spl_tokens text encoded piece by piece ('_' first); NeMo 3.0's "
    "build_special_tokenizer makes a smaller model and encodes a special prompt token by token",
)
def test_canary_tokenizer_init_from_cfg_literals(custom_tokenizers):
    ours, _ = custom_tokenizers
    assert ours.offsets["en"] == 32
    assert ours.encode_language("<|startoftranscript|>", "spl_tokens") == [31, 3]
    assert ours.encode_language("a", "en") == [32 + 1, 32 + 2]
