"""Print warm parse throughput against libcgraph and the regex floor, lint, and cold lint.

Usage: python benchmarks/bench_parse.py [RUNS]

For each size: our parse (nodes/s), pygraphviz's libcgraph parse of the same
text measured in the same run (interleaved, so load hits both alike), the
floor of a pure-Python parser that scans with regular expressions (one bare
``re.finditer`` pass of the scanner over the text, no Python per token), the
warm ``validate`` and the cold ``attractor lint`` process. Goals (issue 13):
parse at least libcgraph's throughput; cold lint of 10 nodes <= 0.15 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pygraphviz  # type: ignore[import-untyped,unused-ignore]

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_dot import generate  # noqa: E402

from attractor.dot.lexer import _FAST  # noqa: E402
from attractor.dot.parser import parse_dot  # noqa: E402
from attractor.dot.transforms import apply_transforms  # noqa: E402
from attractor.linter import validate  # noqa: E402

SIZES = (10, 100, 1_000, 10_000)


def scan_floor(text: str) -> None:
    """The scanner's regular expression over ``text`` with no Python per match."""
    deque(_FAST.finditer(text), maxlen=0)


def interleaved(actions: list[Callable[[], object]], runs: int, repeat: int) -> list[float]:
    """Median seconds per call of each action, sampled in turn ``runs`` times."""
    samples: list[list[float]] = [[] for _ in actions]
    for _ in range(runs):
        for action, times in zip(actions, samples, strict=True):
            start = time.perf_counter()
            for _ in range(repeat):
                action()
            times.append((time.perf_counter() - start) / repeat)
    return [statistics.median(times) for times in samples]


def cold_lint(path: Path, runs: int) -> float:
    def once() -> None:
        subprocess.run(
            [sys.executable, "-m", "attractor", "lint", str(path)],
            capture_output=True,
            check=False,
        )

    return interleaved([once], runs, 1)[0]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    heads = ("nodes", "parse n/s", "libcgraph n/s", "ratio", "floor n/s", "lint s", "cold s")
    widths = (7, 10, 14, 6, 10, 8, 7)
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            text = generate(size)
            graph = apply_transforms(parse_dot(text))
            found = validate(graph)
            assert not any(d.is_error for d in found), "generated pipelines have no errors"
            # Small files repeat the call so a sample is not a fraction of a millisecond.
            repeat = max(1, 1_000 // size)
            ours, theirs, floor = interleaved(
                [
                    lambda text=text: parse_dot(text),
                    lambda text=text: pygraphviz.AGraph(string=text),
                    lambda text=text: scan_floor(text),
                ],
                runs,
                repeat,
            )
            lint = interleaved([lambda graph=graph: validate(graph)], runs, repeat)[0]
            path = Path(tmp) / f"bench_{size}.dot"
            path.write_text(text, encoding="utf-8")
            cold = cold_lint(path, runs)
            nodes = size + 2
            print(
                f"{size:>7} {nodes / ours:>10.0f} {nodes / theirs:>14.0f} {theirs / ours:>6.2f}"
                f" {nodes / floor:>10.0f} {lint:>8.4f} {cold:>7.3f}"
            )


if __name__ == "__main__":
    main()
