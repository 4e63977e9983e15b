"""Print parse and lint throughput and the cold wall time of ``attractor lint``.

Usage: python benchmarks/bench_parse.py [RUNS]

Targets: parse >= 20,000 nodes/s warm; ``attractor lint`` on 10,000 nodes
< 1.5 s cold and on 10 nodes < 0.3 s cold.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_dot import generate  # noqa: E402

from attractor.dot.parser import parse_dot  # noqa: E402
from attractor.dot.transforms import apply_transforms  # noqa: E402
from attractor.linter import validate  # noqa: E402

SIZES = (10, 100, 1_000, 10_000)


def median_seconds(action: Callable[[], object], runs: int, repeat: int = 1) -> float:
    """Median over ``runs`` samples of the mean time of ``repeat`` calls."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(repeat):
            action()
        times.append((time.perf_counter() - start) / repeat)
    return statistics.median(times)


def cold_lint(path: Path, runs: int) -> float:
    def once() -> None:
        subprocess.run(
            [sys.executable, "-m", "attractor", "lint", str(path)],
            capture_output=True,
            check=False,
        )

    return median_seconds(once, runs)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    heads = ("nodes", "parse s", "parse n/s", "lint s", "lint n/s", "cold CLI s")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (7, 9, 10, 8, 10, 11), strict=True)))
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            text = generate(size)
            graph = apply_transforms(parse_dot(text))
            assert validate(graph) == [], "generated pipelines must lint clean"
            # Small files repeat the call so a sample is not a fraction of a millisecond.
            repeat = max(1, 1_000 // size)
            parse = median_seconds(lambda text=text: parse_dot(text), runs, repeat)
            lint = median_seconds(lambda graph=graph: validate(graph), runs, repeat)
            path = Path(tmp) / f"bench_{size}.dot"
            path.write_text(text, encoding="utf-8")
            cold = cold_lint(path, runs)
            print(
                f"{size:>7} {parse:>9.4f} {size / parse:>10.0f} {lint:>8.4f} {size / lint:>10.0f}"
                f" {cold:>11.3f}"
            )


if __name__ == "__main__":
    main()
