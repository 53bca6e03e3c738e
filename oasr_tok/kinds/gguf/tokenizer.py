"""gguf: the tokenizer llama.cpp carries inside a GGUF file (`tokenizer.ggml.*`).

decode(ids) is llama.cpp's `llama_detokenize(vocab, ids, remove_special=False,
unparse_special=False)` (src/llama-vocab.cpp of the llama.cpp that llama-cpp-python 0.3.36
vendors), its bytes decoded as UTF-8 with one U+FFFD per maximal invalid subpart:

* each id renders a byte string (token_to_piece): control, unknown, unused and undefined
  tokens nothing (they are `special_ids`), user-defined tokens their own text, byte tokens
  `<0xNN>` one byte, normal tokens their text with `▁` turned into a space (SPM, UGM, WPM,
  and BPE vocabularies that escape whitespace, e.g. gemma4) or mapped back through the GPT-2
  byte alphabet (other BPE vocabularies; a code point outside the alphabet renders as
  llama.cpp's `[UNK_BYTE_0x..]` marker);
* when `add_space_prefix` holds, the first id of the call loses one leading space, whatever it
  is: a control token first (BOS) consumes the rule and renders nothing;
* `clean_spaces` (on for BPE and WPM unless the `pre` type turns it off) then rewrites the
  whole text: " ?" " !" " ." " ," lose the space, " ' " becomes "'", and " 's" " 'm" " 're"
  " 've" lose the space. These rules reach across tokens, so the stream holds back the few
  characters a later token may still change (oasr_tok/_engine/clean_spaces.pyx).

The vocabulary is read as llama.cpp's loader reads it, with its refusals (no
`tokenizer.ggml.model`, an unknown model or `pre` type, score or type arrays shorter than the
token list, duplicate token strings, keys of the wrong type) and its fix-ups: an empty token
is renamed `[EMPTY_<id>]`; tokens whose text marks an end of turn or generation are forced
control; control tokens whose text contains "unused" are marked unused; gpt-oss's channel
markers are user-defined; `<|end|>` is not an end of generation when `<|return|>` and
`<|call|>` exist; gemma4's `</s>` is a normal token.

encode(text) runs a `tokenizers` runtime built from the GGUF metadata, as `transformers`
does when it loads a GGUF (see _gguf_encode.py); decoding never needs `tokenizers`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from .._bytelevel import CHAR_TO_BYTE
from .._common import checked_text, reject_unknown_options
from ..api import (
    FLAG_END_FIRST,
    FLAG_SKIP,
    CleanSpacesStream,
    Detected,
    EncodeError,
    Found,
    MalformedAssetError,
    PieceTable,
    SpecialTokens,
    SpecialTokensBuilder,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    existing_file,
    folder_names,
    join_pieces,
    register_value_reader,
)
from .reader import is_gguf_file, read_gguf_header, vocabulary_only_gguf
from .vocab import (
    ATTR_BYTE,
    ATTR_CONTROL,
    ATTR_LSTRIP,
    ATTR_NORMAL,
    ATTR_RSTRIP,
    ATTR_UNKNOWN,
    ATTR_USER_DEFINED,
    K_TEMPLATE,
    SPECIAL_KEYS,
    GGUFVocab,
    fail,
    load_vocab,
)

__all__ = ["GGUFTokenizer", "llama_clean_spaces"]

# -- token_to_piece ---------------------------------------------------------------------------

_ESCAPED_SPACE = "\u2581".encode()
# The GPT-2 byte alphabet as a str.translate table: its characters map to the byte they stand
# for (as chr(byte)), every other character below U+0100 to a marker that latin-1 cannot encode.
_NOT_MAPPED = "\U0010ffff"
_BYTE_TABLE = {cp: _NOT_MAPPED for cp in range(256)}
_BYTE_TABLE.update({ord(char): chr(byte) for char, byte in CHAR_TO_BYTE.items()})


def _strtol_hex2(text: bytes) -> int:
    """strtol(text, NULL, 16) on the (at most) two characters llama.cpp passes, as a byte."""
    s = text.decode("latin-1")
    i = 0
    while i < len(s) and s[i] in " \t\n\v\f\r":
        i += 1
    sign = 1
    if i < len(s) and s[i] in "+-":
        sign = -1 if s[i] == "-" else 1
        i += 1
    digits = ""
    if s[i : i + 2].lower() == "0x" and i + 2 < len(s) and s[i + 2] in "0123456789abcdefABCDEF":
        i += 2
    while i < len(s) and s[i] in "0123456789abcdefABCDEF":
        digits += s[i]
        i += 1
    return (sign * int(digits, 16) if digits else 0) & 0xFF


def _lenient_code_points(raw: bytes) -> list[int]:
    """unicode_cpts_from_utf8: lead bytes decide the length, continuation bytes are only
    checked for their top bits (no overlong, surrogate or range checks); an invalid byte
    becomes U+FFFD and is skipped alone."""
    out: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b < 0x80:
            out.append(b)
            i += 1
            continue
        if b & 0x40 == 0:
            width = 0
        elif b & 0x20 == 0:
            width = 2
        elif b & 0x10 == 0:
            width = 3
        elif b & 0x08 == 0:
            width = 4
        else:
            width = 0
        if width and i + width - 1 < n and all(raw[i + k] & 0xC0 == 0x80 for k in range(1, width)):
            value = b & (0x7F >> width)
            for k in range(1, width):
                value = (value << 6) | (raw[i + k] & 0x3F)
            out.append(value)
            i += width
        else:
            out.append(0xFFFD)
            i += 1
    return out


def _cpt_to_utf8(cpt: int, where: str) -> bytes:
    if cpt <= 0x7F:
        return bytes([cpt])
    if cpt <= 0x7FF:
        return bytes([0xC0 | (cpt >> 6), 0x80 | (cpt & 0x3F)])
    if cpt <= 0xFFFF:
        return bytes([0xE0 | (cpt >> 12), 0x80 | ((cpt >> 6) & 0x3F), 0x80 | (cpt & 0x3F)])
    if cpt <= 0x10FFFF:
        return bytes([0xF0 | (cpt >> 18), 0x80 | ((cpt >> 12) & 0x3F), 0x80 | ((cpt >> 6) & 0x3F), 0x80 | (cpt & 0x3F)])
    raise MalformedAssetError(f"{where}: invalid code point U+{cpt:X} (llama.cpp fails to load this vocabulary)")


def _bpe_decode_text(raw: bytes, where: str) -> bytes:
    """llama_decode_text: each code point back to its GPT-2 byte; one outside the alphabet
    renders as "[UNK_BYTE_0x<its utf-8 in hex><the whole token text>]"."""
    try:
        text = raw.decode("utf-8")
        return text.translate(_BYTE_TABLE).encode("latin-1")
    except (UnicodeDecodeError, UnicodeEncodeError):
        pass
    out = bytearray()
    for cpt in _lenient_code_points(raw):
        utf8 = _cpt_to_utf8(cpt, where)
        byte = CHAR_TO_BYTE.get(utf8.decode("utf-8", "surrogatepass")) if cpt < 0x110000 else None
        if byte is not None and len(utf8) == len(chr(cpt).encode("utf-8", "surrogatepass")):
            out.append(byte)
        else:
            out += b"[UNK_BYTE_0x" + utf8.hex().encode() + raw + b"]"
    return bytes(out)


def _bpe_decode_all(texts: list[str], where: str) -> list[bytes]:
    """_bpe_decode_text for many tokens: every character of a mapped token is one byte, so one
    translate and one encode of the joined texts, cut at the token lengths; the
    token-by-token rule only when some token falls outside the alphabet."""
    try:
        joined = "".join(texts).translate(_BYTE_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        joined = None
    if joined is not None:
        ends = list(accumulate(map(len, texts)))
        return [joined[start:end] for start, end in zip([0, *ends], ends)]
    out: list[bytes] = []
    for k, text in enumerate(texts):
        try:
            out.append(text.translate(_BYTE_TABLE).encode("latin-1"))
        except UnicodeEncodeError:
            out.append(_bpe_decode_text(text.encode("utf-8", "surrogateescape"), f"{where}: token {k}"))
    return out


def token_pieces_bytes(vocab: GGUFVocab, special: bool = False) -> list[bytes]:
    """What token_to_piece(id, special) renders for every id: with special=False b"" for
    control and unknown ids; with special=True (unparse_special) their own text."""
    pieces = _plain_pieces_bytes(vocab)
    if special:
        texts = vocab.texts
        for i, attr in enumerate(vocab.attrs):
            if attr & (ATTR_UNKNOWN | ATTR_CONTROL):
                pieces[i] = texts[i].encode("utf-8", "surrogateescape")
    return pieces


def _plain_pieces_bytes(vocab: GGUFVocab) -> list[bytes]:
    path = vocab.path
    unescape = vocab.vocab_type != "BPE" or vocab.escape_whitespaces
    attrs = vocab.attrs
    # token_to_piece tests the attributes in this order: control or unknown (nothing),
    # user-defined (its text), normal, byte; anything else renders nothing.
    silent = ATTR_UNKNOWN | ATTR_CONTROL
    user = [i for i, a in enumerate(attrs) if a & ATTR_USER_DEFINED and not a & silent]
    normal = [i for i, a in enumerate(attrs) if a & ATTR_NORMAL and not a & (silent | ATTR_USER_DEFINED)]
    byte = [i for i, a in enumerate(attrs) if a & ATTR_BYTE and not a & (silent | ATTR_USER_DEFINED | ATTR_NORMAL)]
    texts = vocab.texts
    pieces: list[bytes] = [b""] * len(attrs)
    if unescape:
        for i in normal:
            pieces[i] = texts[i].encode("utf-8", "surrogateescape").replace(_ESCAPED_SPACE, b" ")
    else:
        for i, piece in zip(normal, _bpe_decode_all([texts[i] for i in normal], path)):
            pieces[i] = piece
    for i in user:
        pieces[i] = texts[i].encode("utf-8", "surrogateescape")
    for i in byte:
        raw = texts[i].encode("utf-8", "surrogateescape")
        if vocab.vocab_type == "WPM":
            raise fail(path, f"token {i} {texts[i]!r} is typed byte in a WordPiece vocabulary (llama.cpp aborts on it)")
        if len(raw) < 3:
            raise fail(path, f"byte token {i} {texts[i]!r} is too short to hold a byte value")
        pieces[i] = bytes([_strtol_hex2(raw[3:5])])
    return pieces


def special_ids_of(vocab: GGUFVocab) -> frozenset[int]:
    renders, silent = ATTR_USER_DEFINED | ATTR_NORMAL | ATTR_BYTE, ATTR_UNKNOWN | ATTR_CONTROL
    return frozenset([i for i, a in enumerate(vocab.attrs) if a & silent or not a & renders])


# -- clean_spaces -----------------------------------------------------------------------------

_CLEAN_PUNCT = re.compile(r" (?=[?!.,])")
_CLEAN_QUOTE = re.compile(r" ' ")
_CLEAN_CONTRACTION = re.compile(r" (?='(?:[sm]|re|ve))")


def llama_clean_spaces(text: str) -> str:
    """The three passes of llama_detokenize's clean_spaces, on the decoded text. They only
    move ASCII, so running them on the str equals running them on the bytes before decoding."""
    text = _CLEAN_PUNCT.sub("", text)
    text = _CLEAN_QUOTE.sub("'", text)
    return _CLEAN_CONTRACTION.sub("", text)


# -- the tokenizer ----------------------------------------------------------------------------

_OPTIONS: list[str] = []
_C_SPACE = " \t\n\v\f\r"


class GGUFTokenizer(TableMethods, Tokenizer):
    """The tokenizer inside a GGUF file, exact to llama.cpp's llama_detokenize."""

    def __init__(self, vocab: GGUFVocab, keep_specials: bool = False) -> None:
        self.vocab = vocab
        # keep_specials: the with_specials() view, llama_detokenize with unparse_special on.
        self._pieces = tuple(token_pieces_bytes(vocab, special=keep_specials))  # (a tuple: _engine/join.pyx)
        self._special = frozenset() if keep_specials else special_ids_of(vocab)
        self._size = len(self._pieces)
        # Ids that render nothing (the special ids; in the view, unused and undefined ones).
        skip = bytearray(self._size)
        for i, piece in enumerate(self._pieces):
            if not piece:
                skip[i] = FLAG_SKIP
        # The leading-space rule is llama.cpp's: the first id of the call loses one leading
        # space. In a stream, the first id renders its "first" piece and ends the rule, an id
        # that renders nothing included (a control id first keeps the next id's space).
        self._first = first = None
        if vocab.add_space_prefix:
            self._first = first = tuple([piece[1:] if piece[:1] == b" " else piece for piece in self._pieces])
            self._keeps_none = bytes(self._size)  # decode: no id keeps the first rule past itself
            for i in range(self._size):
                if skip[i]:
                    skip[i] |= FLAG_END_FIRST
        raw = PieceTable(self._pieces, first_pieces=first, flags=bytes(skip), mode="bytes")
        # decode_incremental and token_pieces are TableMethods': the table's compiled engine,
        # or, with clean_spaces, the transducer over it.
        self._table = CleanSpacesStream(raw, self._special) if vocab.clean_spaces else raw
        self._encoder: Any = None

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> GGUFTokenizer:
        reject_unknown_options(spec.options, _OPTIONS, "gguf")
        path = existing_file(spec.file("gguf"), "GGUF")
        tokenizer = cls(load_vocab(path))
        tokenizer.spec = spec
        return tokenizer

    # -- the contract ------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    def id_to_piece(self, token_id: int) -> str:
        """The vocabulary's token string ("▁the", "Ġthe", "<0x0A>", "<|im_end|>")."""
        return self.vocab.texts[self.check_ids([token_id])[0]]

    def decode(self, ids: Sequence[int]) -> str:
        # llama_detokenize: every id's piece joined; with add_space_prefix the first id's
        # piece loses one leading space (its "first" piece; no id keeps the rule past itself).
        if self._first is None:
            raw: bytes = join_pieces(self._pieces, ids)
        else:
            raw = join_pieces(self._pieces, ids, self._first, self._keeps_none)
        text = raw.decode("utf-8", "replace")
        return llama_clean_spaces(text) if self.vocab.clean_spaces else text

    # -- encode ------------------------------------------------------------------------------

    @property
    def supports_encode(self) -> bool:  # type: ignore[override]
        from .encode import encode_refusal

        return encode_refusal(self.vocab) is None

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """llama.cpp's `llama_tokenize(text, add_special, parse_special)` with add_special =
        add_special_tokens (None: False) and parse_special = not split_special_tokens: the text
        is cut at the spelling of every control, unknown and user-defined token (longest token
        first, each over the whole text, as tokenizer_st_partition does; with
        split_special_tokens only the user-defined ones), each stretch between is encoded on
        its own, and add_special_tokens adds bos / eos (WordPiece: bos and sep) as the file's
        add_bos_token / add_eos_token say."""
        text = checked_text(text, "gguf")
        encoder = self._plain_encoder()
        ids: list[int] = []
        for part in self._partition(text, not split_special_tokens):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids.extend(encoder(part))
        return self._add_specials(ids) if add_special_tokens else ids

    def _plain_encoder(self) -> Any:
        if self._encoder is None:
            from .encode import build_encoder, encode_refusal

            refusal = encode_refusal(self.vocab)
            if refusal is not None:
                raise EncodeError(refusal)
            self._encoder = build_encoder(self.vocab)
        return self._encoder

    def _partition(self, text: str, parse_special: bool) -> list[str | int]:
        """tokenizer_st_partition: for each special token, longest text first (ties by id), every
        occurrence in every stretch not yet matched becomes that token."""
        key = "_oasr_partition_control" if parse_special else "_oasr_partition_user"
        order = self.__dict__.get(key)
        if order is None:
            wanted = ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN if parse_special else ATTR_USER_DEFINED
            attrs, texts = self.vocab.attrs, self.vocab.texts
            found = [
                i
                for i, a in enumerate(attrs)
                if a & wanted and (parse_special or not a & (ATTR_CONTROL | ATTR_UNKNOWN))
            ]
            order = [
                (texts[i], i) for i in sorted(found, key=lambda i: -len(texts[i].encode("utf-8", "surrogateescape")))
            ]
            self.__dict__[key] = order
        attrs = self.vocab.attrs
        parts: list[str | int] = [text] if text else []
        for token_text, token_id in order:
            if not any(type(p) is str and token_text in p for p in parts):
                continue
            lstrip, rstrip = attrs[token_id] & ATTR_LSTRIP, attrs[token_id] & ATTR_RSTRIP
            cut: list[str | int] = []
            for part in parts:
                if type(part) is not str or token_text not in part:
                    cut.append(part)
                    continue
                stretches = part.split(token_text)
                for k, stretch in enumerate(stretches):
                    if k:
                        cut.append(token_id)
                        if rstrip:  # the whitespace right after the token (C isspace: ASCII only)
                            stretch = stretch.lstrip(_C_SPACE)
                    if lstrip and k < len(stretches) - 1:
                        stretch = stretch.rstrip(_C_SPACE)
                    if stretch:
                        cut.append(stretch)
            parts = cut
        return parts

    def _add_specials(self, ids: list[int]) -> list[int]:
        # tokenize_impl's add_special: SPM, UGM and BPE add bos / eos as add_bos / add_eos say;
        # WordPiece always adds bos in front and sep at the end.
        v = self.vocab
        if v.vocab_type == "WPM":
            head, tail = v.ids["bos"], v.ids["sep"]
        else:
            head = v.ids["bos"] if v.add_bos else None
            tail = v.ids["eos"] if v.add_eos else None
        return [*([head] if head is not None else []), *ids, *([tail] if tail is not None else [])]

    # -- the prompt side (docs/prompts.md) ---------------------------------------------------

    def _special_tokens(self) -> SpecialTokens:
        """The roles llama.cpp reports (llama_vocab_bos/eos/unk/pad/sep/cls/mask: a GGUF key, or
        llama.cpp's default for the vocabulary type) and its end-of-generation set as stop ids."""
        v = self.vocab
        builder = SpecialTokensBuilder(self._size)
        keys = dict(SPECIAL_KEYS[:8])
        for role, ours in (
            ("bos", "bos"),
            ("eos", "eos"),
            ("unk", "unk"),
            ("pad", "pad"),
            ("sep", "sep"),
            ("mask", "mask"),
            ("cls", "bos"),
        ):
            token_id = v.ids[ours]
            key = keys[ours]
            if role == "cls":
                why = "llama.cpp's cls is its bos (llama_vocab_cls)"
            elif key in v.meta.values and token_id == v.meta.values[key]:
                why = f"GGUF key {key}"
            elif token_id is None:
                why = f"none in this GGUF ({key} absent or out of range)"
            else:
                why = f"llama.cpp's default for a {v.model!r} vocabulary ({key} absent)"
            if token_id is not None:
                why += f" ({v.texts[token_id]!r})"
            builder.set(role, token_id, why)
        for token_id in sorted(v.eog_ids):
            why = "llama.cpp's end-of-generation set"
            for role in ("eos", "eot", "eom"):
                if v.ids[role] == token_id:
                    why = f"llama.cpp's end-of-generation set: its {role} token"
                    break
            builder.stop(token_id, f"{why} ({v.texts[token_id]!r})")
        builder.add_bos = v.add_bos or v.vocab_type == "WPM"
        builder.add_eos = v.add_eos
        return builder.build()

    def _vocabulary(self) -> dict[str, int]:
        # llama.cpp refuses duplicate token strings, so every text names one id.
        return dict(zip(self.vocab.texts, range(self._size)))

    def _keep_specials(self) -> Tokenizer:
        return GGUFWithSpecials(self)

    def _chat_templates(self) -> dict[str, str]:
        """`tokenizer.chat_template` as "default" and `tokenizer.chat_template.<name>` by name,
        the keys llama_model_chat_template(model, name) reads."""
        templates: dict[str, str] = {}
        values = self.vocab.meta.values
        if self.vocab.chat_template is not None:
            templates["default"] = self.vocab.chat_template
        prefix = K_TEMPLATE + "."
        for key in sorted(k for k in values if k.startswith(prefix)):
            value = values[key]
            if isinstance(value, str):
                templates[key[len(prefix) :]] = value
        return templates

    # -- metadata ----------------------------------------------------------------------------

    @property
    def stop_ids(self) -> frozenset[int]:
        """The end-of-generation ids llama.cpp derives (special_eog_ids); the same set as
        special_tokens.stop_ids."""
        return self.vocab.eog_ids

    def describe_details(self) -> dict[str, Any]:
        """Plain data for `describe`: model type, pre, the special ids, the add_* flags, the
        stop ids and whether a chat template is present."""
        v = self.vocab
        return {
            "model": v.model,
            "vocab_type": v.vocab_type,
            "pre": v.pre,
            **{f"{role}_id": v.ids[role] for role in ("bos", "eos", "eot", "eom", "unk", "pad", "sep")},
            "add_bos": v.add_bos,
            "add_eos": v.add_eos,
            "add_space_prefix": v.add_space_prefix,
            "clean_spaces": v.clean_spaces,
            "stop_ids": sorted(v.eog_ids),
            "has_chat_template": v.chat_template is not None,
            "gguf_version": v.meta.version,
            "byte_order": "little" if v.meta.byte_order == "<" else "big",
        }


