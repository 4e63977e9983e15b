"""A step's MCP servers, opened for the step and offered to the model as tools.

:func:`open_mcp_tools` starts (stdio) or connects to (streamable HTTP) every
server a node names, lists its tools and gives them back as
:class:`~attractor.agent.tools.Tool` objects named ``mcp__NAME__TOOL`` with
the server's own JSON schema. They then run like the built-in tools: through
the tool hooks, into tools.log and the transcript, truncated for the model.
When the step ends, every server is closed (a stdio server's process group is
stopped, shielded: see :mod:`attractor.proc.service`).

Every wait is bounded: the start and handshake by the server's
``startup_timeout``, each call by its ``call_timeout``. A server that does not
start, does not answer in time, writes something that is not MCP, or exits is
an :class:`~attractor.errors.McpServerError`, which ends the step as a failure;
a tool's own error (``isError``) goes back to the model like any tool error.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
from anyio.abc import Process
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from attractor.agent.mcp.stdio import MAX_MESSAGE, Watch, process_transport
from attractor.agent.tools.base import Tool, ToolContext
from attractor.errors import McpServerError, ToolError
from attractor.llm.types import ToolDefinition
from attractor.mcp_config import McpServerConfig
from attractor.proc.environment import ExecutionEnvironment, LocalEnvironment
from attractor.proc.process import CAPTURE_LIMIT
from attractor.proc.service import open_service
from attractor.valueclass import frozen, mutable

#: The prefix of every MCP tool's name as the model sees it.
PREFIX = "mcp__"
#: What every provider accepts as a tool name.
_MODEL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Bytes of a server's stderr quoted in a failure.
_STDERR_TAIL = 600
#: Seconds the HTTP client waits beyond the server's own bounds, so that they
#: (``startup_timeout``, ``call_timeout``) end a wait and say which one did.
_HTTP_SLACK = 5.0
#: Errors a transport's other tasks end with once one of them failed.
_AFTERMATH = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)

Warn = Callable[[str], None]
Patterns = tuple[tuple[str, str], ...]


def tool_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL``: the name the model calls the tool by."""
    return f"{PREFIX}{server}__{tool}"


@frozen
class McpSelection:
    """The servers of one step (``${VAR}`` expanded) and its allow and deny lists."""

    servers: tuple[McpServerConfig, ...]
    allow: Patterns = ()
    deny: Patterns = ()

    def offers(self, server: str, tool: str) -> bool:
        """Whether the step offers ``tool`` of ``server``."""
        allowed = [pattern for name, pattern in self.allow if name == server]
        if allowed and not any(fnmatch.fnmatchcase(tool, p) for p in allowed):
            return False
        return not any(n == server and fnmatch.fnmatchcase(tool, p) for n, p in self.deny)


@mutable
class _Connection:
    server: McpServerConfig
    session: ClientSession
    watch: Watch
    process: Process | None = None
    stderr: Path | None = None
    tools: list[mcp_types.Tool] = field(default_factory=list)

    def failure(self, what: str) -> McpServerError:
        """The step's failure: ``what`` happened, with why (if seen) and its stderr's end."""
        reason = what + (f": {self.watch.problem}" if self.watch.problem else "")
        if self.process is not None and self.process.returncode is not None:
            reason += f" (exit code {self.process.returncode})"
        tail = _tail(self.stderr)
        if tail:
            reason += f"; its stderr ({self.stderr}) ends: {tail}"
        return McpServerError(self.server.name, reason)

    async def exited(self) -> None:
        """Give a process that closed its output a moment to report its exit."""
        if self.process is not None:
            with anyio.move_on_after(1.0):
                await self.process.wait()


@asynccontextmanager
async def open_mcp_tools(
    selection: McpSelection,
    *,
    environment: ExecutionEnvironment | None,
    workdir: Path,
    stage_dir: Path,
    kill_grace: float = 2.0,
    warn: Warn = lambda message: None,
) -> AsyncIterator[list[Tool]]:
    """Open every server of ``selection``; the tools they offer, until the step ends.

    Raises:
        McpServerError: a server failed to start or to answer (bounded).
    """
    env = environment if environment is not None else LocalEnvironment(workdir)
    names = ", ".join(server.name for server in selection.servers)
    try:
        async with AsyncExitStack() as stack:
            tools: list[Tool] = []
            for server in selection.servers:
                names = server.name
                connection = await _open(stack, server, env, workdir, stage_dir, kill_grace)
                await _handshake(connection)
                tools += _tools(connection, selection, warn)
            names = ", ".join(server.name for server in selection.servers)
            yield tools
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap what passes through them: the step sees the error itself.
        raise _as_failure(_single(group), names) from None
    except (httpx2.HTTPError, OSError) as error:
        raise _as_failure(error, names) from None


