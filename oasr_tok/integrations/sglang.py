"""oasr_tok in SGLang's detokenizer: one Stream per request and one batch call per step, in place
of the two windowed re-decodes SGLang makes per request per step (docs/engines.md § SGLang).

SGLang 0.5.23 detokenizes in a process of its own (sglang/srt/managers/detokenizer_manager.py):
the scheduler sends each step's new ids as a ``BatchTokenIDOutput`` and
``DetokenizerManager._decode_batch_token_id_output`` turns them into the ``output_strs`` of a
``BatchStrOutput``. Per request it keeps a ``DecodeStatus`` (the ids so far, a surrounding and
a read offset) and decodes two windows of ids every step (``batch_decode`` of the surrounding
window and of the read window, grouped by ``skip_special_tokens`` /
``spaces_between_special_tokens``), sends ``read_text[len(surr_text):]`` unless it ends in
U+FFFD (then only ``find_printable_text`` of it), trims the matched stop string or stop token
when the request finishes, and keeps the states in a ``LimitedCapacityDict``
(``SGLANG_DETOKENIZER_MAX_STATES``) whose evictions raise when the request comes back.

This module replaces that one method and nothing else. ``RequestStreams`` keeps one of our
Streams per request id (primed with the prompt ids the scheduler sends first), steps them all in
one compiled pass per batch (``oasr_tok._engine.sglang_step``: each request looked up once, new
and finishing ones handled in the same pass, one call of the batch engine for every stream, the
send rule below in C), and gives out what SGLang gives out:

* SGLang's rule for what to send: new text is committed when it is not empty and does not end
  in U+FFFD; otherwise only ``find_printable_text`` of it goes out (SGLang's own function, read
  from the module it replaces) and the rest waits;
* SGLang's stop handling at finish: the stop token is not rendered and the stop string is cut,
  both by the manager's own ``trim_matched_stop``; ``no_stop_trim`` honoured;
* ``skip_special_tokens`` per request (a request that keeps them is streamed by
  ``tok.with_specials()``); ``spaces_between_special_tokens`` changes nothing for the fast
  tokenizers SGLang loads, and ``install`` checks that it changes nothing for the one in use;
* several ids per step, requests that start and finish in one batch (a request that is not
  streamed), requests that finish or abort at any step: their state is freed then.

Where it differs from SGLang 0.5.23, on purpose (each a strict xfail in
tests/integrations/test_sglang.py naming it):

* text already sent is never sent again. 0.5.23 moves its sent offset back when
  ``find_printable_text``'s answer shrinks between two held steps and then re-sends that text
  (fixed upstream after 0.5.23: test/registered/unit/managers/test_detokenizer_stream_offsets.py);
* a U+FFFD that is final (an invalid byte, a real U+FFFD in the text) goes out at once. 0.5.23
  holds text that ends in U+FFFD until a later character arrives, so a run of invalid bytes
  holds everything behind it and re-decodes a growing window every step (O(n^2); upstream's
  test_detokenizer_incremental.py). What is unfinished is decided from the bytes (stream.held);
* an id past the vocabulary among the generated ids is an ``InvalidIdError`` naming the request
  and the id: 0.5.23 maps it to id 0 and prints that token's text. In the prompt window the
  scheduler sends first, SGLang's own mapping is kept (such ids are multimodal placeholders that
  print nothing, its docstring says);
* a prompt that ends inside a character: the character the first generated ids complete is
  printed (0.5.23's window slicing drops it);
* a request the scheduler's first batch never announced (ids fewer than its read offset), and
  one whose state was dropped, get a ``StreamStateError`` naming them, never a wrong text.
  States are dropped only beyond ``SGLANG_DETOKENIZER_MAX_STATES`` requests, oldest first, and
  never that of a request stepped in the last 256 batches: a request that runs is not evicted,
  unlike 0.5.23's oldest-first eviction of running requests.

How to turn it on. The function is the face, not ``--tokenizer-backend``: that flag only
chooses which library answers SGLang's ``batch_decode`` calls (huggingface or fastokens), so a
backend there could only make the two window decodes per request per step cheaper, not replace
the windowed algorithm with one stream step, and its choices are a closed list. What SGLang does
offer is a detokenizer process that builds ``DetokenizerManager`` (``run_detokenizer_process``,
with ``run_detokenizer_process_func=`` in ``launch_server`` and ``Engine``) and plug-ins
(entry point group ``sglang.srt.plugins``, run by ``load_plugins()`` in every SGLang process,
the detokenizer's included, before its manager is made). So:

* ``OASR_TOK_SGLANG=1 sglang serve ...`` (any launch): this package's plug-in installs it in
  every SGLang process; without that variable the plug-in does nothing. ``OASR_TOK_SGLANG_TOKENIZER``
  names the tokenizer files when they are not the model's;
* ``launch_server(server_args, run_detokenizer_process_func=run_detokenizer_process)``: this
  module's ``run_detokenizer_process`` installs it in the detokenizer process and runs SGLang's;
* ``install(target=None, tokenizer=None)`` in code: on SGLang's ``DetokenizerManager`` (the
  default), a subclass, or one manager.

It fails loudly: an SGLang whose detokenizer lacks what this replaces or calls (the method, the
manager's ``trim_matched_stop`` and ``tokenizer``, ``find_printable_text`` and
``DETOKENIZER_MAX_STATES`` in its module, the fields of ``BatchTokenIDOutput`` it reads) gets an
``IntegrationError`` naming the SGLang version and what is missing; so does a tokenizer that
does not render as the one SGLang loaded.
"""