def _vocabulary_for_value(path: str) -> tuple[bytes, str]:
    # A GGUF model file is gigabytes of tensors: by value it travels as its vocabulary only.
    import os

    return vocabulary_only_gguf(path), os.path.basename(path)


register_value_reader(".gguf", _vocabulary_for_value)


class GGUFWithSpecials(GGUFTokenizer):
    """`GGUFTokenizer.with_specials()`: llama_detokenize(ids, remove_special=False,
    unparse_special=True): control and unknown tokens render their own text ("<s>",
    "<|im_end|>"), then the same leading-space and clean_spaces rules run over the whole text.
    Unused and undefined ids still render nothing. special_ids is empty; encode is the parent's."""

    def __init__(self, parent: GGUFTokenizer) -> None:
        super().__init__(parent.vocab, keep_specials=True)
        self._parent = parent

    @property
    def supports_encode(self) -> bool:  # type: ignore[override]
        return self._parent.supports_encode

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        return self._parent.encode(text, add_special_tokens, split_special_tokens=split_special_tokens)


# -- recognising the files (the registry's detector for this kind) ----------------------------


def _found(path: str, order: int) -> Found:
    version, byte_order = read_gguf_header(path)
    found = Found("gguf", {"gguf": path}, source=os.path.basename(path), order=order)
    found.evidence.append(
        (
            "kind",
            f"gguf: the file starts with the GGUF magic (version {version}, {byte_order}-endian); "
            "its tokenizer.ggml.* keys are the tokenizer",
        )
    )
    found.evidence.append(("special_ids", "the control, unknown, unused and undefined tokens, as llama.cpp types them"))
    return found


def detect(path: str) -> list[Detected]:
    """A GGUF file, recognised by its magic, never its name: given alone, or the *.gguf of a
    folder (several: the first by name wins, mmproj* projector files last)."""
    if not os.path.isdir(path):
        return [_found(path, 0)] if is_gguf_file(path) else []
    names = [n for n in folder_names(path) if n.endswith(".gguf") and is_gguf_file(os.path.join(path, n))]
    names.sort(key=lambda n: (n.startswith("mmproj"), n))
    return [_found(os.path.join(path, name), sub) for sub, name in enumerate(names)]
