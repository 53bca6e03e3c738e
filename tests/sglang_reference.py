"""SGLang 0.5.23's own detokenizer, run without installing SGLang (it needs torch and CUDA
kernels to install, and nothing of them to detokenize).

fixtures/fetch_sglang.py unpacks the wheel's sources under $OASR_TOK_PEERS (or
~/.cache/oasr_tok/peers)/sglang-0.5.23; absent, a test that needs them is skipped naming that
command, and fails instead under OASR_TOK_REQUIRE_PEERS=1 (CI's peers tier).

What runs is SGLang's code, read from those files:
* sglang/srt/managers/detokenizer_manager.py, executed whole as a module: DetokenizerManager
  with its init_tokenizer, init_running_status and init_request_dispatcher run as written (only
  init_ipc_channels, the ZMQ sockets, is not called), handle_batch_token_id_out,
  _decode_batch_token_id_output, _grouped_batch_decode, trim_matched_stop, DecodeStatus,
  LimitedCapacityDict;
* the IPC records it reads and builds (io_struct.py: BaseReq, BaseBatchReq, BatchTokenIDOutput,
  BatchStrOutput, BatchEmbeddingOutput, FreezeGCReq, ConfigureLoggingReq), the finish reasons
  the scheduler sends (schedule_batch.py: BaseFinishReason, FINISH_*) and the size of the prompt
  window it sends (INIT_INCREMENTAL_DETOKENIZATION_OFFSET), taken from their files by name;
* find_printable_text, _is_chinese_char and TypeBasedDispatcher (sglang/utils.py),
  is_beam_search_batch (beam_search/output.py), decode_without_hf_kwargs (patch_tokenizer.py);
* the tokenizer: get_tokenizer (utils/hf_transformers/tokenizer.py, executed whole) with the
  helpers it calls from common.py, mistral_utils.py and gguf_native.py taken by name, so the
  HF tokenizer is the one SGLang itself loads from the same folder (transformers'
  AutoTokenizer, clean_up_tokenization_spaces=False, the TokenizersBackend retries, the v5
  decoder fix);
* the plug-in loader (plugins/__init__.py and hook_registry.py, executed whole).

What is stubbed, each never reached on the decode path, or standing for the server's defaults:
* torch, zmq, psutil, pybase64, setproctitle: empty modules (torch.Tensor, zmq.PUSH/PULL named
  in signatures and never called);
* msgspec.Struct: a keyword-only record that checks its required fields, as msgspec's does
  (the detokenizer only reads and builds these records; the wire format is not exercised);
* the runtime context (get_serving, get_model, get_device, get_observability): the
  ServerArgs defaults of 0.5.23 (tokenizer_mode "auto", tokenizer_backend "huggingface",
  skip_tokenizer_init False, disable_tokenizer_batch_decode False, tool_call_parser None,
  tokenizer_worker_num 1, no metrics), with tokenizer_path the folder under test;
* envs: SGLANG_PATCH_TOKENIZER True, SGLANG_TEST_STUCK_DETOKENIZER 0, SGLANG_PLUGINS and
  SGLANG_PLATFORM unset (environ.py's defaults);
* Watchdog, start_cpu_monitor_thread, configure_logger, freeze_gc, kill_itself_when_parent_died,
  get_zmq_socket, load_plugins (in the detokenizer module), sock_send/sock_recv,
  decode_beam_search_output, the multi-worker mixin: no-ops or placeholders;
* tool_close_token_ids: the empty set (what 0.5.23 returns without --tool-call-parser);
* for get_tokenizer: create_remote_connector (no remote URLs here), _ensure_gguf_version
  (a no-op), and MuseGlimmerConfig (gguf_native's one architecture of its own).
"""

from __future__ import annotations

import ast
import contextlib
import os
import sys
import types
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from paths import peers_root

VERSION = "0.5.23"