from __future__ import annotations

import os
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .._engine.sglang_step import Request, step_requests
from ..errors import (
    IntegrationError,
    KeepSpecialsNotSupportedError,
    NonIntegerIdError,
    StreamStateError,
    TokenizerError,
    short_repr,
)

if TYPE_CHECKING:
    from .._engine.stream import Stream
    from ..core.tokenizer import Tokenizer

__all__ = [
    "CHECKED_VERSIONS",
    "ENV_FLAG",
    "ENV_TOKENIZER",
    "IntegrationError",
    "RECENT_BATCHES",
    "RequestStreams",
    "attach",
    "install",
    "plugin",
    "run_detokenizer_process",
    "sglang_version",
    "uninstall",
]

#: The SGLang versions this was checked against, output for output (others get a warning).
CHECKED_VERSIONS = ("0.5.23",)
#: The environment variable that turns the plug-in on ("1").
ENV_FLAG = "OASR_TOK_SGLANG"
#: The environment variable naming the tokenizer files when they are not the model's.
ENV_TOKENIZER = "OASR_TOK_SGLANG_TOKENIZER"

_MODULE = "sglang.srt.managers.detokenizer_manager"
_METHOD = "_decode_batch_token_id_output"
_MANAGER_NEEDS = ("trim_matched_stop",)
_MODULE_NEEDS = ("find_printable_text", "DETOKENIZER_MAX_STATES")
_FIELDS = (
    "rids",
    "finished_reasons",
    "decode_ids",
    "read_offsets",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "no_stop_trim",
)
_STREAMS = "_oasr_tok_streams"  # a manager's RequestStreams
_TOKENIZER = "_oasr_tok_tokenizer"  # what install(cls, tokenizer=...) asked for
_ORIGINALS: dict[type, Callable[..., Any]] = {}  # each patched class: the method it had
#: A request stepped in this many of the last batches is never dropped (_sweep).
RECENT_BATCHES = 256


