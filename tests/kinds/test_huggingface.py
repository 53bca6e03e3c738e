"""huggingface kind: differential tests against the `tokenizers` runtime (the oracle for every
expected value here), the tokenizer_config.json merge, decoder coverage and refusal, errors.

The three contracts on random and multi-script streams run in tests/testing/test_every_kind.py for every
file in cases/huggingface.py; this module adds the adversarial streams, the config trap and
the decoder shapes."""

from __future__ import annotations

import copy
import json
import os
import pickle
import random
import warnings

import pytest
from tokenizers import Tokenizer as Runtime
from tokenizers import decoders

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.errors import AssetNotFoundError, MalformedAssetError, SpecError
from oasr_tok.kinds._hf_decoder import UnsupportedDecoderError, fallback_byte

from cases import MULTISCRIPT
from cases.huggingface import FILES, SPLIT_BYTES, build, interesting
from paths import own, shared

NAMES = sorted(FILES)
_built: dict = {}


def tok_for(name):
    if name not in _built:
        _built[name] = build(name)()
    return _built[name]


def oracle(tok, ids):
    """What the runtime itself renders (a runtime loaded apart from ours when no config is merged)."""
    if "tokenizer_config" in tok.spec.files:
        return tok.backend.decode(list(ids), skip_special_tokens=True)
    return _runtime(tok.spec.file("tokenizer")).decode(list(ids), skip_special_tokens=True)


_runtimes: dict = {}


def _runtime(path):
    if path not in _runtimes:
        _runtimes[path] = Runtime.from_file(path)
    return _runtimes[path]


def check_stream(tok, ids):
    """decode, token pieces and one-id-at-a-time streaming against the runtime, with the
    no-retraction check after every id."""
    expected = oracle(tok, ids)
    assert tok.decode(ids) == expected
    pieces = tok.token_pieces(ids)
    assert len(pieces) == len(ids) and "".join(pieces) == expected
    state: dict = {}
    emitted = ""
    for k, token_id in enumerate(ids):
        emitted += tok.decode_incremental([token_id], state)
        so_far = oracle(tok, ids[: k + 1])
        assert state["text"] == so_far
        assert so_far.startswith(emitted) and expected.startswith(emitted)
    emitted += tok.decode_incremental([], state, final=True)
    assert emitted == expected


def byte_ids(tok, values):
    """The single-byte token of each byte value: `<0xHH>` piece or byte-level character."""
    from oasr_tok.kinds._bytelevel import BYTE_TO_CHAR

    backend = tok.backend
    out = []
    for b in values:
        token_id = backend.token_to_id(f"<0x{b:02X}>")
        if token_id is None:
            token_id = backend.token_to_id(BYTE_TO_CHAR[b])
        if token_id is None:
            return None
        out.append(token_id)
    return out


# -- differential: multi-script text, random ids, adversarial streams ----------------------


@pytest.mark.parametrize("name", NAMES)
def test_multiscript_text_roundtrips_like_the_runtime(name):
    tok = tok_for(name)
    # With a tokenizer_config merge the reference is the merged runtime underneath; otherwise
    # a runtime loaded on its own.
    runtime = tok.backend if "tokenizer_config" in tok.spec.files else _runtime(tok.spec.file("tokenizer"))
    for text in MULTISCRIPT:
        ids = tok.encode(text)
        assert ids == runtime.encode(text, add_special_tokens=False).ids
        check_stream(tok, ids)


@pytest.mark.parametrize("name", NAMES)
def test_random_ids_over_the_whole_vocabulary(name):
    tok = tok_for(name)
    rng = random.Random(name)
    pool = [i for i in interesting(tok)]
    for _ in range(150):
        ids = [
            rng.choice(pool) if rng.random() < 0.4 else rng.randrange(tok.vocab_size)
            for _ in range(rng.randrange(1, 25))
        ]
        expected = oracle(tok, ids)
        assert "".join(tok.token_pieces(ids)) == expected
        state: dict = {}
        out = "".join(tok.decode_incremental([i], state) for i in ids)
        assert expected.startswith(out)
        assert out + tok.decode_incremental([], state, final=True) == expected


# Files with single-byte tokens (byte-level alphabet or `<0xHH>` pieces); the others have none.
BYTE_NAMES = ["bytelevel-bpe", "metaspace-bytefallback", "mistral-7b", "moonshine", "qwen2-audio-like", "qwen3"]


