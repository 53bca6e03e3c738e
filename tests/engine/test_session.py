"""Re-decoding sessions (tok.new_session, oasr_tok/_engine/session.pyx; docs/decoding.md §
Re-decoding sessions): the boundary rule against the `tokenizers` runtime, every re-prompt
prefix against qwen-asr's computation over the transformers tokenizer of the same files
(tests/session_reference.py; tests/peers/test_qwen_asr_streaming.py runs qwen-asr's own code),
the envelope, forks, pickles (to a fresh process too), refused calls and forged pickles."""

from __future__ import annotations

import functools
import pickle
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import oasr_tok
from oasr_tok._engine.session import SPACING, Session, _session_from_fields, hard_boundary
from oasr_tok._engine.travel import carry
from oasr_tok.errors import (
    EncodeNotSupportedError,
    InvalidIdError,
    KeepSpecialsNotSupportedError,
    NonIntegerIdError,
    NonIntegerRollbackError,
    RollbackError,
    StreamStateError,
    UnknownEnvelopeError,
)

from paths import require_shared, subprocess_env
from session_reference import QWEN3, qwen3_asr_files, qwen_asr_prefix
from strategies import session_scripts, user_texts

transformers = pytest.importorskip("transformers")


@functools.cache
def qwen3() -> tuple[oasr_tok.Tokenizer, object]:
    """oasr_tok's and transformers' tokenizers of the Qwen3 files."""
    folder = require_shared(f"{QWEN3}/tokenizer.json").rsplit("/", 1)[0]
    return oasr_tok.load(folder), transformers.AutoTokenizer.from_pretrained(folder)


@functools.cache
def qwen3_asr(folder: str) -> tuple[oasr_tok.Tokenizer, object]:
    """The same, with Qwen3-ASR's `<asr_text>` an added token (tests/session_reference.py)."""
    return oasr_tok.load(folder), transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def asr_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    require_shared(f"{QWEN3}/tokenizer.json")
    return str(qwen3_asr_files(tmp_path_factory.mktemp("qwen3-asr")))


def fields(session: Session) -> tuple:
    """What a pickle of the session carries (its state, field by field)."""
    return session.__reduce__()[1][1:]


def check_checkpoints(session: Session, runtime) -> None:
    """Every checkpoint is a hard boundary of the session's text, with the runtime's token count
    of the text before it."""
    kept, checkpoints = fields(session)[4:6]
    for j in range(2, len(checkpoints), 2):
        at, tokens = checkpoints[j], checkpoints[j + 1]
        assert 0 < at < len(kept) and hard_boundary("qwen2", kept[at - 1], kept[at])
        assert len(runtime.encode(kept[:at], add_special_tokens=False).ids) == tokens


def replay(tok, hf, script, unfixed_chunk_num: int, unfixed_token_num: int, envelope=None) -> Session:
    """Run `script` through a session and through qwen-asr's computation, chunk by chunk."""
    session = tok.new_session(unfixed_chunk_num, unfixed_token_num, envelope)
    raw = ""
    for chunk, (k, final, ids) in enumerate(script):
        if k is None and chunk < unfixed_chunk_num:
            expected = (0, "")
        else:
            expected = qwen_asr_prefix(hf, raw, unfixed_token_num if k is None else k, final)
        kept = session.rollback(k, final=final)
        assert (kept, session.prefix) == expected, f"chunk {chunk}: {raw!r}"
        assert session.chunk == chunk + 1
        session.feed(ids)
        raw = expected[1] + hf.decode(ids, skip_special_tokens=True)
        assert session.raw == raw
        assert session.ids == tuple(ids)
    return session


# -- the boundary rule ----------------------------------------------------------------------


