"""Chat templates: jinja templates rendered exactly as transformers renders them, and NeMo's
ChatTemplateMixin style for SentencePiece checkpoints without one (see docs/prompts.md).

The jinja side follows transformers' `apply_chat_template(..., tokenize=False)` rule for
rule (utils/chat_template_utils.py): an ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks, the loopcontrols extension and a `{% generation %}` block tag; a `tojson`
filter that does not escape HTML; `raise_exception`, `strftime_now`, a restricted `dict` and
a `namespace` that refuses underscore names as globals; every input rebuilt from plain JSON
types (anything else becomes "<TypeName>"); message keys whose value is None dropped; the
reasoning aliases (`reasoning_content` / `thinking` / `reasoning`) filled; the variables are
the special tokens (bos_token, eos_token, ...) then the caller's keywords, then `messages`,
`tools`, `documents` and `add_generation_prompt`. A template never runs outside the sandbox.

NeMo style: a dict {"roles": {role: "… {_content_} … {_eos_}"}, "prefix": "…"}; literal text
and the message content are encoded as plain text, each `{_name_}` is the special token of
that role (eos, bos, …) as an id.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any

from ..errors import BackendNotInstalledError, ChatMessageError, ChatTemplateError, PiecesNotSupportedError
from .prompting import PromptSide

__all__ = ["apply_chat_template", "render_jinja", "render_nemo_style"]

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
_NEMO_VARIABLE = re.compile(r"(\{_[^}]+_\})")
_NEMO_VALID = re.compile(r"^\{_[A-Za-z][A-Za-z0-9_]*_\}$")


def _jinja() -> Any:
    try:
        import jinja2
        import jinja2.ext
        import jinja2.sandbox
    except ImportError as exc:
        raise BackendNotInstalledError(
            f"chat templates need the 'jinja2' package ({exc}); pip install 'oasr_tok[chat]'"
        ) from exc
    return jinja2


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    jinja2 = _jinja()
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.utils import Namespace

    class GenerationBlock(Extension):
        # transformers' `{% generation %}` tag only marks assistant spans for a token mask; the
        # rendered text is the block's body.
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Callable[[], str]) -> str:
            return caller()

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
    ) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format: str) -> str:
        return datetime.now().strftime(format)

    class TemplateDict:
        # dict() and dict.fromkeys() only: no attribute of the real type reaches the template.
        def __call__(self, *args: Any, **kwargs: Any) -> dict:
            return dict(*args, **kwargs)

        def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(Namespace):
        # A namespace that refuses underscore names (a way towards CPython internals).
        def __init__(*args: Any, **kwargs: Any) -> None:
            self, rest = args[0], args[1:]
            attrs = dict(*rest, **kwargs)
            for name in attrs:
                TemplateNamespace._check(name)
            Namespace.__init__(self, attrs)

        def __setitem__(self, name: str, value: Any) -> None:
            TemplateNamespace._check(name)
            Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check(name: Any) -> None:
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"chat templates cannot store underscore-prefixed attributes on a namespace ({name!r})"
                )

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


@functools.lru_cache(maxsize=32)
def _compiled(source: str) -> Any:
    jinja2 = _jinja()
    try:
        return _environment().from_string(source)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise ChatTemplateError(f"the chat template does not compile (line {exc.lineno}): {exc.message}") from None


def _plain(value: Any) -> Any:
    """`value` rebuilt from JSON types: what a template may see (transformers' rule)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and callable(item):  # a numpy scalar, without importing numpy
        return _plain(item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _as_dicts(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _as_dicts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_dicts(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_as_dicts(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _as_dicts(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _as_dicts(value.model_dump())
    return value


def _conversations(messages: Any) -> tuple[list[list[dict]], bool]:
    """The conversations (one unless batched) as lists of message dicts, None values dropped."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, (list, tuple)):
        raise ChatMessageError(
            f"messages must be a list of message dicts ({{'role': ..., 'content': ...}}), got {type(messages).__name__}"
        )
    if not messages:
        raise ChatMessageError("messages is empty: a chat template needs at least one message")
    batched = isinstance(messages[0], (list, tuple))
    out = []
    for chat in messages if batched else [messages]:
        if not isinstance(chat, (list, tuple)):
            raise ChatMessageError(f"a batch of conversations must hold lists of messages, got {type(chat).__name__}")
        normal = []
        for position, message in enumerate(_as_dicts(list(chat))):
            if not isinstance(message, dict):
                raise ChatMessageError(
                    f"message {position} must be a dict with 'role' and 'content', got {type(message).__name__}: "
                    f"{message!r:.80}"
                )
            normal.append({k: v for k, v in message.items() if v is not None})
        out.append(normal)
    return out, batched


def _alias_reasoning(chat: list[dict]) -> list[dict]:
    out = []
    for message in chat:
        reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def _tag_final_message(chat: list[dict], field: str, source: str) -> str:
    """transformers' continue_final_message preparation: the final message's `field` (its last
    text block, for content parts) gets a marker appended; returns the text to continue."""
    if not chat:
        raise ChatMessageError("continue_final_message is set but the conversation is empty")
    final = chat[-1].get(field)
    if final is None:
        raise ChatTemplateError(f"continue_final_message is set but the final message has no {field!r} to continue")
    fields = [field]
    if field in _REASONING_FIELDS:
        # reasoning is copied under several names: tag every copy, accept whichever the template reads
        fields = [name for name in _REASONING_FIELDS if chat[-1].get(name) == final]
    if not any(name in source for name in fields):
        raise ChatTemplateError(f"continue_final_message is set to {field!r}, which this chat template never reads")
    if isinstance(final, (list, tuple)):
        for block in reversed(final):
            if isinstance(block, dict) and "text" in block:
                final = block["text"]
                block["text"] = block["text"] + _CONTINUE_TAG
                break
        else:
            raise ChatTemplateError("continue_final_message is set but the final message has no text block to continue")
    elif isinstance(final, str):
        for name in fields:
            chat[-1][name] = chat[-1][name] + _CONTINUE_TAG
    if not isinstance(final, str):
        raise ChatMessageError(
            f"continue_final_message: the text to continue must be a str, got {type(final).__name__}"
        )
    return final


def _cut_at_tag(rendered: str, final: str) -> str:
    """The rendering up to where the final message's text ends (transformers' rule: the marker
    must survive the template; if the template trimmed the space after it, so is the text)."""
    marker = _CONTINUE_TAG.strip()
    if final.strip() not in rendered or marker not in rendered:
        raise ChatTemplateError(
            "continue_final_message is set but the final message does not appear in the rendering: the chat "
            "template changes or drops part of it"
        )
    at = rendered.rindex(marker)
    if rendered[at : at + len(_CONTINUE_TAG)] == _CONTINUE_TAG:
        return rendered[:at]
    return rendered[:at].rstrip()


def render_jinja(
    source: str,
    messages: Any,
    *,
    add_generation_prompt: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    variables: Mapping[str, Any] | None = None,
    continue_final_message: bool | str = False,
    **kwargs: Any,
) -> str | list[str]:
    """`source` rendered for `messages` (a list of messages, or a list of such lists: then a
    list of strings) as transformers renders it. `variables` (the special tokens) come first,
    `kwargs` override them. continue_final_message (True: "content", or the field's name)
    leaves the final message open: the rendering stops where its text ends."""
    jinja2 = _jinja()
    if continue_final_message and add_generation_prompt:
        raise ChatTemplateError(
            "continue_final_message and add_generation_prompt cannot both be set: one continues "
            "the final message, the other starts a new assistant message"
        )
    if not isinstance(continue_final_message, (bool, str)):
        raise ChatTemplateError(
            f"continue_final_message must be a bool or a field name, got {type(continue_final_message).__name__}"
        )
    template = _compiled(source)
    conversations, batched = _conversations(messages)
    if tools is not None:
        if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, (list, tuple)):
            raise ChatMessageError(f"tools must be a list of JSON-schema dicts, got {type(tools).__name__}")
        for position, tool in enumerate(tools):
            if not isinstance(tool, Mapping):
                raise ChatMessageError(
                    f"tool {position} must be a JSON-schema dict (oasr_tok does not turn functions into schemas), "
                    f"got {type(tool).__name__}"
                )
        tools = _plain(list(tools))
    documents = kwargs.pop("documents", None)
    if documents is not None:
        if not all(isinstance(d, Mapping) for d in documents):
            raise ChatMessageError("documents must be a list of dicts with 'title' and 'text' keys")
        documents = _plain(documents)
    names = _plain({**(variables or {}), **kwargs})
    rendered = []
    field = continue_final_message if isinstance(continue_final_message, str) else "content"
    for chat in conversations:
        chat = _alias_reasoning(_plain(chat))
        final = _tag_final_message(chat, field, source) if continue_final_message else None
        try:
            text = template.render(
                messages=chat, tools=tools, documents=documents, add_generation_prompt=add_generation_prompt, **names
            )
        except jinja2.exceptions.SecurityError as exc:
            raise ChatTemplateError(f"the chat template tried something the sandbox forbids: {exc}") from None
        except jinja2.exceptions.TemplateError as exc:
            raise ChatTemplateError(f"the chat template raised an error: {exc}") from None
        except Exception as exc:  # a template operation failing on these inputs (e.g. '+' on a list)
            raise ChatTemplateError(
                f"the chat template failed on these messages: {type(exc).__name__}: {exc}"
            ) from None
        rendered.append(text if final is None else _cut_at_tag(text, final))
    return rendered if batched else rendered[0]


def _nemo_parts(template: str, message: Mapping[str, Any] | None) -> list[tuple[str, str | None]]:
    """NeMo's render_chat_turn: (literal text with the content filled in, the special-token
    name that follows it or None) for one turn template."""
    out: list[tuple[str, str | None]] = []
    text: list[str] = []
    for part in _NEMO_VARIABLE.split(template):
        if not part:
            continue
        if _NEMO_VALID.match(part):
            name = part[2:-2]
            if name == "content":
                if message is None:
                    raise ChatTemplateError("a NeMo-style prefix cannot hold {_content_}")
                text.append(message["content"])
            else:
                out.append(("".join(text), name))
                text = []
        else:
            text.append(part)
    out.append(("".join(text), None))
    return out


def render_nemo_style(
    tok: ChatTemplates,
    messages: Any,
    template: Mapping[str, Any],
    *,
    tokenize: bool = True,
    add_generation_prompt: bool = False,
) -> str | list[int]:
    """A NeMo ChatTemplateMixin template rendered for `messages`: literal text and content
    encoded as plain text (no special-token matching), `{_eos_}` & co. as their ids, turns
    buffered between special tokens as NeMo's tokenize_with_chat_template does. tokenize=False
    gives the text with each special token spelled by its piece."""
    if not isinstance(template, Mapping) or not isinstance(template.get("roles"), Mapping):
        raise ChatTemplateError("a NeMo-style chat template is a dict with a 'roles' dict (role -> turn template)")
    roles: Mapping[str, Any] = template["roles"]
    conversations, batched = _conversations(messages)
    if batched:
        raise ChatMessageError("NeMo-style templates render one conversation at a time")
    turns: list[tuple[str, str | None]] = []
    if "prefix" in template:
        turns += _nemo_parts(_template_string(template["prefix"], "prefix"), None)
    for position, message in enumerate(conversations[0]):
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or role not in roles:
            raise ChatMessageError(f"message {position} has role {role!r}; this template has roles {sorted(roles)}")
        if not isinstance(content, str):
            raise ChatMessageError(
                f"message {position}: NeMo-style templates take string content, got {type(content).__name__}"
            )
        turns += _nemo_parts(_template_string(roles[role], f"roles[{role!r}]"), message)
    if add_generation_prompt:
        if "generation_prompt" not in template:
            raise ChatTemplateError("this NeMo-style template has no 'generation_prompt' to add")
        turns += _nemo_parts(_template_string(template["generation_prompt"], "generation_prompt"), None)
    specials = tok.special_tokens
    ids: list[int] = []
    text: list[str] = []
    buffer: list[str] = []
    for literal, name in turns:
        buffer.append(literal)
        if name is None:
            continue
        token_id = specials.id_of(name)
        if token_id is None:
            raise ChatTemplateError(f"the template asks for {{_{name}_}} but this tokenizer has no {name} token")
        joined = "".join(buffer)
        buffer = []
        if tokenize:
            ids += tok.encode(joined, add_special_tokens=False, split_special_tokens=True) if joined else []
            ids.append(token_id)
        else:
            text += [joined, tok.id_to_piece(token_id)]
    tail = "".join(buffer)
    if tokenize:
        if tail:
            ids += tok.encode(tail, add_special_tokens=False, split_special_tokens=True)
        return ids
    return "".join(text) + tail


def _template_string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ChatTemplateError(f"NeMo-style template entry {where} must be a string, got {type(value).__name__}")
    return value


def _template_variables(tok: ChatTemplates) -> Mapping[str, Any]:
    # Read once per tokenizer (a kind may build them from its config files); a pickled
    # tokenizer is rebuilt from its files, so the cache never travels stale.
    variables = tok.__dict__.get("_oasr_template_variables")
    if variables is None:
        variables = MappingProxyType(dict(tok._template_variables()))
        tok.__dict__["_oasr_template_variables"] = variables
    return variables


def apply_chat_template(
    tok: ChatTemplates,
    messages: Any,
    *,
    add_generation_prompt: bool = False,
    tokenize: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    chat_template: str | Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Tokenizer.apply_chat_template (see there)."""
    continue_final_message = kwargs.pop("continue_final_message", False)
    templates = tok.chat_templates
    source: str | Mapping[str, Any] | None
    if isinstance(chat_template, Mapping):
        source = chat_template
    elif isinstance(chat_template, str):
        source = templates.get(chat_template, chat_template)
    elif chat_template is not None:
        raise ChatTemplateError(
            f"chat_template must be a template name, a template or a NeMo-style dict, got {type(chat_template).__name__}"
        )
    elif tools is not None and "tool_use" in templates:
        source = templates["tool_use"]
    elif "default" in templates:
        source = templates["default"]
    elif templates:
        raise ChatTemplateError(
            f"this checkpoint ships several chat templates and no default one; pick one by name "
            f"(chat_template=...): {sorted(templates)}"
        )
    else:
        source = getattr(tok, "nemo_chat_template", None)
        if source is None:
            kind = tok.spec.kind if tok.spec is not None else type(tok).__name__
            raise ChatTemplateError(f"this {kind} checkpoint ships no chat template; pass one with chat_template=...")
    if isinstance(source, Mapping):
        if tools is not None or kwargs or continue_final_message:
            raise ChatTemplateError("NeMo-style templates take no tools, template variables or continue_final_message")
        return render_nemo_style(tok, messages, source, tokenize=tokenize, add_generation_prompt=add_generation_prompt)
    rendered = render_jinja(
        source,
        messages,
        add_generation_prompt=add_generation_prompt,
        tools=tools,
        variables=_template_variables(tok),
        continue_final_message=continue_final_message,
        **kwargs,
    )
    if not tokenize:
        return rendered
    if isinstance(rendered, list):
        return [tok.encode(r, add_special_tokens=False) for r in rendered]
    return tok.encode(rendered, add_special_tokens=False)


class ChatTemplates(PromptSide):
    """Chat templates: the ones the checkpoint ships, rendered as transformers renders them.

    A kind provides ``_chat_templates() -> dict[str, str]`` (named jinja templates, "default"
    for the unnamed one; default: none) and may override ``_template_variables() -> dict``
    (extra variables for templates; default: bos_token, eos_token, ... spelled as the
    vocabulary spells those ids)."""

    @property
    def chat_template(self) -> str | None:
        """The chat template source the checkpoint ships (its default one), None without one."""
        return self.chat_templates.get("default")

    @property
    def chat_templates(self) -> Mapping[str, str]:
        """Every named chat template the checkpoint ships ("default" for the unnamed one)."""
        cached = self.__dict__.get("_oasr_chat_templates")
        if cached is None:
            parent = self.__dict__.get("_oasr_specials_of")
            cached = parent.chat_templates if parent is not None else MappingProxyType(dict(self._chat_templates()))
            self.__dict__["_oasr_chat_templates"] = cached
        return cached

    def _chat_templates(self) -> dict[str, str]:
        return {}

    def _template_variables(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, token_id in self.special_tokens.as_dict().items():
            if token_id is not None:
                try:
                    out[name.replace("_id", "_token")] = self.id_to_piece(token_id)
                except PiecesNotSupportedError:
                    break
        return out

    def apply_chat_template(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool = False,
        tokenize: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        chat_template: str | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> str | list[int]:
        """Render `messages` with the checkpoint's chat template exactly as transformers'
        apply_chat_template does (same jinja2 sandbox and settings; needs the `chat` extra).
        `chat_template` picks a named template or gives one (a jinja source, or a NeMo-style
        {"roles": ..., "prefix": ...} dict); `kwargs` reach the template as variables.
        tokenize=True returns the ids, special-token text matched as one id."""
        return apply_chat_template(  # type: ignore[no-any-return]
            self,
            messages,
            add_generation_prompt=add_generation_prompt,
            tokenize=tokenize,
            tools=tools,
            chat_template=chat_template,
            **kwargs,
        )
