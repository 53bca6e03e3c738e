"""Hypothesis strategies for token id streams, in one place: id_streams and splits are the
contract suite's (oasr_tok.testing.strategies, where a kind author finds them too), the rest are
the project's own."""

from __future__ import annotations

from hypothesis import strategies as st

from oasr_tok import Tokenizer
from oasr_tok.testing.strategies import HostileIds, id_streams, splits

__all__ = ["HostileIds", "id_streams", "revision_scripts", "splits"]


@st.composite
def revision_scripts(
    draw, tok: Tokenizer, interesting: list[int] = (), realistic: list[list[int]] = (), growing: bool = False
):
    """(hypotheses, final): the successive best hypotheses of a recogniser that rewrites its
    ending as audio arrives, and the final one. Each hypothesis is a prefix of the final ids
    (the prefix mostly grows, sometimes shrinks), followed, unless `growing`, by a few ids of a
    rewritten ending that the next hypothesis may keep, change or drop."""
    final = draw(id_streams(tok, interesting, realistic, max_size=30))
    one = st.one_of(st.integers(0, tok.vocab_size - 1), st.sampled_from(list(interesting) or [0]))
    hypotheses = []
    length = 0
    ending: list[int] = []
    for _ in range(draw(st.integers(1, 12))):
        if growing:
            length = draw(st.integers(length, len(final)))
            hypotheses.append(final[:length])
            continue
        length = max(0, min(len(final), length + draw(st.integers(-3, 5))))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            ending = []
        elif choice == 1:
            ending = draw(st.lists(one, max_size=3))
        # choice 2, 3: the same ending again (an agreement the final hypothesis may contradict)
        hypotheses.append(final[:length] + ending)
    return hypotheses, final


# -- Whisper windows and timed transcripts (the OpenAI transcription objects) ------------------

#: Texts in several scripts, with what a JSON or subtitle writer must escape or keep.
TIMED_TEXTS = [
    " Hello world.",
    " 今天天气很好，",
    " Ça va ?",
    " 😀 ok",
    " and so",
    " on",
    ' "quoted" \\ back',
    " a --> b",
]


@st.composite
def whisper_windows(draw, tok: Tokenizer, texts: list[str] = TIMED_TEXTS[:6]):
    """A Whisper window's sampled tokens: text pieces and timestamps in any layout (pairs,
    singles, none, a single timestamp at the end), timestamps never going backwards."""
    ids, t = [], 0
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.sampled_from(["text", "stamp", "pair", "bytes"]))
        if choice == "text":
            ids += tok.encode(draw(st.sampled_from(texts)))
        elif choice == "bytes":  # parts of characters: the decode replaces what stays invalid
            ids += draw(st.lists(st.integers(0, tok.eot - 1), max_size=3))  # type: ignore[attr-defined]
        else:
            for _ in range(1 if choice == "stamp" else 2):
                t = min(1500, t + draw(st.integers(0, 200)))
                ids.append(tok.timestamp_begin + t)  # type: ignore[attr-defined]
    return ids


#: Any text a transcript may hold: every script, controls, quotes, a line separator, an arrow
#: (no lone surrogate: no decoder makes one, and it has no UTF-8 to send).
transcript_texts = st.text(
    st.one_of(
        st.sampled_from(list('"\\\n\r\t\x00\u2028\u00e9\u4eca\U0001f600 ->')),
        st.characters(exclude_categories=["Cs"]),
    ),
    max_size=12,
)


# -- served text (tests/integrations: vLLM's output step) ---------------------------------------

#: Characters of many scripts, emoji sequences (skin tone, ZWJ, variation selector, flag),
#: combining marks, and the punctuation and spaces stop strings are made of.
SERVED_ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 .,;:!?'\"-()\n\t")
    + list("éèçñüßøåœ")
    + list("中文字天气很好我们世界東京はカタ")
    + list("한국어ไทยالعربيةрусскийελληνικάहिन्दी")
    + ["😀", "🎉", "👍🏽", "👨\u200d👩\u200d👧", "❤️", "🇫🇷", "🌶️", "e\u0301", "\u200b"]
)


