"""A wide fan-out on a two-worker cluster: every branch once, spread over both workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from attractor.dot.parser import parse_dot
from attractor.engine.executor import RunJob
from attractor.errors import RunError
from attractor.ray_exec.events import Outbox, event_hub
from attractor.ray_exec.executor import _run_task, _RunSpec
from attractor.ray_exec.tasks import value_of
from attractor.settings import resolve_settings
from tests.ray.conftest import run_cli

BRANCHES = 20


def _fan_out(side: Path) -> str:
    branches = "\n".join(
        f'    b{i} [shape=parallelogram, tool_command="echo b{i} >> {side}", resources="cpu=1"]\n'
        f"    fan -> b{i} -> join"
        for i in range(BRANCHES)
    )
    return f"""digraph wide {{
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component, max_parallel={BRANCHES}]
    join [shape=tripleoctagon]
    after [shape=parallelogram, tool_command="echo after >> {side}"]
{branches}
    start -> fan
    join -> after -> done
}}
"""


def test_branches_run_once_each_spread_over_both_workers(cluster: Cluster, tmp_path: Path) -> None:
    side = tmp_path / "side.txt"
    (tmp_path / "wide.dot").write_text(_fan_out(side), encoding="utf-8")
    run_dir = tmp_path / "run"
    done = run_cli(
        ["run", "wide.dot", "--executor", "ray", "--logs-dir", str(run_dir), "--json"],
        tmp_path,
        env={"ATTRACTOR_RAY_ADDRESS": cluster.address},
    )
    assert done.returncode == 0, done.stderr
    # The run's events reach the driver's --json stream, branches' stages included.
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "pipeline_started" and kinds[-1] == "pipeline_completed", kinds[:3]
    started = {e["name"] for e in events if e["type"] == "stage_started"}
    assert {f"b{i}" for i in range(BRANCHES)} <= started
    lines = side.read_text(encoding="utf-8").split()
    assert sorted(lines) == sorted([f"b{i}" for i in range(BRANCHES)] + ["after"])
    nodes = {
        json.loads((run_dir / f"b{i}" / "worker.json").read_text())["node_id"]
        for i in range(BRANCHES)
    }
    assert len(nodes) == 2
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["node"] for r in results if r["node"].startswith("b")) == sorted(
        f"b{i}" for i in range(BRANCHES)
    )


def test_a_failing_remote_run_reports_one_line_not_a_traceback(
    cluster: Cluster, tmp_path: Path
) -> None:
    # A worker that cannot see the run directory: the driver's probe is gone
    # by the time the task looks for it (as on a worker without the mount).
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        graph = parse_dot(
            "digraph g { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }"
        )
        job = RunJob("run", tmp_path / "g.dot", graph)
        settings = resolve_settings({}, env={}, cwd=tmp_path)
        outbox = Outbox(event_hub(), "token")
        spec = _RunSpec(job, tmp_path / "elsewhere", "token", settings, {}, outbox)
        with pytest.raises(RunError) as caught:
            value_of(_run_task.remote(spec))
    finally:
        ray.shutdown()
    message = str(caught.value)
    assert "cannot see the run directory" in message and "elsewhere" in message
    assert "Traceback" not in message and "\n" not in message
