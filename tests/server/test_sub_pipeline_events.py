"""A sub-pipeline's steps through ``attractor serve``: its events come on the parent's
stream as ``child_event``, and the run's nodes stay the parent's."""

from __future__ import annotations

import json
from pathlib import Path

from tests.server.serverkit import Server

PARENT = """digraph parent {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    inline [shape=folder, dot_file="child.dot"]
    start -> inline -> done
}
"""
CHILD = """digraph child {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    hello [shape=parallelogram, tool_command="echo hello from the child"]
    start -> hello -> done
}
"""


def test_the_childs_steps_stream_with_the_parents_events(server: Server, root: Path) -> None:
    (root / "parent.dot").write_text(PARENT)
    (root / "child.dot").write_text(CHILD)
    with server.client() as client:
        started = client.post("/pipelines", json={"path": "parent.dot"})
        assert started.status_code == 201, started.text
        run_id = started.json()["id"]
        data: list[dict[str, object]] = []
        with client.stream("GET", f"/pipelines/{run_id}/events") as stream:
            for line in stream.iter_lines():  # the stream ends with the run
                if line.startswith("data: "):
                    data.append(json.loads(line[len("data: ") :]))
        status = client.get(f"/pipelines/{run_id}").json()
    assert status["status"] == "success"
    assert set(status["nodes"]) == {"start", "inline", "done"}
    child = [e for e in data if e["type"] == "child_event"]
    assert all(e["node"] == "inline" and e["child_dir"] == "inline/child" for e in child)
    inner = [e["event"] for e in child]
    assert [e["name"] for e in inner if e["type"] == "stage_completed"] == [
        "start",
        "hello",
        "done",
    ]
    output = [e["text"] for e in inner if e["type"] == "stage_output"]
    assert output == ["hello from the child\n"]
