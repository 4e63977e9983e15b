"""Continuing a run through the API: resume, retry the failed node, go back to a node."""

from __future__ import annotations

from pathlib import Path

from tests.server.serverkit import FLAKY, Server, read_until, sse_events


def _run_to_end(server: Server, run_id: str, after: int = 0) -> str:
    """Follow the run's events until its final one; the run's status then."""
    with server.client() as client:
        with client.stream(
            "GET", f"/pipelines/{run_id}/events", headers={"Last-Event-ID": str(after)}
        ) as response:
            events = sse_events(response)
            while True:
                event = next(events)
                if event.type in ("pipeline_completed", "pipeline_failed"):
                    break
        status: str = client.get(f"/pipelines/{run_id}").json()["status"]
        return status


def _event_count(server: Server, run_id: str) -> int:
    with server.client() as client:
        count: int = client.get(f"/pipelines/{run_id}").json()["event_count"]
        return count


def _visits(server: Server, run_id: str) -> int:
    with (
        server.client() as client,
        client.stream("GET", f"/pipelines/{run_id}/events") as response,
    ):
        events = list(sse_events(response))
    return sum(1 for e in events if e.type == "stage_started" and e.data["name"] == "check")


def test_a_failed_run_is_retried_and_a_finished_one_goes_back_to_a_node(
    server: Server, root: Path
) -> None:
    (root / "flaky.dot").write_text(FLAKY)
    # The run is steered by a file written in the workdir between sessions, which a
    # workspace would take back on --from (tests/workspace covers that).
    (root / "attractor.toml").write_text('workspace = "none"\n')
    with server.client() as client:
        run_id = client.post("/pipelines", json={"path": "flaky.dot"}).json()["id"]
    assert _run_to_end(server, run_id) == "fail"
    url = f"/pipelines/{run_id}/resume"
    with server.client() as client:
        plain = client.post(url, json={})
        assert plain.status_code == 409 and '"retry_failed": true' in plain.json()["error"]
        for body, status in (
            ({"retry_failed": True, "from": "check"}, 400),
            ({"from": "nowhere"}, 400),
            ({"retry_failed": "yes"}, 400),
            ({"rerun": True}, 400),
        ):
            refused = client.post(url, json=body)
            assert refused.status_code == status, (body, refused.text)
        (root / "fixed").touch()
        seen = _event_count(server, run_id)
        retried = client.post(url, json={"retry_failed": True})
        assert retried.status_code == 200 and retried.json()["id"] == run_id
    # Followed from the events after the resume: the earlier run's end is in the log too.
    assert _run_to_end(server, run_id, seen) == "success"
    assert _visits(server, run_id) == 2
    with server.client() as client:
        again = client.post(url, json={"retry_failed": True})
        assert again.status_code == 409 and "not failed" in again.json()["error"]
        seen = _event_count(server, run_id)
        back = client.post(url, json={"from": "check"})
        assert back.status_code == 200 and back.json()["id"] == run_id
    assert _run_to_end(server, run_id, seen) == "success"
    assert _visits(server, run_id) == 3  # the check ran again
    with server.client() as client:
        listed = client.get(f"/pipelines/{run_id}").json()
        assert listed["nodes"]["check"]["state"] == "success"


def test_an_interrupted_run_is_resumed_with_an_empty_body(server: Server, root: Path) -> None:
    with server.client() as client:
        run_id = client.post("/pipelines", json={"path": "gate.dot"}).json()["id"]
        with client.stream("GET", f"/pipelines/{run_id}/events") as response:
            read_until(sse_events(response), "stage_started", "work")
        assert client.post(f"/pipelines/{run_id}/cancel", json={}).status_code == 202
        with client.stream("GET", f"/pipelines/{run_id}/events") as response:
            read_until(sse_events(response), "pipeline_interrupted")
        refused = client.post(f"/pipelines/{run_id}/resume", json={"retry_failed": True})
        assert refused.status_code == 409 and "interrupted, not failed" in refused.text
        resumed = client.post(f"/pipelines/{run_id}/resume", json={})
        assert resumed.status_code == 200 and resumed.json()["id"] == run_id
        assert client.get(f"/pipelines/{run_id}").json()["active"] is True
