"""The model requests left for a whole run, shared by every agent in it."""

from __future__ import annotations


class RunTurnBudget:
    """Model requests left for the whole run (``--max-total-turns``).

    Shared by every agent of the run, across nodes, loops and parallel branches.
    All agents run on one event loop, so :meth:`take` needs no lock.

    Agents that may still need their final turn are counted in :attr:`active`
    (:meth:`register` / :meth:`unregister`), so that parallel agents can keep one
    request each in reserve for it.
    """

    def __init__(self, limit: int | None, used: int = 0) -> None:
        self.limit = limit
        self.used = used
        #: Set once an agent was cut short because the run budget ran out.
        self.exhausted = False
        #: Agents running now that have not yet taken their final request.
        self.active = 0

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)

    def take(self) -> bool:
        """Reserve one model request; False when the run budget is used up."""
        if self.limit is not None and self.used >= self.limit:
            return False
        self.used += 1
        return True

    def register(self) -> None:
        """Count one more running agent that may still need a final request."""
        self.active += 1

    def unregister(self) -> None:
        """The agent has taken its final request, or ended."""
        self.active = max(0, self.active - 1)