@st.composite
def served_texts(draw, min_size: int = 1, max_size: int = 40, alphabet: list[str] | None = None) -> str:
    """Text a model might generate: runs of words in every script, emoji, split characters."""
    pieces = draw(st.lists(st.sampled_from(alphabet or SERVED_ALPHABET), min_size=min_size, max_size=max_size))
    return "".join(pieces)


@st.composite
def timed_rows(draw, texts=transcript_texts, max_size: int = 8):
    """(start, end, text) rows in order, ends never before starts, some instantaneous: the
    segments or words of a transcript, in seconds."""
    rows, t = [], 0.0
    for _ in range(draw(st.integers(0, max_size))):
        t += draw(st.sampled_from([0.0, 0.02, 0.5, 1.25, 7.0]))
        rows.append((t, t + draw(st.sampled_from([0.0, 0.02, 0.3, 2.5])), draw(texts)))
    return rows


# -- re-decoding sessions (tok.new_session) ----------------------------------------------------

#: Pieces of text that meet every case of a byte-level tokenizer's encode around a cut: words of
#: every script (spaced and not), digits, punctuation (ASCII and CJK), white space of every kind,
#: contractions, characters NFC composes with what is before them (a combining mark after a
#: letter, U+0338 after <, Hangul jamo, a kana voicing mark), emoji with modifiers and joiners,
#: a U+FFFD, added tokens and Qwen3-ASR's header.
SESSION_PIECES = (
    *"abcdefghij klmnop'",
    " the", " cat", " meeting", "'s", "'LL", "'re", "  ", "\t", "\n", "\r\n", "\xa0", "\u3000", "\u2009", "\x1c",
    "0", "7", "42", "2024", "１", "½", "٣",
    ",", ".", "!", "?", "-", "_", '"', "(", ")", "<", ">", "=", "|", "，", "。", "、", "？", "！", "“", "”", "《", "》", "…",
    "é", "e\u0301", "\u0301", "\u0308", "\u0338", "ü", "ß", "ñ", "Ω", "Ж", "щ", "Привет", "ש", "ب", "مرحبا",
    "न", "\u093e", "नमस्ते", "ก", "\u0e34", "สวัสดี",
    "你", "好", "世", "界", "今天", "天气很好", "𠀀", "か", "\u3099", "ア", "こんにちは", "한", "안녕", "\u1100", "\u1161", "\u11a8",
    "😀", "👍🏽", "👨\u200d👩\u200d👧", "❤️", "\ufe0f", "\u200d", "\ufffd",
    "<think>", "</think>", "<|im_end|>", "<asr_text>", "language English<asr_text>", "language Chinese",
)  # fmt: skip

HEADERS = ("language English<asr_text>", "language Chinese<asr_text>", "language None<asr_text>", "language ")


@st.composite
def user_texts(draw, max_pieces: int = 12):
    """Text as users' speech is written, and every edge of it (SESSION_PIECES)."""
    return "".join(draw(st.lists(st.sampled_from(SESSION_PIECES), max_size=max_pieces)))


_PARTIAL_IDS: dict[int, list[int]] = {}


def partial_ids(tok: Tokenizer) -> list[int]:
    """Ids among the first 512 whose text alone is a U+FFFD: the single bytes of a byte-level
    vocabulary, which end a chunk inside a character."""
    key = id(tok)
    if key not in _PARTIAL_IDS:
        _PARTIAL_IDS[key] = [i for i in range(min(512, tok.vocab_size)) if "\ufffd" in tok.decode([i])]
    return _PARTIAL_IDS[key]