def files() -> Path:
    """The unpacked sources, or a skip (a failure under OASR_TOK_REQUIRE_PEERS=1)."""
    path = peers_root() / f"sglang-{VERSION}"
    if not (path / "sglang" / "srt" / "managers" / "detokenizer_manager.py").exists():
        message = f"needs SGLang {VERSION}'s detokenizer in {path}: python fixtures/fetch_sglang.py"
        if os.environ.get("OASR_TOK_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def _source(relative: str) -> str:
    return (files() / relative).read_text(encoding="utf-8")


def take(relative: str, names: Sequence[str], namespace: dict[str, Any]) -> dict[str, Any]:
    """The top-level definitions `names` of an unpacked file (functions, classes, assignments),
    executed in order in `namespace` (which provides what they use), without the rest of the
    file and its imports."""
    tree = ast.parse(_source(relative))
    wanted = set(names)
    body = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = {node.name}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found = {t.id for t in targets if isinstance(t, ast.Name)}
        else:
            continue
        if found & wanted:
            body.append(node)
            wanted -= found
    if wanted:
        raise LookupError(f"{relative} has no {sorted(wanted)}: not SGLang {VERSION}'s file")
    module = ast.Module(body=body, type_ignores=[])
    namespace.setdefault("__name__", f"sglang_reference:{relative}")
    # The files use `from __future__ import annotations`: annotations stay unevaluated.
    exec(compile(module, str(files() / relative), "exec", flags=annotations_flag()), namespace)
    return namespace


def annotations_flag() -> int:
    import __future__

    return __future__.annotations.compiler_flag


# -- the stubs ----------------------------------------------------------------------------------


class _Struct:
    """msgspec.Struct as the detokenizer uses it: keyword-only fields (the annotations along the
    class's bases), defaults from the class body, a missing required field refused."""

    _fields: tuple[str, ...] = ()
    _required: frozenset[str] = frozenset()

    def __init_subclass__(cls, **options: Any) -> None:  # tag=, kw_only=, array_like=, frozen=
        super().__init_subclass__()
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            for name in vars(klass).get("__annotations__", {}):
                if name not in names:
                    names.append(name)
        cls._fields = tuple(names)
        cls._required = frozenset(name for name in names if not hasattr(cls, name))

    def __init__(self, **values: Any) -> None:
        if not values.keys() <= set(self._fields):
            raise TypeError(f"{type(self).__name__} has no fields {sorted(values.keys() - set(self._fields))}")
        if not self._required <= values.keys():
            raise TypeError(
                f"{type(self).__name__} is missing the required fields {sorted(self._required - values.keys())}"
            )
        self.__dict__.update(values)


class _Env:
    def __init__(self, value: Any) -> None:
        self.value = value

    def get(self) -> Any:
        return self.value


class _Envs:
    """environ.py's defaults for the variables these modules read."""

    SGLANG_PATCH_TOKENIZER = _Env(True)
    SGLANG_TEST_STUCK_DETOKENIZER = _Env(0.0)
    SGLANG_PLUGINS = _Env(None)
    SGLANG_PLATFORM = _Env(None)


class _Watchdog:
    @classmethod
    def create(cls, **kwargs: Any) -> _Watchdog:
        return cls()

    @contextlib.contextmanager
    def disable(self) -> Iterator[None]:
        yield

    def feed(self) -> None:
        pass


class Serving:
    """get_serving()'s answer: the ServerArgs defaults the detokenizer reads (0.5.23's
    arg_groups/fields/serving.py), with the folder under test as tokenizer_path."""

    skip_tokenizer_init = False
    tokenizer_path: str | None = None
    tokenizer_mode = "auto"
    tokenizer_backend = "huggingface"
    tokenizer_worker_num = 1
    detokenizer_worker_num = 1
    disable_tokenizer_batch_decode = False
    tool_call_parser = None


SERVING = Serving()


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    vars(module).update(attrs)
    return module


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def _modules(stubs: dict[str, types.ModuleType]) -> Iterator[None]:
    """sys.modules holds `stubs` (and a package for each parent name) while a file executes,
    and exactly what it held before afterwards: nothing of them is seen by other tests."""
    names = set(stubs)
    for name in list(names):
        parts = name.split(".")
        names.update(".".join(parts[:k]) for k in range(1, len(parts)))
    saved = {name: sys.modules.get(name) for name in names}
    try:
        for name in names:
            module = stubs.get(name) or _module(name)
            if name not in stubs:
                module.__path__ = []  # a package, so that its children import
            sys.modules[name] = module
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _execute(relative: str, name: str, package: str, edits: Sequence[tuple[str, str]] = ()) -> types.ModuleType:
    """An unpacked file executed as a module `name` (`edits`: exact replacements made first)."""
    path = files() / relative
    source = path.read_text(encoding="utf-8")
    for old, new in edits:
        assert source.count(old) == 1, f"{relative} does not hold {old!r} once: not SGLang {VERSION}'s file"
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__package__ = package
    sys.modules[name] = module  # (a private name: dataclasses looks its module up there)
    exec(compile(source, str(path), "exec"), vars(module))
    return module


# -- SGLang's modules -----------------------------------------------------------------------------


@cache
def io_struct() -> types.ModuleType:
    """The IPC records of io_struct.py the detokenizer reads, builds and dispatches on."""
    # (their annotations stay strings: the typing names they use are not needed)
    namespace: dict[str, Any] = {
        "msgspec": _module("msgspec", Struct=_Struct),
        "msgspec_struct_pydantic_core_schema": _noop,
    }
    take(
        "sglang/srt/managers/io_struct.py",
        ["BaseReq", "BaseBatchReq", "BatchTokenIDOutput", "BatchStrOutput", "BatchEmbeddingOutput", "FreezeGCReq",
         "ConfigureLoggingReq"],
        namespace,
    )  # fmt: skip
    return _module("sglang.srt.managers.io_struct", sock_recv=_noop, sock_send=_noop, **namespace)


@cache
def scheduler_side() -> types.SimpleNamespace:
    """What the scheduler sends the detokenizer, from schedule_batch.py: the finish reasons
    (their to_json is what a BatchTokenIDOutput carries) and how many prompt ids it sends."""
    namespace = take(
        "sglang/srt/managers/schedule_batch.py",
        ["INIT_INCREMENTAL_DETOKENIZATION_OFFSET", "BaseFinishReason", "FINISH_MATCHED_TOKEN", "FINISH_MATCHED_STR",
         "FINISH_LENGTH", "FINISH_ABORT"],
        {"Union": Any, "List": Any},
    )  # fmt: skip
    return types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})


