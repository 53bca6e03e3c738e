"""Word timings as properties: over generated pieces (checked against the plain-Python
reference in tests/words_reference.py) and over every kind's contract cases (tests/cases/),
whose pieces come from real tokenizer files.

For any pieces and monotone times:
- rebuild: the words in order, with whitespace-only separators between them, give the transcript;
- every non-space character of the transcript lies in exactly one word;
- each word's first/last token are the first/last tokens whose pieces overlap it;
- its start is its first token's start and its end its last token's end (a token's end:
  ends[k]; without ends the next token's start, the last token's own start): whitespace-only
  tokens between words and empty pieces give no time;
- times are monotone: starts and ends non-decreasing, start <= end;
- words never overlap: when token spans do not (ends[k] <= starts[k + 1]), word i's end is at
  most word i+1's start unless the two share a token.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasr_tok._engine.piece_table import PieceTable
from oasr_tok.core.words import group_words
from oasr_tok.kinds.wav2vec2 import Wav2Vec2Tokenizer

import words_reference
from cases import all_cases
from strategies import id_streams

# Characters that exercise every class and rule: letters, digits, apostrophes and hyphens,
# opening/closing punctuation (ASCII, typographic, CJK), whitespace of several kinds, Han, kana
# with prolonged/voiced marks, Thai/Lao/Myanmar/Khmer with marks and stackers, combining
# marks, format characters, emoji, U+FFFD, and a lone surrogate.
ALPHABET = list(
    "aZé1 '-,.!?:;(){}[]\"«»“”‘’¿¡…—"
    "。，、：「」『』（）《》！？"
    "我们好中文東京コーヒーかはカ\u3099\u309b\uff70ｶ"
    "สวัสดีำทກິນ\u1039\u1000\u1001\u17d2\u1780\u1781\u17c2"
    "\u0301\u200d\u200b\ufeff😀👍🏽\ufffd\ud800"
    " \t\n\u3000\u00a0\u2028"
)

pieces_strategy = st.lists(st.one_of(st.text(st.sampled_from(ALPHABET), max_size=4), st.text(max_size=3)), max_size=30)


@st.composite
def monotone_times(draw, n: int, with_ends: bool, disjoint: bool | None = None):
    """Non-decreasing starts and ends; with `disjoint`, no token's end after the next start."""
    as_int = draw(st.booleans())
    disjoint = draw(st.booleans()) if disjoint is None else disjoint
    step = st.integers(0, 5) if as_int else st.floats(0, 5, allow_nan=False, allow_infinity=False)
    starts, t = [], draw(step)
    for _ in range(n):
        t = t + draw(step)
        starts.append(t)
    if not with_ends:
        return starts, None
    ends, last = [], None
    for k, s in enumerate(starts):
        e = s + draw(step)
        e = e if last is None else max(e, last)
        if disjoint and k + 1 < n:
            e = min(e, starts[k + 1])
        ends.append(e)
        last = e
    return starts, ends


def check_words(pieces, starts, ends, words, text, carriers=None):
    assert "".join(pieces) == text
    bounds, offset = [], 0
    for piece in pieces:
        bounds.append((offset, offset + len(piece)))
        offset += len(piece)

    # Rebuild: each word found where the previous one ended, past whitespace only.
    position, places = 0, []
    for word in words:
        assert word.text and not word.text[0].isspace() and not word.text[-1].isspace()
        at = text.find(word.text, position)
        assert at >= 0
        assert text[position:at].strip() == ""
        places.append((at, at + len(word.text)))
        position = at + len(word.text)
    assert text[position:].strip() == ""
    separators = [text[prev:a] for prev, (a, _) in zip([0] + [b for _, b in places], places)]
    assert "".join(sep + w.text for sep, w in zip(separators, words)) + text[position:] == text

    # Every non-space character in exactly one word (a space may sit inside one: "Bonjour !").
    covered = [0] * len(text)
    for a, b in places:
        for i in range(a, b):
            covered[i] += 1
    for i, ch in enumerate(text):
        assert covered[i] <= 1
        assert covered[i] == 1 or ch.isspace()

    # Tokens and times.
    n = len(pieces)

    def end_of(k):
        return ends[k] if ends is not None else (starts[k + 1] if k + 1 < n else starts[k])

    for word, (a, b) in zip(words, places):
        overlapping = [k for k, (pa, pb) in enumerate(bounds) if pa < b and a < pb]
        first = overlapping[0]
        if carriers is not None and bounds[first][0] == a:  # the ids that carried its first character
            while first > 0 and carriers[first - 1]:
                first -= 1
        assert (word.first_token, word.last_token) == (first, overlapping[-1])
        assert word.start == starts[word.first_token]
        assert word.end == end_of(word.last_token)
        assert word.start <= word.end
    disjoint_tokens = all(end_of(k) <= starts[k + 1] for k in range(n - 1))
    for before, after in zip(words, words[1:]):
        assert before.start <= after.start and before.end <= after.end
        if disjoint_tokens and before.last_token < after.first_token:
            assert before.end <= after.start