def test_the_rule_names_characters_whose_class_nfc_keeps():
    """The rule's tables, against Python's Unicode database: its letters are letters and its
    punctuation punctuation, NFC rewrites none of them, none composes with what is before it,
    and those it names after a boundary (space, tab, digits, punctuation) compose with nothing
    after them either."""
    firsts, seconds = set(), set()
    for c in range(0x110000):
        decomposition = unicodedata.decomposition(chr(c))
        if decomposition and not decomposition.startswith("<"):
            parts = [chr(int(x, 16)) for x in decomposition.split()]
            if len(parts) == 2:  # a pair NFC composes (a singleton is rewritten, never composed)
                firsts.add(parts[0])
                seconds.add(parts[1])
    chars = [chr(c) for c in range(0x20, 0x10000) if not 0xD800 <= c <= 0xDFFF]
    letters = [c for c in chars if hard_boundary("qwen2", c, ".") and not c.isdigit()]
    after = [c for c in chars if hard_boundary("qwen2", "a", c)]
    punctuation = [c for c in after if c not in " \t0123456789"]
    assert len(letters) > 20_000 and len(punctuation) > 30
    for c in letters:
        assert unicodedata.category(c)[0] == "L" and unicodedata.normalize("NFC", c) == c, hex(ord(c))
        assert c not in seconds, hex(ord(c))
    for c in punctuation:
        assert unicodedata.category(c)[0] in "PS" and unicodedata.normalize("NFC", c) == c, hex(ord(c))
    for c in after:
        assert c not in firsts and c not in seconds, hex(ord(c))
    assert [c for c in chars if hard_boundary("qwen2", c, "x")] == list("0123456789")  # a digit, then anything


@settings(suppress_health_check=list(HealthCheck))
@given(text=user_texts(max_pieces=24))
@example(text="x?\u0338 y")
@example(text="a<\u0338b 1\u0301")
def test_the_rule_against_the_runtime(text: str):
    """At every position the rule calls hard (an added token written across it aside), the
    runtime's encode of the text is the encode of the part before it and of the part after."""
    runtime = qwen3()[0].backend
    pairs = {
        (ord(t.content[i - 1]) << 21) | ord(t.content[i])
        for t in runtime.get_added_tokens_decoder().values()
        for i in range(1, len(t.content))
    }
    whole = runtime.encode(text, add_special_tokens=False).ids
    for at in range(1, len(text)):
        a, b = text[at - 1], text[at]
        if hard_boundary("qwen2", a, b) and (ord(a) << 21 | ord(b)) not in pairs:
            left = runtime.encode(text[:at], add_special_tokens=False).ids
            right = runtime.encode(text[at:], add_special_tokens=False).ids
            assert whole == left + right, (text[:at], text[at:])


def test_a_boundary_the_rule_must_not_call_hard_is_not_one():
    """The rule's refusals matter: at each of these positions the runtime's encode is not the
    two parts' (white space before a word or a digit, punctuation before a letter, NFC
    composing across, a letter before a letter, an added token written across)."""
    runtime = qwen3()[0].backend
    for left, right in [
        ("a ", "b"),
        ("a,", "b"),
        ("e", "\u0301"),
        ("a<", "\u0338"),
        ("hello", "world"),
        ("<|im", "_end|>"),
    ]:
        parts = runtime.encode(left, add_special_tokens=False).ids + runtime.encode(right, add_special_tokens=False).ids
        assert runtime.encode(left + right, add_special_tokens=False).ids != parts, (left, right)
        if left == "<|im":  # hard to the character rule, refused for the added token written across it
            assert hard_boundary("qwen2", "m", "_") and (ord("m") << 21 | ord("_")) in qwen3()[0]._session_plan()[1]
        else:
            assert not hard_boundary("qwen2", left[-1], right[0])


# -- every prefix, as qwen-asr computes it -----------------------------------------------------


