"""The prompt side (docs/prompts.md), differential against transformers' AutoTokenizer on the
fixture directories (it imports without torch) and the tokenizers runtime: special tokens
and stop ids, encode(add_special_tokens=True), special-token text matched as one id,
with_specials() decode, chat templates; and the typed errors for bad input."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import warnings

import pytest
import transformers
from tokenizers import Tokenizer as Runtime

import oasr_tok
from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.errors import (
    BackendNotInstalledError,
    ChatMessageError,
    ChatTemplateError,
    EncodeNotSupportedError,
    InvalidIdError,
    UnknownPieceError,
    UnknownSpecialTokenError,
)

import elsewhere
from cases import MULTISCRIPT
from paths import shared, subprocess_env

transformers.logging.set_verbosity_error()

HF_DIRS = ("qwen3", "qwen2-audio-like", "mistral-7b", "moonshine")
ROLES = ("bos", "eos", "pad", "unk", "sep", "cls", "mask")
SPECIAL_TEXTS = (
    "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
    "<s>hi</s> there <unk> and <s> again",
    "a</s>b<s>c",
    '<tool_call>{"x": 1}</tool_call><think>hmm</think>',
    "<|endoftext|><|endoftext|>text<|AUDIO|><|audio_bos|>",
    "  leading spaces and trailing  ",
    "<|en|><|transcribe|><|0.00|> hi",
)


def _dir(name: str) -> str:
    return os.path.dirname(shared(f"huggingface/{name}/tokenizer.json"))


def _hf(name: str):
    folder = _dir(name)
    files = {"tokenizer": os.path.join(folder, "tokenizer.json")}
    if os.path.exists(os.path.join(folder, "tokenizer_config.json")):
        files["tokenizer_config"] = os.path.join(folder, "tokenizer_config.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Qwen2-Audio-like pair warns about its moved ids (tested elsewhere)
        return build_tokenizer(TokenizerSpec("huggingface", files))


_BUILT: dict = {}


def ours(name: str):
    if name not in _BUILT:
        _BUILT[name] = _hf(name) if name in HF_DIRS else whisper_tok()
    return _BUILT[name]


def reference(name: str):
    key = ("ref", name)
    if key not in _BUILT:
        folder = _dir(name) if name in HF_DIRS else os.path.dirname(WHISPER)
        _BUILT[key] = transformers.AutoTokenizer.from_pretrained(folder)
    return _BUILT[key]


WHISPER = shared("whisper/faster-whisper-base/tokenizer.json")


def whisper_tok():
    return build_tokenizer(TokenizerSpec("whisper", {"tokenizer": WHISPER}))


# -- special tokens and stop ids -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["qwen3", "qwen2-audio-like", "mistral-7b"])
def test_special_token_ids_equal_transformers(name):
    tok, ref = ours(name), reference(name)
    for role in ROLES:
        assert getattr(tok.special_tokens, f"{role}_id") == getattr(ref, f"{role}_token_id"), role
        assert tok.special_tokens[role] == tok.special_tokens.id_of(f"{role}_token")


def test_special_tokens_without_config_follow_the_conventional_spellings():
    # transformers knows no roles for a bare tokenizer.json; the vocabulary spells them.
    tok = ours("moonshine")
    runtime = Runtime.from_file(shared("huggingface/moonshine/tokenizer.json"))
    assert tok.special_tokens.bos_id == runtime.token_to_id("<s>")
    assert tok.special_tokens.eos_id == runtime.token_to_id("</s>")
    assert tok.special_tokens.unk_id == runtime.token_to_id("<unk>")
    assert "conventional" in tok.special_tokens.source("bos")
    assert tok.special_tokens.stop_ids == {runtime.token_to_id("</s>")}


@pytest.mark.parametrize("name", HF_DIRS)
def test_stop_ids_are_eos_and_the_special_end_of_turn_tokens(name):
    tok = ours(name)
    data = json.load(open(shared(f"huggingface/{name}/tokenizer.json"), encoding="utf-8"))
    special = {a["content"]: a["id"] for a in data["added_tokens"] if a["special"]}
    config = os.path.join(_dir(name), "tokenizer_config.json")
    if os.path.exists(config):
        for entry_id, entry in json.load(open(config, encoding="utf-8"))["added_tokens_decoder"].items():
            if entry.get("special"):
                special.setdefault(entry["content"], int(entry_id))
    expected = {special[t] for t in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>") if t in special}
    eos = tok.special_tokens.eos_id
    if eos is not None:
        expected.add(eos)
    assert tok.special_tokens.stop_ids == expected
    for token_id in expected:
        assert tok.special_tokens.source(f"stop:{token_id}")


def test_generation_config_eos_list_joins_the_stop_ids(tmp_path):
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(shared(f"huggingface/qwen3/{name}"), tmp_path / name)
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [151645, 151643, 151644]}))
    tok = build_tokenizer(
        TokenizerSpec(
            "huggingface",
            {
                "tokenizer": str(tmp_path / "tokenizer.json"),
                "tokenizer_config": str(tmp_path / "tokenizer_config.json"),
            },
        )
    )
    assert tok.special_tokens.stop_ids == {151643, 151644, 151645}
    assert "generation_config.json" in tok.special_tokens.source("stop:151644")
    assert tok.special_tokens.eos_id == 151645  # the config's eos, untouched


def test_whisper_special_tokens_from_its_layout():
    tok = whisper_tok()
    runtime = Runtime.from_file(WHISPER)
    assert tok.special_tokens.eos_id == runtime.token_to_id("<|endoftext|>")
    assert tok.special_tokens.bos_id == runtime.token_to_id("<|startoftranscript|>")
    assert tok.special_tokens.stop_ids == {runtime.token_to_id("<|endoftext|>")}


def test_sentencepiece_special_tokens_from_the_model_then_by_convention():
    import sentencepiece

    for name in ("mistral-v1.model", "icefall-librispeech-bpe500.model", "wenet-librispeech-unigram5000.model"):
        path = shared(f"sentencepiece/{name}")
        sp = sentencepiece.SentencePieceProcessor(model_file=path)
        tok = build_tokenizer(TokenizerSpec("sentencepiece", {"model": path}))
        pieces = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
        for role, declared in (("bos", sp.bos_id()), ("eos", sp.eos_id()), ("unk", sp.unk_id())):
            if declared >= 0:
                assert tok.special_tokens[role] == declared
                assert "SentencePiece model" in tok.special_tokens.source(role)
        if sp.bos_id() < 0 and "<sos/eos>" in pieces:  # icefall: the user-defined <sos/eos> is both
            assert tok.special_tokens.bos_id == tok.special_tokens.eos_id == pieces["<sos/eos>"]


def test_special_tokens_record_is_immutable_and_names_are_checked():
    specials = ours("qwen3").special_tokens
    with pytest.raises(AttributeError):
        specials.eos_id = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        specials.sources["eos"] = "x"  # type: ignore[index]
    with pytest.raises(UnknownSpecialTokenError, match="'eot'"):
        specials["eot"]
    with pytest.raises(KeyError):
        specials.id_of("beginning")


# -- vocabulary ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["qwen3", "mistral-7b"])
def test_piece_to_id_is_the_inverse_of_id_to_piece(name):
    tok = ours(name)
    runtime = tok.backend
    for token_id in random.Random(7).sample(range(tok.vocab_size), 300) + sorted(tok.special_ids):
        piece = tok.id_to_piece(token_id)
        if piece:
            assert tok.piece_to_id(piece) == runtime.token_to_id(piece) == token_id
    assert tok.vocabulary == runtime.get_vocab(with_added_tokens=True)
    with pytest.raises(TypeError):
        tok.vocabulary["new"] = 1  # type: ignore[index]
    with pytest.raises(UnknownPieceError, match="no-such-piece"):
        tok.piece_to_id("no-such-piece")


def test_piece_to_id_on_every_kind():
    paths = {
        "symbol_table": {"units": shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")},
        "sentencepiece": {"model": shared("sentencepiece/icefall-librispeech-bpe500.model")},
        "funasr_char": {"tokens": shared("funasr_char/paraformer-zh-vocab8404/tokens.txt")},
    }
    for kind, files in paths.items():
        tok = build_tokenizer(TokenizerSpec(kind, files))
        for token_id in range(0, tok.vocab_size, 97):
            assert tok.id_to_piece(tok.piece_to_id(tok.id_to_piece(token_id))) == tok.id_to_piece(token_id)
    tok = whisper_tok()
    assert tok.piece_to_id("<|0.00|>") == tok.timestamp_begin
    assert tok.piece_to_id("<|en|>") == tok.language_ids["en"]


# -- encode ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", HF_DIRS + ("whisper",))
def test_encode_with_special_tokens_equals_transformers(name):
    tok, ref = ours(name), reference(name)
    for text in MULTISCRIPT + SPECIAL_TEXTS:
        assert tok.encode(text, add_special_tokens=True) == ref(text).input_ids, text
        assert tok.encode(text) == ref(text, add_special_tokens=False).input_ids, text
    assert tok.encode_batch(list(SPECIAL_TEXTS), add_special_tokens=True) == ref(list(SPECIAL_TEXTS)).input_ids


@pytest.mark.parametrize("name", ["qwen3", "mistral-7b", "whisper"])
def test_split_special_tokens_spells_special_text_out(name):
    tok = ours(name)
    folder = _dir(name) if name in HF_DIRS else os.path.dirname(WHISPER)
    ref = transformers.AutoTokenizer.from_pretrained(folder, split_special_tokens=True)
    for text in SPECIAL_TEXTS:
        assert tok.encode(text, split_special_tokens=True) == ref(text, add_special_tokens=False).input_ids, text


def test_special_text_is_one_id_in_every_encoding_kind():
    sp = build_tokenizer(TokenizerSpec("sentencepiece", {"model": shared("sentencepiece/mistral-v1.model")}))
    assert sp.encode("<s>hi</s>")[0] == 1 and sp.encode("<s>hi</s>")[-1] == 2
    assert 1 not in sp.encode("<s>hi</s>", split_special_tokens=True)
    # Mistral's SentencePiece model adds bos as the Llama tokenizers over it do.
    ref = reference("mistral-7b")
    for text in MULTISCRIPT:
        assert sp.encode(text, add_special_tokens=True) == ref(text).input_ids
    paraformer = build_tokenizer(
        TokenizerSpec("funasr_char", {"tokens": shared("funasr_char/paraformer-zh-vocab8404/tokens.txt")})
    )
    s_id = paraformer.piece_to_id("<s>")
    assert paraformer.encode("<s>你好") == [s_id, *paraformer.encode("你好")]


def test_decode_only_kind_refuses_encode_batch():
    tok = build_tokenizer(
        TokenizerSpec("symbol_table", {"units": shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")})
    )
    with pytest.raises(EncodeNotSupportedError):
        tok.encode_batch(["a"], add_special_tokens=True)


# -- with_specials ---------------------------------------------------------------------------------


def _random_ids(tok, seed: int, count: int = 40) -> list[list[int]]:
    rng = random.Random(seed)
    special = sorted(tok.special_ids)
    streams = []
    for text in MULTISCRIPT + SPECIAL_TEXTS:
        ids = tok.encode(text, add_special_tokens=True)
        for _ in range(3):
            ids.insert(rng.randrange(len(ids) + 1), rng.choice(special))
        streams.append(ids)
    for _ in range(count):
        streams.append(
            [rng.choice(special) if rng.random() < 0.3 else rng.randrange(tok.vocab_size) for _ in range(12)]
        )
    return streams


@pytest.mark.parametrize("name", HF_DIRS)
def test_with_specials_decode_equals_transformers_keeping_specials(name):
    tok, ref = ours(name), reference(name)
    view = tok.with_specials()
    assert view.special_ids == frozenset()
    assert view.with_specials() is view and tok.with_specials() is view
    for ids in _random_ids(tok, 1):
        assert view.decode(ids) == ref.decode(ids, skip_special_tokens=False), ids
        assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=True), ids
    assert view.decode_batch(_random_ids(tok, 2)[:5]) == [
        ref.decode(i, skip_special_tokens=False) for i in _random_ids(tok, 2)[:5]
    ]


def test_whisper_with_specials_shows_control_tokens_timestamps_and_the_prompt():
    tok = whisper_tok()
    view = tok.with_specials()
    runtime = Runtime.from_file(WHISPER)
    ids = (
        [tok.sot_prev]
        + tok.encode(" previous words")
        + tok.sot_sequence("en")
        + [tok.timestamp_begin]
        + tok.encode(" Hello 世界")
        + [tok.timestamp_id(1.08), tok.eot]
    )
    text = view.decode(ids)
    # openai-whisper spells a timestamp <|%.2f|> of (id - timestamp_begin) * 0.02 s.
    assert text == (
        "<|startofprev|> previous words<|startoftranscript|><|en|><|transcribe|><|0.00|> Hello 世界"
        "<|1.08|><|endoftext|>"
    )
    assert tok.decode(ids) == " Hello 世界"
    for stream in _random_ids(tok, 3):
        below = [i for i in stream if i < tok.timestamp_begin]
        assert view.decode(below) == runtime.decode(below, skip_special_tokens=False)
        expected = (
            "".join(
                f"<|{(i - tok.timestamp_begin) * 0.02:.2f}|>"
                if i >= tok.timestamp_begin
                else runtime.decode([i], skip_special_tokens=False)
                for i in stream
            )
            if all(i >= tok.timestamp_begin or runtime.decode([i]).isascii() for i in stream)
            else None
        )
        if expected is not None:
            assert view.decode(stream) == expected


def test_whisper_with_specials_decodes_id_arrays_as_the_runtime_decodes_their_list():
    import numpy as np

    tok = whisper_tok()
    view = tok.with_specials()
    runtime = Runtime.from_file(WHISPER)
    for stream in _random_ids(tok, 4):
        below = [i for i in stream if i < tok.timestamp_begin] * 200  # long: a list is read in place
        expected = runtime.decode(below, skip_special_tokens=False)
        for container in (below, np.array(below, dtype=np.int64), np.array(below, dtype=">i4")[::-1][::-1]):
            assert view.decode(container) == expected
    for bad, shown in ((np.array([5, view.vocab_size]), view.vocab_size), (np.array([5, -1], dtype=np.int32), -1)):
        with pytest.raises(InvalidIdError, match=f"token id {shown} at position 1 is out of range"):
            view.decode(bad)


def test_sentencepiece_with_specials_equals_the_llama_tokenizer_json_over_the_same_vocabulary():
    sp = build_tokenizer(TokenizerSpec("sentencepiece", {"model": shared("sentencepiece/mistral-v1.model")}))
    ref = reference("mistral-7b")
    view = sp.with_specials()
    for text in MULTISCRIPT + SPECIAL_TEXTS:
        ids = sp.encode(text, add_special_tokens=True)
        for cut in range(0, len(ids), 3):
            stream = ids[:cut] + [2, 1] + ids[cut:]
            assert view.decode(stream) == ref.decode(stream, skip_special_tokens=False), stream
            # Without specials the view is SentencePiece's own decode.
            plain = [i for i in stream if i not in sp.special_ids]
            assert view.decode(plain) == sp.decode(plain)


def test_views_pickle_as_views():
    for tok in (ours("qwen3"), whisper_tok()):
        view = tok.with_specials()
        back = elsewhere.loads(pickle.dumps(view))
        ids = tok.encode("<|im_start|>hi") + [max(tok.special_ids)]
        assert back.special_ids == frozenset() and back.decode(ids) == view.decode(ids)


# -- chat templates --------------------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
CONVERSATIONS = [
    [{"role": "user", "content": "Hello there"}],
    [
        {"role": "system", "content": "You transcribe audio."},
        {
            "role": "user",
            "content": [{"type": "audio", "audio_url": "a.wav"}, {"type": "text", "text": "What is said?"}],
        },
    ],
    [
        {"role": "system", "content": "Be brief <|im_end|> really"},
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "21 degrees.", "reasoning_content": "Read the tool output."},
        {"role": "user", "content": "Thanks 😀 и спасибо", "name": None},
    ],
]


@pytest.mark.parametrize("name", ["qwen3", "qwen2-audio-like"])
@pytest.mark.parametrize("generation", [False, True])
@pytest.mark.parametrize("tools", [None, TOOLS])
def test_apply_chat_template_equals_transformers(name, generation, tools):
    tok, ref = ours(name), reference(name)
    assert tok.chat_template == ref.chat_template
    for messages in CONVERSATIONS:
        try:
            expected = ref.apply_chat_template(messages, tools=tools, add_generation_prompt=generation, tokenize=False)
        except Exception as exc:  # e.g. Qwen3's template on content parts: it fails in both
            with pytest.raises(ChatTemplateError, match=type(exc).__name__ if not str(exc) else None):
                tok.apply_chat_template(messages, tools=tools, add_generation_prompt=generation)
            continue
        assert tok.apply_chat_template(messages, tools=tools, add_generation_prompt=generation) == expected
        ids = ref.apply_chat_template(
            messages, tools=tools, add_generation_prompt=generation, tokenize=True, return_dict=False
        )
        assert tok.apply_chat_template(messages, tools=tools, add_generation_prompt=generation, tokenize=True) == ids
    kwargs = {"enable_thinking": False}
    assert tok.apply_chat_template(CONVERSATIONS[0], add_generation_prompt=True, **kwargs) == ref.apply_chat_template(
        CONVERSATIONS[0], add_generation_prompt=True, tokenize=False, **kwargs
    )


# A Mistral-instruct style template (bos_token, raise_exception on alternation), given to both.
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}"
)


def test_mistral_template_given_explicitly_equals_transformers():
    tok, ref = ours("mistral-7b"), reference("mistral-7b")
    assert tok.chat_template is None
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Again </s> <s>"},
    ]
    expected = ref.apply_chat_template(messages, chat_template=MISTRAL_TEMPLATE, tokenize=False)
    assert tok.apply_chat_template(messages, chat_template=MISTRAL_TEMPLATE) == expected
    assert tok.apply_chat_template(messages, chat_template=MISTRAL_TEMPLATE, tokenize=True) == ref.apply_chat_template(
        messages, chat_template=MISTRAL_TEMPLATE, tokenize=True, return_dict=False
    )
    with pytest.raises(ChatTemplateError, match="must alternate"):
        tok.apply_chat_template(messages[:1] * 2, chat_template=MISTRAL_TEMPLATE)
    with pytest.raises(ChatTemplateError, match="ships no chat template"):
        tok.apply_chat_template(messages)


CONTINUED = [
    [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi there, I am"}],
    [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Count"},
        {"role": "assistant", "content": "One, two,  "},
    ],  # trailing spaces: the template may trim them
    [
        {"role": "user", "content": "Describe"},
        {"role": "assistant", "content": [{"type": "text", "text": "It is"}, {"type": "text", "text": "a cat"}]},
    ],
    [{"role": "user", "content": "Think"}, {"role": "assistant", "content": "", "reasoning_content": "Let me see"}],
]


@pytest.mark.parametrize("name", ["qwen3", "qwen2-audio-like", "mistral-7b"])
@pytest.mark.parametrize("field", [True, "content", "reasoning_content"])
def test_continue_final_message_equals_transformers(name, field):
    tok, ref = ours(name), reference(name)
    template = MISTRAL_TEMPLATE if name == "mistral-7b" else None
    for messages in CONVERSATIONS + CONTINUED:
        try:
            expected = ref.apply_chat_template(
                messages, chat_template=template, continue_final_message=field, tokenize=False
            )
        except Exception:  # transformers refuses (no such field, template drops the text, fails): so do we
            with pytest.raises(ChatTemplateError):
                tok.apply_chat_template(messages, chat_template=template, continue_final_message=field)
            continue
        assert tok.apply_chat_template(messages, chat_template=template, continue_final_message=field) == expected
        ids = ref.apply_chat_template(
            messages, chat_template=template, continue_final_message=field, tokenize=True, return_dict=False
        )
        assert (
            tok.apply_chat_template(messages, chat_template=template, continue_final_message=field, tokenize=True)
            == ids
        )
    with pytest.raises(ChatTemplateError, match="add_generation_prompt"):
        tok.apply_chat_template(
            CONTINUED[0], chat_template=template, continue_final_message=True, add_generation_prompt=True
        )


def test_continue_final_message_really_continues():
    # The differential test above could pass with both sides empty: pin down one rendering.
    text = ours("qwen3").apply_chat_template(CONTINUED[0], continue_final_message=True)
    # the user turn is closed, the assistant's is left open right after its text
    assert text.endswith("</think>\n\nHi there, I am") and text.count("<|im_end|>") == 1


def test_template_variables_are_read_once_per_tokenizer(tmp_path):
    """apply_chat_template used to re-read tokenizer_config.json (and special_tokens_map.json)
    on every call; now the variables are built once: a config changed on disk afterwards
    changes nothing, and the renderings stay transformers' ones."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(shared(f"huggingface/qwen3/{name}"), tmp_path / name)
    tok = oasr_tok.load(str(tmp_path))
    ref = reference("qwen3")
    template = "{{ eos_token }}|{{ pad_token }}|{% for m in messages %}{{ m.content }}{% endfor %}"
    first = tok.apply_chat_template(CONVERSATIONS[0], chat_template=template)
    assert first == ref.apply_chat_template(CONVERSATIONS[0], chat_template=template, tokenize=False)
    (tmp_path / "tokenizer_config.json").write_text("{ not json")
    for _ in range(3):
        assert tok.apply_chat_template(CONVERSATIONS[0], chat_template=template) == first
        assert tok.apply_chat_template(CONVERSATIONS[0], add_generation_prompt=True) == ref.apply_chat_template(
            CONVERSATIONS[0], add_generation_prompt=True, tokenize=False
        )


