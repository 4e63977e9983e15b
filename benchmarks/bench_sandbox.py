"""Sandbox benchmark: what running a command inside the bwrap sandbox costs.

Run: ``python benchmarks/bench_sandbox.py [--runs N]``. Starts ``/bin/true``
N times (default 200) through the local environment (plain: its own process
group, filtered variables) and through the bwrap environment (a sandbox per
command, laid out as for a real step), and, as the floor, ``bwrap --ro-bind / /
/bin/true`` through the local environment: the least any bubblewrap sandbox
costs here (bwrap's own start, one mount namespace, no other namespace and no
other mount). The three alternate command by command, so a busy machine slows
them alike; it prints the median time per command of each and the ratios: to the
plain command, and the sandbox's to the floor (the part of its cost that is ours).

It also times the engine's own Python before each spawn (the filtered variables,
the sandbox's argv, the program lookup), without starting anything, so what
our code adds can be told apart from what bwrap and the kernel do.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

import anyio

from attractor.proc.bwrap import Fence, bwrap_path
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import LocalEnvironment
from attractor.proc.process import _found
from attractor.proc.sandbox_env import BwrapEnvironment, sandbox_problem
from attractor.proc.spawn import direct_argv


async def _interleaved(
    envs: list[tuple[LocalEnvironment, str]], runs: int, out: Path
) -> list[list[float]]:
    times: list[list[float]] = [[] for _ in envs]
    for _ in range(runs):
        for (env, command), own in zip(envs, times, strict=True):
            started = time.perf_counter()
            result = await env.run(command, stdout_path=out / "o", stderr_path=out / "e")
            own.append(time.perf_counter() - started)
            assert result.returncode == 0, result.stderr
    return times


def _python_before_spawn(env: LocalEnvironment, command: str, number: int = 2000) -> float:
    """Seconds per command of what ``run`` computes before the spawn (median of 5 rounds)."""

    def prepare() -> None:
        variables = env.env()
        wrap = env.wrap()
        argv = direct_argv(command)
        if wrap:
            _found(argv, variables)

    rounds = timeit.repeat(prepare, number=number, repeat=5)
    return statistics.median(rounds) / number


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
        floor_command = f"{bwrap_path()} --ro-bind / / /bin/true"
        envs = [(plain, "/bin/true"), (boxed, "/bin/true"), (plain, floor_command)]
        await _interleaved(envs, 10, stage)  # warm up
        bare, sandboxed, floor = map(statistics.median, await _interleaved(envs, runs, stage))
        ours_plain = _python_before_spawn(plain, "/bin/true")
        ours_boxed = _python_before_spawn(boxed, "/bin/true")
    print(f"/bin/true x{runs}, median per command")
    print(f"  plain (local environment):      {bare * 1000:.2f} ms")
    print(f"  sandboxed (bwrap environment):  {sandboxed * 1000:.2f} ms")
    print(f"  floor (bwrap --ro-bind / /):    {floor * 1000:.2f} ms")
    print(f"  ratio: {sandboxed / bare:.2f}x (sandbox adds {(sandboxed - bare) * 1000:.2f} ms)")
    print(f"  floor ratio: {floor / bare:.2f}x (the least one bwrap per command can cost)")
    print(f"  sandbox / floor: {sandboxed / floor:.2f}x (the layout on top of bwrap's own start)")
    print(
        f"  engine's Python before the spawn: plain {ours_plain * 1e6:.0f} us, "
        f"sandboxed {ours_boxed * 1e6:.0f} us"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    sys.exit(anyio.run(main, parser.parse_args().runs))
