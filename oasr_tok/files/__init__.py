"""Reading a tokenizer's files: the readers with typed errors (readers.py), archive members
(archive.py), a file set's identity (assets.py) and the records a kind's detector returns
(detection.py)."""