@given(pieces=pieces_strategy, data=st.data())
def test_generated_pieces_follow_the_rules_and_match_the_reference(pieces, data):
    starts, ends = data.draw(monotone_times(len(pieces), data.draw(st.booleans())))
    words = group_words(pieces, starts, ends)
    check_words(pieces, starts, ends, words, "".join(pieces))
    assert words == words_reference.group_words(pieces, starts, ends)


@given(pieces=pieces_strategy, data=st.data())
def test_bad_times_fail_alike_in_both_implementations(pieces, data):
    n = len(pieces)
    starts = data.draw(st.lists(st.one_of(st.integers(-5, 5), st.floats()), min_size=max(0, n - 1), max_size=n + 1))
    outcomes = []
    for implementation in (group_words, words_reference.group_words):
        try:
            outcomes.append(implementation(pieces, starts))
        except ValueError as error:
            outcomes.append(type(error))
    assert outcomes[0] == outcomes[1]


CASES = all_cases()


def _inputs(case):
    return case.inputs()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@given(data=st.data())
def test_every_kind(case, data):
    tok, interesting, realistic = _inputs(case)
    ids = data.draw(id_streams(tok, interesting, realistic))
    starts, ends = data.draw(monotone_times(len(ids), data.draw(st.booleans())))
    words = tok.word_timings(ids, starts, ends)
    pieces = tok.token_pieces(ids)
    carriers = _carriers(tok, ids)
    check_words(pieces, starts, ends, words, tok.decode(ids), carriers)
    # A CTC character model's words are transformers' word offsets (runs between whitespace,
    # docs/kinds/wav2vec2.md; tests/kinds/test_wav2vec2.py checks them against transformers itself).
    if isinstance(tok, Wav2Vec2Tokenizer):
        assert words == _runs_between_whitespace(pieces, starts, ends)
    else:
        assert words == words_reference.group_words(pieces, starts, ends, carriers)


def _carriers(tok, ids):
    """Which ids left bytes waiting (of an unfinished character, or of a byte run a ByteFallback
    decoder renders only whole), as the byte-level engine reports them, checked against the
    public contract where it can see them: when decode of the ids so far shows more than a
    stream has settled, bytes wait after that id; and a stream never settles more than decode
    shows. (Held bytes may render as nothing there: a held leading space that a Strip decoder
    drops, or bbpe's bytes that never complete.)"""
    engine = getattr(tok, "_table", None)
    if type(engine) is not PieceTable:
        return None
    carriers = engine.pieces_and_carriers(ids)[1]
    for k in range(len(ids)):
        settled = tok.decode_incremental(ids[: k + 1], {})
        shown = tok.decode(ids[: k + 1])
        assert shown.startswith(settled), (k, ids[: k + 1])
        if len(shown) > len(settled):
            assert carriers[k], (k, ids[: k + 1])
    return carriers


def _runs_between_whitespace(pieces, starts, ends):
    """Wav2Vec2CTCTokenizer's word-offset rule, stated with a regex: each maximal run of
    non-whitespace characters, timed by the first and last tokens it overlaps."""
    import re

    from oasr_tok import Word

    text, bounds, offset = "".join(pieces), [], 0
    for piece in pieces:
        bounds.append((offset, offset + len(piece)))
        offset += len(piece)
    n = len(pieces)
    out = []
    for match in re.finditer(r"\S+", text):
        tokens = [k for k, (a, b) in enumerate(bounds) if a < match.end() and match.start() < b]
        first, last = tokens[0], tokens[-1]
        end = ends[last] if ends is not None else (starts[last + 1] if last + 1 < n else starts[last])
        out.append(Word(match.group(), starts[first], end, first, last))
    return out


def test_a_held_leading_space_that_decode_strips_is_still_carried():
    """Found by CI's long profile: Mistral-7B's tokenizer.json holds a leading <0x20> byte run
    (its ByteFallback renders a run only whole) that its Strip decoder then drops, so decode
    shows nothing more than the stream settled while bytes do wait: carriers may be set where
    the public contract cannot see them, never missing where it can."""
    case = next(c for c in CASES if c.name == "huggingface/mistral-7b")
    tok = case.tokenizer()
    carriers = _carriers(tok, [35, 272])
    assert carriers is not None and carriers[0] == 1
    words = tok.word_timings([35, 272], [0.0, 1.0])
    assert words == words_reference.group_words(tok.token_pieces([35, 272]), [0.0, 1.0], None, carriers)
