"""The compiled engine: every Cython module (the piece table and its C decode loop, the Stream
and its batch, id reading, the growable text, word grouping, CTC, the kinds' compiled helpers)
and the Python rules the Stream applies (serving.py: stop strings, the prefill tail). Private:
the public names are re-exported by oasr_tok and oasr_tok.kinds.api."""
