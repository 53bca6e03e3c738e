"""One cold load in a fresh process, for test_cold_load.py: `python cold_probe.py IMPL PATH`
imports the library (not timed), then times the load call alone and prints three numbers:
its milliseconds, the RSS it added (peak RSS after it minus RSS before it, MB) and the CPU
milliseconds it took (user + system, every thread: on a machine shared with other work the
wall time also counts the waits for a core).

IMPL: oasr_tok (oasr_tok.load), oasr_tok-pickle (pickle.loads of a tokenizer pickled by value,
its bytes read before the timing: what a worker that never had the files pays), tokenizers
(Tokenizer.from_file), mistral-common (Tekkenizer.from_file), tiktoken (Meta's llama_models
Tokenizer of a tokenizer.model: it reads the ranks and builds tiktoken's Encoding),
tiktoken-encoding (tiktoken's Encoding built from ranks read before the timing, with Meta's
special tokens and pattern)."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from typing import Any


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    """This process image's peak RSS (VmHWM). Not ru_maxrss, which a process started by a
    large one (pytest) inherits from it across fork and exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def main() -> None:
    impl, path = sys.argv[1], sys.argv[2]
    load: Callable[[], Any]
    if impl == "oasr_tok":
        import oasr_tok

        def load() -> Any:
            return oasr_tok.load(path)
    elif impl == "oasr_tok-pickle":
        import pickle

        import oasr_tok

        with open(path, "rb") as handle:
            blob = handle.read()

        def load() -> Any:
            return pickle.loads(blob)
    elif impl == "tokenizers":
        from tokenizers import Tokenizer

        def load() -> Any:
            return Tokenizer.from_file(path)
    elif impl == "mistral-common":
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        def load() -> Any:
            return Tekkenizer.from_file(path)
    elif impl in ("tiktoken", "tiktoken-encoding"):
        from pathlib import Path

        if "llama4" in path:
            from llama_models.llama4.tokenizer import Tokenizer as Meta
        else:
            from llama_models.llama3.tokenizer import Tokenizer as Meta
        if impl == "tiktoken":

            def load() -> Any:
                return Meta(Path(path))
        else:
            import tiktoken
            from tiktoken.load import load_tiktoken_bpe

            meta = Meta(Path(path))
            ranks, specials, pattern = load_tiktoken_bpe(path), dict(meta.special_tokens), meta.model._pat_str
            del meta

            def load() -> Any:
                return tiktoken.Encoding(
                    Path(path).name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials
                )
    else:
        raise SystemExit(f"unknown implementation {impl!r}")
    before = rss_mb()
    cpu = time.process_time()
    start = time.perf_counter()
    loaded = load()
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    print(f"{seconds * 1e3:.2f} {peak_rss_mb() - before:.1f} {cpu * 1e3:.2f}")
    del loaded


if __name__ == "__main__":
    main()
