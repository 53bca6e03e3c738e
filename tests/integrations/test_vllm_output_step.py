"""vLLM's own output step (OutputProcessor.process_outputs) with tokenizer_mode="oasr" against
the same step with vLLM's mode "hf" on the same tokenizer.json: every text, delta, token list,
finish and stop reason a client sees, for every output kind (DELTA, CUMULATIVE, FINAL_ONLY),
with several requests per step, several ids per step, stop strings (straddling tokens,
completing at the same token, inside min_tokens), include_stop_str_in_output, the engine's own
stop ids, special ids mid-stream, skip_special_tokens and spaces_between_special_tokens.

The texts are drawn from every script and emoji; the prompt never ends inside a character and,
on the ByteFallback files (Mistral-7B, Moonshine), the text needs no byte pieces: those two are
the deliberate differences (tests/peers/test_vllm_detokenize.py holds them as strict xfails,
and test_byte_fallback_runs_final_text_is_vllms below checks what stays the same there).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from strategies import served_texts
from vllm_reference import HF_FOLDERS, KIND_PATHS, Request, drive, require_vllm, split_steps, tokenizer

require_vllm()

KINDS = ("DELTA", "CUMULATIVE", "FINAL_ONLY")
FOLDERS = {**HF_FOLDERS, "whisper": "whisper/faster-whisper-base"}
BYTE_FALLBACK = ("mistral-7b", "moonshine")


def pair(name: str):
    return tokenizer(FOLDERS[name], "hf"), tokenizer(FOLDERS[name], "oasr")


def eos(name: str) -> int:
    """An end id both modes know (transformers names none for Moonshine: oasr_tok's </s>)."""
    hf, oa = pair(name)
    return hf.eos_token_id if hf.eos_token_id is not None else oa.eos_token_id


def no_byte_pieces(hf, ids: list[int]) -> bool:
    return not any(t.startswith("<0x") for t in hf.convert_ids_to_tokens(ids))


@st.composite
def requests(draw, name: str) -> list[Request]:
    """One to three requests over texts of every script: a prompt that ends between characters,
    the generated ids in steps of 1-4 ids, stop strings cut from the text (or not in it),
    special ids spliced in, and the sampling parameters vLLM's detokenizer reads."""
    hf, _ = pair(name)
    specials = sorted(hf.all_special_ids) or [eos(name)]
    out = []
    for _ in range(draw(st.integers(1, 3))):
        text = draw(served_texts(min_size=2, max_size=30))
        ids = hf.encode(text, add_special_tokens=False)
        assume(len(ids) >= 2)
        if name in BYTE_FALLBACK:
            assume(no_byte_pieces(hf, ids))
        whole = hf.decode(ids)
        cuts = [c for c in range(len(ids)) if whole.startswith(hf.decode(ids[:c]))]
        cut = draw(st.sampled_from(cuts))
        prompt, generated = ids[:cut], ids[cut:]
        # special ids between characters (one inside a character makes invalid UTF-8: another
        # deliberate difference, tests/peers/test_vllm_detokenize.py)
        between = [c - cut for c in cuts if c >= cut] + [len(generated)]
        for at in sorted(draw(st.lists(st.sampled_from(between), max_size=2)), reverse=True):
            generated.insert(at, draw(st.sampled_from(specials)))
        shown = hf.decode(generated, skip_special_tokens=True)
        stops = []
        for _ in range(draw(st.integers(0, 3))):
            if shown and draw(st.booleans()):
                start = draw(st.integers(0, len(shown) - 1))
                stops.append(shown[start : start + draw(st.integers(1, 6))])
            else:
                stops.append(draw(served_texts(min_size=1, max_size=3)))
        stops = [s for s in stops if s]
        finish = draw(st.sampled_from(["length", "stop"]))
        if finish == "stop":
            generated.append(eos(name))
        params = {
            "stop": stops,
            "include_stop_str_in_output": draw(st.booleans()),
            "skip_special_tokens": draw(st.booleans()),
            "spaces_between_special_tokens": draw(st.booleans()),
            "min_tokens": draw(st.sampled_from([0, 0, 0, 1, 3])),
            "max_tokens": None,
        }
        sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
        out.append(Request(prompt, split_steps(generated, sizes), finish=finish, params=params))
    return out


@pytest.mark.parametrize("name", sorted(FOLDERS))
@pytest.mark.parametrize("kind", KINDS)
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_what_clients_see_is_mode_hfs(name, kind, data):
    hf, oa = pair(name)
    batch = data.draw(requests(name))
    expected = [s.as_tuple() for s in drive(hf, batch, kind)]
    assert [s.as_tuple() for s in drive(oa, batch, kind)] == expected


@st.composite
def garbage(draw, name: str) -> list[Request]:
    """Ids no text encodes to: bytes of characters split and interleaved, invalid bytes, real
    U+FFFD, specials anywhere, random vocabulary -- and a prompt whose own text is settled (a
    prompt ending inside a character or in U+FFFD is the deliberate difference)."""
    hf, oa = pair(name)
    pool = sorted(oa.tokenizer.special_ids)[:12]
    for text in ("a 🫠 b", "𝔘𝔫𝔦", " 天", "é", "\ufffd", "x\ufffdy", "中文"):
        pool += hf.encode(text, add_special_tokens=False)
    top = min(len(hf), len(oa))
    one = st.one_of(st.sampled_from(pool), st.integers(0, top - 1))
    out = []
    for _ in range(draw(st.integers(1, 3))):
        ids = draw(st.lists(one, min_size=2, max_size=14))
        skip = draw(st.booleans())
        cut = draw(st.integers(0, len(ids) - 1))
        shown = oa.decode(ids[:cut], skip_special_tokens=skip)
        assume(not shown.endswith("\ufffd") and oa.decode(ids, skip_special_tokens=skip).startswith(shown))
        sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
        params = {"skip_special_tokens": skip, "stop": draw(st.lists(served_texts(max_size=2), max_size=2))}
        out.append(Request(ids[:cut], split_steps(ids[cut:], sizes), params=params))
    return out


@pytest.mark.parametrize("name", ["qwen3", "qwen2-audio-like", "whisper"])
@pytest.mark.parametrize("kind", ["DELTA", "CUMULATIVE"])
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_garbage_ids_are_shown_as_mode_hf_shows_them(name, kind, data):
    """DecodeStream shows nothing while the text ends inside a character or in U+FFFD; the
    same text comes out of the same steps here."""
    hf, oa = pair(name)
    batch = data.draw(garbage(name))
    assert [s.as_tuple() for s in drive(oa, batch, kind)] == [s.as_tuple() for s in drive(hf, batch, kind)]


def _one(name, text, prompt_cut, stops=(), include=False, sizes=(1,), finish="length", **params):
    hf, _ = pair(name)
    ids = hf.encode(text, add_special_tokens=False)
    generated = ids[prompt_cut:] + ([eos(name)] if finish == "stop" else [])
    return Request(
        ids[:prompt_cut],
        split_steps(generated, list(sizes)),
        finish=finish,
        params={"stop": list(stops), "include_stop_str_in_output": include, **params},
    )


CASES = {
    # a stop string that straddles three tokens, with the stop buffer holding its start back
    "straddling": ("qwen3", "Hello world, this is a test of streaming", 2, ["s a te"], False, (1,)),
    "straddling-included": ("qwen3", "Hello world, this is a test of streaming", 2, ["s a te"], True, (1,)),
    # two stop strings completing in one step of four ids: the one that ends earliest wins
    "earliest-in-step": ("qwen3", " The user is a good user", 1, ["a", "is"], False, (4,)),
    # a stop string inside a character split across tokens (byte-level 🙂 and 世界)
    "split-character": ("qwen3", "ab 世界🙂 cd 世界 ef", 1, ["界🙂"], False, (1,)),
    "several-ids": ("qwen3", "The quick brown fox jumps over the lazy dog again and again", 3, ["lazy"], False, (3, 2)),
    "mistral-metaspace": (
        "mistral-7b",
        "VLLM is a 100% volunteer organization. We are a group of people",
        4,
        ["group of peo", "short"],
        False,
        (1,),
    ),
    "moonshine": ("moonshine", "the quick brown fox said hello to the lazy dog", 2, ["o t"], True, (2,)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_chosen_cases_are_mode_hfs(case, kind):
    name, text, cut, stops, include, sizes = CASES[case]
    hf, oa = pair(name)
    batch = [_one(name, text, cut, stops, include, sizes), _one(name, text, 0, (), False, (1,), "stop")]
    expected = drive(hf, batch, kind)
    assert [s.as_tuple() for s in drive(oa, batch, kind)] == [s.as_tuple() for s in expected]
    if stops:
        assert expected[0].stop_reason in stops  # the case does stop where it says


@pytest.mark.parametrize("min_tokens", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("include", [False, True])
def test_min_tokens_are_vllms(min_tokens, include):
    """vLLM's own update decides stop strings within min_tokens (a stop string completing
    before the min_tokens-th id is ignored, even inside a multi-id step)."""
    hf, oa = pair("qwen3")
    ids = hf.encode("cd cd cd x", add_special_tokens=False)
    batch = [
        Request(
            [],
            split_steps(ids, [3, 1]),
            params={"stop": ["cd"], "min_tokens": min_tokens, "include_stop_str_in_output": include},
        )
    ]
    for kind in KINDS:
        assert [s.as_tuple() for s in drive(oa, batch, kind)] == [s.as_tuple() for s in drive(hf, batch, kind)]


@pytest.mark.parametrize("name", BYTE_FALLBACK)
@settings(deadline=None, max_examples=25)
@given(text=served_texts(min_size=2, max_size=20))
def test_byte_fallback_runs_final_text_is_vllms(name, text):
    """Where a character needs byte pieces (an emoji in Mistral-7B's vocabulary), the stream
    holds the byte run until it ends (it could still turn into U+FFFD as a whole), where vLLM's
    DecodeStream shows a character as soon as its bytes are complete: the deltas may come a
    token later, the final text is the same."""
    hf, oa = pair(name)
    ids = hf.encode(text, add_special_tokens=False)
    assume(len(ids) >= 2)
    batch = [Request(ids[:1], split_steps(ids[1:], [1]))]
    expected = drive(hf, batch, "FINAL_ONLY")
    assert [s.as_tuple() for s in drive(oa, batch, "FINAL_ONLY")] == [s.as_tuple() for s in expected]
    ours = drive(oa, batch, "DELTA")[0]
    assert "".join(ours.texts) == "".join(drive(hf, batch, "DELTA")[0].texts)


@pytest.mark.parametrize("sizes", [[1], [1, 2, 3, 4]])
def test_one_batch_call_per_engine_step(monkeypatch, sizes):
    """All of a step's requests (here 40) go through one decode_incremental_batch call when the
    step brings one id per request, and one call per id position when it brings several (what
    DecodeStream shows depends on each id: test_what_clients_see_is_mode_hfs); vLLM's
    per-request decode never runs."""
    hf, oa = pair("qwen3")
    view = oa.view(True)
    calls = []
    original = type(view).decode_incremental_batch

    def counting(self, new_ids, states, final=False, **kwargs):
        calls.append(len(states))
        return original(self, new_ids, states, final, **kwargs)

    monkeypatch.setattr(type(view), "decode_incremental_batch", counting)
    text = "The quick brown fox jumps over the lazy dog, 世界 🙂, again and again and again"
    ids = hf.encode(text, add_special_tokens=False)
    batch = [
        Request(ids[:2], split_steps(ids[2:], [sizes[k % len(sizes)]]), params={"stop": ["lazy cat"]})
        for k in range(40)
    ]
    expected = drive(hf, batch, "DELTA")
    seen = drive(oa, batch, "DELTA")
    assert [s.as_tuple() for s in seen] == [s.as_tuple() for s in expected]
    per_step = [
        max(len(r.steps[t]) for r in batch if t < len(r.steps)) for t in range(max(len(r.steps) for r in batch))
    ]
    assert len(calls) == sum(per_step)
    assert calls[0] == 40


def test_special_tokens_shown_and_skipped_in_one_step():
    """Requests that show special tokens and requests that skip them, in the same steps: one
    batch per rendering, each request's text its own."""
    hf, oa = pair("qwen3")
    ids = hf.encode("<|im_start|>assistant\nHi there<|im_end|><|im_start|>user\nok", add_special_tokens=False)
    batch = [
        Request(ids[:1], split_steps(ids[1:], [2]), params={"skip_special_tokens": skip}) for skip in (True, False)
    ]
    for kind in KINDS:
        assert [s.as_tuple() for s in drive(oa, batch, kind)] == [s.as_tuple() for s in drive(hf, batch, kind)]
    assert "<|im_end|>" in "".join(drive(oa, batch, "DELTA")[1].texts)


def test_mode_hf_is_unchanged_by_the_plugin():
    """Mode "hf" with oasr_tok's wrappers installed gives what it gives without them, output for
    output (the wrappers hand every other tokenizer to vLLM's own code)."""
    from oasr_tok.integrations.vllm import patches

    hf, oa = pair("qwen3")  # loading mode "oasr" installs the wrappers
    assert patches.installed()
    ids = hf.encode("The quick brown fox 世界 🙂 jumps over the lazy dog", add_special_tokens=False)
    top = [[i, (i * 7) % 1000, 151644] for i in ids[2:]]
    batch = [
        Request(ids[:2], split_steps(ids[2:], [1, 3]), params={"stop": ["lazy"]}, top_k=top),
        Request(ids[:3], split_steps(ids[3:], [2]), params={"skip_special_tokens": False}),
    ]
    with_plugin = {kind: [s.as_tuple() for s in drive(hf, batch, kind)] for kind in KINDS}
    patches.uninstall()
    try:
        without = {kind: [s.as_tuple() for s in drive(hf, batch, kind)] for kind in KINDS}
    finally:
        patches.install()
    assert with_plugin == without


@pytest.mark.parametrize("kind_name", sorted(KIND_PATHS))
def test_every_kind_streams_its_decode(kind_name):
    """Every kind through vLLM's output step: the text a client gets is exactly what the
    kind's decode of prompt + generated adds to the decode of the prompt (oasr_tok's contract;
    each kind's decode is its reference library's, tests/testing/test_every_kind.py)."""
    oa = tokenizer(KIND_PATHS[kind_name], "oasr")
    tok = oa.tokenizer
    if tok.supports_encode:
        ids = oa.encode("the quick brown fox jumps over the lazy dog 今天天气很好", add_special_tokens=False)
    else:
        ids = [i for i in range(3, min(tok.vocab_size, 400), 7) if i not in tok.special_ids]
    prompt, generated = ids[:3], ids[3:]
    whole, head = tok.decode(prompt + generated), tok.decode(prompt)
    assume_prefix = whole.startswith(head)
    for kind in KINDS:
        seen = drive(oa, [Request(prompt, split_steps(generated, [1, 2]))], kind)[0]
        text = "".join(seen.texts) if kind == "DELTA" else seen.texts[-1]
        if assume_prefix:
            assert text == whole[len(head) :]
        else:  # a kind whose rules rewrite the text at the join (FunASR's): the stream's own
            stream = tok.new_stream(prefill=prompt)
            assert text == stream.feed(generated) + stream.feed([], final=True)
        assert seen.finish_reason == "length"
        if kind == "DELTA":
            assert [i for ids in seen.token_ids for i in ids] == generated
        else:
            assert seen.token_ids[-1] == generated


@example(cut=1)
@given(cut=st.integers(1, 6))
@settings(deadline=None, max_examples=10)
def test_several_requests_finish_in_different_steps(cut):
    """Requests finish (length, engine stop, stop string) at different steps while others go on;
    the finished ones leave the batch."""
    hf, oa = pair("qwen3")
    ids = hf.encode("one two three four five six seven eight nine ten eleven twelve", add_special_tokens=False)
    batch = [
        Request(ids[:cut], split_steps(ids[cut : cut + 3], [1])),
        Request(ids[:cut], split_steps(ids[cut:] + [eos("qwen3")], [2]), finish="stop"),
        Request(ids[:cut], split_steps(ids[cut:], [1]), params={"stop": ["seven"]}),
        Request(
            ids[:cut], split_steps(ids[cut:], [3]), params={"stop": ["eleven"], "include_stop_str_in_output": True}
        ),
    ]
    for kind in KINDS:
        assert [s.as_tuple() for s in drive(oa, batch, kind)] == [s.as_tuple() for s in drive(hf, batch, kind)]