def _as_failure(error: BaseException, names: str) -> BaseException:
    """A transport's own error (connection refused, ...) as the step's failure."""
    if isinstance(error, httpx2.HTTPError | OSError):
        return McpServerError(names, f"failed: {_brief(error)}")
    return error


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error the step ends with, from inside nested groups.

    A cancellation (or Ctrl-C) among them leaves the group as it is. Else our
    own :class:`McpServerError` wins (the transport's tasks fail too when a
    bound of ours ends the wait), then the one error there is, then a transport
    error whose companions are only its aftermath.
    """
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        error = pending.pop()
        if isinstance(error, BaseExceptionGroup):
            pending += error.exceptions
        else:
            leaves.append(error)
    if any(
        not isinstance(leaf, Exception) or isinstance(leaf, anyio.get_cancelled_exc_class())
        for leaf in leaves
    ):
        return group  # a cancellation goes on as it came
    ours = [leaf for leaf in leaves if isinstance(leaf, McpServerError)]
    if ours:
        return ours[0]
    if len(leaves) == 1:
        return leaves[0]
    transport = [leaf for leaf in leaves if isinstance(leaf, httpx2.HTTPError | OSError)]
    others = [leaf for leaf in leaves if leaf not in transport]
    if transport and all(isinstance(leaf, _AFTERMATH) for leaf in others):
        return transport[0]
    return group


async def _open(
    stack: AsyncExitStack,
    server: McpServerConfig,
    env: ExecutionEnvironment,
    workdir: Path,
    stage_dir: Path,
    kill_grace: float,
) -> _Connection:
    if server.url is not None:
        return await _open_http(stack, server, server.url)
    watch = Watch()
    if not isinstance(env, LocalEnvironment):
        raise McpServerError(
            server.name, f"a stdio server cannot run in the {env.name} environment"
        )
    stderr = stage_dir / f"mcp-{server.name}.stderr.log"
    argv = [*env.wrap(workdir), str(server.command), *server.args]
    try:
        process = await stack.enter_async_context(
            open_service(
                argv,
                cwd=workdir,
                env=env.env(dict(server.env)),
                stderr_path=stderr,
                kill_grace=kill_grace,
            )
        )
    except OSError as error:
        raise McpServerError(
            server.name, f"cannot start {server.command!r}: {error.strerror or error}"
        ) from None
    streams = await stack.enter_async_context(process_transport(process, watch))
    session = await stack.enter_async_context(ClientSession(*streams))
    return _Connection(server, session, watch, process, stderr)


async def _open_http(stack: AsyncExitStack, server: McpServerConfig, url: str) -> _Connection:
    """A streamable HTTP server, its headers sent with every request.

    The client's own timeouts lie beyond the server's bounds: the handshake's
    ``startup_timeout`` and each call's ``call_timeout`` (anyio scopes) are what
    end a wait on a server that does not answer, with a message that says so.
    """
    longest = max(server.startup_timeout, server.call_timeout) + _HTTP_SLACK
    client = httpx2.AsyncClient(
        headers=dict(server.headers),
        timeout=httpx2.Timeout(server.startup_timeout + _HTTP_SLACK, read=longest),
    )
    await stack.enter_async_context(client)
    streams = await stack.enter_async_context(
        streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE)
    )
    session = await stack.enter_async_context(ClientSession(*streams))
    return _Connection(server, session, Watch())


async def _handshake(connection: _Connection) -> None:
    """Initialize and list the tools, within the server's ``startup_timeout``."""
    server = connection.server
    with anyio.move_on_after(server.startup_timeout) as scope:
        try:
            await connection.session.initialize()
            listed = await connection.session.list_tools()
            tools = list(listed.tools)
            cursor = listed.next_cursor
            while cursor:
                page = await connection.session.list_tools(
                    params=mcp_types.PaginatedRequestParams(cursor=cursor)
                )
                tools += page.tools
                cursor = page.next_cursor
        except Exception as error:  # refused, unreachable, or an answer that is not MCP
            await connection.exited()
            raise connection.failure(f"did not start ({_brief(error)})") from None
    if scope.cancelled_caught:
        raise connection.failure(f"did not answer within {server.startup_timeout:g}s of its start")
    connection.tools = tools


