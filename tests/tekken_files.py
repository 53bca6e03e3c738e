"""The tekken files the tests use: the two mistral-common ships in its data/ folder (both old
files without `special_tokens`, so they get mistral-common's built-in twenty), and one derived
from them in the newer layout (version v11, `special_tokens` listed with Voxtral's audio
tokens, fewer special ids, the vocabulary cut shorter than the list), written once per test
session into a temporary folder and read by mistral-common as well."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import tempfile

SHIPPED = ("tekken_240718.json", "tekken_240911.json")

#: The special tokens of the derived file, in rank order (names as Voxtral's tekken.json has them).
LISTED_SPECIALS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
    "[ARGS]",
    "[CALL_ID]",
    "[AUDIO]",
    "[BEGIN_AUDIO]",
    "[TRANSCRIBE]",
)
DERIVED_SPECIALS = 64  # default_num_special_tokens: ids 25 ... 63 are fillers
DERIVED_RANKS = 6000  # ranks in use; the file lists 7000


def shipped(name: str) -> str:
    import mistral_common

    path = os.path.join(os.path.dirname(mistral_common.__file__), "data", name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mistral-common no longer ships {path}")
    return path


@functools.cache
def _folder() -> str:
    folder = tempfile.mkdtemp(prefix="oasr_tok_tekken_")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_derived(folder: str, **changes) -> str:
    """A tekken.json in `folder` in the listed-specials layout, built from the first ranks of
    tekken_240911.json; `changes` replace top-level keys (for the malformed-file tests)."""
    with open(shipped("tekken_240911.json"), encoding="utf-8") as handle:
        source = json.load(handle)
    data = {
        "config": {
            **source["config"],
            "version": "v11",
            "default_num_special_tokens": DERIVED_SPECIALS,
            "default_vocab_size": DERIVED_SPECIALS + DERIVED_RANKS,
            "num_vocab_tokens": DERIVED_RANKS + 1000,
        },
        "vocab": source["vocab"][: DERIVED_RANKS + 1000],
        "special_tokens": [
            {"rank": rank, "token_str": name, "is_control": name not in ("[ARGS]", "[CALL_ID]")}
            for rank, name in enumerate(LISTED_SPECIALS)
        ],
        **changes,
    }
    path = os.path.join(folder, "tekken.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    return path


@functools.cache
def derived() -> str:
    folder = os.path.join(_folder(), "derived")
    os.makedirs(folder, exist_ok=True)
    return write_derived(folder)


def path_of(name: str) -> str:
    return derived() if name == "derived" else shipped(name)


@functools.cache
def reference(name: str):
    """mistral-common's Tekkenizer for the file (the oracle)."""
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    return Tekkenizer.from_file(path_of(name))
