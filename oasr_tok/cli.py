"""The ``oasr-tok`` command (also ``python -m oasr_tok``). See docs/cli.md.

    oasr-tok describe PATH            what PATH resolves to, and why
    oasr-tok decode PATH [IDS ...]    ids as arguments, or one JSON list per stdin line (or ints)
    oasr-tok stream PATH              ids on stdin; deltas printed (and flushed) as they settle
    oasr-tok stream PATH --revisions  whole hypotheses on stdin; committed words out, partial on stderr
    oasr-tok words PATH               {"ids", "starts", "ends"} JSON on stdin; timed words out
              [--format srt|vtt|tsv|txt|json|ctm]   or subtitles / CTM of them (docs/subtitles.md)
    oasr-tok demo [ARGS ...]          the bundled demo

``--json`` works everywhere (before or after the subcommand). Exit codes: 0 success; 1 the
tokenizer cannot be resolved or built (bad path, missing/malformed file, backend missing);
2 bad command line; 3 bad input (ids, JSON, timings); 141 stdout closed early. A user
mistake is one line on stderr, never a traceback. Input and output are UTF-8.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from .errors import TokenizerError, short_repr

if TYPE_CHECKING:
    from .core.tokenizer import Tokenizer

__all__ = ["main"]

EXIT_OK, EXIT_LOAD, EXIT_USAGE, EXIT_INPUT, EXIT_PIPE = 0, 1, 2, 3, 141
_INT = re.compile(r"-?\d+")


class _Failure(Exception):
    """A user mistake: printed as one line on stderr, then `code` is the exit status."""

    def __init__(self, code: int, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.code, self.kind = code, kind


def _load(path: str) -> Tokenizer:
    from .loading.resolution import load

    try:
        return load(path)
    except (TokenizerError, OSError) as exc:
        raise _Failure(EXIT_LOAD, f"cannot load a tokenizer from {path}: {exc}", type(exc).__name__) from None


_MESSAGE_LIMIT = 1000


def _bad_input(where: str, exc: BaseException | str) -> _Failure:
    kind = type(exc).__name__ if isinstance(exc, BaseException) else "InputError"
    message = " ".join(str(exc).split("\n"))
    if len(message) > _MESSAGE_LIMIT:  # one readable line, whatever the input held
        message = message[: _MESSAGE_LIMIT - 30] + f"... ({len(message)} chars)"
    return _Failure(EXIT_INPUT, f"{where}: {message}", kind)


def _json(text: str, where: str) -> Any:
    """json.loads, with every way it fails on hostile text as bad input: malformed JSON, nesting
    deeper than the parser's recursion limit, an integer of more digits than int() converts."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad_input(where, f"malformed JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise _bad_input(where, "JSON nested too deeply") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise _bad_input(where, f"unreadable JSON value ({exc})") from None


def _ids_from_json(text: str, where: str) -> list[int]:
    value = _json(text, where)
    if not isinstance(value, list):
        raise _bad_input(where, f"expected a JSON list of ids, got {type(value).__name__}")
    return value  # the tokenizer checks each element (type and range) and names the bad one


def _ids_from_words(fields: Sequence[str], where: str) -> list[int]:
    ids = []
    for field in fields:
        if not _INT.fullmatch(field):
            raise _bad_input(where, f"not an integer id: {short_repr(field)}")
        try:
            ids.append(int(field))
        except ValueError:  # more digits than int() converts: no id has that many
            raise _bad_input(where, f"id of {len(field)} digits is out of range") from None
    return ids


def _parse_ids(text: str, where: str) -> list[int]:
    """A JSON list, or whitespace-separated integers."""
    text = text.strip()
    # Anything that opens like JSON is read as JSON, so `{"ids": ...}` gets a JSON answer.
    return _ids_from_json(text, where) if text[:1] in ("[", "{", '"') else _ids_from_words(text.split(), where)