def _tools(connection: _Connection, selection: McpSelection, warn: Warn) -> list[Tool]:
    server = connection.server.name
    seen: set[str] = set()
    offered: list[Tool] = []
    for tool in connection.tools:
        if not selection.offers(server, tool.name):
            continue
        name = tool_name(server, tool.name)
        if name in seen:
            raise McpServerError(
                server,
                f"declares the tool {tool.name!r} twice; leave one out with "
                f"mcp_deny={name} or fix the server",
            )
        seen.add(name)
        if not _MODEL_NAME.fullmatch(name):
            warn(
                f"MCP tool {name!r} is not offered: a model accepts tool names of letters, "
                "digits, _ and - (at most 64 characters)"
            )
            continue
        offered.append(_tool(connection, tool, name))
    _unmatched(connection, selection, warn)
    return offered


def _unmatched(connection: _Connection, selection: McpSelection, warn: Warn) -> None:
    server = connection.server.name
    names = [tool.name for tool in connection.tools]
    for name, pattern in selection.allow:
        if name == server and not fnmatch.filter(names, pattern):
            warn(
                f"mcp_allow names {tool_name(server, pattern)}, which MCP server {server} "
                f"does not offer (it offers: {', '.join(names) or 'no tools'})"
            )


def _tool(connection: _Connection, tool: mcp_types.Tool, name: str) -> Tool:
    schema: dict[str, Any] = dict(tool.input_schema or {"type": "object", "properties": {}})
    definition = ToolDefinition(
        name, tool.description or f"{tool.name} (MCP server {connection.server.name})", schema
    )

    async def run(context: ToolContext, arguments: dict[str, Any]) -> str:
        return await _call(connection, tool.name, arguments)

    return Tool(definition, run, checked=False)


async def _call(connection: _Connection, tool: str, arguments: dict[str, Any]) -> str:
    timeout = connection.server.call_timeout
    result: mcp_types.CallToolResult | None = None
    with anyio.move_on_after(timeout):
        try:
            result = await connection.session.call_tool(tool, arguments)
        except MCPError as error:
            if error.error.code == mcp_types.CONNECTION_CLOSED:
                await connection.exited()
                raise connection.failure(f"ended during a call of {tool}") from None
            raise ToolError(f"the server refused the call: {error.error.message}") from None
        except Exception as error:  # the connection failed, or the answer is not MCP
            raise connection.failure(f"failed during a call of {tool} ({_brief(error)})") from None
    if result is None:
        raise connection.failure(f"did not answer a call of {tool} within {timeout:g}s")
    text = _capped(result_text(result))
    if result.is_error:
        raise ToolError(text or "the tool reported an error")
    return text


def result_text(result: mcp_types.CallToolResult) -> str:
    """What the model is shown of a result: its text, and a note for anything else."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(
                f"[{block.type} ({block.mime_type}), {len(block.data)} base64 characters not shown]"
            )
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(
                text if isinstance(text, str) else f"[resource {resource.uri} (binary) not shown]"
            )
        else:
            parts.append(f"[{block.type}: {getattr(block, 'uri', '')}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    return "\n".join(parts)


def _capped(text: str) -> str:
    """At most what a shell command's output may be (the rest would only fill the logs)."""
    if len(text) <= CAPTURE_LIMIT:
        return text
    dropped = len(text) - CAPTURE_LIMIT
    return text[:CAPTURE_LIMIT] + f"\n[{dropped} more characters of the MCP result dropped]"


def _brief(error: BaseException) -> str:
    """One short line: an MCP error's message, else the error's type and message (the
    first line of each, cut: a validation error's dump stays out of status.json)."""
    if isinstance(error, MCPError):
        return _first_line(error.error.message) or "an MCP error"
    first = _first_line(str(error))
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _first_line(text: str, limit: int = 200) -> str:
    lines = text.strip().splitlines()
    first = lines[0].strip() if lines else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _tail(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - _STDERR_TAIL))
            data = fh.read()
    except OSError:
        return ""
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line.strip("│╭╮╰╯─ ")]
    return lines[-1][:200] if lines else ""
