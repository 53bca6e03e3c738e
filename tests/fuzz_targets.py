"""The fuzz targets of tests/house/test_fuzz.py. Each runs inside a child process (see run_target):
a crash there is a failed test naming the last input, not a dead test run.

Why hypothesis and not atheris: the code under test is mostly compiled Cython, which atheris
only guides if the extensions are rebuilt with libFuzzer instrumentation (clang, sanitizer
flags: not available on every machine that runs this suite); on the Python side its coverage
feedback adds little over hypothesis's structured strategies, which already generate the
things that matter (hostile id objects, forged states, JSON with wrong types, mutated files)
and shrink a failure to a small example. Hypothesis also runs in the same pytest session, with
the project's profiles (short by default, long under HYPOTHESIS_PROFILE=ci).

The property every target checks: a hostile input gets a result or an oasr_tok.TokenizerError,
never another exception type, a crash, or runaway memory; a forged stream state is refused and
left as it was, or continued to a canonical string."""

from __future__ import annotations

import copy
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import StreamStateError, TokenizerError, TokenizerSpec, build_tokenizer

#: Written (and flushed) before every example, so a crash can be traced to its input.
_LOG = None


def _note(what: str, value: Any) -> None:
    if _LOG is not None:
        text = repr(value)
        _LOG.write(f"{what}: {text[:2000]}\n")
        _LOG.flush()


class Hostile(Exception):
    """Raised by the hostile objects themselves: theirs to propagate, not ours to type."""


def _allowed(exc: BaseException) -> bool:
    return isinstance(exc, (TokenizerError, Hostile))


