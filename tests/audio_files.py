"""Speech-LLM checkpoint folders whose generations interleave text and audio-codec ids, made by
the tests in a temporary folder from real files (never committed):

* `kimi_folder`: Kimi-Audio's layout on Llama 3's ranks (llama-models' tokenizer.model): a
  tiktoken.model, a tokenizer_config.json with Kimi-Audio's 421 special tokens after the ranks
  in added_tokens_decoder (its own order: kimia_infer's used special tokens, then
  <|reserved_token_20|> ...; laid as its tokenizer lays them, num_base_tokens + i), and a
  config.json whose kimia_token_offset / kimia_audio_output_vocab declare the audio ids past
  the text vocabulary.
* `step_audio_folder`: Step-Audio 2's layout on Qwen3's tokenizer.json (../shared/fixtures):
  <tts_start>, <tts_end>, <tts_pad> (special), then <audio_0> ... <audio_6561> (6,561 codes
  and the audio pad, added as ordinary tokens: the kind would print them as text), the ids vLLM's
  StepAudio2Tokenizer tells apart as `id >= <audio_0>'s id`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from oasr_tok import Tokenizer, TokenizerSpec, build_tokenizer, resolve

from cases.tiktoken import meta_file
from kimi_audio_reference import KIMI_AUDIO_PATTERN
from paths import shared

#: Kimi-Audio's special tokens in its own order (kimia_infer's _KIMIA_USED_SPECIAL_TOKENS, then
#: <|reserved_token_20|> ... up to 421 of them).
KIMI_USED = (
    "[BOS]", "[EOS]", "<|im_msg_end|>", "<|im_user_msg_start|>", "<|im_assistant_msg_start|>",
    *(f"<|reserved_token_{i}|>" for i in range(4)), "[EOT]", *(f"<|reserved_token_{i}|>" for i in range(4, 12)),
    "<|im_media_begin|>", "<|reserved_token_12|>", "<|im_media_end|>", "<|reserved_token_13|>",
    "<|reserved_token_14|>", "<|im_kimia_text_blank|>", "<|im_kimia_text_eos|>", "<|reserved_token_15|>",
    "<|reserved_token_16|>", "<|im_kimia_user_msg_start|>", "<|im_kimia_assistant_msg_start|>",
    *(f"<|reserved_token_{i}|>" for i in range(17, 20)), "<|im_kimia_speech_ct_id|>", "<|im_kimia_speech_ctd_id|>",
)  # fmt: skip
KIMI_SPECIALS = KIMI_USED + tuple(f"<|reserved_token_{i}|>" for i in range(20, 421 - len(KIMI_USED) + 20))
#: Kimi-Audio's config.json: its audio codes start past the text vocabulary (ranks + 421 specials)
AUDIO_OFFSET = 128000 + 421
AUDIO_CODES = 16896
#: Step-Audio 2's audio codes (<audio_6561> is its audio pad: an audio id too)
STEP_AUDIO_CODES = 6562


def kimi_folder(tmp_path: Path) -> Path:
    """The Kimi-Audio-style folder (module docstring), made once under `tmp_path`."""
    folder = tmp_path / "kimi"
    if folder.is_dir():
        return folder
    folder.mkdir()
    shutil.copy(meta_file("llama3"), folder / "tiktoken.model")
    decoder = {
        str(128000 + k): {"content": text, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                          "special": True}
        for k, text in enumerate(KIMI_SPECIALS)
    }  # fmt: skip
    config = {
        "added_tokens_decoder": decoder,
        "bos_token": "[BOS]",
        "eos_token": "[EOS]",
        "chat_template": "{% for m in messages %}<|im_kimia_user_msg_start|>{{ m['content'] }}<|im_msg_end|>{% endfor %}",
        "tokenizer_class": "TikTokenTokenizer",
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "config.json").write_text(
        json.dumps({"kimia_token_offset": AUDIO_OFFSET, "kimia_audio_output_vocab": AUDIO_CODES}), encoding="utf-8"
    )
    return folder


def kimi_tokenizer(tmp_path: Path) -> Tokenizer:
    """The Kimi-Audio-style folder loaded as a user would: resolved from the folder, with the split
    pattern Kimi's files do not carry (its tokenizer code does) given as vLLM's kimi_audio gives it."""
    spec = resolve(kimi_folder(tmp_path))
    return build_tokenizer(TokenizerSpec(spec.kind, spec.files, {**spec.options, "pattern": KIMI_AUDIO_PATTERN}))


def step_audio_folder(tmp_path: Path) -> Path:
    """The Step-Audio 2-style folder (module docstring), made once under `tmp_path`."""
    from tokenizers import AddedToken, Tokenizer

    folder = tmp_path / "step_audio_2"
    if folder.is_dir():
        return folder
    folder.mkdir()
    source = shared("huggingface/qwen3/tokenizer.json")
    with open(source, "rb"):  # (tokenizers' own error for a missing file names no file: this one does)
        pass
    runtime = Tokenizer.from_file(source)
    runtime.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in ("<tts_start>", "<tts_end>", "<tts_pad>")]
    )
    runtime.add_tokens([AddedToken(f"<audio_{i}>", special=False, normalized=False) for i in range(STEP_AUDIO_CODES)])
    runtime.save(str(folder / "tokenizer.json"))
    return folder
