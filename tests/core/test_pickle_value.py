"""Pickling by value (docs/scale.md): the files travel inside the pickle, content-hashed, and
are rebuilt once per process; spec-only pickling stays for shared file systems. Every kind,
from its real fixture files; the oracle is the same tokenizer built from the original files.

The tokenizers are built from copies of the fixtures in a temporary folder, which is deleted
after pickling: whatever decodes afterwards cannot have read the sender's paths. A process that
still holds the sender finds it by fingerprint instead of building (test_pickle_reference.py),
so these tests let the sender go before they unpickle, as a worker that never had it."""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys
import zlib

import pytest

from oasr_tok import AssetError, MalformedAssetError, TokenizerSpec, build_tokenizer
from oasr_tok._engine import travel
from oasr_tok.core import pickling
from oasr_tok.files import assets, readers
from oasr_tok.files.readers import PromisedPaths

import elsewhere
from paths import shared, subprocess_env

# kind label -> (kind, {role: fixture path}, options)
SPECS = {
    "symbol_table": ("symbol_table", {"units": "symbol_table/wenet-aishell2.units.txt"}, {}),
    "sentencepiece": ("sentencepiece", {"model": "sentencepiece/mistral-v1.model"}, {}),
    "huggingface/qwen3": (
        "huggingface",
        {
            "tokenizer": "huggingface/qwen3/tokenizer.json",
            "tokenizer_config": "huggingface/qwen3/tokenizer_config.json",
        },
        {},
    ),
    "huggingface/moonshine": ("huggingface", {"tokenizer": "huggingface/moonshine/tokenizer.json"}, {}),
    "whisper": ("whisper", {"tokenizer": "whisper/faster-whisper-base/tokenizer.json"}, {}),
    "funasr_char": ("funasr_char", {"tokens": "funasr_char/paraformer-zh-vocab8404/tokens.json"}, {}),
    "symbol_table/from-sentencepiece": (
        "symbol_table",
        {"sentencepiece_model": "sentencepiece/icefall-librispeech-bpe500.model"},
        {},
    ),
}
TEXTS = ("你好世界", "HELLO WORLD", "the quick brown fox 😀", "naïve café")


def _copy_spec(name: str, folder) -> TokenizerSpec:
    kind, files, options = SPECS[name]
    copied = {}
    for role, relative in files.items():
        target = folder / role / os.path.basename(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared(relative), target)
        copied[role] = str(target)
    return TokenizerSpec(kind, copied, options)


def _original(name: str):
    kind, files, options = SPECS[name]
    return build_tokenizer(TokenizerSpec(kind, {r: shared(p) for r, p in files.items()}, options))


def _let_go() -> None:
    """This process no longer holds the tokenizers the test let go of (held weakly) nor the
    ones rebuilt from pickles (kept until clear_cache)."""
    gc.collect()
    pickling.clear_cache()


@pytest.fixture(autouse=True)
def _holding_nothing():
    """Each test starts as a worker that holds no tokenizer (the contract cases of the same
    session hold tokenizers of these very files, which an unpickle would find)."""
    with elsewhere.holding_nothing():
        yield


def _hypotheses(tok) -> list[list[int]]:
    hyps = [list(range(0, min(tok.vocab_size, 400), 3)), [tok.vocab_size - 1, 0, 5], []]
    if tok.supports_encode:
        for text in TEXTS:
            try:
                hyps.append(tok.encode(text))
            except ValueError:
                pass
    return hyps


@pytest.mark.parametrize("name", sorted(SPECS))
def test_pickles_by_value_and_rebuilds_without_the_senders_files(name, tmp_path):
    spec = _copy_spec(name, tmp_path)
    tok = build_tokenizer(spec)
    assert tok.pickle_mode == "value"
    blob = pickle.dumps(tok)
    sizes = sum(os.path.getsize(p) for p in spec.files.values())
    assert len(blob) >= sizes  # the bytes are inside
    shutil.rmtree(tmp_path)
    sent = (type(tok), tok.vocab_size, tok.special_ids)
    del tok
    _let_go()
    clone = pickle.loads(blob)
    assert (type(clone), clone.vocab_size, clone.special_ids) == sent
    assert not any(p.startswith(str(tmp_path)) for p in clone.spec.files.values())
    reference = _original(name)
    hyps = _hypotheses(reference)
    assert clone.decode_batch(hyps) == [reference.decode(h) for h in hyps]
    if reference.supports_encode:  # lazily loaded encoders read the rebuilt files too
        assert clone.encode("hello 世界") == reference.encode("hello 世界")
    # Pickled again (a worker passing it on) it still carries its files, without re-reading.
    assert pickle.loads(pickle.dumps(clone)) is clone  # same process: the cached build


