"""funasr_char cases: the real Paraformer list (tokens.txt and tokens.json) and the project's
lists (fixtures/funasr_char/), in both modes, plus runs with no special ids so that <blank>,
<s>, </s> and <unk> reach FunASR's rules mid-stream."""

from __future__ import annotations

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import KindCase, vocabulary
from paths import own, shared

REAL = "funasr_char/paraformer-zh-vocab8404/tokens"

# Hypotheses the real list can encode: CJK, English words through `@@` pieces, runs of single
# letters (the abbreviation rule), digits, an English word before CJK (the space it loses).
REAL_TEXTS = (
    "今天天气很好我们去公园散步吧",
    "我们用 gpu 训练 paraformer 模型",
    "a b c 你好 n b a 比赛 x y",
    "hello world 你好 it's okay don't worry",
    "第 1 2 3 名 and 4 5 6 people",
    "the quick brown fox jumps over the lazy dog",
)
SMALL_TEXTS = (
    "今天天气很好",
    "hello world 你说的对",
    "a b c 中文 nba ok",
    "第 1 2 名 gpu 3 个",
    "it's 好 don't 去",
)


def _build(path: str, options: dict | None = None):
    return lambda: build_tokenizer(TokenizerSpec("funasr_char", {"tokens": path}, options or {}))


def _ids_of(tok, tokens):
    index = {t: i for i, t in enumerate(vocabulary(tok))}
    return [index[t] for t in tokens if t in index]


def _interesting(tok) -> list[int]:
    """Markup words, single letters and their pieces, digits and digit pieces, apostrophes,
    punctuation, a few CJK characters and English words: every branch of the rules."""
    wanted = [
        "<blank>",
        "<s>",
        "</s>",
        "<unk>",
        "<OOV>",
        "a",
        "b",
        "c",
        "n",
        "x",
        "a@@",
        "b@@",
        "x@@",
        "'",
        "'@@",
        "i'@@",
        "it's",
        "1",
        "9",
        "1@@",
        "9@@",
        "0@@",
        "@",
        "@@",
        "-@@",
        "&",
        ".",
        "，",
        "。",
        "中",
        "文",
        "的",
        "hello",
        "world",
        "hel@@",
        "lo",
        "and@@",
        "\U0002b5af",
        "中 文",
        "a b",
        "a中",
        "中a",
        "x<s>",
        "1<unk>",
        "中x@@",
        "",
        " ",
        "\u3000",
        "A",
    ]
    return _ids_of(tok, wanted)


def _realistic(texts):
    def make(tok):
        return [tok.encode(text) for text in texts]

    return make


def _odd_realistic(tok):
    """Streams over the odd list that keep FunASR's branch choice open for a while."""
    return [
        _ids_of(tok, ["中", "中 文", "1", "中a", "9", "文", "1<unk>", "中x@@", "中"]),
        _ids_of(tok, ["a", "a b", "hello", "x<s>", "a中", "b", "c", "'"]),
        _ids_of(tok, ["a", "b", " ", "c", "x@@", "中", "y", "", "\u3000", "hello", "，", "中"]),
    ]


def reference(tok):
    """FunASR's own rules (tests/funasr_reference.py: sentence_postprocess of funasr 1.2.x, line
    for line) on the token strings, special ids stripped first: parity mode only."""
    from funasr_reference import reference_decode

    tokens = [tok.id_to_piece(i) for i in range(tok.vocab_size)]
    special = tok.special_ids
    return lambda ids: reference_decode(tokens, special, ids)


_CLEAN = "mode 'clean' is this project's own fix of FunASR's data-losing quirks: it has no reference library"


def _parity(mode: str) -> dict:
    return {"reference": reference} if mode == "parity" else {"reference_note": _CLEAN}


CASES = [
    KindCase(
        f"funasr_char/paraformer-{form}[{mode}]",
        _build(shared(f"{REAL}.{form}"), {"mode": mode}),
        interesting=_interesting,
        realistic=_realistic(REAL_TEXTS),
        **_parity(mode),
    )
    for form in ("txt", "json")
    for mode in ("parity", "clean")
] + [
    KindCase(
        "funasr_char/paraformer-txt[no specials]",
        _build(shared(f"{REAL}.txt"), {"special_ids": []}),
        interesting=_interesting,
        realistic=_realistic(REAL_TEXTS),
        reference=reference,
    ),
    KindCase(
        "funasr_char/small-txt[parity]",
        _build(own("funasr_char/small/tokens.txt")),
        interesting=_interesting,
        realistic=_realistic(SMALL_TEXTS),
        reference=reference,
    ),
    KindCase(
        "funasr_char/small-json[clean]",
        _build(own("funasr_char/small/tokens.json"), {"mode": "clean"}),
        interesting=_interesting,
        realistic=_realistic(SMALL_TEXTS),
        reference_note=_CLEAN,
    ),
    KindCase(
        "funasr_char/odd[parity]",
        _build(own("funasr_char/odd/tokens.json")),
        interesting=_interesting,
        realistic=_odd_realistic,
        reference=reference,
    ),
    KindCase(
        "funasr_char/odd[parity, no specials]",
        _build(own("funasr_char/odd/tokens.json"), {"special_ids": []}),
        interesting=_interesting,
        realistic=_odd_realistic,
        reference=reference,
    ),
    KindCase(
        "funasr_char/odd[clean]",
        _build(own("funasr_char/odd/tokens.json"), {"mode": "clean"}),
        interesting=_interesting,
        realistic=_odd_realistic,
        reference_note=_CLEAN,
    ),
]
