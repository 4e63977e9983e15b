"""The HTTP API against a real ``attractor serve`` on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.server.serverkit import (
    Server,
    read_until,
    sse_events,
)

#: Unsandboxed: the test needs the command's own pid ($$ in a sandbox is its pid
#: namespace's); tests/sandbox kills commands inside the sandbox.
SLOW_TOOL = """digraph slow {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    wait  [shape=parallelogram, sandbox=none,
           tool_command="echo $$ > tool.pid; test -f go || exec sleep 300"]
    start -> wait -> done
}
"""


def _start(server: Server, body: dict[str, object]) -> str:
    with server.client() as client:
        response = client.post("/pipelines", json=body)
    assert response.status_code == 201, response.text
    run_id: str = response.json()["id"]
    return run_id


def test_a_run_is_streamed_answered_and_replayed_after_a_reconnect(server: Server) -> None:
    run_id = _start(server, {"path": "gate.dot", "settings": {"timeout": "2m"}})
    assert (server.root / ".attractor" / "runs" / run_id / "events.jsonl").is_file()
    with server.client() as client:
        with client.stream("GET", f"/pipelines/{run_id}/events") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = sse_events(response)
            first = read_until(events, "stage_started", "work")
            (server.root / "go").touch()
            first += read_until(events, "interview_started")
        # The browser went away at the gate; the run waits for the answer.
        questions = client.get(f"/pipelines/{run_id}/questions").json()["questions"]
        assert [(q["stage"], q["text"]) for q in questions] == [("review", "Ship it?")]
        assert [o["key"] for o in questions[0]["options"]] == ["A", "R"]
        qid = questions[0]["id"]
        wrong = client.post(f"/pipelines/{run_id}/questions/{qid}/answer", json={"answer": "Z"})
        assert wrong.status_code == 400 and "answer one of: A (Approve)" in wrong.text
        answered = client.post(
            f"/pipelines/{run_id}/questions/{qid}/answer",
            json={"answer": "approve", "comment": "ship it"},
        )
        # The choice's label as the event has it; the comment apart, not mixed into it.
        assert answered.json() == {
            "id": qid, "answer": "A", "label": "[A] Approve", "comment": "ship it",
            "answered_by": "api",
        }  # fmt: skip
        last = first[-1].id
        with client.stream(
            "GET", f"/pipelines/{run_id}/events", headers={"Last-Event-ID": str(last)}
        ) as response:
            rest = read_until(sse_events(response), "pipeline_completed")
        assert [e.id for e in rest] == list(range(last + 1, last + 1 + len(rest)))
        with client.stream("GET", f"/pipelines/{run_id}/events") as response:
            replay = list(sse_events(response))  # a finished run: the stream ends
        assert [(e.id, e.data) for e in replay] == [(e.id, e.data) for e in first + rest]
        # The tool's output lines, and who answered the gate with what comment.
        outputs = [e.data for e in replay if e.data["type"] == "stage_output"]
        assert [(o["node"], o["stream"], o["text"]) for o in outputs] == [
            ("work", "stdout", "built\n")
        ]
        [answer] = [e.data for e in replay if e.data["type"] == "interview_completed"]
        assert answer["answer"] == "A" and answer["label"] == "[A] Approve"
        assert (answer["answered_by"], answer["comment"]) == ("api", "ship it")
        caught_up = {"Last-Event-ID": str(replay[-1].id)}
        with client.stream("GET", f"/pipelines/{run_id}/events", headers=caught_up) as response:
            assert list(sse_events(response)) == []  # nothing more, and the stream ends

        status = client.get(f"/pipelines/{run_id}").json()
        assert status["status"] == "success" and status["active"] is False
        assert {k: v["state"] for k, v in status["nodes"].items()} == {
            "start": "success", "work": "success", "review": "success", "done": "success",
        }  # fmt: skip
        assert status["route"] == ["start", "work", "review", "done"]
        assert status["progress"] == {"index": 4, "total": 4}
        node = client.get(f"/pipelines/{run_id}/nodes/review").json()
        assert json.loads(node["files"]["answer.json"])["comment"] == "ship it"
        assert json.loads(node["files"]["answer.json"])["answered_by"] == "api"
        assert client.get(f"/pipelines/{run_id}/nodes/work").json()["files"]["stdout.txt"] == (
            "built\n"
        )
        context = client.get(f"/pipelines/{run_id}/context").json()["context"]
        assert context["human.gate.selected"] == "A"
        checkpoint = client.get(f"/pipelines/{run_id}/checkpoint").json()
        assert checkpoint["completed_nodes"] == ["start", "work", "review", "done"]
        svg = client.get(f"/pipelines/{run_id}/graph")
        assert svg.headers["content-type"].startswith("image/svg+xml")
        assert 'id="node&#45;review" class="node state&#45;success"' in svg.text


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)  # the tool has not written it yet
    raise AssertionError(f"{path} never appeared")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)  # the group is being killed
    return False


def test_cancel_stops_the_run_and_its_processes_and_resume_finishes_it(
    server: Server, root: Path
) -> None:
    (root / "slow.dot").write_text(SLOW_TOOL)
    run_id = _start(server, {"path": "slow.dot"})
    pid = int(_wait_for(root / "tool.pid"))
    with server.client() as client:
        with client.stream("GET", f"/pipelines/{run_id}/events") as response:
            events = sse_events(response)
            read_until(events, "stage_started", "wait")
            cancelled = client.post(f"/pipelines/{run_id}/cancel", json={})
            assert cancelled.status_code == 202
            read_until(events, "pipeline_interrupted")
        assert _gone(pid), f"tool process {pid} outlived the cancelled run"
        status = client.get(f"/pipelines/{run_id}").json()
        assert (status["status"], status["active"]) == ("interrupted", False)
        assert status["nodes"]["wait"]["state"] == "stopped"
        again = client.post(f"/pipelines/{run_id}/cancel", json={})
        assert again.status_code == 409 and "not running in this server" in again.text

        (root / "go").touch()
        resumed = client.post(f"/pipelines/{run_id}/resume", json={})
        assert resumed.json()["id"] == run_id
        with client.stream(
            "GET", f"/pipelines/{run_id}/events", headers={"Last-Event-ID": "0"}
        ) as response:
            read_until(sse_events(response), "pipeline_completed")
        assert client.get(f"/pipelines/{run_id}").json()["status"] == "success"


def test_posted_dot_source_runs_and_runs_from_the_cli_are_listed(
    server: Server, root: Path
) -> None:
    (root / "go").touch()
    cli = subprocess.run(
        [sys.executable, "-m", "attractor", "run", "gate.dot", "--auto-approve", "--quiet"],
        cwd=root, capture_output=True, text=True, timeout=60,
        input="", env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    source = (root / "gate.dot").read_text()
    posted = _start(server, {"dot_source": source.replace("digraph gate", "digraph posted")})
    with server.client() as client:
        runs = client.get("/pipelines").json()["runs"]
        names = [r["name"] for r in runs]
        assert names[0] == "posted" and "gate" in names  # newest first
        assert posted == runs[0]["id"]
        with client.stream("GET", f"/pipelines/{posted}/events") as response:
            read_until(sse_events(response), "interview_started")
    # Ctrl-C with a run waiting at its gate: the run is saved, nothing crashes.
    stderr = server.stop()
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr
    manifest = json.loads((root / ".attractor" / "runs" / posted / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"


def test_bad_requests_are_refused_with_what_to_do(
    server: Server, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.dot"
    outside.write_text((root / "gate.dot").read_text())
    (root / "link.dot").symlink_to(outside)
    with server.client() as client:
        for body in (
            {"path": "../outside.dot"},
            {"path": "link.dot"},
            {"path": "gate.dot", "settings": {"workdir": ".."}},
            {"path": "gate.dot", "settings": {"backend": "scripted:../replies.json"}},
        ):
            response = client.post("/pipelines", json=body)
            assert response.status_code == 403, body
            assert "outside the server root" in response.json()["error"]
        (root / "bad.dot").write_text("digraph bad { a -> b }")
        invalid = client.post("/pipelines", json={"path": "bad.dot"})
        assert invalid.status_code == 400
        assert {d["rule"] for d in invalid.json()["diagnostics"]} >= {"start_node"}
        assert client.post("/pipelines", json={"path": "nope.dot"}).status_code == 404
        assert client.post("/pipelines", json={}).status_code == 400
        unknown = client.post(
            "/pipelines", json={"path": "gate.dot", "settings": {"logs_dir": "/"}}
        )
        assert unknown.status_code == 400 and "unknown run setting" in unknown.text
        plain = client.post("/pipelines", content='{"path": "gate.dot"}')
        assert plain.status_code == 415 and "Content-Type: application/json" in plain.text
        assert client.get("/pipelines/nothing-here").status_code == 404
        assert client.get("/pipelines/..%2F..%2Fetc").status_code == 404
    assert not (tmp_path / ".attractor").exists()


def test_serve_refuses_a_taken_port_and_a_missing_root_in_one_line(tmp_path: Path) -> None:
    from tests.cli.runkit import invoke

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        busy = invoke(["serve", "--port", port, "--root", str(tmp_path)])
    assert busy.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in busy.stderr and "--port" in busy.stderr
    missing = invoke(["serve", "--root", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such directory" in missing.stderr
