"""A real ACP agent, written with the SDK's agent side, that follows a script.

Started as ``python scripted_agent.py SCRIPT LOG`` (with ``SCRIPTED_ACP_MCP_HTTP=1``
in its environment it declares it takes HTTP MCP servers). SCRIPT is a JSON file: a
list of prompt turns, each a list of actions (one prompt consumes one turn):

- ``{"do": "say", "text": "..."}``: an agent message chunk;
- ``{"do": "think"}``: a thought chunk;
- ``{"do": "read"|"write"|"run", ...}``: a tool call of kind read, edit or
  execute; with ``"ask": true`` it first asks permission (and skips the work
  when refused); the work goes through the client (fs/read_text_file,
  fs/write_text_file, terminal/create + wait + output + release); a ``run``
  with ``"instead": {"command": C, "args": [...]}`` asks about its own command
  and then runs that one;
- ``{"do": "cost", "usd": 0.5}``: a usage update with the session's cost;
- ``{"do": "exit", "code": 3}``: exit at once, mid-turn;
- ``{"do": "hang"}``: start a child that sleeps, then never answer (cancel ignored);
  with ``"once": PATH``, only when PATH does not exist yet (it is created);
- ``{"do": "garbage"}``: write a line that is not JSON-RPC to stdout;
- ``{"do": "touch", "path": P}``: the agent writes P itself (not through the client);
- ``{"do": "env", "names": [...]}``: log those variables of its environment;
- ``{"do": "spew", "megabytes": N}``: write N MB to its stderr;
- ``{"do": "start", "command": C, "args": [...]}``: a terminal it never waits for
  (once its first line of output is in);
- ``{"do": "end", "stop": "end_turn", "tokens": [in, out]}``: how the turn ends.

Everything the agent saw (its pid, the session's cwd and MCP servers, prompts, permission
answers, file contents, command output, errors, cancels) goes to LOG as JSON lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from acp import (
    PROTOCOL_VERSION,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    Cost,
    EnvVariable,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
    Usage,
    UsageUpdate,
)

SCRIPT = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
LOG = Path(sys.argv[2])
_OPTIONS = [
    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]
_KINDS = {"read": "read", "write": "edit", "run": "execute"}


def log(**entry: Any) -> None:
    with LOG.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def first_time(marker: str | None) -> bool:
    """True unless ``marker`` names a file that exists (which is then created)."""
    if marker is None:
        return True
    if Path(marker).exists():
        return False
    Path(marker).touch()
    return True


def touch(path: str) -> None:
    try:
        Path(path).write_text("agent was here\n", encoding="utf-8")
        log(touched=path, ok=True)
    except OSError as exc:
        log(touched=path, ok=False, error=str(exc))


class ScriptedAgent:
    def __init__(self) -> None:
        self.conn: Client | None = None
        self.turns = iter(SCRIPT)
        self.calls = 0
        self.cancelled = False

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        caps = kwargs.get("client_capabilities")
        log(pid=os.getpid(), initialize=protocol_version, fs=caps.fs.read_text_file if caps else 0)
        http = os.environ.get("SCRIPTED_ACP_MCP_HTTP") == "1"
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(mcp_capabilities=McpCapabilities(http=http)),
            agent_info=Implementation(name="scripted", version="1.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        servers = kwargs.get("mcp_servers") or []
        log(cwd=cwd, mcp=[server.model_dump(exclude_none=True) for server in servers])
        return NewSessionResponse(session_id="s1")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled = True
        log(cancel=session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        log(prompt="".join(getattr(block, "text", "") for block in prompt))
        for action in next(self.turns, [{"do": "end"}]):
            if self.cancelled:
                return PromptResponse(stop_reason="cancelled")
            if action["do"] == "end":
                tokens = action.get("tokens")
                usage = None
                if tokens:
                    usage = Usage(
                        total_tokens=sum(tokens), input_tokens=tokens[0], output_tokens=tokens[1]
                    )
                return PromptResponse(stop_reason=action.get("stop", "end_turn"), usage=usage)
            await self.act(session_id, action)
        return PromptResponse(stop_reason="cancelled" if self.cancelled else "end_turn")

    async def act(self, sid: str, action: dict[str, Any]) -> None:
        assert self.conn is not None
        what = action["do"]
        if what == "say":
            await self.conn.session_update(sid, update_agent_message_text(action["text"]))
        elif what == "think":
            await self.conn.session_update(sid, update_agent_thought_text("thinking"))
        elif what in _KINDS:
            await self.tool(sid, what, action)
        elif what == "cost":
            cost = Cost(amount=action["usd"], currency="USD")
            await self.conn.session_update(
                sid, UsageUpdate(session_update="usage_update", used=10, size=1000, cost=cost)
            )
        elif what == "exit":
            log(exiting=action.get("code", 3))
            os._exit(action.get("code", 3))
        elif what == "hang":
            if not first_time(action.get("once")):
                return  # hung last time: go on now
            child = subprocess.Popen(["sleep", "1000"])  # noqa: ASYNC220 (a test agent)
            log(child_pid=child.pid)
            await anyio.sleep_forever()
        elif what == "touch":  # the agent's own write, not through the client
            touch(action["path"])
        elif what == "start":  # a terminal left running when the turn ends
            made = await self.conn.create_terminal(sid, action["command"], args=action["args"])
            output = ""
            with anyio.fail_after(30):
                while not output.endswith("\n"):  # its first line says it runs
                    await anyio.sleep(0.05)
                    output = (await self.conn.terminal_output(sid, made.terminal_id)).output
            log(started=made.terminal_id, first_line=output.strip())
        elif what == "spew":
            line = b"agent noise " * 80 + b"\n"
            for _ in range(action["megabytes"] * 1024 * 1024 // len(line) + 1):
                os.write(2, line)
        elif what == "env":
            log(env={name: os.environ.get(name) for name in action["names"]})
        elif what == "garbage":
            os.write(1, b"Loading model weights... done\n")
            await anyio.sleep_forever()

    async def tool(self, sid: str, what: str, action: dict[str, Any]) -> None:
        assert self.conn is not None
        self.calls += 1
        call_id = f"call-{self.calls}"
        kind = _KINDS[what]
        title = f"{what} {action.get('path') or action.get('command')}"
        await self.conn.session_update(
            sid,
            start_tool_call(call_id, title, kind=kind, status="pending", raw_input=action),  # type: ignore[arg-type]
        )
        if action.get("ask"):
            answer = await self.conn.request_permission(
                sid,
                ToolCallUpdate(tool_call_id=call_id, title=title, kind=kind),
                _OPTIONS,  # type: ignore[arg-type]
            )
            outcome = answer.outcome
            allowed = outcome.outcome == "selected" and getattr(outcome, "option_id", "") == "yes"
            log(permission=what, allowed=allowed)
            if not allowed:
                await self.finish(sid, call_id, "permission refused", failed=True)
                return
        try:
            result = await self.work(sid, what, action)
        except RequestError as exc:
            log(error=what, message=str(exc), data=exc.data)
            await self.finish(sid, call_id, f"error: {exc.data}", failed=True)
            return
        await self.finish(sid, call_id, result, failed=False)

    async def work(self, sid: str, what: str, action: dict[str, Any]) -> str:
        assert self.conn is not None
        if what == "read":
            read = await self.conn.read_text_file(sid, action["path"])
            log(read=action["path"], content=read.content)
            return read.content
        if what == "write":
            await self.conn.write_text_file(sid, action["path"], action["content"])
            log(wrote=action["path"])
            return f"wrote {action['path']}"
        ran = action.get("instead", action)
        made = await self.conn.create_terminal(
            sid,
            ran["command"],
            args=ran.get("args"),
            cwd=action.get("cwd"),
            env=[EnvVariable(name=k, value=v) for k, v in action.get("env", {}).items()],
            output_byte_limit=action.get("limit"),
        )
        done = await self.conn.wait_for_terminal_exit(sid, made.terminal_id)
        output = await self.conn.terminal_output(sid, made.terminal_id)
        await self.conn.release_terminal(sid, made.terminal_id)
        log(
            ran=action["command"],
            exit_code=done.exit_code,
            output=output.output,
            truncated=output.truncated,
        )
        return output.output

    async def finish(self, sid: str, call_id: str, text: str, *, failed: bool) -> None:
        assert self.conn is not None
        await self.conn.session_update(
            sid,
            update_tool_call(
                call_id,
                status="failed" if failed else "completed",
                content=[tool_content(text_block(text))],
            ),
        )


async def main() -> None:
    await run_agent(ScriptedAgent())  # type: ignore[arg-type]


if __name__ == "__main__":
    anyio.run(main)
