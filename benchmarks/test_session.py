"""Re-decoding sessions (tok.new_session): the rollback per chunk at 100 ... 100,000 session
tokens, beside qwen-asr's own re-encode-and-decode of the same sessions; and the memory a
session holds.

Methodology. Qwen3 (huggingface/qwen3) with Qwen3-ASR's header, the multi-script passages of
bench_corpus.py (English, Chinese, Chinese with English words, every script's widest characters:
emoji with modifiers and joiners, CJK Extension B, Cyrillic, Arabic, Devanagari, Thai, Hangul).
A session is prepared to N tokens once: the header and N passage ids fed as one chunk, then one
rollback (which lays its checkpoints), untimed. Each round takes a fork of it and runs one chunk,
untimed (the fork copies the whole text, and that copy, not the rollback, evicts the tokenizer's
tables from the caches: at 100,000 tokens the first chunks after it took twice as long), then K
chunks as a server does: rollback(5) (qwen-asr's default unfixed_token_num) then the chunk's
ids fed: 13 passage ids (the 5 dropped re-generated, and 8 more: about two seconds of speech),
the same ids at every N, so that the rows differ only in how long the session is. Per chunk:
one round over K.

* `oasr_tok rollback`: rollback(5) and feed, the prefix not made as a str (what the flat target
  checks: a server that prompts with ids, or takes the prefix only when it needs it).
* `oasr_tok rollback + prefix`: the same, and `session.prefix` made as a str each chunk (one copy
  of the whole prefix: what a server that prompts with text pays, and what qwen-asr computes).
* `qwen-asr prefix`: qwen-asr 0.0.6's rollback lines (tests/session_reference.py:
  encode the whole text, drop 5 ids, decode, widen while U+FFFD) over the transformers tokenizer
  of the same files, on the same sessions (the target's peer).
* `qwen-asr streaming_transcribe`: qwen-asr's own streaming_transcribe (its file, fetched by
  fixtures/fetch_qwen_asr.py; a scripted model answers instantly), which also parses its whole
  text each chunk (parse_asr_output and its repetition repair): for context, not the target.

The qwen-asr rows run at 100, 1,000 and 10,000 tokens (at 100,000 one chunk costs them tenths of
a second), streaming_transcribe at 100 and 1,000. The prepared data is frozen out of the collector's reach (gc.freeze), as in
test_revisions.py.
"""

from __future__ import annotations

import copy
import functools
import gc
import sys
import tracemalloc
from pathlib import Path

import pytest
from bench_cases import Unavailable, hypothesis, period, shared, tokenizer
from conftest import timed

TESTS = Path(__file__).resolve().parent.parent / "tests"
LABEL = "huggingface/qwen3"
POSITIONS = [100, 1_000, 10_000, 100_000]
PEER_POSITIONS = [100, 1_000, 10_000]
K = 32  # chunks per round
DROP = 5  # qwen-asr's unfixed_token_num
NEW = 8  # ids of new speech per chunk
HEADER = "language English<asr_text>"
SESSIONS = 1_000  # for the memory row


