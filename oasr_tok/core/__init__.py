"""What every kind shares: the contract (contract.py) and the Tokenizer base built on it
(tokenizer.py), streaming, prompting, chat templates, special tokens, timed words, pickling,
revisions, and the registry of kinds (registry.py)."""
