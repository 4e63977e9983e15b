"""``attractor mcp``: attractor as an MCP server, for Claude Code, Codex or an editor.

Its tools (see :data:`TOOLS`) lint a pipeline, start a run, follow it, answer
its human gates, cancel and resume it, list runs and read a stage's files. They
do what the HTTP server's endpoints do (:class:`~attractor.server.handlers.Handlers`,
the same :class:`~attractor.server.runs.RunManager`): every path is confined to
the root, runs go where ``attractor run`` puts them and start through the
launcher, so a run started here has every bound a CLI run has (its settings,
``--timeout``, budgets, sandbox, the process ledger and crash guard) and can be
resumed from the command line.

Every answer is a JSON object, as ``structuredContent`` and as text. A failure
is a result with ``isError`` and ``{"error": ..., "code": ...}`` (plus
``diagnostics`` for a pipeline that fails lint): never a traceback on the
protocol stream. It speaks MCP over stdio (:func:`serve_stdio`) and, under
``attractor serve``, streamable HTTP at ``/mcp`` behind the server's token
(:func:`http_endpoint`). The ``mcp`` SDK is imported by this module only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from attractor.errors import AttractorError, ValidationError
from attractor.run_status import RunStatus
from attractor.runview.inventory import read_events
from attractor.server.body import Problem
from attractor.server.handlers import Handlers
from attractor.server.output import MAX_SLICE
from attractor.server.runs import ALLOWED_SETTINGS, RunManager
from attractor.version import __version__

LOG = logging.getLogger("attractor.mcp")
#: Events ``status`` returns unless asked for another number (at most :data:`MAX_EVENTS`).
LAST_EVENTS = 20
MAX_EVENTS = 200
#: Bytes of a stage file ``read_stage`` gives unless asked for another number.
READ_LIMIT = 64 * 1024

Json = dict[str, Any]


def _object(properties: Json, required: tuple[str, ...] = ()) -> Json:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_RUN_ID = {"type": "string", "description": "a run id, as run or list_runs gives it"}
_PATH = {"type": "string", "description": "a pipeline file, relative to the server's root"}

#: name -> (description, input schema)
TOOLS: dict[str, tuple[str, Json]] = {
    "lint": (
        "Check a pipeline file; every diagnostic (rule, severity, message, file, line, fix).",
        _object({"path": _PATH}, ("path",)),
    ),
    "run": (
        "Start a run of a pipeline file; returns its run id at once (follow it with status).",
        _object(
            {
                "path": _PATH,
                "settings": {
                    "type": "object",
                    "description": "run settings as the CLI names them: "
                    + ", ".join(sorted(ALLOWED_SETTINGS)),
                },
                "context": {"type": "object", "description": "values for the run's context"},
            },
            ("path",),
        ),
    ),
    "status": (
        "A run's status, current node, nodes, questions waiting at human gates and last events.",
        _object(
            {
                "run_id": _RUN_ID,
                "events": {"type": "integer", "minimum": 0, "maximum": MAX_EVENTS},
            },
            ("run_id",),
        ),
    ),
    "answer": (
        "Answer a question a run waits on at a human gate (its key or label, and a comment).",
        _object(
            {
                "run_id": _RUN_ID,
                "question_id": {"type": "string"},
                "answer": {"type": "string"},
                "comment": {"type": "string"},
            },
            ("run_id", "question_id", "answer"),
        ),
    ),
    "cancel": (
        "Stop a run this server drives; it is saved as interrupted, ready to resume.",
        _object({"run_id": _RUN_ID}, ("run_id",)),
    ),
    "resume": (
        "Continue a stopped run; retry_failed re-runs a failed run's failed node, "
        "from goes back to a node the run entered.",
        _object(
            {"run_id": _RUN_ID, "retry_failed": {"type": "boolean"}, "from": {"type": "string"}},
            ("run_id",),
        ),
    ),
    "list_runs": ("Every run under the server's root, newest first.", _object({})),
    "read_stage": (
        "One node of a run: its state, its attempts, the end of its main stage files "
        "(prompt.md, response.md, status.json, transcript.jsonl, ...) and a listing of every "
        "file it may read. With file: that file (a name from the listing, e.g. tools.log, "
        "mcp-NAME.stderr.log, agent_stderr.txt, acp_terminals/term-1.log) from byte offset, "
        "at most limit bytes; next_offset is where the next slice starts (null: the end). "
        "attempt picks a visit's or attempt's folder (an attempts[].files value).",
        _object(
            {
                "run_id": _RUN_ID,
                "node": {"type": "string"},
                "attempt": {"type": "string", "description": "NODE/vV-aA, as attempts[].files"},
                "file": {"type": "string", "description": "a name from the listing"},
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SLICE},
            },
            ("run_id", "node"),
        ),
    ),
}


class McpTools:
    """The tools, each a method taking the call's arguments and returning a JSON object."""

    def __init__(self, handlers: Handlers) -> None:
        self.handlers = handlers
        self.root = handlers.manager.root

    async def call(self, name: str, arguments: Json) -> types.CallToolResult:
        """Run tool ``name``; every failure is an error result, never an exception."""
        method: Callable[[Json], Awaitable[Json]] | None = getattr(self, f"tool_{name}", None)
        if name not in TOOLS or method is None:
            return _error(f"unknown tool {name!r}; the tools are {', '.join(TOOLS)}", 404)
        try:
            return _result(await method(arguments))
        except Problem as problem:
            return _error(str(problem), problem.status)
        except PermissionError as error:
            return _error(str(error), 403)
        except ValidationError as error:
            return _error(str(error), 400, [d.to_json() for d in error.diagnostics])
        except (AttractorError, ValueError, TypeError, KeyError) as error:
            return _error(str(error) or type(error).__name__, 400)
        except Exception as error:  # the protocol stream must carry an answer, not a crash
            LOG.exception("tool %s failed", name)
            return _error(f"internal error: {type(error).__name__}: {error}", 500)

    # -- the tools -------------------------------------------------------------

    async def tool_lint(self, args: Json) -> Json:
        path = self._pipeline(args)
        relative = path.relative_to(self.root.resolve()).as_posix()
        _, found = await anyio.to_thread.run_sync(self.handlers.check, path)
        diagnostics = [d.to_json() for d in found]
        errors = sum(d.is_error for d in found)
        return {
            "path": relative,
            "ok": errors == 0,
            "errors": errors,
            "warnings": sum(d.severity == "warning" for d in found),
            "diagnostics": diagnostics,
        }

    async def tool_run(self, args: Json) -> Json:
        self._pipeline(args)  # refused outside the root, missing: said before parsing
        body = {"path": _text(args, "path")}
        for key in ("settings", "context"):
            if args.get(key) is not None:
                body[key] = args[key]
        run_id = await self.handlers.start_run(body)
        return {"run_id": run_id, "status": RunStatus.RUNNING}

    async def tool_status(self, args: Json) -> Json:
        path = self.handlers.path_of(_text(args, "run_id"))
        data = await self.handlers.status_of(path)
        count = args.get("events", LAST_EVENTS)
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_EVENTS:
            raise Problem(400, f'"events" must be a whole number from 0 to {MAX_EVENTS}')
        last = await anyio.to_thread.run_sync(_last_events, path, data.get("event_count", 0), count)
        keep = (
            "id", "name", "goal", "status", "current_node", "failure_reason", "started_at",
            "finished_at", "duration", "nodes_done", "tokens", "cost", "progress", "route",
            "nodes", "active", "questions", "error", "path",
        )  # fmt: skip
        return {
            **{key: data[key] for key in keep if key in data},
            "last_events": self.handlers.redactor.value(last),
        }

    async def tool_answer(self, args: Json) -> Json:
        path = self.handlers.path_of(_text(args, "run_id"))
        body = {
            "answer": args.get("answer"),
            "comment": args.get("comment") or "",
            "answered_by": "mcp",
        }
        return self.handlers.answer_question(path, _text(args, "question_id"), body)

    async def tool_cancel(self, args: Json) -> Json:
        path = self.handlers.path_of(_text(args, "run_id"))
        self.handlers.cancel_run(path)
        return {"run_id": path.name, "status": "cancelling"}

    async def tool_resume(self, args: Json) -> Json:
        path = self.handlers.path_of(_text(args, "run_id"))
        body = {key: args[key] for key in ("retry_failed", "from") if args.get(key) is not None}
        run_id = await self.handlers.resume_run(path, body)
        return {"run_id": run_id, "status": RunStatus.RUNNING}

    async def tool_list_runs(self, args: Json) -> Json:
        return {"runs": await self.handlers.runs()}

    async def tool_read_stage(self, args: Json) -> Json:
        path = self.handlers.path_of(_text(args, "run_id"))
        node = _text(args, "node")
        attempt = _text(args, "attempt") if args.get("attempt") is not None else None
        if args.get("file") is None:
            for key in ("offset", "limit"):
                if args.get(key) is not None:
                    raise Problem(400, f'"{key}" pages through a file: name it with "file"')
            return await self.handlers.node_of(path, node, attempt)
        offset = _whole(args, "offset", 0, 0, None)
        limit = _whole(args, "limit", READ_LIMIT, 1, MAX_SLICE)
        return await self.handlers.node_file_slice(
            path, node, attempt, _text(args, "file"), offset, limit
        )

    def _pipeline(self, args: Json) -> Path:
        relative = _text(args, "path")
        path = self.handlers.manager.confine(relative, "path")
        if not path.is_file():
            raise Problem(404, f"path {relative!r}: no such pipeline file under the root")
        return path


