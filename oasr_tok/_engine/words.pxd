# The word rules' one C entry for other modules (_engine/words.pyx): where decode_hypothesis may
# commit in a text, and the letter rule it waits for.

cdef Py_ssize_t commit_break(str text, Py_ssize_t limit, Py_ssize_t* letter) except -2
cdef Py_ssize_t first_letter(str text, Py_ssize_t a, Py_ssize_t b) except -2
