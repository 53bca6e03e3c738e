"""``python -m oasr_tok demo`` (also ``oasr-tok demo``): the library at work on every kind.

For each tokenizer kind, a realistic recogniser hypothesis (ids the real trainers and encoders
produced, from the small tokenizer files the package carries in oasr_tok/data/demo/, made by
fixtures/make_demo_data.py) is streamed a few ids at a time through ``decode_incremental``:
the partial transcript grows, text that a later token could still change is held back, the
final flush completes it, and ``word_timings`` cuts the timed words out of it. Then a
rewriting recogniser is simulated on the same ids: the naive decode of each hypothesis
flickers, beside the committed stream of ``decode_hypothesis`` (whole words, never retracted). ``--json``
prints the same as one JSON document. No network, no files outside the package; a kind whose
backend (sentencepiece, tokenizers) is missing is reported with its install hint and skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from .errors import BackendNotInstalledError, UnknownKindError
from .loading.build import build_tokenizer
from .spec import TokenizerSpec

__all__ = ["main", "run_entry", "DATA"]

DATA = Path(__file__).resolve().parent / "data" / "demo"

INSTALL_HINTS = {
    "sentencepiece": "pip install 'oasr_tok[sentencepiece]'",
    "huggingface": "pip install 'oasr_tok[huggingface]'",
    "whisper": "pip install 'oasr_tok[whisper]'",
}


def load_manifest() -> list[dict[str, Any]]:
    """The demo's hypotheses (oasr_tok/data/demo/demo.json)."""
    with open(DATA / "demo.json", encoding="utf-8") as handle:
        entries: list[dict[str, Any]] = json.load(handle)["entries"]
    return entries


def _chunks(ids: list[int], size: int) -> list[list[int]]:
    return [ids[i : i + size] for i in range(0, len(ids), max(1, size))]


def run_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """Stream one hypothesis; a JSON-able record of what happened."""
    kind = entry["kind"]
    record: dict[str, Any] = {"kind": kind, "title": entry["title"], "files": entry["files"], "unit": entry["unit"]}
    spec = TokenizerSpec(kind, {role: str(DATA / rel) for role, rel in entry["files"].items()}, entry["options"])
    try:
        tok = build_tokenizer(spec)
    except BackendNotInstalledError as exc:
        record.update(status="backend missing", error=str(exc), install=INSTALL_HINTS.get(kind))
        return record
    except (UnknownKindError, ModuleNotFoundError) as exc:
        record.update(status="kind not available", error=str(exc))
        return record

    ids = list(entry["ids"])
    state: dict[str, Any] = {}
    steps, emitted = [], ""
    for chunk in _chunks(ids, entry["chunk"]):
        delta = tok.decode_incremental(chunk, state)
        emitted += delta
        # state["text"] is the decode so far; what is past `emitted` is held back for now.
        steps.append({"ids": chunk, "delta": delta, "partial": state["text"], "held": state["text"][len(emitted) :]})
    flush = tok.decode_incremental([], state, final=True)
    final = tok.decode(ids)

    if entry.get("starts") is None and hasattr(tok, "token_times"):
        starts, ends = tok.token_times(ids), None  # Whisper: times from its timestamp tokens
        record["times_from"] = "timestamp tokens (token_times)"
    else:
        starts, ends = entry["starts"], entry.get("ends")
        record["times_from"] = "the recogniser"
    words = tok.word_timings(ids, starts, ends)
    revisions, committed = _rewriting(tok, ids, entry["chunk"])
    record.update(
        status="ok",
        ids=ids,
        pieces=tok.token_pieces(ids),
        steps=steps,
        flush=flush,
        final=final,
        stream_matches_decode=emitted + flush == final,
        matches_reference_library=None if entry.get("expected") is None else final == entry["expected"],
        words=[w.to_dict() for w in words],
        srt=_srt_preview(words, entry["unit"]),
        revisions=revisions,
        revisions_match_decode=committed == final,
    )
    return record


#: Seconds per time unit of the demo hypotheses; frames are 40 ms, as the CTC recognisers' are.
_SECONDS_PER_UNIT = {"s": 1.0, "ms": 0.001, "frame": 0.04}


def _srt_preview(words: Any, unit: str, count: int = 3) -> str:
    """The first few SRT cues of the words (oasr_tok.outputs.subtitles' reader-friendly cues)."""
    from .core.words import Word
    from .outputs import subtitles

    scale = _SECONDS_PER_UNIT.get(unit)
    if scale is None:
        return ""
    in_seconds = [Word(w.text, w.start * scale, w.end * scale, w.first_token, w.last_token) for w in words]
    return subtitles.to_srt(subtitles.cues(in_seconds, max_line_width=32)[:count])


