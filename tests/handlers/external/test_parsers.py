"""Each CLI's recorded streams read as the same steps: turns, tool calls, ending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attractor.dot.schema import AGENT_BACKENDS
from attractor.handlers.external.agents import AGENTS
from attractor.handlers.external.spec import Invocation
from attractor.handlers.external.steps import Finished, Step, ToolDone, ToolUsed, TurnStarted

STREAMS = Path(__file__).with_name("streams")
FOLDER = {"claude-code": "claude", "codex": "codex", "gemini-cli": "gemini"}


def _steps(backend: str, scenario: str) -> list[Step]:
    parser = AGENTS[backend].parser()
    steps: list[Step] = []
    for line in (STREAMS / FOLDER[backend] / f"{scenario}.jsonl").read_text().splitlines():
        event = json.loads(line)
        if "_fake" not in event:
            steps.extend(parser.feed(event))
    return steps


def _count(steps: list[Step], kind: type) -> int:
    return sum(isinstance(step, kind) for step in steps)


def test_every_schema_backend_has_an_adapter() -> None:
    assert tuple(AGENTS) == AGENT_BACKENDS


@pytest.mark.parametrize("backend", AGENT_BACKENDS)
@pytest.mark.parametrize(
    ("scenario", "turns", "tools", "ending"),
    [("success", 1, 0, "success"), ("tools", 3, 2, "success")],
)
def test_recorded_streams_read_as_turns_tools_and_an_ending(
    backend: str, scenario: str, turns: int, tools: int, ending: str
) -> None:
    steps = _steps(backend, scenario)
    assert _count(steps, TurnStarted) == turns
    assert _count(steps, ToolUsed) == _count(steps, ToolDone) == tools
    (finished,) = [s for s in steps if isinstance(s, Finished)]
    assert finished.ending == ending


def test_a_tool_call_split_over_start_and_completion_is_one_call() -> None:
    steps = _steps("codex", "turn_limit")
    assert _count(steps, ToolUsed) == 4
    assert _count(steps, TurnStarted) == 4


def test_claude_s_own_turn_limit_reads_as_max_turns() -> None:
    (finished,) = [s for s in _steps("claude-code", "turn_limit") if isinstance(s, Finished)]
    assert finished.ending == "max_turns"


@pytest.mark.parametrize("backend", AGENT_BACKENDS)
def test_command_lines_read_the_prompt_from_stdin_and_pass_model_and_budget(
    backend: str,
) -> None:
    cli = AGENTS[backend]
    argv = cli.argv(Invocation(max_turns=7, model="m1", reasoning_effort="low"))
    assert argv[0] == cli.executable
    assert argv[argv.index("--model") + 1] == "m1"
    assert ("--max-turns" in argv) == cli.turn_flag
    # The prompt goes to stdin, never into argv (no length limit, no quoting).
    reads_stdin = {"claude-code": "-p", "codex": "-", "gemini-cli": "--output-format"}
    assert reads_stdin[backend] in argv
    assert "--prompt" not in argv
