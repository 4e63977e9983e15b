"""The built-in agent with MCP servers: real servers (the SDK's), a scripted model.

Each test starts a real MCP server written with the SDK (tests/agent/mcp_servers)
over stdio or streamable HTTP on 127.0.0.1, and a scripted model that calls its
tools, so the agent really talks MCP. Faults end the step with a clear reason,
within bounded waits, and leave no server process behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from attractor.agent.run_budget import RunTurnBudget
from attractor.events import AgentWarning, ToolCallCompleted
from attractor.handlers.agent_backend import AgentBackend, SharedModel
from attractor.handlers.backend import StageRequest
from attractor.handlers.context import Context
from attractor.handlers.outcome import StageStatus
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from attractor.mcp_config import McpServerConfig
from attractor.settings import Settings
from tests.agent._helpers import Recorder, read_jsonl
from tests.handlers._graphs import graph_with_node

SERVER = Path(__file__).parents[1] / "agent" / "mcp_servers" / "tools_server.py"


def stdio(
    name: str, *args: str, pid_file: Path | None = None, **timeouts: float
) -> McpServerConfig:
    env = (("MCP_PID_FILE", str(pid_file)),) if pid_file else ()
    return McpServerConfig(
        name, command=sys.executable, args=(str(SERVER), *args), env=env, **timeouts
    )


def calls(*pairs: tuple[str, dict[str, Any]]) -> ScriptedResponse:
    return ScriptedResponse("", tool_calls=tuple(pairs))


async def run_node(
    tmp_path: Path,
    servers: list[McpServerConfig],
    responses: list[ScriptedResponse],
    **attrs: str,
) -> tuple[Any, Recorder, ScriptedModel, Path]:
    graph, node = graph_with_node(
        {
            "prompt": "use the tools",
            "max_turns": "6",
            "mcp": ",".join(s.name for s in servers),
            **attrs,
        }
    )
    model = ScriptedModel(responses)
    events = Recorder()
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    stage = tmp_path / "stage"
    request = StageRequest(
        node=node,
        prompt=node.prompt,
        context=Context(),
        graph=graph,
        stage_dir=stage,
        workdir=workdir,
        attempt=1,
        visit=1,
        settings=Settings(mcp_servers={s.name: s for s in servers}),
        emit=events,
        run_budget=RunTurnBudget(None),
    )
    with anyio.fail_after(60):
        outcome = await AgentBackend(SharedModel(model)).run(request)
    return outcome, events, model, stage


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def gone(pid: int, within: float = 15.0) -> bool:
    """Whether process ``pid`` has ended (zombies count as ended), polling until ``within``."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.mark.anyio
