"""TokenizerSpec validation and round trip; the registry's strictness and lazy built-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import oasr_tok
from oasr_tok import SpecError, TokenizerSpec

from cases import FIRST_KINDS
from paths import PACKAGE_PARENT, shared, subprocess_env

UNITS = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")


def test_spec_round_trips_through_json(tmp_path):
    spec = TokenizerSpec("symbol_table", {"units": UNITS}, {"special_ids": [0, 1, 2, 500, 501]})
    again = TokenizerSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec
    assert oasr_tok.build_tokenizer(again).special_ids == frozenset({0, 1, 2, 500, 501})


def test_spec_paths_travel_relative_to_the_checkpoint(tmp_path):
    table = tmp_path / "tokens.txt"
    table.write_text("<blk> 0\n<sos/eos> 1\n<unk> 2\n\u2581hi 3\n", encoding="utf-8")
    data = TokenizerSpec("symbol_table", {"units": str(table)}).to_dict(relative_to=tmp_path)
    assert data["files"] == {"units": "tokens.txt"}
    spec = TokenizerSpec.from_dict(data, base_dir=tmp_path)
    assert oasr_tok.build_tokenizer(spec).decode([3]) == "hi"


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "", "files": {}},
        {"files": {}},
        {"kind": "symbol_table", "files": ["tokens.txt"]},
        {"kind": "symbol_table", "files": {"units": 3}},
        {"kind": "symbol_table", "files": {}, "options": {"x": object()}},
        {"kind": "symbol_table", "flies": {}},
        "symbol_table",
    ],
)
def test_malformed_specs_raise_spec_error(bad):
    with pytest.raises(SpecError) as info:
        TokenizerSpec.from_dict(bad)
    assert isinstance(info.value, ValueError)


def test_missing_role_names_the_role_and_what_is_there():
    with pytest.raises(SpecError, match="'units'.*'model'"):
        oasr_tok.build_tokenizer(TokenizerSpec("symbol_table", {"model": UNITS}))


def test_unknown_option_is_refused():
    with pytest.raises(SpecError, match="special_idz"):
        oasr_tok.build_tokenizer(TokenizerSpec("symbol_table", {"units": UNITS}, {"special_idz": [0]}))


@pytest.mark.parametrize("special", [[0, 502], [-1], ["0"], [True], 5])
def test_bad_special_ids_option(special):
    with pytest.raises(SpecError):
        oasr_tok.build_tokenizer(TokenizerSpec("symbol_table", {"units": UNITS}, {"special_ids": special}))


def test_unknown_kind_lists_the_known_ones():
    with pytest.raises(oasr_tok.UnknownKindError, match="symbol_table") as info:
        oasr_tok.build_tokenizer(TokenizerSpec("no_such_kind", {}))
    assert isinstance(info.value, LookupError)


class _Upper(oasr_tok.Tokenizer):
    def __init__(self, spec):
        self.spec = spec

    vocab_size = property(lambda self: 26)
    special_ids = property(lambda self: frozenset())

    def decode(self, ids):
        return "".join(chr(65 + i) for i in self.check_ids(ids))


def test_registry_is_strict_about_clashes():
    oasr_tok.register_tokenizer("test_upper", _Upper)
    try:
        oasr_tok.register_tokenizer("test_upper", _Upper)  # the same factory again: a no-op
        with pytest.raises(oasr_tok.RegistryError, match="replace=True"):
            oasr_tok.register_tokenizer("test_upper", lambda spec: _Upper(spec))
        with pytest.raises(oasr_tok.RegistryError):
            oasr_tok.register_tokenizer("symbol_table", _Upper)
        oasr_tok.register_tokenizer("test_upper", _Upper, replace=True)
        assert "test_upper" in oasr_tok.available_kinds()
        tok = oasr_tok.build_tokenizer(TokenizerSpec("test_upper", {}))
        assert tok.decode([7, 8]) == "HI"
        # A plug-in gets the contract's defaults for free.
        state: dict = {}
        assert tok.decode_incremental([0, 1], state) == "AB" and state["text"] == "AB"
        assert tok.token_pieces([2, 3]) == ["C", "D"]
        assert tok.supports_encode is False
        with pytest.raises(oasr_tok.EncodeNotSupportedError):
            tok.encode("AB")
    finally:
        oasr_tok.unregister_tokenizer("test_upper")
    assert "test_upper" not in oasr_tok.available_kinds()


def test_replacing_a_builtin_on_purpose_and_getting_it_back():
    oasr_tok.register_tokenizer("symbol_table", _Upper, replace=True)
    try:
        assert isinstance(oasr_tok.build_tokenizer(TokenizerSpec("symbol_table", {})), _Upper)
    finally:
        oasr_tok.unregister_tokenizer("symbol_table")
    assert oasr_tok.build_tokenizer(TokenizerSpec("symbol_table", {"units": UNITS})).vocab_size == 502


def test_factory_must_return_a_tokenizer():
    oasr_tok.register_tokenizer("test_bad", lambda spec: "not a tokenizer")
    try:
        with pytest.raises(oasr_tok.RegistryError, match="str"):
            oasr_tok.build_tokenizer(TokenizerSpec("test_bad", {}))
    finally:
        oasr_tok.unregister_tokenizer("test_bad")
    with pytest.raises(oasr_tok.RegistryError):
        oasr_tok.register_tokenizer("test_bad", "not callable")


def test_importing_oasr_tok_imports_no_backend():
    code = (
        "import sys, oasr_tok; print(sorted(m for m in ('tokenizers', 'sentencepiece', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=subprocess_env(),
        cwd=PACKAGE_PARENT,
    )
    assert out.stdout.strip() == "[]"


def test_missing_backend_gives_an_install_hint():
    code = (
        "import sys; sys.modules['sentencepiece'] = None\n"
        "import oasr_tok\n"
        "try:\n"
        "    oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec('sentencepiece', {'model': 'x.model'}))\n"
        "except oasr_tok.BackendNotInstalledError as e:\n"
        "    print(isinstance(e, ImportError), e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=subprocess_env(),
        cwd=PACKAGE_PARENT,
    )
    assert out.stdout.startswith("True") and "pip install 'oasr_tok[sentencepiece]'" in out.stdout


def test_every_error_is_a_tokenizer_error_and_its_builtin():
    pairs = {
        oasr_tok.SpecError: ValueError,
        oasr_tok.UnknownKindError: LookupError,
        oasr_tok.RegistryError: ValueError,
        oasr_tok.BackendNotInstalledError: ImportError,
        oasr_tok.AssetNotFoundError: FileNotFoundError,
        oasr_tok.MalformedAssetError: ValueError,
        oasr_tok.InvalidIdError: ValueError,
        oasr_tok.NonIntegerIdError: TypeError,
        oasr_tok.EncodeNotSupportedError: NotImplementedError,
        oasr_tok.EncodeError: ValueError,
        oasr_tok.StreamStateError: ValueError,
        oasr_tok.TimingError: ValueError,
        oasr_tok.ResolveError: LookupError,
    }
    for error, builtin in pairs.items():
        assert issubclass(error, oasr_tok.TokenizerError) and issubclass(error, builtin)
    assert str(oasr_tok.AssetNotFoundError("tokens.txt is missing", path="tokens.txt")) == "tokens.txt is missing"


_PLUGIN = """
import oasr_tok

