"""Hypothesis strategies for token id streams, and the hostile ids of a vocabulary: what the
contract suite (contract.py) draws from, and what a test of one kind may draw from too.

Example:
    >>> import oasr_tok
    >>> from hypothesis import given
    >>> from oasr_tok.demo import DATA
    >>> from oasr_tok.testing import HostileIds, id_streams
    >>> tok = oasr_tok.load(DATA / "sentencepiece")
    >>> hostile = HostileIds.of(tok)
    >>> 0 in hostile.edges and tok.vocab_size - 1 in hostile.edges
    True
    >>> @given(id_streams(tok, hostile=hostile))
    ... def test_decode_never_fails(ids):
    ...     assert "".join(tok.token_pieces(ids)) == tok.decode(ids)
    >>> test_decode_never_fails()
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from ..kinds.api import Tokenizer

__all__ = ["HostileIds", "id_streams", "splits"]

#: How many ids HostileIds.of decodes one by one to sort them: the first and last ids of the
#: vocabulary (where byte pieces, controls and added tokens live) and an even sample between.
SCANNED = 4096


@dataclass(frozen=True)
class HostileIds:
    """The ids of a vocabulary that break naive streaming, sorted by what they do alone.

    edges: the first two and last two ids. fragments: ids whose lone decode holds U+FFFD (a
    byte of a character split across tokens, or a piece that is a genuine U+FFFD: a run of
    them may never complete). empty: ids that render as nothing but are not special (blanks,
    skipped pieces). spaced: ids whose lone decode starts with whitespace (lead-space rules).
    specials: the special ids.
    """

    edges: tuple[int, ...]
    fragments: tuple[int, ...]
    empty: tuple[int, ...]
    spaced: tuple[int, ...]
    specials: tuple[int, ...]
    #: Runs of fragments a stream splices in: one fragment repeated (a lead byte that never
    #: completes) and mixed ones, 2 to 5 ids, made once (drawing each id of a run costs hypothesis
    #: more than the decode it tests).
    runs: tuple[tuple[int, ...], ...] = ()

    @classmethod
    def of(cls, tok: Tokenizer, scanned: int = SCANNED) -> HostileIds:
        """Sort `scanned` ids of `tok`'s vocabulary by their lone decode (one decode_batch)."""
        size = tok.vocab_size
        if size <= scanned:
            ids = list(range(size))
        else:
            ends = scanned // 4
            middle = random.Random(size).sample(range(ends, size - ends), scanned - 2 * ends)
            ids = [*range(ends), *sorted(middle), *range(size - ends, size)]
        special = frozenset(tok.special_ids)
        alone = tok.decode_batch([[i] for i in ids])
        fragments = tuple(i for i, text in zip(ids, alone) if "\ufffd" in text)
        rng = random.Random(len(fragments))
        runs = [(f,) * n for f in rng.sample(fragments, min(len(fragments), 8)) for n in (2, 5)]
        runs += [tuple(rng.choices(fragments, k=rng.randint(2, 5))) for _ in range(16 if fragments else 0)]
        return cls(
            edges=tuple(sorted({0, min(1, size - 1), max(size - 2, 0), size - 1})),
            fragments=fragments,
            empty=tuple(i for i, text in zip(ids, alone) if not text and i not in special),
            spaced=tuple(i for i, text in zip(ids, alone) if text[:1].isspace()),
            specials=tuple(sorted(special))[:256],
            runs=tuple(runs),
        )

    def pool(self, each: int = 64) -> tuple[int, ...]:
        """The ids a stream draws one at a time: up to `each` of every sort, so that no sort
        drowns the others (one pool: a branch of its own for each sort doubled hypothesis' cost
        of drawing a stream)."""
        sorts = (self.edges, self.fragments, self.empty, self.spaced, self.specials)
        return tuple(sorted({i for ids in sorts for i in ids[:: max(1, len(ids) // each)][:each]}))


@st.composite
def id_streams(
    draw: st.DrawFn,
    tok: Tokenizer,
    interesting: Sequence[int] = (),
    realistic: Sequence[Sequence[int]] = (),
    max_size: int = 40,
    hostile: HostileIds | None = None,
) -> list[int]:
    """Streams that mix random ids over the whole vocabulary, the vocabulary edges, special
    ids (mid-stream too), the caller's interesting ids, slices of realistic hypotheses with
    adversarial ids spliced in and, given `hostile`, its sorts of ids and runs of fragments that
    may never complete."""
    vocab = tok.vocab_size
    pools = [st.integers(0, vocab - 1), st.sampled_from([0, vocab - 1])]
    special = sorted(tok.special_ids)
    if special:
        pools.append(st.sampled_from(special))
    if interesting:
        pools.append(st.sampled_from(list(interesting)))
        pools.append(st.sampled_from(list(interesting)))
    hostile_pool = hostile.pool() if hostile is not None else ()
    if hostile_pool:
        pools.append(st.sampled_from(hostile_pool))
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
            return _with_runs(draw, ids, hostile)
    return _with_runs(draw, draw(st.lists(one, max_size=max_size)), hostile)


def _with_runs(draw: st.DrawFn, ids: list[int], hostile: HostileIds | None) -> list[int]:
    """`ids` with up to two runs of byte fragments spliced in (the same fragment repeated too: a
    lead byte that never completes), when there are fragments to run."""
    if hostile is None or not hostile.runs:
        return ids
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(ids)))
        ids[at:at] = draw(st.sampled_from(hostile.runs))
    return ids


@st.composite
def splits(draw: st.DrawFn, ids: Sequence[int]) -> list[list[int]]:
    """A split of ids into consecutive chunks (empty chunks included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=6)))
    bounds = [0, *cuts, len(ids)]
    return [list(ids[a:b]) for a, b in zip(bounds, bounds[1:])]
