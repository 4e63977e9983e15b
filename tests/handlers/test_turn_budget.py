"""Turn budget resolution: node -> graph default -> profile, under the global cap."""

from __future__ import annotations

from typing import Any

import pytest

from attractor.handlers.turn_budget import PROFILE_TURNS, resolve_budget
from attractor.settings import Settings
from tests.handlers._graphs import graph_with_node


def _settings(**values: Any) -> Settings:
    sources = dict(values.pop("sources", {}))
    return Settings(**values, sources=sources)


def test_profile_defaults() -> None:
    assert PROFILE_TURNS == {"smoke": 5, "fast": 15, "strict": 40, "yolo": 150}
    graph, node = graph_with_node()
    for profile, turns in PROFILE_TURNS.items():
        budget = resolve_budget(node, graph, _settings(profile=profile), prompt="x")
        assert (budget.effective, budget.source) == (turns, f"profile {profile} default")


def test_node_beats_graph_default_beats_profile() -> None:
    graph, node = graph_with_node({"max_turns": "7"}, {"default_max_turns": "9"})
    assert resolve_budget(node, graph, _settings(), prompt="x").effective == 7
    graph, node = graph_with_node({}, {"default_max_turns": "9"})
    budget = resolve_budget(node, graph, _settings(), prompt="x")
    assert (budget.effective, budget.source, budget.graph_default) == (
        9,
        "graph default_max_turns",
        9,
    )


def test_cap_is_an_upper_bound_only() -> None:
    settings = _settings(max_turns=2, sources={"max_turns": "--max-turns"})
    graph, node = graph_with_node({"max_turns": "30"})
    budget = resolve_budget(node, graph, settings, prompt="x")
    assert (budget.effective, budget.source) == (2, "cap from --max-turns")
    assert budget.limit_reason(2) == "turn limit reached: 2 of 2 turns (cap from --max-turns)"
    graph, node = graph_with_node({"max_turns": "1"})
    low = resolve_budget(node, graph, _settings(max_turns=5), prompt="x")
    assert (low.effective, low.source, low.cap) == (1, "node max_turns", 5)


def test_auto_uses_the_prompt_and_the_visit() -> None:
    graph, node = graph_with_node({"max_turns": "auto"})
    budget = resolve_budget(node, graph, _settings(), prompt="Fix the bug in x.py", visit=2)
    assert budget.effective == 25
    assert budget.auto_patterns == ("debugging", "reentry")
    assert budget.source == "node max_turns=auto"


def test_status_json_form_has_exactly_the_documented_keys() -> None:
    settings = _settings(
        profile="strict", max_turns=3, sources={"max_turns": "ATTRACTOR_MAX_TURNS"}
    )
    graph, node = graph_with_node({"max_turns": "auto"}, {"default_max_turns": "12"})
    assert resolve_budget(node, graph, settings, prompt="hello").to_json() == {
        "effective": 3,
        "source": "cap from ATTRACTOR_MAX_TURNS",
        "node": "auto",
        "graph_default": 12,
        "profile": "strict",
        "profile_default": 40,
        "auto_patterns": [],
        "cap": 3,
        "cap_source": "ATTRACTOR_MAX_TURNS",
    }


@pytest.mark.parametrize(
    ("node_attrs", "graph_attrs", "expected"),
    [
        ({}, {}, 0),
        ({}, {"default_sprint_limit": "4"}, 4),
        ({"sprint_limit": "0"}, {"default_sprint_limit": "4"}, 0),
    ],
)
def test_sprint_limit_node_then_graph(
    node_attrs: dict[str, str], graph_attrs: dict[str, str], expected: int
) -> None:
    graph, node = graph_with_node(node_attrs, graph_attrs)
    assert resolve_budget(node, graph, _settings(), prompt="x").sprint_limit == expected


def test_on_turn_limit_defaults_to_fail() -> None:
    graph, node = graph_with_node()
    assert resolve_budget(node, graph, _settings(), prompt="x").on_turn_limit == "fail"
    graph, node = graph_with_node({"on_turn_limit": "retry"})
    assert resolve_budget(node, graph, _settings(), prompt="x").on_turn_limit == "retry"
