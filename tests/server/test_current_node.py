"""``current_node`` of a running run, through the API and ``attractor runs --json``.

The manifest learns the current node only when a run ends; while it runs (in
a tool step, or waiting at a human gate) the node comes from the checkpoint
and its journal.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.server.serverkit import Server, read_until, sse_events


def _listed(server: Server, run_id: str) -> dict[str, Any]:
    with server.client() as client:
        runs = client.get("/pipelines").json()["runs"]
    (run,) = [r for r in runs if r["id"] == run_id]
    return dict(run)


def _cli_listed(root: Path, run_id: str) -> dict[str, Any]:
    listed = subprocess.run(
        [sys.executable, "-m", "attractor", "runs", "--root", str(root), "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    (run,) = [r for r in json.loads(listed.stdout) if r["id"] == run_id]
    return dict(run)


def _wait_current(server: Server, run_id: str, node: str) -> None:
    """The listing names ``node`` (the journal record is written as the node starts)."""
    deadline = time.monotonic() + 30
    while _listed(server, run_id)["current_node"] != node:
        assert time.monotonic() < deadline, f"current_node never became {node}"
        time.sleep(0.05)  # another process writes the journal; nothing to wait on


def test_current_node_is_the_running_node_and_the_waiting_gate(server: Server, root: Path) -> None:
    with server.client() as client:
        started = client.post("/pipelines", json={"path": "gate.dot"})
        assert started.status_code == 201, started.text
        run_id = started.json()["id"]
        with client.stream("GET", f"/pipelines/{run_id}/events") as response:
            events = sse_events(response)
            read_until(events, "stage_started", "work")
            _wait_current(server, run_id, "work")
            assert client.get(f"/pipelines/{run_id}").json()["current_node"] == "work"
            assert _cli_listed(root, run_id)["current_node"] == "work"
            (root / "go").touch()
            read_until(events, "interview_started")
        _wait_current(server, run_id, "review")
        status = client.get(f"/pipelines/{run_id}").json()
        assert (status["status"], status["current_node"]) == ("running", "review")
        cli = _cli_listed(root, run_id)
        assert (cli["status"], cli["current_node"]) == ("running", "review")
