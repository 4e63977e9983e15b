"""Sandbox benchmark: what running a command inside the bwrap sandbox costs.

Run: ``python benchmarks/bench_sandbox.py [--runs N]``. Starts ``/bin/true``
N times (default 200) through the local environment (plain: its own process
group, filtered variables) and through the bwrap environment (a sandbox per
command, laid out as for a real step), one after the other, and prints the
median time per command of each and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from attractor.proc.bwrap import Fence
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import BwrapEnvironment, LocalEnvironment, sandbox_problem


async def _times(env: LocalEnvironment, runs: int, out: Path) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await env.run("/bin/true", stdout_path=out / "o", stderr_path=out / "e")
        times.append(time.perf_counter() - started)
        assert result.returncode == 0, result.stderr
    return times


async def main(runs: int) -> int:
    problem = sandbox_problem()
    if problem is not None:
        print(f"no sandbox here: {problem}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        run_dir = work / ".attractor" / "runs" / "bench"
        stage = run_dir / "stage"
        stage.mkdir(parents=True)
        fence = Fence(work, run_dir=run_dir, stage_dir=stage, scratch=run_dir / "scratch")
        plain = LocalEnvironment(work, EnvPolicy())
        boxed = BwrapEnvironment(work, EnvPolicy(), fence=fence)
        await _times(plain, 10, stage)  # warm up both
        await _times(boxed, 10, stage)
        bare = statistics.median(await _times(plain, runs, stage))
        sandboxed = statistics.median(await _times(boxed, runs, stage))
    print(f"/bin/true x{runs}, median per command")
    print(f"  plain (local environment): {bare * 1000:.2f} ms")
    print(f"  sandboxed (bwrap):         {sandboxed * 1000:.2f} ms")
    print(f"  ratio: {sandboxed / bare:.2f}x (sandbox adds {(sandboxed - bare) * 1000:.2f} ms)")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    sys.exit(anyio.run(main, parser.parse_args().runs))
