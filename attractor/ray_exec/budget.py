"""One run-wide budget for a run whose parallel branches run as Ray tasks.

A run's turn, token and cost budgets (``--max-total-turns``, ``--max-total-tokens``,
``--max-cost``) bound the whole run, its branches included. When a parallel node
sends its branches to the cluster, the run task puts its budget into a small
actor (:class:`_Bank`, no CPU) for as long as the branches run; each branch task
draws on it through a :class:`SharedBudget`, and every change goes through the
actor, so two branches never both take the last request. The run task copies the
bank's state back into its own budget as each branch ends. A branch's own
parallel nodes use the same bank.

Every request an agent makes costs a few round trips to the actor, a millisecond
or so each: small next to a model request.
"""

from __future__ import annotations

import weakref
from typing import Any

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from attractor.agent.run_budget import BudgetKind, RunLimits, RunTurnBudget
from attractor.llm.types import Usage
from attractor.valueclass import frozen


@frozen
class BudgetState:
    """The changing part of a run budget, as it travels between processes."""

    used: int
    spent: Usage
    exhausted: bool
    exhausted_by: BudgetKind | None
    active: int


def state_of(budget: RunTurnBudget) -> BudgetState:
    return BudgetState(
        budget.used, budget.spent, budget.exhausted, budget.exhausted_by, budget.active
    )


def adopt(budget: RunTurnBudget, state: BudgetState) -> None:
    """Make ``budget`` say what ``state`` says."""
    budget.used = state.used
    budget.spent = state.spent
    budget.exhausted = state.exhausted
    budget.exhausted_by = state.exhausted_by
    budget.active = state.active


def _budget(limits: RunLimits, state: BudgetState) -> RunTurnBudget:
    budget = RunTurnBudget(limits)
    adopt(budget, state)
    return budget


@ray.remote(num_cpus=0)
class _Bank:
    """The run budget itself, while branches on the cluster draw on it."""

    def __init__(self, limits: RunLimits, state: BudgetState) -> None:
        self.budget = _budget(limits, state)

    def reset(self, limits: RunLimits, state: BudgetState) -> None:
        """Hold another parallel node's budget (a bank kept warm, see :func:`open_bank`)."""
        self.budget = _budget(limits, state)

    def take(self) -> tuple[bool, BudgetState]:
        return self.budget.take(), state_of(self.budget)

    def reserve(self, final: bool) -> tuple[bool, bool, BudgetState]:
        granted, last = self.budget.reserve(final)
        return granted, last, state_of(self.budget)

    def spend(self, usage: Usage) -> BudgetState:
        self.budget.spend(usage)
        return state_of(self.budget)

    def mark_exhausted(self, kind: BudgetKind) -> BudgetState:
        self.budget.mark_exhausted(kind)
        return state_of(self.budget)

    def register(self) -> tuple[bool, BudgetState]:
        return self.budget.register(), state_of(self.budget)

    def unregister(self) -> BudgetState:
        self.budget.unregister()
        return state_of(self.budget)

    def state(self) -> BudgetState:
        return state_of(self.budget)


#: Banks whose parallel node has ended, by Ray job and cluster node, kept warm
#: for the next parallel node of this driver: a new actor is a new worker
#: process, over half a second on a small machine; a kept one is reset in one call.
_IDLE: dict[tuple[str, str], list[Any]] = {}
#: How many idle banks a driver keeps per cluster node (more end with their node).
KEEP_WARM = 4


def open_bank(budget: RunTurnBudget, node: str, owner: object) -> Any:
    """A bank holding ``budget`` as it is now (for the branches of one parallel node).

    It lives on ``node``, the driver's (with the event hub): losing any worker,
    the run's own included, must not lose the budget while tasks still use it.
    A bank kept from an earlier parallel node is reset and used first; this one
    is kept in turn once ``owner`` (the node's branch runner) is gone.
    """
    key = (ray.get_runtime_context().get_job_id(), node)
    idle = _IDLE.setdefault(key, [])
    bank = None
    while idle and bank is None:
        bank = idle.pop()
        try:  # waited for: every call of the branches comes after it
            ray.get(bank.reset.remote(budget.limits, state_of(budget)))
        except RayActorError:  # it went away meanwhile
            bank = None
    if bank is None:
        there = NodeAffinitySchedulingStrategy(node, soft=False) if node else "DEFAULT"
        actor = _Bank.options(scheduling_strategy=there)  # type: ignore[attr-defined]
        bank = actor.remote(budget.limits, state_of(budget))
    weakref.finalize(owner, _keep_warm, idle, bank)
    return bank


def _keep_warm(idle: list[Any], bank: Any) -> None:
    if len(idle) < KEEP_WARM:
        idle.append(bank)


class SharedBudget(RunTurnBudget):
    """A branch task's view of its run's budget: every change goes through the bank."""

    def __init__(self, bank: Any, limits: RunLimits) -> None:
        super().__init__(limits)
        self.bank = bank
        self._refresh()

    def _adopt(self, state: BudgetState) -> None:
        # The base class keeps the fields as plain attributes; write them past
        # the property below.
        self.__dict__["exhausted"] = state.exhausted
        self.used, self.spent = state.used, state.spent
        self.exhausted_by, self.active = state.exhausted_by, state.active

    def _refresh(self) -> None:
        self._adopt(ray.get(self.bank.state.remote()))

    @property
    def exhausted(self) -> bool:
        """Whether any agent of the run (in any branch) ran the budget out."""
        self._refresh()
        return bool(self.__dict__["exhausted"])

    @exhausted.setter
    def exhausted(self, value: bool) -> None:
        self.__dict__["exhausted"] = value

    @property
    def remaining(self) -> int | None:
        self._refresh()
        return super().remaining

    def take(self) -> bool:
        ok, state = ray.get(self.bank.take.remote())
        self._adopt(state)
        return bool(ok)

    def reserve(self, final: bool = False) -> tuple[bool, bool]:
        granted, last, state = ray.get(self.bank.reserve.remote(final))
        self._adopt(state)
        return bool(granted), bool(last)

    def spend(self, usage: Usage) -> None:
        self._adopt(ray.get(self.bank.spend.remote(usage)))

    def overspent(self) -> BudgetKind | None:
        self._refresh()
        return super().overspent()

    def mark_exhausted(self, kind: BudgetKind) -> None:
        self._adopt(ray.get(self.bank.mark_exhausted.remote(kind)))

    def register(self) -> bool:
        admitted, state = ray.get(self.bank.register.remote())
        self._adopt(state)
        return bool(admitted)

    def unregister(self) -> None:
        self._adopt(ray.get(self.bank.unregister.remote()))