def _utils() -> types.ModuleType:
    import logging
    from collections import OrderedDict

    namespace = take(
        "sglang/utils.py",
        ["_is_chinese_char", "find_printable_text", "TypeBasedDispatcher"],
        {"OrderedDict": OrderedDict, "logging": logging},
    )
    return _module("sglang.utils", get_exception_traceback=lambda: "", **namespace)


def _patch_tokenizer() -> types.ModuleType:
    with _modules({"sglang.srt.environ": _module("sglang.srt.environ", envs=_Envs())}):
        return _execute("sglang/srt/utils/patch_tokenizer.py", "sglang_reference.patch_tokenizer", "sglang.srt.utils")


@cache
def tokenizer_module() -> types.ModuleType:
    """sglang/srt/utils/hf_transformers/tokenizer.py, executed whole: get_tokenizer as the
    server runs it."""
    import json
    import logging
    import os as _os
    import re
    import tempfile
    from functools import lru_cache
    from typing import Optional, Union

    import transformers

    logger = logging.getLogger("sglang_reference")
    is_remote_url = take("sglang/srt/utils/common.py", ["is_remote_url"], {"re": re, "Path": Path, "Union": Union})[
        "is_remote_url"
    ]
    common = _module("sglang.srt.utils.hf_transformers.common")
    common_names = take(
        "sglang/srt/utils/hf_transformers/common.py",
        ["_ADDITIONAL_STOP_TOKEN_TEXTS", "attach_additional_stop_token_ids", "check_gguf_file", "gguf_sidecar_dir",
         "_resolve_local_or_cached_file", "_cached_file_exists", "_remote_file_exists"],
        {"os": _os, "Path": Path, "Union": Union, "Optional": Optional},
    )  # fmt: skip
    vars(common).update(common_names)
    common.resolve_runai_obj_uri = lambda name: name  # (no run:ai object storage URIs here)
    mistral = _module("sglang.srt.utils.hf_transformers.mistral_utils")
    vars(mistral).update(
        take(
            "sglang/srt/utils/hf_transformers/mistral_utils.py",
            [
                "_MISTRAL_TOKENIZER_REDIRECTS",
                "is_bare_tekken_checkpoint",
                "patch_mistral_common_tokenizer",
                "retry_without_mistral_common_kwargs",
            ],
            {
                "Path": Path,
                "json": json,
                "tempfile": tempfile,
                "lru_cache": lru_cache,
                "logger": logger,
                "_cached_file_exists": common_names["_cached_file_exists"],
                "_remote_file_exists": common_names["_remote_file_exists"],
            },
        )  # fmt: skip
    )
    muse = _module(
        "sglang.srt.configs.muse_glimmer", MuseGlimmerConfig=type("MuseGlimmerConfig", (), {"from_gguf": _noop})
    )
    stubs = {
        "sglang.srt.connector": _module("sglang.srt.connector", create_remote_connector=_noop),
        "sglang.srt.utils": _module("sglang.srt.utils", is_remote_url=is_remote_url, logger=logger),
        "sglang.srt.utils.patch_tokenizer": _patch_tokenizer(),
        "sglang.srt.utils.hf_transformers_patches": _module(
            "sglang.srt.utils.hf_transformers_patches", _ensure_gguf_version=_noop
        ),
        "sglang.srt.utils.hf_transformers.common": common,
        "sglang.srt.utils.hf_transformers.mistral_utils": mistral,
        "sglang.srt.configs.muse_glimmer": muse,
        "transformers": transformers,
    }
    with _modules(stubs):
        stubs["sglang.srt.utils.hf_transformers.gguf_native"] = _execute(
            "sglang/srt/utils/hf_transformers/gguf_native.py",
            "sglang.srt.utils.hf_transformers.gguf_native",
            "sglang.srt.utils.hf_transformers",
        )
        with _modules(stubs):
            return _execute(
                "sglang/srt/utils/hf_transformers/tokenizer.py",
                "sglang_reference.tokenizer",
                "sglang.srt.utils.hf_transformers",
            )


