"""Logprob token strings for requests of `tokenizer_mode="oasr"`, batched (docs/engines.md §
vLLM, "Logprobs").

vLLM's LogprobsProcessor (vllm/v1/engine/logprobs.py) turns every sampled and top-k id of every
position into a string by decoding it alone (`convert_ids_list_to_tokens`), then re-decodes the
ones that end in U+FFFD with the sampled ids before them (`_verify_tokens`). Here `logprob_step`
looks up every id of every mode-"oasr" request of an engine step in one call (token_strings.py:
each id's string is made once per process), and `OasrLogprobsProcessor` takes its rows: vLLM's
own `_verify_tokens` runs on the rows that hold a string ending in U+FFFD, through the
tokenizer's decode, so the strings are exactly the ones vLLM shows with mode "hf" on the same
tokenizer.json. Prompt logprobs take the same table, one call per prefill chunk.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from vllm.logprobs import append_logprobs_for_next_position
from vllm.v1.engine.logprobs import LogprobsProcessor

from .token_strings import TokenStrings

if TYPE_CHECKING:
    from vllm.v1.engine import EngineCoreOutput, EngineCoreRequest
    from vllm.v1.outputs import LogprobsLists, LogprobsTensors


__all__ = ["OasrLogprobsProcessor", "logprob_step"]

_NONES = itertools.repeat(None)


class OasrLogprobsProcessor(LogprobsProcessor):
    """vLLM's LogprobsProcessor with its strings from the tokenizer's token table."""

    # the step's rows for this request (logprob_step): (id array, rows of strings, flags)
    pending: tuple[Any, list[list[str]], bytes] | None = None

    @classmethod
    def from_new_request(cls, tokenizer: Any, request: EngineCoreRequest) -> OasrLogprobsProcessor:
        made = super().from_new_request(tokenizer, request)
        assert isinstance(made, cls)
        return made

    def _rows(self, ids: Any) -> tuple[list[list[str]], bytes]:
        """The strings of a position x k id array: logprob_step's, or looked up now."""
        pending = self.pending
        self.pending = None
        if pending is not None:
            array, rows, flags = pending
            if array is ids:
                return rows, flags
            # vLLM's output step cut the array to the ids before a stop string (a view of it)
            if (
                getattr(ids, "ndim", 0) == 2
                and ids.shape[1] == array.shape[1]
                and ids.shape[0] <= array.shape[0]
                and ids.__array_interface__["data"][0] == array.__array_interface__["data"][0]
                and ids.strides == array.strides
            ):
                return rows[: ids.shape[0]], flags[: ids.shape[0]]
        table: TokenStrings = self.tokenizer.token_strings
        return table.rows([ids])[0]

    def corrected(self, strings: list[str], tokens: list[int], context: list[int]) -> list[str]:
        """vLLM's _verify_tokens for a row the table marked: each string that ends in U+FFFD
        (the table says which, in C) decoded again with the context by vLLM's own
        _correct_decoded_token; the others as they are."""
        table: TokenStrings = self.tokenizer.token_strings
        out = list(strings)
        for idx in table.table.fffd_positions(tokens):
            out[idx] = self._correct_decoded_token(tokens[idx], context)
        return out

    def _update_sample_logprobs(self, logprobs_lists: LogprobsLists) -> None:
        # vLLM's own loop (logprobs.py), with the strings of the ids from the token table and
        # _verify_tokens only where a string ends in U+FFFD.
        assert self.num_logprobs is not None
        assert self.logprobs is not None
        assert self.cumulative_logprob is not None
        token_ids_lst, logprobs_lst, ranks_lst, _ = logprobs_lists
        if self.tokenizer is not None:
            rows, flags = self._rows(token_ids_lst)
        for k, (rank_np, logprobs_np, token_ids_np) in enumerate(zip(ranks_lst, logprobs_lst, token_ids_lst)):
            rank = rank_np.tolist()
            logprobs = logprobs_np.tolist()
            token_ids = token_ids_np.tolist()
            decoded: Any
            if self.tokenizer is None:
                decoded = _NONES
            else:
                decoded = rows[k]
                if flags[k]:
                    decoded = self.corrected(decoded, token_ids, self._get_sampled_context_ids(self.logprobs))
            self.cumulative_logprob += logprobs[0]
            append_logprobs_for_next_position(self.logprobs, token_ids, logprobs, decoded, rank, self.num_logprobs)

    def _update_prompt_logprobs(self, prompt_logprobs_tensors: LogprobsTensors) -> None:
        # vLLM's own loop (logprobs.py), the strings from the token table in one call.
        assert self.num_prompt_logprobs is not None
        assert self.prompt_logprobs is not None
        token_ids, logprobs, ranks, *_ = prompt_logprobs_tensors
        num_prompt_tokens, _num_logprobs = logprobs.shape
        rows: list[list[str]] | None = None
        flags = b""
        if self.tokenizer is not None:
            table: TokenStrings = self.tokenizer.token_strings
            rows, flags = table.rows([token_ids.numpy()])[0]
        prompt_token_ranks = ranks.tolist()
        prompt_logprobs = logprobs.tolist()
        token_ids_list = token_ids.tolist()
        for pos in range(num_prompt_tokens):
            decoded: Any
            if rows is None:
                decoded = _NONES
            else:
                decoded = rows[pos]
                if flags[pos]:
                    decoded = self.corrected(
                        decoded, token_ids_list[pos], self._get_sampled_context_ids(self.prompt_logprobs)
                    )
            append_logprobs_for_next_position(
                self.prompt_logprobs,
                token_ids_list[pos],
                prompt_logprobs[pos],
                decoded,
                prompt_token_ranks[pos],
                self.num_prompt_logprobs,
            )


def logprob_step(with_logprobs: list[tuple[Any, EngineCoreOutput]] | None) -> None:
    """The strings of the sampled and top-k ids of every mode-"oasr" request of an engine step
    that carries logprobs ((request state, output) pairs: detokenizer.step gathers them), in one
    call; the requests' OasrLogprobsProcessors take them in vLLM's loop."""
    if not with_logprobs:
        return
    arrays: list[Any] = []
    takers: list[OasrLogprobsProcessor] = []
    table = None
    for state, out in with_logprobs:
        processor = state.logprobs_processor
        if type(processor) is not OasrLogprobsProcessor or processor.tokenizer is None:
            continue
        if table is None:
            table = processor.tokenizer.token_strings
        arrays.append(out.new_logprobs.logprob_token_ids)
        takers.append(processor)
    if table is None:
        return
    for processor, array, (rows, flags) in zip(takers, arrays, table.rows(arrays)):
        processor.pending = (array, rows, flags)
