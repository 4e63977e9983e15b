"""Removing the worker node that runs a pipeline: the run continues on the other one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ray.cluster_utils import Cluster

from tests.ray.conftest import clean_env, survivors, wait_until


def _pipeline(side: Path, flag: Path) -> str:
    # `slow` blocks on its first run only (until the test removes its worker).
    slow = f"echo slow >> {side}; if [ ! -e {flag} ]; then touch {flag}; sleep 119.5; fi"
    return f"""digraph loss {{
    start [shape=Mdiamond]
    done [shape=Msquare]
    first [shape=parallelogram, tool_command="echo first >> {side}"]
    slow [shape=parallelogram, tool_command="{slow}"]
    last [shape=parallelogram, tool_command="echo last >> {side}"]
    start -> first -> slow -> last -> done
}}
"""


def test_run_continues_on_another_worker_after_its_worker_dies(
    cluster: Cluster, tmp_path: Path
) -> None:
    side, flag = tmp_path / "side.txt", tmp_path / "slow-started"
    (tmp_path / "loss.dot").write_text(_pipeline(side, flag), encoding="utf-8")
    run_dir = tmp_path / "run"
    args = ["run", "loss.dot", "--executor", "ray", "--logs-dir", str(run_dir), "-q"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "attractor", *args],
        cwd=tmp_path,
        env=clean_env({"ATTRACTOR_RAY_ADDRESS": cluster.address}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(flag.exists, proc)
        running_on = json.loads((run_dir / "worker.json").read_text())["node_id"]
        victim = next(n for n in cluster.worker_nodes if n.node_id == running_on)
        cluster.remove_node(victim, allow_graceful=False)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.add_node(num_cpus=2)  # the next test gets two workers again
    assert proc.returncode == 0, err
    assert side.read_text(encoding="utf-8").split() == ["first", "slow", "slow", "last"]
    wait_until(lambda: not survivors("sleep 119.5"))
    moved_to = json.loads((run_dir / "worker.json").read_text())["node_id"]
    assert moved_to != running_on


def test_a_branch_whose_worker_dies_runs_again_elsewhere(cluster: Cluster, tmp_path: Path) -> None:
    side, flag = tmp_path / "side.txt", tmp_path / "slow-started"
    slow = f"echo slow >> {side}; if [ ! -e {flag} ]; then touch {flag}; sleep 113.5; fi"
    (tmp_path / "fan.dot").write_text(
        f"""digraph fan {{
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
    quick [shape=parallelogram, tool_command="echo quick >> {side}"]
    slow [shape=parallelogram, tool_command="{slow}"]
    after [shape=parallelogram, tool_command="echo after >> {side}"]
    start -> fan
    fan -> quick -> join
    fan -> slow -> join
    join -> after -> done
}}
""",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    args = ["run", "fan.dot", "--executor", "ray", "--logs-dir", str(run_dir), "-q"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "attractor", *args],
        cwd=tmp_path,
        env=clean_env({"ATTRACTOR_RAY_ADDRESS": cluster.address}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: flag.exists() and (run_dir / "slow" / "worker.json").exists(), proc)
        running_on = json.loads((run_dir / "slow" / "worker.json").read_text())["node_id"]
        victim = next(n for n in cluster.worker_nodes if n.node_id == running_on)
        cluster.remove_node(victim, allow_graceful=False)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.add_node(num_cpus=2)
    assert proc.returncode == 0, err
    # The branch ran again from its start; nothing else ran twice.
    assert sorted(side.read_text(encoding="utf-8").split()) == ["after", "quick", "slow", "slow"]
    wait_until(lambda: not survivors("sleep 113.5"))
