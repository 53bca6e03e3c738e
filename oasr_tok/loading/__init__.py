"""From files to a tokenizer: resolution (resolution.py: which kind, which files), building a
spec through the registry (build.py), describing a checkpoint (description.py) and reading a
NeMo archive (nemo_archive.py)."""
