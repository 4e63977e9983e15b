"""Nightly-sized mutation fuzzing of ``prepare`` (parse, transform, lint) on DOT input.

Usage: python benchmarks/fuzz_dot.py [--count N] [--seed S] [--budget SECONDS] [--out DIR]

The mutations and checks are those of tests/dot/test_fuzz_mutations.py (see
tests/dot/fuzzkit.py), on many more inputs. Prints how many inputs were tried,
parsed, had errors and crashed, and the throughput; writes the first crashing
inputs to DIR and exits 1 if anything crashed (a traceback other than an
AttractorError, a diagnostic outside the file, or a case over its time budget).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.dot.fuzzkit import Case, Mutator, Result, check_case, load_corpus  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5_000, help="inputs to try (default 5000)")
    parser.add_argument("--seed", type=int, default=1, help="run seed (default 1)")
    parser.add_argument(
        "--budget", type=float, default=5.0, help="seconds one input may take (default 5)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("fuzz-crashes"), help="where reproducers go"
    )
    parser.add_argument("--keep", type=int, default=5, help="reproducers to write (default 5)")
    return parser.parse_args(argv)


def write_reproducer(out: Path, case: Case, result: Result) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"seed{case.seed}-case{case.index}"
    stem.with_suffix(".dot").write_bytes(case.data)
    stem.with_suffix(".txt").write_text(f"{case.reproducer()}\n\n{result.problem}\n")
    return stem.with_suffix(".dot")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mutator = Mutator(load_corpus(), args.seed)
    counts: collections.Counter[str] = collections.Counter()
    times: list[float] = []
    slowest: tuple[float, Case | None] = (0.0, None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.dot"
        for case in mutator.cases(args.count):
            result = check_case(case, path, args.budget)
            counts[result.status] += 1
            counts["errors"] += result.has_errors
            counts["lint errors"] += result.has_errors and result.status == "parsed"
            times.append(result.seconds)
            slowest = max(slowest, (result.seconds, case), key=lambda pair: pair[0])
            if result.status == "crash" and counts["crash"] <= args.keep:
                where = write_reproducer(args.out, case, result)
                print(f"CRASH seed={case.seed} index={case.index}: {where}")
                print("  " + result.problem.strip().splitlines()[-1])
    wall = time.perf_counter() - started
    report(args, counts, times, wall, slowest)
    return 1 if counts["crash"] else 0


def report(
    args: argparse.Namespace,
    counts: collections.Counter[str],
    times: list[float],
    wall: float,
    slowest: tuple[float, Case | None],
) -> None:
    tried = len(times)
    print(f"seed {args.seed}: {tried} inputs tried")
    print(f"  parsed      {counts['parsed']:>7}  (a graph was built and linted)")
    print(f"    of which  {counts['lint errors']:>7}  with lint errors")
    print(f"  syntax      {counts['syntax']:>7}  (a syntax diagnostic, no graph)")
    print(f"  unreadable  {counts['unreadable']:>7}  (an AttractorError: not UTF-8, ...)")
    print(f"  had errors  {counts['errors']:>7}  (an error diagnostic: syntax or lint)")
    print(f"  crashed     {counts['crash']:>7}")
    if len(times) >= 2:
        median = statistics.median(times)
        p99 = statistics.quantiles(times, n=100)[-1]
        print(
            f"throughput {tried / wall:.0f} inputs/s over {wall:.1f} s (mutation and file write"
            f" included); prepare per input: median {median * 1e3:.2f} ms, p99 {p99 * 1e3:.1f} ms"
        )
    seconds, case = slowest
    if case is not None:
        print(f"slowest {seconds * 1e3:.0f} ms: index {case.index} {list(case.ops)} on {case.base}")
    if counts["crash"]:
        print(f"FAIL: {counts['crash']} crash(es); reproducers in {args.out}/")


if __name__ == "__main__":
    sys.exit(main())
