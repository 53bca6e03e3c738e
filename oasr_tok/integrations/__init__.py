"""The engines' own slots: oasr_tok inside vLLM (``tokenizer_mode="oasr"``, its output step) and
SGLang (its detokenizer step). ``import oasr_tok`` never imports this room, and this room imports
an engine only inside the module that adapts it (docs/engines.md)."""
