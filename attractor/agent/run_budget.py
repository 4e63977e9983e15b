"""The budgets of a whole run (requests, tokens, dollars), shared by every agent in it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Literal

from attractor.llm.types import Usage
from attractor.valueclass import frozen

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


@frozen(kw_only=True)
class RunLimits:
    """What the whole run may spend: ``--max-total-turns``, ``--max-total-tokens`` and
    ``--max-cost`` (None: no limit), and where each limit was set."""

    turns: int | None = None
    tokens: int | None = None
    cost: float | None = None
    #: Where each limit came from, by setting name (``max_cost``: ``--max-cost``).
    sources: Mapping[str, str] = field(default_factory=dict)

    def overspent(self, spent: Usage) -> BudgetKind | None:
        """The token or cost limit that ``spent`` reaches, else None."""
        if self.tokens is not None and spent.total_tokens >= self.tokens:
            return "tokens"
        if self.cost is not None and (spent.cost or 0.0) >= self.cost:
            return "cost"
        return None

    def source(self, kind: BudgetKind) -> str:
        """Where the limit of ``kind`` was set (the flag, when nothing says otherwise)."""
        setting = SETTING_OF[kind]
        return self.sources.get(setting, "--" + setting.replace("_", "-"))


class RunTurnBudget:
    """What the whole run has spent against its :class:`RunLimits`, and what it keeps
    in reserve.

    Shared by every agent of the run, across nodes, loops and parallel branches.
    All agents run on one event loop, so :meth:`take` and :meth:`spend` need no lock.

    Requests are counted before they are made, so the turn limit is never exceeded.
    Tokens and cost are only known once an answer is in: when either limit is
    reached, agents already running make one final tool-free request each (which
    may go a little over) and no agent starts another.

    Agents that may still need their final turn are counted in :attr:`active`
    (:meth:`register` / :meth:`unregister`), so that parallel agents can keep one
    request each in reserve for it. What a message says about the budget is
    :func:`budget_label`, :func:`budget_name` and :func:`exhausted_reason`.
    """

    def __init__(
        self, limits: RunLimits | None = None, used: int = 0, spent: Usage | None = None
    ) -> None:
        self.limits = limits or RunLimits()
        #: Model requests taken so far.
        self.used = used
        #: Tokens and cost of every request of the run so far.
        self.spent = spent or Usage()
        #: Set once an agent was cut short because a run budget ran out.
        self.exhausted = False
        #: Which budget ran out first.
        self.exhausted_by: BudgetKind | None = None
        #: Agents running now that have not yet taken their final request.
        self.active = 0

    @property
    def remaining(self) -> int | None:
        limit = self.limits.turns
        return None if limit is None else max(0, limit - self.used)

    def take(self) -> bool:
        """Reserve one model request; False when the run budget is used up."""
        if self.limits.turns is not None and self.used >= self.limits.turns:
            return False
        self.used += 1
        return True

    def reserve(self, final: bool = False) -> tuple[bool, bool]:
        """Take one model request for an agent that is counted in :attr:`active`.

        Returns ``(granted, last)``. The request is refused when what is left is
        already kept for the final requests of the other running agents; ``last``
        says that it is this agent's final one (no more than that reserve is left).
        ``final``: the agent asks for its final request whatever the budget says
        (its node's turn limit, a spent token or cost budget). A granted final
        request (``final`` or ``last``) takes the agent out of :attr:`active` in the
        same call: it needs no reserve any more. One call decides all of it, so
        agents in other processes sharing one budget (``ray_exec/budget.py``) can
        neither both take the last request nor be refused the final request kept
        for them while another agent, between two calls, still held its reserve.
        """
        remaining = self.remaining
        if remaining is None:
            granted, last = self.take(), False
        elif remaining < self.active or not self.take():
            return False, False
        else:
            granted, last = True, remaining <= self.active
        if granted and (final or last):
            self.unregister()
        return granted, last

    def spend(self, usage: Usage) -> None:
        """Count the tokens and cost of one answer."""
        self.spent += usage

    def overspent(self) -> BudgetKind | None:
        """The token or cost budget once it is used up, else None."""
        return self.limits.overspent(self.spent)

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


def budget_label(budget: RunTurnBudget, kind: BudgetKind | None = None) -> str:
    """``run's cost budget``: the budget that ran out (or ``kind``)."""
    return f"run's {_WORD[kind or budget.exhausted_by or 'turns']} budget"


def budget_name(budget: RunTurnBudget, kind: BudgetKind | None = None) -> str:
    """``run's cost budget (--max-cost)``: which budget, and where it was set."""
    kind = kind or budget.exhausted_by or "turns"
    return f"{budget_label(budget, kind)} ({budget.limits.source(kind)})"


def exhausted_reason(budget: RunTurnBudget) -> str:
    """Why the run stops: the budget that ran out, how much was used, its source."""
    limits = budget.limits
    kind = budget.exhausted_by or "turns"
    if kind == "tokens":
        used = f"{budget.spent.total_tokens:,} of {limits.tokens:,} tokens"
    elif kind == "cost":
        limit = limits.cost or 0.0
        used = f"{dollars(budget.spent.cost or 0.0, limit)} of {dollars(limit)}"
    else:
        used = f"{budget.used} of {limits.turns} model requests"
    return f"run {_WORD[kind]} budget exhausted: {used} ({limits.source(kind)})"