def _expect_typed(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except BaseException as exc:
        if _allowed(exc):
            return exc
        raise AssertionError(f"untyped {type(exc).__name__}: {exc!s:.300}") from exc


# -- hostile ids ------------------------------------------------------------------------------


class _Index:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __index__(self) -> Any:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value

    def __repr__(self) -> str:
        return f"_Index({self.value!r})"


class _Weird:
    """Looks like a number to some protocols and like nothing to others."""

    def __float__(self) -> float:
        return 1.0

    def __int__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return "_Weird()"


def hostile_id(vocab: int):
    return st.one_of(
        st.integers(0, vocab - 1),
        st.sampled_from([-1, vocab, 2**31, 2**63, -(2**63), 2**64, 2**200, True, False]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([None, "1", b"1", "", 1 + 0j, [1], (1,), {1: 1}, {1}, object(), _Weird()]),
        st.builds(
            _Index, st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([Hostile("index"), None, "x", 1.5, True]))
        ),
    )


def hostile_ids(vocab: int):
    one = hostile_id(vocab)
    plain = st.lists(st.integers(0, vocab - 1), max_size=20)
    containers = st.one_of(
        st.lists(one, max_size=12),
        st.lists(one, max_size=12).map(tuple),
        plain.map(set),
        plain.map(lambda ids: dict.fromkeys(ids)),
        plain.map(lambda ids: iter(ids)),
        plain.map(lambda ids: (i for i in ids)),
        plain.map(lambda ids: bytes(i % 256 for i in ids)),
        plain.map(lambda ids: bytearray(i % 256 for i in ids)),
        plain.map(lambda ids: memoryview(bytes(i % 256 for i in ids))),
        st.sampled_from([None, 5, "12", b"", 1.5, object(), [[1, 2], [3]], [[[]]], range(3), range(-1, 2)]),
    )
    try:
        import array

        import numpy as np

        containers = st.one_of(
            containers,
            plain.map(lambda ids: np.array(ids, dtype=np.int64)),
            plain.map(lambda ids: np.array(ids, dtype=np.int32)),
            plain.map(lambda ids: np.array([i % 256 for i in ids], dtype=np.uint8)),
            plain.map(lambda ids: np.array(ids, dtype=np.float64)),
            plain.map(lambda ids: np.array(ids, dtype=bool)),
            plain.map(lambda ids: np.array([ids, ids], dtype=np.int64)),
            plain.map(lambda ids: np.array(ids, dtype=object)),
            plain.map(lambda ids: array.array("q", ids)),
            plain.map(lambda ids: array.array("d", ids)),
        )
    except ImportError:
        pass
    return containers


def _times(n: int):
    number = st.one_of(
        st.integers(-(2**70), 2**70), st.floats(), st.fractions(), st.sampled_from([None, "1", True, [1.0], _Weird()])
    )
    return st.one_of(
        st.lists(number, min_size=n, max_size=n),
        st.lists(number, max_size=n + 2),
        st.sampled_from([None, "abc", 5, {1: 2}]),
    )


def _cases():
    from cases import all_cases

    first: dict = {}
    for case in all_cases():
        first.setdefault(case.name.split("/")[0], case)
    return list(first.values())


def target_ids(max_examples: int) -> None:
    """Hostile id objects and containers against every entry point of every kind, the
    compiled engine and group_words included."""
    from oasr_tok._engine.piece_table import PieceTable

    toks = [case.tokenizer() for case in _cases()]
    toks.append(PieceTable([b"a", b"\xe4", b"\xb8", b"\xad"], mode="bytes"))

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def run(data):
        tok = data.draw(st.sampled_from(toks))
        ids = data.draw(hostile_ids(tok.vocab_size))
        _note("ids", (tok, ids))
        for name in ("decode", "token_pieces", "decode_batch", "word_timings", "decode_incremental", "render"):
            method = getattr(tok, name, None)
            if method is None:
                continue
            if name == "decode_batch":
                _expect_typed(lambda m=method: m([ids, ids]))
            elif name == "word_timings":
                starts = data.draw(_times(3))
                _note("starts", starts)
                _expect_typed(lambda m=method, s=starts: m(ids, s))
            elif name == "decode_incremental":
                _expect_typed(lambda m=method: m(ids, {}))
            else:
                _expect_typed(lambda m=method: m(ids))

    run()


# -- forged and foreign states -------------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.floats(),
    st.lists(st.integers(-3, 3), max_size=6),
    st.tuples(),
    st.lists(
        st.one_of(st.booleans(), st.binary(max_size=5), st.integers(-3, 3), st.text(max_size=3)), min_size=5, max_size=5
    ).map(tuple),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _canonical(text: str) -> bool:
    """Whether `text` is stored as narrow as its characters allow (what CPython's own str
    operations guarantee, and code that writes a str in place could break). The sizes compared
    are those of a copy made by concatenation, which keeps the storage kind: sys.getsizeof of
    `text` itself also counts the UTF-8 copy CPython caches in a str once something encoded it
    (a pickle does), which is not a wider storage."""
    copied = "".join(list(text))
    return copied == text and sys.getsizeof(text + "a") == sys.getsizeof(copied + "a")


def _forge(value: Any, data) -> Any:
    """A structural mutation of one state value."""
    if isinstance(value, tuple) and value and data.draw(st.booleans()):
        k = data.draw(st.integers(0, len(value) - 1))
        inner = _forge(value[k], data) if isinstance(value[k], tuple) else data.draw(_VALUES)
        return value[:k] + (inner,) + value[k + 1 :]
    if isinstance(value, int) and not isinstance(value, bool) and data.draw(st.booleans()):
        return value + data.draw(st.integers(-3, 3))
    if isinstance(value, str) and value and data.draw(st.booleans()):
        cut = data.draw(st.integers(0, len(value)))
        return value[:cut] + data.draw(st.sampled_from(["", "a", "é", "中", "😀", "\ufffd"])) + value[cut:]
    return data.draw(_VALUES)


def target_states(max_examples: int) -> None:
    """Forged and foreign stream states: refused and left alone, or continued canonically."""
    from strategies import id_streams

    cases = _cases()

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def run(data):
        case = data.draw(st.sampled_from(cases))
        tok, interesting, realistic = case.inputs()
        ids = data.draw(id_streams(tok, interesting, realistic, max_size=20))
        more = data.draw(id_streams(tok, interesting, realistic, max_size=8))
        state: dict = {}
        tok.decode_incremental(ids, state)
        how = data.draw(st.sampled_from(["value", "drop", "add", "foreign"]))
        if how == "foreign":
            other = data.draw(st.sampled_from(cases))
            o_tok, o_int, o_real = other.inputs()
            forged: dict = {}
            o_tok.decode_incremental(data.draw(id_streams(o_tok, o_int, o_real, max_size=10)), forged)
            key = None
        else:
            key = data.draw(st.sampled_from(sorted(state) + ["text", "_tail", "_s", "_tok", "_wide", "_funasr"]))
            forged = copy.deepcopy(state)
            if how == "drop":
                forged.pop(key, None)
            else:
                forged[key] = _forge(state.get(key), data)
        before = copy.deepcopy(forged)
        _note("state", (case.name, how, key, forged, more))
        try:
            tok.decode_incremental(more, forged)
            tok.decode_incremental([], forged, final=True)
        except StreamStateError:
            assert forged == before, "a refused state was changed"
            return
        except BaseException as exc:
            raise AssertionError(f"untyped {type(exc).__name__} on a forged state: {exc!s:.300}") from exc
        if how == "foreign" and other.name != case.name:
            raise AssertionError(f"a {other.name} state was continued by {case.name}")
        text = forged.get("text")
        assert type(text) is str and _canonical(text), "a forged state produced a non-canonical str"
        # The settled text is the caller's transcript (a forged one is continued as given);
        # what the state says about its tail is checked against the decoder's own state.
        if key in ("_tail", "_wide") and how != "drop":
            assert text == tok.decode(ids + more), f"a forged {key} produced a wrong text"

    run()


# -- mutated assets -------------------------------------------------------------------------------


def _assets() -> list[tuple[str, str, dict]]:
    """(kind, path, spec files role) of small real and project files."""
    from paths import own, shared

    return [
        ("symbol_table", shared("symbol_table/icefall-librispeech-bpe500.tokens.txt"), {"units": "tokens.txt"}),
        ("funasr_char", own("funasr_char/small/tokens.txt"), {"tokens": "tokens.txt"}),
        ("funasr_char", own("funasr_char/small/tokens.json"), {"tokens": "tokens.json"}),
        ("whisper", own("whisper/en/tokenizer.json"), {"tokenizer": "tokenizer.json"}),
        ("huggingface", own("huggingface/bytelevel-bpe/tokenizer.json"), {"tokenizer": "tokenizer.json"}),
        ("huggingface", own("huggingface/metaspace-bytefallback/tokenizer.json"), {"tokenizer": "tokenizer.json"}),
        ("sentencepiece", shared("sentencepiece/icefall-librispeech-bpe500.model"), {"model": "bpe.model"}),
    ]


_HUGE = [2**31, 2**63, 10**30, -1, -(2**40), 10**6, 100_000_000, 1.5, True, None, "7", [], {}]


def _json_mutation(data, value: Any, depth: int = 0) -> Any:
    """Replace one node of a JSON document with a value of the wrong type or a huge number."""
    if isinstance(value, dict) and value and depth < 6 and data.draw(st.integers(0, 3)):
        key = data.draw(st.sampled_from(sorted(value)[:50]))
        return {**value, key: _json_mutation(data, value[key], depth + 1)}
    if isinstance(value, list) and value and depth < 6 and data.draw(st.integers(0, 3)):
        k = data.draw(st.integers(0, min(len(value), 50) - 1))
        return value[:k] + [_json_mutation(data, value[k], depth + 1)] + value[k + 1 :]
    return data.draw(st.sampled_from(_HUGE + ["\ud800", "\ufeff", "x" * 5]))


def _mutate(data, raw: bytes, path: str) -> bytes:
    how = data.draw(st.sampled_from(["truncate", "flip", "bom", "utf16", "latin1", "numbers", "json", "lines"]))
    if how == "truncate":
        return raw[: data.draw(st.integers(0, len(raw)))]
    if how == "flip":
        out = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 8))):
            at = data.draw(st.integers(0, len(out) - 1))
            out[at] ^= 1 << data.draw(st.integers(0, 7))
        return bytes(out)
    if how == "bom":
        return b"\xef\xbb\xbf" + raw
    if how in ("utf16", "latin1"):
        text = raw.decode("utf-8", "replace")
        return text.encode("utf-16") if how == "utf16" else text.encode("latin-1", "replace")
    if how == "numbers":
        text = raw.decode("utf-8", "replace")
        import re

        numbers = list(re.finditer(rb"\d+", raw))[:2000]
        if not numbers:
            return raw
        match = data.draw(st.sampled_from(numbers))
        replacement = data.draw(st.sampled_from([b"100000000", b"9" * 30, b"-1", b"18446744073709551616", b"0"]))
        del text
        return raw[: match.start()] + replacement + raw[match.end() :]
    if how == "json":
        try:
            doc = json.loads(raw.decode("utf-8"))
        except ValueError:
            return raw
        return json.dumps(_json_mutation(data, doc)).encode("utf-8")
    lines = raw.split(b"\n")  # "lines": duplicate, drop or swap lines; odd separators inside
    k = data.draw(st.integers(0, len(lines) - 1))
    op = data.draw(st.sampled_from(["dup", "drop", "sep", "empty"]))
    if op == "dup":
        lines.insert(k, lines[k])
    elif op == "drop":
        del lines[k]
    elif op == "sep":
        lines[k] = (
            lines[k][:1] + data.draw(st.sampled_from(["\u2028", "\x85", "\x0b", "\r", "\x1c"])).encode() + lines[k][1:]
        )
    else:
        lines.insert(k, b"")
    return b"\n".join(lines)