async def test_the_model_calls_a_stdio_servers_tool_and_it_is_logged(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    outcome, events, model, stage = await run_node(
        tmp_path,
        [stdio("tracker", pid_file=pid_file)],
        [calls(("mcp__tracker__echo", {"text": "ISSUE-7"})), ScriptedResponse("done")],
    )
    assert outcome.status == StageStatus.SUCCESS, outcome.failure_reason
    offered = {tool.name: tool for tool in model.requests[0].tools}
    assert offered["mcp__tracker__echo"].parameters["properties"]["text"]["type"] == "string"
    assert "shell" in offered and "mcp__tracker__shell" in offered  # ours and the server's
    (answer,) = [m for m in model.requests[1].messages if m.role == "tool"]
    assert "echo: ISSUE-7" in answer.content
    assert "--- turn 1: mcp__tracker__echo" in (stage / "tools.log").read_text()
    (completed,) = events.of(ToolCallCompleted)
    assert completed.tool == "mcp__tracker__echo" and not completed.is_error
    transcript = read_jsonl(stage / "transcript.jsonl")
    assert any("mcp__tracker__echo" in json.dumps(entry) for entry in transcript)
    assert outcome.details["turns_used"] == 2
    [pid] = pids(pid_file)
    assert gone(pid), "the server outlived its step"


@pytest.mark.anyio
async def test_a_tool_named_like_ours_does_not_replace_ours(tmp_path: Path) -> None:
    outcome, _, model, _ = await run_node(
        tmp_path,
        [stdio("tracker")],
        [
            calls(("shell", {"command": "echo ours"}), ("mcp__tracker__shell", {"command": "x"})),
            ScriptedResponse("done"),
        ],
    )
    assert outcome.status == StageStatus.SUCCESS
    answers = [m.content for m in model.requests[1].messages if m.role == "tool"]
    assert "ours" in answers[0] and "server shell got" not in answers[0]
    assert "server shell got: x" in answers[1]


@pytest.mark.anyio
async def test_allow_and_deny_choose_the_tools_offered(tmp_path: Path) -> None:
    outcome, events, model, _ = await run_node(
        tmp_path,
        [stdio("tracker")],
        [ScriptedResponse("done")],
        mcp_allow="mcp__tracker__e*, mcp__tracker__nothing_like_this",
        mcp_deny="mcp__tracker__env",
    )
    assert outcome.status == StageStatus.SUCCESS
    offered = [t.name for t in model.requests[0].tools if t.name.startswith("mcp__")]
    assert offered == ["mcp__tracker__echo", "mcp__tracker__exit_now"]
    warnings = [w.message for w in events.of(AgentWarning)]
    assert any("mcp__tracker__nothing_like_this" in w for w in warnings)


@pytest.mark.anyio
async def test_a_50_mb_result_reaches_the_model_truncated_and_tools_log_8_mb_of_it(
    tmp_path: Path,
) -> None:
    outcome, _, model, stage = await run_node(
        tmp_path,
        [stdio("tracker")],
        [calls(("mcp__tracker__big", {"megabytes": 50})), ScriptedResponse("done")],
    )
    assert outcome.status == StageStatus.SUCCESS
    (answer,) = [m for m in model.requests[1].messages if m.role == "tool"]
    assert len(answer.content) < 25_000 and "[output truncated" in answer.content
    assert "more characters of the MCP result dropped]" in answer.content
    size = (stage / "tools.log").stat().st_size
    assert 8 * 1024 * 1024 < size < 9 * 1024 * 1024  # capped like a shell command's output


@pytest.mark.anyio
async def test_a_servers_stderr_is_capped_on_disk_with_a_note(tmp_path: Path) -> None:
    from attractor.proc.capped import LOG_LIMIT

    outcome, _, model, stage = await run_node(
        tmp_path,
        [stdio("tracker")],
        [calls(("mcp__tracker__spew", {"megabytes": 20})), ScriptedResponse("done")],
    )
    assert outcome.status == StageStatus.SUCCESS, outcome.failure_reason
    (answer,) = [m for m in model.requests[1].messages if m.role == "tool"]
    assert "spewed" in answer.content  # the server was never held up by its stderr
    log = stage / "mcp-tracker.stderr.log"
    assert LOG_LIMIT < log.stat().st_size < LOG_LIMIT + 200
    end = log.read_bytes()[-150:].decode()
    assert f"[attractor: this log was cut at {LOG_LIMIT} bytes; " in end
    assert end.endswith(" more bytes were left out]\n")


@pytest.mark.anyio
async def test_a_tools_own_error_goes_back_to_the_model(tmp_path: Path) -> None:
    outcome, _, model, _ = await run_node(
        tmp_path,
        [stdio("tracker")],
        [calls(("mcp__tracker__fail", {})), ScriptedResponse("done")],
    )
    assert outcome.status == StageStatus.SUCCESS
    (answer,) = [m for m in model.requests[1].messages if m.role == "tool"]
    assert answer.is_error and "mcp__tracker__fail failed" in answer.content


@pytest.mark.anyio
async def test_a_server_exiting_mid_call_fails_the_step(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    outcome, _, _, _ = await run_node(
        tmp_path,
        [stdio("tracker", pid_file=pid_file)],
        [calls(("mcp__tracker__exit_now", {})), ScriptedResponse("never reached")],
    )
    assert outcome.status == StageStatus.FAIL
    assert "MCP server tracker: ended during a call of exit_now" in outcome.failure_reason
    assert "exit code 3" in outcome.failure_reason
    assert all(gone(pid) for pid in pids(pid_file))


@pytest.mark.anyio
async def test_a_call_never_answered_fails_the_step_and_the_server_is_stopped(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    outcome, _, _, _ = await run_node(
        tmp_path,
        [stdio("tracker", pid_file=pid_file, call_timeout=1.0)],
        [calls(("mcp__tracker__stall", {})), ScriptedResponse("never reached")],
    )
    assert outcome.status == StageStatus.FAIL
    assert "did not answer a call of stall within 1s" in outcome.failure_reason
    [pid] = pids(pid_file)
    assert gone(pid)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "wait", "expected"),
    [
        (("silent",), 1.5, "did not answer within 1.5s of its start"),
        # Garbage ends the wait at once: the long bound only covers a slow start-up.
        (
            ("garbage",),
            60,
            "is not an MCP message on its stdout: 'Starting tracker server v1.2...'",
        ),
    ],
)
async def test_a_server_that_never_answers_or_answers_garbage_fails_the_step(
    tmp_path: Path, args: tuple[str, ...], wait: float, expected: str
) -> None:
    pid_file = tmp_path / "pids"
    outcome, _, model, _ = await run_node(
        tmp_path,
        [stdio("tracker", *args, pid_file=pid_file, startup_timeout=wait)],
        [ScriptedResponse("never reached")],
    )
    assert outcome.status == StageStatus.FAIL
    assert outcome.failure_reason.startswith("MCP server tracker: ")
    assert expected in outcome.failure_reason
    assert model.requests == []  # the model is not asked with half its tools
    assert all(gone(pid) for pid in pids(pid_file))


@pytest.mark.anyio
async def test_a_server_that_cannot_start_fails_the_step(tmp_path: Path) -> None:
    missing = McpServerConfig("tracker", command=str(tmp_path / "no-such-server"))
    outcome, _, _, _ = await run_node(tmp_path, [missing], [ScriptedResponse("x")])
    assert outcome.status == StageStatus.FAIL
    assert "MCP server tracker: cannot start" in outcome.failure_reason
    assert "No such file or directory" in outcome.failure_reason


@pytest.mark.anyio
async def test_tool_hooks_see_mcp_calls_and_may_block_them(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    hook = f'cat >> {seen}; echo >> {seen}; [ "$ATTRACTOR_TOOL_NAME" != mcp__tracker__env ]'
    outcome, _, model, _ = await run_node(
        tmp_path,
        [stdio("tracker")],
        [
            calls(("mcp__tracker__echo", {"text": "a"})),
            calls(("mcp__tracker__env", {"name": "HOME"})),
            ScriptedResponse("done"),
        ],
        **{"tool_hooks.pre": hook},
    )
    assert outcome.status == StageStatus.SUCCESS
    payloads = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [p["name"] for p in payloads] == ["mcp__tracker__echo", "mcp__tracker__env"]
    blocked = [m for m in model.requests[2].messages if m.role == "tool"][-1]
    assert blocked.is_error and "blocked" in blocked.content


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1, wanting a bearer token."""
    port_file = tmp_path / "port"
    env = {**os.environ, "EXPECT_TOKEN": "s3cret-token"}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port_file)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert process.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.anyio
async def test_an_http_server_gets_its_headers_from_a_named_secret(
    tmp_path: Path, http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cret-token")
    server = McpServerConfig(
        "docs", url=http_server, headers=(("Authorization", "Bearer ${DOCS_TOKEN}"),)
    )
    outcome, _, model, _ = await run_node(
        tmp_path,
        [server],
        [
            calls(("mcp__docs__echo", {"text": "over http"})),
            calls(("mcp__docs__big", {"megabytes": 5})),  # over the SDK's 1 MB SSE default
            ScriptedResponse("done"),
        ],
    )
    assert outcome.status == StageStatus.SUCCESS, outcome.failure_reason
    (answer,) = [m for m in model.requests[1].messages if m.role == "tool"]
    assert "echo: over http" in answer.content
    big = [m for m in model.requests[2].messages if m.role == "tool"][-1]
    assert not big.is_error and "[output truncated" in big.content


@pytest.mark.anyio
async def test_an_http_server_refusing_the_token_fails_the_step(
    tmp_path: Path, http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "wrong")
    server = McpServerConfig(
        "docs", url=http_server, headers=(("Authorization", "Bearer ${DOCS_TOKEN}"),)
    )
    outcome, _, _, _ = await run_node(tmp_path, [server], [ScriptedResponse("x")])
    assert outcome.status == StageStatus.FAIL
    assert outcome.failure_reason.startswith("MCP server docs: did not start")


@pytest.mark.anyio
async def test_an_unset_header_variable_fails_the_step_naming_it(tmp_path: Path) -> None:
    server = McpServerConfig(
        "docs",
        url="http://127.0.0.1:9/mcp",
        headers=(("Authorization", "Bearer ${ATTRACTOR_TEST_UNSET_TOKEN}"),),
        source="attractor.toml: mcp_servers.docs",
    )
    outcome, _, _, _ = await run_node(tmp_path, [server], [ScriptedResponse("x")])
    assert outcome.status == StageStatus.FAIL
    assert "${ATTRACTOR_TEST_UNSET_TOKEN}, which is not set" in outcome.failure_reason


@asynccontextmanager
async def raw_http_server(answer: bytes | None) -> AsyncIterator[str]:
    """An HTTP endpoint on 127.0.0.1 that reads each request and answers ``answer``
    as JSON (None: accepts the connection and never answers)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            buffered = BufferedByteReceiveStream(stream)
            try:
                head = await buffered.receive_until(b"\r\n\r\n", 65536)
                length = re.search(rb"(?i)content-length:\s*(\d+)", head)
                await buffered.receive_exactly(int(length.group(1)) if length else 0)
                if answer is None:
                    await anyio.sleep_forever()
                await stream.send(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(answer), answer)
                )
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                return

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        yield f"http://127.0.0.1:{port}/mcp"
        group.cancel_scope.cancel()


@pytest.mark.anyio
@pytest.mark.parametrize("call_timeout", [0.5, 1.0, 5.0])
async def test_an_http_server_that_never_answers_its_handshake_fails_the_step_clearly(
    tmp_path: Path, call_timeout: float
) -> None:
    async with raw_http_server(None) as url:
        server = McpServerConfig("docs", url=url, startup_timeout=1.0, call_timeout=call_timeout)
        outcome, _, model, _ = await run_node(tmp_path, [server], [ScriptedResponse("x")])
    assert outcome.status == StageStatus.FAIL
    assert outcome.failure_reason == "MCP server docs: did not answer within 1s of its start"
    assert model.requests == []


@pytest.mark.anyio
async def test_an_http_server_answering_invalid_json_fails_the_step_in_one_line(
    tmp_path: Path,
) -> None:
    garbage = b'{"jsonrpc": "2.0", "id": 0, "result": 7, "extra": {"deep": [1, 2, 3]}}'
    async with raw_http_server(garbage) as url:
        server = McpServerConfig("docs", url=url, startup_timeout=5.0, call_timeout=1.0)
        outcome, _, model, _ = await run_node(tmp_path, [server], [ScriptedResponse("x")])
    assert outcome.status == StageStatus.FAIL
    reason = outcome.failure_reason
    assert reason.startswith("MCP server docs: did not start ("), reason
    assert "\n" not in reason and len(reason) < 400, reason
    assert "Failed to parse JSON response" in reason  # what was wrong, in a line
    assert model.requests == []


@pytest.mark.anyio
async def test_an_http_server_dying_mid_call_fails_the_step(
    tmp_path: Path, http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "s3cret-token")
    server = McpServerConfig(
        "docs",
        url=http_server,
        headers=(("Authorization", "Bearer ${DOCS_TOKEN}"),),
        call_timeout=30.0,
    )
    outcome, _, _, _ = await run_node(
        tmp_path,
        [server],
        [calls(("mcp__docs__exit_now", {})), ScriptedResponse("never reached")],
    )
    assert outcome.status == StageStatus.FAIL
    reason = outcome.failure_reason
    assert reason == "MCP server docs: ended during a call of exit_now", reason
