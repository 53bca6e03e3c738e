# Types of oasr_tok/_engine/session.pyx; tests/house/test_typing.py checks them with mypy's stubtest.
from collections.abc import Sequence
from typing import Any, ClassVar, final

SPACING: int
ENVELOPES: tuple[str, ...]

def hard_boundary(rule: str, a: str, b: str) -> bool: ...

@final
class Session:
    """A re-decoding session (tok.new_session(...)): the text a recogniser that re-prompts itself
    with its own output has produced so far, rolled back before each chunk to the re-prompt
    prefix exactly as qwen-asr's `streaming_transcribe` computes it, at a cost that does not
    grow with the transcript. docs/decoding.md § Re-decoding sessions.

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "huggingface")
        >>> session = tok.new_session(unfixed_chunk_num=1, unfixed_token_num=2, envelope="qwen3_asr")
        >>> session.rollback()  # chunk 0: no prefix yet
        0
        >>> session.feed(tok.encode("language English<asr_text>the café opens"))  # what the model said
        >>> session.text, session.envelope["language"]
        ('the café opens', 'English')
        >>> session.rollback()  # chunk 1: the text so far less its last 2 tokens
        29
        >>> session.prefix  # the chunk's prompt ends with it; the model goes on from there
        'language English<asr_text>the café op'
        >>> session.feed(tok.encode("ens at nine"))
        >>> session.text
        'the café opens at nine'
    """

    @property
    def tokenizer(self) -> Any: ...
    @property
    def unfixed_chunk_num(self) -> int: ...
    @property
    def unfixed_token_num(self) -> int: ...
    @property
    def envelope_format(self) -> str | None: ...
    @property
    def chunk(self) -> int: ...
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    @property
    def prefix(self) -> str: ...
    @property
    def raw(self) -> str: ...
    @property
    def ids(self) -> tuple[int, ...]: ...
    @property
    def text(self) -> str: ...
    @property
    def envelope(self) -> dict[str, Any] | None: ...
    def feed(self, new_ids: Sequence[int] | Any) -> None: ...
    def rollback(self, k: int | None = None, *, final: bool = False) -> int: ...
    def fork(self) -> Session: ...
    def __copy__(self) -> Session: ...
    def __deepcopy__(self, memo: Any) -> Session: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def new_session(
    tok: Any, unfixed_chunk_num: int = 2, unfixed_token_num: int = 5, envelope: str | None = None
) -> Session: ...
def _encoder(tok: Any) -> Any: ...
def _session_from_fields(
    ticket: Any,
    unfixed_chunk_num: Any,
    unfixed_token_num: Any,
    envelope: Any,
    chunk: Any,
    kept: Any,
    checkpoints: Any,
    chunk_ids: Any,
) -> Session: ...
