"""Hypothesis strategies for token id streams, in one place."""

from __future__ import annotations

from hypothesis import strategies as st

from oasr_tok import Tokenizer


@st.composite
def id_streams(draw, tok: Tokenizer, interesting: list[int] = (), realistic: list[list[int]] = (), max_size: int = 40):
    """Streams that mix random ids over the whole vocabulary, the vocabulary edges, special
    ids (mid-stream too), the case's interesting ids, and slices of realistic hypotheses."""
    vocab = tok.vocab_size
    pools = [st.integers(0, vocab - 1), st.sampled_from([0, vocab - 1])]
    special = sorted(tok.special_ids)
    if special:
        pools.append(st.sampled_from(special))
    if interesting:
        pools.append(st.sampled_from(list(interesting)))
        pools.append(st.sampled_from(list(interesting)))
    one = st.one_of(*pools)
    if realistic:
        base = draw(st.sampled_from(list(realistic)))
        if base:
            start = draw(st.integers(0, len(base) - 1))
            length = draw(st.integers(1, max_size))
            ids = list(base[start : start + length])
            # Splice adversarial ids into a realistic stream.
            for _ in range(draw(st.integers(0, 3))):
                ids.insert(draw(st.integers(0, len(ids))), draw(one))
            return ids
    return draw(st.lists(one, max_size=max_size))


@st.composite
def splits(draw, ids: list[int]):
    """A split of ids into consecutive chunks (empty chunks included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=6)))
    bounds = [0, *cuts, len(ids)]
    return [ids[a:b] for a, b in zip(bounds, bounds[1:])]


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


def user_texts() -> st.SearchStrategy[str]:
    """random_text as a hypothesis strategy."""
    return st.randoms(use_true_random=False).map(random_text)


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