def test_byte_names_are_exactly_the_files_with_byte_tokens():
    assert [name for name in NAMES if byte_ids(tok_for(name), range(256)) is not None] == BYTE_NAMES


@pytest.mark.parametrize("name", BYTE_NAMES)
def test_adversarial_byte_streams(name):
    tok = tok_for(name)
    b = byte_ids(tok, range(256))
    word = tok.encode("hello")
    special = sorted(tok.special_ids)
    streams = [
        [b[0xE4], b[0xB8]],  # a run that never completes
        [b[0xE4], b[0xB8]] + word,  # ... interrupted by a word
        [b[0xC3], b[0xA9], b[0xFF]],  # a valid character, then an invalid byte, in one run
        [b[0x41], b[0xBF]] + word,  # valid ASCII then an invalid continuation byte
        [b[0xFF]],  # lone 0xFF
        [b[0xF0], b[0x9F], b[0x98], b[0x80], b[0xF0], b[0x9F]],  # emoji, then half of another
        [b[0x20], b[0x41]],  # a leading space from a byte
        [0, tok.vocab_size - 1, b[0xE4], b[0xB8], b[0xAD]],
        word + [b[0xEF], b[0xBF], b[0xBD]] + word,  # a genuine U+FFFD from bytes
        [special[0], b[0xE4], special[-1], b[0xB8], b[0xAD]],  # specials first and inside a run
    ]
    for ids in streams:
        check_stream(tok, ids)


# ByteFallback files: a byte run that turns invalid renders one U+FFFD per byte of the whole run.
WHOLE_RUN_NAMES = ["metaspace-bytefallback", "mistral-7b", "moonshine"]
UTF8_EDGES = list(bytes.fromhex("00 7F 80 8F 90 9F A0 BF C0 C1 C2 DF E0 ED EF F0 F4 F5"))


@pytest.mark.parametrize("name", WHOLE_RUN_NAMES)
def test_every_byte_pair_and_every_longer_character_edge_renders_like_the_runtime(name):
    """Whether a byte extends a run validly is decided in C from the run's last character: every
    pair of byte tokens, and the edges of the byte ranges of 3- and 4-byte characters (overlong,
    surrogate, past U+10FFFF), after nothing and after a complete character, against the runtime;
    the pieces one at a time as they stream."""
    tok = tok_for(name)
    b = byte_ids(tok, range(256))
    word = tok.encode("hello")
    runs = [[x, y] for x in range(256) for y in range(256)]
    runs += [[x, y, z] for x in range(0xE0, 0xF5) for y in UTF8_EDGES for z in UTF8_EDGES]
    runs += [[x, y, z, w] for x in range(0xF0, 0xF5) for y in UTF8_EDGES for z in UTF8_EDGES for w in UTF8_EDGES[:9]]
    for before in ([], [b[0xC3], b[0xA9]]):
        for run in runs:
            ids = before + [b[v] for v in run] + word
            assert "".join(tok.token_pieces(ids)) == oracle(tok, ids), (before, [hex(v) for v in run])
    for run in runs[::97]:
        check_stream(tok, [b[v] for v in run])


@pytest.mark.parametrize("name", NAMES)
def test_adversarial_text_streams(name):
    """Specials first and mid-stream, the vocabulary edges, word-boundary pieces and the
    WordPiece clean-up pieces (" ." " 's" " n't" " do not" ...) next to each other."""
    tok = tok_for(name)
    special = sorted(tok.special_ids)
    assert special  # every file here declares special tokens
    pool = interesting(tok)
    word = tok.encode("hello world")
    check_stream(tok, [special[0]] + word + [special[-1]] + word)
    check_stream(tok, [special[0], special[-1], 0, tok.vocab_size - 1, 0])
    for first in pool:
        check_stream(tok, [first] + pool[:12])
    for a in pool:
        for b in pool[:20]:
            ids = [a, b, a]
            assert "".join(tok.token_pieces(ids)) == oracle(tok, ids)


@pytest.mark.parametrize("name", NAMES)
def test_forked_streams_continue_like_the_runtime(name):
    tok = tok_for(name)
    ids = tok.encode("今天 😀 café") + tok.encode(" more text")
    for cut in range(len(ids) + 1):
        state: dict = {}
        head = tok.decode_incremental(ids[:cut], state)
        fork = copy.deepcopy(state)
        tail = tok.decode_incremental(ids[cut:], fork) + tok.decode_incremental([], fork, final=True)
        assert head + tail == oracle(tok, ids)


