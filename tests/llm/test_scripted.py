"""The scripted model: replay, exhaustion policies, recording, and file errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attractor.errors import UsageError
from attractor.llm.scripted import STOP_TEXT, ScriptedModel
from attractor.llm.types import Message, Model, ModelRequest, ToolDefinition


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _file(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _request(text: str = "hi", tools: tuple[ToolDefinition, ...] = ()) -> ModelRequest:
    return ModelRequest((Message.user(text),), tools)


SCRIPT = {
    "responses": [
        {"text": "reading", "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]},
        {"text": "done", "usage": {"input_tokens": 5, "output_tokens": 2}},
    ],
}


@pytest.mark.anyio
async def test_responses_are_replayed_in_order_then_stop(tmp_path: Path) -> None:
    model = ScriptedModel.from_file(_file(tmp_path, SCRIPT))
    assert isinstance(model, Model)
    first, second, third = [await model.request(_request()) for _ in range(3)]
    assert first.text == "reading" and first.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("read_file", {"path": "a"})]
    assert second.text == "done" and second.usage is not None and second.usage.input_tokens == 5
    assert (third.text, third.tool_calls) == (STOP_TEXT, ())


@pytest.mark.anyio
async def test_repeat_last_never_stops(tmp_path: Path) -> None:
    model = ScriptedModel.from_file(_file(tmp_path, {**SCRIPT, "then": "repeat_last"}))
    texts = [(await model.request(_request())).text for _ in range(5)]
    assert texts == ["reading", "done", "done", "done", "done"]


@pytest.mark.anyio
async def test_tool_call_ids_are_unique(tmp_path: Path) -> None:
    model = ScriptedModel.from_file(
        _file(tmp_path, {"responses": [SCRIPT["responses"][0]], "then": "repeat_last"})
    )
    ids = [(await model.request(_request())).tool_calls[0].id for _ in range(3)]
    assert len(set(ids)) == 3


@pytest.mark.anyio
async def test_requests_are_recorded_as_sent(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    model = ScriptedModel.from_file(_file(tmp_path, SCRIPT), record_path=record)
    tool = ToolDefinition("read_file", "read", {"type": "object", "properties": {}})
    await model.request(_request("one", (tool,)))
    await model.request(_request("two"))
    assert [r.tools for r in model.requests] == [(tool,), ()]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["tools"] for line in lines] == [
        [{"name": "read_file", "description": "read", "parameters": tool.parameters}],
        [],
    ]
    assert lines[1]["messages"] == [{"role": "user", "content": "two"}]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON"),
        ([], "expected a JSON object"),
        ({"responses": "x"}, '"responses" must be a list'),
        ({"responses": [], "then": "repeat_last"}, "needs at least one response"),
        ({"responses": [{"text": 3}]}, 'response 1: "text" must be a string'),
        ({"responses": [{"txt": "a"}]}, "unknown key(s) in response 1: txt"),
        ({"responses": [], "then": "forever"}, '"then" must be "repeat_last" or "stop"'),
        (
            {"responses": [{"tool_calls": [{"name": "x", "arguments": []}]}]},
            'response 1, tool call 1: "arguments" must be an object',
        ),
        ({"responses": [{"tool_calls": [{"arguments": {}}]}]}, '"name" must be a non-empty'),
        ({"responses": [{"usage": {"input_tokens": "many"}}]}, '"usage" must be'),
    ],
)
def test_bad_files_are_usage_errors_naming_the_file(
    tmp_path: Path, content: Any, problem: str
) -> None:
    path = _file(tmp_path, content)
    with pytest.raises(UsageError) as caught:
        ScriptedModel.from_file(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)
    assert caught.value.exit_code == 2


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        ScriptedModel.from_file(tmp_path / "absent.json")