#: Upstream's fix, after 0.5.23, of the sent offset moving back (then text already sent is sent
#: again): test/registered/unit/managers/test_detokenizer_stream_offsets.py (sgl-project/sglang
#: at 313c23cfd1d86b1779caaf5c04d194337817f197) names the patched assignment exactly.
SENT_OFFSET_CLAMP = (
    "s.sent_offset = s.decoded_text_len + len(printable)",
    "s.sent_offset = max(s.sent_offset, s.decoded_text_len + len(printable))",
)


@cache
def detokenizer_module(clamped: bool = False) -> types.ModuleType:
    """sglang/srt/managers/detokenizer_manager.py, executed whole with the stubs above;
    `clamped`: with upstream's one-line fix of the sent offset (SENT_OFFSET_CLAMP) applied."""
    io = io_struct()
    beam = take(
        "sglang/srt/beam_search/output.py", ["is_beam_search_batch"], {"BatchTokenIDOutput": io.BatchTokenIDOutput}
    )
    constants = take("sglang/srt/constants.py", ["HEALTH_CHECK_RID_PREFIX"], {})
    runtime = _module(
        "sglang.srt.runtime_context",
        get_serving=lambda: SERVING,
        get_model=lambda: types.SimpleNamespace(trust_remote_code=False, revision=None),
        get_device=lambda: types.SimpleNamespace(soft_watchdog_timeout=None),
        get_observability=lambda: types.SimpleNamespace(enable_metrics=False),
        publish=_noop,
    )
    stubs = {
        "torch": _module("torch", Tensor=type("Tensor", (), {})),
        "zmq": _module("zmq", PUSH=8, PULL=7, Context=_noop),
        "psutil": _module("psutil"),
        "pybase64": _module("pybase64"),
        "setproctitle": _module("setproctitle", setproctitle=_noop),
        "sglang.srt.beam_search.output": _module(
            "sglang.srt.beam_search.output",
            is_beam_search_batch=beam["is_beam_search_batch"],
            decode_beam_search_output=_noop,
        ),
        "sglang.srt.constants": _module("sglang.srt.constants", **constants),
        "sglang.srt.environ": _module("sglang.srt.environ", envs=_Envs()),
        "sglang.srt.managers.io_struct": io,
        "sglang.srt.managers.multi_tokenizer_mixin": _module(
            "sglang.srt.managers.multi_tokenizer_mixin",
            MultiHttpWorkerDetokenizerMixin=type("MultiHttpWorkerDetokenizerMixin", (), {}),
        ),
        "sglang.srt.observability.cpu_monitor": _module(
            "sglang.srt.observability.cpu_monitor", start_cpu_monitor_thread=_noop
        ),
        "sglang.srt.parser.response_template": _module(
            "sglang.srt.parser.response_template", tool_close_token_ids=lambda parser, tokenizer: frozenset()
        ),
        "sglang.srt.plugins": _module("sglang.srt.plugins", load_plugins=_noop),
        "sglang.srt.runtime_context": runtime,
        "sglang.srt.server_args": _module(
            "sglang.srt.server_args", PortArgs=type("PortArgs", (), {}), ServerArgs=type("ServerArgs", (), {})
        ),
        "sglang.srt.utils": _module(
            "sglang.srt.utils", configure_logger=_noop, freeze_gc=_noop, kill_itself_when_parent_died=_noop
        ),
        "sglang.srt.utils.hf_transformers_utils": _module(
            "sglang.srt.utils.hf_transformers_utils", get_tokenizer=tokenizer_module().get_tokenizer
        ),
        "sglang.srt.utils.network": _module("sglang.srt.utils.network", get_zmq_socket=_noop),
        "sglang.srt.utils.patch_tokenizer": _patch_tokenizer(),
        "sglang.srt.utils.watchdog": _module("sglang.srt.utils.watchdog", Watchdog=_Watchdog),
        "sglang.utils": _utils(),
    }
    with _modules(stubs):
        return _execute(
            "sglang/srt/managers/detokenizer_manager.py",
            "sglang_reference.detokenizer_manager" + ("_clamped" if clamped else ""),
            "sglang.srt.managers",
            [SENT_OFFSET_CLAMP] if clamped else [],
        )


