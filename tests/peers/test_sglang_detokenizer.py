"""SGLang's own detokenizer tests, translated onto oasr_tok's replacement of
DetokenizerManager._decode_batch_token_id_output (oasr_tok.integrations.sglang), every case that
concerns what it replaces. Upstream: github.com/sgl-project/sglang, test/registered/unit/managers/

* test_detokenizer_stream_offsets.py at 313c23cfd1d86b1779caaf5c04d194337817f197: text already
  streamed is never sent again (the three shapes of find_printable_text's shrinking answer), the
  sent offset never moves back, the clamp fires both ways, plain ASCII unchanged;
* test_detokenizer_stream_offset.py at 1745637e24356ea87c99d464423b9f00f3b4933d: a retreat to a
  space does not duplicate, plain ASCII unchanged;
* test_detokenizer_incremental.py at a75cab7946d0a8fc7684d5cd6801765898d85a5a: a stream of stray
  bytes reaches the client and keeps the re-read window bounded, a split character is still held
  back, holding resets on each clean step;
* test_detokenizer_stop_trim.py at 0adff0bcb4193f0d6ae0ea69d3197abebfdc12bf: stop token ids 0 and
  30 dropped (kept with no_stop_trim), unmatched reasons keep everything, a stop string cut;
* test_detokenizer_eviction_read_offset.py (the version that drives _decode_batch_token_id_output;
  the search index did not give its commit; the one at eae789d3def71addb6e5f563fda80f661ab6c286
  checks the scheduler's arithmetic only): a request whose state is gone goes on with every id's
  text when the scheduler's later read offsets are chunk-relative.

Not translated: the gpt-oss case of test_detokenizer_stop_trim.py (its call token is id 200012,
past every fixture tokenizer's vocabulary; the other keep rule of 0.5.23, a tool call's closing
token, is translated in its place), test_detokenizer_manager.py (at 9741c56b5baa9dcd13e01920df7937
79c217c747 it tests handle_batch_token_id_out without a tokenizer, at 47de2297ec177dfa187527d4a037
db5f811208f9 trim_matched_stop with several matches: neither is what this replaces, and
trim_matched_stop is the manager's own, called as it is).

Upstream drives the manager with stub tokenizers: a "byte" tokenizer whose ids are bytes decoded
as UTF-8 with errors="replace" is Qwen3's byte-level tokens here (its decoder decodes the joined
bytes the same way), a letters tokenizer is Qwen3's letter tokens, and a byte-fallback stub is
Mistral-7B's <0xNN> tokens (whose real decoder renders an invalid run one U+FFFD per byte). The
expected texts are upstream's, or the decode of the same ids by SGLang's own tokenizer."""

from __future__ import annotations

import pytest

from oasr_tok.integrations import sglang as oasr_sglang

import sglang_reference as reference
from paths import shared


@pytest.fixture(scope="module", autouse=True)
def checked_version():
    reference.files()
    saved = oasr_sglang.sglang_version
    oasr_sglang.sglang_version = lambda: reference.VERSION
    yield
    oasr_sglang.sglang_version = saved


def _manager(name: str):
    made = reference.manager(shared(name))
    oasr_sglang.install(made)
    return made


@pytest.fixture(scope="module")
def qwen():
    return _manager("huggingface/qwen3")


@pytest.fixture(scope="module")
def mistral():
    return _manager("huggingface/mistral-7b")


