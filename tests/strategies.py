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
