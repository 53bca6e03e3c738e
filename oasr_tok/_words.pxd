from oasr_tok._wordtypes cimport Words

# The word rules' one C entry for other modules: the words of a text as spans (_words.pyx).

cdef Words text_words(str text)
