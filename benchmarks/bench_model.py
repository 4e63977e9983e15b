"""Model-bound work: LLM stages against a local OpenAI-compatible server.

Usage: ``python benchmarks/bench_model.py [--branches 64] [--delay 0.5] [--turns 490] [--json]``

A Starlette app under uvicorn, in its own process on 127.0.0.1 (listen backlog
2048: the standard library's default of 5 alone makes 64 connections at once
take seconds), answers every chat completion after ``--delay`` seconds. Two
figures, each in-process after a warm-up run (imports are start-up's row, not
these):

- a fan-out of ``--branches`` LLM branches with ``max_parallel`` equal to it:
  the run's wall time against the ideal ``ceil(branches / max_parallel) x
  delay``, and this process's CPU per model request (the engine, the agent
  loop, the transcript, the events and the HTTP client);
- one agent session of ``--turns`` turns (each turn a tool call to
  ``list_dir``, then a final answer) against a server answering at once: this
  process's CPU and the wall time per turn over the first and the last tenth
  of the turns (flat is 1x; the wall time includes the server reading the
  whole conversation, which every request carries). A node allows at most
  500 turns, so the default is 490.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
#: ``--workspace`` of the runs (None: the run's default); see ``--workspace``.
WORKSPACE: str | None = "none"


# -- the server (run in a child process: its CPU is not the engine's) -------------


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


def serve(port: int, delay: float, turns: int) -> None:
    """Answer "Done." after ``delay``; in a session (a prompt saying ``TURNS``), a
    ``list_dir`` tool call until the conversation holds ``turns`` tool results."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        messages = body.get("messages", [])
        if delay:
            await anyio.sleep(delay)
        wants_turns = any("TURNS" in str(m.get("content")) for m in messages[:3])
        done = sum(1 for m in messages if m.get("role") == "tool")
        if wants_turns and done < turns - 1:
            call = {
                "id": f"call_{done}",
                "type": "function",
                "function": {"name": "list_dir", "arguments": json.dumps({"path": "."})},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return JSONResponse(_completion(message, "tool_calls"))
        return JSONResponse(_completion({"role": "assistant", "content": "Done."}, "stop"))

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, backlog=2048, log_level="error")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """The answering server in a child process, for a ``with`` block."""

    def __init__(self, delay: float, turns: int = 0) -> None:
        self.port = _free_port()
        argv = [sys.executable, __file__, "--serve", str(self.port), "--delay", str(delay)]
        self.proc = subprocess.Popen([*argv, "--turns", str(turns)])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Server:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        self.proc.kill()
        raise SystemExit("the test server did not start")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# -- the runs ------------------------------------------------------------------------


def fan_dot(branches: int) -> str:
    lines = [f'  b{i} [prompt="Say done"]\n  fan -> b{i} -> join' for i in range(branches)]
    return (
        "digraph fan {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"  fan [shape=component, max_parallel={branches}]\n  join [shape=tripleoctagon]\n"
        "  start -> fan\n" + "\n".join(lines) + "\n  join -> done\n}\n"
    )


def session_dot(turns: int, word: str = "TURNS") -> str:
    return (
        "digraph session {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f'  work [prompt="{word}: list the folder, {turns} times", max_turns={turns + 10}]\n'
        "  start -> work -> done\n}\n"
    )


def run_once(
    text: str, folder: Path, url: str, turn_cpu: list[float] | None = None
) -> tuple[float, float, Path]:
    """Wall and CPU seconds of one in-process run of ``text`` (its run dir under ``folder``);
    ``turn_cpu`` gets this process's CPU time at the start of each agent turn."""
    from attractor.events import AgentTurnStarted, Event
    from attractor.launch import Hooks, launch, plan_run

    def observe(event: Event) -> None:
        if turn_cpu is not None and isinstance(event, AgentTurnStarted):
            turn_cpu.append(time.process_time())

    work = Path(tempfile.mkdtemp(dir=folder))
    path = work / "pipeline.dot"
    path.write_text(text, encoding="utf-8")
    os.environ["OPENAI_BASE_URL"] = url
    os.environ["OPENAI_API_KEY"] = "bench"
    flags = {"backend": "llm", "model": "gpt-5", "workdir": str(work), "logs_dir": None}
    if WORKSPACE:
        flags["workspace"] = WORKSPACE
    plan = plan_run(path, flags)
    started, cpu = time.perf_counter(), time.process_time()
    result = anyio.run(launch, plan, Hooks(observers=[observe]))
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    if str(result.status) not in ("success", "RunStatus.SUCCESS"):
        raise SystemExit(f"the run ended {result.status}: {result.failure_reason}")
    return wall, used, Path(result.run_dir)


def fan_out(branches: int, delay: float, reps: int, folder: Path) -> dict[str, float]:
    ideal = math.ceil(branches / branches) * delay
    walls, cpus = [], []
    with Server(delay) as server:
        run_once(fan_dot(4), folder, server.url)  # warm-up: imports, the client's pool
        for _ in range(reps):
            wall, cpu, _ = run_once(fan_dot(branches), folder, server.url)
            walls.append(wall)
            cpus.append(cpu)
    wall = statistics.median(walls)
    return {
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal,
        "cpu_ms_per_request": statistics.median(cpus) / branches * 1e3,
    }


def session(turns: int, folder: Path) -> dict[str, float]:
    cpus: list[float] = []
    with Server(0.0, turns) as server:
        run_once(session_dot(3, "warm-up"), folder, server.url)
        wall, cpu, run_dir = run_once(session_dot(turns), folder, server.url, cpus)
    starts = [
        json.loads(line)["ts"]
        for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
        if '"agent_turn_started"' in line
    ]
    walls = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    used = [b - a for a, b in zip(cpus, cpus[1:], strict=False)]
    tenth = max(1, len(walls) // 10)

    def growth(gaps: list[float]) -> tuple[float, float]:
        return statistics.mean(gaps[:tenth]) * 1e3, statistics.mean(gaps[-tenth:]) * 1e3

    (first_cpu, last_cpu), (first_wall, last_wall) = growth(used), growth(walls)
    return {
        "turns": len(starts),
        "wall_s": wall,
        "cpu_ms_per_turn": cpu / max(1, len(starts)) * 1e3,
        "first_tenth_cpu_ms": first_cpu,
        "last_tenth_cpu_ms": last_cpu,
        "cpu_growth": last_cpu / first_cpu,
        "first_tenth_wall_ms": first_wall,
        "last_tenth_wall_ms": last_wall,
        "wall_growth": last_wall / first_wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--branches", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--turns", type=int, default=490)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=("fan", "session"))
    parser.add_argument("--json", action="store_true", help="one JSON line of figures")
    parser.add_argument(
        "--workspace",
        default="none",
        help="the runs' workspace mode (default none: the figures are the model stages' own; "
        "'default' leaves the run's own)",
    )
    args = parser.parse_args()
    global WORKSPACE
    WORKSPACE = None if args.workspace == "default" else args.workspace
    if args.serve:
        serve(args.serve, args.delay, args.turns)
        return
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-model-") as tmp:
        if args.only in (None, "fan"):
            figures["fan_out"] = fan_out(args.branches, args.delay, args.reps, Path(tmp))
        if args.only in (None, "session"):
            figures["session"] = session(args.turns, Path(tmp))
    if args.json:
        print(json.dumps(figures))
        return
    for name, values in figures.items():
        print(name, " ".join(f"{k}={v:.3g}" for k, v in values.items()))


if __name__ == "__main__":
    main()
