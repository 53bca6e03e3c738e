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