def target_assets(max_examples: int) -> None:
    """Mutated real files against every reader, build_tokenizer, load and describe."""
    from oasr_tok.kinds.funasr_char import read_token_list
    from oasr_tok.kinds.symbol_table import read_symbol_table
    from oasr_tok.kinds.whisper import read_whisper_layout

    assets = _assets()
    originals = {path: open(path, "rb").read() for _, path, _ in assets}
    work = tempfile.mkdtemp(prefix="oasr-fuzz-")
    readers = {"symbol_table": read_symbol_table, "funasr_char": read_token_list, "whisper": read_whisper_layout}

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def run(data):
        kind, source, files = data.draw(st.sampled_from(assets))
        mutated = _mutate(data, originals[source], source)
        folder = tempfile.mkdtemp(dir=work)
        name = next(iter(files.values()))
        path = os.path.join(folder, name)
        with open(path, "wb") as handle:
            handle.write(mutated)
        _note("asset", (kind, source, len(mutated), mutated[:200]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind in readers:
                _expect_typed(lambda: readers[kind](path))
            spec = TokenizerSpec(kind, {role: path for role in files})
            tok = _expect_typed(lambda: build_tokenizer(spec))
            if isinstance(tok, oasr_tok.Tokenizer):
                _expect_typed(lambda: tok.decode(list(range(min(tok.vocab_size, 50)))))
                _expect_typed(lambda: tok.token_pieces(list(range(min(tok.vocab_size, 50)))))
            _expect_typed(lambda: oasr_tok.resolve(folder))
            _expect_typed(lambda: oasr_tok.load(folder))
            _expect_typed(lambda: oasr_tok.describe(folder))
            _expect_typed(lambda: oasr_tok.describe(path))
        shutil.rmtree(folder, ignore_errors=True)

    try:
        run()
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- the CLI -----------------------------------------------------------------------------------


def target_cli(max_examples: int) -> None:
    """The command line on bad stdin and bad paths: one line on stderr, never a traceback."""
    from paths import PACKAGE_PARENT, shared, subprocess_env

    table = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")
    env = subprocess_env(PYTHONIOENCODING="ascii")
    stdin = st.one_of(
        st.binary(max_size=64),
        st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.text(max_size=20).map(lambda t: t.encode("utf-16")),
        st.integers(1, 20000).map(lambda n: b"[" * n + b"]" * n),
        st.integers(1, 6000).map(lambda n: b"[" + b"9" * n + b"]"),
        st.lists(st.integers(-5, 600), max_size=10).map(lambda ids: json.dumps(ids).encode()),
        st.sampled_from(
            [
                b'{"ids": [1], "starts": ["x"]}',
                b'{"ids": 5, "starts": []}',
                b"[1,2]\n[3,\n",
                b'{"ids": [1, 2], "starts": [1e308, -1e308]}',
                b"\x00\x00",
                b"\xef\xbb\xbf[1]",
            ]
        ),
    )
    paths = st.one_of(
        st.just(table),
        st.binary(min_size=1, max_size=12)
        .filter(lambda b: b"\x00" not in b)
        .map(lambda b: b"/tmp/oasr-fuzz-" + b.replace(b"/", b"_")),
    )

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.sampled_from(["decode", "stream", "words", "describe"]), paths, stdin, st.booleans())
    def run(command, path, data, as_json):
        args = [sys.executable, "-m", "oasr_tok"] + (["--json"] if as_json else []) + [command, path]
        _note("cli", (args, data))
        result = subprocess.run(args, input=data, capture_output=True, env=env, cwd=PACKAGE_PARENT, timeout=120)
        stderr = result.stderr.decode("utf-8", "replace")
        assert result.returncode in (0, 1, 3), (result.returncode, stderr[-2000:])
        assert "Traceback" not in stderr and "lost sys.stderr" not in stderr, stderr[-2000:]
        if result.returncode == 3:  # bad input: exactly one line
            assert stderr.count("\n") == 1, stderr[-2000:]

    run()


# -- forged Stream and Revisions pickles -------------------------------------------------------------


class _Reduced:
    """Pickles as the reduce tuple it is given: the bytes a forger sends."""

    def __init__(self, function: Any, args: Any) -> None:
        self.reduced = (function, tuple(args))

    def __reduce__(self) -> Any:
        return self.reduced


def _opened(value: Any) -> Any:
    """A session pickle's reduce tuples as nested lists of fields (a ticket's and a record's own
    fields opened too), so one can be forged anywhere."""
    from oasr_tok._engine.stream_record import StreamRecord
    from oasr_tok._engine.travel import TokenizerTicket

    if type(value) in (StreamRecord, TokenizerTicket):
        function, args = value.__reduce__()
        return ("reduce", function, [_opened(a) for a in args])
    return value


def _closed(value: Any) -> Any:
    if type(value) is tuple and len(value) == 3 and value[0] == "reduce":
        return _Reduced(value[1], [_closed(a) for a in value[2]])
    return value


def target_pickles(max_examples: int) -> None:
    """Forged Stream and Revisions pickles, sent by reference, by value or by spec, with or
    without their text: one field of a real session's pickle (its ticket's, its record's, its
    decoder state's) mutated, replaced by a value of another type or by the same field of
    another kind's session. Loading and continuing it gives a typed error, or a session that goes
    on canonically on its own tokenizer (never another's, whatever the forged ticket says)."""
    import oasr_tok

    from strategies import id_streams

    cases = _cases()

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def run(data):
        case = data.draw(st.sampled_from(cases))
        tok, interesting, realistic = case.inputs()
        ids = data.draw(id_streams(tok, interesting, realistic, max_size=20))
        more = data.draw(id_streams(tok, interesting, realistic, max_size=8))
        revisions = data.draw(st.booleans())
        if revisions:
            session: Any = tok.new_revisions()
            for k in range(1, len(ids) + 1):
                tok.decode_hypothesis(ids[:k], session)
            sent_state = "committed_tokens" in session
        else:
            k = data.draw(st.integers(0, len(ids)))
            stops = data.draw(st.sampled_from([None, ["e"], ["the", "。"]]))
            envelope = data.draw(st.sampled_from([None, "qwen3_asr"]))
            session = tok.new_stream(prefill=ids[:k] or None, stop=stops, envelope=envelope)
            for token_id in ids[k:]:
                if not session.closed:
                    session.feed([token_id])
        mode = data.draw(st.sampled_from(["reference", "value", "spec"]))
        text = data.draw(st.booleans())
        _note("session", (case.name, ids, more, None if revisions else (k, stops, envelope), text))
        with oasr_tok.travelling(tokenizer=mode, text=text):
            function, args = session.__reduce__()
            opened = [_opened(a) for a in args]
            other = data.draw(st.sampled_from(cases)).tokenizer()
            foreign = [_opened(a) for a in (other.new_revisions() if revisions else other.new_stream()).__reduce__()[1]]
        # Where to forge: a field of the session, or of its ticket or record.
        places = [(i, None) for i in range(len(opened))]
        places += [
            (i, j) for i, a in enumerate(opened) if type(a) is tuple and a[:1] == ("reduce",) for j in range(len(a[2]))
        ]
        i, j = data.draw(st.sampled_from(places))
        how = data.draw(st.sampled_from(["mutate", "replace", "foreign"]))
        target = opened[i] if j is None else opened[i][2][j]
        if how == "mutate" and type(target) is tuple and target[:1] == ("reduce",):
            how = "replace"  # (a ticket or a record is forged field by field: its own places)
        if how == "foreign" and i < len(foreign):
            there = foreign[i]
            forged = (
                there
                if j is None
                else (
                    there[2][j]
                    if type(there) is tuple and there[:1] == ("reduce",) and j < len(there[2])
                    else data.draw(_VALUES)
                )
            )
        else:
            forged = _forge(target, data) if how == "mutate" else data.draw(_VALUES)
        if j is None:
            opened[i] = forged
        else:
            opened[i][2][j] = forged
        _note("pickle", (case.name, revisions, mode, i, j, how, short(forged)))
        blob = pickle.dumps(_Reduced(function, [_closed(a) for a in opened]))
        try:
            moved = pickle.loads(blob)
            if revisions:
                hyp = ids + more
                out = "".join(moved.tokenizer.decode_hypothesis(hyp, moved, final=True)[:1])
            else:
                out = moved.feed(more) + moved.feed([], final=True)
        except TokenizerError:
            return
        except BaseException as exc:
            raise AssertionError(f"untyped {type(exc).__name__} on a forged pickle: {exc!s:.300}") from exc
        # On its own tokenizer, or (a forged ticket naming another) one whose decoder is the
        # very same table, which renders exactly as its own does.
        own, found = getattr(tok, "_table", None), getattr(moved.tokenizer, "_table", None)
        same_table = own is not None and found is not None and getattr(found, "tag", 0) == getattr(own, "tag", 1)
        # (A Revisions that had committed nothing carries no state of its tokenizer's.)
        empty = revisions and not sent_state
        assert moved.tokenizer.fingerprint == tok.fingerprint or same_table or empty, "went on on another tokenizer"
        assert type(out) is str and _canonical(out), "a forged pickle produced a non-canonical str"

    def short(value: Any) -> str:
        return repr(value)[:200]

    run()


TARGETS = {
    "ids": target_ids,
    "states": target_states,
    "assets": target_assets,
    "cli": target_cli,
    "pickles": target_pickles,
}


def main(name: str, max_examples: int, log_path: str) -> None:
    global _LOG
    random.seed(0)
    with open(log_path, "w", encoding="utf-8") as log:
        _LOG = log
        TARGETS[name](max_examples)
    print(json.dumps({"target": name, "examples": max_examples}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
