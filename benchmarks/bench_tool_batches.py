"""Tool-call batching benchmark: one reply of read-only calls, together versus one by one.

Run: ``python benchmarks/bench_tool_batches.py [--calls N] [--files N]``. A scripted
model asks, in one reply, for N ``search_file`` and ``read_file`` calls over a tree
of text files; the same session runs with the calls overlapping (read-only tools,
as shipped) and with every tool marked as writing (one at a time). Prints the
median wall time of each and the ratio. Each search reads its own subtree, so the
figure depends on how much of the work waits on the disk rather than on Python.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from attractor.agent.session import AgentSession, SessionConfig
from attractor.agent.tools import Tool, ToolRegistry, default_registry
from attractor.agent.transcript import Transcript
from attractor.llm.scripted import ScriptedModel, ScriptedResponse

REPEATS = 5


def _tree(root: Path, dirs: int, files: int) -> None:
    line = "the quick brown fox jumps over the lazy dog " * 4 + "\n"
    for d in range(dirs):
        sub = root / f"d{d}"
        sub.mkdir(parents=True)
        for f in range(files):
            (sub / f"f{f}.txt").write_text(line * 400 + f"needle {d} {f}\n")


def _reply(calls: int) -> ScriptedResponse:
    asked = []
    for n in range(calls):
        if n % 2:
            asked.append(("read_file", {"path": f"d{n}/f0.txt", "limit": 500}))
        else:
            asked.append(("search_file", {"pattern": "needle", "path": f"d{n}"}))
    return ScriptedResponse("", tuple(asked))


def _sequential(registry: ToolRegistry) -> ToolRegistry:
    tools = [registry.get(name) for name in registry.names()]
    return ToolRegistry([Tool(t.definition, t.run) for t in tools if t is not None])


async def _once(root: Path, calls: int, registry: ToolRegistry) -> float:
    model = ScriptedModel([_reply(calls), ScriptedResponse("done")])
    with tempfile.TemporaryDirectory() as stage:
        config = SessionConfig(node_id="b", prompt="go", workdir=root, max_turns=4, report=False)
        session = AgentSession(
            model, config, tools=registry, transcript=Transcript(Path(stage)), emit=lambda e: None
        )
        started = time.perf_counter()
        await session.run()
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--files", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _tree(root, args.calls, args.files)
        together = default_registry()
        alone = _sequential(together)
        timings: dict[str, list[float]] = {"together": [], "one by one": []}
        for _ in range(REPEATS):
            timings["together"].append(anyio.run(_once, root, args.calls, together))
            timings["one by one"].append(anyio.run(_once, root, args.calls, alone))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    for name, value in medians.items():
        print(f"{name:>11}: {value * 1000:8.1f} ms (median of {REPEATS})")
    print(f"      ratio: {medians['one by one'] / medians['together']:.2f}x")


if __name__ == "__main__":
    main()
