"""oasr_tok's Streams as the detokenizer of vLLM's output step, for requests of
`tokenizer_mode="oasr"` (docs/engines.md § vLLM; patches.py installs it).

vLLM gives each request an IncrementalDetokenizer (vllm/v1/engine/detokenizer.py); its output
step (OutputProcessor.process_outputs) calls, per request, `update(new_token_ids,
stop_terminated)` -- which decodes id by id, appends to `output_text` and checks the stop
strings -- and then `get_next_output_text(finished, delta)`. Here each request has one oasr_tok
Stream, primed with its prompt (`new_stream(prefill=prompt)`: what decode(prompt + generated)
adds to the prompt's text), and `step` runs before vLLM's loop: it steps the streams of every
mode-"oasr" request of the engine step in one `decode_incremental_batch` call per rendering
(special tokens skipped or shown; one per id position when a step brings several ids), and each
request's `update` then takes what its ids settled. Both are compiled (oasr_tok._engine.served),
and do what vLLM's own detokenizer for a fast tokenizer does, rule for rule, so that a client
sees exactly what mode "hf" shows on the same tokenizer.json: the text an id settles is shown
where tokenizers' DecodeStream shows it; `skip_special_tokens` and
`spaces_between_special_tokens` (an added token after another is its bare content); the
engine's own stop id left out of the text unless `include_stop_str_in_output`; vLLM's
check_stop_strings after `min_tokens`, the text cut at the stop string and the ids after it
dropped; `stop_buffer_length` held back from DELTA / CUMULATIVE outputs.

When a request finishes, its stream is flushed: what the kind held back comes out, except the
bytes of a character the ids leave unfinished, which vLLM never shows. Deliberate differences
from mode "hf" (tests/peers/test_vllm_detokenize.py holds them as strict xfails): a prompt that
ends inside a character does not get its text printed again; a ByteFallback byte run is held
until it ends (it may still turn into U+FFFD as a whole, where DecodeStream shows its characters
and then fails with "Invalid prefix", vLLM #17448); an id past the vocabulary is an
InvalidIdError naming the request, never "".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vllm.v1.engine import FinishReason

from oasr_tok._engine.served import ServedText, step_served
from oasr_tok.errors import TokenizerError

if TYPE_CHECKING:
    from vllm.v1.engine import EngineCoreOutput, EngineCoreRequest

__all__ = ["OasrDetokenizer", "step"]


class OasrDetokenizer(ServedText):
    """A request's detokenizer over its stream (module docstring): vLLM's
    IncrementalDetokenizer interface (update, get_next_output_text, output_text,
    output_token_ids, num_output_tokens), stepped by `step` in the engine step's batch."""

    # No instance dict: what vLLM reads of a detokenizer is ServedText's (and one object less
    # per request for the garbage collector to walk).
    __slots__ = ()

    def __init__(self, tokenizer: Any, request: EngineCoreRequest) -> None:
        params = request.sampling_params
        assert params is not None  # vLLM makes detokenizers for sampling requests only
        stop = params.stop
        stops: list[str] = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
        include_stop = params.include_stop_str_in_output
        # vLLM's: the characters held back while stop strings are watched and not shown
        buffer = max(len(s) for s in stops) - 1 if stops and not include_stop else 0
        # vLLM's fast detokenizer: with special tokens shown and spaces_between_special_tokens
        # off, an added token right after another is its bare content.
        added = None
        if not (params.skip_special_tokens or params.spaces_between_special_tokens):
            added = {i: content for content, i in tokenizer.get_added_vocab().items()} or None
        view = tokenizer.view(params.skip_special_tokens)
        prompt = request.prompt_token_ids
        try:
            stream = view.new_stream(prefill=prompt if prompt else None)
        except TokenizerError as exc:
            raise type(exc)(f"request {request.request_id!r}: its prompt: {exc}") from None
        super().__init__(stream, view, request.request_id, stops, params.min_tokens, include_stop, buffer, added)


def step(request_states: dict[str, Any], outputs: list[EngineCoreOutput]) -> list[tuple[Any, Any]] | None:
    """Step the streams of every mode-"oasr" request of an engine step in batches, before vLLM's
    loop over the outputs hands each its text (through update); the (request state, output)
    pairs that carry logprobs, for logprobs.logprob_step (None when none does)."""
    return step_served(outputs, request_states, FinishReason.STOP)
