"""What a run spent, through the API: equal to what its manifest and results.jsonl say."""

from __future__ import annotations

import json
from pathlib import Path

from tests.server.serverkit import Server, write_spending_run


def _finished(server: Server, run_id: str) -> dict[str, object]:
    with server.client() as client, client.stream("GET", f"/pipelines/{run_id}/events") as stream:
        for _ in stream.iter_lines():  # the stream ends with the run
            pass
        data: dict[str, object] = client.get(f"/pipelines/{run_id}").json()
    return data


def test_the_api_carries_the_manifests_tokens_and_cost_per_run_and_node(
    server: Server, root: Path
) -> None:
    write_spending_run(root)
    with server.client() as client:
        started = client.post(
            "/pipelines",
            json={
                "path": "spends.dot",
                "settings": {
                    "backend": "scripted:model.json",
                    "max_cost": "$5",
                    "max_total_tokens": "100000",
                    "timeout": "10m",
                },
            },
        )
    run_id = started.json()["id"]
    status = _finished(server, run_id)
    run_dir = root / ".attractor" / "runs" / run_id
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["usage"]["cost"] > 0
    assert status["usage"] == manifest["usage"]
    with server.client() as client:
        listed = client.get("/pipelines").json()["runs"]
        plan = client.get(f"/pipelines/{run_id}/nodes/plan").json()
    assert [r["usage"] for r in listed if r["id"] == run_id] == [manifest["usage"]]
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    nodes = status["nodes"]
    assert isinstance(nodes, dict)
    for row in rows:
        if row["usage"]:
            assert nodes[row["node"]]["usage"] == row["usage"]
    assert nodes["start"]["usage"] is None
    spent = [n["usage"] for n in nodes.values() if n["usage"]]
    for key in ("input_tokens", "output_tokens", "cache_read_tokens"):
        assert sum(u[key] for u in spent) == manifest["usage"][key]
    assert abs(sum(u["cost"] for u in spent) - manifest["usage"]["cost"]) < 1e-9
    branches = {b["branch"]: b["usage"] for b in status["branches"]}  # type: ignore[attr-defined]
    assert branches == {"left": nodes["left"]["usage"], "right": nodes["right"]["usage"]}
    assert plan["usage"] == nodes["plan"]["usage"]
    budgets = {b["name"]: (b["used"], b["limit"]) for b in status["budgets"]}  # type: ignore[attr-defined]
    usage = manifest["usage"]
    assert budgets["cost"] == (usage["cost"], 5.0)
    assert budgets["tokens"] == (usage["input_tokens"] + usage["output_tokens"], 100000)
    assert budgets["turns"] == (4, None)  # no turn budget given
    assert budgets["time"] == (manifest["duration"], 600.0)
    assert [(r["turn"], r["input_tokens"]) for r in plan["requests"]] == [(1, 1000), (2, 1500)]


def test_each_requests_cost_and_cached_tokens_add_up_to_the_nodes_and_the_runs(
    server: Server, root: Path
) -> None:
    write_spending_run(root)
    with server.client() as client:
        settings = {"backend": "scripted:model.json"}
        started = client.post("/pipelines", json={"path": "spends.dot", "settings": settings})
    run_id = started.json()["id"]
    status = _finished(server, run_id)
    manifest = json.loads((root / ".attractor" / "runs" / run_id / "manifest.json").read_text())
    nodes = status["nodes"]
    assert isinstance(nodes, dict)
    total = 0.0
    with server.client() as client:
        for node in ("plan", "left", "right"):
            detail = client.get(f"/pipelines/{run_id}/nodes/{node}").json()
            asked = detail["requests"]
            assert asked and all(r["cost"] > 0 for r in asked)
            assert abs(sum(r["cost"] for r in asked) - nodes[node]["usage"]["cost"]) < 1e-9
            for key in ("cache_read_tokens", "cache_write_tokens", "input_tokens"):
                assert sum(r[key] for r in asked) == nodes[node]["usage"][key]
            total += sum(r["cost"] for r in asked)
        plan = client.get(f"/pipelines/{run_id}/nodes/plan").json()["requests"]
    # 1000 in, 600 of them cached: 400 at $100/M, 600 at $10/M, 100 out at $1000/M.
    assert plan[0]["cache_read_tokens"] == 600
    assert abs(plan[0]["cost"] - (400 * 100 + 600 * 10 + 100 * 1000) / 1e6) < 1e-12
    assert abs(total - manifest["usage"]["cost"]) < 1e-9