def _rewriting_script(ids: list[int], step: int) -> list[list[int]]:
    """The hypotheses of a recogniser that keeps changing its mind about its newest ids: every
    other hypothesis ends with a wrong guess (ids borrowed from elsewhere in the utterance)."""
    hyps = []
    for k, end in enumerate(range(step, len(ids) + step, step)):
        hyp = ids[: min(end, len(ids))]
        if k % 2 and len(hyp) > step:
            hyp = hyp[:-step] + [ids[(j * 7 + k) % len(ids)] for j in range(step)]
        hyps.append(hyp)
    return hyps + [list(ids)]


def _rewriting(tok: Any, ids: list[int], step: int) -> tuple[list[dict[str, Any]], str]:
    """decode_hypothesis on a rewriting script: per call the naive (flickering) decode of the
    hypothesis beside the committed text and the partial."""
    state: dict[str, Any] = {}
    rows = []
    hyps = _rewriting_script(ids, max(2, step))
    for hyp in hyps:
        delta, partial = tok.decode_hypothesis(hyp, state)
        rows.append(
            {
                "hypothesis": hyp,
                "naive": tok.decode(hyp),
                "committed": state["committed"],
                "delta": delta,
                "partial": partial,
            }
        )
    delta, _ = tok.decode_hypothesis(hyps[-1], state, final=True)
    rows.append(
        {
            "hypothesis": hyps[-1],
            "naive": tok.decode(hyps[-1]),
            "committed": state["committed"],
            "delta": delta,
            "partial": "",
            "final": True,
        }
    )
    return rows, state["committed"]


def _time(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _print_record(record: dict[str, Any], out: IO[str]) -> None:
    write = lambda line="": out.write(line + "\n")
    write(f"== {record['kind']} · {record['title']}")
    write(f"   file     {', '.join(record['files'].values())}")
    if record["status"] != "ok":
        if record.get("install"):  # the error says the same at length; the hint is what matters
            write(f"   skipped  {record['status']}")
            write(f"   install  {record['install']}")
        else:
            write(f"   skipped  {record['status']}: {record['error']}")
        write()
        return
    for step in record["steps"]:
        held = f"   ⟨held back: {step['held']!r}⟩" if step["held"] else ""
        write(f"   partial  {step['partial']!r}{held}")
    if record["flush"]:
        write(f"   flush    {record['flush']!r}")
    write(f"   final    {record['final']!r}")
    checks = ["streamed deltas + flush == decode: " + ("yes" if record["stream_matches_decode"] else "NO")]
    if record["matches_reference_library"] is not None:
        checks.append("decode == reference library: " + ("yes" if record["matches_reference_library"] else "NO"))
    write(f"   check    {'; '.join(checks)}")
    write("   rewriting hypothesis: naive decode (flickers) | committed ⟨partial⟩ (decode_hypothesis)")
    for row in record["revisions"]:
        mark = "final   " if row.get("final") else "        "
        write(f"   {mark} {row['naive']!r:<44} | {row['committed']!r} ⟨{row['partial']!r}⟩")
    write("   check    committed after final == decode: " + ("yes" if record["revisions_match_decode"] else "NO"))
    unit = record["unit"]
    write(f"   words    ({unit}, times from {record['times_from']})")
    line = ""
    for word in record["words"]:
        cell = f"{word['text']} [{_time(word['start'])}–{_time(word['end'])}]"
        if line and len(line) + 2 + len(cell) > 80:
            write(f"            {line}")
            line = ""
        line = f"{line}  {cell}" if line else cell
    if line:
        write(f"            {line}")
    if record.get("srt"):
        write("   srt      (the first cues of oasr_tok.outputs.subtitles.cues, as SubRip)")
        for srt_line in record["srt"].rstrip("\n").split("\n"):
            write(f"            {srt_line}" if srt_line else "")
    write()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; 0 when every available kind streamed correctly, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="oasr-tok demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    parser.add_argument("--kind", action="append", help="only this kind (repeatable)")
    args = parser.parse_args(argv)
    out = sys.stdout
    if hasattr(out, "reconfigure"):
        out.reconfigure(encoding="utf-8")

    entries = [e for e in load_manifest() if not args.kind or e["kind"] in args.kind]
    if args.kind:
        unknown = sorted(set(args.kind) - {e["kind"] for e in entries})
        if unknown:
            parser.error(f"no demo for kind(s) {', '.join(unknown)}")
    records = []
    for entry in entries:
        try:
            records.append(run_entry(entry))
        except Exception as exc:  # the demo reports a broken kind and goes on to the next
            records.append(
                {
                    "kind": entry["kind"],
                    "title": entry["title"],
                    "files": entry["files"],
                    "status": "failed",
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
    healthy = all(
        r["status"] != "failed"
        and r.get("stream_matches_decode", True)
        and r.get("matches_reference_library") is not False
        and r.get("revisions_match_decode", True)
        for r in records
    )
    if args.json:
        json.dump({"data": str(DATA), "kinds": records, "ok": healthy}, out, ensure_ascii=False, indent=1)
        out.write("\n")
    else:
        out.write(f"oasr_tok demo: recogniser hypotheses streamed through each tokenizer kind ({DATA})\n\n")
        for record in records:
            _print_record(record, out)
    out.flush()
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
