"""A run that stops because no outgoing edge matches fails, naming the node and the conditions.

Before, it ended as "pipeline succeeded" (exit 0): a tool printing something
unexpected ended the pipeline early and green.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.enginekit import executed, graph_of, run

pytestmark = pytest.mark.anyio


async def test_no_matching_edge_fails_the_run_naming_node_and_conditions(tmp_path: Path) -> None:
    graph = graph_of(
        'check [shape=parallelogram, tool_command="echo surprise"]\n'
        "start -> check\n"
        'check -> done [condition="context.tool.stdout=ok"]\n'
        'check -> start [condition="outcome=fail"]'
    )
    result = await run(graph, tmp_path)
    assert (result.status, result.exit_code) == ("fail", 1)
    assert result.failure_reason == (
        "stopped at check: no outgoing edge matched "
        "(conditions: context.tool.stdout=ok, outcome=fail); its outcome was success"
    )
    assert executed(result) == ["start", "check"]


async def test_a_node_without_outgoing_edges_is_a_terminal(tmp_path: Path) -> None:
    # The spec's terminal: a node with no edge out ends the run as its outcome says.
    graph = graph_of('last [shape=parallelogram, tool_command="true"]\nstart -> last')
    result = await run(graph, tmp_path)
    assert (result.status, result.exit_code) == ("success", 0)
    assert executed(result) == ["start", "last"]


async def test_a_branch_still_ends_at_its_fan_in(tmp_path: Path) -> None:
    graph = graph_of(
        "fork [shape=component]; join [shape=tripleoctagon]\n"
        'a [shape=parallelogram, tool_command="true"]\n'
        'b [shape=parallelogram, tool_command="true"]\n'
        "start -> fork\nfork -> a -> join\nfork -> b -> join\njoin -> done"
    )
    result = await run(graph, tmp_path)
    assert result.status == "success", result.failure_reason
