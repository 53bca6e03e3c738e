"""The contract suite a kind author runs on their own kind (docs/architecture.md § Adding a kind).
``import oasr_tok`` never imports this room: it needs pytest and hypothesis."""
