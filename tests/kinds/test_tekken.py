"""tekken against mistral-common's Tekkenizer on the files it ships and on a derived file in
the listed-specials layout: the id layout, special tokens by name, decode with
SpecialTokenPolicy.IGNORE on random and adversarial ids (byte runs split by specials,
incomplete characters at the end, genuine U+FFFD, invalid bytes), encode, and every refusal of
a bad file as a MalformedAssetError naming file and key (fuzzed too)."""

from __future__ import annotations

import array
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
from mistral_common.tokens.tokenizers.tekken import Tekkenizer

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok._engine.piece_table import FLAG_BREAK, FLAG_SKIP, PieceTable
from oasr_tok.errors import (
    InvalidIdError,
    MalformedAssetError,
    NonIntegerIdError,
)
from oasr_tok.kinds.tekken import BUILTIN_SPECIAL_TOKENS, TekkenTokenizer

import elsewhere
from cases import MULTISCRIPT
from paths import subprocess_env
from tekken_files import LISTED_SPECIALS, path_of, reference, write_derived

NAMES = ("tekken_240718.json", "tekken_240911.json", "derived")
_built: dict[str, TekkenTokenizer] = {}


def tok_of(name: str) -> TekkenTokenizer:
    if name not in _built:
        tok = build_tokenizer(TokenizerSpec("tekken", {"tekken": path_of(name)}))
        assert isinstance(tok, TekkenTokenizer)
        _built[name] = tok
    return _built[name]


def ref_decode(name: str, ids: list[int]) -> str:
    return reference(name).decode(ids, SpecialTokenPolicy.IGNORE)


# -- the id layout and the special tokens ------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_layout_matches_mistral_common(name):
    tok, ref = tok_of(name), reference(name)
    assert tok.vocab_size == ref.n_words
    assert tok.num_special_tokens == ref.num_special_tokens
    assert tok.special_ids == frozenset(ref.special_ids) == frozenset(range(ref.num_special_tokens))
    assert tok.special_token_names == tuple(t["token_str"] for t in ref._all_special_tokens)
    for token_name, token_id in tok.special_token_ids.items():
        assert ref.get_special_token(token_name) == token_id
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.unk_id) == (ref.bos_id, ref.eos_id, ref.pad_id, ref.unk_id)
    assert [tok.is_control(i) for i in range(tok.num_special_tokens)] == [
        t["is_control"] for t in ref._all_special_tokens
    ]
    rng = random.Random(name)
    sample = [*range(tok.num_special_tokens + 300), *rng.sample(range(tok.vocab_size), 3000), tok.vocab_size - 1]
    for token_id in sample:
        assert tok.id_to_piece(token_id) == ref.id_to_piece(token_id), token_id
        assert tok.id_to_bytes(token_id) == ref.id_to_byte_piece(token_id, SpecialTokenPolicy.IGNORE)


@pytest.mark.parametrize("name", ["tekken_240718.json", "tekken_240911.json"])
def test_old_files_get_mistral_commons_builtin_specials(name):
    tok = tok_of(name)
    assert not tok.lists_special_tokens
    builtin = tuple(t["token_str"] for t in Tekkenizer.DEPRECATED_SPECIAL_TOKENS)
    assert BUILTIN_SPECIAL_TOKENS == builtin
    assert tok.special_token_names[: len(builtin)] == builtin
    assert tok.special_token_names[len(builtin)] == f"<SPECIAL_{len(builtin)}>"


def test_listed_specials_are_read_by_name_from_the_file():
    tok, ref = tok_of("derived"), reference("derived")
    assert tok.lists_special_tokens
    assert tok.special_token_names[: len(LISTED_SPECIALS)] == LISTED_SPECIALS
    for name in ("[AUDIO]", "[BEGIN_AUDIO]", "[TRANSCRIBE]", "[INST]"):
        assert tok.special_token_id(name) == ref.get_special_token(name)
    assert not tok.is_control(tok.special_token_id("[ARGS]"))
    with pytest.raises(KeyError, match="NOPE"):
        tok.special_token_id("[NOPE]")
    # The old files have no audio tokens: they are never hard-coded.
    assert "[AUDIO]" not in tok_of("tekken_240911.json").special_token_ids


# -- decode --------------------------------------------------------------------------------------


