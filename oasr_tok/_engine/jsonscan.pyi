# Types of oasr_tok/_engine/jsonscan.pyx; tests/house/test_typing.py checks these against the built module
# with mypy's stubtest.

# The index just past the JSON array opening at data[start], or -1.
def array_end(data: bytes | bytearray | memoryview, start: int) -> int: ...
