"""The import paths of modules that moved into the package's rooms (0.3): `import
oasr_tok.subtitles` or `from oasr_tok.nemo import ...` keep working and give the very module
object that now lives at the new path (so a class, a monkeypatch or a pickle made under the old
name is the same thing), with a DeprecationWarning naming the new path and the release that
removes the old one (REMOVED_IN; once per process and path, pointing at the import). A finder
on the end of sys.meta_path answers only for these names, after every standard finder has
missed, so it costs nothing to any other import.

Private modules (a leading underscore; the compiled engine) moved without an alias.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: The release that removes the old paths (and the other 0.2 forms kept with a DeprecationWarning:
#: an entry point naming a bare factory, core/registry.py): 0.3 warns, 0.4 still warns, 0.5 drops.
REMOVED_IN = "0.5.0"

#: old path -> new path, both under oasr_tok.
MOVED = {
    "serving": "_engine.serving",
    "envelopes": "outputs.envelopes",
    "segments": "outputs.segments",
    "subtitles": "outputs.subtitles",
    "archive": "files.archive",
    "assets": "files.assets",
    "detection": "files.detection",
    "tokenizer": "core.tokenizer",
    "contract": "core.contract",
    "streaming": "core.streaming",
    "prompting": "core.prompting",
    "specials": "core.specials",
    "chat": "core.chat",
    "words": "core.words",
    "pickling": "core.pickling",
    "revisions": "core.revisions",
    "registry": "core.registry",
    "resolution": "loading.resolution",
    "build": "loading.build",
    "description": "loading.description",
    "nemo_archive": "loading.nemo_archive",
    "detokenizer": "toolkits.detokenizer",
    "nemo": "toolkits.nemo",
    "hf_ctc": "toolkits.hf_ctc",
    "hotwords": "toolkits.hotwords",
    "batch": "toolkits.batch",
}
_PREFIX = "oasr_tok."


class MovedModuleFinder:
    """Finds `oasr_tok.<old>` and loads it as the module at `oasr_tok.<new>`: importlib's finder
    and loader protocols, without its ABCs (importing importlib.abc cost every `import oasr_tok`
    more than the rest of this module: benchmarks/measurements.md)."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if not fullname.startswith(_PREFIX) or fullname[len(_PREFIX) :] not in MOVED:
            return None
        return ModuleSpec(fullname, cast("Loader", self))  # the protocol, not the ABC (above)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = _PREFIX + MOVED[spec.name[len(_PREFIX) :]]
        # stacklevel 2: the warnings module skips the import system's own frames, so the warning
        # points at the user's import statement.
        warnings.warn(
            f"{spec.name} is deprecated and goes in oasr_tok {REMOVED_IN}: import {new} (the same module)",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the alias's: restored below
        return module

    def exec_module(self, module: ModuleType) -> None:
        alias = module.__spec__
        if alias is not None and alias.loader_state is not None:
            module.__spec__ = alias.loader_state


def install() -> None:
    """Put the finder at the end of sys.meta_path (once)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
