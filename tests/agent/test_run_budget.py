"""The run-wide budgets: what counts as spent, and the reason that names the limit."""

from __future__ import annotations

from attractor.agent.run_budget import RunTurnBudget
from attractor.llm.types import Usage


def test_tokens_and_cost_are_spent_from_answers() -> None:
    budget = RunTurnBudget(None, max_tokens=1_000, max_cost=1.0)
    budget.spend(Usage(400, 100, cost=0.4))
    assert budget.overspent() is None
    budget.spend(Usage(400, 100, cost=0.4))
    assert budget.overspent() == "tokens"
    budget.mark_exhausted("tokens")
    budget.mark_exhausted("cost")  # the first budget to run out is the one reported
    assert (
        budget.reason() == "run token budget exhausted: 1,000 of 1,000 tokens (--max-total-tokens)"
    )


def test_the_reason_names_the_source_of_the_limit() -> None:
    budget = RunTurnBudget(None, max_cost=2.5, sources={"max_cost": "attractor.toml: max_cost"})
    budget.spend(Usage(1, 1, cost=2.75))
    kind = budget.overspent()
    assert kind == "cost"
    budget.mark_exhausted(kind)
    assert budget.reason() == "run cost budget exhausted: $2.75 of $2.50 (attractor.toml: max_cost)"
    assert budget.name() == "run's cost budget (attractor.toml: max_cost)"


def test_the_turn_budget_reads_as_before() -> None:
    budget = RunTurnBudget(2, sources={"max_total_turns": "ATTRACTOR_MAX_TOTAL_TURNS"})
    assert budget.take() and budget.take() and not budget.take()
    budget.mark_exhausted("turns")
    assert budget.reason() == (
        "run turn budget exhausted: 2 of 2 model requests (ATTRACTOR_MAX_TOTAL_TURNS)"
    )
    assert budget.overspent() is None  # no token or cost limit set


def test_an_agent_that_starts_late_cannot_take_the_final_turns_kept_for_others() -> None:
    budget = RunTurnBudget(4)
    assert budget.register() and budget.register()  # a and b start
    assert budget.reserve() == (True, False)  # a works
    assert budget.reserve() == (True, False)  # b works: 2 left, one final each
    assert not budget.register()  # c starts now: nothing left for it
    assert budget.active == 2
    assert budget.reserve() == (True, True)  # a still gets its final request
    budget.unregister()
    assert budget.reserve() == (True, True)  # and so does b
    budget.unregister()
    assert budget.used == 4 and budget.active == 0


def test_without_a_turn_limit_every_agent_is_admitted() -> None:
    budget = RunTurnBudget(None)
    assert all(budget.register() for _ in range(100))
    assert budget.reserve() == (True, False)
