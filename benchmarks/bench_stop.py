"""How fast a run of instant stages stops: SIGINT, SIGTERM and ``--timeout``.

Usage: ``python benchmarks/bench_stop.py [--repeat N]``

Each loop below finishes its stages at once (no handler awaits anything), the
case that once kept the event loop from ever delivering a cancellation. For
every loop and every way of stopping it, the script starts ``attractor run``,
waits until the run has written its first stages, stops it, and times the
interval from the stop (the signal, or the moment the timeout falls due) to the
process's exit (for the timeout: from the run's recorded start plus the
timeout). It prints the median and the worst of ``--repeat`` runs; the
goal is a stop within 0.5 s. A reference row times the same signal sent to a
bare ``python -c 'sleep'`` process, the floor of a process exit on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAD = "start [shape=Mdiamond]; exit [shape=Msquare]\n"
LOOPS = {
    "simulate self-loop": HEAD + 'a [prompt="again"]\nstart -> a\n'
    'a -> a [condition="outcome=success"]\na -> exit [condition="outcome=fail"]',
    "conditional loop": HEAD + "c [shape=diamond]\nstart -> c\n"
    'c -> c [condition="outcome=success"]\nc -> exit [condition="outcome=fail"]',
}
GOAL = 0.5
TIMEOUT = 2.0


def _command(dot: Path, logs: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "attractor", "run", str(dot), "--backend", "simulate",
        "--max-steps", "100000000", "--logs-dir", str(logs), *extra,
    ]  # fmt: skip


def _wait_started(logs: Path) -> None:
    events = logs / "events.jsonl"
    deadline = time.monotonic() + 30
    while not (events.exists() and events.stat().st_size > 20_000):
        if time.monotonic() > deadline:
            raise SystemExit(f"the run never got going: {logs}")
        time.sleep(0.01)


def _stop_by_signal(dot: Path, logs: Path, signum: int) -> float:
    proc = subprocess.Popen(_command(dot, logs), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_started(logs)
    sent = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=60)
    return time.monotonic() - sent


def _stop_by_timeout(dot: Path, logs: Path) -> float:
    """From the moment the run's --timeout fell due (its recorded start plus the
    timeout) to the process's exit."""
    proc = subprocess.Popen(
        _command(dot, logs, "--timeout", f"{TIMEOUT}s"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    proc.wait(timeout=60)
    ended = time.time()
    manifest = json.loads((logs / "manifest.json").read_text("utf-8"))
    return ended - (float(manifest["started_at"]) + TIMEOUT)


def _reference(signum: int) -> float:
    sleeper = "import time; print(1, flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", sleeper], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    sent = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=60)
    return time.monotonic() - sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        count = 0
        for name, body in LOOPS.items():
            dot = base / f"{name.split()[0]}.dot"
            dot.write_text("digraph loop {\n" + body + "\n}\n", encoding="utf-8")
            for how, signum in (("SIGINT", signal.SIGINT), ("SIGTERM", signal.SIGTERM)):
                times = []
                for _ in range(args.repeat):
                    count += 1
                    times.append(_stop_by_signal(dot, base / f"run{count}", signum))
                rows.append((f"{name}, {how}", times))
            times = []
            for _ in range(args.repeat):
                count += 1
                times.append(_stop_by_timeout(dot, base / f"run{count}"))
            rows.append((f"{name}, --timeout {TIMEOUT:g}s (after it fell due)", times))
        floor = [_reference(signal.SIGTERM) for _ in range(args.repeat)]
        rows.append(("reference: SIGTERM to a sleeping python", floor))
    print(f"{'case':<64} {'median':>8} {'worst':>8}")
    for name, times in rows:
        print(f"{name:<64} {statistics.median(times):>7.3f}s {max(times):>7.3f}s")
    print(f"goal: each way of stopping ends the run within {GOAL}s")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