def adversarial(tok: TekkenTokenizer, rng: random.Random, length: int) -> list[int]:
    """Ids that stress the byte runs: single bytes of multi-byte characters, specials between
    them, genuine U+FFFD and invalid bytes, long tokens, vocabulary edges."""
    s = tok.num_special_tokens
    pools = [
        lambda: s + rng.choice([0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0xEF, 0xBF, 0xBD, 0xFF, 0x20]),
        lambda: rng.randrange(s),
        lambda: rng.randrange(tok.vocab_size),
        lambda: rng.choice([0, s - 1, s, s + 255, s + 256, tok.vocab_size - 1]),
    ]
    return [rng.choice(pools)() for _ in range(length)]


@pytest.mark.parametrize("name", NAMES)
def test_decode_equals_mistral_common_on_random_and_adversarial_ids(name):
    tok = tok_of(name)
    rng = random.Random(f"decode {name}")
    for _ in range(1500):
        ids = adversarial(tok, rng, rng.randrange(0, 40))
        expected = ref_decode(name, ids)
        assert tok.decode(ids) == expected, ids
        assert "".join(tok.token_pieces(ids)) == expected, ids
        assert tok.decode_batch([ids, ids[::-1]]) == [expected, ref_decode(name, ids[::-1])]


@pytest.mark.parametrize("name", NAMES)
def test_bytes_never_join_across_a_special(name):
    tok = tok_of(name)
    s = tok.num_special_tokens
    zhong = [s + 0xE4, s + 0xB8, s + 0xAD]
    assert tok.decode(zhong) == "中" == ref_decode(name, zhong)
    split = [s + 0xE4, s + 0xB8, tok.bos_id, s + 0xAD]
    assert tok.decode(split) == ref_decode(name, split) == "\ufffd\ufffd"
    # streamed one token at a time, the special settles the first half at once (and the
    # lone continuation byte after it is invalid at once)
    state: dict = {}
    deltas = [tok.decode_incremental([i], state) for i in split]
    assert deltas == ["", "", "\ufffd", "\ufffd"]
    assert tok.decode_incremental([], state, final=True) == ""
    # the pieces put the broken run's U+FFFD on the token that printed it, "" on the special
    assert tok.token_pieces(split) == ["", "\ufffd", "", "\ufffd"]


@pytest.mark.parametrize("name", NAMES)
def test_realistic_streams_equal_mistral_common(name):
    tok = tok_of(name)
    for text in MULTISCRIPT:
        ids = [tok.bos_id, *tok.encode(text), tok.eos_id]
        assert tok.decode(ids) == ref_decode(name, ids) == text


def test_out_of_range_and_non_integer_ids_raise_invalid_id_error():
    tok = tok_of("derived")
    for bad in ([tok.vocab_size], [-1], [1.5], ["3"], [True, 10**30]):
        with pytest.raises(InvalidIdError):
            tok.decode(bad)
        with pytest.raises(InvalidIdError):
            tok.token_pieces(bad)
        state: dict = {}
        with pytest.raises(InvalidIdError):
            tok.decode_incremental(bad, state)
        assert state == {}
    with pytest.raises(InvalidIdError):
        tok.id_to_piece(tok.vocab_size)


