"""The examples in the public API's docstrings run (on the demo's own tokenizer files) and print
what they show: load, decode_incremental, new_stream, decode_incremental_batch, word_timings,
decode_envelope, new_revisions, the Stream and Revisions classes and their methods, the kind
authors' API, how streams travel (Travel, travelling, tok.fingerprint, tok.travel), KindRecord and register_kind, the contract suite's strategies; and the stubs of
the compiled public classes (Stream, PieceTable, TableMethods, Revisions, Word, Words, CTCStream,
CleanSpacesStream) carry each class's docstring, whose example runs from the stub as written."""

from __future__ import annotations

import ast
import doctest
import inspect
from pathlib import Path

import pytest

import oasr_tok
from oasr_tok import Stream, Tokenizer
from oasr_tok.core.revisions import Revisions
from oasr_tok.kinds import api
from oasr_tok.testing import strategies

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
    "KindRecord": oasr_tok.KindRecord,
    "oasr_tok.register_kind": oasr_tok.register_kind,
    "oasr_tok.testing.strategies": strategies,
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
    if callable(obj) and not isinstance(obj, type) and not name.startswith("oasr_tok.kinds.api"):
        assert "Returns:" in doc, f"{name}'s docstring has no Returns: section"


# -- the stubs of the compiled public classes ------------------------------------------------------

ENGINE = Path(oasr_tok.__file__).resolve().parent / "_engine"


def _public_compiled_classes() -> list[tuple[str, str]]:
    """(module, class) for every class of a compiled module's stub that the public API hands out:
    oasr_tok's names, the kind authors' API, the revisions and words modules."""
    import importlib

    from oasr_tok.core import revisions, words

    exported = {id(getattr(module, name)) for module in (oasr_tok, api, revisions, words) for name in module.__all__}
    found = []
    for stub in sorted(ENGINE.glob("*.pyi")):
        runtime = importlib.import_module(f"oasr_tok._engine.{stub.stem}")
        for node in ast.parse(stub.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and id(getattr(runtime, node.name, None)) in exported:
                found.append((stub.stem, node.name))
    return found


PUBLIC_COMPILED = _public_compiled_classes()


def _stub_class(module: str, name: str) -> ast.ClassDef:
    tree = ast.parse((ENGINE / f"{module}.pyi").read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def test_the_public_compiled_classes_are_these():
    assert {name for _, name in PUBLIC_COMPILED} >= {
        "Stream",
        "PieceTable",
        "TableMethods",
        "Revisions",
        "Word",
        "Words",
        "CTCStream",
        "CleanSpacesStream",
    }


@pytest.mark.parametrize("module, name", PUBLIC_COMPILED, ids=[f"{m}.{n}" for m, n in PUBLIC_COMPILED])
def test_the_stub_carries_the_compiled_docstring_with_an_example(module, name):
    """What a user's editor shows of a compiled class is its stub (tokenizers' decoders.pyi is
    the model): the stub's docstring is the class's own, word for word, example included."""
    import importlib

    runtime = getattr(importlib.import_module(f"oasr_tok._engine.{module}"), name)
    stub = ast.get_docstring(_stub_class(module, name))
    assert stub is not None, f"oasr_tok/_engine/{module}.pyi: {name} has no docstring"
    assert stub == inspect.cleandoc(runtime.__doc__ or ""), f"{module}.pyi's {name} docstring is not the class's"
    assert "\n    >>> " in stub or "\n>>> " in stub, f"{name}'s docstring has no example"


@pytest.mark.parametrize("module, name", PUBLIC_COMPILED, ids=[f"{m}.{n}" for m, n in PUBLIC_COMPILED])
def test_the_example_in_the_stub_runs_and_prints_what_it_shows(module, name):
    node = _stub_class(module, name)
    test = doctest.DocTestParser().get_doctest(
        ast.get_docstring(node, clean=True) or "",
        {"oasr_tok": oasr_tok},
        f"oasr_tok._engine.{module}.{name}",
        str(ENGINE / f"{module}.pyi"),
        node.body[0].lineno,
    )
    assert test.examples
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{module}.pyi's {name}: {runner.failures} example(s) print something else"