@pytest.mark.parametrize("mode", ["value", "spec"])
def test_prompt_files_beside_tokenizer_json_survive_pickling(tmp_path, mode):
    """Regression: pickled by value, a tokenizer lost the files it reads beside tokenizer.json
    (chat_template.jinja, additional_chat_templates/, generation_config.json,
    special_tokens_map.json): the receiver fell back to the config's template and stop ids."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(shared(f"huggingface/qwen3/{name}"), tmp_path / name)
    (tmp_path / "chat_template.jinja").write_text("JINJA {{ eos_token }} {{ messages[0].content }}")
    (tmp_path / "additional_chat_templates").mkdir()
    (tmp_path / "additional_chat_templates" / "tool_use.jinja").write_text("TOOLS {{ tools | length }}")
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [151645, 151644]}))
    tok = oasr_tok.load(str(tmp_path))
    tok.pickle_mode = mode
    ref = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    messages = [{"role": "user", "content": "hi"}]
    want = ref.apply_chat_template(messages, tokenize=False)
    assert tok.apply_chat_template(messages) == want == "JINJA <|im_end|> hi"
    stops, templates = tok.special_tokens.stop_ids, dict(tok.chat_templates)
    assert stops == {151643, 151644, 151645} and set(templates) == {"default", "tool_use"}
    back = elsewhere.loads(pickle.dumps(tok))  # (a worker without the files rebuilds it)
    if mode == "value":
        shutil.rmtree(tmp_path)  # the receiver has only what travelled
    assert back.apply_chat_template(messages) == want
    assert back.apply_chat_template(messages, tools=TOOLS) == "TOOLS 1"
    assert back.special_tokens.stop_ids == stops
    assert back.chat_templates == templates


def test_sandbox_and_template_errors():
    tok = ours("qwen3")
    messages = [{"role": "user", "content": "x"}]
    for escape in (
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{% set ns = namespace(_x=1) %}",
    ):
        with pytest.raises(ChatTemplateError, match="sandbox forbids"):
            tok.apply_chat_template(messages, chat_template=escape)
    # An unsafe attribute of a list is undefined in the sandbox (renders nothing), as in transformers.
    assert tok.apply_chat_template(messages, chat_template="{{ messages.__class__ }}") == ""
    with pytest.raises(ChatTemplateError, match="line 1"):
        tok.apply_chat_template(messages, chat_template="{% for m in messages %}")
    for bad in ("not a list", [], ["a string"], [{"role": "user", "content": "x"}, 3]):
        with pytest.raises(ChatMessageError):
            tok.apply_chat_template(bad)  # type: ignore[arg-type]
    # tojson does not escape HTML, as transformers' filter
    assert tok.apply_chat_template(messages, chat_template="{{ '<a>&' | tojson }}") == '"<a>&"'


def test_missing_jinja2_names_the_extra():
    code = (
        "import sys; sys.modules['jinja2'] = None\n"
        "import oasr_tok\n"
        f"tok = oasr_tok.build_tokenizer(oasr_tok.TokenizerSpec('huggingface', {{'tokenizer': {shared('huggingface/qwen3/tokenizer.json')!r}}}))\n"
        "try:\n    tok.apply_chat_template([{'role': 'user', 'content': 'x'}], chat_template='{{ 1 }}')\n"
        "except oasr_tok.BackendNotInstalledError as e:\n    print('OK', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), check=True)
    assert out.stdout.startswith("OK") and "oasr_tok[chat]" in out.stdout
    assert issubclass(BackendNotInstalledError, ImportError)


def test_import_oasr_tok_does_not_import_jinja2():
    code = "import sys, oasr_tok; print('jinja2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), check=True)
    assert out.stdout.strip() == "False"


# -- NeMo ChatTemplateMixin style ------------------------------------------------------------------

NEMO_TEMPLATE = {
    "prefix": "{_bos_}",
    "roles": {
        "user": "[INST] {_content_} [/INST]",
        "assistant": "{_content_}{_eos_}",
        "system": "<<SYS>> {_content_} <</SYS>>",
    },
}


def _nemo_reference(tok, messages, template):
    """NeMo's tokenize_with_chat_template (chat_template_mixin.py), ported: literal text and
    content buffered, encoded with text_to_ids whenever a {_name_} special token comes, that
    token's id appended."""
    var = __import__("re").compile(r"(\{_[^}]+_\})")
    encode = lambda text: tok.encode(text, split_special_tokens=True) if text else []

    def turns(message, template):
        text = []
        for part in var.split(template):
            if not part:
                continue
            if part.startswith("{_") and part.endswith("_}"):
                if part[2:-2] == "content":
                    text.append(message["content"])
                else:
                    yield "".join(text), part[2:-2]
                    text = []
            else:
                text.append(part)
        yield "".join(text), None

    ids = []
    for part, special in turns("", template["prefix"]):
        ids += encode(part) + ([tok.special_tokens[special]] if special else [])
    buffer = []
    for message in messages:
        for part, special in turns(message, template["roles"][message["role"]]):
            buffer.append(part)
            if special is not None:
                ids += encode("".join(buffer)) + [tok.special_tokens[special]]
                buffer = []
    return ids + encode("".join(buffer))