@pytest.mark.parametrize("name", ["symbol_table", "funasr_char"])
def test_pickles_by_spec_when_asked(name, tmp_path):
    spec = _copy_spec(name, tmp_path)
    tok = pickling.by_spec(build_tokenizer(spec))
    blob = pickle.dumps(tok)
    assert len(blob) < 4096  # paths, not files
    clone = pickle.loads(blob)
    assert clone.spec == spec and clone is not tok
    shutil.rmtree(tmp_path)
    with pytest.raises(FileNotFoundError):  # by spec, the receiver needs the paths
        pickle.loads(blob)
    assert pickling.by_value(tok).pickle_mode == "value"


def test_a_thousand_unpickles_build_once(monkeypatch, tmp_path):
    from oasr_tok.core import pickling as module

    tok = build_tokenizer(_copy_spec("funasr_char", tmp_path))
    blob = pickle.dumps(tok)
    del tok
    _let_go()
    builds = []
    real = module.build
    monkeypatch.setattr(module, "build", lambda spec: builds.append(spec) or real(spec))
    clones = {id(pickle.loads(blob)) for _ in range(1000)}
    assert len(builds) == 1 and len(clones) == 1


def test_a_damaged_pickle_is_refused(tmp_path):
    tok = build_tokenizer(_copy_spec("symbol_table", tmp_path))
    kind, options, files = pickling.payload(tok.spec)
    name, digest, data = files["units"]
    del tok
    _let_go()
    with pytest.raises(MalformedAssetError, match="SHA-256"):
        pickling.from_value(kind, options, {"units": (name, digest, data[:-10] + b"x 99999\n")})
    with pytest.raises(MalformedAssetError, match="plain file name"):
        pickling.from_value(kind, options, {"units": ("../escape.txt", digest, data)})
    for forged in ({"units": (name, digest)}, {"units": (name, 5, data)}, {5: (name, digest, data)}, [], None):
        with pytest.raises(MalformedAssetError):
            pickling.from_value(kind, options, forged)  # type: ignore[arg-type]
    # The refused bytes were written to be checked (beside the build) and are gone: the intact
    # ones rebuild it.
    assert pickling.from_value(kind, options, files).decode([5, 6]) == _original("symbol_table").decode([5, 6])


def test_a_file_gone_before_the_first_pickle_is_named(tmp_path):
    spec = _copy_spec("symbol_table", tmp_path)
    tok = build_tokenizer(spec)
    os.remove(spec.files["units"])
    with pytest.raises(FileNotFoundError, match="units.txt"):
        pickle.dumps(tok)


def test_an_oversized_file_needs_a_reader(tmp_path, monkeypatch):
    tok = build_tokenizer(_copy_spec("symbol_table", tmp_path))
    monkeypatch.setattr(assets, "MAX_VALUE_BYTES", 1000)
    with pytest.raises(AssetError, match="register a reader"):
        pickle.dumps(tok)
    # A registered reader decides what travels for its suffix.
    monkeypatch.setitem(assets._READERS, ".txt", lambda path: (open(path, "rb").read(), "units.txt"))
    assert pickle.loads(pickle.dumps(tok)).decode([5, 6, 7]) == tok.decode([5, 6, 7])


# -- a spawn pool: workers that share nothing with the parent ----------------------------------

_worker_tok = None


def _install(tok) -> None:
    global _worker_tok
    _worker_tok = tok