def sglang_version() -> str:
    """The installed SGLang's version, as its distribution says."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sglang")
    except PackageNotFoundError:
        return "(no sglang distribution installed)"


# -- the requests --------------------------------------------------------------------------------


class RequestStreams:
    """One Stream per SGLang request id, stepped by each BatchTokenIDOutput in one batch call:
    `step(recv_obj)` gives the output_strs SGLang's own decode gives (this module's docstring
    says where it differs, on purpose). The step is one compiled pass over the batch
    (oasr_tok._engine.sglang_step); what is rare (a request's first batch, a batch whose
    requests keep special tokens, an error to name) is answered here.

    Args:
        tokenizer: the oasr_tok tokenizer of the files SGLang loaded.
        trim_matched_stop: the manager's own (its bound method): cuts the stop token or string.
        find_printable_text: SGLang's own (its detokenizer module's).
        capacity: how many requests' states to keep (SGLANG_DETOKENIZER_MAX_STATES).
        recent: a request stepped in this many of the last batches is never dropped.

    Example:
        >>> from types import SimpleNamespace as Batch
        >>> from oasr_tok.demo import DATA
        >>> from oasr_tok.integrations.sglang import RequestStreams
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> streams = RequestStreams(tok, trim_matched_stop=lambda out, reason, keep: out,
        ...                          find_printable_text=lambda text: text[: text.rfind(" ") + 1])
        >>> ids = tok.encode("the café opens")
        >>> def batch(new_ids, read_offset, finished=None):
        ...     return Batch(rids=["r1"], decode_ids=[new_ids], read_offsets=[read_offset],
        ...                  finished_reasons=[finished], skip_special_tokens=[True], no_stop_trim=[False])
        >>> streams.step(batch(ids[:3], 2)), streams.step(batch(ids[3:], 2)), len(streams)
        ([' o'], ['pens'], 1)
        >>> streams.step(batch([], 2, {"type": "length"})), len(streams)
        ([''], 0)
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        trim_matched_stop: Callable[[Any, Any, bool], Any],
        find_printable_text: Callable[[str], str],
        capacity: int = 1 << 16,
        recent: int = RECENT_BATCHES,
    ) -> None:
        if type(capacity) is not int or capacity < 1:
            raise IntegrationError(f"capacity must be a positive int, got {short_repr(capacity)}")
        if type(recent) is not int or recent < 1:
            raise IntegrationError(f"recent must be a positive int, got {short_repr(recent)}")
        self.tokenizer = tokenizer
        try:
            self.specials_tokenizer: Tokenizer | None = tokenizer.with_specials()
        except KeepSpecialsNotSupportedError:
            self.specials_tokenizer = None  # a request that keeps special tokens is refused
        self._trim = trim_matched_stop
        # SGLang's function, on the few texts a held step ends in (a character begun after a
        # few others): a pure function of its str, so remembered.
        self._printable = lru_cache(maxsize=4096)(find_printable_text)
        self.capacity = capacity
        self.recent = recent
        # every live request, oldest first; keyed by itself (a Request hashes as its rid and
        # equals it: states[rid] finds it; _engine/sglang_step.pyx says why)
        self._states: dict[Request, Request] = {}
        self._dropped: dict[Any, None] = {}  # request ids whose state was dropped (as many as `capacity`)
        self._batches = 0  # batches stepped so far (a Request's `seen` is one of them)

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, rid: object) -> bool:
        return rid in self._states

    def stream(self, rid: Any) -> Stream:
        """The Stream of a live request (KeyError when there is none)."""
        return self._states[rid].stream

    def request(self, rid: Any) -> Request:
        """A live request's state: its stream, whether it keeps special tokens, and SGLang's
        send rule (`rule`: None, or (text settled since the last commit, characters of it that
        commit took, characters after it sent)) (KeyError when there is none)."""
        return self._states[rid]

    # -- the step -------------------------------------------------------------------------------

    def step(self, recv_obj: Any) -> list[str]:
        """The output_strs of one BatchTokenIDOutput (SGLang's _decode_batch_token_id_output).
        Atomic: a batch refused (an id past the vocabulary, a request never announced, ...)
        raises a typed error naming the request and leaves every request as it was."""
        out = step_requests(self, self._states, recv_obj, self._batches + 1, self.tokenizer)
        if out:
            self._batches += 1
            if len(self._states) > self.capacity:
                self._sweep()
        return out

    def _step_mixed(self, rids: Sequence[Any], rows: list[Any], streams: list[Any], keeps: list[bool]) -> list[str]:
        """The batch calls of a step whose requests do not all skip special tokens (`keeps`:
        whether each keeps them): one per tokenizer, every row checked before either moves a
        stream."""
        n = len(rids)
        groups = [g for g in ([k for k in range(n) if keeps[k] == flag] for flag in (False, True)) if g]
        tokens = [self.specials_tokenizer if keeps[g[0]] else self.tokenizer for g in groups]
        if len(groups) > 1:
            for group, tok in zip(groups, tokens):
                for k in group:
                    try:
                        tok.check_ids(rows[k])  # type: ignore[union-attr]
                    except TokenizerError as exc:
                        raise type(exc)(f"request {rids[k]!r}: {exc}") from exc
        deltas: list[str] = [""] * n
        for group, tok in zip(groups, tokens):
            sub_rows = [rows[k] for k in group]
            try:
                got = tok.decode_incremental_batch(sub_rows, [streams[k] for k in group])  # type: ignore[union-attr]
            except TokenizerError as exc:
                raise self._named(exc, [rids[k] for k in group], sub_rows) from exc
            for k, delta in zip(group, got):
                deltas[k] = delta
        return deltas

    def _start(self, rid: Any, ids: Any, read_offset: Any, skip: Any) -> tuple[Stream, Any]:
        """A request's first batch: its stream primed with the prompt ids the scheduler sends
        before the generated ones (`read_offset` of them), and those generated ids."""
        if rid in self._dropped:
            raise StreamStateError(
                f"request {rid!r}: its state was dropped, {self.capacity} requests being kept and it not stepped "
                "for a while (SGLANG_DETOKENIZER_MAX_STATES); its text cannot go on"
            )
        if type(read_offset) is not int or not 0 <= read_offset <= len(ids):
            raise StreamStateError(
                f"request {rid!r} was never seen, and its ids are not a first batch: {len(ids)} ids with "
                f"read offset {short_repr(read_offset)} (a first batch starts with that many prompt ids)"
            )
        tok = self.tokenizer if skip else self.specials_tokenizer
        if tok is None:
            raise KeepSpecialsNotSupportedError(
                f"request {rid!r} keeps special tokens (skip_special_tokens=False), and the "
                f"{self.tokenizer.spec.kind if self.tokenizer.spec else 'given'} tokenizer cannot render them"
            )
        prompt = list(ids[:read_offset])
        size = tok.vocab_size
        try:
            if prompt and not (0 <= min(prompt) and max(prompt) < size):
                # SGLang's own rule for the prompt window: an id past the vocabulary there is a
                # placeholder (a multimodal item's) that prints nothing, decoded as id 0.
                prompt = [t if 0 <= t < size else 0 for t in prompt]
            stream = tok.new_stream(prefill=prompt or None)
        except TypeError as exc:
            raise NonIntegerIdError(
                f"request {rid!r}: its prompt ids are not all integers: {short_repr(prompt)}"
            ) from exc
        except TokenizerError as exc:
            raise type(exc)(f"request {rid!r}: {exc}") from exc
        return stream, ids[read_offset:]

    def _named(self, exc: TokenizerError, rids: Sequence[Any], rows: Sequence[Any]) -> TokenizerError:
        """A batch's error, naming the request instead of its place in the batch."""
        for rid, row in zip(rids, rows):
            try:
                self.tokenizer.check_ids(row)
            except TokenizerError as bad:
                return type(bad)(f"request {rid!r}: {bad}")
        return exc

    def _forget(self, rid: Any) -> None:
        self._states.pop(rid, None)

    def _sweep(self) -> None:
        """Drop states beyond `capacity`, oldest first, but never one of a request stepped in
        the last `recent` batches (a request that runs: SGLang sends a request that is not
        streamed at least every 50 ids). Beyond the capacity with every state in use, none is
        dropped: the capacity bounds the states of requests that stopped coming."""
        states = self._states
        since = self._batches - self.recent  # stepped in a batch after this one: recent
        for request in [request for request in states if request.seen <= since][: len(states) - self.capacity]:
            self._forget(request.rid)
            self._dropped[request.rid] = None
        while len(self._dropped) > self.capacity:
            del self._dropped[next(iter(self._dropped))]


