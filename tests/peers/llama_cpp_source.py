"""What llama.cpp's own source says about its pre-tokenizers, read from llama-vocab.cpp in the
llama-cpp-python sdist (fixtures/fetch_llama_cpp.py unpacks it; nothing is built): every
pre type's regex_exprs, and which `tokenizer.ggml.pre` names select it. The peers' tests
compare oasr_tok's table with this, so a regex copied wrongly (an editor normalising one of
its characters, say) cannot pass."""

from __future__ import annotations

import re
from pathlib import Path

_CASE = re.compile(r"case (LLAMA_VOCAB_PRE_TYPE_\w+):")
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _unescape(literal: str) -> str:
    # C++ escapes in the source's UTF-8 text: \\ \" \r \n
    return literal.encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


def _strip_comments(block: str) -> str:
    return "\n".join(
        line.split("//", 1)[0] if not line.strip().startswith('"') else line for line in block.splitlines()
    )


def regex_exprs(source: str) -> dict[str, tuple[str, ...]]:
    """LLAMA_VOCAB_PRE_TYPE_* (and "DEFAULT") -> the regexes llm_tokenizer_bpe gives it."""
    start = source.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    end = source.index("std::vector<std::string> regex_exprs;", start)
    body = source[start:end]
    out: dict[str, tuple[str, ...]] = {}
    pending: list[str] = []
    for chunk in re.split(r"(case LLAMA_VOCAB_PRE_TYPE_\w+:|default:)", body)[1:]:
        if chunk.startswith("case "):
            pending.append(_CASE.match(chunk).group(1))  # type: ignore[union-attr]
            continue
        if chunk == "default:":
            pending.append("DEFAULT")
            continue
        if "regex_exprs = {" not in chunk:
            continue
        block = chunk[chunk.index("regex_exprs = {") : chunk.index("};", chunk.index("regex_exprs = {"))]
        lines = [line for line in block.splitlines() if not line.strip().startswith("//")]
        literals = [
            _unescape(m)
            for line in lines
            for m in _LITERAL.findall(line.split(" //", 1)[0] if '"' not in line.split(" //", 1)[-1] else line)
        ]
        for name in pending:
            out[name] = tuple(literals)
        pending = []
    return out


def pre_names(source: str) -> dict[str, str]:
    """tokenizer.ggml.pre name -> LLAMA_VOCAB_PRE_TYPE_* it selects (llama_vocab::impl::load)."""
    out: dict[str, str] = {}
    start = source.index('tokenizer_pre == "default"')
    end = source.index('throw std::runtime_error(format("unknown pre-tokenizer type', start)
    for branch in re.split(r"\}\s*else if\s*\(", source[start:end]):
        names = re.findall(r'tokenizer_pre == "([^"]+)"', branch)
        kind = re.search(r"pre_type = (LLAMA_VOCAB_PRE_TYPE_\w+);", branch)
        if names and kind:
            for name in names:
                out.setdefault(name, kind.group(1))
    return out


def ignore_merges(source: str) -> set[str]:
    """The tokenizer.ggml.pre names for which llama.cpp sets ignore_merges."""
    out: set[str] = set()
    start = source.index('tokenizer_pre == "default"')
    end = source.index('throw std::runtime_error(format("unknown pre-tokenizer type', start)
    for branch in re.split(r"\}\s*else if\s*\(", source[start:end]):
        if "ignore_merges = true" in branch:
            out.update(re.findall(r'tokenizer_pre == "([^"]+)"', branch))
    return out


def read(root: Path) -> str:
    return (root / "src" / "llama-vocab.cpp").read_text(encoding="utf-8")
