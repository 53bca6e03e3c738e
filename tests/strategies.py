"""Hypothesis strategies for token id streams, in one place."""

from __future__ import annotations

from hypothesis import strategies as st

from oasr_tok import Tokenizer


@st.composite
def id_streams(draw, tok: Tokenizer, interesting: list[int] = (), realistic: list[list[int]] = (), max_size: int = 40):
    """Streams that mix random ids over the whole vocabulary, the vocabulary edges, special
    ids (mid-stream too), the case's interesting ids, and slices of realistic hypotheses."""
    vocab = tok.vocab_size
    pools = [st.integers(0, vocab - 1), st.sampled_from([0, vocab - 1])]
    special = sorted(tok.special_ids)
    if special:
        pools.append(st.sampled_from(special))
    if interesting:
        pools.append(st.sampled_from(list(interesting)))
        pools.append(st.sampled_from(list(interesting)))
    one = st.one_of(*pools)
    if realistic:
        base = draw(st.sampled_from(list(realistic)))
        if base:
            start = draw(st.integers(0, len(base) - 1))
            length = draw(st.integers(1, max_size))
            ids = list(base[start : start + length])
            # Splice adversarial ids into a realistic stream.
            for _ in range(draw(st.integers(0, 3))):
                ids.insert(draw(st.integers(0, len(ids))), draw(one))
            return ids
    return draw(st.lists(one, max_size=max_size))


@st.composite
def splits(draw, ids: list[int]):
    """A split of ids into consecutive chunks (empty chunks included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=6)))
    bounds = [0, *cuts, len(ids)]
    return [ids[a:b] for a, b in zip(bounds, bounds[1:])]


@st.composite
def revision_scripts(
    draw, tok: Tokenizer, interesting: list[int] = (), realistic: list[list[int]] = (), growing: bool = False
):
    """(hypotheses, final): the successive best hypotheses of a recogniser that rewrites its
    ending as audio arrives, and the final one. Each hypothesis is a prefix of the final ids
    (the prefix mostly grows, sometimes shrinks), followed, unless `growing`, by a few ids of a
    rewritten ending that the next hypothesis may keep, change or drop."""
    final = draw(id_streams(tok, interesting, realistic, max_size=30))
    one = st.one_of(st.integers(0, tok.vocab_size - 1), st.sampled_from(list(interesting) or [0]))
    hypotheses = []
    length = 0
    ending: list[int] = []
    for _ in range(draw(st.integers(1, 12))):
        if growing:
            length = draw(st.integers(length, len(final)))
            hypotheses.append(final[:length])
            continue
        length = max(0, min(len(final), length + draw(st.integers(-3, 5))))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            ending = []
        elif choice == 1:
            ending = draw(st.lists(one, max_size=3))
        # choice 2, 3: the same ending again (an agreement the final hypothesis may contradict)
        hypotheses.append(final[:length] + ending)
    return hypotheses, final


# -- SGLang's detokenizer (tests/integrations/test_sglang.py) ---------------------------------------

#: Text of every script a detokenizer meets, in pieces: accented Latin, CJK, kana, Hangul, Arabic,
#: Hebrew, Devanagari, Thai, emoji (skin tones, ZWJ sequences, flags), characters beyond the BMP,
#: punctuation that fullwidth scripts use, whitespace runs, and the spelling of special tokens.
TEXT_PIECES = (
    "hello", " world", "the", " a", "123", "x", ".", ",", "?", "!", "'", "…", "—", " ", "  ", "\n", "\n\n", "\t",
    "é", "ß", "Ω", "ç", "ñ", "Ā", "中文", "字", "ㄅ", "，", "。", "日本語", "カタカナ", "한국어", "العربية", "עברית",
    "देवनागरी", "ไทย", "😀", "👍🏽", "👩‍👩‍👧", "🇫🇷", "𝔘", "𠀋", "<|im_end|>", "<s>", "</s>", "<|endoftext|>",
)  # fmt: skip


@st.composite
def every_script_texts(draw, max_pieces: int = 12) -> str:
    """A text of TEXT_PIECES and random characters (no U+FFFD, no lone surrogates)."""
    alphabet = st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffd")
    piece = st.one_of(st.sampled_from(TEXT_PIECES), st.text(alphabet, min_size=1, max_size=3))
    return "".join(draw(st.lists(piece, max_size=max_pieces)))


@st.composite
def sglang_workloads(draw, max_requests: int = 30) -> list[dict]:
    """Requests as SGLang's scheduler serves them: a prompt and an output text, how many ids
    each step sends (one, four, a random few, or not streamed: every 50 ids and at finish),
    how the request ends (length, a stop token, a stop string, an abort), its
    skip_special_tokens and no_stop_trim, and the step it starts at."""
    requests = []
    for k in range(draw(st.integers(1, max_requests))):
        requests.append(
            {
                "rid": f"req-{k}",
                "prompt": draw(every_script_texts(max_pieces=5)),
                "output": draw(every_script_texts()),
                "width": draw(st.sampled_from([1, 1, 4, "few", "not streamed"])),
                "widths": draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)),
                "finish": draw(st.sampled_from(["length", "token", "string", "abort"])),
                "stop_at": draw(st.floats(0, 1)),
                "stop_size": draw(st.integers(1, 3)),
                "stop_token": draw(st.sampled_from(["eos", "special", "last"])),
                "skip_special_tokens": draw(st.booleans()) or draw(st.booleans()),
                "no_stop_trim": draw(st.integers(0, 9)) == 0,
                "start": draw(st.integers(0, 12)),
            }
        )
    return requests
