# Types of the compiled gathering by id (oasr_tok/_engine/join.pyx); tests/house/test_typing.py checks these
# against the built module with mypy's stubtest.
from typing import Any, TypeAlias, overload

# A list, or a tuple (a long join over tuples lets go of the GIL).
_Pieces: TypeAlias = list[bytes] | tuple[bytes, ...]

# [table[i] for i in ids if not skip[i]], the ids read as check_ids reads them.
def gather(table: list[Any], ids: object, skip: bytes | None = None) -> list[Any]: ...

# b"".join(pieces[i] for i in ids) with the ids read as check_ids reads them; None when an id
# whose `stops` byte is set occurs. first_pieces / keeps_first: a leading rule (see the module).
@overload
def join_pieces(
    pieces: _Pieces,
    ids: object,
    first_pieces: _Pieces | None = None,
    keeps_first: bytes | None = None,
    stops: None = None,
) -> bytes: ...
@overload
def join_pieces(
    pieces: _Pieces,
    ids: object,
    first_pieces: _Pieces | None = None,
    keeps_first: bytes | None = None,
    *,
    stops: bytes,
) -> bytes | None: ...
