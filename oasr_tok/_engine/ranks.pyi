# Types of the compiled rank-file reader (oasr_tok/_engine/ranks.pyx); tests/house/test_typing.py checks these
# against the built module with mypy's stubtest.

# The bytes of one base64 token by read_ranks' rule, or None where it refuses the token.
def base64_value(token: bytes) -> bytes | None: ...

# The bytes of every rank of a `base64 rank` file's content (MalformedAssetError naming `path` and the line).
def read_ranks(data: bytes, path: str) -> list[bytes]: ...
