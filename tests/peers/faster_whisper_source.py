"""faster-whisper's own WhisperModel, loaded by file path from the modules
fixtures/fetch_faster_whisper.py unpacks (faster-whisper 1.2.1, never installed: it pulls
ctranslate2, onnxruntime and PyAV), with a scripted decoder in place of the model.

What runs is faster-whisper's: WhisperModel.__init__ (on the real faster-whisper-base
tokenizer.json), generate_segments (the window loop, seek arithmetic, the segments it keeps and
their ids), generate_with_fallback (avg_logprob recovered from the decoder's score,
compression_ratio of the window's text), _split_segments_by_timestamps, get_prompt,
get_compression_ratio, and faster_whisper/tokenizer.py's Tokenizer over the real `tokenizers`
runtime; FeatureExtractor is its own too (numpy only).

The stand-ins, for the imports that run a model or read audio:

* ``ctranslate2``: ``StorageView.from_array`` hands the array through; ``models.Whisper`` is
  `ScriptedWhisper`, whose ``encode`` returns the window's first frame index (the test's
  features hold each frame's index, so the decoder learns which window it is at, as the real
  encoder output would be of that window's audio) and whose ``generate`` answers with what
  the test scripts for that window: the sampled ids (no end-of-text, as ctranslate2 returns
  them), ``scores[0]`` = the sum of the log-probabilities of the sampled ids and the
  end-of-text over ``len(ids) ** length_penalty`` (ctranslate2's length-normalised score,
  which faster-whisper multiplies back), and ``no_speech_prob``;
* ``faster_whisper.audio`` (PyAV): ``pad_or_trim`` hands the window through (the scripted
  encoder reads only its first frame);
* ``faster_whisper.vad`` (onnxruntime): names only, unused by generate_segments;
* ``faster_whisper.utils`` (huggingface_hub): ``get_logger`` as faster-whisper's, the rest
  unused here;
* ``tqdm``: a progress bar that draws nothing.
"""

from __future__ import annotations

import logging
import math
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from peer_files import faster_whisper, load_modules

_PACKAGE = "faster_whisper"


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def _unused(name: str) -> Callable[..., Any]:
    def unused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"faster-whisper called {name}, which the stand-in does not provide")

    return unused


@dataclass
class Window:
    """What the scripted decoder answers for one window (seek and size: where faster-whisper's
    loop put it)."""

    seek: int
    size: int
    prompt: list[int]
    ids: list[int]  # sampled, no end-of-text
    logprobs: list[float]  # one per sampled id, then the end-of-text's
    no_speech_prob: float
    temperature: float


@dataclass
class _Result:
    sequences_ids: list[list[int]]
    scores: list[float]
    no_speech_prob: float


class ScriptedWhisper:
    """ctranslate2.models.Whisper's place: `script(seek, size, prompt)` gives a window's
    (ids, logprobs, no_speech_prob); every window decoded is recorded in `windows`."""

    script: Callable[[int, int, list[int]], tuple[list[int], list[float], float]]
    content_frames: int

    def __init__(self, model_path: str, **kwargs: Any) -> None:
        self.device = "cpu"
        self.device_index = [0]
        self.is_multilingual = True
        self.windows: list[Window] = []

    def encode(self, features: Any, to_cpu: bool = False) -> int:
        return int(features[0, 0, 0])

    def generate(self, encoder_output: int, prompts: list[list[int]], **kwargs: Any) -> list[_Result]:
        seek = encoder_output
        size = min(3000, self.content_frames - seek)
        ids, logprobs, no_speech_prob = self.script(seek, size, prompts[0])
        penalty = kwargs["length_penalty"]
        score = math.fsum(logprobs) / (len(ids) ** penalty)
        temperature = kwargs.get("sampling_temperature", 0.0)
        self.windows.append(Window(seek, size, list(prompts[0]), ids, logprobs, no_speech_prob, temperature))
        return [_Result([ids], [score], no_speech_prob)]


class _Bar:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def update(self, n: float) -> None:
        pass

    def close(self) -> None:
        pass


@cache
def faster_whisper_modules() -> dict[str, Any]:
    """{"transcribe": faster_whisper.transcribe, "tokenizer": faster_whisper.tokenizer,
    "feature_extractor": ...}, loaded once with the stand-ins above."""
    folder = faster_whisper()
    stand_ins = {
        "ctranslate2": _module(
            "ctranslate2",
            StorageView=type("StorageView", (), {"from_array": staticmethod(lambda array: array)}),
            models=_module(
                "ctranslate2.models",
                Whisper=ScriptedWhisper,
                WhisperGenerationResult=_Result,
            ),
        ),
        "tqdm": _module("tqdm", tqdm=_Bar),
        _PACKAGE: _module(_PACKAGE, __path__=[str(folder)]),
        f"{_PACKAGE}.audio": _module(
            f"{_PACKAGE}.audio", decode_audio=_unused("decode_audio"), pad_or_trim=lambda array: array
        ),
        f"{_PACKAGE}.utils": _module(
            f"{_PACKAGE}.utils",
            download_model=_unused("download_model"),
            format_timestamp=_unused("format_timestamp"),
            get_end=_unused("get_end"),
            get_logger=lambda: logging.getLogger("faster_whisper"),
        ),
        f"{_PACKAGE}.vad": _module(
            f"{_PACKAGE}.vad",
            SpeechTimestampsMap=object,
            VadOptions=object,
            collect_chunks=_unused("collect_chunks"),
            get_speech_timestamps=_unused("get_speech_timestamps"),
        ),
    }
    return load_modules(_PACKAGE, folder, ("feature_extractor", "tokenizer", "transcribe"), stand_ins)
