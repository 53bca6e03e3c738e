"""A tokenizer's fingerprint and the tokenizers a process holds (docs/scale.md § Streams that
travel): the fingerprint names the files' bytes and the options, never the paths, and is the key a
by-value pickle is cached under; a load hashes nothing (the fingerprint is computed once, when
first asked for); a file changed after the build is refused rather than named or shipped; every
tokenizer built or unpickled is held weakly (a server that drops a model drops it), and a stream
or a tokenizer unpickled where its fingerprint is held builds nothing. The choice of what travels
(oasr_tok.Travel, tok.travel, travelling) is checked and scoped as documented."""

from __future__ import annotations

import gc
import os
import pickle
import shutil
import threading

import pytest

import oasr_tok
from oasr_tok import AssetError, StreamStateError, TokenizerNotHeldError, TokenizerSpec, Travel, build_tokenizer
from oasr_tok._engine import travel
from oasr_tok.core import identity, pickling
from oasr_tok.files.assets import identity_key

import elsewhere
from paths import shared

QWEN3 = {
    "tokenizer": "huggingface/qwen3/tokenizer.json",
    "tokenizer_config": "huggingface/qwen3/tokenizer_config.json",
}
UNITS = "symbol_table/wenet-aishell2.units.txt"


def _copied(files: dict[str, str], folder) -> dict[str, str]:
    out = {}
    for role, relative in files.items():
        target = folder / role / os.path.basename(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared(relative), target)
        out[role] = str(target)
    return out


