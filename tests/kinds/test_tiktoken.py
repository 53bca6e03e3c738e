"""The tiktoken kind on Meta's two real tokenizer.model files (llama-models 0.3.0) and on a
Kimi-Audio-style tiktoken.model + tokenizer_config.json pair, against the references: Meta's own
Tokenizer (llama_models/llama3|4/tokenizer.py: its special tokens, its tiktoken Encoding's
decode / decode_bytes / encode), tiktoken itself, and vLLM 0.33.0's Kimi-Audio tokenizer and
slow incremental detokenizer (tests/kimi_audio_reference.py). The 100k-case sweep is
tests/kinds/test_tiktoken_differential.py."""

from __future__ import annotations

import json
import pickle
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import oasr_tok
from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.errors import EncodeError, InvalidIdError, MalformedAssetError, SpecError
from oasr_tok.kinds.tiktoken import (
    LLAMA3_PATTERN,
    LLAMA4_PATTERN,
    TiktokenTokenizer,
    llama3_special_tokens,
    llama4_special_tokens,
)

import kimi_audio_reference as kimi
from audio_files import AUDIO_OFFSET, kimi_folder, kimi_tokenizer
from cases import MULTISCRIPT
from cases.tiktoken import meta_file, meta_tokenizer
from paths import shared, subprocess_env

WHISPER = shared("whisper-tiktoken/multilingual.tiktoken")
META = ("llama3", "llama4")


@pytest.fixture(scope="module", params=META)
def meta(request):
    """(our tokenizer loaded from the file alone, Meta's Tokenizer of the same file)."""
    return oasr_tok.load(meta_file(request.param)), meta_tokenizer(request.param)


# -- Meta's layouts ---------------------------------------------------------------------------------


def test_meta_layouts_are_llama_models_own():
    from llama_models.llama3 import tokenizer as t3
    from llama_models.llama4 import tokenizer as t4

    assert LLAMA3_PATTERN == t3.Tokenizer.pat_str and LLAMA4_PATTERN == t4.Tokenizer.O200K_PATTERN
    for name, names in (("llama3", llama3_special_tokens()), ("llama4", llama4_special_tokens())):
        theirs = meta_tokenizer(name)
        first = len(theirs.model._mergeable_ranks)
        assert dict(zip(names, range(first, first + len(names)))) == theirs.special_tokens


def test_the_files_alone_load_as_tiktoken_with_metas_specials(meta):
    tok, theirs = meta
    assert type(tok) is TiktokenTokenizer and tok.spec.kind == "tiktoken"
    assert tok.special_token_ids == theirs.special_tokens
    assert tok.vocab_size == theirs.n_words == theirs.model.n_vocab
    assert tok.special_ids == frozenset(theirs.special_tokens.values())
    assert tok.pattern == theirs.model._pat_str
    s = tok.special_tokens
    assert (s.bos_id, s.eos_id, s.pad_id) == (theirs.bos_id, theirs.eos_id, theirs.pad_id)
    assert s.stop_ids == frozenset(theirs.stop_tokens)


def test_its_own_special_ids_decode(meta):
    # the bug this kind fixed: Llama 4's file loaded as Whisper refused ids past 201,607
    tok, theirs = meta
    ids = [tok.special_tokens.bos_id, *theirs.encode("Hi there", bos=False, eos=False), tok.vocab_size - 1]
    assert tok.decode(ids) == "Hi there"
    assert tok.with_specials().decode(ids) == theirs.decode(ids)


def test_whisper_vocabularies_stay_whispers(tmp_path):
    assert oasr_tok.resolve(WHISPER).kind == "whisper"
    renamed = tmp_path / "vocab.tiktoken"  # another name: multilingual's signature says whose it is
    shutil.copy(WHISPER, renamed)
    assert oasr_tok.resolve(str(renamed)).kind == "whisper"
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(WHISPER, folder / "multilingual.tiktoken")
    assert oasr_tok.resolve(str(folder)).kind == "whisper"