@settings(suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_prefixes_are_qwen_asrs(data):
    """Random sessions on Qwen3: every prefix and every kept-token count is what qwen-asr
    computes from the same text, chunk after chunk, k from 0 to 12, its own rule and the
    finishing rule; the checkpoints stay hard boundaries with the runtime's token counts."""
    tok, hf = qwen3()
    script = data.draw(session_scripts(tok, max_chunks=24))
    unfixed_chunk_num, unfixed_token_num = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 12))
    session = replay(tok, hf, script, unfixed_chunk_num, unfixed_token_num)
    check_checkpoints(session, tok.backend)


@settings(max_examples=20, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_prefixes_with_qwen3_asr_header_token(data, asr_folder):
    """The same with `<asr_text>` an added token, as in Qwen3-ASR's files: the header is one id,
    kept or dropped whole, and the words never show it."""
    tok, hf = qwen3_asr(asr_folder)
    assert tok._session_plan() is not None
    script = data.draw(session_scripts(tok, max_chunks=16))
    session = replay(tok, hf, script, data.draw(st.integers(0, 2)), data.draw(st.integers(0, 12)), "qwen3_asr")
    check_checkpoints(session, tok.backend)


def test_long_session_rolls_back_across_checkpoints():
    """A session of thousands of tokens whose chunks drop more than they add: rollbacks cut
    behind the last checkpoint, into earlier segments, and the prefixes stay qwen-asr's."""
    tok, hf = qwen3()
    text = "The 3 cats, 你好，世界。Привет, мир! 😀 ok. " * 60
    ids = tok.encode(text)
    script = [(None, False, ids)]
    at = len(ids)
    for n in range(40):
        script.append((12, False, ids[at % len(ids) : at % len(ids) + (3 if n % 3 else 20)]))
        at += 7
    session = replay(tok, hf, script, 0, 5)
    kept, checkpoints = fields(session)[4:6]
    assert len(checkpoints) // 2 > len(kept) // (2 * SPACING)  # checkpoints all along the text
    check_checkpoints(session, tok.backend)


def test_a_cut_at_a_checkpoint_forgets_it():
    """Found by the differential: a rollback that cuts exactly at a checkpoint leaves it at the
    end of the text, where the next chunk's first character decides whether it is hard; here
    "?" then "," is not ("?," is one token), and a session that kept the checkpoint counted one
    token too many from then on."""
    tok, hf = qwen3()
    assert len(hf.encode("?,")) == 1 and hard_boundary("qwen2", "?", " ")
    script = [
        (None, False, tok.encode("aaaa bbbb? dd ee")),
        (1, False, []),  # drops " ee": the text is "aaaa bbbb? dd", a checkpoint before " dd"
        (1, False, tok.encode(", y")),  # drops " dd": the cut is that checkpoint; then ", y"
        (1, False, []),
        (3, False, []),
    ]
    session = replay(tok, hf, script, 0, 5)
    check_checkpoints(session, tok.backend)


def test_the_text_own_fffd_sends_every_rollback_back_before_it():
    """A U+FFFD in the text (the model ended a chunk inside a character) stops every later
    prefix before it, as qwen-asr's widening does, from any distance."""
    tok, hf = qwen3()
    byte = next(i for i in range(512) if tok.decode([i]) == "\ufffd")
    head = tok.encode("intro " * 30)
    script = [(None, False, head + [byte] + tok.encode(" and more words " * 20))]
    script += [(k, False, tok.encode(" again")) for k in (0, 3, 12, 0)]
    replay(tok, hf, script, 0, 5)


@pytest.mark.parametrize("folder", ["huggingface/mistral-7b", "huggingface/moonshine", "huggingface/qwen2-audio-like"])
def test_other_huggingface_files_give_qwen_asrs_prefixes(folder):
    """tokenizer.json pipelines the rule does not cover re-encode the whole text (qwen-asr's own
    computation); one it covers (qwen2-audio-like: Qwen2's pipeline, 3,288 added tokens, the
    timestamps' digits among them) cuts. Either way each prefix is the transformers tokenizer's,
    its encode without the special ids a post-processor adds (a session's text continues a
    prompt: a BOS in the middle would be wrong; Qwen's add none)."""
    path = require_shared(f"{folder}/tokenizer.json").rsplit("/", 1)[0]
    tok, runtime = oasr_tok.load(path), transformers.AutoTokenizer.from_pretrained(path)

    class hf:
        encode = staticmethod(lambda text: runtime.encode(text, add_special_tokens=False))
        decode = staticmethod(runtime.decode)

    assert (tok._session_plan() is not None) == (folder == "huggingface/qwen2-audio-like")
    texts = ["The meeting starts at 9:30. ", "今天天气很好，我们走吧。", "Ça va? 😀 ", "<|im_end|> x", "e\u0301 done"]
    script = [(k, k == 7, tok.encode(texts[n % len(texts)])) for n, k in enumerate((None, 2, 0, 5, 12, 1, 7, 3))]
    replay(tok, hf, script, 1, 4)


def test_other_kinds_compute_what_qwen_asr_would_with_their_own_encode():
    """A kind that encodes but has no rule (SentencePiece here) runs qwen-asr's computation over
    its own encode and its decode with special ids kept."""
    tok = oasr_tok.load(require_shared("sentencepiece/mistral-v1.model"))
    try:
        own = tok.with_specials()
    except KeepSpecialsNotSupportedError:
        own = tok

    class Own:  # qwen-asr's tokenizer calls, answered by the kind itself
        encode = staticmethod(lambda text: tok.encode(text))
        decode = staticmethod(lambda ids, skip_special_tokens=False: (tok if skip_special_tokens else own).decode(ids))

    script = [(k, False, tok.encode(t)) for k, t in [(None, "Hello world, ça va"), (3, " très bien 😀"), (0, " !")]]
    replay(tok, Own, script, 0, 2)


def test_a_decode_only_kind_is_refused():
    tok = oasr_tok.load(require_shared("symbol_table/icefall-librispeech-bpe500.tokens.txt"))
    with pytest.raises(EncodeNotSupportedError, match="re-encodes"):
        tok.new_session()


# -- the envelope ------------------------------------------------------------------------------


@settings(max_examples=25, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_header_never_leaks_into_the_words(data, asr_folder):
    """On every chunk and between feeds: while the raw text can still be Qwen3-ASR's header,
    the words are empty; once the header is whole, they are the text after it, stripped
    (docs/envelopes.md), and the language is the header's; output that cannot be a header is
    the words as it is."""
    tok = qwen3_asr(asr_folder)[0]
    session = tok.new_session(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 12)), "qwen3_asr")
    for k, final, ids in data.draw(session_scripts(tok, max_chunks=10)):
        session.rollback(k, final=final)
        for piece in (ids[: len(ids) // 2], ids[len(ids) // 2 :]):
            session.feed(piece)
            raw, text, envelope = session.raw, session.text, session.envelope
            start = raw.lstrip()
            tag = raw.find("<asr_text>")
            start = start[:10]
            if not ("language ".startswith(start.lower()) or start.lower().startswith("language")
                    or "<asr_text>".startswith(start)):  # fmt: skip
                assert text == raw.strip() and "problem" in envelope
            elif tag < 0:
                assert text == "" and "language" not in envelope
            else:
                assert text == raw[tag + len("<asr_text>") :].strip()
                name = next((line.strip()[9:].strip() for line in raw[:tag].splitlines()
                             if line.strip().lower().startswith("language ")), "")  # fmt: skip
                if name and "language none" not in raw[:tag].lower():
                    assert envelope["language"] == name[:1].upper() + name[1:].lower()


def test_envelope_none_gives_the_raw_text():
    tok = qwen3()[0]
    session = tok.new_session(envelope=None)
    session.feed(tok.encode("language English<asr_text> hi "))
    assert session.text == session.raw == "language English<asr_text> hi " and session.envelope is None


def test_only_the_qwen3_asr_envelope_is_taken():
    with pytest.raises(UnknownEnvelopeError, match="qwen3_asr"):
        qwen3()[0].new_session(envelope="sensevoice")


# -- copies, pickles, refused calls --------------------------------------------------------------


def _session_mid_way() -> Session:
    tok = qwen3()[0]
    session = tok.new_session(1, 3, "qwen3_asr")
    session.rollback()
    session.feed(tok.encode("language Chinese<asr_text>今天天气很好，我们去公园散步吧。" * 4))
    session.rollback()
    session.feed(tok.encode("散步吧。明天见 😀") + [tok.encode("😀")[0]])
    return session


def test_a_fork_is_independent():
    session = _session_mid_way()
    before = fields(session)
    other = session.fork()
    assert other == session and fields(other) == before
    other.rollback(4)
    other.feed(qwen3()[0].encode(" else"))
    assert fields(session) == before and other != session
    session.rollback(4)
    session.feed(qwen3()[0].encode(" else"))
    assert session == other


def test_a_pickle_goes_on_exactly():
    session = _session_mid_way()
    copy = pickle.loads(pickle.dumps(session))
    assert copy == session and copy.text == session.text and copy.envelope == session.envelope
    for k in (5, 0, 12):
        assert copy.rollback(k) == session.rollback(k) and copy.prefix == session.prefix
        copy.feed(qwen3()[0].encode("，好"))
        session.feed(qwen3()[0].encode("，好"))
    assert copy == session


_CONTINUE_ELSEWHERE = (
    "import pickle, sys, oasr_tok\n"
    "if sys.argv[1]:\n"
    "    held = oasr_tok.load(sys.argv[1])  # this worker loaded the same files\n"
    "s = pickle.loads(sys.stdin.buffer.read())\n"
    "out = [s.rollback(k) for k in (5, 0)]\n"
    "s.feed(s.tokenizer.encode('，再见'))\n"
    "out.append(s.rollback())\n"
    "sys.stdout.buffer.write(pickle.dumps((out, s.prefix, s.text, s.envelope)))\n"
)


@pytest.mark.parametrize("how", ["by reference, the worker holds it", "by value, the worker holds nothing"])
def test_a_pickle_goes_on_in_a_fresh_process(how):
    """A session travels as a Stream does (docs/scale.md § Streams that travel): by reference to
    a worker that loaded the same files, or with its tokenizer by value to one that did not."""
    session = _session_mid_way()
    folder = require_shared(f"{QWEN3}/tokenizer.json").rsplit("/", 1)[0]
    by_value = how.startswith("by value")
    with oasr_tok.travelling(tokenizer="value" if by_value else "reference"):
        message = pickle.dumps(session)
    done = subprocess.run(
        [sys.executable, "-c", _CONTINUE_ELSEWHERE, "" if by_value else folder],
        input=message,
        capture_output=True,
        env=subprocess_env(),
    )
    assert done.returncode == 0, done.stderr.decode()
    expected = [session.rollback(5), session.rollback(0)]
    session.feed(qwen3()[0].encode("，再见"))
    expected.append(session.rollback())
    assert pickle.loads(done.stdout) == (expected, session.prefix, session.text, session.envelope)


def test_a_pickle_by_reference_is_refused_where_its_tokenizer_is_not_held():
    """By reference (the default) to a worker that holds no such tokenizer: TokenizerNotHeldError,
    never a session on another tokenizer."""
    done = subprocess.run(
        [sys.executable, "-c", _CONTINUE_ELSEWHERE, ""],
        input=pickle.dumps(_session_mid_way()),
        capture_output=True,
        env=subprocess_env(),
    )
    assert done.returncode != 0 and b"TokenizerNotHeldError" in done.stderr


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda s: s.rollback(-1), RollbackError),
        (lambda s: s.rollback(1.5), NonIntegerRollbackError),
        (lambda s: s.rollback(True), NonIntegerRollbackError),
        (lambda s: s.rollback("3"), NonIntegerRollbackError),
        (lambda s: s.rollback(2**70), RollbackError),
        (lambda s: s.rollback(2, final="yes"), StreamStateError),
        (lambda s: s.feed([151_669]), InvalidIdError),
        (lambda s: s.feed([-1]), InvalidIdError),
        (lambda s: s.feed([1, "a"]), NonIntegerIdError),
        (lambda s: s.feed([1.0]), NonIntegerIdError),
        (lambda s: s.feed(5), NonIntegerIdError),
    ],
)
def test_a_refused_call_changes_nothing(call, error):
    session = _session_mid_way()
    before, text = fields(session), session.text
    fork = session.fork()
    with pytest.raises(error):
        call(session)
    assert session == fork and fields(session) == before and session.text == text
    assert session.rollback(3) == fork.rollback(3) and session.prefix == fork.prefix


