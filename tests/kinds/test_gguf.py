"""The gguf kind: our GGUF reader against the `gguf` package's GGUFReader (every key and
array), llama.cpp's detokenizer (the expected files written by the real llama.cpp via
fixtures/make_gguf_expected.py, and a line-by-line port in tests/llama_reference.py), the
loader's refusals and fix-ups, and a fuzzed reader (in a child process)."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import MalformedAssetError, TokenizerSpec, build_tokenizer
from oasr_tok._engine.clean_spaces import clean_feed, clean_flush
from oasr_tok.kinds.gguf import llama_clean_spaces
from oasr_tok.kinds.gguf.reader import DeferredStrings, read_gguf_metadata

import elsewhere
from llama_reference import _clean_spaces, detokenize
from paths import OWN, PACKAGE_PARENT, shared, subprocess_env

gguf = pytest.importorskip("gguf")

SHARED_FILES = ("ggml-vocab-llama-spm", "ggml-vocab-qwen2")
OWN_FILES = ("bert-wpm", "gemma4-bpe", "gpt2-cleanspaces", "t5-ugm", "phi3-rstrip")
EXPECTED = OWN / "gguf" / "expected"


def path_of(name: str) -> str:
    return shared(f"gguf/{name}.gguf") if name in SHARED_FILES else str(OWN / "gguf" / f"{name}.gguf")


def tok_of(name: str):
    return _cached(name)


_TOKS: dict[str, object] = {}


def _cached(name: str):
    if name not in _TOKS:
        _TOKS[name] = build_tokenizer(TokenizerSpec("gguf", {"gguf": path_of(name)}))
    return _TOKS[name]


# -- the reader against GGUFReader ----------------------------------------------------------


def _oracle_fields(path: str) -> dict[str, object]:
    reader = gguf.GGUFReader(path)
    out = {}
    for name, fld in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        out[name] = fld.contents()
    return out


def _ours(path: str) -> dict[str, object]:
    meta = read_gguf_metadata(path)
    return {k: (v.load() if isinstance(v, DeferredStrings) else v) for k, v in meta.values.items()}


def _same(ours: object, theirs: object) -> bool:
    if isinstance(theirs, float):
        return struct.pack("<d", float(ours)) == struct.pack("<d", theirs) or ours == theirs  # type: ignore[arg-type]
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs))
    return ours == theirs and type(ours) is type(theirs)


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_reader_matches_gguf_package(name: str) -> None:
    path = path_of(name)
    theirs = _oracle_fields(path)
    ours = _ours(path)
    assert list(ours) == list(theirs)
    for key in theirs:
        assert _same(ours[key], theirs[key]), key
    meta = read_gguf_metadata(path)
    assert meta.tensor_count == 0 and meta.version == 3


def _write(
    tmp: Path,
    name: str,
    *,
    endian: str = "little",
    kv: dict | None = None,
    tokens=None,
    types=None,
    model="llama",
    version: int | None = None,
    drop: tuple[str, ...] = (),
) -> str:
    """A small GGUF made by the gguf package's writer; `version` patches the header's version."""
    path = str(tmp / f"{name}.gguf")
    order = gguf.GGUFEndian.BIG if endian == "big" else gguf.GGUFEndian.LITTLE
    writer = gguf.GGUFWriter(path, "llama", endianess=order)
    if "model" not in drop:
        writer.add_tokenizer_model(model)
    tokens = tokens if tokens is not None else ["<unk>", "<s>", "</s>", "\u2581hello", "\u2581world", "<0x41>", "!"]
    if "tokens" not in drop:
        writer.add_token_list(tokens)
    if types is None:
        types = [2, 3, 3, 1, 1, 6, 1][: len(tokens)] + [1] * max(0, len(tokens) - 7)
    if "types" not in drop:
        writer.add_token_types(types)
    writer.add_token_scores([float(-i) for i in range(len(tokens))])
    writer.add_uint64("test.u64", 2**63 + 5)
    writer.add_int8("test.i8", -3)
    writer.add_float64("test.f64", 1.25)
    writer.add_bool("test.flag", True)
    writer.add_array("test.u16s", [1, 2, 65535])
    writer.add_array("test.bools", [True, False, True])
    for key, (kind, value) in (kv or {}).items():
        getattr(writer, f"add_{kind}")(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    if version is not None:
        with open(path, "r+b") as handle:
            handle.seek(4)
            handle.write(struct.pack("<I" if endian == "little" else ">I", version))
    return path


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("version", [2, 3])
def test_reader_byte_orders_and_versions(tmp_path: Path, endian: str, version: int) -> None:
    path = _write(tmp_path, "v", endian=endian, version=version)
    theirs = _oracle_fields(path)
    ours = _ours(path)
    assert list(ours) == list(theirs)
    for key in theirs:
        assert _same(ours[key], theirs[key]), key
    meta = read_gguf_metadata(path)
    assert meta.version == version and meta.byte_order == ("<" if endian == "little" else ">")
    tok = build_tokenizer(TokenizerSpec("gguf", {"gguf": path}))
    assert tok.decode([3, 4, 5, 6, 2]) == "hello worldA!"
    assert tok.decode([1, 3, 4, 5, 6, 2]) == " hello worldA!"  # BOS first takes the space rule


# -- decode against llama.cpp ---------------------------------------------------------------


def _expected(name: str) -> dict:
    path = EXPECTED / f"{name}.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: run fixtures/make_gguf_expected.py with llama-cpp-python 0.3.36")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_decode_equals_llama_detokenize(name: str) -> None:
    tok = tok_of(name)
    expected = _expected(name)
    for case in expected["detokenize"]:
        want = bytes.fromhex(case["bytes"]).decode("utf-8", "replace")
        assert tok.decode(case["ids"]) == want, case["ids"]
        assert "".join(tok.token_pieces(case["ids"])) == want


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_pieces_attrs_and_metadata_equal_llama(name: str) -> None:
    import hashlib

    tok = tok_of(name)
    expected = _expected(name)
    pieces = tok._pieces  # the per-id token_to_piece(special=False) table decode joins
    digest = hashlib.sha256(b"".join(len(p).to_bytes(4, "little") + p for p in pieces)).hexdigest()
    assert digest == expected["pieces_sha256"]
    for token_id, piece in expected["pieces"].items():
        assert pieces[int(token_id)] == bytes.fromhex(piece)
    attrs = {i: a for i, a in enumerate(tok.vocab.attrs) if a != 4}
    assert attrs == {int(k): v for k, v in expected["attrs"].items()}
    silent = {i for i, a in enumerate(tok.vocab.attrs) if a & (1 | 8) or not a & (4 | 16 | 32)}
    assert tok.special_ids == frozenset(silent)
    meta = expected["metadata"]
    ours = tok.describe_details()
    assert tok.vocab_size == meta["n_tokens"]
    assert ours["vocab_type"] == meta["vocab_type"]
    for role in ("bos", "eos", "eot", "sep", "pad"):
        assert ours[f"{role}_id"] == meta[f"{role}_id"], role
    assert ours["add_bos"] == meta["add_bos"] and ours["add_eos"] == meta["add_eos"]
    assert ours["stop_ids"] == meta["stop_ids"]
    assert ours["eot_id"] == meta["eot_id"]


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_streaming_shows_llama_detokenize_of_every_prefix(name: str) -> None:
    tok = tok_of(name)
    for case in _expected(name)["prefixes"]:
        ids, want = case["ids"], [bytes.fromhex(b).decode("utf-8", "replace") for b in case["bytes"]]
        state: dict = {}
        emitted = ""
        for k, token in enumerate(ids):
            emitted += tok.decode_incremental([token], state)
            assert state["text"] == want[k + 1]
            assert want[k + 1].startswith(emitted)
        emitted += tok.decode_incremental([], state, final=True)
        assert emitted == want[-1]


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_decode_equals_ported_detokenize(name: str) -> None:
    tok = tok_of(name)
    rng = random.Random(name)
    pool = sorted(tok.special_ids)[:50] + [i for i, p in enumerate(tok._pieces) if len(p) <= 2][:400]
    for _ in range(300):
        ids = [
            rng.choice(pool) if rng.random() < 0.7 else rng.randrange(tok.vocab_size)
            for _ in range(rng.randrange(0, 30))
        ]
        want = detokenize(tok.vocab, ids).decode("utf-8", "replace")
        assert tok.decode(ids) == want, ids


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=" '?!.,smrvetdlx\u00e9\ufffd", max_size=24))
def test_clean_spaces_regexes_and_transducer_equal_the_c_loops(text: str) -> None:
    want = _clean_spaces(text.encode()).decode()
    assert llama_clean_spaces(text) == want
    out, held = clean_feed(("", "", ""), text)
    assert out + clean_flush(held) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=" '?.,smre\u00e9", max_size=4), max_size=10))
def test_clean_transducer_never_retracts(chunks: list[str]) -> None:
    held = ("", "", "")
    emitted = ""
    so_far = ""
    for chunk in chunks:
        out, held = clean_feed(held, chunk)
        emitted += out
        so_far += chunk
        assert llama_clean_spaces(so_far).startswith(emitted)
        for more in ("", " ", "'", "s", "?", " 're", "e"):
            assert llama_clean_spaces(so_far + more).startswith(emitted)
        assert sum(len(h) for h in held) <= 6


def test_first_id_rule() -> None:
    tok = tok_of("ggml-vocab-llama-spm")
    hello = tok.vocab.texts.index("\u2581Hello")
    assert tok.decode([hello]) == "Hello"
    assert tok.decode([1, hello]) == " Hello"  # BOS consumed the rule, renders nothing
    assert tok.token_pieces([1, hello]) == ["", " Hello"]
    state: dict = {}
    assert tok.decode_incremental([], state) == ""
    assert tok.decode_incremental([1], state) == ""
    assert tok.decode_incremental([hello], state) == " Hello"


def test_user_defined_fillers_render_text() -> None:
    tok = tok_of("ggml-vocab-qwen2")
    pad = tok.vocab.texts.index("[PAD151646]")
    assert pad not in tok.special_ids
    assert tok.decode([pad]) == "[PAD151646]"
    assert 151643 in tok.special_ids and tok.decode([151643]) == ""


# -- loader refusals and fix-ups --------------------------------------------------------------


def test_refusals(tmp_path: Path) -> None:
    cases = {
        "no-model": dict(drop=("model",)),
        "no-tokens": dict(drop=("tokens",)),
        "unknown-model": dict(model="rwkv"),
        "duplicate": dict(tokens=["<unk>", "<s>", "</s>", "a", "a"]),
        "short-types": dict(types=[1, 1]),
        "wrong-type": dict(kv={"tokenizer.ggml.bos_token_id": ("int32", 1)}),
        "bad-pre": dict(
            model="gpt2",
            kv={"tokenizer.ggml.merges": ("array", ["a b"]), "tokenizer.ggml.pre": ("string", "no-such-pre")},
        ),
        "bpe-no-merges": dict(model="gpt2"),
    }
    words = {
        "no-model": "tokenizer.ggml.model",
        "no-tokens": "tokenizer.ggml.tokens",
        "unknown-model": "rwkv",
        "duplicate": "duplicate",
        "short-types": "token_type",
        "wrong-type": "bos_token_id",
        "bad-pre": "no-such-pre",
        "bpe-no-merges": "merges",
    }
    for name, kwargs in cases.items():
        path = _write(tmp_path, name, **kwargs)
        with pytest.raises(MalformedAssetError) as info:
            build_tokenizer(TokenizerSpec("gguf", {"gguf": path}))
        assert path in str(info.value) and words[name] in str(info.value), name


def test_loader_fixups(tmp_path: Path) -> None:
    tokens = ["<unk>", "<s>", "</s>", "<|im_end|>", "<unused3>", "<|channel|>", "", "\u2581x"]
    types = [2, 3, 3, 1, 3, 3, 1, 1]
    path = _write(tmp_path, "fix", tokens=tokens, types=types)
    tok = build_tokenizer(TokenizerSpec("gguf", {"gguf": path}))
    assert 3 in tok.special_ids and tok.decode([3]) == ""  # EOT-looking token forced control
    assert tok.vocab.attrs[4] & 2  # control + "unused" -> unused
    assert tok.decode([5]) == "<|channel|>"  # gpt-oss markers always rendered
    assert tok.decode([6]) == "[EMPTY_6]"
    assert 3 in tok.stop_ids and 2 in tok.stop_ids


# -- bad files --------------------------------------------------------------------------------

FUZZ_CHILD = textwrap.dedent(
    """
    import random, sys
    from oasr_tok import MalformedAssetError, AssetError, TokenizerSpec, build_tokenizer
    from oasr_tok.kinds.gguf.reader import read_gguf_metadata
    src, work = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    rng = random.Random(17)
    variants = [b"", data[:3], b"GGUF", b"GGUG" + data[4:], data[:24], data[:100]]
    variants += [data[: rng.randrange(len(data))] for _ in range(60)]
    for _ in range(150):
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            pos = rng.randrange(min(len(data), 4096))
            flipped[pos] ^= 1 << rng.randrange(8)
        variants.append(bytes(flipped))
    for offset in (16, 24, 32, 40):  # huge counts and lengths
        for value in (2**63, 2**64 - 1, 2**40, 10**9):
            v = bytearray(data)
            v[offset:offset + 8] = value.to_bytes(8, "little")
            variants.append(bytes(v))
    bad = 0
    for k, blob in enumerate(variants):
        with open(work, "wb") as handle:
            handle.write(blob)
        try:
            read_gguf_metadata(work)
            build_tokenizer(TokenizerSpec("gguf", {"gguf": work})).decode([0, 1, 2])
        except MalformedAssetError as exc:
            assert work in str(exc), exc
            bad += 1
        except Exception as exc:
            print(f"variant {k}: {type(exc).__name__}: {exc}")
            sys.exit(3)
    print("refused", bad, "of", len(variants))
    """
)


def test_fuzzed_files_raise_malformed_asset_error(tmp_path: Path) -> None:
    src = _write(tmp_path, "fuzz-src")
    result = subprocess.run(
        [sys.executable, "-c", FUZZ_CHILD, src, str(tmp_path / "fuzzed.gguf")],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(PACKAGE_PARENT),
        env=subprocess_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    refused = int(result.stdout.split()[1])
    assert refused >= 60  # truncations and wrong magic at least


def test_hostile_lengths_are_checked_before_allocating(tmp_path: Path) -> None:
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    key = b"tokenizer.ggml.tokens"
    hostile = header + struct.pack("<Q", len(key)) + key + struct.pack("<IIQ", 9, 8, 2**62)
    path = tmp_path / "hostile.gguf"
    path.write_bytes(hostile + b"\0" * 64)
    with pytest.raises(MalformedAssetError, match="tokenizer.ggml.tokens"):
        read_gguf_metadata(str(path))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2**60) + b"\0" * 64)
    with pytest.raises(MalformedAssetError, match="key/value"):
        read_gguf_metadata(str(path))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 1, 0, 0) + b"\0" * 8)
    with pytest.raises(MalformedAssetError, match="version 1"):
        read_gguf_metadata(str(path))


def test_import_does_not_load_tokenizers() -> None:
    code = (
        "import sys, oasr_tok; from oasr_tok.kinds import gguf; "
        "assert 'tokenizers' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(PACKAGE_PARENT), env=subprocess_env())


def test_resolve_by_magic(tmp_path: Path) -> None:
    src = _write(tmp_path, "model")
    odd = tmp_path / "weights.bin"
    odd.write_bytes(Path(src).read_bytes())
    tok = oasr_tok.load(str(odd))
    assert tok.spec.kind == "gguf" and tok.decode([3]) == "hello"
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "model-q4.gguf").write_bytes(Path(src).read_bytes())
    assert oasr_tok.load(str(folder)).spec.kind == "gguf"
    assert os.path.basename(oasr_tok.resolve(str(folder)).files["gguf"]) == "model-q4.gguf"


# -- encode -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHARED_FILES)
def test_encode_reproduces_llama_goldens(name: str) -> None:
    pytest.importorskip("tokenizers")
    tok = tok_of(name)
    assert tok.supports_encode
    # test-tokenizer-0's format: texts separated by this line, one line of ids per text
    texts = Path(shared(f"gguf/{name}.gguf.inp")).read_bytes().decode("utf-8").split("\n__ggml_vocab_test__\n")
    lines = Path(shared(f"gguf/{name}.gguf.out")).read_text(encoding="utf-8").split("\n")
    assert len(texts) == 47
    for text, line in zip(texts, lines):
        assert tok.encode(text) == [int(x) for x in line.split()], text


@pytest.mark.parametrize("pre", ["kimi-k2", "afmoe", "superbpe"])
def test_encode_refuses_a_pre_tokenizer_it_cannot_reproduce_by_name(tmp_path: Path, pre: str) -> None:
    """llama.cpp splits these with code of its own (or does not know the name): encode says
    which, rather than split with another regex; decode still works."""
    tokens = ["<unk>", "<s>", "</s>", "a", "b", "ab"]
    path = _write(tmp_path, "pre", model="gpt2", tokens=tokens, types=[2, 3, 3, 1, 1, 1],
                  kv={"tokenizer.ggml.pre": ("string", pre), "tokenizer.ggml.merges": ("array", ["a b"])})  # fmt: skip
    tok = oasr_tok.load(path)
    assert not tok.supports_encode
    with pytest.raises(oasr_tok.EncodeError, match=pre):
        tok.encode("ab")
    assert tok.decode([3, 4]) == "ab"


@pytest.mark.parametrize("name", OWN_FILES)
def test_encode_equals_llama_tokenize(name: str) -> None:
    pytest.importorskip("tokenizers")
    tok = tok_of(name)
    cases = _expected(name)["tokenize"]
    assert cases and tok.supports_encode
    for case in cases:
        assert tok.encode(case["text"]) == case["ids"], case["text"]


@pytest.mark.parametrize("name", ("gemma4-bpe", "gpt2-cleanspaces"))
def test_shallow_copy_of_a_clean_spaces_state_forks(name: str) -> None:
    """Regression (CI, test_revisions on gemma4-bpe): the clean-up path mutated its raw stream's
    dict in place, so a `dict(state)` copy taken after <unk> saw the byte of the next token
    held, and decode_hypothesis printed a U+FFFD that decode does not."""
    tok = tok_of(name)
    # A token that is only a UTF-8 lead byte: a stream holds it back, decode shows U+FFFD.
    byte = next(
        i for i in range(tok.vocab_size) if tok.decode([i]) == "\ufffd" and tok.decode_incremental([i], {}) == ""
    )
    state: dict = {}
    tok.decode_incremental([0], state)
    fork = dict(state)
    tok.decode_incremental([byte], state)
    assert tok.decode_incremental([], fork, final=True) == tok.decode([0])


def _model_file(vocabulary: Path, target: Path, endian: str, tensor_bytes: int) -> None:
    """A GGUF model file made from a vocabulary-only one: one more (non-tokenizer) key, one
    F32 tensor of `tensor_bytes` bytes, laid out as the GGUF spec says (tensor infos after the
    key/value records, then the data at the next 32-byte boundary)."""
    data = vocabulary.read_bytes()
    order = "<" if struct.unpack_from("<I", data, 4)[0] & 0xFFFF else ">"
    tensors, kvs = struct.unpack_from(order + "QQ", data, 8)
    assert tensors == 0
    key = b"oasr.test.layer_count"
    extra = struct.pack(order + "Q", len(key)) + key + struct.pack(order + "II", 4, 2)  # uint32 2
    name = b"token_embd.weight"
    info = (
        struct.pack(order + "Q", len(name))
        + name
        + struct.pack(order + "I", 1)
        + struct.pack(order + "Q", tensor_bytes // 4)
        + struct.pack(order + "IQ", 0, 0)
    )
    # The records end where the (empty) tensor data of the vocabulary file starts: find it by
    # walking the records with the gguf package's reader.
    reader = gguf.GGUFReader(str(vocabulary))
    end = max(int(f.offset) + sum(int(p.nbytes) for p in f.parts) for f in reader.fields.values())
    body = data[:8] + struct.pack(order + "QQ", 1, kvs + 1) + data[24:end] + extra + info
    body += bytes(-len(body) % 32)
    target.write_bytes(body + bytes(tensor_bytes))


@pytest.mark.parametrize("endian", ("little", "big"))
def test_a_model_file_pickles_by_value_as_its_vocabulary_only(tmp_path: Path, endian: str) -> None:
    """By value, a GGUF travels as its tokenizer.* / general.* records, never its tensors: the
    gguf package reads the shipped file as the same vocabulary with no tensors, and the rebuilt
    tokenizer decodes as the original."""
    import pickle

    from oasr_tok.files import assets

    source = OWN / "gguf" / "gemma4-bpe.gguf"
    if endian == "big":
        # gguf-py's own converter writes the big-endian twin of the vocabulary file.
        swapped = tmp_path / "vocab-be.gguf"
        writer = gguf.GGUFWriter(str(swapped), "llama", endianess=gguf.GGUFEndian.BIG)
        for fld in gguf.GGUFReader(str(source)).fields.values():
            if fld.name.startswith("GGUF.") or fld.name == "general.architecture":
                continue
            kind = fld.types[0]
            value = fld.contents()
            if kind == gguf.GGUFValueType.ARRAY:
                writer.add_array(fld.name, value)
            else:
                writer.add_key_value(fld.name, value, kind)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        source = swapped
    model = tmp_path / "model.gguf"
    _model_file(source, model, endian, tensor_bytes=8 << 20)
    assert len(gguf.GGUFReader(str(model)).tensors) == 1  # the oracle reads our model file
    shipped, name = assets.read_for_value("gguf", str(model))
    assert name == "model.gguf" and len(shipped) < (1 << 20)
    (tmp_path / "shipped.gguf").write_bytes(shipped)
    theirs = gguf.GGUFReader(str(tmp_path / "shipped.gguf"))
    assert len(theirs.tensors) == 0
    original = _oracle_fields(str(model))
    kept = {k: v for k, v in original.items() if k.startswith(("tokenizer.", "general."))}
    assert _oracle_fields(str(tmp_path / "shipped.gguf")) == kept and "oasr.test.layer_count" in original
    tok = build_tokenizer(TokenizerSpec("gguf", {"gguf": str(model)}))
    blob = pickle.dumps(tok)
    assert len(blob) < (1 << 20)
    model.unlink()
    clone = elsewhere.loads(blob)  # a worker without the model file rebuilds it from the vocabulary
    assert clone is not tok
    ids = list(range(0, tok.vocab_size, 7))
    assert clone.decode(ids) == tok.decode(ids) and clone.vocab_size == tok.vocab_size


# -- the prompt side against llama.cpp (fixtures/gguf/expected/<name>.prompt.json) ---------------


def _prompt_expected(name: str) -> dict:
    path = EXPECTED / f"{name}.prompt.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: run fixtures/make_gguf_expected.py prompt with llama-cpp-python 0.3.36")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_special_tokens_and_stop_ids_equal_llama(name: str) -> None:
    tok = tok_of(name)
    expected = _prompt_expected(name)
    specials = tok.special_tokens
    for role in ("bos", "eos", "pad", "sep", "cls", "mask"):
        assert getattr(specials, f"{role}_id") == expected["roles"][role], role
        assert specials.source(role)
    assert specials.unk_id == tok.vocab.ids["unk"]
    assert sorted(specials.stop_ids) == expected["stop_ids"] == sorted(tok.stop_ids)
    for token_id in specials.stop_ids:
        assert "end-of-generation" in specials.source(f"stop:{token_id}")
    keyed = [role for role in ("bos", "eos") if f"tokenizer.ggml.{role}_token_id" in tok.vocab.meta.values]
    for role in keyed:
        assert "GGUF key" in specials.source(role)
    for piece, token_id in list(tok.vocabulary.items())[:: max(1, tok.vocab_size // 500)]:
        assert tok.id_to_piece(token_id) == piece and tok.piece_to_id(piece) == token_id


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_encode_with_special_tokens_equals_llama_tokenize(name: str) -> None:
    """add_special_tokens = llama_tokenize's add_special, split_special_tokens = not its
    parse_special, on texts holding control-token text (matched as one id, SPM gives the text
    after it a space prefix) and user-defined tokens (matched either way)."""
    pytest.importorskip("tokenizers")
    tok = tok_of(name)
    cases = _prompt_expected(name)["tokenize"]
    assert len(cases) == 56
    for case in cases:
        got = tok.encode(
            case["text"], add_special_tokens=case["add_special"], split_special_tokens=not case["parse_special"]
        )
        assert got == case["ids"], case
    texts = [c["text"] for c in cases if c["add_special"] and c["parse_special"]]
    assert tok.encode_batch(texts, add_special_tokens=True) == [
        c["ids"] for c in cases if c["add_special"] and c["parse_special"]
    ]
    assert tok.with_specials().encode(texts[4], add_special_tokens=True) == tok.encode(
        texts[4], add_special_tokens=True
    )


@pytest.mark.parametrize("name", SHARED_FILES + OWN_FILES)
def test_with_specials_decode_equals_llama_detokenize_unparse_special(name: str) -> None:
    tok = tok_of(name)
    view = tok.with_specials()
    expected = _prompt_expected(name)
    assert view.special_ids == frozenset() and view.with_specials() is view and tok.with_specials() is view
    assert view.special_tokens == tok.special_tokens
    for token_id, piece in expected["special_pieces"].items():
        assert view._pieces[int(token_id)] == bytes.fromhex(piece)  # token_to_piece(special=True)
    for case in expected["detokenize_specials"]:
        want = bytes.fromhex(case["bytes"]).decode("utf-8", "replace")
        assert view.decode(case["ids"]) == want, case["ids"]
        assert "".join(view.token_pieces(case["ids"])) == want
    for case in expected["prefixes_specials"]:
        ids, want = case["ids"], [bytes.fromhex(b).decode("utf-8", "replace") for b in case["bytes"]]
        state: dict = {}
        emitted = ""
        for k, token in enumerate(ids):
            emitted += view.decode_incremental([token], state)
            assert state["text"] == want[k + 1]
            assert want[k + 1].startswith(emitted)
        assert emitted + view.decode_incremental([], state, final=True) == want[-1]


def test_with_specials_view_pickles_as_a_view() -> None:
    import pickle

    tok = tok_of("ggml-vocab-qwen2")
    view = tok.with_specials()
    ids = [151644, *tok.encode("user\nhi"), 151645]
    back = elsewhere.loads(pickle.dumps(view))
    assert back.special_ids == frozenset() and back.decode(ids) == view.decode(ids) == "<|im_start|>user\nhi<|im_end|>"


def _gguf_template_reference(name: str, messages: list, **kwargs) -> str:
    """transformers' renderer (render_jinja_template, what apply_chat_template runs) on the
    template the gguf package reads, with the special-token variables transformers' GGUF
    loader gives (bos/eos/unk/pad spelled by the token list at llama.cpp's ids)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    reader = gguf.GGUFReader(path_of(name))
    template = reader.fields["tokenizer.chat_template"].contents()
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    roles = _prompt_expected(name)["roles"]
    variables = {f"{role}_token": tokens[roles[role]] for role in ("bos", "eos", "pad") if roles[role] is not None}
    rendered, _ = render_jinja_template([messages], chat_template=template, **{**variables, **kwargs})
    return rendered[0]


@pytest.mark.parametrize("name", ["ggml-vocab-qwen2", "gpt2-cleanspaces"])
def test_chat_template_from_the_gguf_renders_as_transformers(name: str) -> None:
    pytest.importorskip("transformers")
    tok = tok_of(name)
    assert tok.chat_template == _prompt_expected(name)["chat_template"]  # what llama_model_chat_template reads
    assert tok.chat_templates == {"default": tok.chat_template}
    conversations = [
        [{"role": "user", "content": "Hello there"}],
        [
            {"role": "system", "content": "You transcribe audio."},
            {"role": "user", "content": "What is said? 😀"},
            {"role": "assistant", "content": "Nothing <|im_end|> yet."},
            {"role": "user", "content": "Again"},
        ],
    ]
    for messages in conversations:
        for generation in (False, True):
            want = _gguf_template_reference(name, messages, add_generation_prompt=generation)
            assert tok.apply_chat_template(messages, add_generation_prompt=generation) == want
            if tok.supports_encode:
                # tokenize=True: the rendering encoded with special-token text matched, nothing added
                ids = tok.apply_chat_template(messages, add_generation_prompt=generation, tokenize=True)
                assert ids == tok.encode(want)
                assert tok.with_specials().decode(ids) == want


def test_named_chat_templates_are_read_from_their_keys(tmp_path: Path) -> None:
    source = _ours(path_of("gpt2-cleanspaces"))
    from oasr_tok.kinds.gguf.reader import read_gguf_metadata as read

    meta = read(path_of("gpt2-cleanspaces"))
    writer = gguf.GGUFWriter(str(tmp_path / "named.gguf"), arch="llama")
    for key, value in source.items():
        if key.startswith("general.architecture"):
            continue
        kind, element = meta.types[key]
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_array(key, value)
        else:
            writer.add_key_value(key, value, gguf.GGUFValueType(kind))
    writer.add_string("tokenizer.chat_template.tool_use", "TOOLS {{ tools | length }}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    tok = build_tokenizer(TokenizerSpec("gguf", {"gguf": str(tmp_path / "named.gguf")}))
    assert set(tok.chat_templates) == {"default", "tool_use"}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert tok.apply_chat_template([{"role": "user", "content": "x"}], tools=tools) == "TOOLS 1"
    assert tok.apply_chat_template([{"role": "user", "content": "x"}]) == "x"


def test_phi3_name_strips_whitespace_after_special_tokens() -> None:
    """By general.name, llama.cpp gives Phi-3's special tokens RSTRIP (not <unk>, <s>,
    <|endoftext|>): the whitespace after a matched "<|end|>" or "</s>" is dropped, after
    "<unk>" it is kept (the expected ids are llama.cpp's)."""
    tok = tok_of("phi3-rstrip")
    rstrip = {i for i, a in enumerate(tok.vocab.attrs) if a & 256}
    assert tok.piece_to_id("<|end|>") in rstrip and tok.piece_to_id("</s>") in rstrip
    assert not {tok.piece_to_id(t) for t in ("<unk>", "<s>", "<|endoftext|>")} & rstrip
    case = next(
        c
        for c in _prompt_expected("phi3-rstrip")["tokenize"]
        if c["text"].startswith("<|user|>") and c["parse_special"] and not c["add_special"]
    )
    assert tok.encode(case["text"]) == case["ids"]
    assert tok.encode("</s>  \t x") == tok.encode("</s>x")
    assert tok.encode("<unk>   x") != [tok.piece_to_id("<unk>"), *tok.encode("x")]  # its whitespace is kept


def test_phi3_name_without_its_tokens_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp fails to load a Phi-3-named vocabulary that lacks </s>, <unk>, <s> or
    <|endoftext|> (checked with llama-cpp-python 0.3.36: "unordered_map::at")."""
    sys.path.insert(0, str(OWN))
    try:
        import make_gguf
    finally:
        sys.path.remove(str(OWN))
    monkeypatch.setattr(make_gguf, "OUT", str(tmp_path))
    make_gguf.make_phi3(name="phi3-no-unk", missing="<unk>")
    with pytest.raises(MalformedAssetError, match="'<unk>'") as caught:
        build_tokenizer(TokenizerSpec("gguf", {"gguf": str(tmp_path / "phi3-no-unk.gguf")}))
    assert "phi3-no-unk.gguf" in str(caught.value)
