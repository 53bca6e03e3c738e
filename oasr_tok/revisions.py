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
(WINDOW ids) where a revision of committed ids is detected. The uncommitted tail is stepped one
id at a time from the committed stream state as far as the hypotheses agree (where the commit
point falls is decided per id), and the rest of it in one call; the steps are kept, so a call
steps again only the ids where the new hypothesis differs from the previous one, and those that
became agreed. Grouping into words (the compiled word rules of `oasr_tok.words`) runs over the
agreed, uncommitted text only, and state["committed"] grows in place (_textbuf.h's oasr_append),
never by a copy. Nothing in a call is proportional to the transcript. The whole call is compiled
(_revisions.pyx); this module is its documented home.

Where the commit point can be. Committed text ends at the end of a word `w` of the agreed text
only when the next word starts with its first letter (a word or solo-script character, not
punctuation) already settled by ids that are committed with it. Then no continuation can join
anything to `w`: punctuation between `w` and that letter is already there, and what follows
belongs to the next word or later. Those committed ids may have printed text after `w` (the
space and the next word's start); it is kept as "pending" text and committed with the next word.
"""

from __future__ import annotations

from ._revisions import WINDOW, decode_hypothesis

__all__ = ["WINDOW", "decode_hypothesis"]

# WINDOW (how many committed ids before the commit point each call compares with the hypothesis
# to detect that the recogniser revised committed ids; ids further back are never read) and the
# compiled entry point are defined in _revisions.pyx (typed in _revisions.pyi).
#
# state["_hypothesis"] is a tuple with these fields (plain data, so copy.deepcopy forks a stream):
#   n        ids committed (fed to `stream`)
#   window   the last <= WINDOW committed ids, as a tuple
#   stream   the kind's decode_incremental state after the n committed ids (its "text" cut to
#            the held-back tail: the committed text is state["committed"])
#   pending  ((text, token index, start), ...): text the committed ids printed after the
#            committed text, one entry per token
#   skip     1 when pending's first piece starts with the placeholder for committed text
#   history  the uncommitted tails (ids after the commit point) of the previous hypotheses
#   steps    ((id, delta, stream state after it), ...) for the ids of the previous hypothesis's
#            tail that were stepped one at a time (at least its agreed ids), then at most one
#            entry ((ids, ...), their delta, stream state after them) for the rest of it
#   closed   final=True was given