def _id_containers(ids: list[int]) -> dict[str, object]:
    """The same ids in the containers recognisers hand over (decode reads buffers in place)."""
    wide = np.zeros(2 * len(ids), dtype=np.int64)
    wide[::2] = ids
    frozen = np.array(ids, dtype=np.int64)
    frozen.setflags(write=False)
    unsigned = {"uint32": np.array(ids, dtype=np.uint32)} if min(ids) >= 0 else {}
    return {
        "list": ids,
        "int64": np.array(ids, dtype=np.int64),
        "int32": np.array(ids, dtype=np.int32),
        **unsigned,
        "strided": wide[::2],
        "reversed": np.array(ids[::-1], dtype=np.int32)[::-1],
        "big-endian": np.array(ids, dtype=">i8"),
        "read-only": frozen,
        "array.array": array.array("q", ids),
        "tuple": tuple(ids),
    }


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("length", [40, 5000])  # 5000: a list this long is read in place
def test_decode_of_id_buffers_with_and_without_specials_equals_mistral_common(name, length):
    tok, ref = tok_of(name), reference(name)
    view = tok.with_specials()
    s = tok.num_special_tokens
    rng = random.Random(f"buffers {name} {length}")
    ordinary = [rng.randrange(s, tok.vocab_size) for _ in range(length)]
    ordinary[length // 2 : length // 2 + 2] = [s + 0xE4, s + 0xB8]  # a character cut short inside the run
    mixed = adversarial(tok, rng, length)
    for what, ids in [
        ("no special", ordinary),
        ("specials throughout", mixed),
        ("bos first", [tok.bos_id, *ordinary]),
        ("eos last", [*ordinary, tok.eos_id]),
        ("a special cutting a character", [*ordinary[:10], s + 0xE4, tok.bos_id, s + 0xB8, s + 0xAD]),
    ]:
        ignored, kept = ref.decode(ids, SpecialTokenPolicy.IGNORE), ref.decode(ids, SpecialTokenPolicy.KEEP)
        for layout, container in _id_containers(ids).items():
            assert tok.decode(container) == ignored, (what, layout)
            assert view.decode(container) == kept, (what, layout)


@pytest.mark.parametrize("length", [40, 5000])
def test_decode_names_a_bad_id_in_a_buffer_before_or_after_a_special(length):
    tok = tok_of("derived")
    s, size = tok.num_special_tokens, tok.vocab_size
    run = [s + 7] * length
    for ids, value, position in [
        ([*run, size], size, length),
        ([tok.bos_id, *run, -1], -1, length + 1),  # a special before the bad id
        ([*run, tok.eos_id, size + 5], size + 5, length + 1),
        ([-2, tok.bos_id, *run], -2, 0),
    ]:
        for container in _id_containers(ids).values():
            for decode in (tok.decode, tok.with_specials().decode):
                with pytest.raises(InvalidIdError, match=f"token id {value} at position {position} is out of range"):
                    decode(container)
    for bad in (np.array([s, s + 1.0]), np.zeros((2, 3), dtype=np.int64), "ids"):
        with pytest.raises(NonIntegerIdError):
            tok.decode(bad)


# -- encode --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_encode_equals_mistral_common(name):
    tok, ref = tok_of(name), reference(name)
    texts = (*MULTISCRIPT, "", " ", "\n\n", "a" * 500)
    for text in texts:
        assert tok.encode(text) == ref.encode(text, bos=False, eos=False), text
    # mistral-common never matches special-token names: split_special_tokens=True is its encode
    markup = "[INST] markup is text [/INST] <s>"
    assert tok.encode(markup, split_special_tokens=True) == ref.encode(markup, bos=False, eos=False)


@settings(max_examples=150)
@given(text=st.text(max_size=60))
def test_encode_equals_mistral_common_on_any_text(text):
    ref = reference("derived")
    assert tok_of("derived").encode(text, split_special_tokens=True) == ref.encode(text, bos=False, eos=False)
    assert tok_of("derived").encode(text, add_special_tokens=True, split_special_tokens=True) == ref.encode(
        text, bos=True, eos=False
    )


# -- the prompt side (docs/prompts.md) -------------------------------------------------------------

SPECIAL_TEXTS = (
    "[INST] hello [/INST]",
    "<s>hi</s> there <unk> and <s>",
    "a[/INST]b[INST]c",
    "[AUDIO][AUDIO] x",
    "<SPECIAL_40> and [TRANSCRIBE]",
    "[INST[INST]]",
    "",
)


def _reference_with_names(name: str, text: str) -> list[int]:
    """Special-token names in `text` as their ids (longest first), the stretches between
    encoded by mistral-common, no bos/eos."""
    ref = reference(name)
    names = sorted((ref.id_to_piece(i) for i in range(ref.num_special_tokens)), key=len, reverse=True)
    import re

    out: list[int] = []
    for part in re.split("(" + "|".join(map(re.escape, names)) + ")", text):
        if not part:
            continue
        if part in names:
            out.append(ref.get_special_token(part))
        else:
            out += ref.encode(part, bos=False, eos=False)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_special_tokens_are_mistral_commons_roles(name):
    tok, ref = tok_of(name), reference(name)
    specials = tok.special_tokens
    assert (specials.bos_id, specials.eos_id, specials.pad_id, specials.unk_id) == (
        ref.bos_id,
        ref.eos_id,
        ref.pad_id,
        ref.unk_id,
    )
    assert specials.sep_id is specials.cls_id is specials.mask_id is None
    assert specials.stop_ids == {ref.eos_id}
    assert "'</s>'" in specials.source("eos") and specials.source(f"stop:{ref.eos_id}")
    for token_id in (0, 3, tok.num_special_tokens - 1):
        assert tok.piece_to_id(ref.id_to_piece(token_id)) == token_id
    s = tok.num_special_tokens
    for token_id in range(s + 256, s + 400):  # merged ranks: distinct bytes, so distinct text when valid
        piece = ref.id_to_piece(token_id)
        if "\ufffd" not in piece:
            assert tok.piece_to_id(piece) == token_id


@pytest.mark.parametrize("name", NAMES)
def test_encode_matches_special_names_and_adds_bos(name):
    tok, ref = tok_of(name), reference(name)
    for text in (*SPECIAL_TEXTS, *MULTISCRIPT):
        assert tok.encode(text) == _reference_with_names(name, text), text
        assert tok.encode(text, add_special_tokens=True) == [ref.bos_id, *_reference_with_names(name, text)]
        assert tok.encode(text, split_special_tokens=True) == ref.encode(text, bos=False, eos=False)
    assert tok.encode_batch(list(SPECIAL_TEXTS), add_special_tokens=True) == [
        tok.encode(t, add_special_tokens=True) for t in SPECIAL_TEXTS
    ]


def test_encode_and_keep_decode_equal_transformers_mistral_common_backend(tmp_path):
    """transformers' MistralCommonBackend over the same tekken.json: its tok(text).input_ids
    (bos, no eos) and decode(skip_special_tokens=False / True)."""
    transformers = pytest.importorskip("transformers")
    import shutil

    shutil.copy(path_of("tekken_240911.json"), tmp_path / "tekken.json")
    hf = transformers.MistralCommonBackend.from_pretrained(str(tmp_path))
    tok = tok_of("tekken_240911.json")
    for text in MULTISCRIPT:
        assert tok.encode(text, add_special_tokens=True, split_special_tokens=True) == hf(text).input_ids
    rng = random.Random("transformers keep")
    for _ in range(200):
        ids = adversarial(tok, rng, rng.randrange(1, 30))
        assert tok.with_specials().decode(ids) == hf.decode(ids, skip_special_tokens=False), ids
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=True), ids


