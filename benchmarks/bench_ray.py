"""Ray executor against the local executor, in the same process and on the same machine.

Run: ``python benchmarks/bench_ray.py [--branches 100] [--runs 50] [--cpus 2] [--json]``.
Prints the start-up cost of a local Ray cluster on its own line, then for each
workload the wall time of the local executor and of the Ray executor:

- a fan-out of ``--branches`` branches of ``sleep 1`` (every branch asks
  ``--branch-cpus`` of a core, so that many sleep at once on a small machine);
- a queue of ``--runs`` small runs (three ``true`` tool nodes each), all started
  at once.

Needs the ``attractor[ray]`` extra. Figures are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import ray

from attractor.dot.parser import parse_dot
from attractor.engine.executor import Executor, LocalExecutor, RunJob
from attractor.engine.run import RunOptions, execute
from attractor.ray_exec.connect import keep_on_loopback
from attractor.ray_exec.executor import RayExecutor
from attractor.settings import Settings


def fan_out_dot(branches: int, cpus: float) -> str:
    lines = [
        f'  b{i} [shape=parallelogram, tool_command="sleep 1", resources="cpu={cpus}"]\n'
        f"  fan -> b{i} -> join"
        for i in range(branches)
    ]
    return (
        "digraph fan {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"  fan [shape=component, max_parallel={branches}]\n  join [shape=tripleoctagon]\n"
        + "\n".join(lines)
        + "\n  start -> fan\n  join -> done\n}\n"
    )


SMALL = """digraph small {
  start [shape=Mdiamond]
  done [shape=Msquare]
  a [shape=parallelogram, tool_command="true"]
  b [shape=parallelogram, tool_command="true"]
  c [shape=parallelogram, tool_command="true"]
  start -> a -> b -> c -> done
}
"""


async def run_many(dot: str, count: int, root: Path, executor: Executor) -> float:
    """Start ``count`` runs of ``dot`` at once; the wall time until all have ended."""
    source = root / "p.dot"
    source.write_text(dot, encoding="utf-8")
    graph = parse_dot(dot, file=str(source))
    failed: list[str] = []

    async def one(index: int) -> None:
        settings = Settings(logs_dir=str(root / f"run-{index}"), workdir=str(root))
        options = RunOptions(settings=settings, executor=executor)
        result = await execute(RunJob("run", source, graph), options)
        if result.status != "success":
            failed.append(f"run {index}: {result.failure_reason}")

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(count):
            group.start_soon(one, index)
    elapsed = time.perf_counter() - started
    if failed:
        raise SystemExit("\n".join(failed))
    return elapsed


def compare(work: Callable[[Path, Executor], Awaitable[float]]) -> dict[str, float]:
    """Wall seconds of ``work`` with the local executor, then with the Ray executor."""
    times = {}
    for executor in (LocalExecutor(), RayExecutor()):
        with tempfile.TemporaryDirectory() as tmp:
            times[executor.name] = anyio.run(work, Path(tmp), executor)
    return times


def measure(branches: int, branch_cpus: float, runs: int, cpus: int) -> dict[str, object]:
    """Every figure of this benchmark, on a local cluster of ``cpus`` CPUs started here."""
    started = time.perf_counter()
    keep_on_loopback()  # a cluster of this machine only, on 127.0.0.1 (docs/ray.md)
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - started
    fan = fan_out_dot(branches, branch_cpus)
    try:
        fan_out = compare(lambda root, executor: run_many(fan, 1, root, executor))
        queue = compare(lambda root, executor: run_many(SMALL, runs, root, executor))
    finally:
        ray.shutdown()
    return {
        "cpus": cpus,
        "startup": startup,
        "branches": branches,
        "branch_cpus": branch_cpus,
        "runs": runs,
        "fan_out": fan_out,
        "queue": queue,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--branches", type=int, default=100)
    parser.add_argument("--branch-cpus", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = parser.parse_args()
    figures = measure(args.branches, args.branch_cpus, args.runs, args.cpus)
    if args.json:
        print(json.dumps(figures))
        return
    print(f"local Ray cluster start-up ({args.cpus} CPUs): {figures['startup']:.2f}s")
    for name, key in (
        (f"fan-out of {args.branches} x sleep 1", "fan_out"),
        (f"queue of {args.runs} small runs (3 tool nodes each)", "queue"),
    ):
        times = figures[key]
        assert isinstance(times, dict)
        print(
            f"{name}: local {times['local']:.2f}s, ray {times['ray']:.2f}s "
            f"(ray/local {times['ray'] / times['local']:.2f})"
        )


if __name__ == "__main__":
    main()