def test_a_folder_and_describe(tmp_path):
    shutil.copy(meta_file("llama3"), tmp_path / "tokenizer.model")
    d = oasr_tok.describe(tmp_path)
    assert d.kind == "tiktoken" and d.options == {"special_tokens": "llama3"}
    assert "128000 ranks" in dict(d.evidence)["special_ids"]
    # a rank file that is no one's layout loads with no special tokens, saying so
    lines = Path(meta_file("llama3")).read_bytes().splitlines()[:1000]
    (tmp_path / "tokenizer.model").write_bytes(b"\n".join(lines) + b"\n")
    d = oasr_tok.describe(tmp_path)
    assert d.kind == "tiktoken" and d.options == {} and "none" in dict(d.evidence)["special_ids"]
    tok = oasr_tok.load(tmp_path)
    assert tok.vocab_size == 1000 and not tok.special_ids
    with pytest.raises(EncodeError, match="option pattern"):
        tok.encode("hi")


def test_a_rank_file_beside_its_tokenizer_config_takes_the_configs_specials(tmp_path):
    folder = kimi_folder(tmp_path)
    d = oasr_tok.describe(folder)
    assert d.kind == "tiktoken" and set(d.files) == {"tiktoken", "tokenizer_config"}
    assert d.options == {"audio_ids": [AUDIO_OFFSET, AUDIO_OFFSET + 16896]}


# -- decode, decode_bytes, with_specials, encode: against Meta's tiktoken Encoding -----------------


def test_decode_is_tiktokens_decode_without_the_specials(meta):
    tok, theirs = meta
    rng = random.Random(52)
    special = sorted(tok.special_ids)
    view = tok.with_specials()
    for _ in range(300):
        ids = [rng.choice(special) if rng.random() < 0.2 else rng.randrange(tok.num_ranks) for _ in range(12)]
        kept = [i for i in ids if i not in tok.special_ids]
        assert tok.decode(ids) == theirs.model.decode(kept)
        assert tok.decode_bytes(ids) == theirs.model.decode_bytes(kept)
        assert view.decode(ids) == theirs.model.decode(ids) == theirs.decode(ids)
        assert view.decode_bytes(ids) == theirs.model.decode_bytes(ids)


def test_encode_is_metas(meta):
    tok, theirs = meta
    for text in (*MULTISCRIPT, "<|eot_id|> and <|eot|> written out", "  spaces\n\n\tand tabs  ", ""):
        assert tok.encode(text, split_special_tokens=True) == theirs.encode(text, bos=False, eos=False)
        assert tok.encode(text) == theirs.model.encode(text, allowed_special="all")
        assert tok.encode(text, add_special_tokens=True, split_special_tokens=True) == theirs.encode(
            text, bos=True, eos=False
        )
        assert tok.decode(tok.encode(text)) == theirs.decode(
            [i for i in theirs.model.encode(text, allowed_special="all") if i not in tok.special_ids]
        )


def test_ids_past_the_end_are_refused_by_a_typed_error(meta):
    tok, theirs = meta
    for bad in (tok.vocab_size, tok.vocab_size + 7, -1, 2**63):
        with pytest.raises(InvalidIdError, match=str(bad)):
            tok.decode([1, bad])
        with pytest.raises(InvalidIdError):
            tok.with_specials().decode([bad])
        with pytest.raises((KeyError, OverflowError)):  # tiktoken refuses them too, untyped
            theirs.model.decode([bad])


def test_token_pieces_and_word_timings(meta):
    tok, _ = meta
    ids = tok.encode("Transcribe: 今天天气很好 😀 café")
    ids.insert(3, tok.special_tokens.bos_id)
    pieces = tok.token_pieces(ids)
    assert "".join(pieces) == tok.decode(ids) and len(pieces) == len(ids)
    words = tok.word_timings(ids, [0.1 * k for k in range(len(ids))])
    assert "".join(w.text for w in words) == tok.decode(ids).replace(" ", "")


def test_pickles_by_value_and_by_spec(meta):
    tok, _ = meta
    ids = tok.encode("hello 世界 <|eot_id|>")
    again = pickle.loads(pickle.dumps(tok))
    assert again.decode(ids) == tok.decode(ids) and again.special_token_ids == tok.special_token_ids
    tok.pickle_mode = "spec"
    try:
        again = pickle.loads(pickle.dumps(tok))
    finally:
        del tok.pickle_mode
    assert again.spec == tok.spec and again.decode(ids) == tok.decode(ids)
    stream = tok.new_stream()
    first = stream.feed(ids[:2])
    moved = pickle.loads(pickle.dumps(stream))
    assert first + moved.feed(ids[2:], final=True) == tok.decode(ids)