@pytest.mark.parametrize("name", NAMES)
def test_with_specials_equals_mistral_common_keep(name):
    tok, ref = tok_of(name), reference(name)
    view = tok.with_specials()
    assert view.special_ids == frozenset() and view.with_specials() is view and tok.with_specials() is view
    assert view.special_tokens == tok.special_tokens
    rng = random.Random(f"keep {name}")
    for _ in range(800):
        ids = adversarial(tok, rng, rng.randrange(0, 40))
        expected = ref.decode(ids, SpecialTokenPolicy.KEEP)
        assert view.decode(ids) == expected, ids
        assert "".join(view.token_pieces(ids)) == expected, ids
        state: dict = {}
        streamed = "".join(view.decode_incremental([i], state) for i in ids)
        assert streamed + view.decode_incremental([], state, final=True) == expected
    s = tok.num_special_tokens
    split = [s + 0xE4, s + 0xB8, tok.bos_id, s + 0xAD]  # a special name still cuts the byte run
    assert view.decode(split) == ref.decode(split, SpecialTokenPolicy.KEEP) == "\ufffd<s>\ufffd"
    assert view.encode("[INST]x", add_special_tokens=True) == tok.encode("[INST]x", add_special_tokens=True)


def test_with_specials_view_pickles_as_a_view():
    import pickle

    view = tok_of("derived").with_specials()
    ids = [1, 3, *tok_of("derived").encode("hi"), 4, 2]
    back = elsewhere.loads(pickle.dumps(view))
    assert back.special_ids == frozenset() and back.decode(ids) == view.decode(ids) == "<s>[INST]hi[/INST]</s>"


def test_chat_template_given_explicitly_uses_the_tekken_specials():
    tok = tok_of("derived")
    assert tok.chat_template is None
    template = (
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]"
        "{% else %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}"
    )
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    text = tok.apply_chat_template(messages, chat_template=template)
    assert text == "<s>[INST]Hi[/INST]Hello!</s>"
    ids = tok.apply_chat_template(messages, chat_template=template, tokenize=True)
    ref = reference("derived")
    assert ids == [1, 3, *ref.encode("Hi", bos=False, eos=False), 4, *ref.encode("Hello!", bos=False, eos=False), 2]