def _task(blob_and_hyps):
    blob, hyps = blob_and_hyps
    tok = pickle.loads(blob)  # every task unpickles: the cache builds once per worker
    return os.getpid(), id(tok), tok.decode_batch(hyps)


def test_spawned_workers_build_once_each_from_the_pickled_files(tmp_path):
    spec = _copy_spec("huggingface/moonshine", tmp_path)
    tok = build_tokenizer(spec)
    blob = pickle.dumps(tok)
    shutil.rmtree(tmp_path)
    reference = _original("huggingface/moonshine")
    hyps = _hypotheses(reference)
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        answers = pool.map(_task, [(blob, hyps)] * 40, chunksize=1)
    assert {pid for pid, _, _ in answers} - {os.getpid()}
    by_pid: dict[int, set[int]] = {}
    for pid, ident, texts in answers:
        by_pid.setdefault(pid, set()).add(ident)
        assert texts == [reference.decode(h) for h in hyps]
    assert all(len(idents) == 1 for idents in by_pid.values())


def _promised_paths(tok) -> list[str]:
    """The paths of a tokenizer rebuilt by value, without asking for them (which writes them)."""
    files = tok.spec.files
    assert isinstance(files, PromisedPaths)
    return list(files._paths.values())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_by_value_nothing_is_written_or_hashed_until_asked(name, tmp_path):
    """Unpickling builds from the pickle's bytes and writes and hashes nothing: everything a
    tokenizer does afterwards works (a kind that opens its file itself, sentencepiece's
    processor or the tokenizers runtime, has it written when it asks), the spec's paths are
    there when read, and the fingerprint made later is the one of the bytes."""
    spec = _copy_spec(name, tmp_path)
    tok = build_tokenizer(spec)
    blob, printed = pickle.dumps(tok), tok.fingerprint
    shutil.rmtree(tmp_path)
    del tok
    _let_go()
    clone = pickle.loads(blob)
    paths = _promised_paths(clone)
    assert "_oasr_fingerprint" not in clone.__dict__  # nothing hashed
    if name != "sentencepiece" and not name.endswith("from-sentencepiece"):
        assert not any(os.path.exists(p) for p in paths)  # nothing written (sentencepiece opens its own)
    reference = _original(name)
    hyps = _hypotheses(reference)
    assert clone.decode_batch(hyps) == [reference.decode(h) for h in hyps]
    if reference.supports_encode:
        assert clone.encode("hello 世界") == reference.encode("hello 世界")
    files = dict(clone.spec.files)  # handed out: written
    for role, path in files.items():
        with open(path, "rb") as handle:
            assert handle.read() == open(shared(SPECS[name][1][role]), "rb").read()
    assert clone.fingerprint == printed == reference.fingerprint


def test_a_spec_that_travels_brings_written_files(tmp_path):
    tok = build_tokenizer(_copy_spec("symbol_table", tmp_path))
    blob = pickle.dumps(tok)
    del tok
    _let_go()
    clone = pickle.loads(blob)
    (path,) = _promised_paths(clone)
    assert not os.path.exists(path)
    moved = pickle.loads(pickle.dumps(clone.spec))  # a plain spec, its file on disk
    assert type(moved.files) is dict and moved.files == {"units": path} and os.path.isfile(path)
    assert build_tokenizer(moved).decode([5, 6]) == clone.decode([5, 6])


def test_a_kind_that_opens_its_file_itself_has_it_written_and_is_built_once(monkeypatch, tmp_path):
    """SentencePiece loads its model from a path: the file is written when it asks, the build
    done once."""
    from oasr_tok.core import pickling as module

    tok = build_tokenizer(_copy_spec("sentencepiece", tmp_path))
    blob = pickle.dumps(tok)
    ids = tok.encode("hello 世界 naïve")
    want = tok.decode(ids)
    del tok
    _let_go()
    builds = []
    real = module.build
    monkeypatch.setattr(module, "build", lambda spec: builds.append(spec) or real(spec))
    clone = pickle.loads(blob)
    assert len(builds) == 1 and clone.decode(ids) == want
    assert all(os.path.isfile(p) for p in _promised_paths(clone))