def test_decoding_needs_no_tiktoken():
    script = (
        "import sys; sys.modules['tiktoken'] = None\n"
        "import oasr_tok\n"
        "from oasr_tok.errors import BackendNotInstalledError\n"
        f"tok = oasr_tok.load({meta_file('llama3')!r})\n"
        "assert tok.decode([128000, 9906, 128009]) == 'Hello'\n"
        "try:\n    tok.encode('x')\nexcept BackendNotInstalledError as e:\n    print('refused', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=subprocess_env()
    )
    assert done.returncode == 0, done.stderr
    assert "refused" in done.stdout and "oasr_tok[tiktoken]" in done.stdout


# -- options and bad files -----------------------------------------------------------------------


def test_the_caller_gives_specials_and_pattern(tmp_path):
    path = tmp_path / "small.tiktoken"
    path.write_bytes(b"\n".join(Path(meta_file("llama3")).read_bytes().splitlines()[:3000]) + b"\n")
    spec = TokenizerSpec(
        "tiktoken", {"tiktoken": str(path)}, {"special_tokens": {"<|a|>": 3000, "<|b|>": 3002}, "pattern": r"\S+|\s+"}
    )
    tok = build_tokenizer(spec)
    import tiktoken

    ranks = {b: i for i, b in enumerate(tok.id_to_bytes(i) for i in range(3000))}
    theirs = tiktoken.Encoding(
        "x", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={"<|a|>": 3000, "<|b|>": 3002}
    )
    assert tok.vocab_size == theirs.n_vocab == 3003
    assert tok.special_ids == {3000, 3001, 3002}  # the hole at 3001 renders nothing
    text = "the <|a|>dog said <|b|> hi"
    assert tok.encode(text) == theirs.encode(text, allowed_special="all")
    ids = tok.encode(text) + [3001]
    assert tok.decode(ids) == theirs.decode([i for i in ids if i < 3000])
    assert tok.with_specials().decode(ids[:-1]) == theirs.decode(ids[:-1]) == text


@pytest.mark.parametrize(
    "options, match",
    [
        ({"special_tokens": "llama2"}, "llama3"),
        ({"special_tokens": "llama4"}, "128000 ranks"),
        ({"special_tokens": {"<|a|>": 5}}, "rank 5"),
        ({"special_tokens": {"<|a|>": 128000, "<|b|>": 128000}}, "id 128000"),
        ({"special_tokens": {"<|a|>": 10**9}}, "far beyond"),
        ({"special_tokens": ["<|a|>"]}, "mapping"),
        ({"pattern": ""}, "pattern"),
        ({"audio_ids": [5, 3]}, "audio_ids"),
        ({"audio_ids": "152064"}, "audio_ids"),
        ({"languages": 3}, "unknown option"),
    ],
)
def test_bad_options_raise_spec_error(options, match):
    with pytest.raises(SpecError, match=match):
        build_tokenizer(TokenizerSpec("tiktoken", {"tiktoken": meta_file("llama3")}, options))


def test_a_pattern_tiktoken_cannot_compile_is_the_options_fault():
    tok = build_tokenizer(TokenizerSpec("tiktoken", {"tiktoken": meta_file("llama3")}, {"pattern": "(unclosed"}))
    assert tok.decode([9906]) == "Hello"
    with pytest.raises(SpecError, match="option pattern"):
        tok.encode("Hello")


def test_one_source_of_special_tokens(tmp_path):
    folder = kimi_folder(tmp_path)
    files = {"tiktoken": str(folder / "tiktoken.model"), "tokenizer_config": str(folder / "tokenizer_config.json")}
    with pytest.raises(SpecError, match="one source"):
        build_tokenizer(TokenizerSpec("tiktoken", files, {"special_tokens": "llama3"}))


