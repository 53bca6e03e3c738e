"""Streaming a hypothesis that changes: committed text that is never retracted, and a partial
tail (docs/decoding.md § Revisions).

A streaming recogniser rewrites its best hypothesis as audio arrives. Each call of
`decode_hypothesis` gets the whole current hypothesis and returns `(committed_delta, partial)`:

* the committed text grows only, and only by whole words: a prefix of the hypothesis is
  committed once the last `agreement` hypotheses agree on its ids (LocalAgreement-n), and only
  up to a word boundary that no later token can move;
* `partial` is the rest of the current hypothesis's transcript, replaced wholesale next call.

It is built on the kind's own exact streaming (`decode_incremental`): the committed ids live in
one stream state, which never sees an id that was not agreed, so committed text inherits the
kind's no-retraction contract (held-back characters, byte runs and FunASR's rewrites included).

Cost. Ids behind the commit point are never read again, except a bounded look-back window
(WINDOW ids) where a revision of committed ids is detected. The committed ids live in one
stream state, the commit point's; each call steps the uncommitted tail from it, keeping what
each agreed id settled (where the commit point falls is decided per id). On the kinds that
stream through a PieceTable that state is the table's snapshot (its decoder state without a
state dict) and the table's C loop steps it. A kind that steps a value (below) is stepped from
that value; any other kind by its own decode_incremental, the agreed ids one call each and the
rest in one, from a copy. The word rules run over the agreed, uncommitted text only, and
not again while the agreed ids are those the last call searched in vain; state["committed"]
grows in place (textbuf.h's oasr_append), never by a copy. Nothing in a call is proportional
to the transcript. The whole call is compiled (_engine/revisions.pyx); this module is its documented
home.

Where the commit point can be. Committed text ends at the end of a word `w` of the agreed text
only when the next word starts with its first letter (a word or solo-script character, not
punctuation) already settled by ids that are committed with it. Then no continuation can join
anything to `w`: punctuation between `w` and that letter is already there, and what follows
belongs to the next word or later. Those committed ids may have printed text after `w` (the
space and the next word's start); it is kept as "pending" text and committed with the next word.

Kinds that step a value. A kind whose stream machine is one immutable value (FunASR's frozen
tuple in state["_funasr"]) lets decode_hypothesis step that value itself, with no state dict
and no decode_incremental call per id. It defines, on its class: `_steps_reproduce`, the
decode_incremental these steps are exactly (when the class's decode_incremental is another one,
or the instance has its own, that one is called instead); `_fresh_stream`, the value of a
stream that has seen nothing (a tuple); `_tag`, an int recorded in the state so that another
tokenizer's is refused; `_advance(value, ids, pieces) -> value`, which steps checked ids (a tuple) and
appends the text each settled to `pieces`, one string per id, and raises StreamStateError for a
value it did not make; `_rest(value) -> str`, the text that ending the stream now would add.
"""

from __future__ import annotations

from .._engine.revisions import WINDOW, Revisions, decode_hypothesis

__all__ = ["WINDOW", "Revisions", "decode_hypothesis"]

# WINDOW (how many committed ids before the commit point each call compares with the hypothesis
# to detect that the recogniser revised committed ids; ids further back are never read) and the
# compiled entry point are defined in _engine/revisions.pyx (typed in _engine/revisions.pyi).
#
# state["_hypothesis"] is a HypothesisState (_engine/revisions.pyx): a compiled record, copied, pickled and
# compared by these fields (the order it is made from them in); made from fields, it checks them,
# and raises StreamStateError:
#   n         ids committed (state["committed_tokens"])
#   window    the last <= WINDOW committed ids (kept in a C array; a tuple of ints as a field)
#   stream    the stream state after the n committed ids: a PieceTable's snapshot (a 6-tuple, see
#             _engine/piece_table.pyx), the value of a kind that steps one (FunASR's frozen tuple), or, for
#             other kinds, their decode_incremental state (its "text" cut to the held-back tail:
#             the committed text is state["committed"])
#   pending   the text each pending token printed after the committed text: the pending tokens
#             are always the last len(pending) committed ones
#   skip      1 when pending's first piece starts with the placeholder for committed text
#   history   the uncommitted tails (ids after the commit point) of the previous hypotheses
#   searched  how many of the last hypothesis's first uncommitted ids the last call searched
#             for a commit point in vain (0: none)
#   tag       the PieceTable's or the value-stepping kind's tag (None for other kinds): a state is
#             refused by another tokenizer
#   closed    final=True was given
#   starts    the pending tokens' start times (None if no call was timed)
# A record only one state holds is updated in place by the next call (its refcount proves that
# nobody else can see it); one that a shallow copy of the state, or anyone, also holds is
# replaced instead, so dict(state) forks a stream as copy.deepcopy(state) does.
