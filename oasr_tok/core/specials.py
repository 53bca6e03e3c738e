"""Special tokens by role, stop ids, and where each came from (see docs/prompts.md).

`SpecialTokens` is the immutable record `Tokenizer.special_tokens` returns. A kind builds it
from its checkpoint's own declarations (tokenizer_config.json, generation_config.json, the
SentencePiece model's ids, GGUF keys, ...) with `SpecialTokensBuilder`, which records a
sentence of provenance per role and per stop id; roles a kind leaves open are filled from the
conventional spellings in `ROLE_NAMES` when the vocabulary has them, as NeMo's adapter does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import UnknownSpecialTokenError

__all__ = [
    "ROLES",
    "ROLE_NAMES",
    "END_OF_TURN_NAMES",
    "SpecialTokens",
    "SpecialTokensBuilder",
    "split_on_special_text",
]

#: The roles of `SpecialTokens`, in the order describe() prints them.
ROLES = ("bos", "eos", "pad", "unk", "sep", "cls", "mask")

#: Conventional spellings per role, tried in order when the checkpoint declares nothing.
#: `<sos/eos>` is both bos and eos (icefall, WeNet); blank is an ASR role NeMo's adapter adds.
ROLE_NAMES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "pad": ("<pad>", "[PAD]", "<PAD>", "<|pad|>"),
        "bos": ("<s>", "<sos>", "<sos/eos>", "[BOS]", "<|begin_of_text|>", "<|startoftext|>", "<|startoftranscript|>"),
        "eos": ("</s>", "<eos>", "<sos/eos>", "[EOS]", "<|end_of_text|>", "<|endoftext|>"),
        "unk": ("<unk>", "<UNK>", "[UNK]", "<|unk|>"),
        "sep": ("[SEP]", "<sep>"),
        "cls": ("[CLS]", "<cls>"),
        "mask": ("[MASK]", "<mask>"),
        "blank": ("<blk>", "<blank>"),
    }
)

#: End-of-turn / end-of-generation spellings of the chat families (Qwen/ChatML, GPT/Whisper,
#: Llama 3, Gemma, Phi). A special token spelled so joins `stop_ids` beside eos.
END_OF_TURN_NAMES = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<|end|>",
)


@dataclass(frozen=True)
class SpecialTokens:
    """Special-token ids by role (None when the checkpoint has none) and the stop ids.

    `stop_ids` is eos plus the family's end-of-turn tokens as the checkpoint declares them.
    `add_bos` / `add_eos` say what ``encode(text, add_special_tokens=True)`` adds for kinds
    without a post-processor of their own. `sources` maps a role ("bos") or a stop id
    ("stop:151645") to a sentence saying where it came from; `describe` prints it.
    """

    bos_id: int | None = None
    eos_id: int | None = None
    pad_id: int | None = None
    unk_id: int | None = None
    sep_id: int | None = None
    cls_id: int | None = None
    mask_id: int | None = None
    stop_ids: frozenset[int] = frozenset()
    add_bos: bool = False
    add_eos: bool = False
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False, hash=False)

    def id_of(self, name: str) -> int | None:
        """The id of a role given as "bos", "bos_id" or "bos_token"; UnknownSpecialTokenError
        for any other name."""
        role = _role(name)
        return getattr(self, f"{role}_id")  # type: ignore[no-any-return]

    def __getitem__(self, name: str) -> int | None:
        return self.id_of(name)

    def source(self, name: str) -> str | None:
        """Where the role's id (or "stop:<id>") came from; None when nothing named it."""
        key = name if name.startswith("stop:") else _role(name)
        return self.sources.get(key)

    def as_dict(self) -> dict[str, int | None]:
        """{"bos_id": ..., ...} for every role (stop ids not included)."""
        return {f"{role}_id": getattr(self, f"{role}_id") for role in ROLES}

    def __repr__(self) -> str:
        roles = ", ".join(f"{role}_id={getattr(self, f'{role}_id')}" for role in ROLES)
        return f"SpecialTokens({roles}, stop_ids={sorted(self.stop_ids)})"