BAD = {
    "one field": (b"IQ== 0\nIg==\n", 2),
    "rank gap": (b"IQ== 0\nIg== 2\n", 2),
    "not base64": (b"IQ== 0\n!!== 1\n", 2),
    "bad padding": (b"IQ== 0\nIg= 1\n", 2),
    "duplicate bytes": (b"IQ== 0\nIQ== 1\n", 2),
    "rank not a number": (b"IQ== zero\n", 1),
    "blank line": (b"IQ== 0\n\nIg== 1\n", 2),
    "not utf-8": (b"IQ== 0\n\xff\xfe 1\n", 2),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_bad_rank_files_name_file_and_line(tmp_path, what):
    data, line = BAD[what]
    path = tmp_path / "tokenizer.model"
    path.write_bytes(data)
    with pytest.raises(MalformedAssetError) as caught:
        build_tokenizer(TokenizerSpec("tiktoken", {"tiktoken": str(path)}))
    assert caught.value.path == str(path) and caught.value.line == line
    assert f"{path}:{line}" in str(caught.value)


def test_a_config_special_on_a_rank_is_refused(tmp_path):
    folder = kimi_folder(tmp_path)
    config = folder / "tokenizer_config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["added_tokens_decoder"]["17"] = {"content": "<|x|>", "special": True}
    config.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MalformedAssetError, match="rank 17"):
        oasr_tok.load(folder)


# -- Kimi-Audio's layout: a tiktoken.model and its tokenizer_config.json -------------------------


@pytest.fixture(scope="module")
def kimi_pair(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("kimi")
    return kimi_tokenizer(tmp_path), kimi.KimiAudioTokenizer(kimi_folder(tmp_path) / "tiktoken.model")


def test_kimi_layout_decodes_as_vllm_reads_it(kimi_pair):
    tok, theirs = kimi_pair
    assert tok.spec.kind == "tiktoken"
    assert tok.vocab_size == len(theirs) == 128000 + 421
    assert tok.special_token_ids == theirs._special_tokens
    assert tok.special_ids == frozenset(theirs._special_tokens.values())
    assert (tok.special_tokens.bos_id, tok.special_tokens.eos_id) == (128000, 128001)
    assert tok.chat_template is not None
    rng = random.Random(52)
    specials = sorted(tok.special_ids)
    view = tok.with_specials()
    for _ in range(300):
        ids = [rng.choice(specials) if rng.random() < 0.25 else rng.randrange(tok.num_ranks) for _ in range(10)]
        assert tok.decode(ids) == theirs.decode(ids, skip_special_tokens=True)
        assert view.decode(ids) == theirs.decode(ids, skip_special_tokens=False)
    for text in (
        *MULTISCRIPT,
        "<|im_kimia_user_msg_start|>请撰写这段语音：<|im_msg_end|><|im_kimia_assistant_msg_start|>",
    ):
        assert tok.encode(text) == theirs._tokenizer.encode(text, allowed_special="all")
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}]) == (
        "<|im_kimia_user_msg_start|>hi<|im_msg_end|>"
    )


def test_kimi_split_characters_stream_right_where_vllms_slow_path_goes_wrong(kimi_pair):
    """vLLM streams Kimi-Audio by its slow path, whose tokens are each id's bytes decoded alone
    with errors="replace" and mapped back to ids by that string: the tokens of a character
    split across ids all read "\ufffd"-something and come back as other ids. Our stream is the
    decode of the ids so far, held back only while a character is incomplete."""
    tok, theirs = kimi_pair
    single = {tok.id_to_bytes(i): i for i in range(tok.num_ranks) if len(tok.id_to_bytes(i)) == 1}
    prompt = tok.encode("Transcribe the audio:")  # (vLLM hard-codes Kimi's own special ids: none here)
    for text in ("中文", "😀 ok", "café 東京", "สวัสดี"):
        # each character as its single-byte ranks: a character split across tokens
        generated = [single[bytes([b])] for b in text.encode("utf-8")]
        truth = tok.decode(generated)
        assert truth == text
        stream = tok.new_stream(prefill=prompt)
        ours = "".join(stream.feed([i]) for i in generated) + stream.feed([], final=True)
        assert ours == truth
        # vLLM's slow path: "中文" gives "" (its text ends in U+FFFD at every step, so it is held
        # forever), "😀 ok" gives "\ufffd\ufffd\ufffd\ufffd ok", "café 東京" gives "caf\ufffd\ufffd "
        vllm = kimi.stream(theirs, prompt, generated)
        assert vllm != truth and "\ufffd" in "".join(theirs.convert_ids_to_tokens(generated))
