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
