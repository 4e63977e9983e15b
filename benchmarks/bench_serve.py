"""Server and picture benchmark: drawing, reading a long run, replaying its events.

Run: ``python benchmarks/bench_serve.py [--events N]``. Prints medians of:
drawing a pipeline as SVG (an example and a 200-node chain), reading the state
of a run whose events.jsonl holds N events, ``GET /pipelines/{id}`` and the
full SSE replay of those N events from a real ``attractor serve`` on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attractor.linter.prepare import prepare  # noqa: E402
from attractor.render import render  # noqa: E402
from attractor.runview.inventory import run_state  # noqa: E402
from tests.server.serverkit import sse_events, start_server  # noqa: E402


def median_ms(action: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def chain(nodes: int) -> str:
    body = "\n".join(f'  n{i} [shape=parallelogram, tool_command="true"]' for i in range(nodes))
    edges = " -> ".join(["start", *(f"n{i}" for i in range(nodes)), "done"])
    ends = "  start [shape=Mdiamond]\n  done [shape=Msquare]"
    return f"digraph chain {{\n{ends}\n{body}\n  {edges}\n}}"


def fake_run(root: Path, events: int) -> Path:
    """A finished run directory of ``events`` stage events over a 4-node pipeline."""
    run = root / ".attractor" / "runs" / "20260101T000000Z-bench"
    run.mkdir(parents=True)
    source = (
        "digraph bench { start [shape=Mdiamond] done [shape=Msquare] a b start -> a -> b -> done }"
    )
    (run / "pipeline.dot").write_text(source)
    (run / "manifest.json").write_text(json.dumps({"name": "bench", "status": "success"}))
    lines = []
    for i in range(events // 2):
        node = "ab"[i % 2]
        common = {"ts": 0, "name": node, "index": i}
        lines.append({"type": "stage_started", "attempt": 1, **common})
        lines.append({"type": "stage_completed", "duration": 0.1, **common})
    lines.append({"type": "pipeline_completed", "ts": 0, "duration": 1.0})
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    example = prepare(Path("examples/human_review.dot"))[0]
    big = prepare(chain(200))[0]
    assert example is not None and big is not None
    print(f"draw examples/human_review.dot as SVG: {median_ms(lambda: render(example)):.1f} ms")
    print(f"draw a 200-node chain as SVG:          {median_ms(lambda: render(big), 3):.1f} ms")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        run = fake_run(root, args.events)
        graph = prepare(run / "pipeline.dot")[0]
        print(
            f"run_state of {args.events} events:          "
            f"{median_ms(lambda: run_state(run, graph)):.1f} ms"
        )
        server = start_server(root)
        try:
            with server.client() as client:
                url = f"/pipelines/{run.name}"
                print(
                    f"GET /pipelines/ID ({args.events} events):   "
                    f"{median_ms(lambda: client.get(url)):.1f} ms"
                )

                def replay() -> int:
                    with client.stream("GET", url + "/events") as response:
                        return sum(1 for _ in sse_events(response))

                took = median_ms(replay, 3)
                count = replay()
                print(
                    f"SSE replay of {count} events:          {took:.0f} ms "
                    f"({count / took * 1000:,.0f} events/s)"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