@st.composite
def session_scripts(draw, tok: Tokenizer, max_chunks: int = 16):
    """A re-decoding session's chunks: [(k, final, ids)], k None for the session's own rule or
    0 ... 12, final for finish_streaming_transcribe's rule, ids what the model generated after
    the prefix (a Qwen3-ASR header first, sometimes; text of every script; cut short, inside a
    character or not; an end-of-turn special id, sometimes)."""
    partial = partial_ids(tok)
    special = sorted(tok.special_ids)
    chunks = []
    for number in range(draw(st.integers(1, max_chunks))):
        k = draw(st.one_of(st.none(), st.integers(0, 12)))
        final = draw(st.integers(0, 19)) == 0
        text = draw(user_texts())
        if draw(st.integers(0, 9)) < (4 if number == 0 else 1):
            text = draw(st.sampled_from(HEADERS)) + text
        ids = tok.encode(text)
        if ids and draw(st.booleans()):
            ids = ids[: draw(st.integers(0, len(ids)))]
        if partial and draw(st.integers(0, 9)) == 0:
            ids.append(draw(st.sampled_from(partial)))
        if special and draw(st.integers(0, 6)) == 0:
            ids.append(draw(st.sampled_from(special)))
        chunks.append((k, final, ids))
    return chunks


# -- chunked recordings (tests/outputs/test_stitching.py) ---------------------------------------------

EDGE_ACTIONS = ("drop", "keep", "garble")


