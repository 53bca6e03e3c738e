from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, final

from .wordtypes import Word

WINDOW: int

@final
class HypothesisState:
    def __init__(
        self,
        n: int,
        window: tuple[int, ...],
        stream: tuple[Any, ...] | dict[str, Any],
        pending: tuple[str, ...],
        skip: int,
        history: tuple[tuple[int, ...], ...],
        searched: int,
        tag: int | None,
        closed: bool,
        starts: tuple[Any, ...] | None = None,
    ) -> None: ...
    def __reduce__(self) -> tuple[type[HypothesisState], tuple[Any, ...]]: ...

def keeps_whole_text(tok: Any) -> bool: ...
def lean(stream: dict[str, Any]) -> dict[str, Any]: ...
def decode_hypothesis(
    tok: Any,  # a TokenizerContract (oasr_tok.core.contract, above the engine)
    hypothesis_ids: Sequence[int],
    state: dict[str, Any] | Revisions,
    final: bool = False,
    agreement: int | None = None,
    times: Sequence[float] | None = None,
) -> tuple[str, str] | tuple[str, str, list[Word]]: ...

@final
class Revisions:
    """The state of a hypothesis stream (tok.new_revisions(agreement=2)) for decode_hypothesis:
    its record in C and its committed text in a growable buffer, so a call costs the same at
    any length of committed text. `revisions.committed` is all committed text (made when asked
    for); a read-only Mapping view too (revisions["committed"]). Copied by value; pickled as a
    Stream is, its state and a ticket naming its tokenizer (and its committed text unless
    Travel(text=False): docs/scale.md § Streams that travel).

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> revisions = tok.new_revisions()
        >>> ids = tok.encode("the café opens at nine")
        >>> tok.decode_hypothesis(ids[:4], revisions)
        ('', 'the café op')
        >>> tok.decode_hypothesis(ids[:6], revisions)
        ('the café', ' opens at')
        >>> revisions.committed
        'the café'
    """
    @property
    def tokenizer(self) -> Any: ...
    @property
    def agreement(self) -> int: ...
    def __init__(self, tokenizer: Any, agreement: int = 2) -> None: ...
    @property
    def committed(self) -> str: ...
    def __getitem__(self, key: str, /) -> Any: ...
    def get(self, key: str, default: Any = None) -> Any: ...
    def __contains__(self, key: object, /) -> bool: ...
    def keys(self) -> list[str]: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def fork(self) -> Revisions: ...
    def __copy__(self) -> Revisions: ...
    def __deepcopy__(self, memo: Any) -> Revisions: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def _revisions_from_fields(ticket: Any, agreement: int, state: dict[str, Any], committed: str | None) -> Revisions: ...
def use_reference_decode(decode_incremental: Callable[..., str]) -> None: ...
