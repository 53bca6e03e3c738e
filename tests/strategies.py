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


@st.composite
def timed_rows(draw, texts=transcript_texts, max_size: int = 8):
    """(start, end, text) rows in order, ends never before starts, some instantaneous: the
    segments or words of a transcript, in seconds."""
    rows, t = [], 0.0
    for _ in range(draw(st.integers(0, max_size))):
        t += draw(st.sampled_from([0.0, 0.02, 0.5, 1.25, 7.0]))
        rows.append((t, t + draw(st.sampled_from([0.0, 0.02, 0.3, 2.5])), draw(texts)))
    return rows
