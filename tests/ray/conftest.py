"""One local Ray cluster for the Ray tests: a head without CPUs and two worker nodes.

Everything is offline and on this machine, on 127.0.0.1 only (every Ray process
listens there and nothing talks to the machine's other addresses); each node is
its own raylet process, so removing one is a real worker loss.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster

from attractor.ray_exec.connect import keep_on_loopback


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(item.path).is_relative_to(here):
            item.add_marker(pytest.mark.ray)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="package")
def cluster() -> Iterator[Cluster]:
    # Every node's address is 127.0.0.1, in this process and in the CLI and
    # server processes the tests start (they inherit the environment).
    keep_on_loopback()
    # The head runs no tasks (as in a real deployment), so every run and branch
    # lands on a worker node that a test may remove.
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "include_dashboard": False,
            # A removed node is noticed in about a second instead of half a minute.
            "_system_config": {
                "health_check_initial_delay_ms": 0,
                "health_check_period_ms": 500,
                "health_check_failure_threshold": 2,
            },
        },
    )
    for _ in range(2):
        cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def survivors(command: str) -> list[str]:
    """Processes on this machine (every node of the cluster) whose command line is ``command``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or it ended meanwhile
            continue
        if b" ".join(a for a in argv if a).decode(errors="replace") == command:
            found.append(entry.name)
    return found


def wait_until(
    condition: Callable[[], bool],
    proc: subprocess.Popen[str] | None = None,
    limit: float = 60,
) -> None:
    """Poll ``condition`` until it holds; fail if ``proc`` ends first or time runs out."""
    deadline = time.monotonic() + limit
    while not condition():
        if proc is not None:
            assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.1)


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without ATTRACTOR_* settings, plus ``extra``.

    Runs keep no workspace unless a test asks for one (``--workspace``): these
    tests watch what branches do in the workdir, where a branch with a workspace
    does not write (it has a repository of its own; see test_workspace_branches.py).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
    env["ATTRACTOR_WORKSPACE"] = "none"
    env.update(extra or {})
    return env


def run_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """``attractor ARGS`` as a real process, with no ATTRACTOR_* leaking in."""
    return subprocess.run(
        [sys.executable, "-m", "attractor", *args],
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def spawn_cli(
    args: list[str], cwd: Path, cluster: Cluster, stdin: int | None = None
) -> subprocess.Popen[str]:
    """``attractor ARGS --executor ray`` on ``cluster``, running in the background."""
    return subprocess.Popen(
        [sys.executable, "-m", "attractor", *args, "--executor", "ray"],
        cwd=cwd,
        env=clean_env({"ATTRACTOR_RAY_ADDRESS": cluster.address}),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


#: A gate inside one branch of a fan-out; each route notes itself in side.txt.
GATED = """digraph gated {
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
    ask [shape=hexagon, label="Ship it?"]
    ship [shape=parallelogram, tool_command="echo ship >> side.txt"]
    hold [shape=parallelogram, tool_command="echo hold >> side.txt"]
    other [shape=parallelogram, tool_command="echo other >> side.txt"]
    start -> fan
    fan -> ask
    ask -> ship [label="[S] Ship"]
    ask -> hold [label="[H] Hold"]
    ship -> join
    hold -> join
    fan -> other -> join
    join -> done
}
"""