def _reference():
    """tests/session_reference.py (qwen-asr's rollback lines) and, when fetched, qwen-asr's own
    streaming loop (tests/peers/qwen_asr_source.py)."""
    for folder in (TESTS, TESTS / "peers"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    import session_reference

    return session_reference


@functools.cache
def _transformers_tokenizer():
    try:
        import transformers
    except ImportError:
        raise Unavailable("transformers is not installed (the qwen-asr rows use its tokenizer)") from None
    return transformers.AutoTokenizer.from_pretrained(str(Path(shared(f"{LABEL}/tokenizer.json")).parent))


@functools.lru_cache(maxsize=1)
def _prepare(n: int):
    tok = tokenizer(LABEL)
    session = tok.new_session(unfixed_chunk_num=0, unfixed_token_num=DROP, envelope="qwen3_asr")
    session.feed(tok.encode(HEADER) + hypothesis(LABEL, n))
    session.rollback(0)
    p = list(period(LABEL))
    chunks = [p[NEW * j : NEW * j + DROP + NEW] for j in range(K + 1)]
    gc.collect()
    gc.freeze()
    return tok, session, chunks[1:], chunks[0]


OURS = ["oasr_tok rollback", "oasr_tok rollback + prefix"]
#: the peers and where they run (at 10,000 tokens qwen-asr's whole chunk step takes most of a
#: second, nearly all of it its repetition repair of the whole text: not run there)
THEIRS = {"qwen-asr prefix": PEER_POSITIONS, "qwen-asr streaming_transcribe": PEER_POSITIONS[:2]}
PARAMS = [pytest.param(impl, n, id=f"{impl}|{n}") for n in POSITIONS for impl in OURS] + [
    pytest.param(impl, n, id=f"{impl}|{n}", marks=pytest.mark.peer) for impl, at in THEIRS.items() for n in at
]


@pytest.mark.parametrize("impl,n", PARAMS)
def test_session_rollback(benchmark, impl: str, n: int) -> None:
    try:
        tok, session, chunks, warm = _prepare(n)
    except Unavailable as exc:
        pytest.skip(str(exc))
    info = {"suite": "session", "case": LABEL, "op": "rollback per chunk", "impl": impl, "n": n}
    if impl.startswith("oasr_tok"):
        with_prefix = impl.endswith("prefix")

        def run(live):
            for ids in chunks:
                live.rollback(DROP)
                if with_prefix:
                    live.prefix  # noqa: B018 (made, as a server prompting with text makes it)
                live.feed(ids)

        def make():
            live = session.fork()
            live.rollback(DROP)  # the untimed chunk
            live.feed(warm)
            return live

        timed(benchmark, run, make, per=K, info=info)
        return
    try:
        hf = _transformers_tokenizer()
    except Unavailable as exc:
        pytest.skip(str(exc))
    texts = [hf.decode(ids, skip_special_tokens=True) for ids in chunks]
    raw = session.raw
    if impl == "qwen-asr prefix":
        qwen_asr_prefix = _reference().qwen_asr_prefix

        def run_lines(_live):
            text = raw
            for answer in texts:
                text = qwen_asr_prefix(hf, text, DROP)[1] + answer

        timed(benchmark, run_lines, per=K, info=info)
        return
    _reference()
    try:
        from qwen_asr_source import QwenAsrStreaming
    except ImportError as exc:
        pytest.skip(str(exc))
    try:
        proto = QwenAsrStreaming(hf, unfixed_chunk_num=0, unfixed_token_num=DROP)
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        pytest.skip(str(exc))
    proto.state._raw_decoded = raw

    def make():
        live = copy.copy(proto)
        live.state = copy.copy(proto.state)
        return live

    def run_theirs(live):
        for answer in texts:
            live.chunk(answer)

    timed(benchmark, run_theirs, make, per=K, info=info)


def test_session_memory(benchmark) -> None:
    """Bytes per session: SESSIONS sessions fed 1,000 tokens and rolled back once, beside the text
    they hold (tracemalloc); and one session's own bytes besides its text at 1,000 and 100,000."""
    try:
        tok = _prepare(100)[0]
    except Unavailable as exc:
        pytest.skip(str(exc))
    ids = tok.encode(HEADER) + hypothesis(LABEL, 1_000)

    def sessions() -> list:
        out = []
        for _ in range(SESSIONS):
            s = tok.new_session(0, DROP, "qwen3_asr")
            s.feed(ids)
            s.rollback(DROP)
            out.append(s)
        return out

    sessions()  # the tokenizer's plan and runtime, made once per process
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = sessions()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    text_chars = len(held[0].prefix)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    empty = [tok.new_session() for _ in range(SESSIONS)]
    empty_bytes = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del empty
    info = {
        "suite": "session memory",
        "case": LABEL,
        "op": "memory",
        "impl": "oasr_tok",
        "n": 1_000,
        "sessions": SESSIONS,
        "bytes_per_session": (after - before) / SESSIONS,
        "empty_bytes_per_session": empty_bytes / SESSIONS,
        "text_chars": text_chars,
        "text_bytes_utf8": len(held[0].prefix.encode("utf-8")),
    }
    del held
    timed(benchmark, lambda _live: sessions(), per=SESSIONS, info=info, min_rounds=1)