# -- installing it ------------------------------------------------------------------------------


def _sglang_manager_class() -> type:
    try:
        import importlib

        module = importlib.import_module(_MODULE)
    except ImportError as exc:
        raise IntegrationError(f"SGLang is not importable here ({exc}); install sglang, or pass the class") from exc
    manager: type = module.DetokenizerManager
    return manager


def _original(cls: type) -> Callable[..., Any]:
    """The method this replaces, as the class had it before any install."""
    for klass in cls.__mro__:
        if klass in _ORIGINALS:
            return _ORIGINALS[klass]
    return getattr(cls, _METHOD)  # type: ignore[no-any-return]


def _check(cls: type) -> tuple[Callable[[str], str], int]:
    """What this needs of SGLang's detokenizer, or an IntegrationError naming the SGLang version
    and what is missing: SGLang's find_printable_text and the state capacity."""
    where = f"SGLang {sglang_version()}"
    for name in (_METHOD, *_MANAGER_NEEDS):
        if not callable(getattr(cls, name, None)):
            raise IntegrationError(
                f"{where}: {cls.__module__}.{cls.__qualname__} has no {name}, which "
                f"oasr_tok.integrations.sglang replaces or calls (checked against SGLang {', '.join(CHECKED_VERSIONS)})"
            )
    original = _original(cls)
    module_globals = getattr(original, "__globals__", {})
    for name in _MODULE_NEEDS:
        if name not in module_globals:
            raise IntegrationError(
                f"{where}: {original.__module__} has no {name}, which oasr_tok.integrations.sglang reads "
                f"(checked against SGLang {', '.join(CHECKED_VERSIONS)})"
            )
    record = module_globals.get("BatchTokenIDOutput")
    if record is not None:
        fields = set()
        for klass in getattr(record, "__mro__", ()):
            fields.update(vars(klass).get("__annotations__", {}))
        missing = [name for name in _FIELDS if name not in fields]
        if missing:
            raise IntegrationError(
                f"{where}: BatchTokenIDOutput has no field {missing[0]}, which oasr_tok.integrations.sglang reads "
                f"(checked against SGLang {', '.join(CHECKED_VERSIONS)})"
            )
    capacity = module_globals["DETOKENIZER_MAX_STATES"]
    if type(capacity) is not int or capacity < 1:
        raise IntegrationError(f"{where}: DETOKENIZER_MAX_STATES is {short_repr(capacity)}, not a positive int")
    return module_globals["find_printable_text"], capacity


