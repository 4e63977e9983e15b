"""`attractor serve --executor ray`: runs go to the cluster; the list says where each runs."""

from __future__ import annotations

from pathlib import Path

from ray.cluster_utils import Cluster

from tests.ray.conftest import GATED, survivors, wait_until
from tests.server.serverkit import read_until, sse_events, start_server

FAN = """digraph fan {
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
    a [shape=parallelogram, tool_command="echo a >> side.txt"]
    b [shape=parallelogram, tool_command="echo b >> side.txt"]
    start -> fan
    fan -> a -> join
    fan -> b -> join
    join -> done
}
"""

SLOW = """digraph slow {
    start [shape=Mdiamond]
    done [shape=Msquare]
    wait [shape=parallelogram, tool_command="sleep 47.25"]
    start -> wait -> done
}
"""


def test_runs_go_to_the_cluster_and_cancel_reaches_them(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    # Both branches append to side.txt: with a workspace the fan-in merge would
    # report that as a conflict (see tests/workspace); these tests are about the server.
    (root / "attractor.toml").write_text('workspace = "none"\n')
    (root / "fan.dot").write_text(FAN)
    (root / "slow.dot").write_text(SLOW)
    server = start_server(root, ["--executor", "ray", "--ray-address", cluster.address])
    try:
        with server.client() as client:
            run_id = client.post("/pipelines", json={"path": "fan.dot"}).json()["id"]
            with client.stream("GET", f"/pipelines/{run_id}/events") as response:
                read_until(sse_events(response), "pipeline_completed")
            assert sorted((root / "side.txt").read_text().split()) == ["a", "b"]
            (listed,) = [r for r in client.get("/pipelines").json()["runs"] if r["id"] == run_id]
            node_ids = {n.node_id for n in cluster.worker_nodes}
            assert listed["status"] == "success" and listed["worker"]["node_id"] in node_ids

            slow = client.post("/pipelines", json={"path": "slow.dot"}).json()["id"]
            with client.stream("GET", f"/pipelines/{slow}/events") as response:
                events = sse_events(response)
                read_until(events, "stage_started", "wait")
                wait_until(lambda: bool(survivors("sleep 47.25")))
                assert client.post(f"/pipelines/{slow}/cancel", json={}).status_code == 202
                read_until(events, "pipeline_interrupted")
            wait_until(lambda: not survivors("sleep 47.25"))
            assert client.get(f"/pipelines/{slow}").json()["status"] == "interrupted"
    finally:
        server.stop()


def test_a_gate_of_a_branch_on_the_cluster_is_answered_through_the_api(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    # Both branches append to side.txt: with a workspace the fan-in merge would
    # report that as a conflict (see tests/workspace); these tests are about the server.
    (root / "attractor.toml").write_text('workspace = "none"\n')
    (root / "gated.dot").write_text(GATED)
    server = start_server(root, ["--executor", "ray", "--ray-address", cluster.address])
    try:
        with server.client() as client:
            run_id = client.post("/pipelines", json={"path": "gated.dot"}).json()["id"]
            with client.stream("GET", f"/pipelines/{run_id}/events") as response:
                events = sse_events(response)
                read_until(events, "interview_started")
                questions = client.get(f"/pipelines/{run_id}/questions").json()["questions"]
                assert [(q["stage"], q["text"]) for q in questions] == [("ask", "Ship it?")]
                answer = {"answer": "hold", "comment": "not this week"}
                url = f"/pipelines/{run_id}/questions/{questions[0]['id']}/answer"
                assert client.post(url, json=answer).json()["answer"] == "H"
                read_until(events, "pipeline_completed")
            assert sorted((root / "side.txt").read_text().split()) == ["hold", "other"]
    finally:
        server.stop()