def _stdin_lines() -> Iterator[tuple[int, str]]:
    """(number, line) of stdin, which must be UTF-8: anything else (UTF-16 included) is bad
    input naming the line, not a UnicodeDecodeError traceback."""
    number = 0
    while True:
        number += 1
        try:
            line = sys.stdin.readline()
        except UnicodeDecodeError as exc:
            raise _bad_input(f"stdin line {number}", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        if not line:
            return
        yield number, line


def _stdin_text() -> str:
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as exc:
        raise _bad_input("stdin", f"not UTF-8 text ({exc.reason})") from None


def _emit(out: IO[str], value: Any, as_json: bool) -> None:
    out.write((json.dumps(value, ensure_ascii=False) if as_json else str(value)) + "\n")
    out.flush()


# -- subcommands ------------------------------------------------------------------------------


def _describe(args: argparse.Namespace, out: IO[str]) -> int:
    from .loading.description import describe

    try:
        description = describe(args.path)
    except (TokenizerError, OSError) as exc:
        raise _Failure(EXIT_LOAD, f"cannot describe {args.path}: {exc}", type(exc).__name__) from None
    if args.json:
        _emit(out, description.to_dict(), True)
    else:
        _emit(out, description.text(), False)
    return EXIT_LOAD if description.error else EXIT_OK


def _decode(args: argparse.Namespace, out: IO[str]) -> int:
    tok = _load(args.path)
    if args.keep_specials:
        tok = _keeping_specials(tok, args.path)

    def one(ids: list[int], where: str) -> None:
        try:
            text = tok.decode(ids)
        except (TokenizerError, ValueError, TypeError) as exc:
            raise _bad_input(where, exc) from None
        _emit(out, {"ids": ids, "text": text} if args.json else text, args.json)

    if args.ids:
        one(_parse_ids(" ".join(args.ids), "ids"), "ids")
        return EXIT_OK
    for number, line in _stdin_lines():
        # A blank line is an empty hypothesis, so output lines stay aligned with input lines.
        # JSON lists are the documented form; whitespace-separated ints work as in `stream`.
        one(_parse_ids(line, f"stdin line {number}"), f"stdin line {number}")
    return EXIT_OK


def _keeping_specials(tok: Any, path: str) -> Any:
    try:
        return tok.with_specials()
    except TokenizerError as exc:
        raise _Failure(EXIT_LOAD, f"cannot keep special tokens for {path}: {exc}", type(exc).__name__) from None


def _stream(args: argparse.Namespace, out: IO[str]) -> int:
    if getattr(args, "revisions", False):
        return _stream_revisions(args, out)
    tok = _load(args.path)
    if args.keep_specials:
        tok = _keeping_specials(tok, args.path)
    state: dict[str, Any] = {}
    for number, line in _stdin_lines():
        where = f"stdin line {number}"
        try:
            delta = tok.decode_incremental(_parse_ids(line, where), state)
        except (TokenizerError, ValueError, TypeError, _Failure) as exc:
            if not args.json and state.get("text"):
                out.write("\n")  # end the partial line before the error goes to stderr
            raise exc if isinstance(exc, _Failure) else _bad_input(where, exc) from None
        if args.json:
            _emit(out, {"delta": delta}, True)
        elif delta:
            out.write(delta)
            out.flush()
    rest = tok.decode_incremental([], state, final=True)
    if args.json:
        _emit(out, {"delta": rest, "final": True, "text": state.get("text", "")}, True)
    else:
        out.write(rest + "\n")
        out.flush()
    return EXIT_OK


def _stream_revisions(args: argparse.Namespace, out: IO[str]) -> int:
    """Each stdin line is the recogniser's whole current hypothesis; committed text goes to
    stdout as it settles, the partial to stderr (or both as --json events)."""
    tok = _load(args.path)
    state: dict[str, Any] = {}
    last: list[int] = []
    for number, line in _stdin_lines():  # UTF-8 or a one-line error, as every command reads it
        where = f"stdin line {number}"
        try:
            hypothesis = _parse_ids(line, where)
            delta, partial = tok.decode_hypothesis(hypothesis, state, agreement=args.agreement)
        except (TokenizerError, ValueError, TypeError, _Failure) as exc:
            if not args.json and state.get("committed"):
                out.write("\n")
            raise exc if isinstance(exc, _Failure) else _bad_input(where, exc) from None
        last = hypothesis
        revision = state["revision"]
        if args.json:
            event: dict[str, Any] = {"committed": delta, "partial": partial}
            if revision is not None:
                event["revision"] = {
                    "position": revision[0],
                    "committed_ids": list(revision[1]),
                    "hypothesis_ids": list(revision[2]),
                }
            _emit(out, event, True)
        else:
            if delta:
                out.write(delta)
                out.flush()
            sys.stderr.write(f"\r\x1b[K{partial}" if sys.stderr.isatty() else partial + "\n")
            sys.stderr.flush()
    delta, _partial = tok.decode_hypothesis(last, state, final=True, agreement=args.agreement)
    if args.json:
        _emit(out, {"committed": delta, "partial": "", "final": True, "text": state["committed"]}, True)
    else:
        out.write(delta + "\n")
        out.flush()
    return EXIT_OK


_WORD_KEYS = {"ids", "starts", "ends", "scores"}


def _word_requests(text: str) -> list[tuple[str, Any]]:
    """One JSON document (an object or a list of objects), or JSON lines."""
    try:
        value = _json(text, "stdin")
    except _Failure:
        requests = []
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                requests.append((f"stdin line {number}", _json(line, f"stdin line {number}")))
        return requests
    if isinstance(value, list):
        return [(f"request {k}", v) for k, v in enumerate(value)]
    return [("stdin", value)]


def _words(args: argparse.Namespace, out: IO[str]) -> int:
    tok = _load(args.path)
    requests = _word_requests(_stdin_text())
    if not requests:
        raise _bad_input("stdin", 'expected {"ids": [...], "starts": [...], "ends": [...]} (ends optional)')
    for where, request in requests:
        if not isinstance(request, dict) or "ids" not in request or "starts" not in request:
            raise _bad_input(where, 'expected an object {"ids": [...], "starts": [...], "ends": [...]} (ends optional)')
        unknown = set(request) - _WORD_KEYS
        if unknown:
            raise _bad_input(where, f"unknown key(s) {sorted(unknown)}; expected {sorted(_WORD_KEYS)}")
        for key in _WORD_KEYS & set(request):
            if request[key] is not None and not isinstance(request[key], list):
                raise _bad_input(where, f"{key!r} must be a JSON list")
        try:
            words = tok.word_timings(request["ids"], request["starts"], request.get("ends"), request.get("scores"))
            text = tok.decode(request["ids"])
        except (TokenizerError, ValueError, TypeError) as exc:
            raise _bad_input(where, exc) from None
        if args.format is not None:
            try:
                out.write(_published(words, args, where))
            except (TokenizerError, ValueError) as exc:
                raise _bad_input(where, exc) from None
            out.flush()
            continue
        rows = [w.to_dict() for w in words]
        _emit(out, {"text": text, "words": rows}, True)
    return EXIT_OK


def _published(words: Any, args: argparse.Namespace, where: str) -> str:
    """The words of one request as the file --format names (times taken as seconds)."""
    from .outputs import subtitles

    if args.format == "ctm":
        utterance = args.utterance or ("utt" if where == "stdin" else f"utt{where.split()[-1]}")
        return subtitles.to_ctm(words, utterance)
    options = {
        name: getattr(args, name)
        for name in ("max_line_width", "max_lines", "max_duration")
        if getattr(args, name) is not None
    }
    cues = subtitles.cues(words, **options)
    writer = {
        "srt": subtitles.to_srt,
        "vtt": subtitles.to_vtt,
        "tsv": subtitles.to_tsv,
        "txt": subtitles.to_txt,
        "json": subtitles.to_json,
    }[args.format]
    text = writer(cues)
    return text if text.endswith("\n") else text + "\n"


def _demo(args: argparse.Namespace, out: IO[str]) -> int:
    try:
        from .demo import main as demo_main
    except ImportError as exc:
        raise _Failure(EXIT_LOAD, f"the demo is not available in this installation ({exc})", "ImportError") from None
    argv = list(args.demo_args)
    if args.json and "--json" not in argv:
        argv.append("--json")
    return int(demo_main(argv) or 0)


# -- the parser -------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand's default must not overwrite a --json given before it.
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable JSON output")
    parser = argparse.ArgumentParser(
        prog="oasr-tok", description="Turn ASR token ids back into text, with the tokenizer a checkpoint ships."
    )
    parser.add_argument("--json", action="store_true", default=False, help="machine-readable JSON output")
    parser.add_argument("--version", action="version", version=f"oasr-tok {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("describe", parents=[common], help="what a checkpoint's tokenizer files resolve to, and why")
    p.add_argument("path", help="a model directory or one tokenizer file")
    p.set_defaults(run=_describe)

    p = sub.add_parser("decode", parents=[common], help="ids to text (arguments, or one JSON list per stdin line)")
    p.add_argument("path", help="a model directory or one tokenizer file")
    p.add_argument("ids", nargs="*", help="token ids (integers, or one JSON list); none: read stdin")
    p.add_argument("--keep-specials", action="store_true", help="render special tokens as their text (with_specials)")
    p.set_defaults(run=_decode)

    p = sub.add_parser("stream", parents=[common], help="stream ids from stdin, printing text as it settles")
    p.add_argument("path", help="a model directory or one tokenizer file")
    p.add_argument("--keep-specials", action="store_true", help="render special tokens as their text (with_specials)")
    p.add_argument(
        "--revisions",
        action="store_true",
        help="each stdin line is the whole current hypothesis (it may change); print committed words",
    )
    p.add_argument(
        "--agreement",
        type=int,
        default=2,
        metavar="N",
        help="with --revisions: commit what the last N hypotheses agree on (default 2)",
    )
    p.set_defaults(run=_stream)

    p = sub.add_parser("words", parents=[common], help='timed words for {"ids", "starts", "ends"} JSON on stdin')
    p.add_argument("path", help="a model directory or one tokenizer file")
    p.add_argument(
        "--format",
        choices=["srt", "vtt", "tsv", "txt", "json", "ctm"],
        default=None,
        help="write subtitles (or Kaldi CTM) of the words instead of the word list; times in seconds",
    )
    p.add_argument("--max-line-width", type=int, default=None, help="subtitle line width in columns (default 42)")
    p.add_argument("--max-lines", type=int, default=None, help="lines per subtitle (default 2)")
    p.add_argument("--max-duration", type=float, default=None, help="longest subtitle in seconds (default 7)")
    p.add_argument("--utterance", default=None, help="CTM utterance id (default utt, or uttN per request)")
    p.set_defaults(run=_words)

    p = sub.add_parser("demo", parents=[common], help="run the bundled demo (arguments are passed on)")
    p.add_argument("demo_args", nargs="*", help="arguments for the demo (everything after `demo`)")
    p.set_defaults(run=_demo)
    return parser


def _utf8(stream: Any, errors: str) -> None:
    if hasattr(stream, "reconfigure"):
        stream.reconfigure(encoding="utf-8", errors=errors)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    _utf8(sys.stdin, "strict")
    _utf8(sys.stdout, "strict")
    # A message may quote a path that is not valid UTF-8 (os.fsdecode keeps its bytes as lone
    # surrogates): printed strictly it would fail, and the error would be lost with stderr.
    _utf8(sys.stderr, "backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    # Everything after `demo` belongs to the demo's own parser (argparse would claim options).
    lead = 0
    while lead < len(argv) and argv[lead] == "--json":
        lead += 1
    if lead < len(argv) and argv[lead] == "demo":
        argv, demo_args = argv[: lead + 1], argv[lead + 1 :]
    else:
        demo_args = None
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    if demo_args is not None:
        args.demo_args = demo_args
    try:
        run: Callable[[argparse.Namespace, IO[str]], int] = args.run
        return run(args, sys.stdout)
    except _Failure as failure:
        if args.json:
            sys.stderr.write(json.dumps({"error": failure.kind, "message": str(failure)}, ensure_ascii=False) + "\n")
        else:
            sys.stderr.write(f"oasr-tok {args.command}: error: {failure}\n")
        return failure.code
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, like other filters.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    except KeyboardInterrupt:
        return 130
    except UnicodeEncodeError as exc:  # text with a lone surrogate (from a file) cannot be printed
        sys.stderr.write(f"oasr-tok {args.command}: error: the output cannot be written as UTF-8: {exc.reason}\n")
        return EXIT_INPUT
    except (RecursionError, MemoryError) as exc:
        sys.stderr.write(
            f"oasr-tok {args.command}: error: input too large or too deeply nested ({type(exc).__name__})\n"
        )
        return EXIT_INPUT
