"""Running the tool calls of one reply: read-only neighbours together, the rest in order.

A reply's calls are cut into batches: a run of consecutive calls that may
overlap (read-only tools) is one batch, every other call a batch of its own.
The calls of a batch run at the same time in one task group; batches run one
after another, so a write or a shell command never overtakes or overlaps a call
before it. Results are handed on in the order the model asked for them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

from attractor.llm.types import ToolCall

T = TypeVar("T")


def batches(
    calls: Sequence[ToolCall], overlaps: Callable[[ToolCall], bool]
) -> list[list[ToolCall]]:
    """``calls`` cut into batches; only calls that may overlap share one."""
    cut: list[list[ToolCall]] = []
    for call in calls:
        if overlaps(call) and cut and overlaps(cut[-1][0]):
            cut[-1].append(call)
        else:
            cut.append([call])
    return cut


async def _all(batch: list[ToolCall], execute: Callable[[ToolCall], Awaitable[T]]) -> list[T]:
    if len(batch) == 1:
        return [await execute(batch[0])]
    results: dict[int, T] = {}

    async def one(index: int, call: ToolCall) -> None:
        results[index] = await execute(call)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(batch):
            group.start_soon(one, index, call)
    return [results[index] for index in range(len(batch))]


async def run_calls(
    calls: Sequence[ToolCall],
    *,
    overlaps: Callable[[ToolCall], bool],
    execute: Callable[[ToolCall], Awaitable[T]],
    done: Callable[[ToolCall, T], None],
) -> None:
    """Run every call; ``done(call, result)`` in the model's order after each batch."""
    for batch in batches(calls, overlaps):
        for call, result in zip(batch, await _all(batch, execute), strict=True):
            done(call, result)