def byte_ids(manager, data: bytes) -> list[int]:
    """Qwen3's one-byte tokens for `data` (the upstream byte stub's ids)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    alphabet = bytes_to_unicode()
    return manager.tokenizer.convert_tokens_to_ids([alphabet[b] for b in data])


def fallback_ids(manager, data: bytes) -> list[int]:
    return manager.tokenizer.convert_tokens_to_ids([f"<0x{b:02X}>" for b in data])


_RID = iter(range(10**9))


def stream(manager, prompt: list[int], chunks: list[list[int]], finish: dict | None = None, keep=False):
    """Upstream's _stream: the prompt tail with the first chunk (read offset its length), each
    later chunk alone, then an empty finished batch ({}). With `finish`, the last chunk carries
    that reason instead, as the scheduler sends a stop token or string. The output_strs."""
    rid = f"u{next(_RID)}"
    out = []
    chunks = list(chunks) if finish is not None else [*chunks, []]
    for k, chunk in enumerate(chunks):
        done = k == len(chunks) - 1
        batch = reference.batch(
            [rid],
            [(prompt + chunk) if k == 0 else chunk],
            [len(prompt)],
            [(finish if finish is not None else {}) if done else None],
            None,
            None,
            [keep],
        )
        out.append(manager.handle_batch_token_id_out(batch).output_strs[0])
    assert rid not in manager._oasr_tok_streams  # finished: freed
    return out


def spied(manager, monkeypatch) -> list[tuple[int, int]]:
    """Each held step's (sent before it, printable's length): what upstream's record_clamp sees
    (a stream of one request: the one live request's send rule says what went out before)."""
    streams = manager._oasr_tok_streams
    seen: list[tuple[int, int]] = []
    real = streams._printable

    def printable(text):
        live = [request.rule for request in streams._states.values()]  # (none on its first batch)
        before = live[0][2] if live and live[0] is not None else 0  # (buf, skip, pending)
        result = real(text)
        seen.append((before, len(result)))
        return result

    monkeypatch.setattr(streams, "_printable", printable)
    return seen


# -- test_detokenizer_stream_offsets.py ---------------------------------------------------------

TAIL = b"Q: "
GEN_BYTES = "你好，世".encode()
CHUNKS = [GEN_BYTES[:5], GEN_BYTES[5:10], GEN_BYTES[10:]]
SPACE_BYTES = "A 世好a世".encode()
SPACE_CHUNKS = [SPACE_BYTES[:6], SPACE_BYTES[6:10], SPACE_BYTES[10:]]


def _reference(gen: bytes) -> str:
    return (TAIL + gen).decode()[len(TAIL.decode()) :]


def _bytes_stream(manager, chunks: list[bytes]) -> list[str]:
    return stream(manager, byte_ids(manager, TAIL), [byte_ids(manager, c) for c in chunks])


def test_incomplete_character_does_not_duplicate_text(qwen):
    assert "".join(_bytes_stream(qwen, CHUNKS)) == _reference(GEN_BYTES)


def test_incomplete_character_does_not_duplicate_text_without_batch_decode(qwen):
    # Upstream's per-row decode path (disable_tokenizer_batch_decode): one path here.
    qwen.disable_tokenizer_batch_decode = True
    try:
        assert "".join(_bytes_stream(qwen, CHUNKS)) == _reference(GEN_BYTES)
    finally:
        qwen.disable_tokenizer_batch_decode = False


def test_space_retreat_does_not_duplicate_text(qwen):
    assert "".join(_bytes_stream(qwen, SPACE_CHUNKS)) == _reference(SPACE_BYTES)


def test_empty_streaming_step_does_not_reset_sent_offset(qwen):
    chunks = [GEN_BYTES[:5], b"", GEN_BYTES[5:]]
    assert "".join(_bytes_stream(qwen, chunks)) == _reference(GEN_BYTES)


@pytest.mark.parametrize("chunks", [CHUNKS, SPACE_CHUNKS, [GEN_BYTES[:5], b"", GEN_BYTES[5:]]])
def test_sent_offset_never_retreats(qwen, chunks):
    """What went out is, after every step, a prefix of the text: never taken back, never sent
    twice (upstream checks its sent offset only grows)."""
    out = _bytes_stream(qwen, chunks)
    gen = b"".join(chunks)
    for k in range(1, len(out) + 1):
        assert _reference(gen).startswith("".join(out[:k]))


def test_clamp_is_exercised_in_both_directions(qwen, monkeypatch):
    seen = spied(qwen, monkeypatch)
    _bytes_stream(qwen, CHUNKS)
    assert [s for s in seen if s[0] > s[1]], f"the printable prefix never shrank below what went out: {seen}"
    assert [s for s in seen if s[0] <= s[1]], f"the printable prefix never grew: {seen}"


def test_plain_ascii_stream_is_unchanged(qwen):
    assert "".join(_bytes_stream(qwen, [b"hello ", b"world ", b"bye"])) == "hello world bye"


# -- test_detokenizer_stream_offset.py ----------------------------------------------------------


def test_recovery_retreat_does_not_duplicate(qwen):
    """Upstream's table: "A 世" and an unfinished character (printable "A 世"), then more after
    a non-CJK character (printable back to "A "), then clean: nothing twice."""
    data = "A 世中a中".encode()
    chunks = [data[:6], data[6:11], data[11:]]  # "A 世"+E4 | B8 AD "a" E4 | B8 AD
    out = stream(qwen, [], [byte_ids(qwen, c) for c in chunks])
    assert "".join(out) == "A 世中a中"


def test_normal_ascii_streaming_unaffected(qwen):
    ids = [qwen.tokenizer.convert_tokens_to_ids(p) for p in ("hello", "Ġwor", "ld")]
    assert "".join(stream(qwen, [], [[i] for i in ids])) == "hello world"


# -- test_detokenizer_incremental.py ------------------------------------------------------------

STRAY_BYTE = 0x80
CJK_BYTES = bytes((0xE4, 0xB8, 0xAD))


@pytest.mark.parametrize("ids_of", [byte_ids, fallback_ids], ids=["byte-level", "byte-fallback"])
def test_replacement_char_stream_keeps_offsets_moving(qwen, mistral, ids_of):
    """A stream of stray bytes: text reaches the client, and what is re-read each step does not
    grow with the output (upstream measures its window; here the text held uncommitted)."""
    manager = qwen if ids_of is byte_ids else mistral
    text = [manager.tokenizer.convert_tokens_to_ids("a" if ids_of is byte_ids else "▁a")]
    for steps in (32, 256):
        rid = f"stray{steps}{ids_of.__name__}"
        manager.handle_batch_token_id_out(reference.batch([rid], [text * 5], [5], [None]))
        widest = 0
        out = []
        for _ in range(steps):
            batch = reference.batch([rid], [ids_of(manager, bytes([STRAY_BYTE]) * 4)], [5], [None])
            out.append(manager.handle_batch_token_id_out(batch).output_strs[0])
            streams = manager._oasr_tok_streams
            rule = streams.request(rid).rule
            buf = rule[0] if rule is not None else ""
            widest = max(widest, len(buf) + len(streams.stream(rid).held))
        manager.handle_batch_token_id_out(reference.batch([rid], [[]], [5], [{}]))
        assert "".join(out), "no text ever reached the client"
        assert widest <= 4, f"the text held uncommitted grew to {widest} characters over {steps} steps"


def test_incomplete_character_is_still_held_back(qwen):
    out = stream(qwen, byte_ids(qwen, b"a"), [byte_ids(qwen, bytes([b])) for b in CJK_BYTES])
    assert out[:3] == ["", "", "中"]


def test_stall_counter_resets_on_a_clean_step(qwen, mistral):
    for manager, ids_of in ((qwen, byte_ids), (mistral, fallback_ids)):
        steps = [ids_of(manager, bytes([b])) for _ in range(32) for b in CJK_BYTES]
        assert "".join(stream(manager, ids_of(manager, b"a"), steps)) == "中" * 32


# -- test_detokenizer_stop_trim.py --------------------------------------------------------------


@pytest.mark.parametrize("token_id", [0, 30])
def test_zero_and_nonzero_stop_token_ids(qwen, token_id):
    reason = {"type": "stop", "matched": token_id}
    text_123 = qwen.tokenizer.decode([123])
    assert "".join(stream(qwen, [], [[123, token_id]], reason)) == text_123
    assert "".join(stream(qwen, [], [[token_id]], reason)) == ""
    assert "".join(stream(qwen, [], [[123, token_id]], reason, keep=True)) == qwen.tokenizer.decode([123, token_id])


@pytest.mark.parametrize("reason", [None, {"type": "length"}, {"type": "stop", "matched": None}])
def test_unmatched_length_and_string_stops(qwen, reason):
    want = qwen.tokenizer.decode([123, 0])
    assert "".join(stream(qwen, [], [[123, 0]], reason if reason is not None else {})) == want


@pytest.mark.parametrize("keep, want", [(False, "answer"), (True, "answerEND")])
def test_a_stop_string_is_cut(qwen, keep, want):
    ids = qwen.tokenizer.encode("answerENDtail", add_special_tokens=False)
    out = stream(qwen, [], [ids], {"type": "stop", "matched": "END"}, keep=keep)
    assert "".join(out) == want


def test_a_tool_calls_closing_token_is_kept(qwen, monkeypatch):
    """0.5.23's other rule that keeps a matched stop token (in place of the gpt-oss id 200012)."""
    closer = qwen.tokenizer.convert_tokens_to_ids("<|im_end|>")
    monkeypatch.setattr(qwen, "tool_close_token_ids", frozenset({closer}))
    rid = "closer"
    batch = reference.batch([rid], [[123, closer]], [0], [{"type": "stop", "matched": closer}], [False])
    out = qwen.handle_batch_token_id_out(batch).output_strs
    assert out == [qwen.tokenizer.decode([123, closer], skip_special_tokens=False)]


# -- test_detokenizer_eviction_read_offset.py ---------------------------------------------------


def test_evicted_stream_reinit_keeps_all_text(qwen):
    """Upstream's letters tokenizer (ids 20.. are "A".."H"): Qwen3's letter tokens. The state is
    taken away after the second step, as LimitedCapacityDict's eviction would; the scheduler's
    later read offsets being chunk-relative (0), the request goes on from its next chunk."""
    letters = [qwen.tokenizer.convert_tokens_to_ids(c) for c in "ABCD"]
    prompt = [qwen.tokenizer.convert_tokens_to_ids(c) for c in "fghij"]
    rid = "evict"
    deltas = []
    for step, new_id in enumerate(letters):
        ids = (prompt + [new_id]) if step == 0 else [new_id]
        if step == 2:
            qwen._oasr_tok_streams._forget(rid)
        batch = reference.batch([rid], [ids], [5 if step == 0 else 0], [None])
        deltas.extend(qwen.handle_batch_token_id_out(batch).output_strs)
    qwen.handle_batch_token_id_out(reference.batch([rid], [[]], [0], [{}]))
    assert "".join(deltas) == "ABCD"
