"""oasr_tok.integrations.sglang without SGLang's files: what needs no SGLang at all (the plug-in
off unless asked, the docstring examples of RequestStreams and Stream.held). The rest is in
test_sglang.py, against SGLang's own detokenizer."""

from __future__ import annotations

import doctest

import pytest

import oasr_tok
from oasr_tok.integrations import sglang as oasr_sglang


def test_the_plugin_does_nothing_unless_asked(monkeypatch):
    monkeypatch.delenv(oasr_sglang.ENV_FLAG, raising=False)
    monkeypatch.setattr(oasr_sglang, "install", lambda *a, **k: pytest.fail("installed without being asked"))
    oasr_sglang.plugin()


@pytest.mark.parametrize("obj", [oasr_sglang.RequestStreams, oasr_tok.Stream.held], ids=["RequestStreams", "held"])
def test_the_examples_run(obj):
    tests = [
        t for t in doctest.DocTestFinder(recurse=False).find(obj, "example", globs={"oasr_tok": oasr_tok}) if t.examples
    ]
    assert tests, "no >>> example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0