@cache
def plugins_module() -> types.ModuleType:
    """sglang/srt/plugins/__init__.py (load_plugins, the entry point group) with its
    hook_registry.py, executed whole."""
    registry = _execute("sglang/srt/plugins/hook_registry.py", "sglang_reference.hook_registry", "sglang.srt.plugins")
    stubs = {
        "sglang.srt.environ": _module("sglang.srt.environ", envs=_Envs()),
        "sglang.srt.plugins.hook_registry": registry,
    }
    with _modules(stubs):
        return _execute("sglang/srt/plugins/__init__.py", "sglang_reference.plugins", "sglang.srt.plugins")


# -- what a test drives ---------------------------------------------------------------------------


@cache
def hf_tokenizer(folder: str) -> Any:
    """The tokenizer SGLang's detokenizer loads from `folder` (get_tokenizer, as
    DetokenizerManager.init_tokenizer calls it with the default server arguments)."""
    return tokenizer_module().get_tokenizer(
        folder, tokenizer_mode="auto", trust_remote_code=False, revision=None, tokenizer_backend="huggingface"
    )


def manager(folder: str, cls: type | None = None, clamped: bool = False) -> Any:
    """A DetokenizerManager for the tokenizer in `folder`, made by SGLang's own __init__ minus
    its ZMQ sockets: init_tokenizer, init_running_status, init_request_dispatcher (`clamped`:
    upstream's fix of the sent offset applied, SENT_OFFSET_CLAMP)."""
    module = detokenizer_module(clamped)
    klass = cls or module.DetokenizerManager
    made = klass.__new__(klass)
    SERVING.tokenizer_path = folder
    # init_tokenizer, with the tokenizer loaded once per folder for the whole session.
    made.tokenizer = hf_tokenizer(folder)
    try:
        made.vocab_size = len(made.tokenizer)
    except TypeError:
        made.vocab_size = getattr(made.tokenizer, "vocab_size", None)
    made.init_running_status(None)
    made.init_request_dispatcher()
    return made


def batch(
    rids: Sequence[str],
    decode_ids: Sequence[Sequence[int]],
    read_offsets: Sequence[int],
    finished_reasons: Sequence[dict[str, Any] | None],
    skip_special_tokens: Sequence[bool] | None = None,
    spaces_between_special_tokens: Sequence[bool] | None = None,
    no_stop_trim: Sequence[bool] | None = None,
) -> Any:
    """A BatchTokenIDOutput as the scheduler fills it (output_streamer.py) for a batch without
    logprobs, hidden states or multimodal data: each request's new ids as an array('i')."""
    from array import array

    n = len(rids)
    return io_struct().BatchTokenIDOutput(
        rids=list(rids),
        http_worker_ipcs=[None] * n,
        finished_reasons=list(finished_reasons),
        decoded_texts=[""] * n,
        decode_ids=[array("i", ids) for ids in decode_ids],
        read_offsets=list(read_offsets),
        output_ids=[array("i", ids) for ids in decode_ids],
        skip_special_tokens=list(skip_special_tokens or [True] * n),
        spaces_between_special_tokens=list(spaces_between_special_tokens or [True] * n),
        no_stop_trim=list(no_stop_trim or [False] * n),
        prompt_tokens=[0] * n,
        reasoning_tokens=[0] * n,
        completion_tokens=[0] * n,
        cached_tokens=[0] * n,
        input_token_logprobs_val=None,
        input_token_logprobs_idx=None,
        output_token_logprobs_val=None,
        output_token_logprobs_idx=None,
        input_top_logprobs_val=None,
        input_top_logprobs_idx=None,
        output_top_logprobs_val=None,
        output_top_logprobs_idx=None,
        input_token_ids_logprobs_val=None,
        input_token_ids_logprobs_idx=None,
        output_token_ids_logprobs_val=None,
        output_token_ids_logprobs_idx=None,
        output_token_entropy_val=None,
        output_token_sampling_mask=None,
        output_hidden_states=None,
        routed_experts=None,
        indexer_topk=None,
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
    )


