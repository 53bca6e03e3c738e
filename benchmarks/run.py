"""The one benchmark command (what `make bench` and `tox -e bench` run).

    python benchmarks/run.py                  # the whole suite -> results/latest.json, RESULTS.md (printed)
    python benchmarks/run.py --save-baseline  # our side only, saved under benchmarks/baseline/
    python benchmarks/run.py --compare        # our side only, compared with the saved baseline;
                                              # exits non-zero when any benchmark's min is > 50% slower
    python benchmarks/run.py -- -k qwen3      # anything after -- goes to pytest (a subset's
                                              # table goes to results/partial.md, not RESULTS.md)

pytest runs from inside benchmarks/, so `import oasr_tok` finds the installed package (tox) or
whatever PYTHONPATH names (make bench sets it to the source tree, built in place), never a
source tree without its compiled extensions by accident.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
BASELINE = HERE / "baseline"
#: A baseline comparison fails when a benchmark's fastest round is this much slower. The min
#: is used, not the median, because load from other processes only ever adds time: the min
#: is what stays comparable on a shared machine, and a real 2× slowdown doubles it too.
COMPARE_FAIL = "min:50%"


def main() -> int:
    parser = argparse.ArgumentParser(description="run the oasr_tok benchmarks")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--save-baseline", action="store_true", help="save our side as the new baseline")
    mode.add_argument("--compare", action="store_true", help="compare our side with the saved baseline")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()

    RESULTS.mkdir(exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        ".",
        "--benchmark-enable",
        "-p",
        "no:cacheprovider",
        "--benchmark-columns=min,median,iqr,rounds",
        "--benchmark-sort=name",
        "-q",
        "-rs",
    ]
    storage = f"file://{BASELINE}"
    if args.save_baseline:
        cmd += [
            "-m",
            "not peer",
            f"--benchmark-storage={storage}",
            "--benchmark-save=baseline",
            f"--benchmark-json={RESULTS / 'baseline-run.json'}",
        ]
    elif args.compare:
        cmd += [
            "-m",
            "not peer",
            f"--benchmark-storage={storage}",
            "--benchmark-compare",
            f"--benchmark-compare-fail={COMPARE_FAIL}",
            f"--benchmark-json={RESULTS / 'compare-run.json'}",
        ]
    else:
        cmd += [f"--benchmark-json={RESULTS / 'latest.json'}"]
    cmd += args.pytest_args
    print("+", " ".join(cmd), flush=True)
    latest = RESULTS / "latest.json"
    full = not (args.save_baseline or args.compare)
    if full:
        latest.unlink(missing_ok=True)  # never report a previous run's figures as this one's
    start = time.perf_counter()
    code = subprocess.call(cmd, cwd=HERE)
    wall = time.perf_counter() - start
    print(f"benchmark wall time: {wall:.1f} s", flush=True)
    if full and latest.exists():
        # A subset (pytest args given) is reported beside, never over, the full table.
        out = RESULTS / "partial.md" if args.pytest_args else HERE / "RESULTS.md"
        subprocess.check_call(
            [sys.executable, str(HERE / "report.py"), str(latest), "--wall", f"{wall:.1f}", "--out", str(out)]
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
