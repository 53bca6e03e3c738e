# Types of the compiled GGUF string-array reader (oasr_tok/_engine/gguf.pyx); tests/house/test_typing.py
# checks these against the built module with mypy's stubtest.
from typing_extensions import Buffer

# Both raise ValueError(index, offset, message) on the first string that does not fit.
def read_string_array(data: Buffer, pos: int, count: int, big_endian: bool) -> tuple[list[str], int]: ...
def skip_string_array(data: Buffer, pos: int, count: int, big_endian: bool) -> int: ...
