"""Waiting for many Ray tasks at once: each waiter returns when its own task ends,
and a waiter that gives up (the first, which looks for all) hands the looking over."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel
import ray
from ray.cluster_utils import Cluster

from attractor.ray_exec.tasks import _finished


@ray.remote(num_cpus=0.1)
def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_each_waiter_returns_when_its_task_ends_even_when_the_first_gives_up(
    cluster: Cluster,
) -> None:
    ended: list[float] = []

    async def wait(seconds: float) -> None:
        await _finished(_sleep.remote(seconds))
        ended.append(seconds)

    async def main() -> None:
        first = anyio.CancelScope()

        async def gives_up() -> None:
            with first:  # the first waiter, the one that looks for all
                await _finished(_sleep.remote(60))
                ended.append(60)

        with anyio.fail_after(60):  # a wait nobody looks for would hang here
            await _all(first, gives_up)

    async def _all(first: anyio.CancelScope, gives_up: Callable[[], Awaitable[None]]) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(gives_up)
            await anyio.lowlevel.checkpoint()  # it waits first
            for seconds in (0.6, 0.2, 1.0):
                group.start_soon(wait, seconds)
            await anyio.lowlevel.checkpoint()  # they wait behind it
            first.cancel()

    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        anyio.run(main)
    finally:
        ray.shutdown()
    # Each returned once its task ended (in an order the workers' start decides);
    # the wait given up never did.
    assert sorted(ended) == [0.2, 0.6, 1.0]
