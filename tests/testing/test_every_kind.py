"""The contract suite (oasr_tok.testing.KindContract, the one a kind author runs on their own
kind) on every contract case of tests/cases: each built-in kind on its real files, the example
plug-in, the with_specials view. Nothing of the contracts is stated here: the cases give the
tokenizer, the reference library's decode, and the ids worth drawing often."""

from __future__ import annotations

import pytest

from oasr_tok.testing import KindContract

from cases import KindCase, all_cases

CASES = all_cases()


class TestEveryKind(KindContract):
    @pytest.fixture(scope="class", params=CASES, ids=[case.name for case in CASES])
    @classmethod
    def case(cls, request: pytest.FixtureRequest) -> KindCase:
        return request.param

    @pytest.fixture(scope="class")
    @classmethod
    def tokenizer(cls, case):
        return case.tokenizer()

    @pytest.fixture(scope="class")
    @classmethod
    def reference_decode(cls, case):
        return None if case.reference is None else case.reference(case.tokenizer())

    @pytest.fixture(scope="class")
    @classmethod
    def reference_note(cls, case):
        return case.reference_note

    @pytest.fixture(scope="class")
    @classmethod
    def interesting_ids(cls, case):
        return case.inputs()[1]

    @pytest.fixture(scope="class")
    @classmethod
    def realistic_ids(cls, case):
        return case.inputs()[2]
