"""Agent-CLI backend benchmark: what running a node through an agent CLI adds.

Run: ``python benchmarks/bench_agent_cli.py [--nodes N]``. A fake ``codex`` (a
shell script that prints a recorded stream) answers N chained LLM nodes; the
same stream printed by N tool nodes is the baseline. Prints the median per-node
time of each and the difference: the cost of preflight, stream following,
events and transcript per node, apart from the agent's own work.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

import attractor

STREAM = Path(__file__).parents[1] / "tests/handlers/external/streams/codex/tools.jsonl"
FAKE = """#!/bin/sh
case "$1" in login) exit 0 ;; esac
cat >/dev/null
grep -v _fake {stream}
"""


def pipeline(n: int, *, agent: bool) -> str:
    if agent:
        attrs = ' [shape=box, backend="codex", prompt="go"]'
    else:
        attrs = f' [shape=parallelogram, tool_command="grep -v _fake {STREAM}"]'
    nodes = "\n".join(f"  n{i}{attrs}" for i in range(n))
    chain = " -> ".join(f"n{i}" for i in range(n))
    return (
        "digraph bench {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"{nodes}\n  start -> {chain} -> done\n}}\n"
    )


def one_run(work: Path, n: int, *, agent: bool, k: int) -> float:
    dot = work / f"p{k}.dot"
    dot.write_text(pipeline(n, agent=agent))
    started = time.perf_counter()
    result = anyio.run(
        lambda: attractor.run(dot, flags={"logs_dir": str(work / f"logs{k}")}, observers=[])
    )
    elapsed = time.perf_counter() - started
    assert result.status == "success", result.failure_reason
    return elapsed / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fake = work / "bin" / "codex"
        fake.parent.mkdir()
        fake.write_text(FAKE.format(stream=STREAM))
        fake.chmod(0o755)
        os.environ["PATH"] = f"{fake.parent}{os.pathsep}{os.environ['PATH']}"
        os.chdir(work)
        tool = [one_run(work, args.nodes, agent=False, k=k) for k in range(args.repeat)]
        agent = [one_run(work, args.nodes, agent=True, k=100 + k) for k in range(args.repeat)]
    tool_ms = statistics.median(tool) * 1000
    agent_ms = statistics.median(agent) * 1000
    print(f"tool node printing the stream:  {tool_ms:7.1f} ms per node (median)")
    print(f"codex node (fake CLI):          {agent_ms:7.1f} ms per node (median)")
    print(f"added by the agent-CLI backend: {agent_ms - tool_ms:7.1f} ms per node")


if __name__ == "__main__":
    main()
