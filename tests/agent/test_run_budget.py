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