def test_whole_run_trap_that_decodestream_trips_on():
    """Why this library exists: on Mistral's Llama-style decoder, "X" followed by the invalid
    byte 0xBF in the same byte run renders the *whole* run, X included, as U+FFFD. A streamer
    that printed "X" when it arrived must take it back: tokenizers' DecodeStream.step raises
    "Invalid prefix encountered" on exactly these ids ([91, 194, 12141] = <0x58> <0xBF> "yo").
    We hold the run until it ends, so every delta stays a prefix of the full decode."""
    tok = tok_for("mistral-7b")
    ids = [tok.backend.token_to_id(t) for t in ("<0x58>", "<0xBF>", "yo")]
    check_stream(tok, ids)
    assert oracle(tok, ids) == "\ufffd\ufffdyo"  # the runtime's own rendering: X is gone


# -- the tokenizer_config.json merge --------------------------------------------------------


def test_qwen2_audio_markers_encode_to_declared_ids_and_decode_to_nothing():
    config = json.load(open(shared("huggingface/qwen2-audio-like/tokenizer_config.json"), encoding="utf-8"))
    declared = {entry["content"]: int(i) for i, entry in config["added_tokens_decoder"].items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every declared id lands where declared: no warning
        tok = build("qwen2-audio-like")()
    ids = tok.encode("<|audio_bos|><|AUDIO|><|audio_eos|>")
    assert ids == [declared["<|audio_bos|>"], declared["<|AUDIO|>"], declared["<|audio_eos|>"]]
    assert tok.decode(ids) == ""
    assert tok.vocab_size == max(declared.values()) + 1
    for token_id in declared.values():
        special = config["added_tokens_decoder"][str(token_id)]["special"]
        assert (token_id in tok.special_ids) == special
        assert tok.decode([token_id]) == ("" if special else tok.backend.decode([token_id], skip_special_tokens=False))


def _write(folder, name, data):
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def _entry(content, special, **flags):
    return {
        "content": content,
        "special": special,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "single_word": False,
        **flags,
    }


def test_declared_ids_that_cannot_land_warn_naming_each_id(tmp_path):
    # Mistral has 32000 ids; declaring 32001 and 32005 leaves a gap the runtime cannot keep.
    config = _write(
        tmp_path,
        "tokenizer_config.json",
        {
            "added_tokens_decoder": {
                "32005": _entry("<extra_a>", True),
                "32001": _entry("<extra_b>", False, lstrip=True),
                "1": _entry("<s>", True),
            }
        },
    )
    spec = TokenizerSpec(
        "huggingface", {"tokenizer": shared("huggingface/mistral-7b/tokenizer.json"), "tokenizer_config": config}
    )
    with pytest.warns(UserWarning) as record:
        tok = build_tokenizer(spec)
    message = " ".join(str(w.message) for w in record)
    assert "32001 -> 32000" in message and "32005 -> 32001" in message
    # Added in declared-id order, flags as declared.
    added = tok.backend.get_added_tokens_decoder()
    assert added[32000].content == "<extra_b>" and added[32000].lstrip and not added[32000].special
    assert added[32001].content == "<extra_a>" and added[32001].special
    assert 32001 in tok.special_ids and 32000 not in tok.special_ids
    assert tok.decode([32000, 32001]) == tok.backend.decode([32000, 32001], skip_special_tokens=True)


def test_declared_ids_that_land_in_order_do_not_warn(tmp_path):
    config = _write(
        tmp_path,
        "tokenizer_config.json",
        {"added_tokens_decoder": {"32000": _entry("<a>", True), "32001": _entry("<b>", False)}},
    )
    spec = TokenizerSpec(
        "huggingface", {"tokenizer": shared("huggingface/mistral-7b/tokenizer.json"), "tokenizer_config": config}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = build_tokenizer(spec)
    assert tok.encode("<a><b>") == [32000, 32001]
    assert tok.decode([32000, 32001]) == tok.backend.decode([32000, 32001], skip_special_tokens=True)


# -- errors ----------------------------------------------------------------------------------


def test_missing_and_malformed_files_raise_typed_errors_naming_them(tmp_path):
    missing = str(tmp_path / "nope.json")
    with pytest.raises(AssetNotFoundError, match="nope.json"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": missing}))
    bad = _write(tmp_path, "tokenizer.json", '{"version": "1.0",\n "model": [}')
    with pytest.raises(MalformedAssetError, match=r"tokenizer.json:2") as info:
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": bad}))
    assert info.value.path == bad and info.value.line == 2
    not_a_tokenizer = _write(tmp_path, "other.json", {"hello": 1})
    with pytest.raises(MalformedAssetError, match="other.json"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": not_a_tokenizer}))
    good = own("huggingface/bytelevel-bpe/tokenizer.json")
    bad_config = _write(tmp_path, "tokenizer_config.json", "{\n\n oops")
    with pytest.raises(MalformedAssetError, match=r"tokenizer_config.json:3"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": good, "tokenizer_config": bad_config}))
    with pytest.raises(AssetNotFoundError, match="gone_config.json"):
        build_tokenizer(
            TokenizerSpec("huggingface", {"tokenizer": good, "tokenizer_config": str(tmp_path / "gone_config.json")})
        )
    for shape in (
        {"added_tokens_decoder": []},
        {"added_tokens_decoder": {"x": _entry("<a>", True)}},
        {"added_tokens_decoder": {"5": {"special": True}}},
        [],
    ):
        path = _write(tmp_path, "shape_config.json", shape)
        with pytest.raises(MalformedAssetError, match="shape_config.json"):
            build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": good, "tokenizer_config": path}))


def test_options_are_checked_and_add_special_tokens_reaches_encode():
    path = own("huggingface/wordpiece-bert/tokenizer.json")
    with pytest.raises(SpecError, match="unknown option"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}, {"special_ids": [1]}))
    with pytest.raises(SpecError, match="add_special_tokens"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}, {"add_special_tokens": "yes"}))
    runtime = _runtime(path)
    plain = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    framed = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}, {"add_special_tokens": True}))
    text = "hello world."
    assert plain.encode(text) == runtime.encode(text, add_special_tokens=False).ids
    assert framed.encode(text) == runtime.encode(text, add_special_tokens=True).ids
    assert framed.encode(text) != plain.encode(text)


