cdef list feed_owned(object tok, object rows, list states, bint final, bint one_per_stream)
