"""A kind a plug-in registers is resolved from files exactly as a built-in one: its detector
is asked in the one order of evidence, it can win or lose against the built-ins by its
precedence, describe() says why, and an entry point brings the same (tests/example_kind.py is
the kind)."""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import subprocess
import sys

import pytest

import oasr_tok
from oasr_tok import ResolveError, describe, load, resolve

import elsewhere
import example_kind
from paths import PACKAGE_PARENT, ROOT, subprocess_env


@pytest.fixture(autouse=True)
def _letters_registration_restored():
    """These tests register and unregister the example kind; the contract suite's letters case
    (tests/cases/letters.py) registered it before them in the same worker and rebuilds it through
    the registry (a pickle by value): after each test it is registered as that case left it."""
    was_registered = example_kind.KIND.name in oasr_tok.available_kinds()
    yield
    if was_registered:
        oasr_tok.register_kind(example_kind.KIND, replace=True)


@pytest.fixture
def letters_kind():
    # Its file is more specific than a FunASR token list, which a single letters.txt also reads
    # as (one symbol per line, <blank> among them): the plug-in says it comes first.
    oasr_tok.register_kind(dataclasses.replace(example_kind.KIND, precedence=5), replace=True)
    yield
    oasr_tok.unregister_tokenizer(example_kind.KIND.name)


def test_a_registered_detector_resolves_a_folder_and_a_single_file(tmp_path, letters_kind):
    path = example_kind.write_letters(str(tmp_path))
    for where in (tmp_path, path):
        spec = resolve(where)
        assert spec.kind == "letters" and spec.files == {"letters": path}
    tok = load(tmp_path)
    assert type(tok) is example_kind.LettersTokenizer
    ids = [2, 3, 1, 0, 4, 0, 0, 5]  # a b | <blank> c <blank> <blank> d
    assert tok.decode(ids) == "ab cd"
    d = describe(tmp_path)
    assert d.kind == "letters" and d.error is None
    assert ("kind", "letters: its detector found letters.txt") in d.evidence


def test_without_a_detector_the_kind_is_built_from_a_spec_only(tmp_path):
    oasr_tok.register_tokenizer("letters", example_kind.factory, replace=True)  # a record without a detector
    try:
        example_kind.write_letters(str(tmp_path))
        with pytest.raises(ResolveError, match="cannot tell"):
            resolve(tmp_path)
        tok = oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec("letters", {"letters": str(tmp_path / "letters.txt")}))
        assert tok.decode([2]) == "a"
    finally:
        oasr_tok.unregister_tokenizer("letters")


def test_precedence_decides_against_a_builtin_and_describe_says_why(tmp_path):
    example_kind.write_letters(str(tmp_path))
    (tmp_path / "units.txt").write_text("<blank> 0\na 1\nb 2\n", encoding="utf-8")
    oasr_tok.register_kind(example_kind.KIND, replace=True)
    try:
        # By default a plug-in stands after the built-ins: the unit table wins.
        d = describe(tmp_path)
        assert d.kind == "symbol_table"
        assert [(e["kind"], e["source"]) for e in d.lost] == [("letters", "letters.txt")]
        reason = d.lost[0]["reason"]
        assert "precedence 70" in reason and f"precedence {oasr_tok.core.registry.PLUGIN_PRECEDENCE}" in reason
        # Declared first, it wins, and the unit table is the one that lost.
        oasr_tok.register_kind(dataclasses.replace(example_kind.KIND, precedence=5), replace=True)
        d = describe(tmp_path)
        assert d.kind == "letters"
        assert [e["kind"] for e in d.lost] == ["symbol_table"] and "precedence 5" in d.lost[0]["reason"]
    finally:
        oasr_tok.unregister_tokenizer("letters")


def test_a_detector_that_fails_or_answers_nonsense_is_a_resolve_error_naming_the_kind(tmp_path):
    example_kind.write_letters(str(tmp_path))

    def broken(path):
        raise KeyError("oops")

    for detect, match in ((broken, "detector of tokenizer kind 'letters' failed.*KeyError"), (lambda p: 42, "letters")):
        oasr_tok.register_tokenizer("letters", example_kind.factory, replace=True, detect=detect)
        try:
            with pytest.raises(ResolveError, match=match):
                resolve(tmp_path)
        finally:
            oasr_tok.unregister_tokenizer("letters")


def test_registration_checks_the_detector_and_precedence():
    """A refused registration changes nothing (the letters case may have registered the kind
    earlier in this worker: what was registered stays, exactly)."""
    before = oasr_tok.available_kinds()
    with pytest.raises(oasr_tok.RegistryError, match="detector"):
        oasr_tok.register_tokenizer("letters", example_kind.factory, detect="not callable")  # type: ignore[arg-type]
    with pytest.raises(oasr_tok.RegistryError, match="precedence"):
        oasr_tok.register_tokenizer("letters", example_kind.factory, detect=example_kind.detect, precedence="1")  # type: ignore[arg-type]
    assert oasr_tok.available_kinds() == before


