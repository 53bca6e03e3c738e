"""The Ray Data recipe of docs/scale.md on a local Ray (two CPUs): a column of id lists becomes
transcripts, token pieces and word timings in Ray worker processes, with a tokenizer whose files
were deleted on the driver after pickling — so the workers cannot have read the driver's paths.
The oracle is the same tokenizer built in this process from the original fixture files.

Ray is the test-only `distributed` extra; without it this module is skipped, saying so."""

from __future__ import annotations

import os
import pickle
import shutil

import pytest

try:
    import ray
    import ray.data
except ImportError:  # pragma: no cover - CI installs the extra
    pytest.skip(
        "Ray is not installed: pip install 'oasr_tok[distributed]' runs the Ray Data recipe test",
        allow_module_level=True,
    )

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.toolkits.batch import Transcriber

from paths import PACKAGE_PARENT, shared


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(PACKAGE_PARENT)}},
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def test_map_batches_decodes_on_workers_without_the_drivers_files(local_ray, tmp_path):
    original = shared("huggingface/qwen3/tokenizer.json")
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(original, copy)
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": str(copy)}))
    transcribe = Transcriber(tok, pieces=True, words=True)
    pickle.dumps(transcribe)  # the first pickle reads the files; later ones reuse the bytes
    os.remove(copy)  # from here on the driver's path is gone
    reference = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": original}))
    texts = ["hello world", "你好，世界", "naïve café 😀", "the quick brown fox", ""]
    rows = [{"ids": reference.encode(texts[k % len(texts)]) + [k % 50], "row": k} for k in range(400)]
    for row in rows:
        row["starts"] = [0.02 * j for j in range(len(row["ids"]))]
    ds = ray.data.from_items(rows, override_num_blocks=8)
    # A callable class: each of the (at most two) worker actors builds the tokenizer once.
    out = ds.map_batches(
        Transcriber,
        fn_constructor_args=(tok,),
        fn_constructor_kwargs={"pieces": True, "words": True},
        batch_size=32,
        concurrency=2,
        batch_format="default",
    ).take_all()
    assert sorted(r["row"] for r in out) == list(range(400))
    for r in out:
        ids = list(r["ids"])
        assert r["text"] == reference.decode(ids)
        assert list(r["pieces"]) == reference.token_pieces(ids)
        words = [dict(w) for w in r["words"]]
        expected = [w.to_dict() for w in reference.word_timings(ids, list(r["starts"]))]
        assert [w["text"] for w in words] == [w["text"] for w in expected]
        assert [(w["first_token"], w["last_token"]) for w in words] == [
            (w["first_token"], w["last_token"]) for w in expected
        ]
        assert [w["start"] for w in words] == pytest.approx([w["start"] for w in expected])
    # A plain function that closes over the tokenizer works the same way.
    plain = ds.map_batches(
        lambda batch: {"row": batch["row"], "text": tok.decode_batch(batch["ids"])},
        batch_size=50,
        batch_format="default",
    ).take_all()
    assert {r["row"]: r["text"] for r in plain} == {row["row"]: reference.decode(row["ids"]) for row in rows}


# -- streams moved between actors (docs/scale.md § Streams that travel) -------------------------------


@ray.remote(num_cpus=0)
class _Detokenizer:
    """A worker of a server: it loads the model's tokenizer itself (from files it sees, or not at
    all) and continues whatever stream it is sent."""

    def __init__(self, path: str | None) -> None:
        import oasr_tok

        self.tok = oasr_tok.load(path) if path is not None else None

    def step(self, stream, ids):
        deltas = [stream.feed([i]) for i in ids]
        return stream, deltas, stream.tokenizer is self.tok

    def fingerprint(self) -> str | None:
        return None if self.tok is None else self.tok.fingerprint


def test_a_stream_moves_between_actors_mid_generation_by_reference(local_ray):
    """Two actors that each loaded Qwen3's files: a stream started on the driver goes to the
    first, from it straight to the second (an object reference, never back through the driver),
    and back, mid-generation (a held byte sequence, a stop string's held start); every message
    is the stream's state and its tokenizer's fingerprint, each actor continues on the tokenizer
    it loaded itself, and the deltas are exactly those of the same stream continued here."""
    import oasr_tok

    path = shared("huggingface/qwen3")
    tok = oasr_tok.load(path)
    ids = tok.encode("language English<asr_text>hello 你好龘 world, the quick brown fox 🫠 jumps the end")
    chunks = [ids[:5], ids[5:9], ids[9:16], ids[16:]]
    here = tok.new_stream(prefill=ids[:2], stop=["the end"], envelope="qwen3_asr")
    moving = here.fork()
    expected = [[here.feed([i]) for i in chunk] for chunk in chunks]
    first, second = _Detokenizer.remote(path), _Detokenizer.remote(path)
    assert ray.get(first.fingerprint.remote()) == ray.get(second.fingerprint.remote()) == tok.fingerprint
    got = []
    stream_ref, deltas, own = first.step.options(num_returns=3).remote(moving, chunks[0])
    got.append((deltas, own))
    stream_ref, deltas, own = second.step.options(num_returns=3).remote(stream_ref, chunks[1])
    got.append((deltas, own))
    stream_ref, deltas, own = first.step.options(num_returns=3).remote(stream_ref, chunks[2])
    got.append((deltas, own))
    back = ray.get(stream_ref)  # back on the driver, by reference to a tokenizer the driver holds
    assert back.tokenizer.fingerprint == tok.fingerprint
    last = [back.feed([i]) for i in chunks[3]]
    assert [ray.get(d) for d, _ in got] + [last] == expected
    assert all(ray.get(own) for _, own in got)
    assert back.stop == here.stop and back.text == here.text and back.envelope == here.envelope
    for actor in (first, second):
        ray.kill(actor)


def test_an_actor_without_the_tokenizer_refuses_a_reference_and_takes_one_by_value(local_ray):
    """An actor that loaded nothing: a stream sent by reference is refused with
    TokenizerNotHeldError; sent by value (a travelling block around the call, where Ray pickles
    the arguments) the tokenizer travels with it and the stream goes on exactly."""
    import oasr_tok

    tok = oasr_tok.load(shared("huggingface/qwen3"))
    ids = tok.encode("hello 你好龘 world")
    stream = tok.new_stream()
    stream.feed(ids[:3])
    bare = _Detokenizer.remote(None)
    with pytest.raises(Exception) as refused:
        ray.get(bare.step.remote(stream, ids[3:]))
    assert "TokenizerNotHeldError" in str(refused.value) or isinstance(
        getattr(refused.value, "cause", None), oasr_tok.TokenizerNotHeldError
    )
    with oasr_tok.travelling(tokenizer="value"):
        ref = bare.step.remote(stream, ids[3:])
    moved, deltas, own = ray.get(ref)
    here = stream.fork()
    assert deltas == [here.feed([i]) for i in ids[3:]]
    assert not own and moved.tokenizer.fingerprint == tok.fingerprint  # (back here, one the driver holds)
    ray.kill(bare)
