"""Engine benchmark: per-node overhead, fan-out, and --timeout cancellation delay.

Run: ``python benchmarks/bench_engine.py [--quick]``. Prints medians and ratios
against the targets: < 1 ms engine overhead per simulated node, < 2.5 ms per
``/bin/true`` tool node, cancellation within 200 ms of the ``--timeout`` deadline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot
from attractor.engine.run import RunOptions, run_pipeline
from attractor.handlers.simulate import SimulateBackend
from attractor.proc.process import run_process
from attractor.settings import Settings

TARGET_SIM_MS = 1.0
TARGET_TOOL_MS = 2.5
TARGET_CANCEL_MS = 200.0


def linear_dot(n: int, tool: bool) -> str:
    attrs = ' [shape=parallelogram, tool_command="/bin/true"]' if tool else ""
    nodes = "\n".join(f"  n{i}{attrs}" for i in range(n))
    chain = " -> ".join(f"n{i}" for i in range(n))
    return (
        "digraph bench {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"{nodes}\n  start -> {chain} -> done\n}}\n"
    )


def fan_out_dot(n: int) -> str:
    lines = [f"  fan -> b{i}\n  b{i} -> join" for i in range(n)]
    return (
        "digraph fan {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"  fan [shape=component, max_parallel={n}]\n  join [shape=tripleoctagon]\n"
        "  start -> fan\n" + "\n".join(lines) + "\n  join -> done\n}\n"
    )


async def timed_run(graph: Graph, logs: Path) -> float:
    run_dir = str(logs / "{timestamp}-{graph}")
    # The engine's own cost: commands unsandboxed (bench_sandbox.py measures the sandbox).
    settings = Settings(logs_dir=run_dir, workdir=str(logs), sandbox="none")
    options = RunOptions(settings=settings, backend=SimulateBackend())
    started = time.perf_counter()
    result = await run_pipeline(graph, logs / "bench.dot", options)
    elapsed = time.perf_counter() - started
    if result.status != "success":
        raise SystemExit(f"benchmark run failed: {result.failure_reason}")
    return elapsed


def median_of(reps: int, make: Callable[[], float]) -> float:
    return statistics.median(make() for _ in range(reps))


SHM = Path("/dev/shm")


def bench_linear(n: int, tool: bool, reps: int, base: Path | None = None) -> float:
    """Median seconds per node of an ``n``-node linear run (run dir under ``base``)."""
    text = linear_dot(n, tool)

    def once() -> float:
        with tempfile.TemporaryDirectory(dir=base) as tmp:
            graph = parse_dot(text)
            return anyio.run(timed_run, graph, Path(tmp)) / (n + 2)

    return median_of(reps, once)


def bench_spawn(reps: int) -> float:
    """Median seconds to run /bin/true through attractor.proc.process alone (the floor)."""

    async def many() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            for _ in range(50):
                await run_process(
                    "/bin/true",
                    cwd=Path(tmp),
                    stdout_path=Path(tmp) / "o",
                    stderr_path=Path(tmp) / "e",
                )
            return (time.perf_counter() - started) / 50

    return median_of(reps, lambda: anyio.run(many))


def bench_fan_out(n: int, reps: int) -> float:
    text = fan_out_dot(n)

    def once() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            return anyio.run(timed_run, parse_dot(text), Path(tmp))

    return median_of(reps, once)


def bench_timeout(reps: int, deadline: float = 1.0) -> float | None:
    """Median seconds between the --timeout deadline and the CLI process exiting."""
    text = (
        "digraph slow {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        '  wait [shape=parallelogram, tool_command="sleep 30"]\n'
        "  start -> wait -> done\n}\n"
    )
    delays = []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "slow.dot"
            path.write_text(text)
            cmd = [sys.executable, "-m", "attractor", "run", str(path), "--quiet"]
            cmd += ["--timeout", f"{int(deadline * 1000)}ms", "--logs-dir", str(Path(tmp) / "r")]
            proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _, err = proc.communicate(timeout=60)
            exited = time.time()
            if proc.returncode != 124:
                print(f"  timeout run exited {proc.returncode}: {err.decode()[-300:]}")
                return None
            # The deadline counts from the run's start, after interpreter start-up.
            events = Path(tmp) / "r" / "events.jsonl"
            started = json.loads(events.read_text().splitlines()[0])["ts"]
            delays.append(exited - (started + deadline))
    return float(statistics.median(delays))


def report(label: str, value_ms: float, target_ms: float | None = None) -> None:
    line = f"{label:<52} {value_ms:9.3f} ms"
    if target_ms is not None:
        ratio = value_ms / target_ms
        verdict = "ok" if ratio < 1 else "OVER TARGET"
        line += f"   target {target_ms:g} ms   ratio {ratio:.2f}  {verdict}"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    reps = 3 if args.quick else 5
    print(f"engine benchmark (median of {reps})")
    sim100 = bench_linear(100, tool=False, reps=reps)
    sim1000 = bench_linear(1000, tool=False, reps=max(1, reps // 2))
    report("simulate, 100-node linear, per node", sim100 * 1e3, TARGET_SIM_MS)
    report("simulate, 1000-node linear, per node", sim1000 * 1e3, TARGET_SIM_MS)
    if SHM.is_dir():
        # The same runs with the run directory in memory: the engine's own CPU cost,
        # without this disk's file-creation and fsync latency.
        for n in (100, 1000):
            mem = bench_linear(n, tool=False, reps=max(1, reps // 2), base=SHM)
            report(f"simulate, {n}-node linear, run dir on tmpfs", mem * 1e3, TARGET_SIM_MS)
    spawn = bench_spawn(reps)
    tool100 = bench_linear(100, tool=True, reps=reps)
    tool1000 = bench_linear(1000, tool=True, reps=max(1, reps // 2))
    report("/bin/true via attractor.proc.process alone (floor)", spawn * 1e3)
    report("tool /bin/true, 100-node linear, per node", tool100 * 1e3, TARGET_TOOL_MS)
    report("tool /bin/true, 1000-node linear, per node", tool1000 * 1e3, TARGET_TOOL_MS)
    if SHM.is_dir():
        mem = bench_linear(100, tool=True, reps=max(1, reps // 2), base=SHM)
        report("tool /bin/true, 100-node linear, run dir on tmpfs", mem * 1e3, TARGET_TOOL_MS)
    report("  engine share of a tool node (minus floor)", (tool100 - spawn) * 1e3)
    fan = bench_fan_out(100, reps)
    report("fan-out of 100 simulated branches, whole run", fan * 1e3)
    delay = bench_timeout(3 if args.quick else 5)
    if delay is None:
        print("--timeout cancellation: CLI not available or did not exit 124")
    else:
        report("--timeout deadline to process exit", delay * 1e3, TARGET_CANCEL_MS)


if __name__ == "__main__":
    main()
