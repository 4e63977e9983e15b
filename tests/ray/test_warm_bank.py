"""The budget bank of a parallel node is kept warm for the next one, and reset.

A new bank is a new actor, so a new worker process: over half a second on a
small machine, paid by every parallel node. A driver keeps the banks of ended
parallel nodes and hands the next one a kept bank holding its own budget.
"""

from __future__ import annotations

import gc

import ray
from ray.cluster_utils import Cluster

from attractor.agent.run_budget import RunLimits, RunTurnBudget
from attractor.ray_exec.budget import open_bank


class _Owner:
    """Stands for a parallel node's branch runner, which owns its bank while it runs."""


def test_a_parallel_nodes_bank_is_reused_by_the_next_with_the_next_ones_budget(
    cluster: Cluster,
) -> None:
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        node = ray.get_runtime_context().get_node_id()
        first_budget = RunTurnBudget(RunLimits(turns=10))
        first_budget.used = 7
        owner = _Owner()
        first = open_bank(first_budget, node, owner)
        assert ray.get(first.state.remote()).used == 7
        del owner
        gc.collect()
        second_budget = RunTurnBudget(RunLimits(turns=3))
        second = open_bank(second_budget, node, _Owner())
        assert second._actor_id == first._actor_id  # the same actor, kept warm
        state = ray.get(second.state.remote())
        assert state.used == 0  # the second node's budget, not the first's
        granted, _ = ray.get(second.take.remote())
        assert granted
    finally:
        ray.shutdown()
