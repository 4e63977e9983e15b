"""Loop detection over tool-call signatures."""

from __future__ import annotations

from typing import Any

import pytest

from attractor.agent.loop_detect import LoopDetector, LoopFound
from attractor.llm.types import ToolCall


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall("id", name, arguments)


def _feed(detector: LoopDetector, calls: list[ToolCall]) -> list[LoopFound | None]:
    return [detector.observe(c) for c in calls]


def test_same_call_repeated_over_the_window() -> None:
    found = _feed(LoopDetector(4), [_call("read_file", path="a")] * 4)
    assert found == [None, None, None, LoopFound(1, 4)]


@pytest.mark.parametrize("length", [2, 3])
def test_cycles_of_two_and_three(length: int) -> None:
    cycle = [_call("read_file", path=str(n)) for n in range(length)]
    found = _feed(LoopDetector(6), cycle * 3)
    assert found[5] == LoopFound(length, 6 // length)


def test_different_arguments_are_not_a_loop() -> None:
    calls = [_call("read_file", path=str(n)) for n in range(12)]
    assert _feed(LoopDetector(6), calls) == [None] * 12


def test_a_cycle_of_four_is_not_reported() -> None:
    cycle = [_call("t", n=n) for n in range(4)]
    assert _feed(LoopDetector(8), cycle * 2) == [None] * 8


def test_after_a_warning_the_model_gets_a_full_window_again() -> None:
    detector = LoopDetector(3)
    found = _feed(detector, [_call("x")] * 6)
    assert [f is not None for f in found] == [False, False, True, False, False, True]
