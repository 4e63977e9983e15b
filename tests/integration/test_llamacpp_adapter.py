"""The openai adapter against a real llama.cpp server running a small Gemma model.

The model is a 270M base model, not instruction-tuned: these tests check the
structure of what comes back (structured tool calls, usage, finish reasons), never
whether the answer makes sense.
"""

from __future__ import annotations

import pytest

from attractor.llm.factory import ModelSpec, build_model
from attractor.llm.types import Message, ModelRequest, ModelResponse, ToolDefinition
from tests.integration.conftest import LlamaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.anyio]

TOOLS = (
    ToolDefinition(
        name="read_file",
        description="Read a text file and return its contents",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    ToolDefinition(
        name="list_dir",
        description="List the entries of a directory",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
)
PROMPT = (
    Message.system("You are a coding agent working in a small repository."),
    Message.user("Read the file notes.txt and tell me what it says."),
)


async def ask(server: LlamaServer, request: ModelRequest, *, stream: bool) -> ModelResponse:
    model = build_model(ModelSpec("openai", server.model, base_url=server.base_url), stream=stream)
    try:
        return await model.request(request)
    finally:
        await model.aclose()


def assert_one_structured_call(response: ModelResponse) -> None:
    # parallel_tool_calls=False (set for local servers) allows one call per turn.
    assert len(response.tool_calls) == 1, response
    [call] = response.tool_calls
    assert call.id
    assert call.name in {tool.name for tool in TOOLS}
    assert isinstance(call.arguments, dict)
    assert call.arguments_error is None
    assert response.finish_reason == "tool_calls"


def assert_usage(response: ModelResponse) -> None:
    assert response.usage is not None
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_tool_call_arrives_structured(llama_server: LlamaServer, stream: bool) -> None:
    response = await ask(llama_server, ModelRequest(PROMPT, tools=TOOLS), stream=stream)
    assert_one_structured_call(response)
    assert_usage(response)
    assert response.provider == "openai"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_tool_result_round_trip_then_answer_without_tools(
    llama_server: LlamaServer, stream: bool
) -> None:
    first = await ask(llama_server, ModelRequest(PROMPT, tools=TOOLS), stream=stream)
    assert_one_structured_call(first)
    [call] = first.tool_calls
    history = (
        *PROMPT,
        Message.assistant(first.text, first.tool_calls),
        Message.tool(call, "notes.txt: remember to water the plants"),
    )
    # Tools withheld: the adapter sends none, so the server can only answer in text.
    final = await ask(llama_server, ModelRequest(history), stream=stream)
    assert final.tool_calls == ()
    assert final.finish_reason in ("stop", "length")
    assert isinstance(final.text, str) and final.text
    assert_usage(final)
