"""The examples in the public API's docstrings run (on the demo's own tokenizer files) and print
what they show: load, decode_incremental, new_stream, decode_incremental_batch, word_timings,
decode_envelope, new_revisions, the Stream and Revisions classes and their methods, the kind
authors' API, and how streams travel (Travel, travelling, tok.fingerprint, tok.travel)."""

from __future__ import annotations

import doctest

import pytest

import oasr_tok
from oasr_tok import Stream, Tokenizer
from oasr_tok.core.revisions import Revisions
from oasr_tok.kinds import api

DOCUMENTED = {
    "oasr_tok.load": oasr_tok.load,
    "Tokenizer.decode_incremental": Tokenizer.decode_incremental,
    "Tokenizer.new_stream": Tokenizer.new_stream,
    "Tokenizer.new_revisions": Tokenizer.new_revisions,
    "Tokenizer.new_session": Tokenizer.new_session,
    "oasr_tok.Session": oasr_tok.Session,
    "oasr_tok.Session.rollback": oasr_tok.Session.rollback,
    "Tokenizer.decode_incremental_batch": Tokenizer.decode_incremental_batch,
    "Tokenizer.word_timings": Tokenizer.word_timings,
    "Tokenizer.decode_envelope": Tokenizer.decode_envelope,
    "oasr_tok.Stream": Stream,
    "oasr_tok.Stream.feed": Stream.feed,
    "Revisions": Revisions,
    "oasr_tok.kinds.api": api,
    "oasr_tok.StitchedTranscript": oasr_tok.StitchedTranscript,
    "oasr_tok.Travel": oasr_tok.Travel,
    "oasr_tok.travelling": oasr_tok.travelling,
    "Tokenizer.fingerprint": Tokenizer.fingerprint,
    "Tokenizer.travel": Tokenizer.travel,
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_the_example_runs_and_prints_what_it_shows(name):
    obj = DOCUMENTED[name]
    tests = doctest.DocTestFinder(recurse=False).find(obj, name, globs={"oasr_tok": oasr_tok})
    examples = [t for t in tests if t.examples]
    assert examples, f"{name} has no >>> example in its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in examples:
        runner.run(test)
    assert runner.failures == 0, f"{name}: {runner.failures} example(s) print something else (run pytest -s to see)"


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_the_docstring_says_its_args_and_returns(name):
    obj = DOCUMENTED[name]
    doc = obj.__doc__ or ""
    if callable(obj) and not isinstance(obj, type) and name != "oasr_tok.kinds.api":
        assert "Returns:" in doc, f"{name}'s docstring has no Returns: section"