def _letters_site(tmp_path, entry: str):
    """A folder holding the example plug-in as a package would install it: its module and a
    dist-info declaring `entry` under the `oasr_tok.kinds` entry-point group."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(os.path.join(ROOT, "tests", "example_kind.py"), site / "letters_plugin.py")
    info = site / "letters_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: letters-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[oasr_tok.kinds]\n{entry}\n", encoding="utf-8")
    return site


def _run_in(site, code: str) -> subprocess.CompletedProcess:
    env = subprocess_env()
    env["PYTHONPATH"] = str(site) + os.pathsep + env["PYTHONPATH"]
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=PACKAGE_PARENT)


def test_an_entry_point_kind_is_resolved_from_files(tmp_path):
    """A package that names its kind's record under the `oasr_tok.kinds` entry-point group:
    load(folder) finds it with nothing registered by hand, and no warning."""
    site = _letters_site(tmp_path, "letters = letters_plugin:KIND")
    model = tmp_path / "model"
    example_kind.write_letters(str(model))
    code = (
        "import sys, warnings, oasr_tok\n"
        "warnings.simplefilter('error')\n"
        f"tok = oasr_tok.load({str(model)!r})\n"
        "print(type(tok).__name__, tok.spec.kind, repr(tok.decode([2, 3, 1, 4])))\n"
    )
    out = _run_in(site, code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["LettersTokenizer", "letters", "'ab", "c'"]


def test_an_entry_point_naming_a_factory_with_attributes_still_works_with_a_deprecation_warning(tmp_path):
    """0.2's form: the entry point names the factory, carrying `detect` and `precedence` as
    attributes (which mypy --strict refuses). It is read as the record it means, with a
    DeprecationWarning naming the entry point, the record to write and the release that drops it."""
    site = _letters_site(tmp_path, "letters = letters_plugin:factory")
    with open(site / "letters_plugin.py", "a", encoding="utf-8") as module:
        module.write("\nfactory.detect = detect\nfactory.precedence = 5\n")
    model = tmp_path / "model"
    example_kind.write_letters(str(model))
    (model / "units.txt").write_text("<blank> 0\na 1\n", encoding="utf-8")  # precedence 5 beats it
    code = (
        "import warnings, oasr_tok\n"
        "from oasr_tok._moved import REMOVED_IN\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        f"    tok = oasr_tok.load({str(model)!r})\n"
        "print(tok.spec.kind, repr(tok.decode([2, 3])))\n"
        "for w in seen: print(w.category.__name__, '|', REMOVED_IN in str(w.message), '|', w.message)\n"
    )
    out = _run_in(site, code)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "letters 'ab'"
    assert [line.split(" | ")[:2] for line in lines[1:]] == [["DeprecationWarning", "True"]]
    assert "letters = letters_plugin:factory" in lines[1] and "KindRecord" in lines[1]


def test_an_entry_point_naming_a_record_of_another_kind_is_refused(tmp_path):
    site = _letters_site(tmp_path, "shout = letters_plugin:KIND")
    code = (
        "import oasr_tok\n"
        "try:\n"
        "    oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec('shout', {}))\n"
        "except oasr_tok.RegistryError as exc:\n"
        "    print('RegistryError', exc)\n"
    )
    out = _run_in(site, code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("RegistryError") and "shout = letters_plugin:KIND" in out.stdout
    assert "'letters'" in out.stdout


def test_the_quick_look_for_plugins_never_misses_one(tmp_path, monkeypatch):
    """registry._group_may_be_declared spares a load importlib.metadata when no distribution
    names the group; wherever importlib.metadata could find a declaration, it says "may"."""
    from importlib.metadata import entry_points

    from oasr_tok.core import registry

    def declared() -> bool:
        return any(True for _ in entry_points(group=registry.ENTRY_POINT_GROUP))

    # A dist-info declaring other groups only, and one declaring ours, and an egg's EGG-INFO.
    other = tmp_path / "other"
    (other / "quiet-1.0.dist-info").mkdir(parents=True)
    (other / "quiet-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: quiet\nVersion: 1.0\n")
    (other / "quiet-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nq = quiet:main\n")
    monkeypatch.syspath_prepend(str(other))
    assert registry._group_may_be_declared() or not declared()
    egg = tmp_path / "loud-1.0-py3.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: loud\nVersion: 1.0\n")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[oasr_tok.kinds]\nloud = loud:factory\n")
    monkeypatch.syspath_prepend(str(egg))
    assert declared() and registry._group_may_be_declared()
    # A zip on sys.path: the quick look cannot read inside, so it says "may".
    monkeypatch.setattr(sys, "path", [str(other)])
    assert not registry._group_may_be_declared()
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    monkeypatch.setattr(sys, "path", [str(other), str(archive)])
    assert registry._group_may_be_declared()


def test_the_example_plugin_imports_only_the_public_kind_api():
    """A kind author needs nothing private: tests/example_kind.py (and docs/architecture.md's
    example) import oasr_tok.kinds.api alone, and every name it exports is real."""
    import ast

    from oasr_tok.kinds import api

    source = (ROOT / "tests" / "example_kind.py").read_text("utf-8")
    imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module}
    assert {m for m in imported if m.startswith("oasr_tok")} == {"oasr_tok.kinds.api"}
    adding = (ROOT / "docs" / "architecture.md").read_text("utf-8").split("## Adding a kind")[1].split("\n## ")[0]
    assert "oasr_tok._" not in adding
    assert all(hasattr(api, name) for name in api.__all__)


def test_an_entry_point_naming_a_taken_kind_is_refused_with_a_warning(tmp_path):
    """An entry point that names a built-in kind (or one another package's entry point names)
    is not loaded, and a RegistryWarning names both declarers: never dropped without a word."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(os.path.join(ROOT, "tests", "example_kind.py"), site / "letters_plugin.py")
    for name, body in (
        ("impostor", "sentencepiece = letters_plugin:KIND\n"),
        ("twin", "letters = letters_plugin:KIND\n"),
        ("first", "letters = letters_plugin:KIND\n"),
    ):
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
        (info / "entry_points.txt").write_text("[oasr_tok.kinds]\n" + body, encoding="utf-8")
    code = (
        "import warnings, oasr_tok\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    kinds = oasr_tok.available_kinds()\n"
        "print('letters' in kinds)\n"
        "for w in seen: print(w.category.__name__, '|', w.message)\n"
    )
    out = _run_in(site, code)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "True"  # one of the two packages naming letters is loaded
    warned = [line for line in lines[1:] if line.startswith("RegistryWarning")]
    assert any(
        "impostor" in w and "'sentencepiece'" in w and "oasr_tok.kinds.sentencepiece (built in)" in w for w in warned
    ), warned
    assert any("'letters'" in w and "of twin" in w and "of first" in w for w in warned), warned


def test_a_second_declaration_is_refused_naming_both_declarers():
    """register_kind refuses a name a built-in or another registration declares, naming both; the
    same record again is a no-op, replace=True takes the name on purpose."""

    def other_factory(spec):
        return example_kind.factory(spec)

    with pytest.raises(oasr_tok.RegistryError) as info:
        oasr_tok.register_kind(oasr_tok.KindRecord("sentencepiece", other_factory))
    assert "oasr_tok.kinds.sentencepiece (built in)" in str(info.value)
    assert "other_factory" in str(info.value) and "replace=True" in str(info.value)
    oasr_tok.register_kind(example_kind.KIND, replace=True)
    oasr_tok.register_kind(example_kind.KIND)  # the same record again: nothing to do
    with pytest.raises(oasr_tok.RegistryError) as info:
        oasr_tok.register_kind(oasr_tok.KindRecord("letters", other_factory))
    assert "example_kind.factory" in str(info.value) and "other_factory" in str(info.value)


@pytest.mark.parametrize(
    "fields, names",
    [
        ({"name": ""}, "non-empty"),
        ({"factory": "not callable"}, "factory"),
        ({"detect": 3}, "detector"),
        ({"precedence": True}, "precedence"),
        ({"precedence": "5"}, "precedence"),
        ({"backend": "tokenizers"}, "without the extra"),
        ({"backend": "", "extra": "x"}, "backend"),
    ],
)
def test_a_malformed_record_is_refused_when_it_is_made(fields, names):
    with pytest.raises(oasr_tok.RegistryError, match=names):
        dataclasses.replace(example_kind.KIND, **fields)
    with pytest.raises(oasr_tok.RegistryError, match="KindRecord"):
        oasr_tok.register_kind("letters")  # type: ignore[arg-type]


def test_a_plugin_kind_unpickled_by_value_finds_its_file_written(tmp_path, letters_kind):
    """A plugin's kind may open its files itself (the example's reader calls open()): a tokenizer
    of it unpickled by value has them written before its build, unlike oasr_tok's own kinds,
    whose files are written only when read (tests/core/test_pickle_value.py)."""
    tok = load(example_kind.write_letters(str(tmp_path)))
    blob = pickle.dumps(tok)
    shutil.rmtree(tmp_path)
    with elsewhere.holding_nothing():
        clone = pickle.loads(blob)
        assert clone is not tok and clone.decode([2, 3, 1, 0, 4]) == tok.decode([2, 3, 1, 0, 4]) == "ab c"
        assert all(os.path.isfile(path) for path in clone.spec.files._paths.values())
