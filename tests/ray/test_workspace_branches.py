"""Branches on the cluster get their workspace as a git bundle and bring their commits back."""

from __future__ import annotations

import json
from pathlib import Path

from ray.cluster_utils import Cluster

from tests.ray.conftest import run_cli
from tests.workspace.gitkit import git, make_repo

FAN = """digraph fan {
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
    left [shape=parallelogram, tool_command="cat base.txt > left.txt"]
    right [shape=parallelogram, tool_command="echo right > right.txt"]
    start -> fan
    fan -> left -> join
    fan -> right -> join
    join -> done
}
"""


def test_ray_branches_merge_at_the_fan_in_across_machines(cluster: Cluster, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"base.txt": "from the fan-out\n"})
    (tmp_path / "p.dot").write_text(FAN, encoding="utf-8")
    run_dir = tmp_path / "run"
    args = ["run", "p.dot", "--logs-dir", str(run_dir), "--workdir", str(repo)]
    args += ["--workspace", "worktree"]
    done = run_cli(
        [*args, "--executor", "ray"], tmp_path, {"ATTRACTOR_RAY_ADDRESS": cluster.address}
    )

    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((run_dir / "manifest.json").read_text())["workspace"]
    work_tree = Path(record["work_tree"])
    assert (work_tree / "left.txt").read_text() == "from the fan-out\n"
    assert (work_tree / "right.txt").read_text() == "right\n"
    # The branches' commits came back through the run directory's bundles.
    assert sorted(p.name for p in (run_dir / "bundles").iterdir()) == [
        "left.in.bundle", "left.out.bundle", "right.in.bundle", "right.out.bundle",
    ]  # fmt: skip
    refs = git(repo, "for-each-ref", "--format=%(refname)", f"refs/attractor/{run_dir.name}/")
    assert f"refs/attractor/{run_dir.name}/remote/left" in refs.split()
    status = json.loads((run_dir / "join" / "status.json").read_text())
    assert sorted(status["merged"]) == ["left", "right"]
