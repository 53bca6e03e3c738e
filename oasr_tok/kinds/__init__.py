"""The built-in tokenizer kinds, one module each (imported lazily by the registry)."""