def _role(name: str) -> str:
    if isinstance(name, str):
        role = name.removesuffix("_id").removesuffix("_token")
        if role in ROLES:
            return role
    raise UnknownSpecialTokenError(
        f"unknown special-token name {name!r}; the names are {', '.join(ROLES)} (also spelled bos_id / bos_token ...)"
    )


class SpecialTokensBuilder:
    """Collects a kind's declarations, first source wins per role, then fills the rest.

    >>> b = SpecialTokensBuilder(vocab_size)
    >>> b.set("eos", 2, "tokenizer_config.json eos_token '</s>'")
    >>> b.stop(151645, "generation_config.json eos_token_id")
    >>> specials = b.build(pieces)      # pieces: piece -> id, for the conventional names
    """

    def __init__(self, vocab_size: int) -> None:
        self._size = vocab_size
        self._ids: dict[str, int | None] = {}
        self._sources: dict[str, str] = {}
        self._stops: dict[int, str] = {}
        self.add_bos = False
        self.add_eos = False

    def set(self, role: str, token_id: int | None, source: str) -> None:
        """Declare `role` (None: declared absent, e.g. a null in tokenizer_config.json). A role
        already set keeps its first value; an id outside the vocabulary is ignored."""
        role = _role(role)
        if role in self._ids:
            return
        if token_id is not None and not 0 <= token_id < self._size:
            return
        self._ids[role] = token_id
        self._sources[role] = source

    def has(self, role: str) -> bool:
        return _role(role) in self._ids

    def stop(self, token_id: int | None, source: str) -> None:
        if token_id is not None and 0 <= token_id < self._size and token_id not in self._stops:
            self._stops[token_id] = source

    def build(self, pieces: Mapping[str, int] | None = None, end_of_turn: Iterable[int] | None = None) -> SpecialTokens:
        """The record. Roles never set are looked up by `ROLE_NAMES` in `pieces`; eos joins the
        stop ids, then the ids of `END_OF_TURN_NAMES` in `pieces` that are in `end_of_turn`
        (the kind's special ids: an ordinary piece spelled so is not a stop)."""
        ids = dict(self._ids)
        sources = dict(self._sources)
        for role in ROLES:
            if role in ids or not pieces:
                continue
            name = next((n for n in ROLE_NAMES[role] if n in pieces), None)
            if name is not None:
                ids[role] = pieces[name]
                sources[role] = f"the conventional spelling {name!r} in the vocabulary"
        stops = dict(self._stops)
        eos = ids.get("eos")
        if eos is not None and eos not in stops:
            stops = {eos: f"eos ({sources['eos']})", **stops}
        if pieces and end_of_turn is not None:
            allowed = frozenset(end_of_turn)
            for name in END_OF_TURN_NAMES:
                token_id = pieces.get(name)
                if token_id is not None and token_id in allowed and token_id not in stops:
                    stops[token_id] = f"the family's end-of-turn token {name!r}"
        for token_id, why in stops.items():
            sources[f"stop:{token_id}"] = why
        return SpecialTokens(
            **{f"{role}_id": ids.get(role) for role in ROLES},
            stop_ids=frozenset(stops),
            add_bos=self.add_bos and ids.get("bos") is not None,
            add_eos=self.add_eos and ids.get("eos") is not None,
            sources=MappingProxyType(sources),
        )


def split_on_special_text(text: str, table: Mapping[str, int]) -> list[str | int]:
    """`text` cut at every occurrence of a key of `table` (longest match first, left to
    right): plain stretches as str, matched special tokens as their id."""
    if not table or not text:
        return [text] if text else []
    pattern = re.compile("|".join(re.escape(t) for t in sorted(table, key=len, reverse=True) if t))
    out: list[str | int] = []
    pos = 0
    for match in pattern.finditer(text):
        if match.start() > pos:
            out.append(text[pos : match.start()])
        out.append(table[match.group()])
        pos = match.end()
    if pos < len(text):
        out.append(text[pos:])
    return out
