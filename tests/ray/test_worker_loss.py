"""Removing the worker node that runs a pipeline: the run continues on the other one."""

from __future__ import annotations

import json
from pathlib import Path

from ray.cluster_utils import Cluster

from tests.ray.conftest import spawn_cli, survivors, wait_until


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
    proc = spawn_cli(["run", "loss.dot", "--logs-dir", str(run_dir), "-q"], tmp_path, cluster)
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


def _holding(side: Path, flag: Path, name: str, seconds: str) -> str:
    """A command that notes itself and, on its first run only, holds until killed."""
    return f"echo {name} >> {side}; if [ ! -e {flag} ]; then touch {flag}; sleep {seconds}; fi"


def _lose(cluster: Cluster, node_id: str) -> None:
    victim = next(n for n in cluster.worker_nodes if n.node_id == node_id)
    cluster.remove_node(victim, allow_graceful=False)


def test_a_branch_whose_worker_dies_continues_elsewhere(cluster: Cluster, tmp_path: Path) -> None:
    side, flag = tmp_path / "side.txt", tmp_path / "slow-started"
    (tmp_path / "fan.dot").write_text(
        f"""digraph fan {{
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
    quick [shape=parallelogram, tool_command="echo quick >> {side}"]
    first [shape=parallelogram, tool_command="echo first >> {side}"]
    slow [shape=parallelogram, tool_command="{_holding(side, flag, "slow", "113.5")}"]
    last [shape=parallelogram, tool_command="echo last >> {side}"]
    after [shape=parallelogram, tool_command="echo after >> {side}"]
    start -> fan
    fan -> quick -> join
    fan -> first -> slow -> last -> join
    join -> after -> done
}}
""",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    proc = spawn_cli(["run", "fan.dot", "--logs-dir", str(run_dir), "-q"], tmp_path, cluster)
    try:
        wait_until(lambda: flag.exists() and (run_dir / "first" / "worker.json").exists(), proc)
        running_on = json.loads((run_dir / "first" / "worker.json").read_text())["node_id"]
        _lose(cluster, running_on)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.add_node(num_cpus=2)
    assert proc.returncode == 0, err
    # The branch went on after its completed node: `first` ran once, `slow` again once.
    assert sorted(side.read_text(encoding="utf-8").split()) == [
        "after", "first", "last", "quick", "slow", "slow"
    ]  # fmt: skip
    wait_until(lambda: not survivors("sleep 113.5"))
    moved_to = json.loads((run_dir / "first" / "worker.json").read_text())["node_id"]
    assert moved_to != running_on


BRANCHES = 4


def test_the_run_continues_when_its_worker_dies_while_branches_run_elsewhere(
    cluster: Cluster, tmp_path: Path
) -> None:
    side = tmp_path / "side.txt"
    flags = [tmp_path / f"hold-{i}" for i in range(BRANCHES)]
    branches = "\n".join(
        f'    p{i} [shape=parallelogram, tool_command="echo p{i} >> {side}"]\n'
        f'    h{i} [shape=parallelogram, resources="cpu=0.5", '
        f'tool_command="{_holding(side, flags[i], f"h{i}", "109.25")}"]\n'
        f'    q{i} [shape=parallelogram, tool_command="echo q{i} >> {side}"]\n'
        f"    fan -> p{i} -> h{i} -> q{i} -> join"
        for i in range(BRANCHES)
    )
    (tmp_path / "wide.dot").write_text(
        f"""digraph wide {{
    start [shape=Mdiamond]
    done [shape=Msquare]
    before [shape=parallelogram, tool_command="echo before >> {side}"]
    fan [shape=component]
    join [shape=tripleoctagon]
    after [shape=parallelogram, tool_command="echo after >> {side}"]
{branches}
    start -> before -> fan
    join -> after -> done
}}
""",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    proc = spawn_cli(["run", "wide.dot", "--logs-dir", str(run_dir), "-q"], tmp_path, cluster)
    try:
        wait_until(lambda: all(f.exists() for f in flags), proc)
        run_node = json.loads((run_dir / "worker.json").read_text())["node_id"]
        branch_nodes = {
            json.loads((run_dir / f"p{i}" / "worker.json").read_text())["node_id"]
            for i in range(BRANCHES)
        }
        assert branch_nodes - {run_node}, "no branch runs away from the run's worker"
        _lose(cluster, run_node)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.add_node(num_cpus=2)
    assert proc.returncode == 0, err
    lines = side.read_text(encoding="utf-8").split()
    # Every completed node ran exactly once; each interrupted one ran again once.
    assert sorted(lines) == sorted(
        ["before", "after"]
        + [f"{kind}{i}" for i in range(BRANCHES) for kind in ("p", "q", "h", "h")]
    )
    wait_until(lambda: not survivors("sleep 109.25"))
    assert json.loads((run_dir / "worker.json").read_text())["node_id"] != run_node