def test_pickles_by_spec():
    tok = tok_for("metaspace-bytefallback")
    clone = pickle.loads(pickle.dumps(tok))
    ids = tok.encode("hello 😀 สวัสดี")
    assert clone.decode(ids) == tok.decode(ids) and clone.token_pieces(ids) == tok.token_pieces(ids)


# -- vocabulary holes --------------------------------------------------------------------------


def _wordlevel(tmp_path, vocab, added=(), decoder=None):
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": c,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": s,
            }
            for i, c, s in added
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": decoder,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": next(iter(vocab))},
    }
    return _write(tmp_path, "tokenizer.json", data)


def test_ids_without_a_token_count_and_render_nothing(tmp_path):
    path = _wordlevel(tmp_path, {"a": 0, "b": 5}, added=[(7, "<s>", True)])
    runtime = Runtime.from_file(path)
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    known = [i for i in range(10) if runtime.id_to_token(i) is not None]
    assert tok.vocab_size == max(known) + 1
    holes = {i for i in range(tok.vocab_size) if runtime.id_to_token(i) is None}
    assert holes and holes <= tok.special_ids
    for ids in ([0, 1, 5, 3, 0], [1, 0], list(range(tok.vocab_size))):
        assert tok.decode(ids) == runtime.decode(ids, skip_special_tokens=True)
        assert "".join(tok.token_pieces(ids)) == tok.decode(ids)
    assert [tok.token_pieces([h]) for h in sorted(holes)] == [[""]] * len(holes)


# -- decoder shapes: streamed exactly, or refused --------------------------------------------