def test_a_damaged_pickle_is_refused_by_its_crc_and_nothing_is_written(tmp_path):
    tok = build_tokenizer(_copy_spec("huggingface/moonshine", tmp_path))
    function, (kind, options, files, sums) = pickling.reduce_by_value(tok)
    assert function is pickling.from_value and set(sums) == set(files)
    del tok
    _let_go()
    name, digest, data = files["tokenizer"]
    at = data.index(b'"vocab"') + 40  # a byte inside the vocabulary: the JSON still parses
    damaged = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
    before = set(readers._promised)
    with pytest.raises(MalformedAssetError, match="CRC-32") as caught:
        pickling.from_value(kind, options, {"tokenizer": (name, digest, damaged)}, sums)
    assert caught.value.path == name and set(readers._promised) == before  # its promises withdrawn
    for forged in ({}, {"tokenizer": -1}, {"tokenizer": 1 << 32}, {"tokenizer": "0"}, [sums["tokenizer"]]):
        with pytest.raises(MalformedAssetError, match="CRC-32"):
            pickling.from_value(kind, options, files, forged)  # type: ignore[arg-type]
    assert pickling.from_value(kind, options, files, sums).decode([5, 6]) == _original("huggingface/moonshine").decode(
        [5, 6]
    )


def test_a_forged_digest_names_nothing(tmp_path):
    """A pickle whose files carry another tokenizer's digests (its CRC-32s right) builds from its
    own bytes, and its fingerprint is theirs: it is never found, cached or returned as the
    tokenizer whose digests it claimed, and the genuine pickle still brings the genuine one."""
    from oasr_tok.files.assets import hashed, identity_key

    tok = build_tokenizer(_copy_spec("symbol_table", tmp_path))
    genuine = pickling.reduce_by_value(tok)[1]
    kind, options, files, sums = genuine
    del tok
    _let_go()
    name, digest, data = files["units"]
    lines = data.split(b"\n")
    other = b"\n".join([*lines[:5], b"Z" + lines[5], *lines[6:]])  # another symbol table: a symbol renamed
    forged_files = {"units": (name, digest, other)}
    forged = pickling.from_value(kind, options, forged_files, {"units": zlib.crc32(other)})
    claimed = identity_key(kind, options, files)
    assert forged.fingerprint == identity_key(kind, options, hashed(forged_files)) != claimed
    assert travel.held(claimed, kind) is None
    again = pickling.from_value(*genuine)  # the cache hit is checked against its bytes
    assert again is not forged and again.fingerprint == claimed
    assert again.decode([5, 6]) == _original("symbol_table").decode([5, 6]) != forged.decode([5, 6])
    # Pickled again, the forged one carries the digests of its own bytes.
    assert pickling.reduce_by_value(forged)[1][2]["units"][1] == hashed(forged_files)["units"][1]


def test_a_tokenizer_by_value_in_a_fresh_process_is_held_and_found_by_reference(tmp_path):
    """In a process that never had the files: unpickled by value it hashes nothing, and a stream
    that then arrives by reference finds it (its fingerprint made then, from its bytes) and goes
    on with exactly the deltas it would have given."""
    tok = build_tokenizer(_copy_spec("huggingface/moonshine", tmp_path))
    ids = tok.encode("the quick brown fox 😀 naïve café")
    stream = tok.new_stream()
    first = stream.feed(ids[:5])
    rest = stream.fork().feed(ids[5:])
    blobs = tmp_path / "blobs.pickle"
    blobs.write_bytes(pickle.dumps((pickle.dumps(tok), pickle.dumps(stream))))
    code = f"""
import pickle, sys
tok_blob, stream_blob = pickle.loads(open({str(blobs)!r}, "rb").read())
tok = pickle.loads(tok_blob)
assert "_oasr_fingerprint" not in tok.__dict__
stream = pickle.loads(stream_blob)
assert stream.tokenizer is tok and "_oasr_fingerprint" in tok.__dict__
print(repr(stream.feed({ids[5:]!r})))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=subprocess_env()
    )
    assert done.returncode == 0, done.stderr
    assert first and done.stdout.strip() == repr(rest)