@pytest.mark.parametrize(
    "settings_, error",
    [
        ((-1, 5), RollbackError),
        ((2, -1), RollbackError),
        ((2.0, 5), NonIntegerRollbackError),
        ((2, None), NonIntegerRollbackError),
    ],
)
def test_bad_settings_are_refused(settings_, error):
    with pytest.raises(error):
        qwen3()[0].new_session(*settings_)


def test_a_session_is_made_by_new_session():
    with pytest.raises(TypeError, match="new_session"):
        Session()


@pytest.mark.parametrize(
    "change",
    [
        lambda f: (*f[:4], 42, *f[5:]),  # the text is not a str
        lambda f: (*f[:5], [0, 0], f[6]),  # checkpoints not a tuple
        lambda f: (*f[:5], (0, 1), f[6]),  # the first checkpoint is not (0, 0)
        lambda f: (*f[:5], (0, 0, 3), f[6]),  # odd
        lambda f: (*f[:5], (0, 0, 2, 1), f[6]),  # position 2 of the text is not a hard boundary
        lambda f: (*f[:5], (0, 0, f[5][2], 10**6), f[6]),  # more tokens than bytes
        lambda f: (*f[:5], (0, 0, f[5][2], f[5][3], f[5][2], f[5][3] + 1), f[6]),  # not increasing
        lambda f: (*f[:5], f[5], (1, -5)),  # a bad id
        lambda f: (-1, *f[1:]),  # a bad setting
        lambda f: (*f[:2], "whisper", *f[3:]),  # an envelope a session does not take
        lambda f: (*f[:4], "\udc80", *f[5:]),  # not Unicode
    ],
)
def test_a_forged_pickle_is_refused(change):
    session = _session_mid_way()
    assert len(fields(session)[5]) >= 4  # it has a checkpoint besides (0, 0)
    tok = session.tokenizer
    with pytest.raises((StreamStateError, InvalidIdError)):
        _session_from_fields(carry(tok), *change(fields(session)))
    assert _session_from_fields(carry(tok), *fields(session)) == session


def test_a_session_in_use_refuses_another_call():
    """While a rollback runs (its encode here asks the session for its prefix, as another
    thread could), any other use of the session raises StreamStateError; the rollback itself
    then goes on unharmed."""
    tok = oasr_tok.load(require_shared("sentencepiece/mistral-v1.model"))
    original = tok.encode
    refusals = []

    def encode(text, *args, **kwargs):
        for use in (lambda: session.prefix, lambda: session.feed([1]), lambda: session.rollback(1), session.fork):
            with pytest.raises(StreamStateError, match="another call"):
                use()
            refusals.append(use)
        return original(text, *args, **kwargs)

    tok.encode = encode  # (this instance only: the session takes its encode when it is made)
    session = tok.new_session(0, 2)
    session.feed(original("hello there, general"))
    assert session.rollback() == len(original("hello there, general")) - 2 and len(refusals) == 4
