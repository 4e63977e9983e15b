"""Start-up in instructions: a short run, its floor and ``attractor lint``, counted by callgrind.

Usage: ``python benchmarks/startup_instructions.py [--nodes N] [--dir DIR]``

Wall time on a shared virtual machine moves by a factor of three from one hour to
the next; the number of instructions a process executes barely moves (a few
tenths of a percent between runs). Each command runs three times under
``valgrind --tool=callgrind`` (after one plain run that fills the bytecode
cache), and the script prints the median of its instructions and the ratio to
the floor of ``benchmarks/startup_floor.py``, the yardstick of ``bench_all.py``'s
start-up rows; min and max show a count that took another way (docs/performance.md,
"The fifth pass", tells of one). What it cannot see: the kernel's share (system
calls, the disk, process starts), so the default workspace, whose extra cost is
git processes, is left to ``bench_all.py``. Needs valgrind (``apt-get install
valgrind``); 1-3 minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_engine import linear_dot

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def instructions(argv: list[str], cwd: Path, env: dict[str, str]) -> list[int]:
    """Instructions ``argv`` executes in its own process (its children not counted), three
    times."""
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=True)  # fills caches
    return [_counted(argv, cwd, env) for _ in range(3)]


def _counted(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    counted = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    found = _COLLECTED.search(counted.stderr)
    if counted.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(argv)} failed under valgrind:\n{counted.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--dir", type=Path, help="where the runs go (default: a temporary folder)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind: apt-get install valgrind")
    work = Path(tempfile.mkdtemp(prefix="startup-ir-", dir=args.dir))
    dot = work / "simulate.dot"
    dot.write_text(linear_dot(args.nodes, False), encoding="utf-8")
    floors = work / "floors"
    floors.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    attractor = [sys.executable, "-m", "attractor"]
    floor_script = str(Path(__file__).with_name("startup_floor.py"))
    commands = {
        "floor": [sys.executable, floor_script, str(dot), str(floors), str(args.nodes)],
        "lint": [*attractor, "lint", str(dot)],
        "run": [*attractor, "run", "--backend", "simulate", "-q", "--workspace", "none", str(dot)],
    }
    counts = {name: instructions(argv, work, env) for name, argv in commands.items()}
    floor = statistics.median(counts["floor"])
    print(f"{args.nodes}-node simulate pipeline, one process each, instructions (callgrind),")
    print("median of 3 (min-max):")
    for name, runs in counts.items():
        count = statistics.median(runs)
        spread = f"{min(runs) / 1e6:.1f}-{max(runs) / 1e6:.1f}"
        print(f"  {name:<6} {count / 1e6:8.1f} M ({spread})  {count / floor:5.3f}x the floor")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