def _rewrite(path: str) -> None:
    """Other bytes at the same path: one symbol of the table spelled differently."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    lines[10] = "ZZZQ " + lines[10].split()[-1]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))


def _let_go() -> None:
    gc.collect()
    pickling.clear_cache()


@pytest.fixture(autouse=True)
def _holding_nothing():
    """Each test starts as a process that holds no tokenizer (the contract cases of the same
    session hold tokenizers of these very files)."""
    with elsewhere.holding_nothing():
        yield


def test_the_fingerprint_names_the_bytes_and_options_not_the_paths(tmp_path):
    original = build_tokenizer(TokenizerSpec("huggingface", {r: shared(p) for r, p in QWEN3.items()}))
    copy = build_tokenizer(TokenizerSpec("huggingface", _copied(QWEN3, tmp_path)))
    assert copy.fingerprint == original.fingerprint
    assert len(original.fingerprint) == 64 and int(original.fingerprint, 16) >= 0
    # It is the key its by-value pickle is cached under: the same digests, the same string.
    assert identity_key(*pickling.payload(original.spec)) == original.fingerprint
    # Other options, other files, a view that renders its specials: other fingerprints.
    units = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}))
    other_options = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}, {"special_ids": [0]}))
    fingerprints = {original.fingerprint, units.fingerprint, other_options.fingerprint}
    fingerprints.add(original.with_specials().fingerprint)
    assert len(fingerprints) == 4


def test_a_load_hashes_nothing_and_the_fingerprint_is_computed_once(monkeypatch):
    calls = []
    real = identity.content_identity
    monkeypatch.setattr(identity, "content_identity", lambda *a: calls.append(a) or real(*a))
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}))
    assert calls == []  # the build read its files, and hashed none
    printed = tok.fingerprint
    assert tok.fingerprint == printed and len(calls) == 1
    stream = tok.new_stream()
    for _ in range(3):
        pickle.loads(pickle.dumps(stream))
    assert len(calls) == 1


def test_a_file_changed_after_the_build_is_refused_not_named_or_shipped(tmp_path):
    files = _copied({"units": UNITS}, tmp_path)
    tok = build_tokenizer(TokenizerSpec("symbol_table", files))
    _rewrite(files["units"])
    with pytest.raises(AssetError, match="changed after this tokenizer was built"):
        tok.fingerprint  # noqa: B018
    with pytest.raises(AssetError, match="changed after this tokenizer was built"):
        pickle.dumps(tok)  # by value: the bytes that made it are no longer there to ship
    with pytest.raises(AssetError, match="changed after"):
        pickle.dumps(tok.new_stream())
    # Built again from the changed file, it has its own fingerprint.
    again = build_tokenizer(TokenizerSpec("symbol_table", files))
    assert again.fingerprint != build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)})).fingerprint


def test_held_weakly_a_server_that_drops_a_model_drops_its_tokenizer(tmp_path):
    tok = build_tokenizer(TokenizerSpec("huggingface", _copied(QWEN3, tmp_path)))
    printed = tok.fingerprint
    assert travel.held(printed, "huggingface") is tok
    stream = tok.new_stream()
    stream.feed(tok.encode("hello"))
    blob = pickle.dumps(stream)
    del tok
    gc.collect()
    assert travel.held(printed, "huggingface") is not None  # the stream keeps its tokenizer
    del stream
    _let_go()
    assert travel.held(printed, "huggingface") is None
    with pytest.raises(TokenizerNotHeldError, match="does not hold"):
        pickle.loads(blob)
    # Loaded again (from any copy of the same files), it is found again.
    again = build_tokenizer(TokenizerSpec("huggingface", {r: shared(p) for r, p in QWEN3.items()}))
    assert pickle.loads(blob).tokenizer is again


def test_a_lookup_fingerprints_only_the_tokenizers_of_its_kind(monkeypatch):
    units = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}))
    asked = []
    real = identity.fingerprint
    monkeypatch.setattr(type(units), "fingerprint", property(lambda self: asked.append(self) or real(self)))
    assert travel.held("f" * 64, "whisper") is None
    assert units not in asked
    assert travel.held(real(units), "symbol_table") is units


def test_unpickling_where_the_fingerprint_is_held_builds_nothing(monkeypatch, tmp_path):
    """A tokenizer pickled by value (a Ray task's argument) arrives at a process that loaded the
    same files from its own paths: it is that tokenizer; nothing is written or built."""
    sender = build_tokenizer(TokenizerSpec("huggingface", _copied(QWEN3, tmp_path)))
    blob = pickle.dumps(sender)
    stream_blobs = {}
    stream = sender.new_stream()
    for mode in ("value", "spec"):
        with oasr_tok.travelling(tokenizer=mode):
            stream_blobs[mode] = pickle.dumps(stream)
    del sender, stream
    _let_go()
    receiver = build_tokenizer(TokenizerSpec("huggingface", {r: shared(p) for r, p in QWEN3.items()}))
    builds = []
    real = pickling.build
    monkeypatch.setattr(pickling, "build", lambda spec: builds.append(spec) or real(spec))
    assert pickle.loads(blob) is receiver
    assert all(pickle.loads(b).tokenizer is receiver for b in stream_blobs.values())
    assert builds == []


def test_by_spec_a_process_that_does_not_hold_it_builds_from_the_paths_and_checks_them(tmp_path):
    files = _copied({"units": UNITS}, tmp_path)
    tok = build_tokenizer(TokenizerSpec("symbol_table", files))
    stream = tok.new_stream()
    stream.feed([5, 6, 7])
    with oasr_tok.travelling(tokenizer="spec"):
        blob = pickle.dumps(stream)
    assert len(blob) < 1024  # the spec's paths, not its files
    expected = stream.fork().feed([8, 9])
    del tok, stream
    _let_go()
    moved = pickle.loads(blob)
    assert moved.feed([8, 9]) == expected and moved.tokenizer.spec.files == files
    del moved
    _let_go()
    _rewrite(files["units"])  # other files at the same paths
    with pytest.raises(StreamStateError, match="not the ones that made"):
        pickle.loads(blob)


# -- the choice of what travels ---------------------------------------------------------------------


def test_travel_checks_its_fields():
    assert Travel() == Travel("reference", True) == travel.DEFAULT
    for bad in ({"tokenizer": "files"}, {"tokenizer": None}, {"text": 1}, {"text": "no"}):
        with pytest.raises(StreamStateError):
            Travel(**bad)
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}))
    assert tok.travel == Travel()
    with pytest.raises(StreamStateError, match="oasr_tok.Travel"):
        tok.travel = "value"  # type: ignore[assignment]
    tok.travel = Travel("value", text=False)
    assert tok.travel == Travel("value", False) and travel.travel_of(tok) == tok.travel
    with pytest.raises(StreamStateError):
        with oasr_tok.travelling(Travel(), text=False):
            pass
    with pytest.raises(StreamStateError):
        with oasr_tok.travelling(tokenizer="copy"):  # type: ignore[arg-type]
            pass


def test_a_travelling_block_overrides_the_tokenizers_choice_field_by_field():
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}))
    tok.travel = Travel("spec", text=True)
    with oasr_tok.travelling(text=False):
        assert travel.travel_of(tok) == Travel("spec", False)
        with oasr_tok.travelling(tokenizer="value"):
            assert travel.travel_of(tok) == Travel("value", False)
        assert travel.travel_of(tok) == Travel("spec", False)
    assert travel.travel_of(tok) == Travel("spec", True)


def test_a_travelling_block_holds_for_its_own_thread():
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}))
    seen = []
    started, release = threading.Event(), threading.Event()

    def other() -> None:
        started.wait()
        seen.append(travel.travel_of(tok))
        release.set()

    worker = threading.Thread(target=other)
    worker.start()
    with oasr_tok.travelling(tokenizer="value"):
        started.set()
        release.wait()
        assert travel.travel_of(tok).tokenizer == "value"
    worker.join()
    assert seen == [Travel()]


def test_a_tokenizer_without_a_spec_cannot_travel_by_reference():
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(UNITS)}))
    bare = type(tok).__new__(type(tok))
    bare.__dict__.update({k: v for k, v in tok.__dict__.items() if not k.startswith("_oasr")})
    with pytest.raises(TypeError, match="not built from a TokenizerSpec"):
        bare.fingerprint  # noqa: B018
