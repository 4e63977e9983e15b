"""--timeout and Ctrl-C reach the remote branches: exit codes as today, no process left."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster

from tests.ray.conftest import clean_env, run_cli, survivors, wait_until


def _sleepers(seconds: str, marker: Path) -> str:
    branches = "\n".join(
        f'    s{i} [shape=parallelogram, tool_command="touch {marker}{i}; sleep {seconds}"]\n'
        f"    fan -> s{i} -> join"
        for i in range(4)
    )
    return f"""digraph sleepers {{
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
{branches}
    start -> fan
    join -> done
}}
"""


@pytest.mark.parametrize("timeout", ["2s", "12s"])
def test_timeout_stops_remote_branches_and_exits_124(
    cluster: Cluster, tmp_path: Path, timeout: str
) -> None:
    (tmp_path / "p.dot").write_text(_sleepers("41.25", tmp_path / "m"), encoding="utf-8")
    run_dir = tmp_path / "run"
    done = run_cli(
        ["run", "p.dot", "--executor", "ray", "--timeout", timeout, "--logs-dir", str(run_dir)],
        tmp_path,
        env={"ATTRACTOR_RAY_ADDRESS": cluster.address},
    )
    assert done.returncode == 124, done.stderr
    if timeout == "12s":  # long enough for every branch task to start its command here
        assert list(tmp_path.glob("m*")), "no branch started its command before the timeout"
    assert f"attractor resume {run_dir}" in done.stderr
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "timed_out"
    wait_until(lambda: not survivors("sleep 41.25"))


def test_ctrl_c_stops_the_remote_run_and_exits_130(cluster: Cluster, tmp_path: Path) -> None:
    marker = tmp_path / "m"
    (tmp_path / "p.dot").write_text(_sleepers("43.75", marker), encoding="utf-8")
    run_dir = tmp_path / "run"
    args = ["run", "p.dot", "--executor", "ray", "--logs-dir", str(run_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "attractor", *args],
        cwd=tmp_path,
        env=clean_env({"ATTRACTOR_RAY_ADDRESS": cluster.address}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: all(Path(f"{marker}{i}").exists() for i in range(4)), proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert f"attractor resume {run_dir}" in err
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"
    wait_until(lambda: not survivors("sleep 43.75"))