SUPPORTED = {
    "metaspace-first": [
        None,
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": True},
        {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True},
        {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
                {"type": "Strip", "content": "a", "start": 2, "stop": 0},
            ],
        },
        {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        {"type": "WordPiece", "prefix": "\u2581", "cleanup": False},
        # CTC (wav2vec2-style tokenizer.json), alone and before Metaspace (tokenizers' test_decoders.py).
        {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": True},
        {"type": "CTC", "pad_token": "<unk>", "word_delimiter_token": "\u2581", "cleanup": True},
        {"type": "CTC", "pad_token": "a", "word_delimiter_token": "s", "cleanup": False},
        {
            "type": "Sequence",
            "decoders": [
                {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": True},
                {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
            ],
        },
    ],
    "metaspace-bytefallback": [
        # Gemma: no leading strip.
        {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
            ],
        },
        # Llama / Mistral.
        {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},  # byte pieces render literally
        {"type": "ByteFallback"},
    ],
    "wordpiece-bert": [
        {"type": "WordPiece", "prefix": "##", "cleanup": False},
        {"type": "WordPiece", "prefix": "##", "cleanup": True},
    ],
    "bpe-suffix": [
        {"type": "BPEDecoder", "suffix": "</w>"},
        {"type": "BPEDecoder", "suffix": "e"},  # a suffix that also occurs inside tokens
        {"type": "Sequence", "decoders": [{"type": "BPEDecoder", "suffix": "</w>"}]},
    ],
    "bytelevel-bpe": [
        {
            "type": "Sequence",
            "decoders": [
                json.loads(decoders.ByteLevel().__getstate__()),
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
    ],
}

REFUSED = [
    {
        "type": "Sequence",
        "decoders": [
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
            {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": True},
        ],
    },
    {"type": "Sequence", "decoders": [{"type": "BPEDecoder", "suffix": "</w>"}, {"type": "Fuse"}]},
    {"type": "Replace", "pattern": {"Regex": "\u2581+"}, "content": " "},
    {
        "type": "Sequence",
        "decoders": [{"type": "ByteFallback"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}],
    },
    {
        "type": "Sequence",
        "decoders": [{"type": "Fuse"}, {"type": "Replace", "pattern": {"String": "a"}, "content": "b"}],
    },
    {"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 0, "stop": 1}]},
    {"type": "Strip", "content": " ", "start": 1, "stop": 1},
    {"type": "Strip", "content": " ", "start": 0, "stop": 1},
]


# Non-special added tokens go through the decoder too: these reach the rules that the trained
# vocabularies never trigger (several ▁ in token 0, clean-up patterns inside one token, the
# prefix in the middle, byte pieces spelled in lower case or with "+").
EXTRA_ADDED = [
    "x\u2581y\u2581",
    "\u2581\u2581",
    "##z",
    "a##",
    "'s",
    "n't",
    "do not",
    "'m",
    "'ve",
    "'re",
    "' x",
    " ' ",
    " .",
    "<0x41>",
    "<0xc3>",
    "<0x+9>",
    "<0xA9>",
]


def _with_decoder(tmp_path, name, decoder, index=0):
    data = json.load(open(own(f"huggingface/{name}/tokenizer.json"), encoding="utf-8"))
    data["decoder"] = decoder
    top = max([*data["model"]["vocab"].values(), *(t["id"] for t in data["added_tokens"])]) + 1
    data["added_tokens"] += [
        {
            "id": top + k,
            "content": content,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": False,
        }
        for k, content in enumerate(EXTRA_ADDED)
    ]
    return _write(tmp_path, f"tokenizer-{index}.json", data)


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_supported_decoder_shapes_match_the_runtime(tmp_path, name):
    rng = random.Random(7)
    for index, decoder in enumerate(SUPPORTED[name]):
        path = _with_decoder(tmp_path, name, decoder, index)
        tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
        extra = [tok.backend.token_to_id(content) for content in EXTRA_ADDED]
        pool = interesting(tok) + (byte_ids(tok, SPLIT_BYTES) or []) + extra * 3
        for a in extra:
            for b in extra:
                check_stream(tok, [a, b, a])
        streams = [tok.encode(text) for text in MULTISCRIPT]
        streams += [
            [rng.choice(pool) if rng.random() < 0.5 else rng.randrange(tok.vocab_size) for _ in range(12)]
            for _ in range(100)
        ]
        for ids in streams:
            check_stream(tok, ids)


@pytest.mark.parametrize("decoder", REFUSED, ids=lambda d: json.dumps(d)[:60])
def test_decoders_that_cannot_be_streamed_exactly_are_refused(tmp_path, decoder):
    path = _with_decoder(tmp_path, "metaspace-first", decoder)
    with pytest.raises(UnsupportedDecoderError, match="not supported") as info:
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    assert info.value.path == path and isinstance(info.value, MalformedAssetError)


# Decoder steps whose fields have a type tokenizers' own deserializer refuses (found by the long
# fuzz profile: the first two raised an untyped TypeError while the plan was made).
MISTYPED = [
    {"type": "Sequence", "decoders": 1},
    {"type": "Metaspace", "replacement": 2_147_483_648, "prepend_scheme": "always", "split": True},
    {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": 0, "split": True},
    {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": "yes"},
    {"type": "Replace", "pattern": "\u2581", "content": " "},
    {"type": "Replace", "pattern": {"String": 3}, "content": " "},
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": None},
    {"type": "Strip", "content": " ", "start": "1", "stop": 0},
    {"type": "Strip", "content": " ", "start": -1, "stop": 0},
    {"type": "Strip", "content": 32, "start": 1, "stop": 0},
    {"type": "WordPiece", "prefix": 1, "cleanup": True},
    {"type": "WordPiece", "prefix": "##", "cleanup": "no"},
    {"type": "BPEDecoder", "suffix": ["</w>"]},
    {"type": "CTC", "pad_token": 0, "word_delimiter_token": "|", "cleanup": True},
    {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": 1},
]


@pytest.mark.parametrize("decoder", MISTYPED, ids=lambda d: json.dumps(d)[:60])
def test_a_decoder_field_of_the_wrong_type_is_refused_naming_it(tmp_path, decoder):
    """The runtime refuses such a file; so do we, with a typed error naming the file and the key
    (never a TypeError from inside the plan)."""
    data = json.load(open(own("huggingface/metaspace-bytefallback/tokenizer.json"), encoding="utf-8"))
    data["decoder"] = decoder  # (read from the JSON: the runtime is not loaded to build this tokenizer)
    path = _write(tmp_path, "tokenizer.json", data)
    with pytest.raises(Exception):  # (tokenizers raises a bare Exception)
        Runtime.from_file(path)
    with pytest.raises(MalformedAssetError, match=r"must be|not supported") as info:
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    assert info.value.path == path


@pytest.mark.parametrize(
    "token", ["<0x41>", "<0xe4>", "<0x+F>", "<0x4>", "<0x4G>", "<0xé>", "<0x-1>", "<0x 1>", "<0x100>", "<0X41>"]
)
def test_byte_fallback_reads_tokens_like_the_runtime(token):
    rendered = decoders.ByteFallback().decode([token])
    value = fallback_byte(token)
    if value is None:
        assert rendered == token
    else:
        assert rendered == bytes([value]).decode("utf-8", "replace")


def test_an_id_two_texts_claim_renders_as_the_runtime_says(tmp_path):
    # Which text the runtime keeps for id 0 depends on its hash order (two loads of the same
    # file may differ), so the oracle is the runtime instance underneath this tokenizer.
    path = _wordlevel(tmp_path, {"a": 0, "b": 0, "c": 1})
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    runtime = tok.backend
    ids = list(range(tok.vocab_size)) + [0, 1, 0]
    assert tok.decode(ids) == runtime.decode(ids, skip_special_tokens=True)
    assert "".join(tok.token_pieces(ids)) == tok.decode(ids)


@pytest.mark.parametrize("name", NAMES)
def test_token_table_is_the_runtimes_id_to_token(name):
    tok = tok_for(name)
    backend = tok.backend
    texts = [backend.id_to_token(i) for i in range(tok.vocab_size)]
    from oasr_tok.kinds.huggingface import vocabulary_of_runtime

    assert vocabulary_of_runtime(backend, "tokenizer.json").texts == texts


def test_token_bytes_is_the_bytelevel_decoder():
    from oasr_tok.kinds._bytelevel import token_bytes

    level = decoders.ByteLevel()
    runtime = _runtime(shared("huggingface/qwen3/tokenizer.json"))
    vocab = list(runtime.get_vocab(with_added_tokens=True))
    odd = ["Ġa b", "中", "ĠĠ", "\u0100", "a\u00ff", "\uffff", "Ġ\uffff", "a\x00", " ", "Ġ\u0143", "\u0144"]
    for token in vocab[::37] + odd:
        # Each token followed by "!" so that a lone invalid byte is rendered, not dropped.
        assert (token_bytes(token) + b"!").decode("utf-8", "replace") == level.decode([token, "!"]), token
    # The compiled conversion of a whole vocabulary at load says the same for every token.
    from oasr_tok.kinds._bytelevel import tokens_bytes

    everything = vocab + odd + ["", "Ġ" * 300, "中" * 300]
    assert tokens_bytes([*everything, None]) == [*map(token_bytes, everything), b""]


# -- the load reads what decoding needs from the JSON; the runtime is built on first use -------


def _by_runtime(path, config=None):
    """The tokenizer as the runtime-built path makes it (the reference for the JSON reader)."""
    from oasr_tok.kinds import huggingface as hf

    runtime = hf._runtime_of(path, config)
    return hf.HuggingFaceTokenizer(hf.vocabulary_of_runtime(runtime, path), hf.built_runtime(path, runtime), where=path)


@pytest.mark.parametrize("name", NAMES)
def test_the_vocabulary_read_from_the_json_is_the_runtimes(name):
    from oasr_tok.kinds.huggingface import vocabulary_of_json, vocabulary_of_runtime

    tok = tok_for(name)
    path = tok.spec.file("tokenizer")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    runtime = _runtime(path)
    read = vocabulary_of_json(data, path)
    expected = vocabulary_of_runtime(runtime, path)
    assert read is not None, "a plain tokenizer.json is read without the runtime"
    assert read.texts == expected.texts == [runtime.id_to_token(i) for i in range(len(read.texts))]
    assert read.special_text == expected.special_text
    # The decoder as the file writes it renders every id as the decoder the runtime rebuilt.
    reference = _by_runtime(path)
    everything = list(range(len(read.texts)))
    plain = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    assert plain.token_pieces(everything) == reference.token_pieces(everything)
    assert plain.special_ids == reference.special_ids and plain.vocab_size == reference.vocab_size


@pytest.mark.parametrize(
    "vocab, added",
    [
        ({"a": 0, "b": 1}, [(2, "<s>", True), (3, "x", False)]),  # after the model, in order
        ({"a": 0, "b": 1}, [(1, "b", True), (2, "<s>", True)]),  # one the model has: its id
        ({"a": 0, "b": 5}, [(6, "<s>", True)]),  # a hole: the runtime puts it at len(vocab) = 2
        ({"a": 0, "b": 5}, [(2, "<s>", True), (3, "</s>", True)]),  # ... which the file says
        ({"a": 0, "b": 1}, [(9, "<s>", True)]),  # declared elsewhere than the runtime puts it
        ({"a": 0, "b": 1}, [(2, "<s>", True), (2, "<s>", True)]),  # given twice
        ({"a": 0, "b": 0}, []),  # two texts at one id
        ({"a": 0, "b": 1, "c": 4}, [(3, "<s>", True)]),  # model ids beyond its size
    ],
)
def test_added_tokens_land_where_the_runtime_puts_them(tmp_path, vocab, added):
    from oasr_tok.kinds.huggingface import vocabulary_of_json, vocabulary_of_runtime

    path = _wordlevel(tmp_path, vocab, added=added)
    runtime = Runtime.from_file(path)
    with open(path, encoding="utf-8") as f:
        read = vocabulary_of_json(json.load(f), path)
    if read is not None:  # else the file is unusual and the runtime is asked
        expected = vocabulary_of_runtime(runtime, path)
        assert read.texts == expected.texts and read.special_text == expected.special_text
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    if read is None:
        # (which text a runtime keeps for an id two texts claim depends on its hash order: the
        # oracle is then the runtime instance this tokenizer took its answers from)
        runtime = tok.backend
    ids = list(range(tok.vocab_size)) * 2
    assert tok.decode(ids) == runtime.decode(ids, skip_special_tokens=True)
    assert tok.vocabulary == runtime.get_vocab(with_added_tokens=True)


def test_decoding_never_builds_the_runtime_and_encode_builds_it_once(monkeypatch):
    from tokenizers import Tokenizer as Backend

    built = []
    original = Backend.from_str

    def counted(text):
        built.append(1)
        return original(text)

    monkeypatch.setattr(Backend, "from_str", staticmethod(counted))
    path = shared("huggingface/qwen3/tokenizer.json")
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    runtime = _runtime(path)
    ids = runtime.encode("Bonjour 今天 🎉 tout le monde").ids
    state: dict = {}
    streamed = "".join(tok.decode_incremental([i], state) for i in ids) + tok.decode_incremental([], state, True)
    assert tok.decode(ids) == streamed == runtime.decode(ids)
    assert tok.decode_batch([ids, ids[:3]]) == [runtime.decode(ids), runtime.decode(ids[:3])]
    assert tok.id_to_piece(ids[1]) == runtime.id_to_token(ids[1])
    assert built == []
    assert tok.encode("Bonjour 今天 🎉 tout le monde") == ids
    assert tok.encode("encore") == runtime.encode("encore").ids
    assert built == [1]


def test_a_file_whose_encode_side_is_broken_decodes_and_refuses_encode_naming_it(tmp_path):
    # A pre-tokenizer the runtime does not know: decoding never reads it; encode needs it.
    path = _wordlevel(tmp_path, {"a": 0, "b": 1}, decoder={"type": "WordPiece", "prefix": "##", "cleanup": True})
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data["pre_tokenizer"] = {"type": "NoSuchPreTokenizer"}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    with pytest.raises(Exception):
        Runtime.from_file(path)
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    assert tok.decode([0, 1, 0]) == "a b a"
    with pytest.raises(MalformedAssetError, match="tokenizer.json"):
        tok.encode("a b")


@pytest.mark.parametrize("target", ["huggingface/qwen3/tokenizer.json", "huggingface/qwen3"])
def test_a_load_parses_the_tokenizer_json_once(monkeypatch, target):
    # Every detector that glances at a lone .json (spec, huggingface, whisper, tekken,
    # funasr_char) and the build share one parse; nothing is kept after the load.
    import oasr_tok
    from oasr_tok.files import readers

    parsed = []
    original = readers.parse_json

    def counted(path, text, what, object_pairs_hook=None):
        parsed.append(os.path.basename(path))
        return original(path, text, what, object_pairs_hook)

    monkeypatch.setattr(readers, "parse_json", counted)
    from oasr_tok.kinds import _tokenizer_json

    _tokenizer_json._glance.cache_clear()
    tok = oasr_tok.load(shared(target))
    assert parsed.count("tokenizer.json") == 1
    assert getattr(readers._scope, "contents", None) is None
    assert tok.decode(tok.encode("today 今天")) == "today 今天"


def test_the_compiled_byte_alphabet_refuses_what_is_not_a_token():
    from oasr_tok._engine.bytelevel import byte_level_pieces
    from oasr_tok.kinds._bytelevel import tokens_bytes

    for bad in ([5], [b"x"], ["a", 3.0], [["a"]]):
        with pytest.raises(TypeError, match="not a str or None"):
            tokens_bytes(bad)
    with pytest.raises(ValueError, match="one entry per code point"):
        byte_level_pieces(["a"], b"\x01", b"")
    # an alphabet that maps nothing: every token is its own UTF-8
    assert byte_level_pieces(["\x00\u0100", "", None], b"", b"") == ["\x00\u0100".encode(), b"", b""]


@pytest.mark.parametrize(
    "patch",
    [
        {"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 4_000_000_000}, "unk_token": "a"}},
        {"model": {"type": "WordLevel", "vocab": {"a": 0, "b": True}, "unk_token": "a"}},
        {"model": {"type": "WordLevel", "vocab": {"a": 0, "b": -1}, "unk_token": "a"}},
        {"added_tokens": [{"id": "x", "content": "q"}]},
        {"added_tokens": [{"id": 10**12, "content": "q", "special": True}]},
        {"model": {"type": "Unigram", "vocab": [["a"], ["b", 0.0]], "unk_id": 0}},
        {"decoder": [1, 2]},
        {"model": [1]},
    ],
    ids=[
        "huge id",
        "bool id",
        "negative id",
        "added id a string",
        "added id huge",
        "unigram entry",
        "decoder",
        "model",
    ],
)
def test_a_malformed_vocabulary_is_refused_at_load_naming_the_file(tmp_path, patch):
    """What the JSON reader does not take as plain goes to the runtime, whose refusal is typed
    and names the file; an id far past the entries is refused before any table is sized."""
    path = _wordlevel(tmp_path, {"a": 0, "b": 1})
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data.update(patch)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    with pytest.raises(MalformedAssetError, match="tokenizer.json"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))


@pytest.mark.parametrize("name", NAMES)
def test_a_byte_level_decode_is_the_join_of_its_table_and_equal_to_its_stream(name):
    """A table whose rendering is its pieces joined and decoded once (bytes mode, no rule but
    skipping: PieceTable.joined_form) decodes by that join (_join.join_pieces, which lets go of
    the GIL on long inputs); it renders exactly what the table's own stream renders, and what
    the runtime renders, on random ids (specials, split characters, bytes that never complete),
    for the tokenizer and its with_specials() view."""
    tok = tok_for(name)
    byte_level = name in {"qwen3", "qwen2-audio-like", "bytelevel-bpe"}
    assert (tok._joined is not None) == byte_level
    rng = random.Random(name)
    for view in (tok, tok.with_specials()):
        pool = list(range(view.vocab_size))
        for _ in range(300):
            ids = [rng.choice(pool) for _ in range(rng.randrange(0, 60))]
            assert view.decode(ids) == view._table.decode_incremental(ids, {}, True)
            if view is tok:
                assert view.decode(ids) == oracle(tok, ids)
        long = [rng.choice(pool) for _ in range(40_000)]
        assert view.decode(long) == view._table.decode_incremental(long, {}, True)
        assert view.decode_batch([long[:5], long]) == [view.decode(long[:5]), view.decode(long)]
