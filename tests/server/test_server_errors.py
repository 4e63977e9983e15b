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


DEEP = '{"a":' * 50_000 + "1" + "}" * 50_000
JSON = {"Content-Type": "application/json"}


def test_malformed_requests_get_a_4xx_with_one_line_each(server: Server) -> None:
    long = "a" * 10_000
    with server.client() as client:
        run_id = client.post("/pipelines", json={"path": "gate.dot"}).json()["id"]
        requests = {
            "NUL in a path": ("POST", "/pipelines", {"json": {"path": "gate\u0000.dot"}}),
            "NUL in DOT": ("POST", "/pipelines", {"json": {"dot_source": "digraph a { x\u0000 }"}}),
            "NUL in a setting": (
                "POST", "/pipelines", {"json": {"path": "gate.dot", "settings": {"model": "\0"}}},
            ),
            "NUL in a context key": (
                "POST", "/pipelines", {"json": {"path": "gate.dot", "context": {"a\u0000": 1}}},
            ),
            "lone surrogate in DOT": (
                "POST", "/pipelines", {"content": b'{"dot_source": "a\\ud800"}', "headers": JSON},
            ),
            "lone surrogate in a path": (
                "POST", "/pipelines", {"content": b'{"path": "\\udc80.dot"}', "headers": JSON},
            ),
            "10,000-character path": ("POST", "/pipelines", {"json": {"path": long}}),
            "10,000-character workdir": (
                "POST", "/pipelines", {"json": {"path": "gate.dot", "settings": {"workdir": long}}},
            ),
            "10,000-character run id": ("GET", f"/pipelines/{long}", {}),
            "10,000-character run id, events": ("GET", f"/pipelines/{long}/events", {}),
            "10,000-character node": ("GET", f"/pipelines/{run_id}/nodes/{long}", {}),
            "10,000-digit Last-Event-ID": (
                "GET", f"/pipelines/{run_id}/events", {"headers": {"Last-Event-ID": "9" * 10_000}},
            ),
            "JSON nested 50,000 deep": ("POST", "/pipelines", {"content": DEEP, "headers": JSON}),
            "JSON nested 50,000 deep, resume": (
                "POST", f"/pipelines/{run_id}/resume", {"content": DEEP, "headers": JSON},
            ),
        }  # fmt: skip
        for what, (method, url, options) in requests.items():
            response = client.request(method, url, **options)
            assert 400 <= response.status_code < 500, (what, response.status_code, response.text)
            error = response.json()["error"]
            assert "\n" not in error and len(error) < 300, (what, error)
    stderr = server.stop()
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr


def test_an_unknown_path_or_method_is_a_json_error_too(server: Server) -> None:
    with server.client() as client:
        missing = client.get("/pipelines/x/nodes/a/files/b/c")
        assert missing.status_code == 404
        assert missing.json()["error"] == (
            "no endpoint /pipelines/x/nodes/a/files/b/c; docs/server.md lists the endpoints"
        )
        wrong = client.delete("/pipelines/x")
        assert wrong.status_code == 405
        assert wrong.json()["error"].startswith("DELETE is not allowed on /pipelines/x; use GET")
        assert "GET" in wrong.headers["allow"]