def test_nemo_style_template_for_sentencepiece():
    path = shared("sentencepiece/mistral-v1.model")
    tok = build_tokenizer(TokenizerSpec("sentencepiece", {"model": path}, {"chat_template": NEMO_TEMPLATE}))
    messages = [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "What is your favourite fruit?"},
        {"role": "assistant", "content": "A lemon."},
        {"role": "user", "content": "Why?"},
    ]
    assert tok.chat_template is None
    assert tok.apply_chat_template(messages, tokenize=True) == _nemo_reference(tok, messages, NEMO_TEMPLATE)
    text = tok.apply_chat_template(messages)
    assert text.startswith("<s><<SYS>> Be kind. <</SYS>>[INST] What is")
    assert "A lemon.</s>" in text
    with pytest.raises(ChatMessageError, match="'robot'"):
        tok.apply_chat_template([{"role": "robot", "content": "x"}], tokenize=True)
    with pytest.raises(UnknownSpecialTokenError):
        tok.apply_chat_template(messages[1:2], chat_template={"roles": {"user": "{_content_}{_eot_}"}}, tokenize=True)
    with pytest.raises(oasr_tok.SpecError):
        build_tokenizer(TokenizerSpec("sentencepiece", {"model": path}, {"chat_template": "{{ x }}"}))


