"""oasr_tok inside vLLM (docs/engines.md § vLLM): `pip install 'oasr_tok[vllm]'`, then
`vllm serve MODEL --tokenizer-mode oasr`.

The distribution's entry point in group ``vllm.general_plugins`` is `register` (plugin.py): in
every vLLM process it maps the tokenizer mode "oasr" to OasrTokenizer (tokenizer.py), which
loads any checkpoint oasr_tok resolves. Loading one installs oasr_tok's detokenizer and logprob
strings in vLLM's output step (patches.py, detokenizer.py, logprobs.py). vLLM is imported by
these modules only, and only when vLLM runs them; `import oasr_tok` never imports this room.
"""

from .plugin import MODE, register

__all__ = ["MODE", "register"]
