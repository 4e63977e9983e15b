"""A Ray run's events reach the driver whole and in order: those a task sent in
batches while it ran, then those it held to its end and returned with its result."""

from __future__ import annotations

import json
from pathlib import Path

from ray.cluster_utils import Cluster

from tests.ray.conftest import run_cli

PIPELINE = """digraph order {
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
    quick [shape=parallelogram, tool_command="true", resources="cpu=1"]
    slow1 [shape=parallelogram, tool_command="sleep 0.6", resources="cpu=1"]
    slow2 [shape=parallelogram, tool_command="true", resources="cpu=1"]
    after [shape=parallelogram, tool_command="true"]
    start -> fan
    fan -> quick -> join
    fan -> slow1 -> slow2 -> join
    join -> after -> done
}
"""


def _key(event: dict[str, object]) -> tuple[object, ...]:
    return (event["type"], event.get("name"), event.get("node"), event.get("branch"))


def test_the_driver_sees_every_event_in_the_order_of_the_run(
    cluster: Cluster, tmp_path: Path
) -> None:
    (tmp_path / "order.dot").write_text(PIPELINE, encoding="utf-8")
    run_dir = tmp_path / "run"
    done = run_cli(
        ["run", "order.dot", "--executor", "ray", "--logs-dir", str(run_dir), "--json"],
        tmp_path,
        env={"ATTRACTOR_RAY_ADDRESS": cluster.address},
    )
    assert done.returncode == 0, done.stderr
    seen = [json.loads(line) for line in done.stdout.splitlines()]
    logged = [
        json.loads(line)
        for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    # The same events as the run's own log, in the same order, none twice.
    assert [_key(e) for e in seen] == [_key(e) for e in logged]
    keys = [_key(e) for e in seen]
    assert keys[0][0] == "pipeline_started" and keys[-1][0] == "pipeline_completed"
    for branch, nodes in (("quick", ["quick"]), ("slow1", ["slow1", "slow2"])):
        ended = keys.index(("parallel_branch_completed", None, "fan", branch))
        for node in nodes:
            began = keys.index(("stage_started", node, None, None))
            finished = keys.index(("stage_completed", node, None, None))
            assert began < finished < ended, keys
    assert keys.index(("stage_started", "after", None, None)) > max(
        i for i, k in enumerate(keys) if k[0] == "parallel_branch_completed"
    )
