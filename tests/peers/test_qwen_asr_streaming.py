"""Re-decoding sessions against qwen-asr's own streaming loop: Qwen3ASRModel.init_streaming_state,
streaming_transcribe and finish_streaming_transcribe of qwen-asr 0.0.6 (qwen_asr/inference/
qwen3_asr.py, loaded from its wheel by tests/peers/qwen_asr_source.py with a scripted model and
silent audio; fixtures/fetch_qwen_asr.py unpacks it).

Each chunk, qwen-asr prompts the model with `prompt_raw + prefix`, where the prefix comes from
the text so far; the scripted model answers with the text of the ids the test drew for that
chunk (decoded by the transformers tokenizer of the same files, special ids skipped, as vLLM's
detokenizer gives it). A session fed the same ids must have rolled back to exactly that prefix
before the chunk, hold exactly qwen-asr's `_raw_decoded` after it, and give the words and the
language qwen-asr's parse_asr_output gives (where the text has its header: before it, the
session gives no words where qwen-asr gives the header as the text, the documented difference).
The k of each chunk is qwen-asr's `state.unfixed_token_num`, set before the chunk (0 to 12)."""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oasr_tok

from paths import require_shared
from qwen_asr_source import QwenAsrStreaming, qwen_asr_modules
from session_reference import QWEN3, qwen3_asr_files
from strategies import session_scripts

transformers = pytest.importorskip("transformers")


@functools.cache
def tokenizers_of(folder: str) -> tuple[oasr_tok.Tokenizer, object]:
    return oasr_tok.load(folder), transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module", params=["qwen3", "qwen3 + <asr_text>"])
def folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    qwen_asr_modules()  # (skips, or fails under OASR_TOK_REQUIRE_PEERS=1, without qwen-asr's code)
    plain = require_shared(f"{QWEN3}/tokenizer.json").rsplit("/", 1)[0]
    if request.param == "qwen3":
        return plain
    return str(qwen3_asr_files(tmp_path_factory.mktemp("qwen3-asr")))


def header_like(raw: str) -> bool:
    """Whether the output can still be Qwen3-ASR's header, or is one (docs/envelopes.md)."""
    start = raw.lstrip()[:10]
    return (
        "language ".startswith(start.lower()) or start.lower().startswith("language") or "<asr_text>".startswith(start)
    )


@settings(max_examples=40, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_prefix_is_qwen_asrs(folder: str, data: st.DataObject) -> None:
    tok, hf = tokenizers_of(folder)
    unfixed_chunk_num, unfixed_token_num = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 12))
    script = data.draw(session_scripts(tok, max_chunks=20))
    theirs = QwenAsrStreaming(hf, unfixed_chunk_num, unfixed_token_num)
    ours = tok.new_session(unfixed_chunk_num, unfixed_token_num, envelope="qwen3_asr")
    parse_asr_output = qwen_asr_modules()["parse_asr_output"]
    for chunk, (k, final, ids) in enumerate(script):
        text = hf.decode(ids, skip_special_tokens=True)
        if k is not None:
            theirs.state.unfixed_token_num = k  # this chunk's k, and the later chunks' until changed
        prefix = theirs.finish(text) if final else theirs.chunk(text)
        k_now = theirs.state.unfixed_token_num
        if chunk < unfixed_chunk_num or k_now == unfixed_token_num:
            ours.rollback(final=final)  # the session's own rule
        else:
            ours.rollback(k_now, final=final)
        assert ours.prefix == prefix, f"chunk {chunk}"
        ours.feed(ids)
        assert ours.raw == theirs.raw, f"chunk {chunk}"
        language, words = parse_asr_output(theirs.raw)
        if header_like(theirs.raw):
            if "<asr_text>" in theirs.raw:
                assert (ours.text, ours.envelope.get("language", "")) == (words, language), f"chunk {chunk}"
            else:  # qwen-asr gives the header as the text; a session holds it back
                assert ours.text == "" and "language" not in ours.envelope
        else:
            assert ours.text == theirs.raw.strip()