class Shout(oasr_tok.Tokenizer):
    def __init__(self, spec):
        self.spec = spec
    vocab_size = property(lambda self: 26)
    special_ids = property(lambda self: frozenset())
    def decode(self, ids):
        return "".join(chr(65 + i) for i in self.check_ids(ids))

def factory(spec):
    return Shout(spec)
"""


def _plugin_site(tmp_path, value: str):
    """A folder holding a module and the dist-info that declares it under `oasr_tok.kinds`,
    as `pip install` of a third-party package leaves them."""
    (tmp_path / "shout_plugin.py").write_text(_PLUGIN, encoding="utf-8")
    info = tmp_path / "shout_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shout-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[oasr_tok.kinds]\nshout = {value}\n", encoding="utf-8")
    return str(tmp_path)


def _run_with(site: str, code: str) -> subprocess.CompletedProcess:
    env = subprocess_env()
    env["PYTHONPATH"] = site + os.pathsep + env["PYTHONPATH"]
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=PACKAGE_PARENT)


def test_a_kind_from_an_entry_point_is_found_and_loaded_only_when_built(tmp_path):
    code = (
        "import sys, oasr_tok\n"
        "assert 'shout' in oasr_tok.available_kinds()\n"
        "assert 'shout_plugin' not in sys.modules  # listed without importing it\n"
        "tok = oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec('shout', {}))\n"
        "print(tok.decode([7, 8]), type(tok).__name__)\n"
    )
    out = _run_with(_plugin_site(tmp_path, "shout_plugin:factory"), code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["HI", "Shout"]


def test_a_broken_entry_point_is_a_registry_error_naming_it(tmp_path):
    code = (
        "import oasr_tok\n"
        "try:\n"
        "    oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec('shout', {}))\n"
        "except oasr_tok.RegistryError as exc:\n"
        "    print('RegistryError', exc)\n"
    )
    out = _run_with(_plugin_site(tmp_path, "shout_plugin:no_such_factory"), code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("RegistryError") and "shout_plugin:no_such_factory" in out.stdout


def test_whisper_builds_and_decodes_without_tokenizers():
    code = (
        "import sys; sys.modules['tokenizers'] = None  # as if not installed\n"
        "import oasr_tok\n"
        "tok = oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec('whisper', {'tokenizer': sys.argv[1]}))\n"
        "print(repr(tok.decode([40, 1842])))\n"
        "try:\n"
        "    tok.encode('hi')\n"
        "except oasr_tok.BackendNotInstalledError as exc:\n"
        "    print('BackendNotInstalledError', 'oasr_tok[whisper]' in str(exc))\n"
    )
    path = os.path.join(str(PACKAGE_PARENT), "oasr_tok", "data", "demo", "whisper", "tokenizer.json")
    import tokenizers

    expected = tokenizers.Tokenizer.from_file(path).decode([40, 1842])
    out = subprocess.run(
        [sys.executable, "-c", code, path], capture_output=True, text=True, env=subprocess_env(), cwd=PACKAGE_PARENT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [repr(expected), "BackendNotInstalledError True"]


def test_a_stream_continues_on_a_copy_of_the_files_elsewhere(tmp_path):
    """The stream tag of a kind on the default streaming path is a fingerprint of its files'
    contents, not their paths: a worker's copy (pickled by value) continues the driver's
    stream, and a tokenizer of other contents refuses it."""
    import shutil

    class Echo(oasr_tok.Tokenizer):
        def __init__(self, spec):
            self.spec = spec
            with open(spec.files["table"], encoding="utf-8") as handle:
                self.table = handle.read().split()

        vocab_size = property(lambda self: len(self.table))
        special_ids = property(lambda self: frozenset())

        def decode(self, ids):
            return " ".join(self.table[i] for i in self.check_ids(ids))

    for name, words in (("a", "one two three"), ("b", "one two three"), ("c", "uno dos tres")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "t.txt").write_text(words)
    here, copy, other = (Echo(oasr_tok.TokenizerSpec("echo", {"table": str(tmp_path / n / "t.txt")})) for n in "abc")
    state: dict = {}
    here.decode_incremental([0, 1], state)
    shutil.rmtree(tmp_path / "a")  # the driver's files are gone; the tag was taken already
    forked = dict(state)
    assert copy.decode_incremental([2], state) == " three" and state["text"] == "one two three"
    with pytest.raises(oasr_tok.StreamStateError):
        other.decode_incremental([2], forked)


# -- the built-in kinds: each module's KIND record, listed by the kinds' index -------------------


def test_kind_modules_are_the_public_modules_and_packages_of_the_folder(tmp_path):
    from oasr_tok.core.registry import kind_modules

    folder = tmp_path / "kinds"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "loose").mkdir()  # no __init__.py: not a package
    for name in ("late.py", "early.py", "_private.py", "notes.txt"):
        (folder / name).write_text("")
    assert kind_modules(str(folder)) == ["early", "late", "pkg"]


def test_the_index_is_what_the_kind_modules_declare():
    """oasr_tok/kinds/_index.py, which the registry reads instead of importing the kinds, says
    what every kind module's KIND record says (docs/kind_tables.py writes it), in the order of
    evidence; api is the one public module that declares no kind."""
    from oasr_tok.core.registry import builtin_kinds, index_line, read_kind_modules
    from oasr_tok.kinds import _index

    records, others = read_kind_modules()
    assert _index.KINDS == tuple(index_line(record) for record in records)
    assert _index.OTHER_MODULES == tuple(others) == ("api",)
    assert builtin_kinds() == sorted(record.name for record in records)


def test_a_load_imports_only_the_kinds_whose_detectors_it_asks():
    """The registry knows every built-in's name and precedence from the index: loading a Qwen3
    tokenizer.json asks tekken's detector (precedence 10), then huggingface's (20), which finds
    it, and no other kind module is imported."""
    code = (
        "import sys, oasr_tok\n"
        f"oasr_tok.load({shared('huggingface/qwen3')!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('oasr_tok.kinds.') and not m.split('.')[2][0] == '_'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), cwd=PACKAGE_PARENT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['oasr_tok.kinds.api', 'oasr_tok.kinds.huggingface', 'oasr_tok.kinds.tekken']"


def test_a_record_that_disagrees_with_the_index_is_refused_naming_the_fix(monkeypatch):
    from oasr_tok.core import registry

    registry.builtin_kinds()
    stale = dict(registry._index)
    stale["tekken"] = ("tekken", 11, None, None)
    monkeypatch.setattr(registry, "_index", stale)
    monkeypatch.setattr(registry, "_records", {})
    with pytest.raises(
        oasr_tok.RegistryError, match=r"oasr_tok\.kinds\.tekken declares .*10.* index .*11.*docs/kind_tables\.py"
    ):
        registry.get_factory("tekken")


def test_a_kind_module_the_index_does_not_list_is_read_by_importing_it(monkeypatch):
    """A kind added before docs/kind_tables.py was run is still a kind: its module is imported
    and its record read (the index is only a way not to import)."""
    from oasr_tok.core import registry

    lines, others = registry._read_index()
    monkeypatch.setattr(
        registry, "_read_index", lambda: (tuple(line for line in lines if line[0] != "wav2vec2"), others)
    )
    monkeypatch.setattr(registry, "_index", None)
    monkeypatch.setattr(registry, "_records", {})
    assert registry._builtins()["wav2vec2"] == ("wav2vec2", 30, None, None)
    assert list(registry._builtins()).index("wav2vec2") == list(registry._builtins()).index("gguf") - 1
    assert "wav2vec2" in registry._records  # imported to be read


@pytest.mark.parametrize(
    "declared, names",
    [
        ("KIND = 'fake'", "KIND must be a KindRecord"),
        ("KIND = KindRecord('other', factory)", "names kind 'other'; a built-in kind is named after its module"),
        ('REGISTRY = {"kind": "fake", "factory": "Fake", "precedence": 35}', "a REGISTRY line no longer declares"),
    ],
)
def test_a_kind_module_declaring_a_bad_record_is_refused_naming_it(monkeypatch, declared, names):
    import types

    from oasr_tok.core import registry

    module = types.ModuleType("oasr_tok.kinds.fake")
    module.__file__ = "/somewhere/oasr_tok/kinds/fake.py"
    exec(f"from oasr_tok.kinds.api import KindRecord\nfactory = print\n{declared}\n", module.__dict__)
    monkeypatch.setitem(sys.modules, "oasr_tok.kinds.fake", module)
    with pytest.raises(oasr_tok.RegistryError, match=f"fake.py: .*{names}"):
        registry._import_record("fake")


def test_a_builtin_record_registered_as_a_plugin_is_the_same_kind():
    """One way in: a built-in's record given to register_kind (as a plug-in's would be) builds
    and detects exactly as the built-in does; unregistered, the built-in is back."""
    from oasr_tok.core import registry
    from oasr_tok.kinds import symbol_table

    before = [(d.name, d.precedence, d.builtin) for d in registry.detectors()]
    oasr_tok.register_kind(symbol_table.KIND, replace=True)
    try:
        spec = TokenizerSpec("symbol_table", {"units": UNITS})
        assert oasr_tok.build_tokenizer(spec).decode([3, 4]) == symbol_table.KIND.factory(spec).decode([3, 4])
        entry = next(d for d in registry.detectors() if d.name == "symbol_table")
        assert (entry.precedence, entry.builtin) == (70, False) and entry.load() is symbol_table.detect
    finally:
        oasr_tok.unregister_tokenizer("symbol_table")
    assert [(d.name, d.precedence, d.builtin) for d in registry.detectors()] == before


def test_the_package_declares_the_eleven_kinds_it_documents():
    """The kinds' own records give the built-ins: the eleven the project started with are among
    them (a kind added later joins them without a change here)."""
    from oasr_tok.core.registry import builtin_kinds

    assert set(builtin_kinds()) >= FIRST_KINDS


def test_every_builtin_kind_has_a_contract_case():
    """A kind's contract case (tests/cases/<kind>.py) is one of the four files adding it takes:
    without one, the contract suite would not run on it."""
    from oasr_tok.core.registry import builtin_kinds

    from cases import all_cases

    covered = {case.name.split("/")[0] for case in all_cases()}
    assert set(builtin_kinds()) <= covered, sorted(set(builtin_kinds()) - covered)


def test_without_a_folder_to_list_the_index_alone_gives_the_builtins(monkeypatch):
    """Imported from a zip or a frozen application, the kinds' folder cannot be listed: the
    index, which needs no folder, still gives every built-in kind in its order."""
    from oasr_tok.core import registry
    from oasr_tok.kinds import _index

    def unlistable(folder=registry.KINDS_FOLDER):
        raise NotADirectoryError(folder)

    monkeypatch.setattr(registry, "kind_modules", unlistable)
    monkeypatch.setattr(registry, "_index", None)
    assert list(registry._builtins().values()) == list(_index.KINDS)
