# cython: language_level=3, boundscheck=True, wraparound=False
"""Id validation for the Python-side kinds: the same checks the compiled paths make."""
from oasr_tok._ids cimport checked_ids


def check_ids(ids, Py_ssize_t vocab_size):
    """`ids` as a list of ints, each in 0 ... vocab_size - 1; InvalidIdError (a ValueError)
    naming the first offending id and its position otherwise."""
    return checked_ids(ids, vocab_size)
