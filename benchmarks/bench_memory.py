"""Memory per node run: what a run keeps and peaks at, per node, beyond its parsed graph.

Usage: ``python benchmarks/bench_memory.py [--sizes 1000,10000] [--top 12] [--json]``

Each size runs in a fresh process (``--child N``): it parses an N-node linear
simulate pipeline, then runs it on tmpfs with tracemalloc on, and reports
bytes per node beyond the parsed graph: still held after the run returned,
held at the run's end (everything the run keeps while it goes, with the
allocation sites that hold the most: ``--top``), and at the run's peak. Run-to-run slope
between sizes is the figure to read: per-run constants cancel.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import linear_dot, timed_run  # noqa: E402

from attractor.dot.parser import parse_dot  # noqa: E402

SHM = Path("/dev/shm")


def child(n: int, top: int) -> dict[str, object]:
    """Figures of one ``n``-node run; the snapshot at its end is taken as the engine
    builds its result, when everything the run holds is still alive."""
    import attractor.engine.run as engine_run

    held: list[tracemalloc.Snapshot] = []
    #: Traced bytes and the peak just before the snapshot, and what the snapshot
    #: itself takes (it is traced too, and kept: not the run's).
    at: list[int] = []
    original = engine_run._result

    def result_with_snapshot(*args: Any, **kwargs: Any) -> Any:
        if tracemalloc.is_tracing():
            current, peak = tracemalloc.get_traced_memory()
            held.append(tracemalloc.take_snapshot())
            at[:] = [current, peak, tracemalloc.get_traced_memory()[0] - current]
        return original(*args, **kwargs)

    engine_run._result = result_with_snapshot
    text = linear_dot(n, False)
    anyio.run(timed_run, parse_dot(linear_dot(20, False)), Path(tempfile.mkdtemp(dir=_base())))
    tracemalloc.start(8)
    graph = parse_dot(text)
    parsed = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    before = tracemalloc.take_snapshot()
    held.clear()
    with tempfile.TemporaryDirectory(dir=_base()) as tmp:
        anyio.run(timed_run, graph, Path(tmp))
        current = tracemalloc.get_traced_memory()[0] - at[2]
    at_end, peak = held[-1], at[1]
    stats = at_end.compare_to(before, "traceback")[:top]
    in_run = at[0] - parsed
    sites = [
        {
            "bytes_per_node": s.size_diff / n,
            "where": " <- ".join(
                f"{Path(f.filename).name}:{f.lineno}" for f in list(s.traceback)[-3:]
            ),
        }
        for s in stats
    ]
    return {
        "nodes": n,
        "graph_bytes_per_node": parsed / n,
        "retained_bytes_per_node": (current - parsed) / n,
        "peak_bytes_per_node": (peak - parsed) / n,
        "held_at_end_bytes_per_node": in_run / n,
        "top_held_at_end": sites,
    }


def _base() -> Path | None:
    return SHM if SHM.is_dir() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="one JSON line of figures")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.top)))
        return
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        argv = [sys.executable, __file__, "--child", str(n), "--top", str(args.top)]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout))
    if args.json:
        print(json.dumps(results))
        return
    for r in results:
        print(
            f"{r['nodes']} nodes: graph {r['graph_bytes_per_node']:.0f} B/node; run retains "
            f"{r['retained_bytes_per_node']:.0f} B/node after it, holds "
            f"{r['held_at_end_bytes_per_node']:.0f} at its end, peaks at "
            f"{r['peak_bytes_per_node']:.0f}; held at the end:"
        )
        for site in r["top_held_at_end"]:
            print(f"    {site['bytes_per_node']:8.1f} B/node  {site['where']}")


if __name__ == "__main__":
    main()
