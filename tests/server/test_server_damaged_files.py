"""Files that used to freeze ``attractor serve``: a run directory holding FIFOs, and a
posted pipeline whose human gate shows a FIFO. Every endpoint keeps answering."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.server.serverkit import Server, read_until, sse_events

GATE_ON_A_FIFO = """digraph fifo {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    gate  [shape=hexagon, label="Ok?", human.show="pipe"]
    start -> gate
    gate -> done [label="[Y] Yes"]
}
"""


def test_a_run_directory_of_fifos_is_listed_as_damaged_and_streams_end(
    server: Server, root: Path
) -> None:
    (root / "go").touch()
    cli = subprocess.run(
        [sys.executable, "-m", "attractor", "run", "gate.dot", "--auto-approve", "-q"],
        cwd=root, capture_output=True, text=True, timeout=60, input="",
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    (run,) = (root / ".attractor" / "runs").iterdir()
    for name in ("results.jsonl", "events.jsonl", ".lock", "worker.json"):
        (run / name).unlink(missing_ok=True)
        os.mkfifo(run / name)
    with server.client() as client:
        (listed,) = client.get("/pipelines").json()["runs"]
        assert listed["status"] == "damaged"
        assert "results.jsonl: cannot read: a FIFO" in listed["failure_reason"]
        assert client.get(f"/pipelines/{run.name}").status_code == 200
        with client.stream("GET", f"/pipelines/{run.name}/events") as response:
            assert [e.type for e in sse_events(response)] == []  # ends: nobody drives it
        assert client.get("/").status_code == 200


def test_a_posted_gate_showing_a_fifo_fails_at_once_and_the_server_answers(
    server: Server, root: Path
) -> None:
    os.mkfifo(root / "pipe")
    with server.client() as client:
        response = client.post("/pipelines", json={"dot_source": GATE_ON_A_FIFO})
        assert response.status_code == 201, response.text
        run_id = response.json()["id"]
        with client.stream("GET", f"/pipelines/{run_id}/events") as stream:
            failed = read_until(sse_events(stream), "pipeline_failed")
        assert "human.show of node gate" in failed[-1].data["error"]
        assert client.get("/pipelines").status_code == 200