def test_decoding_needs_no_tiktoken():
    script = (
        "import sys; sys.modules['tiktoken'] = None\n"
        "from oasr_tok import TokenizerSpec, build_tokenizer\n"
        "from oasr_tok.errors import BackendNotInstalledError\n"
        f"tok = build_tokenizer(TokenizerSpec('tekken', {{'tekken': {path_of('derived')!r}}}))\n"
        "s = tok.num_special_tokens\n"
        "assert tok.decode([1, s + 0xE4, s + 0xB8, s + 0xAD, 2]) == '中'\n"
        "try:\n    tok.encode('x')\nexcept BackendNotInstalledError as e:\n    print('refused', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=subprocess_env()
    )
    assert done.returncode == 0, done.stderr
    assert "refused" in done.stdout and "oasr_tok[tekken]" in done.stdout


# -- the engine's FLAG_BREAK, against the rule it implements ------------------------------------


@settings(max_examples=300)
@given(ids=st.lists(st.integers(0, 7), max_size=30), cut=st.integers(0, 30))
def test_engine_break_flag_decodes_each_run_on_its_own(ids, cut):
    pieces = [b"", b"", b"\xe4", b"\xb8\xad", b"\xf0\x9f", b"\x98\x80a", b"\xff", b"\xef\xbf\xbd"]
    flags = bytes([FLAG_SKIP, FLAG_SKIP | FLAG_BREAK, 0, 0, 0, 0, 0, 0])
    table = PieceTable(pieces, flags=flags, mode="bytes")
    runs, run = [], b""
    for i in ids:
        if i == 1:
            runs.append(run)
            run = b""
        else:
            run += pieces[i]
    expected = "".join(r.decode("utf-8", "replace") for r in [*runs, run])
    assert table.render(ids) == expected
    state: dict = {}
    out = table.decode_incremental(ids[:cut], state) + table.decode_incremental(ids[cut:], state)
    assert state["text"] == expected
    assert out + table.decode_incremental([], state, final=True) == expected
    with pytest.raises(ValueError, match="FLAG_BREAK"):
        PieceTable([b"x"], flags=bytes([FLAG_BREAK]), mode="bytes")


# -- bad files -----------------------------------------------------------------------------------

BAD_FILES = {
    "config missing": ({"config": None}, "config"),
    "version unknown": ({"config": {"version": "three"}}, "config.version"),
    "vocab size short": ({"config": {"default_vocab_size": 64 + 8000}}, "config.default_vocab_size"),
    "fewer ids than specials": ({"config": {"default_vocab_size": 10}}, "config.default_vocab_size"),
    "negative specials": ({"config": {"default_num_special_tokens": -1}}, "config.default_num_special_tokens"),
    "huge specials": (
        {"config": {"default_num_special_tokens": 10**12, "default_vocab_size": 10**12}},
        "config.default_num_special_tokens",
    ),
    "pattern missing": ({"config": {"pattern": None}}, "config.pattern"),
    "vocab not a list": ({"vocab": {"a": 1}}, "vocab"),
    "rank out of place": ({"vocab": "swap ranks"}, "vocab[300].rank"),
    "bad base64": ({"vocab": "bad base64"}, "vocab[300].token_bytes"),
    "byte rank wrong": ({"vocab": "byte rank"}, "vocab[65].token_bytes"),
    "duplicate bytes": ({"vocab": "duplicate"}, "vocab[301].token_bytes"),
    "extra key": ({"vocab": "extra key"}, "vocab[7]"),
    "v11 without specials": ({"special_tokens": None}, "special_tokens"),
    "duplicate special": ({"special_tokens": "duplicate"}, "special_tokens[3].token_str"),
    "special rank": ({"special_tokens": "rank"}, "special_tokens[2].rank"),
    "too many specials": ({"special_tokens": "too many"}, "special_tokens"),
    "filler clash": ({"special_tokens": "filler"}, "special_tokens"),
}

# Files we refuse that mistral-common takes (or must not be handed).
LENIENT_REFERENCE = {
    "special rank": "mistral-common takes any rank but indexes specials by position, so ids disagree",
    "huge specials": "mistral-common would try to build 10**12 filler tokens",
}


