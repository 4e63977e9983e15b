"""Ray executor against the local executor, in the same process and on the same machine.

Run: ``python benchmarks/bench_ray.py [--branches 100] [--runs 50] [--cpus 2] [--json]``.
Prints the start-up cost of a local Ray cluster on its own line, then for each
workload the wall time of the local executor and of the Ray executor:

- a fan-out of ``--branches`` branches of ``sleep 1`` (every branch asks
  ``--branch-cpus`` of a core, so that many sleep at once on a small machine),
  the local executor running as many at once as Ray can (``max_parallel`` =
  CPUs / ``--branch-cpus``): the same parallelism;
- a fan-out of one branch of one ``true`` node, 9 times in turn: the median
  difference is the Ray executor's overhead per branch;
- a queue of ``--runs`` small runs (three ``true`` tool nodes each), all started
  at once.

Needs the ``attractor[ray]`` extra. Figures are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import ray

from attractor.dot.parser import parse_dot
from attractor.engine.executor import Executor, LocalExecutor, RunJob
from attractor.engine.run import RunOptions, execute
from attractor.handlers.simulate import SimulateBackend
from attractor.launch import backend_for
from attractor.ray_exec.connect import keep_on_loopback
from attractor.ray_exec.executor import RayExecutor
from attractor.settings import Settings


def fan_out_dot(
    branches: int, cpus: float, parallel: int | None = None, command: str = "sleep 1"
) -> str:
    lines = [
        f'  b{i} [shape=parallelogram, tool_command="{command}", resources="cpu={cpus}"]\n'
        f"  fan -> b{i} -> join"
        for i in range(branches)
    ]
    return (
        "digraph fan {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"  fan [shape=component, max_parallel={parallel or branches}]\n"
        "  join [shape=tripleoctagon]\n"
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
        options = RunOptions(settings=settings, executor=executor, backend=SimulateBackend())
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


def compare(
    work: Callable[[Path, Executor], Awaitable[float]],
    local: Callable[[Path, Executor], Awaitable[float]] | None = None,
    reps: int = 1,
) -> dict[str, float]:
    """Median wall seconds of ``work`` with the local executor (``local`` instead when
    given) and with the Ray executor, taken in turn ``reps`` times."""
    samples: dict[str, list[float]] = {"local": [], "ray": []}
    for _ in range(reps):
        ray_executor = RayExecutor(make_backend=backend_for)
        for executor, job in ((LocalExecutor(), local or work), (ray_executor, work)):
            with tempfile.TemporaryDirectory() as tmp:
                samples[executor.name].append(anyio.run(job, Path(tmp), executor))
    return {name: statistics.median(times) for name, times in samples.items()}


def measure(branches: int, branch_cpus: float, runs: int, cpus: int) -> dict[str, object]:
    """Every figure of this benchmark, on a local cluster of ``cpus`` CPUs started here."""
    started = time.perf_counter()
    keep_on_loopback()  # a cluster of this machine only, on 127.0.0.1 (docs/ray.md)
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - started
    fan = fan_out_dot(branches, branch_cpus)
    # The local executor with the parallelism Ray gives the branches: the cluster's
    # CPUs over each branch's ask (Ray queues the rest).
    at_once = min(branches, max(1, math.floor(cpus / branch_cpus)))
    same = fan_out_dot(branches, branch_cpus, at_once)
    one = fan_out_dot(1, branch_cpus, command="true")
    try:
        fan_out = compare(
            lambda root, executor: run_many(fan, 1, root, executor),
            local=lambda root, executor: run_many(same, 1, root, executor),
        )
        branch = compare(lambda root, executor: run_many(one, 1, root, executor), reps=9)
        queue = compare(lambda root, executor: run_many(SMALL, runs, root, executor))
    finally:
        ray.shutdown()
    return {
        "cpus": cpus,
        "startup": startup,
        "branches": branches,
        "branch_cpus": branch_cpus,
        "runs": runs,
        "at_once": at_once,
        "fan_out": fan_out,
        "one_branch": branch,
        "branch_overhead_ms": (branch["ray"] - branch["local"]) * 1e3,
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
    print(f"per-branch overhead (one `true` node): {figures['branch_overhead_ms']:.0f} ms")
    for name, key in (
        (f"fan-out of {args.branches} x sleep 1, {figures['at_once']} at once", "fan_out"),
        ("fan-out of 1 branch of `true`", "one_branch"),
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