def _decode_with_streams(self: Any, recv_obj: Any) -> list[str]:
    """DetokenizerManager._decode_batch_token_id_output, with oasr_tok's streams."""
    streams = self.__dict__.get(_STREAMS)
    if streams is None:
        streams = attach(self, getattr(type(self), _TOKENIZER, None))
    return streams.step(recv_obj)  # type: ignore[no-any-return]


def install(target: Any = None, *, tokenizer: Any = None) -> None:
    """Make SGLang's detokenizer decode with oasr_tok's streams (this module's docstring says
    what changes). Replaces `_decode_batch_token_id_output` only.

    Args:
        target: SGLang's DetokenizerManager class (None: imported from SGLang), a subclass, or
            one manager (then its tokenizer is resolved and checked now).
        tokenizer: an oasr_tok tokenizer, or a path oasr_tok.load reads; None: the files SGLang
            loaded its own tokenizer from (the manager's tokenizer's name_or_path).

    Raises:
        IntegrationError: SGLang lacks what this replaces or calls (the version and the missing
            attribute named), or the tokenizer does not render as SGLang's.

    Example:
        >>> from oasr_tok.integrations import sglang
        >>> sglang.install()  # doctest: +SKIP
    """
    if target is None:
        target = _sglang_manager_class()
    cls = target if isinstance(target, type) else type(target)
    _check(cls)
    version = sglang_version()
    if version not in CHECKED_VERSIONS:
        warnings.warn(
            f"oasr_tok's SGLang detokenizer was checked against SGLang {', '.join(CHECKED_VERSIONS)}; "
            f"SGLang {version} is in use",
            RuntimeWarning,
            stacklevel=2,
        )
    if isinstance(target, type):
        if target not in _ORIGINALS:
            _ORIGINALS[target] = _original(target)
        setattr(target, _METHOD, _decode_with_streams)
        setattr(target, _TOKENIZER, tokenizer)
    else:
        attach(target, tokenizer)
        vars(target)[_METHOD] = types.MethodType(_decode_with_streams, target)


def uninstall(target: Any = None) -> None:
    """Undo install: the class gets its own method back (a manager: its streams are dropped)."""
    if target is None:
        target = _sglang_manager_class()
    if isinstance(target, type):
        if target in _ORIGINALS:
            setattr(target, _METHOD, _ORIGINALS.pop(target))
            if _TOKENIZER in vars(target):
                delattr(target, _TOKENIZER)
        return
    vars(target).pop(_METHOD, None)
    vars(target).pop(_STREAMS, None)


def attach(manager: Any, tokenizer: Any = None) -> RequestStreams:
    """A manager's RequestStreams, made now: the tokenizer resolved and checked against the one
    the manager loaded (what install(manager) and a patched class's first batch do)."""
    find_printable_text, capacity = _check(type(manager))
    tok = _resolve(manager, tokenizer)
    streams = RequestStreams(
        tok, trim_matched_stop=manager.trim_matched_stop, find_printable_text=find_printable_text, capacity=capacity
    )
    _check_renders(manager, streams)
    vars(manager)[_STREAMS] = streams
    return streams


