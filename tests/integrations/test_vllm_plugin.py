"""The vLLM plug-in: the entry point vLLM loads in each of its processes, what it does (register
the mode, nothing else), what `import oasr_tok` does not do (import vLLM or this room), and the
loud failure where a vLLM lacks what oasr_tok patches. The first three need no vLLM."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from paths import PACKAGE_PARENT, subprocess_env
from vllm_reference import require_vllm


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=PACKAGE_PARENT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_oasr_tok_imports_neither_vllm_nor_integrations():
    loaded = json.loads(_fresh("import json, sys, oasr_tok; oasr_tok.load; print(json.dumps(sorted(sys.modules)))"))
    assert not [m for m in loaded if m == "vllm" or m.startswith("vllm.")]
    assert not [m for m in loaded if m.startswith("oasr_tok.integrations")]


def test_the_plugin_module_imports_no_vllm_and_no_kind():
    """What vLLM imports in every process to find the entry point: the package face and
    plugin.py, no vLLM module and no oasr_tok kind (the mode's class is imported by name, later)."""
    loaded = json.loads(
        _fresh("import json, sys, oasr_tok.integrations.vllm as v; v.register; print(json.dumps(sorted(sys.modules)))")
    )
    assert not [m for m in loaded if m == "vllm" or m.startswith("vllm.")]
    assert not [m for m in loaded if m.startswith("oasr_tok.kinds.") and m != "oasr_tok.kinds"]
    assert "oasr_tok.integrations.vllm.tokenizer" not in loaded


def test_the_entry_point_is_the_distributions():
    found = [ep for ep in entry_points(group="vllm.general_plugins") if ep.name == "oasr_tok"]
    assert [ep.value for ep in found] == ["oasr_tok.integrations.vllm:register"]
    assert found[0].dist is not None and found[0].dist.name == "oasr_tok"


def test_vllms_plugin_loading_registers_the_mode_and_patches_nothing():
    """vLLM's own load_general_plugins in a fresh process: mode "oasr" is registered, vLLM's
    output step is untouched until a mode-"oasr" tokenizer is loaded, no kind is imported."""
    require_vllm()
    out = json.loads(
        _fresh(
            "import json, sys\n"
            "from vllm.plugins import load_general_plugins\n"
            "load_general_plugins()\n"
            "from vllm.tokenizers.registry import TokenizerRegistry\n"
            "from vllm.v1.engine.output_processor import OutputProcessor\n"
            "from vllm.v1.engine.detokenizer import IncrementalDetokenizer\n"
            "print(json.dumps({'mode': TokenizerRegistry.tokenizers.get('oasr'),\n"
            "  'patched': [hasattr(OutputProcessor.process_outputs, '_oasr_tok'),\n"
            "              hasattr(IncrementalDetokenizer.from_new_request, '_oasr_tok')],\n"
            "  'kinds': [m for m in sys.modules if m.startswith('oasr_tok.kinds.')]}))"
        ).splitlines()[-1]
    )
    assert out == {
        "mode": ["oasr_tok.integrations.vllm.tokenizer", "OasrTokenizer"],
        "patched": [False, False],
        "kinds": [],
    }


@pytest.mark.parametrize(
    "module, owner, attribute",
    [
        ("vllm.v1.engine.output_processor", "OutputProcessor", "process_outputs"),
        ("vllm.v1.engine.detokenizer", "IncrementalDetokenizer", "from_new_request"),
        ("vllm.v1.engine.logprobs", "LogprobsProcessor", "from_new_request"),
        ("vllm.v1.engine.detokenizer", "BaseIncrementalDetokenizer", "decode_next"),
    ],
)
def test_a_vllm_without_the_patched_attribute_is_named(monkeypatch, module, owner, attribute):
    """Simulated by taking the attribute away: install() raises IntegrationError naming the
    vLLM version and the attribute, and patches nothing."""
    vllm = require_vllm()
    import importlib

    from oasr_tok.errors import IntegrationError
    from oasr_tok.integrations.vllm import patches

    patches.uninstall()
    try:
        monkeypatch.delattr(getattr(importlib.import_module(module), owner), attribute)
        with pytest.raises(IntegrationError, match=f"vLLM {vllm.__version__}.*{owner}.{attribute}"):
            patches.install()
        assert not patches.installed()
        from vllm.v1.engine.output_processor import OutputProcessor

        assert not hasattr(getattr(OutputProcessor, "process_outputs", None), "_oasr_tok")
    finally:
        monkeypatch.undo()
        patches.install()


def test_a_changed_signature_is_named(monkeypatch):
    vllm = require_vllm()
    from vllm.v1.engine.output_processor import OutputProcessor

    from oasr_tok.errors import IntegrationError
    from oasr_tok.integrations.vllm import patches

    patches.uninstall()
    try:
        monkeypatch.setattr(OutputProcessor, "process_outputs", lambda self, outputs, stamp=None: None)
        with pytest.raises(IntegrationError, match=f"vLLM {vllm.__version__}.*process_outputs.*takes \\(outputs\\)"):
            patches.install()
        assert not patches.installed()
    finally:
        monkeypatch.undo()
        patches.install()


def test_loading_the_mode_fails_loudly_on_such_a_vllm(monkeypatch):
    """get_tokenizer(..., tokenizer_mode="oasr") itself raises: no tokenizer that would then be
    detokenized by vLLM's slow path without anyone knowing."""
    require_vllm()
    from vllm.v1.engine.logprobs import LogprobsProcessor

    from oasr_tok.errors import IntegrationError
    from oasr_tok.integrations.vllm import patches
    from oasr_tok.integrations.vllm.tokenizer import OasrTokenizer

    from paths import shared

    patches.uninstall()
    try:
        monkeypatch.delattr(LogprobsProcessor, "_verify_tokens")
        monkeypatch.delattr(LogprobsProcessor, "_correct_decoded_token")
        with pytest.raises(IntegrationError, match="_correct_decoded_token"):
            OasrTokenizer.from_pretrained(shared("huggingface/qwen3"))
    finally:
        monkeypatch.undo()
        patches.install()
