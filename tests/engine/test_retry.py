"""Retry policy, backoff and presets."""

from __future__ import annotations

import random

import pytest

from attractor.engine.retry import PRESETS, BackoffConfig, RetryPolicy, policy_for
from tests.engine.enginekit import graph_of


def test_exponential_backoff_without_jitter() -> None:
    backoff = BackoffConfig(0.2, 2.0, 1.0, jitter=False)
    assert [backoff.delay_for_attempt(n) for n in (1, 2, 3, 4)] == [0.2, 0.4, 0.8, 1.0]


def test_jitter_scales_between_half_and_one_and_a_half() -> None:
    backoff = BackoffConfig(1.0, 1.0, 10.0, jitter=True)
    rng = random.Random(7)
    delays = [backoff.delay_for_attempt(1, rng) for _ in range(200)]
    assert all(0.5 <= d <= 1.5 for d in delays)
    assert len(set(delays)) > 100


def test_presets_match_the_spec_table() -> None:
    linear = PRESETS["linear"]
    assert linear.max_attempts == 3
    assert linear.backoff.initial_delay == 0.5 and linear.backoff.factor == 1.0
    assert PRESETS["patient"].backoff.factor == 3.0
    assert PRESETS["none"].max_attempts == 1
    assert PRESETS["standard"].max_attempts == PRESETS["aggressive"].max_attempts == 5


def test_policy_prefers_node_then_graph_then_legacy_alias() -> None:
    graph = graph_of("a [max_retries=3]\n b\n start -> a -> b -> done", attrs="default_max_retry=1")
    assert policy_for(graph.node("a"), graph).max_attempts == 4
    assert policy_for(graph.node("b"), graph).max_attempts == 2
    graph.set("default_max_retries", "2")
    assert policy_for(graph.node("b"), graph).max_attempts == 3


def test_max_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RetryPolicy(0)