@st.composite
def chunk_plans(
    draw, max_chunks: int = 8, unit: int = 320, sample_rate: int = 16000, max_seconds: int = 12, min_stride: int = 0
):
    """A long recording cut into 1-`max_chunks` chunks as transformers' pipeline cuts it: the
    chunk length (3-`max_seconds` s), the strides (0-20 % of a chunk each side: 0-40 % shared) and the
    recording's length (what makes that many chunks), in samples, multiples of `unit`; per chunk
    what its recogniser does with a word its start or end cuts ("drop", "keep", "garble"); and a
    seed for the words' timeline; `min_stride` units of stride at least (0 draws chunks that
    share no audio too). stitch_reference.chunk_layout turns it into chunks."""
    chunk_len = draw(st.integers(3 * sample_rate // unit, max_seconds * sample_rate // unit)) * unit
    limit = chunk_len // 5 // unit
    left = draw(st.integers(min_stride, limit)) * unit
    right = draw(st.integers(min_stride, limit)) * unit
    if draw(st.booleans()):
        right = left  # the pipeline's usual stride_length_s: one value for both sides
    step = chunk_len - left - right
    chunks = draw(st.integers(1, max_chunks))
    total = chunk_len + (chunks - 1) * step - draw(st.integers(0, max(0, step // unit - 1))) * unit
    edges = draw(st.lists(st.tuples(*[st.sampled_from(EDGE_ACTIONS)] * 2), min_size=max_chunks + 1))
    return {
        "chunk_len": chunk_len,
        "left": left,
        "right": right,
        "total": max(total, chunk_len // 2),
        "edges": edges,
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


# -- user-like text and id runs for the tiktoken differential (tests/kinds/test_tiktoken*.py) -----

import random as _random  # noqa: E402

#: Stretches of text a user writes, in every script, with the emoji, whitespace runs and
#: special-looking text that tokenizers split in their own ways.
USER_TEXT_PARTS = (
    "the quick brown fox",
    "Hello, World!",
    "I'll tell you: don't stop, it's fine. THEY'RE HERE",
    "café naïve résumé Ångström",
    "Привет, как дела?",
    "Καλημέρα κόσμε",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีครับ ยินดีต้อนรับ",
    "今天天气很好，我们去公园散步吧。",
    "東京は晴れです。カタカナとひらがな",
    "안녕하세요 세계",
    "emoji 😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️‍🔥",
    "1234567 3.14159 1,000,000 42%",
    "x = f(a, b) -> {'k': [1, 2]}",
    "<|eot_id|>",
    "<|begin_of_text|>",
    "<|reserved_special_token_7|>",
    "<|eot|>",
    "<|",
    "|>",
    "<|im_msg_end|>",
    "\u3000\u00a0\u2028",
    "\ufffd",
)
_WHITESPACE = (" ", "  ", "\t", "\n", "\n\n", "\r\n", " \n ", "   \t\n")


def random_text(rng: _random.Random, max_parts: int = 8) -> str:
    """A user-like text: known stretches in every script, whitespace runs, and random code
    points (any plane, no surrogates), cut and joined at random."""
    out = []
    for _ in range(rng.randrange(1, max_parts + 1)):
        choice = rng.random()
        if choice < 0.5:
            part = rng.choice(USER_TEXT_PARTS)
            a = rng.randrange(len(part) + 1)
            out.append(part[a:] if rng.random() < 0.3 else part)
        elif choice < 0.75:
            out.append(rng.choice(_WHITESPACE) * rng.randrange(1, 4))
        else:
            for _ in range(rng.randrange(1, 6)):
                plane = rng.random()
                limit = 0x80 if plane < 0.3 else 0x10000 if plane < 0.85 else 0x110000
                c = rng.randrange(limit)
                out.append(chr(c) if not 0xD800 <= c < 0xE000 else "\ufffd")
    return "".join(out)


@st.composite
def interleaved(draw, text_ids: list[int], audio: tuple[int, int], max_size: int = 40):
    """Text and audio-codec ids in one generation (Step-Audio 2, Kimi-Audio): runs of audio ids
    (start ... end - 1, the edges often) between stretches of text ids drawn from `text_ids`."""
    start, end = audio
    audio_id = st.one_of(st.integers(start, end - 1), st.sampled_from([start, end - 1]))
    out: list[int] = []
    size = draw(st.integers(0, max_size))
    while len(out) < size:
        if draw(st.booleans()):
            out += draw(st.lists(st.sampled_from(text_ids), min_size=1, max_size=6))
        else:
            out += draw(st.lists(audio_id, min_size=1, max_size=6))
    return out[:size]


# -- SGLang's detokenizer (tests/integrations/test_sglang.py) ---------------------------------------

#: Text of every script a detokenizer meets, in pieces: accented Latin, CJK, kana, Hangul, Arabic,
#: Hebrew, Devanagari, Thai, emoji (skin tones, ZWJ sequences, flags), characters beyond the BMP,
#: punctuation that fullwidth scripts use, whitespace runs, and the spelling of special tokens.
TEXT_PIECES = (
    "hello", " world", "the", " a", "123", "x", ".", ",", "?", "!", "'", "…", "—", " ", "  ", "\n", "\n\n", "\t",
    "é", "ß", "Ω", "ç", "ñ", "Ā", "中文", "字", "ㄅ", "，", "。", "日本語", "カタカナ", "한국어", "العربية", "עברית",
    "देवनागरी", "ไทย", "😀", "👍🏽", "👩‍👩‍👧", "🇫🇷", "𝔘", "𠀋", "<|im_end|>", "<s>", "</s>", "<|endoftext|>",
)  # fmt: skip


@st.composite
def every_script_texts(draw, max_pieces: int = 12) -> str:
    """A text of TEXT_PIECES and random characters (no U+FFFD, no lone surrogates)."""
    alphabet = st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffd")
    piece = st.one_of(st.sampled_from(TEXT_PIECES), st.text(alphabet, min_size=1, max_size=3))
    return "".join(draw(st.lists(piece, max_size=max_pieces)))


@st.composite
def sglang_workloads(draw, max_requests: int = 30) -> list[dict]:
    """Requests as SGLang's scheduler serves them: a prompt and an output text, how many ids
    each step sends (one, four, a random few, or not streamed: every 50 ids and at finish),
    how the request ends (length, a stop token, a stop string, an abort), its
    skip_special_tokens and no_stop_trim, and the step it starts at."""
    requests = []
    for k in range(draw(st.integers(1, max_requests))):
        requests.append(
            {
                "rid": f"req-{k}",
                "prompt": draw(every_script_texts(max_pieces=5)),
                "output": draw(every_script_texts()),
                "width": draw(st.sampled_from([1, 1, 4, "few", "not streamed"])),
                "widths": draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)),
                "finish": draw(st.sampled_from(["length", "token", "string", "abort"])),
                "stop_at": draw(st.floats(0, 1)),
                "stop_size": draw(st.integers(1, 3)),
                "stop_token": draw(st.sampled_from(["eos", "special", "last"])),
                "skip_special_tokens": draw(st.booleans()) or draw(st.booleans()),
                "no_stop_trim": draw(st.integers(0, 9)) == 0,
                "start": draw(st.integers(0, 12)),
            }
        )
    return requests
