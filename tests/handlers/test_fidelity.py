"""Context fidelity: which mode and thread a stage gets, and the preamble's bounds."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot
from attractor.handlers import preamble
from attractor.handlers.context import Context
from attractor.handlers.fidelity import ARRIVAL_KEY, THREAD_OF_PREFIX, arrival, plan_for


def _graph(body: str, attrs: str = "") -> Graph:
    return parse_dot(f"digraph g {{ {attrs}\n start [shape=Mdiamond]\n {body} }}", file="g.dot")


def _arrived(graph: Graph, source: str, target: str) -> Context:
    edge = next(e for e in graph.node(source).outgoing() if e.target == target)
    return Context({ARRIVAL_KEY: arrival(edge)})


def test_mode_precedence_is_edge_then_node_then_graph_then_compact() -> None:
    graph = _graph(
        'a; b [fidelity="truncate"]; c; a -> b [fidelity="summary:high"]; a -> c; b -> c',
        'default_fidelity="summary:low"',
    )
    assert plan_for(graph.node("b"), graph, _arrived(graph, "a", "b")).mode == "summary:high"
    assert plan_for(graph.node("b"), graph, Context()).mode == "truncate"
    assert plan_for(graph.node("c"), graph, _arrived(graph, "a", "c")).mode == "summary:low"
    plain = _graph("a; b; a -> b")
    assert plan_for(plain.node("b"), plain, _arrived(plain, "a", "b")).mode == "compact"


def test_thread_precedence_is_node_then_edge_then_graph_then_class() -> None:
    graph = _graph(
        'a; b [thread_id="own"]; c; d [class="review-loop"]; e\n'
        'a -> b [thread_id="edge"]; a -> c [thread_id="edge"]; a -> d; a -> e',
        'default_fidelity="full"; thread_id="graph-wide"',
    )
    assert plan_for(graph.node("b"), graph, _arrived(graph, "a", "b")).thread == "own"
    assert plan_for(graph.node("c"), graph, _arrived(graph, "a", "c")).thread == "edge"
    assert plan_for(graph.node("d"), graph, _arrived(graph, "a", "d")).thread == "graph-wide"
    classed = _graph('a; d [class="review-loop"]; a -> d', 'default_fidelity="full"')
    assert plan_for(classed.node("d"), classed, _arrived(classed, "a", "d")).thread == "review-loop"


def test_without_thread_ids_a_full_chain_continues_the_previous_stage_thread() -> None:
    graph = _graph("plan; implement; plan -> implement", 'default_fidelity="full"')
    context = _arrived(graph, "plan", "implement")
    assert plan_for(graph.node("implement"), graph, context).thread == "plan"
    context.set(THREAD_OF_PREFIX + "plan", "design")
    assert plan_for(graph.node("implement"), graph, context).thread == "design"


def test_no_thread_outside_full() -> None:
    graph = _graph('a [thread_id="t"]; b; a -> b')
    assert plan_for(graph.node("a"), graph, Context()).thread is None


@dataclass
class _Stage:
    node: str
    status: str = "success"
    attempts: int = 1
    duration: float = 1.5
    note: str = ""
    usage: dict[str, int] | None = None


class _Record:
    run_id = "run-1"

    def __init__(self, stages: list[_Stage]) -> None:
        self._stages = stages

    def stages(self) -> list[_Stage]:
        return self._stages

    def response(self, node_id: str, limit: int) -> str:
        return (f"response of {node_id} " * 2000)[:limit]

    def tally(self) -> tuple[int, int, int]:
        counted = [s for s in self._stages if s.node != "start" and s.status != "skipped"]
        fails = sum(s.status == "fail" for s in counted)
        partial = sum(s.status == "partial_success" for s in counted)
        return len(counted), fails, partial


@pytest.mark.parametrize("mode", sorted(preamble.SHAPES))
def test_every_preamble_stays_within_its_stated_size(mode: str) -> None:
    stages = [_Stage("start")] + [_Stage(f"step{i}", note="n" * 500) for i in range(200)]
    context = Context({f"key{i}": "v" * 300 for i in range(200)})
    text = preamble.build(mode, graph=_graph("x"), context=context, record=_Record(stages))
    assert 0 < len(text) <= preamble.SHAPES[mode].limit
    assert f"context fidelity: {mode}" in text


def test_a_first_stage_gets_no_preamble() -> None:
    graph = _graph("a; start -> a")
    text = preamble.build(
        "compact", graph=graph, context=Context(), record=_Record([_Stage("start")])
    )
    assert text == ""


def test_compact_lists_stages_and_context_but_not_bookkeeping() -> None:
    stages = [_Stage("start"), _Stage("plan", note="planned"), _Stage("tests", status="fail")]
    context = Context({"ticket": "ABC-1", "internal.arrival": {"from": "x"}, "graph.goal": "g"})
    text = preamble.build(
        "compact", graph=_graph("x", 'goal="ship"'), context=context, record=_Record(stages)
    )
    assert "Goal: ship" in text and "- plan: success - planned" in text
    assert "- tests: fail" in text and "ticket = ABC-1" in text
    assert "internal." not in text and "graph.goal" not in text
    assert "response of" not in text  # compact quotes no responses


def test_summary_high_quotes_the_last_responses() -> None:
    stages = [_Stage("plan"), _Stage("implement"), _Stage("review")]
    text = preamble.build(
        "summary:high", graph=_graph("x"), context=Context(), record=_Record(stages)
    )
    assert "Response of review:" in text and "Response of plan:" in text


@pytest.mark.parametrize("mode", ["compact", "summary:medium", "summary:high"])
def test_a_growing_record_gives_the_preamble_a_fresh_reading_gives(mode: str) -> None:
    # Each preamble reads only the rows added since the last one: it must say what
    # a first reading of the same rows says, also once rows come before the others.
    graph = _graph("x")
    stages = [_Stage("start")]
    record = _Record(stages)
    for i in range(60):
        status = "skipped" if i % 7 == 3 else "fail" if i % 5 == 0 else "success"
        stages += [_Stage(f"s{i}", status=status, note=f"note {i}")] * (1 + i % 3)
        if i == 40:  # a resumed branch's rows go first
            stages[:0] = [_Stage("b0", note="from the branch"), _Stage("b1")]
        if i == 50:
            stages[:] = stages[:30]  # fewer rows than read last time
        built = preamble.build(mode, graph=graph, context=Context(), record=record)
        fresh = preamble.build(mode, graph=graph, context=Context(), record=_Record(stages))
        assert built == fresh
