"""`oasr_tok.Tokenizer`: the class every kind subclasses.

It is the contract (contract.py: decode, streaming, token pieces, with their reference
implementations) with the parts each module owns added: the streaming driver (streaming.py),
the prompt side and chat templates (prompting.py, chat.py), timed words (words.py) and copying
and pickling by value (pickling.py). docs/architecture.md draws the layers.
"""

from __future__ import annotations

from .chat import ChatTemplates
from .pickling import PickledByValue
from .prompting import PromptSide
from .streaming import Streaming
from .words import TimedOutput

__all__ = ["Tokenizer"]


class Tokenizer(ChatTemplates, PromptSide, TimedOutput, Streaming, PickledByValue):
    """Turns recogniser token ids into text (whole, streamed, per token, as timed words) and,
    where `supports_encode` is true, text into ids. A kind implements `vocab_size`,
    `special_ids` and `decode` (see contract.TokenizerContract); everything else has a default."""
