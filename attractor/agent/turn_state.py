"""Where an agent session stands between its requests: one object, not loose flags."""

from __future__ import annotations

from attractor.agent.tools.base import ToolResult
from attractor.valueclass import frozen, mutable


@mutable
class TurnState:
    """What the session's next request depends on, besides the conversation."""

    #: The node's turn limit forced the final turn.
    turn_limit_reached: bool = False
    #: The run-wide budget forced the final turn (or allowed no request).
    run_budget_exhausted: bool = False
    #: Counted in the run budget's running agents: its final request is kept in reserve.
    registered: bool = False
    #: Work requests since the last reflection (``sprint_limit`` of them ask for one).
    work_since_reflection: int = 0
    #: The last request was a reflection: the next work turn is told to go on.
    after_reflection: bool = False
    #: The note that the turn budget is running low was given.
    noticed: bool = False


@frozen
class CallOutcome:
    """One tool call answered: its result, and how long the tool ran.

    ``duration`` is None for the outcome report, which is answered, not run.
    """

    result: ToolResult
    duration: float | None = None
