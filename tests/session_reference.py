"""What a re-decoding session (tok.new_session) is checked against, for tests/engine/test_session.py,
tests/peers/test_qwen_asr_streaming.py and benchmarks/test_session.py.

* `qwen_asr_prefix`: the re-prompt prefix qwen-asr 0.0.6 prompts a chunk with, its lines
  transcribed from qwen_asr/inference/qwen3_asr.py (Qwen3ASRModel.streaming_transcribe, "Build
  prefix with rollback strategy"; finish_streaming_transcribe when `final`), over the
  transformers tokenizer of the same files, as qwen-asr's processor holds it.
  tests/peers/test_qwen_asr_streaming.py runs the package's own code on the same scripts.
* `qwen3_asr_files`: the Qwen3 tokenizer files with Qwen3-ASR's header tag `<asr_text>` added
  as the non-special added token Qwen3-ASR's tokenizer_config.json declares (id 151704 there;
  here the next free id, 151669), written into a folder of the test run, never committed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paths import shared

QWEN3 = "huggingface/qwen3"


def qwen_asr_prefix(hf: Any, raw: str, k: int, final: bool = False) -> tuple[int, str]:
    """(how many tokens of encode(raw) the prefix keeps, the prefix), as qwen-asr computes it
    for a chunk after the unfixed ones (k: state.unfixed_token_num)."""
    cur_ids = hf.encode(raw)
    if final:
        end_idx = max(1, len(cur_ids) - int(k))
        return len(cur_ids[:end_idx]), hf.decode(cur_ids[:end_idx])
    while True:
        end_idx = max(0, len(cur_ids) - k)
        prefix = hf.decode(cur_ids[:end_idx]) if end_idx > 0 else ""
        if "\ufffd" not in prefix:
            break
        else:
            if end_idx == 0:
                prefix = ""
                break
            k += 1
    return end_idx, prefix


def qwen3_asr_files(folder: Path) -> Path:
    """The Qwen3 files with `<asr_text>` added (not special, not normalised, as Qwen3-ASR's), in
    `folder`; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = json.loads(Path(shared(f"{QWEN3}/tokenizer.json")).read_text(encoding="utf-8"))
    config = json.loads(Path(shared(f"{QWEN3}/tokenizer_config.json")).read_text(encoding="utf-8"))
    new_id = 1 + max(token["id"] for token in tokenizer["added_tokens"])
    entry = {"content": "<asr_text>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    tokenizer["added_tokens"].append({"id": new_id, **entry, "special": False})
    config["added_tokens_decoder"][str(new_id)] = {**entry, "special": False}
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return folder