# -- describe and the command line -----------------------------------------------------------------


def test_describe_shows_special_tokens_stop_ids_and_templates():
    ref = reference("qwen3")
    description = oasr_tok.describe(_dir("qwen3"))
    data = description.to_dict()
    assert data["special_tokens"]["eos"]["id"] == ref.eos_token_id
    assert data["special_tokens"]["pad"]["piece"] == ref.pad_token
    assert "bos" not in data["special_tokens"]  # Qwen3 declares none
    assert [e["id"] for e in data["stop_ids"]] == sorted(ours("qwen3").special_tokens.stop_ids)
    assert all(e["source"] for e in data["stop_ids"])
    assert data["chat_templates"] == ["default"]
    text = description.text()
    assert "stop ids:" in text and "<|im_end|>" in text and "tokenizer_config.json eos_token" in text


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "oasr_tok", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=subprocess_env(PYTHONIOENCODING="utf-8"),
    )


def test_cli_describe_and_decode_keep_specials():
    out = _cli("describe", _dir("qwen3"))
    assert out.returncode == 0 and "special tokens:" in out.stdout and "stop ids:" in out.stdout
    ref = reference("qwen3")
    ids = ref("<|im_start|>user\n你好<|im_end|>").input_ids
    out = _cli("decode", "--keep-specials", _dir("qwen3"), *map(str, ids))
    assert out.returncode == 0 and out.stdout.rstrip("\n") == ref.decode(ids, skip_special_tokens=False)
    out = _cli("decode", _dir("qwen3"), *map(str, ids))
    assert out.stdout.rstrip("\n") == ref.decode(ids, skip_special_tokens=True)
    out = _cli("stream", "--keep-specials", _dir("qwen3"), stdin="\n".join(map(str, ids)) + "\n")
    assert out.returncode == 0 and "<|im_start|>" in out.stdout
