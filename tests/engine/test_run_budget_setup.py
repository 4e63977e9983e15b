"""The run-wide budgets a run starts with, fresh or resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.engine.setup import run_budget, spent_before
from attractor.engine.state import NodeResult
from attractor.llm.types import Usage
from attractor.settings import resolve_settings
from attractor.store.checkpoint import Checkpoint


def test_a_resumed_run_counts_what_its_earlier_part_spent(tmp_path: Path) -> None:
    settings = resolve_settings(
        {"max_total_tokens": "10000", "max_cost": "1"},
        env={"ATTRACTOR_MAX_TOTAL_TURNS": "50"},
        cwd=tmp_path,
    )
    results = [
        NodeResult("a", "success", 1, 1.0, "", {"input_tokens": 3000, "output_tokens": 500}),
        NodeResult(
            "b", "fail", 1, 1.0, "", {"input_tokens": 1000, "output_tokens": 100, "cost": 0.4}
        ),
        NodeResult("c", "success", 1, 0.1, "", None),
    ]
    # A checkpoint from before the run's total was kept: the summary rows are all there is.
    budget = run_budget(settings, 7, spent_before(Checkpoint(), results))
    limits = budget.limits
    assert (limits.turns, budget.used, limits.tokens, limits.cost) == (50, 7, 10000, 1.0)
    assert budget.spent.total_tokens == 4600
    assert budget.spent.cost == pytest.approx(0.4)
    assert limits.source("turns") == "ATTRACTOR_MAX_TOTAL_TURNS"
    assert limits.source("cost") == "--max-cost"
    assert budget.overspent() is None


def test_a_fresh_run_has_spent_nothing(tmp_path: Path) -> None:
    budget = run_budget(resolve_settings(env={}, cwd=tmp_path))
    assert budget.spent.total_tokens == 0 and budget.spent.cost is None
    assert budget.overspent() is None


def test_a_resumed_run_counts_every_attempt_the_checkpoint_recorded() -> None:
    # The rows hold each visit's attempts; the checkpoint's total also has the
    # attempts of a visit a crash cut short, which no row holds.
    results = [NodeResult("a", "success", 2, 1.0, "", {"input_tokens": 300, "output_tokens": 50})]
    checkpoint = Checkpoint(run_usage=Usage(900, 150, cost=0.25).to_json())
    spent = spent_before(checkpoint, results)
    assert (spent.input_tokens, spent.output_tokens, spent.cost) == (900, 150, 0.25)