def _bad_file(folder: str, what: str) -> str:
    changes, _ = BAD_FILES[what]
    source = json.loads(Path(path_of("derived")).read_text(encoding="utf-8"))
    out = dict(source)
    if "config" in changes:
        out["config"] = None if changes["config"] is None else {**source["config"], **changes["config"]}
    vocab = [dict(v) for v in source["vocab"]]
    specials = [dict(t) for t in source["special_tokens"]]
    edit = changes.get("vocab")
    if isinstance(edit, dict):
        out["vocab"] = edit
    elif edit == "swap ranks":
        vocab[300]["rank"], vocab[301]["rank"] = 301, 300
    elif edit == "bad base64":
        vocab[300]["token_bytes"] = "!!not base64"
    elif edit == "byte rank":
        vocab[65]["token_bytes"] = "Qg=="  # "B" where "A" belongs
    elif edit == "duplicate":
        vocab[301]["token_bytes"] = vocab[300]["token_bytes"]
    elif edit == "extra key":
        vocab[7]["score"] = 1.0
    if edit is not None and not isinstance(edit, dict):
        out["vocab"] = vocab
    edit = changes.get("special_tokens", "keep")
    if edit is None:
        del out["special_tokens"]
    elif edit == "duplicate":
        specials[3]["token_str"] = specials[1]["token_str"]
    elif edit == "rank":
        specials[2]["rank"] = 7
    elif edit == "too many":
        specials += [{"rank": i, "token_str": f"[X{i}]", "is_control": True} for i in range(len(specials), 80)]
    elif edit == "filler":
        specials[5]["token_str"] = "<SPECIAL_40>"
    if edit != "keep" and edit is not None:
        out["special_tokens"] = specials
    path = os.path.join(folder, "tekken.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    return path


@pytest.mark.parametrize("what", sorted(BAD_FILES))
def test_bad_files_raise_malformed_naming_file_and_key(tmp_path, what):
    path = _bad_file(str(tmp_path), what)
    with pytest.raises(MalformedAssetError) as caught:
        build_tokenizer(TokenizerSpec("tekken", {"tekken": path}))
    assert path in str(caught.value) and BAD_FILES[what][1] in str(caught.value)
    assert caught.value.path == path
    # mistral-common refuses the same file (its asserts and ValueErrors), except where it
    # is lenient about what we refuse (LENIENT_REFERENCE says where and why).
    if what not in LENIENT_REFERENCE:
        with pytest.raises(
            (AssertionError, ValueError, KeyError, TypeError, AttributeError, OverflowError, MemoryError)
        ):
            Tekkenizer.from_file(path)


def test_not_json_and_truncated_files(tmp_path):
    path = tmp_path / "tekken.json"
    text = Path(path_of("derived")).read_text(encoding="utf-8")
    for broken in (text[: len(text) // 2], "", "[1, 2]", '{"config": 3}'):
        path.write_text(broken, encoding="utf-8")
        with pytest.raises(MalformedAssetError, match="tekken.json"):
            TekkenTokenizer(str(path))


def test_fuzzed_files_load_or_raise_malformed(tmp_path):
    """Bit flips and cuts anywhere in a small file: a MalformedAssetError naming it, or a
    tokenizer whose decode still equals mistral-common's on the same file."""
    source = json.dumps(json.loads(Path(path_of("derived")).read_text(encoding="utf-8"))).encode()
    rng = random.Random(17)
    path = tmp_path / "tekken.json"
    loaded = 0
    for trial in range(60):
        data = bytearray(source)
        if trial % 3 == 0:
            data = data[: rng.randrange(len(data))]
        for _ in range(rng.randrange(1, 4)):
            k = rng.randrange(len(data))
            data[k] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        try:
            tok = TekkenTokenizer(str(path))
        except MalformedAssetError as exc:
            assert str(path) in str(exc)
            continue
        loaded += 1
        ref = Tekkenizer.from_file(path)
        ids = adversarial(tok, rng, 50)
        assert tok.decode(ids) == ref.decode(ids, SpecialTokenPolicy.IGNORE)
    assert loaded < 60


def test_derived_writer_changes_apply(tmp_path):
    # the writer used above really produces the layout the tests claim
    path = write_derived(
        str(tmp_path),
        config={
            "pattern": "x",
            "version": "v7",
            "default_vocab_size": 300,
            "default_num_special_tokens": 30,
            "num_vocab_tokens": 300,
        },
    )
    tok = TekkenTokenizer(path)
    assert (tok.vocab_size, tok.num_special_tokens, tok.version) == (300, 30, "v7")


def test_demo_entry_is_what_mistral_common_prints():
    from oasr_tok import demo

    entry = next(e for e in demo.load_manifest() if e["kind"] == "tekken")
    ref = Tekkenizer.from_file(demo.DATA / entry["files"]["tekken"])
    assert ref.decode(entry["ids"], SpecialTokenPolicy.IGNORE) == entry["expected"]
    tok = TekkenTokenizer(str(demo.DATA / entry["files"]["tekken"]))
    assert tok.decode(entry["ids"]) == entry["expected"]
    assert tok.special_token_id("[TRANSCRIBE]") == ref.get_special_token("[TRANSCRIBE]")


# -- resolution ----------------------------------------------------------------------------------


def test_a_folder_with_tekken_json_and_tokenizer_json_resolves_to_tekken(tmp_path):
    import shutil

    from oasr_tok import describe, load, resolve

    from paths import shared

    shutil.copy(path_of("derived"), tmp_path / "tekken.json")
    shutil.copy(shared("huggingface/mistral-7b/tokenizer.json"), tmp_path / "tokenizer.json")
    spec = resolve(tmp_path)
    assert spec.kind == "tekken" and spec.files == {"tekken": str(tmp_path / "tekken.json")}
    d = describe(tmp_path)
    assert d.kind == "tekken" and d.error is None and d.vocab_size == reference("derived").n_words
    kind_evidence = dict(d.evidence)["kind"]
    assert "v11" in kind_evidence and "25 special tokens listed" in kind_evidence
    assert [lost["kind"] for lost in d.lost] == ["huggingface"]
    assert "mistral-common loads" in d.lost[0]["reason"]
    assert d.special_pieces[1] == "<s>" and d.special_pieces[3] == "[INST]"
    assert load(tmp_path).decode([1, *tok_of("derived").encode("hi"), 2]) == "hi"


@pytest.mark.parametrize("name", ["tekken_240718.json", "tekken_240911.json"])
def test_a_tekken_file_alone_resolves_by_its_content(name):
    from oasr_tok import describe

    d = describe(path_of(name))
    assert d.kind == "tekken" and d.vocab_size == 131072
    assert "no special_tokens listed" in dict(d.evidence)["kind"]


def test_a_broken_tekken_json_in_a_folder_raises_naming_it(tmp_path):
    from oasr_tok import resolve

    (tmp_path / "tekken.json").write_text('{"config": {}, "vocab": 3}', encoding="utf-8")
    with pytest.raises(MalformedAssetError, match="tekken.json"):
        resolve(tmp_path)


@pytest.mark.parametrize("name", ["tekken_240718.json", "tekken_240911.json"])
def test_is_special_is_byte_and_is_control_answer_any_integer_as_mistral_common(name: str) -> None:
    """mistral-common's Tekkenizer answers is_special / is_byte by membership: an id outside the
    vocabulary is simply not special (tests/test_tekken.py upstream asks is_special(1001)); ours
    answers the same, and is_control is False wherever is_special is."""
    tok = build_tokenizer(TokenizerSpec("tekken", {"tekken": path_of(name)}))
    ref = reference(name)
    n = tok.num_special_tokens
    probes = [-5, -1, 0, 1, n - 1, n, n + 255, n + 256, tok.vocab_size - 1, tok.vocab_size, 1001, 10**9]
    for token_id in probes + [np.int64(3), np.int32(n)]:
        assert tok.is_special(token_id) == ref.is_special(token_id), token_id
        assert tok.is_byte(int(token_id)) == ref.is_byte(int(token_id)), token_id
        if not tok.is_special(token_id):
            assert tok.is_control(token_id) is False
    for piece in ("[INST]", "<s>", "hello", ""):
        assert tok.is_special(piece) == ref.is_special(piece)
    for bad in (1.5, None, b"x"):
        with pytest.raises(TypeError):
            tok.is_special(bad)
        with pytest.raises(TypeError):
            ref.is_special(bad)
