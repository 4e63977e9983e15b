"""The budgets of a whole run (requests, tokens, dollars), shared by every agent in it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from attractor.llm.types import Usage

BudgetKind = Literal["turns", "tokens", "cost"]

#: The setting behind each kind, for messages naming where a limit came from.
SETTING_OF: dict[BudgetKind, str] = {
    "turns": "max_total_turns",
    "tokens": "max_total_tokens",
    "cost": "max_cost",
}


def dollars(amount: float, scale: float | None = None) -> str:
    """``$2.50``; below a dollar (of ``scale``, else of ``amount``) four decimals: ``$0.0042``."""
    return f"${amount:,.2f}" if (amount if scale is None else scale) >= 1 else f"${amount:,.4f}"


_WORD: dict[BudgetKind, str] = {"turns": "turn", "tokens": "token", "cost": "cost"}


class RunTurnBudget:
    """What the whole run may still spend: ``--max-total-turns``, ``--max-total-tokens``
    and ``--max-cost``.

    Shared by every agent of the run, across nodes, loops and parallel branches.
    All agents run on one event loop, so :meth:`take` and :meth:`spend` need no lock.

    Requests are counted before they are made, so the turn limit is never exceeded.
    Tokens and cost are only known once an answer is in: when either limit is
    reached, agents already running make one final tool-free request each (which
    may go a little over) and no agent starts another.

    Agents that may still need their final turn are counted in :attr:`active`
    (:meth:`register` / :meth:`unregister`), so that parallel agents can keep one
    request each in reserve for it.
    """

    def __init__(
        self,
        limit: int | None,
        used: int = 0,
        *,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        spent: Usage | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        self.limit = limit
        self.used = used
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        #: Tokens and cost of every request of the run so far.
        self.spent = spent or Usage()
        #: Where each limit came from, by setting name (``max_cost``: ``--max-cost``).
        self.sources = dict(sources or {})
        #: Set once an agent was cut short because a run budget ran out.
        self.exhausted = False
        #: Which budget ran out first.
        self.exhausted_by: BudgetKind | None = None
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

    def reserve(self) -> tuple[bool, bool]:
        """Take one model request for an agent that is counted in :attr:`active`.

        Returns ``(granted, last)``. The request is refused when what is left is
        already kept for the final requests of the other running agents; ``last``
        says that it is this agent's final one (no more than that reserve is left).
        One call decides both, so agents in other processes sharing one budget
        (``ray_exec/budget.py``) cannot both take the last request.
        """
        remaining = self.remaining
        if remaining is None:
            return self.take(), False
        if remaining < self.active or not self.take():
            return False, False
        return True, remaining <= self.active

    def spend(self, usage: Usage) -> None:
        """Count the tokens and cost of one answer."""
        self.spent += usage

    def overspent(self) -> BudgetKind | None:
        """The token or cost budget once it is used up, else None."""
        if self.max_tokens is not None and self.spent.total_tokens >= self.max_tokens:
            return "tokens"
        if self.max_cost is not None and (self.spent.cost or 0.0) >= self.max_cost:
            return "cost"
        return None

    def mark_exhausted(self, kind: BudgetKind) -> None:
        """Record that ``kind`` ran out (the first one to do so is kept)."""
        self.exhausted = True
        self.exhausted_by = self.exhausted_by or kind

    def register(self) -> bool:
        """Count one more running agent and keep its final request in reserve.

        False when what is left is already kept for the agents running now: the
        new agent makes no request, so an agent that started earlier is never
        refused the final request it was promised.
        """
        remaining = self.remaining
        if remaining is not None and remaining <= self.active:
            return False
        self.active += 1
        return True

    def unregister(self) -> None:
        """The agent has taken its final request, or ended."""
        self.active = max(0, self.active - 1)

    def label(self, kind: BudgetKind | None = None) -> str:
        """``run's cost budget``: the budget that ran out (or ``kind``)."""
        return f"run's {_WORD[kind or self.exhausted_by or 'turns']} budget"

    def name(self, kind: BudgetKind | None = None) -> str:
        """``run's cost budget (--max-cost)``: which budget, and where it was set."""
        kind = kind or self.exhausted_by or "turns"
        return f"{self.label(kind)} ({self.source(kind)})"

    def source(self, kind: BudgetKind) -> str:
        setting = SETTING_OF[kind]
        return self.sources.get(setting, "--" + setting.replace("_", "-"))

    def reason(self) -> str:
        """Why the run stops: the budget that ran out, how much was used, its source."""
        kind = self.exhausted_by or "turns"
        if kind == "tokens":
            used = f"{self.spent.total_tokens:,} of {self.max_tokens:,} tokens"
        elif kind == "cost":
            limit = self.max_cost or 0.0
            used = f"{dollars(self.spent.cost or 0.0, limit)} of {dollars(limit)}"
        else:
            used = f"{self.used} of {self.limit} model requests"
        return f"run {_WORD[kind]} budget exhausted: {used} ({self.source(kind)})"