def _resolve(manager: Any, tokenizer: Any) -> Tokenizer:
    from ..core.tokenizer import Tokenizer
    from ..loading.resolution import load

    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if tokenizer is not None:
        return load(os.fspath(tokenizer))
    theirs = getattr(manager, "tokenizer", None)
    if theirs is None:
        raise IntegrationError(
            f"SGLang {sglang_version()}: this DetokenizerManager has no tokenizer (--skip-tokenizer-init?): "
            "there is nothing to detokenize; do not install, or pass tokenizer="
        )
    where = getattr(theirs, "name_or_path", None)
    if not where:
        raise IntegrationError(
            f"SGLang's tokenizer ({type(theirs).__name__}) does not say where it was loaded from; pass tokenizer="
        )
    if os.path.exists(where):
        return load(where)
    try:  # a hub id: SGLang loaded the files from the Hugging Face cache
        from huggingface_hub import snapshot_download

        folder = snapshot_download(where, local_files_only=True)
    except Exception as exc:
        raise IntegrationError(
            f"SGLang loaded its tokenizer from {where!r}, which is neither a folder here nor in the Hugging Face "
            f"cache ({exc}); pass tokenizer= (or set {ENV_TOKENIZER})"
        ) from exc
    return load(folder)


def _check_renders(manager: Any, streams: RequestStreams) -> None:
    """The tokenizer must render as the one SGLang loaded: ids spread over the vocabulary and
    every special id (at most 512), one by one and together, with and without special tokens,
    through SGLang's own batch decode (spaces_between_special_tokens either way)."""
    theirs = manager.tokenizer
    tok = streams.tokenizer
    try:
        size = len(theirs)
    except TypeError:
        size = getattr(theirs, "vocab_size", tok.vocab_size)
    if size > tok.vocab_size:
        raise IntegrationError(
            f"SGLang's tokenizer ({type(theirs).__name__} from {getattr(theirs, 'name_or_path', '?')}) has {size} "
            f"ids, oasr_tok's ({_describe(tok)}) {tok.vocab_size}: not the same tokenizer"
        )
    stride = max(1, size // 256)
    specials = sorted(i for i in tok.special_ids if i < size)[:512]
    probe = sorted(set(range(0, size, stride)) | set(specials))
    rows = [[i] for i in probe] + [probe, specials * 2]
    grouped = getattr(manager, "_grouped_batch_decode", None)
    for skip in (True, False):
        ours_tok = tok if skip else streams.specials_tokenizer
        if ours_tok is None:
            continue
        ours = [ours_tok.decode(row) for row in rows]
        for spaces in (True, False):
            if grouped is not None:
                there = grouped(rows, [skip] * len(rows), [spaces] * len(rows))
            else:
                there = [
                    theirs.decode(row, skip_special_tokens=skip, spaces_between_special_tokens=spaces) for row in rows
                ]
            for row, mine, other in zip(rows, ours, there):
                if mine != other:
                    what = f"id {row[0]}" if len(row) == 1 else f"{len(row)} ids together"
                    raise IntegrationError(
                        f"oasr_tok's tokenizer ({_describe(tok)}) does not render as SGLang's ({type(theirs).__name__} "
                        f"from {getattr(theirs, 'name_or_path', '?')}): {what} with skip_special_tokens={skip}, "
                        f"spaces_between_special_tokens={spaces} is {short_repr(mine)} here and {short_repr(other)} "
                        "there; pass the tokenizer SGLang loads"
                    )


def _describe(tok: Any) -> str:
    spec = getattr(tok, "spec", None)
    if spec is None:
        return type(tok).__name__
    return f"kind {spec.kind} from {', '.join(str(p) for p in spec.files.values())}"


# -- the faces SGLang offers -----------------------------------------------------------------------


def run_detokenizer_process(server_args: Any, port_args: Any, *args: Any, **kwargs: Any) -> None:
    """SGLang's run_detokenizer_process with oasr_tok installed in that process first: pass it
    as ``run_detokenizer_process_func`` to ``launch_server`` or set it on an ``Engine`` subclass
    (a module-level function, so SGLang's spawned process can import it)."""
    import importlib

    module = importlib.import_module(_MODULE)
    install(module.DetokenizerManager, tokenizer=os.environ.get(ENV_TOKENIZER) or None)
    module.run_detokenizer_process(server_args, port_args, *args, **kwargs)


def plugin() -> None:
    """The entry point (group ``sglang.srt.plugins``) SGLang's load_plugins runs in each of its
    processes: installs oasr_tok's detokenizer when OASR_TOK_SGLANG=1, does nothing otherwise.
    SGLang logs and ignores an exception a plug-in raises, which would leave a user who asked
    for oasr_tok with SGLang's own decode unawares: a misfit ends the process instead."""
    if os.environ.get(ENV_FLAG) != "1":
        return
    try:
        install(tokenizer=os.environ.get(ENV_TOKENIZER) or None)
    except IntegrationError as exc:
        print(f"oasr_tok: {exc}", file=sys.stderr)
        raise SystemExit(f"oasr_tok: {exc}") from exc
