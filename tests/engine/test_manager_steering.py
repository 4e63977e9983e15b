"""A manager with ``steer`` reaches the child's agent before its next turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.handlers.agent_backend import AgentBackend, SharedModel
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from tests.engine.enginekit import graph_of, run

pytestmark = pytest.mark.anyio

CHILD = """\
digraph child {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [prompt="Write the code"]
    start -> work -> exit
}
"""


async def test_steering_is_delivered_to_the_child_agent(tmp_path: Path) -> None:
    child = tmp_path / "child.dot"
    child.write_text(CHILD)
    graph = graph_of(
        f'boss [shape=house, stack.child_dotfile="{child}", manager.actions="observe,steer",'
        ' prompt="Keep the change small"]\n start -> boss -> done'
    )
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=(("shell", {"command": "echo working"}),)),
            ScriptedResponse(text="done"),
        ]
    )
    result = await run(graph, tmp_path, backend=AgentBackend(SharedModel(model)))
    assert result.status == "success", result.failure_reason
    # Delivered once, as a user note, before one of the child agent's requests.
    last = model.requests[-1].messages
    notes = [m for m in last if "Keep the change small" in m.content]
    assert [(m.role, m.content) for m in notes] == [
        ("user", "Message from the supervisor of this pipeline:\nKeep the change small")
    ]
