"""Runs that die of an error, and requests that are not what they should be."""

from __future__ import annotations

import time
from pathlib import Path

from tests.server.serverkit import BREAKS_ITS_RUN, Server


def _wait_until_not_running(server: Server, run_id: str) -> dict[str, object]:
    deadline = time.monotonic() + 60
    with server.client() as client:
        while time.monotonic() < deadline:
            status: dict[str, object] = client.get(f"/pipelines/{run_id}").json()
            if status["status"] != "running" or not status["active"]:
                return status
            time.sleep(0.05)  # the run is still going
    raise AssertionError(f"run {run_id} still running after 60 s")


def test_a_run_that_dies_of_an_error_ends_failed_with_its_reason(
    server: Server, root: Path
) -> None:
    (root / "breaks.dot").write_text(BREAKS_ITS_RUN)
    with server.client() as client:
        run_id = client.post("/pipelines", json={"path": "breaks.dot"}).json()["id"]
    status = _wait_until_not_running(server, run_id)
    assert status["active"] is False
    assert status["status"] == "fail", status
    reason = str(status["failure_reason"])
    assert "checkpoint.json" in reason, reason
    assert "checkpoint.json" in str(status["error"])
    with server.client() as client:
        listed = {r["id"]: r for r in client.get("/pipelines").json()["runs"]}
    assert listed[run_id]["status"] == "fail"
    assert "checkpoint.json" in listed[run_id]["failure_reason"]
    stderr = server.stop()
    assert f"run {run_id} failed" in stderr and "checkpoint.json" in stderr, stderr
    assert "Traceback" not in stderr
