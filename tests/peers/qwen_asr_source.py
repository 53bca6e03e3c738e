"""qwen-asr's own streaming loop, loaded by file path from the modules fixtures/fetch_qwen_asr.py
unpacks (qwen-asr 0.0.6, never installed: it pulls torch, librosa and a model).

Qwen3ASRModel (qwen_asr/inference/qwen3_asr.py) is built by its own __init__ with the vLLM
backend, and its init_streaming_state, streaming_transcribe and finish_streaming_transcribe run
unchanged, with parse_asr_output and the language names of its utils.py. Stand-ins, for what is
not about text only:

* the model: `generate` records the prompt it is given and answers with the text the test
  scripted for that chunk (what vLLM's detokenizer would give: the decode of the generated ids,
  special tokens skipped);
* the audio: silence, exactly one chunk of samples per streaming_transcribe call;
* the processor's chat template: a fixed Qwen3-ASR prompt (the prefix is what follows it);
* the imports that load a model or read audio (torch, librosa, soundfile, the transformers
  model classes, the forced aligner).
"""

from __future__ import annotations

import types
from functools import cache
from typing import Any

import numpy as np

from peer_files import load_modules, qwen_asr

_PACKAGE = "qwen_asr.inference"
PROMPT = (
    "<|im_start|>system\n<|im_end|>\n<|im_start|>user\n<|audio_start|><|audio_pad|><|audio_end|><|im_end|>\n"
    "<|im_start|>assistant\n"
)
CHUNK_SECONDS = 0.001  # 16 samples at 16 kHz: one streaming_transcribe call of 16 samples is one chunk


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


class _Registry:
    @staticmethod
    def register(*args: Any, **kwargs: Any) -> None:
        pass


@cache
def qwen_asr_modules() -> dict[str, Any]:
    """{"Qwen3ASRModel", "ASRStreamingState", "parse_asr_output"}: qwen-asr's own."""
    folder = qwen_asr()
    stand_ins = {
        # (torch.no_grad decorates the transformers backend's methods, never called here)
        "torch": _module("torch", no_grad=lambda: lambda function: function),
        "librosa": _module("librosa"),
        "soundfile": _module("soundfile"),
        "transformers": _module("transformers", AutoConfig=_Registry, AutoModel=_Registry, AutoProcessor=_Registry),
        "qwen_asr": _module("qwen_asr", __path__=[]),
        "qwen_asr.core": _module("qwen_asr.core", __path__=[]),
        "qwen_asr.core.transformers_backend": _module(
            "qwen_asr.core.transformers_backend",
            Qwen3ASRConfig=type("Qwen3ASRConfig", (), {}),
            Qwen3ASRForConditionalGeneration=type("Qwen3ASRForConditionalGeneration", (), {}),
            Qwen3ASRProcessor=type("Qwen3ASRProcessor", (), {}),
        ),
        _PACKAGE: _module(_PACKAGE, __path__=[str(folder)]),
        f"{_PACKAGE}.qwen3_forced_aligner": _module(
            f"{_PACKAGE}.qwen3_forced_aligner", Qwen3ForcedAligner=type("Qwen3ForcedAligner", (), {})
        ),
    }
    loaded = load_modules(_PACKAGE, folder, ("utils", "qwen3_asr"), stand_ins)
    return {
        "Qwen3ASRModel": loaded["qwen3_asr"].Qwen3ASRModel,
        "ASRStreamingState": loaded["qwen3_asr"].ASRStreamingState,
        "parse_asr_output": loaded["utils"].parse_asr_output,
    }


class _ScriptedModel:
    """The model's stand-in: keeps the last prompt, answers with the scripted text."""

    def __init__(self) -> None:
        self.answer = ""
        self.prompt = ""
        self.calls = 0

    def generate(self, inputs: list[dict[str, Any]], sampling_params: Any = None, use_tqdm: bool = False) -> Any:
        self.prompt = inputs[0]["prompt"]
        self.calls += 1
        completion = types.SimpleNamespace(text=self.answer)
        return [types.SimpleNamespace(outputs=[completion])]


class _Processor:
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def apply_chat_template(self, messages: Any, add_generation_prompt: bool = True, tokenize: bool = False) -> str:
        return PROMPT


class QwenAsrStreaming:
    """One stream of qwen-asr's streaming loop over `tokenizer` (a transformers tokenizer, what
    qwen-asr's processor holds): chunk(text) runs streaming_transcribe on one chunk of audio
    whose answer is `text` and returns the prefix qwen-asr prompted that chunk with."""

    def __init__(self, tokenizer: Any, unfixed_chunk_num: int = 2, unfixed_token_num: int = 5) -> None:
        modules = qwen_asr_modules()
        self.model = _ScriptedModel()
        self.asr = modules["Qwen3ASRModel"](backend="vllm", model=self.model, processor=_Processor(tokenizer))
        self.state = self.asr.init_streaming_state(
            unfixed_chunk_num=unfixed_chunk_num, unfixed_token_num=unfixed_token_num, chunk_size_sec=CHUNK_SECONDS
        )
        self.samples = self.state.chunk_size_samples

    def _prefix(self) -> str:
        prompt = self.model.prompt
        assert prompt.startswith(self.state.prompt_raw)
        return prompt[len(self.state.prompt_raw) :]

    def chunk(self, text: str) -> str:
        """streaming_transcribe on one chunk; the model answers `text`. The prefix it prompted with."""
        self.model.answer = text
        before = self.model.calls
        self.asr.streaming_transcribe(np.zeros(self.samples, dtype=np.float32), self.state)
        assert self.model.calls == before + 1, "one chunk of audio is one prompt"
        return self._prefix()

    def finish(self, text: str) -> str:
        """A last, short piece of audio through finish_streaming_transcribe; the model answers
        `text`. The prefix it prompted with (its own rule: no widening)."""
        self.model.answer = text
        self.asr.streaming_transcribe(np.zeros(self.samples // 2, dtype=np.float32), self.state)
        self.asr.finish_streaming_transcribe(self.state)
        return self._prefix()

    @property
    def raw(self) -> str:
        return str(self.state._raw_decoded)
