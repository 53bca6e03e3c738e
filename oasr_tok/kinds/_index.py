"""The built-in kinds as the registry needs them before it imports a kind: each kind module's
KIND record, as `registry.index_line` reads it. Written by docs/kind_tables.py from the records:
do not edit (tests/house/test_docs.py fails while it is stale, and the registry checks a
module's record against its line when it imports the module)."""

#: (kind, precedence (None: no detector), backend, extra), in the order of evidence; each kind is
#: its module's name in oasr_tok.kinds.
KINDS: tuple[tuple[str, int | None, str | None, str | None], ...] = (
    ("tekken", 10, None, None),
    ("huggingface", 20, "tokenizers", "huggingface"),
    ("whisper", 25, None, None),
    ("tiktoken", 26, None, None),
    ("wav2vec2", 30, None, None),
    ("gguf", 40, None, None),
    ("bbpe", 45, "sentencepiece", "sentencepiece"),
    ("sentencepiece", 50, "sentencepiece", "sentencepiece"),
    ("funasr_char", 60, None, None),
    ("symbol_table", 70, None, None),
    ("wordpiece", 80, "tokenizers", "huggingface"),
    ("aggregate", None, "sentencepiece", "sentencepiece"),
)

#: The modules of oasr_tok.kinds that declare no kind.
OTHER_MODULES = ("api",)
