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
        return cls(
            edges=tuple(sorted({0, min(1, size - 1), max(size - 2, 0), size - 1})),
            fragments=tuple(i for i, text in zip(ids, alone) if "\ufffd" in text),
            empty=tuple(i for i, text in zip(ids, alone) if not text and i not in special),
            spaced=tuple(i for i, text in zip(ids, alone) if text[:1].isspace()),
            specials=tuple(sorted(special))[:256],
        )

    def pools(self) -> list[tuple[int, ...]]:
        """The non-empty sorts, each a pool a stream draws single ids from."""
        return [pool for pool in (self.edges, self.fragments, self.empty, self.spaced, self.specials) if pool]


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
    if hostile is not None:
        pools.extend(st.sampled_from(pool) for pool in hostile.pools())
    one = st.one_of(*pools)
    if hostile is not None and hostile.fragments:
        # A run of byte fragments (the same one repeated too: a lead byte that never completes).
        run = st.lists(st.sampled_from(hostile.fragments), min_size=1, max_size=8) | st.builds(
            lambda i, n: [i] * n, st.sampled_from(hostile.fragments), st.integers(2, 6)
        )
        one_or_run = st.one_of(one.map(lambda i: [i]), run)
    else:
        one_or_run = one.map(lambda i: [i])
    if realistic:
        base = draw(st.sampled_from(list(realistic)))
        if base:
            start = draw(st.integers(0, len(base) - 1))
            length = draw(st.integers(1, max_size))
            ids = list(base[start : start + length])
            # Splice adversarial ids into a realistic stream.
            for _ in range(draw(st.integers(0, 3))):
                at = draw(st.integers(0, len(ids)))
                ids[at:at] = draw(one_or_run)
            return ids
    pieces = draw(st.lists(one_or_run, max_size=max_size))
    return [i for piece in pieces for i in piece][:max_size]


@st.composite
def splits(draw: st.DrawFn, ids: Sequence[int]) -> list[list[int]]:
    """A split of ids into consecutive chunks (empty chunks included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=6)))
    bounds = [0, *cuts, len(ids)]
    return [list(ids[a:b]) for a, b in zip(bounds, bounds[1:])]
