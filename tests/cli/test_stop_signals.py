"""Finding a stop signal among the exceptions an error holds."""

from __future__ import annotations

import signal

from attractor.cli.stop_signals import StopSignal, found_in


def _cycle() -> tuple[BaseException, BaseException]:
    """Two errors, each the other's context (as a task group can leave them)."""
    first, second = ValueError("port out of range"), RuntimeError("while handling it")
    first.__context__, second.__context__ = second, first
    return first, second


def test_an_error_whose_context_leads_back_to_itself_holds_no_stop() -> None:
    first, _ = _cycle()
    assert found_in(first) is None


def test_a_stop_in_a_cycle_of_contexts_is_found() -> None:
    first, second = _cycle()
    stop = StopSignal(signal.SIGTERM)
    group = BaseExceptionGroup("tasks", [second, stop])
    first.__cause__ = group
    assert found_in(first) is stop