def _text(args: Json, key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Problem(400, f'"{key}" must be a non-empty string')
    return value


def _whole(args: Json, key: str, default: int, low: int, high: int | None) -> int:
    value = args.get(key, default)
    if value is None:
        return default
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        top = f" to {high}" if high is not None else " or more"
        raise Problem(400, f'"{key}" must be a whole number from {low}{top}')
    return value


def _last_events(path: Path, count_so_far: int, wanted: int) -> list[Json]:
    if wanted == 0:
        return []
    after = max(0, int(count_so_far) - wanted)
    return [{"id": number, **event} for number, event in read_events(path, after)][-wanted:]


def _result(data: Json) -> types.CallToolResult:
    text = json.dumps(data, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=json.loads(text),
    )


def _error(message: str, code: int, diagnostics: list[Json] | None = None) -> types.CallToolResult:
    data: Json = {"error": message, "code": code}
    if diagnostics is not None:
        data["diagnostics"] = diagnostics
    result = _result(data)
    result.is_error = True
    return result


def build_server(tools: McpTools) -> Server[Any]:
    """The MCP server offering ``tools``."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=about, input_schema=schema)
                for name, (about, schema) in TOOLS.items()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await tools.call(params.name, dict(params.arguments or {}))

    return Server(
        "attractor",
        version=__version__,
        instructions="Lint, run and follow attractor pipelines (DOT files) under this root.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(root: Path, run_flags: dict[str, str] | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes them (or SIGINT, SIGTERM, SIGHUP).

    Runs still going then are cancelled and saved as interrupted.
    """
    manager = RunManager(root, run_flags)
    tools = McpTools(Handlers(manager))
    server = build_server(tools)
    async with anyio.create_task_group() as group:
        manager.attach(group)
        group.start_soon(_stop_on_signal, group.cancel_scope)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        with anyio.CancelScope(shield=True):
            await manager.shutdown()
        group.cancel_scope.cancel()


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for _ in signals:
            scope.cancel()
            return


@contextlib.asynccontextmanager
async def http_endpoint(manager: RunManager) -> AsyncIterator[StreamableHTTPASGIApp]:
    """The streamable HTTP endpoint ``attractor serve`` mounts at ``/mcp``, while open.

    The server's own checks (its token, the Host header of a token-less server)
    guard it like every other path, so the SDK's DNS-rebinding check is off.
    """
    server = build_server(McpTools(Handlers(manager)))
    sessions = StreamableHTTPSessionManager(
        app=server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    async with sessions.run():
        yield StreamableHTTPASGIApp(sessions)


def log_to_stderr() -> None:
    """Log lines go to stderr: stdout carries the protocol only."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