# -- what the scheduler sends -----------------------------------------------------------------------

#: How many output ids a request that is not streamed sends at a time (output_streamer.py's
#: DEFAULT_FORCE_STREAM_INTERVAL in 0.5.23), besides its last batch.
FORCE_STREAM_INTERVAL = 50


def scheduler_batches(workload: Sequence[dict[str, Any]], hf: Any) -> list[Any]:
    """The BatchTokenIDOutputs SGLang's scheduler sends for `workload` (strategies.sglang_workloads):
    the texts encoded by SGLang's tokenizer, a request's first batch carrying the prompt's last
    INIT_INCREMENTAL_DETOKENIZATION_OFFSET ids before its output ids with read_offset their count
    (Req.init_incremental_detokenize), later batches its new ids only (with the same read
    offset), the finish reason's to_json in its last batch (the stop token last among its ids; a
    stop string's request cut at the first token whose text holds it, as Req.check_finished
    decodes it), requests joining and leaving at their own steps."""
    side = scheduler_side()
    window = side.INIT_INCREMENTAL_DETOKENIZATION_OFFSET
    specials = sorted(hf.all_special_ids) or [0]
    plans = []
    for req in workload:
        prompt = hf.encode(req["prompt"], add_special_tokens=False)[-window:]
        out = hf.encode(req["output"], add_special_tokens=False) or [specials[0]]
        reason = side.FINISH_LENGTH(len(out)).to_json()
        if req["finish"] == "token":
            token = {"eos": hf.eos_token_id, "special": specials[len(out) % len(specials)], "last": out[-1]}
            matched = token[req["stop_token"]]
            matched = specials[0] if matched is None else matched
            out = [*out, matched]
            reason = side.FINISH_MATCHED_TOKEN(matched).to_json()
        elif req["finish"] == "string":
            text = hf.decode(out)
            at = min(int(req["stop_at"] * len(text)), max(len(text) - 1, 0))
            stop = text[at : at + req["stop_size"]] or "\n"
            for k in range(1, len(out) + 1):
                if stop in hf.decode(out[:k]):
                    out = out[:k]
                    break
            reason = side.FINISH_MATCHED_STR(stop).to_json()
        elif req["finish"] == "abort":
            reason = side.FINISH_ABORT().to_json()
        chunks, k, turn = [], 0, 0
        while k < len(out):
            width = req["width"]
            if width == "few":
                width = req["widths"][turn % len(req["widths"])]
            elif width == "not streamed":
                width = FORCE_STREAM_INTERVAL
            chunks.append(out[k : k + width])
            k, turn = k + width, turn + 1
        plans.append((req, prompt, chunks, reason))
    batches = []
    step = 0
    live: list[list[Any]] = []
    pending = sorted(plans, key=lambda plan: plan[0]["start"])
    while pending or live:
        while pending and pending[0][0]["start"] <= step:
            live.append([*pending.pop(0), 0])
        if live:
            rows: dict[str, list[Any]] = {name: [] for name in ("rids", "ids", "read", "finished", "skip", "keep")}
            for entry in list(live):
                req, prompt, chunks, reason, at = entry
                rows["rids"].append(req["rid"])
                rows["ids"].append((prompt if at == 0 else []) + chunks[at])
                rows["read"].append(len(prompt))
                done = at + 1 == len(chunks)
                rows["finished"].append(reason if done else None)
                rows["skip"].append(req["skip_special_tokens"])
                rows["keep"].append(req["no_stop_trim"])
                entry[-1] += 1
                if done:
                    live.remove(entry)
            batches.append(
                batch(rows["rids"], rows["ids"], rows["read"], rows["finished"], rows["skip"], None, rows["keep"])
            )
        step += 1
    return batches
