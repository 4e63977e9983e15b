"""The run-wide budgets: what counts as spent, and the reason that names the limit."""

from __future__ import annotations

import dataclasses

import pytest

from attractor.agent.run_budget import (
    RunLimits,
    RunTurnBudget,
    budget_name,
    exhausted_reason,
)
from attractor.llm.types import Usage


def test_tokens_and_cost_are_spent_from_answers() -> None:
    budget = RunTurnBudget(RunLimits(tokens=1_000, cost=1.0))
    budget.spend(Usage(400, 100, cost=0.4))
    assert budget.overspent() is None
    budget.spend(Usage(400, 100, cost=0.4))
    assert budget.overspent() == "tokens"
    budget.mark_exhausted("tokens")
    budget.mark_exhausted("cost")  # the first budget to run out is the one reported
    assert (
        exhausted_reason(budget)
        == "run token budget exhausted: 1,000 of 1,000 tokens (--max-total-tokens)"
    )


def test_the_reason_names_the_source_of_the_limit() -> None:
    budget = RunTurnBudget(RunLimits(cost=2.5, sources={"max_cost": "attractor.toml: max_cost"}))
    budget.spend(Usage(1, 1, cost=2.75))
    kind = budget.overspent()
    assert kind == "cost"
    budget.mark_exhausted(kind)
    assert (
        exhausted_reason(budget)
        == "run cost budget exhausted: $2.75 of $2.50 (attractor.toml: max_cost)"
    )
    assert budget_name(budget) == "run's cost budget (attractor.toml: max_cost)"


def test_the_turn_budget_reads_as_before() -> None:
    budget = RunTurnBudget(
        RunLimits(turns=2, sources={"max_total_turns": "ATTRACTOR_MAX_TOTAL_TURNS"})
    )
    assert budget.take() and budget.take() and not budget.take()
    budget.mark_exhausted("turns")
    assert exhausted_reason(budget) == (
        "run turn budget exhausted: 2 of 2 model requests (ATTRACTOR_MAX_TOTAL_TURNS)"
    )
    assert budget.overspent() is None  # no token or cost limit set


def test_an_agent_that_starts_late_cannot_take_the_final_turns_kept_for_others() -> None:
    budget = RunTurnBudget(RunLimits(turns=4))
    assert budget.register() and budget.register()  # a and b start
    assert budget.reserve() == (True, False)  # a works
    assert budget.reserve() == (True, False)  # b works: 2 left, one final each
    assert not budget.register()  # c starts now: nothing left for it
    assert budget.active == 2
    assert budget.reserve() == (True, True)  # a still gets its final request
    assert budget.reserve() == (True, True)  # and so does b
    assert budget.used == 4 and budget.active == 0


def test_a_final_request_gives_its_reserve_back_in_the_same_call() -> None:
    # Agents in other processes (Ray branches) share one budget through an actor:
    # nothing may come between an agent's final request and giving back its reserve
    # (the test above: b's final request right after a's, with no call between).
    budget = RunTurnBudget(RunLimits(turns=5))
    assert budget.register() and budget.register()  # a and b start
    # a at its node's own turn limit: final whatever the run budget says.
    assert budget.reserve(final=True) == (True, False)
    assert budget.active == 1  # only b's final request is still kept
    unlimited = RunTurnBudget()  # the same without a turn limit
    assert unlimited.register()
    assert unlimited.reserve(final=True) == (True, False)
    assert unlimited.active == 0


def test_without_a_turn_limit_every_agent_is_admitted() -> None:
    budget = RunTurnBudget()
    assert all(budget.register() for _ in range(100))
    assert budget.reserve() == (True, False)


def test_the_limits_are_a_frozen_value_apart_from_what_was_spent() -> None:
    limits = RunLimits(turns=1)
    first, second = RunTurnBudget(limits), RunTurnBudget(limits)
    assert first.take() and not first.take()
    assert second.take()  # sharing limits shares no spending
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.turns = 5  # type: ignore[misc]
