"""``attractor mcp`` driven by the MCP SDK's own client, over stdio and under ``serve``.

The server is the real command (a subprocess speaking MCP on its stdin/stdout)
or ``attractor serve`` on 127.0.0.1 with its token; the client is the SDK's
``ClientSession``. Runs use the simulate backend and real tool commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.server.serverkit import start_server

GATE = """digraph review {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [shape=parallelogram, tool_command="echo built > out.txt"]
    gate  [shape=hexagon, label="Ship it?"]
    start -> work -> gate
    gate -> exit [label="[Y] Yes"]
    gate -> work [label="[N] No"]
}
"""
SLOW = """digraph slow {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    hold  [shape=parallelogram, tool_command="sleep 60"]
    start -> hold -> exit
}
"""
BROKEN = """digraph broken {
    start [shape=Mdiamond]
    work  [prompt="x"]
    start -> work -> nowhere
}
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    for name, text in (("gate.dot", GATE), ("slow.dot", SLOW), ("broken.dot", BROKEN)):
        (folder / name).write_text(text)
    (tmp_path / "outside.dot").write_text(GATE)
    return folder


def _env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ATTRACTOR_", "OPENAI_"))}
    return {**keep, "PYTHONPATH": str(Path(__file__).parents[2])}


@asynccontextmanager
async def stdio_session(root: Path, cwd: Path | None = None) -> AsyncIterator[ClientSession]:
    """A session with ``attractor mcp --root ROOT``, started in ``cwd`` (default: here)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "attractor", "mcp", "--root", str(root)],
        env=_env(),
        cwd=cwd,
    )
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        with anyio.fail_after(30):
            await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    """(is_error, the structured answer); the text must say the same."""
    with anyio.fail_after(60):
        result = await session.call_tool(tool, arguments)
    data = result.structured_content
    assert isinstance(data, dict)
    assert json.loads(result.content[0].text) == data  # type: ignore[union-attr]
    return result.is_error, data


async def wait_for(
    session: ClientSession, run_id: str, ready: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        _, status = await call(session, "status", run_id=run_id)
        if ready(status):
            return status
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_the_tools_are_listed_with_their_schemas(root: Path) -> None:
    async with stdio_session(root) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    assert {
        "lint",
        "run",
        "status",
        "answer",
        "cancel",
        "resume",
        "list_runs",
        "read_stage",
    } <= set(listed)
    assert listed["lint"].input_schema["required"] == ["path"]
    assert listed["answer"].input_schema["required"] == ["run_id", "question_id", "answer"]
    assert set(listed["resume"].input_schema["properties"]) == {"run_id", "retry_failed", "from"}


@pytest.mark.anyio
async def test_lint_run_follow_answer_and_read_a_stage(root: Path) -> None:
    async with stdio_session(root) as session:
        error, lint = await call(session, "lint", path="broken.dot")
        assert not error and lint["ok"] is False and lint["errors"] >= 1
        assert all({"rule", "line", "message", "fix"} <= set(d) for d in lint["diagnostics"])
        assert (await call(session, "lint", path="gate.dot"))[1]["ok"] is True

        error, started = await call(session, "run", path="gate.dot")
        assert not error
        run_id = started["run_id"]
        waiting = await wait_for(session, run_id, lambda s: bool(s["questions"]))
        assert waiting["current_node"] == "gate" and waiting["status"] == "running"
        assert any(e["type"] == "stage_completed" for e in waiting["last_events"])
        question = waiting["questions"][0]
        error, answered = await call(
            session, "answer", run_id=run_id, question_id=question["id"], answer="Y",
            comment="looks good",
        )  # fmt: skip
        assert not error and answered["id"] == question["id"]
        done = await wait_for(session, run_id, lambda s: s["status"] != "running")
        assert done["status"] == "success"

        _, runs = await call(session, "list_runs")
        assert [r["id"] for r in runs["runs"]] == [run_id]
        error, stage = await call(session, "read_stage", run_id=run_id, node="work")
        assert not error and stage["node"]["state"] == "success" and "status.json" in stage["files"]
    assert (root / "out.txt").read_text() == "built\n"  # worked in the root, as a CLI run does


@pytest.mark.anyio
async def test_read_stage_reaches_every_visit_of_a_node(root: Path) -> None:
    (root / "gate.dot").write_text(GATE.replace("echo built > out.txt", "echo built; date +%N"))
    async with stdio_session(root) as session:
        _, started = await call(session, "run", path="gate.dot")
        run_id = started["run_id"]
        for answer in ("N", "Y"):  # No: work runs a second time
            waiting = await wait_for(session, run_id, lambda s: bool(s["questions"]))
            question = waiting["questions"][0]["id"]
            await call(session, "answer", run_id=run_id, question_id=question, answer=answer)
            await wait_for(session, run_id, lambda s, q=question: all(
                x["id"] != q for x in s["questions"]
            ))  # fmt: skip
        await wait_for(session, run_id, lambda s: s["status"] == "success")
        _, stage = await call(session, "read_stage", run_id=run_id, node="work")
        folders = [attempt["files"] for attempt in stage["attempts"]]
        assert len(folders) == 2, stage["attempts"]
        outputs = []
        for folder in folders:
            error, seen = await call(
                session, "read_stage", run_id=run_id, node="work", attempt=folder
            )
            assert not error and seen["files_of"] == folder
            assert "stdout.txt" in [entry["name"] for entry in seen["listing"]]
            error, out = await call(
                session, "read_stage", run_id=run_id, node="work", attempt=folder,
                file="stdout.txt",
            )  # fmt: skip
            assert not error and out["text"].startswith("built\n") and out["next_offset"] is None
            outputs.append(out["text"])
        assert outputs[0] != outputs[1]  # two visits, two folders
        error, refused = await call(
            session, "read_stage", run_id=run_id, node="work", attempt="exit/v1-a1"
        )
        assert error and refused["code"] == 404
        error, refused = await call(session, "read_stage", run_id=run_id, node="work", limit=5)
        assert error and refused["code"] == 400 and "file" in refused["error"]


@pytest.mark.anyio
async def test_cancel_then_resume_a_run(root: Path) -> None:
    async with stdio_session(root) as session:
        _, started = await call(session, "run", path="slow.dot")
        run_id = started["run_id"]
        await wait_for(session, run_id, lambda s: s["current_node"] == "hold")
        error, cancelled = await call(session, "cancel", run_id=run_id)
        assert not error and cancelled["status"] == "cancelling"
        stopped = await wait_for(session, run_id, lambda s: not s["active"])
        assert stopped["status"] == "interrupted"
        error, again = await call(session, "resume", run_id=run_id)
        assert not error and again["run_id"] == run_id
        await wait_for(session, run_id, lambda s: s["active"] and s["current_node"] == "hold")
        assert (await call(session, "cancel", run_id=run_id))[0] is False
        await wait_for(session, run_id, lambda s: not s["active"])
        error, refused = await call(session, "resume", run_id=run_id, retry_failed=True)
        assert error and refused["code"] == 409 and "not failed" in refused["error"]


@pytest.mark.anyio
async def test_bad_requests_are_structured_errors(root: Path) -> None:
    async with stdio_session(root) as session:
        error, outside = await call(session, "run", path="../outside.dot")
        assert error and outside["code"] == 403 and "outside" in outside["error"]
        error, lint_outside = await call(session, "lint", path="/etc/passwd")
        assert error and lint_outside["code"] == 403
        error, broken = await call(session, "run", path="broken.dot")
        assert error and broken["code"] == 400 and broken["diagnostics"]
        error, unknown = await call(session, "status", run_id="no-such-run")
        assert error and unknown["code"] == 404 and "no run 'no-such-run'" in unknown["error"]
        error, missing = await call(session, "answer", run_id="no-such-run")
        assert error and missing["code"] == 404  # the run is looked up first
        error, nothing = await call(session, "cancel", run_id="../..")
        assert error and nothing["code"] == 404
        error, bad = await call(session, "run", path="gate.dot", settings={"sandbox": "none"})
        assert error and "unknown run setting(s) sandbox" in bad["error"]
        # The session still works after every refusal.
        assert (await call(session, "list_runs"))[1] == {"runs": []}


TOOLS_SERVER = Path(__file__).parents[1] / "agent" / "mcp_servers" / "tools_server.py"
USES_MCP = """digraph uses_mcp {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [prompt="look it up", mcp="tracker", max_turns=4]
    start -> work -> exit
}
"""


@pytest.mark.anyio
async def test_a_server_started_elsewhere_runs_with_the_roots_config(
    root: Path, tmp_path: Path
) -> None:
    """Claude Code or Codex start ``attractor mcp`` in their own folder: the root's
    attractor.toml (its MCP servers, its settings) is the one a run reads."""
    (root / "attractor.toml").write_text(
        f"max_turns = 3\n[mcp_servers.tracker]\ncommand = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(str(TOOLS_SERVER))}, "stdio"]\n'
    )
    (root / "uses_mcp.dot").write_text(USES_MCP.replace(", max_turns=4", ""))
    call_echo = {"name": "mcp__tracker__echo", "arguments": {"text": "from the root ✓ é"}}
    script = {"responses": [{"text": "", "tool_calls": [call_echo]}, {"text": "done"}]}
    (root / "script.json").write_text(json.dumps(script))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with stdio_session(root, cwd=elsewhere) as session:
        assert (await call(session, "lint", path="uses_mcp.dot"))[1]["ok"] is True
        settings = {"backend": "scripted:script.json"}
        error, started = await call(session, "run", path="uses_mcp.dot", settings=settings)
        assert not error, started
        done = await wait_for(session, started["run_id"], lambda s: s["status"] != "running")
        assert done["status"] == "success", done
        run_id = started["run_id"]
        _, stage = await call(session, "read_stage", run_id=run_id, node="work")
        listed = {entry["name"]: entry["size"] for entry in stage["listing"]}
        pieces, offset = [], 0
        while offset is not None:  # tools.log, 7 bytes at a time
            error, piece = await call(
                session, "read_stage", run_id=run_id, node="work", file="tools.log",
                offset=offset, limit=7,
            )  # fmt: skip
            assert not error and piece["size"] == listed["tools.log"], piece
            pieces.append(piece["text"])
            offset = piece["next_offset"]
        error, stderr_log = await call(
            session, "read_stage", run_id=run_id, node="work", file="mcp-tracker.stderr.log"
        )
        assert not error and stderr_log["size"] == listed["mcp-tracker.stderr.log"]
        for bad in ("../manifest.json", "pipeline.dot", "/etc/passwd"):
            error, refused = await call(session, "read_stage", run_id=run_id, node="work", file=bad)
            assert error and refused["code"] == 404, refused
    status = json.loads(stage["files"]["status.json"])
    assert status["turns_used"] == 2
    tools_log = next((root / ".attractor" / "runs").glob("*/work/tools.log")).read_text()
    assert "echo: from the root ✓ é" in tools_log
    assert "".join(pieces) == tools_log  # every slice ends on a whole character
    manifest = json.loads(next((root / ".attractor" / "runs").glob("*/manifest.json")).read_text())
    assert manifest["settings"]["max_turns"] == "3"  # the root's config, not the cwd's


def _ordered(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(found, key=lambda d: (d["file"], d["line"], d["column"], d["rule"]))


@pytest.mark.anyio
async def test_lint_and_run_refuse_what_attractor_lint_refuses(root: Path) -> None:
    (root / "attractor.toml").write_text('[mcp_servers.docs]\nurl = "ftp://x"\n')
    (root / "sub").mkdir()
    (root / "sub" / "p.dot").write_text(
        USES_MCP.replace('mcp="tracker"', 'mcp="docs,ghost", backend="acp:ghost"')
    )
    cli = await anyio.run_process(
        [sys.executable, "-m", "attractor", "lint", "--format", "json", "sub/p.dot"],
        cwd=root, env=_env(), check=False,
    )  # fmt: skip
    expected = _ordered(json.loads(cli.stdout.decode()))
    assert cli.returncode == 1 and len(expected) == 3, expected
    async with stdio_session(root) as session:
        error, lint = await call(session, "lint", path="sub/p.dot")
        assert not error and lint["ok"] is False and lint["errors"] == 3
        assert _ordered(lint["diagnostics"]) == expected
        error, refused = await call(session, "run", path="sub/p.dot")
        assert error and refused["code"] == 400
        assert _ordered(refused["diagnostics"]) == expected
        assert (await call(session, "list_runs"))[1] == {"runs": []}
    where = {(d["file"], d["line"]) for d in expected}
    assert ("attractor.toml", 2) in where and ("sub/p.dot", 4) in where


def test_serve_started_elsewhere_runs_and_refuses_with_the_roots_config(
    root: Path, tmp_path: Path
) -> None:
    (root / "attractor.toml").write_text(
        'max_turns = 3\n[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\n'
    )
    (root / "uses_mcp.dot").write_text(USES_MCP.replace('mcp="tracker"', 'mcp="ghost"'))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = start_server(root, cwd=elsewhere)
    try:
        with server.client() as client:
            refused = client.post("/pipelines", json={"path": "uses_mcp.dot"})
            started = client.post("/pipelines", json={"path": "slow.dot"})
            assert started.status_code == 201, started.text
            client.post(f"/pipelines/{started.json()['id']}/cancel")
    finally:
        server.stop()
    assert refused.status_code == 400
    [problem] = refused.json()["diagnostics"]
    assert (problem["file"], problem["line"]) == ("uses_mcp.dot", 4)
    assert problem["message"].endswith("is not defined in attractor.toml (defined: docs)")
    manifest = json.loads(next((root / ".attractor" / "runs").glob("*/manifest.json")).read_text())
    assert manifest["settings"]["max_turns"] == "3"


@pytest.mark.anyio
async def test_streamable_http_under_serve_with_its_token(root: Path) -> None:
    server = start_server(root)
    try:
        headers = {"Authorization": f"Bearer {server.token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as client,
            streamable_http_client(f"{server.url}/mcp", http_client=client) as streams,
            ClientSession(*streams) as session,
        ):
            with anyio.fail_after(30):
                await session.initialize()
            error, lint = await call(session, "lint", path="gate.dot")
            assert not error and lint["ok"]
            _, started = await call(session, "run", path="gate.dot")
            await wait_for(session, started["run_id"], lambda s: bool(s["questions"]))
        with server.client() as plain:
            refused = plain.post("/mcp", json={}, headers={"Authorization": "Bearer wrong"})
        assert refused.status_code == 401
    finally:
        server.stop()


def _without_sdk(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``mcp`` package cannot be imported (found before the real one)."""
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('No module named mcp')\n")
    return {**_env(), "PYTHONPATH": f"{tmp_path}{os.pathsep}{Path(__file__).parents[2]}"}


