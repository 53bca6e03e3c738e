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
