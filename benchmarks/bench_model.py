"""Model-bound work: LLM stages against a local OpenAI-compatible server.

Usage: ``python benchmarks/bench_model.py [--branches 64] [--delay 0.5] [--turns 1000]
[--workspace none|default] [--repo] [--json]``

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
  of the turns (medians; flat is 1x; the wall time includes the server reading
  the whole conversation, which every request carries), and, as the part of
  that growth the request itself carries, the CPU of the OpenAI SDK alone
  sending the conversation as it stood in each tenth. A node allows at most
  500 turns, so a longer session is one conversation carried on by several
  nodes of 500 turns (``fidelity="full"`` on one ``thread_id``): each sends the
  whole history before it, as one node would.
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
#: Whether each run's workdir is a git repository (``--repo``): its default
#: workspace is then a worktree of it, not a snapshot.
IN_REPO = False


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


def serve(port: int, delay: float) -> None:
    """Answer "Done." after ``delay``; in a session (a prompt ``TURNS n: ...``), a
    ``list_dir`` tool call until that prompt is followed by ``n - 1`` tool results."""
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
        wanted, done = _turns_wanted(messages)
        # A final turn (no tools offered) is answered, as a model would.
        if body.get("tools") and done < wanted - 1:
            call = {
                "id": f"call_{len(messages)}",
                "type": "function",
                "function": {"name": "list_dir", "arguments": json.dumps({"path": "."})},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return JSONResponse(_completion(message, "tool_calls"))
        return JSONResponse(_completion({"role": "assistant", "content": "Done."}, "stop"))

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, backlog=2048, log_level="error")


def _turns_wanted(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """The turns the last ``TURNS n`` prompt asks for, and the tool results after it."""
    for at in range(len(messages) - 1, -1, -1):
        content = messages[at].get("content")
        user = messages[at].get("role") == "user" and isinstance(content, str)
        if user and content.startswith("TURNS "):
            done = sum(1 for m in messages[at:] if m.get("role") == "tool")
            return int(content.split()[1].rstrip(":")), done
    return 0, 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """The answering server in a child process, for a ``with`` block."""

    def __init__(self, delay: float) -> None:
        self.port = _free_port()
        argv = [sys.executable, __file__, "--serve", str(self.port), "--delay", str(delay)]
        self.proc = subprocess.Popen(argv)
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


#: The most turns a node of the session takes (a node allows 500: ``max_turns``,
#: attractor.dot.schema; the rest is slack, so that no node ends on its limit).
NODE_TURNS = 490


def session_dot(turns: int, word: str = "TURNS") -> str:
    """One conversation of ``turns`` turns: nodes of at most 490 turns on one thread."""
    count = -(-turns // NODE_TURNS)
    shares = [turns // count + (1 if i < turns % count else 0) for i in range(count)]
    nodes = [
        f'  w{i} [prompt="{word} {share}: list the folder", max_turns={share + 10}, '
        'fidelity="full", thread_id="session"]'
        for i, share in enumerate(shares)
    ]
    chain = " -> ".join(["start", *(f"w{i}" for i in range(count)), "done"])
    return (
        "digraph session {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        + "\n".join(nodes)
        + f"\n  {chain}\n}}\n"
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
    if IN_REPO:
        _make_repo(work)
    os.environ["OPENAI_BASE_URL"] = url
    os.environ["OPENAI_API_KEY"] = "bench"
    # The run dir beside the pipeline, in the benchmark's temporary folder.
    logs = str(work / "run")
    flags = {"backend": "llm", "model": "gpt-5", "workdir": str(work), "logs_dir": logs}
    if WORKSPACE:
        flags["workspace"] = WORKSPACE
    plan = plan_run(path, flags)
    started, cpu = time.perf_counter(), time.process_time()
    result = anyio.run(launch, plan, Hooks(observers=[observe]))
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    if str(result.status) not in ("success", "RunStatus.SUCCESS"):
        raise SystemExit(f"the run ended {result.status}: {result.failure_reason}")
    return wall, used, Path(result.run_dir)


def _make_repo(work: Path) -> None:
    """``work`` as a git repository with one commit (the pipeline left uncommitted)."""
    git = ["git", "-C", str(work), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    (work / "README").write_text("bench\n", encoding="utf-8")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], check=True)


def fan_out(branches: int, delay: float, reps: int, folder: Path) -> dict[str, float]:
    ideal = math.ceil(branches / branches) * delay
    walls, cpus, bare, bare_walls = [], [], [], []
    with Server(delay) as server:
        run_once(fan_dot(4), folder, server.url)  # warm-up: imports, the client's pool
        bare_requests(server.url, [[_USER]] * 4)
        for _ in range(reps):  # in turn with the bare client: load hits both alike
            wall, cpu, _ = run_once(fan_dot(branches), folder, server.url)
            walls.append(wall)
            cpus.append(cpu)
            bare_cpu, bare_wall = bare_requests(server.url, [[_USER]] * branches)
            bare.append(bare_cpu)
            bare_walls.append(bare_wall)
    wall = statistics.median(walls)
    return {
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal,
        "cpu_ms_per_request": statistics.median(cpus) / branches * 1e3,
        "bare_cpu_ms_per_request": statistics.median(bare) / branches * 1e3,
        # The same requests from the SDK alone, with a client already open: what the
        # HTTP stack and the server cost on this machine before any engine work.
        "bare_wall_s": statistics.median(bare_walls),
    }


_USER = {"role": "user", "content": "Say done"}


def bare_requests(url: str, conversations: list[list[dict[str, Any]]]) -> tuple[float, float]:
    """CPU and wall seconds of this process for one chat completion per conversation, all
    at once, with the OpenAI SDK alone (the body handed over as the engine's adapter does)."""
    from openai import AsyncOpenAI

    async def send(client: AsyncOpenAI, messages: list[dict[str, Any]]) -> None:
        body = {"messages": messages}
        await client.chat.completions.create(model="gpt-5", messages=[], extra_body=body)

    async def together() -> tuple[float, float]:
        async with AsyncOpenAI(base_url=url, api_key="bench") as client:
            cpu, wall = time.process_time(), time.perf_counter()
            async with anyio.create_task_group() as tg:
                for messages in conversations:
                    tg.start_soon(send, client, messages)
            return time.process_time() - cpu, time.perf_counter() - wall

    return anyio.run(together)


def bare_in_turn(
    url: str, conversations: dict[str, list[dict[str, Any]]], reps: int
) -> dict[str, float]:
    """Median CPU seconds of one chat completion of each conversation, sent in turn
    ``reps`` times over one SDK client (one kept connection, as a session has)."""
    from openai import AsyncOpenAI

    async def measure() -> dict[str, float]:
        spent: dict[str, list[float]] = {name: [] for name in conversations}
        async with AsyncOpenAI(base_url=url, api_key="bench") as client:
            for rep in range(reps + 1):  # the first round opens the connection
                for name, messages in conversations.items():
                    cpu = time.process_time()
                    body = {"messages": messages}
                    await client.chat.completions.create(
                        model="gpt-5", messages=[], extra_body=body
                    )
                    if rep:
                        spent[name].append(time.process_time() - cpu)
        return {name: statistics.median(values) for name, values in spent.items()}

    return anyio.run(measure)


def _conversation(run_dir: Path) -> list[dict[str, Any]]:
    """The session's whole conversation in the wire shape, from its last thread file."""
    from attractor.agent import thread
    from attractor.llm.openai_model import message_to_openai

    last = max((run_dir / "threads").rglob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    messages = thread.load(json.loads(last.read_text(encoding="utf-8")))
    return [message_to_openai(m) for m in messages]


def session(turns: int, folder: Path) -> dict[str, float]:
    """Per-turn CPU and wall time over the first and last tenth of a ``turns``-turn
    conversation (medians), and the bare SDK's CPU for one request of the
    conversation as it stood at the middle of each tenth (what the request carries)."""
    cpus: list[float] = []
    with Server(0.0) as server:
        run_once(session_dot(3), folder, server.url)  # warm-up
        wall, cpu, run_dir = run_once(session_dot(turns), folder, server.url, cpus)
        conversation = _conversation(run_dir)
        at = {"first": len(conversation) // 20, "last": len(conversation) * 19 // 20}
        bare = bare_in_turn(server.url, {k: conversation[:n] for k, n in at.items()}, 15)
    starts = [
        json.loads(line)["ts"]
        for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
        if '"agent_turn_started"' in line
    ]
    walls = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    used = [b - a for a, b in zip(cpus, cpus[1:], strict=False)]
    tenth = max(1, len(walls) // 10)

    def growth(gaps: list[float]) -> tuple[float, float]:
        return statistics.median(gaps[:tenth]) * 1e3, statistics.median(gaps[-tenth:]) * 1e3

    (first_cpu, last_cpu), (first_wall, last_wall) = growth(used), growth(walls)
    first_bare, last_bare = bare["first"] * 1e3, bare["last"] * 1e3
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
        "first_tenth_bare_request_cpu_ms": first_bare,
        "last_tenth_bare_request_cpu_ms": last_bare,
        "first_tenth_overhead_cpu_ms": first_cpu - first_bare,
        "last_tenth_overhead_cpu_ms": last_cpu - last_bare,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--branches", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=("fan", "session"))
    parser.add_argument("--json", action="store_true", help="one JSON line of figures")
    parser.add_argument(
        "--workspace",
        default="none",
        help="the runs' workspace mode (default none: the figures are the model stages' own; "
        "'default' leaves the run's own)",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        help="where the runs' folders go (default: the system's temporary folder)",
    )
    parser.add_argument(
        "--repo",
        action="store_true",
        help="each run's workdir is a git repository (the default workspace: a worktree)",
    )
    args = parser.parse_args()
    global WORKSPACE, IN_REPO
    WORKSPACE = None if args.workspace == "default" else args.workspace
    IN_REPO = args.repo
    if args.serve:
        serve(args.serve, args.delay)
        return
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-model-", dir=args.dir) as tmp:
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
