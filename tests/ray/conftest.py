"""One local Ray cluster per test module: a head without CPUs and two worker nodes.

Everything is offline and on this machine; each node is its own raylet process,
so removing one is a real worker loss.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(item.path).is_relative_to(here):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # The head runs no tasks (as in a real deployment), so every run and branch
    # lands on a worker node that a test may remove.
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False},
    )
    for _ in range(2):
        cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def run_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """``attractor ARGS`` as a real process, with no ATTRACTOR_* leaking in."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "attractor", *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