def test_without_the_sdk_attractor_mcp_says_which_extra_to_install(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "attractor", "mcp", "--root", str(tmp_path)],
        env=_without_sdk(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: attractor mcp needs the MCP SDK (No module named mcp); "
        "install it with: pip install 'attractor[mcp]'"
    ]
    assert done.stdout == ""


def test_without_the_sdk_a_run_with_mcp_servers_says_which_extra_to_install(
    tmp_path: Path,
) -> None:
    (tmp_path / "attractor.toml").write_text('[mcp_servers.docs]\nurl = "http://127.0.0.1:9/"\n')
    (tmp_path / "p.dot").write_text(
        'digraph p { start [shape=Mdiamond] exit [shape=Msquare] w [prompt="x", mcp="docs"] '
        "start -> w -> exit }\n"
    )
    (tmp_path / "s.json").write_text('{"responses": [{"text": "done"}]}')
    done = subprocess.run(
        [sys.executable, "-m", "attractor", "run", "p.dot", "--backend", "scripted:s.json"],
        env=_without_sdk(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "MCP support needs the mcp extra: pip install 'attractor[mcp]'" in done.stderr


def test_garbage_on_stdin_gets_no_traceback_on_stdout(root: Path) -> None:
    """Every line the server writes is a JSON-RPC message, whatever it was sent."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    calls = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "lint", "arguments": {"path": 7}}},
    ]  # fmt: skip
    sent = "\n".join(
        ["this is not json", json.dumps(initialize), '{"jsonrpc": "2.0", "id": [1]}']
        + [json.dumps(c) for c in calls]
    )
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "attractor", "mcp", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(sent + "\n")
        process.stdin.flush()
        try:
            answered: set[object] = set()
            while not {1, 2, 3} <= answered:
                line = process.stdout.readline()  # the test's timeout bounds a hang
                assert line, "the server ended before answering"
                lines.append(line)
                answered.add(json.loads(line).get("id"))
        finally:
            process.stdin.close()
            lines += process.stdout.read().splitlines()
            process.wait(timeout=60)
    assert process.returncode == 0
    answers = [json.loads(line) for line in lines if line.strip()]
    assert all(a.get("jsonrpc") == "2.0" for a in answers)
    by_id = {a.get("id"): a for a in answers}
    assert by_id[2]["result"]["isError"] and by_id[2]["result"]["structuredContent"]["code"] == 400
    assert by_id[3]["result"]["structuredContent"]["error"] == '"path" must be a non-empty string'
    assert not any("Traceback" in line for line in lines)
