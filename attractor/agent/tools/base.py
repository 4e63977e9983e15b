"""What a tool is, and the registry that runs them for the agent loop."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from attractor import redact
from attractor.errors import McpServerError, ToolError
from attractor.llm.types import ToolCall, ToolDefinition
from attractor.proc.environment import ExecutionEnvironment, LocalEnvironment
from attractor.valueclass import frozen


@frozen
class ToolContext:
    """What every tool call may use: where it runs and the shell limits."""

    workdir: Path
    shell_timeout_cap: float = 600.0
    kill_grace: float = 2.0
    #: Where commands run (the shell tool, hooks); None: locally, environment filtered.
    environment: ExecutionEnvironment | None = None

    def commands(self) -> ExecutionEnvironment:
        """The environment commands run in."""
        if self.environment is not None:
            return self.environment
        return LocalEnvironment(self.workdir)

    def files(self) -> ExecutionEnvironment:
        """The environment the file tools work through, confined to this context's workdir
        (a subagent's may be a folder of the step's)."""
        return self.commands().within(self.workdir)


ToolFunction = Callable[[ToolContext, dict[str, Any]], Awaitable[str]]


@frozen
class Tool:
    """A tool: its definition offered to the model and the function that runs it.

    ``read_only`` tools change nothing, so calls of them that arrive in one reply
    may run at the same time. ``checked``: the arguments are checked against the
    (flat) schema before the call; an MCP server's tool checks its own.
    """

    definition: ToolDefinition
    run: ToolFunction
    read_only: bool = False
    checked: bool = True

    def renamed(self, name: str) -> Tool:
        """The same tool offered under another name."""
        return replace(self, definition=replace(self.definition, name=name))

    @property
    def name(self) -> str:
        return self.definition.name


@frozen
class ToolResult:
    """The full output of one call, and whether it is an error report."""

    output: str
    is_error: bool = False


def schema(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    """A JSON schema for an object of ``properties``."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def check_arguments(arguments: dict[str, Any], parameters: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` against a flat object schema, or None."""
    properties: dict[str, Any] = parameters.get("properties", {})
    missing = [k for k in parameters.get("required", []) if k not in arguments]
    if missing:
        return "missing required argument(s): " + ", ".join(missing)
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        return f"unknown argument(s): {', '.join(unknown)}; expected {', '.join(properties)}"
    for key, value in arguments.items():
        kind = properties[key].get("type")
        allowed = _JSON_TYPES.get(kind, (object,))
        # bool is an int in Python, but not a JSON integer.
        if not isinstance(value, allowed) or (isinstance(value, bool) and kind != "boolean"):
            return f"argument {key!r} must be a {kind}"
    return None


class ToolRegistry:
    """The tools offered to one session; runs calls and turns failures into results."""

    def __init__(self, tools: Iterable[Tool], aliases: dict[str, str] | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._aliases = dict(aliases or {})

    def definitions(self) -> tuple[ToolDefinition, ...]:
        return tuple(tool.definition for tool in self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(self._aliases.get(name, name))

    def with_tools(self, *tools: Tool) -> ToolRegistry:
        """A registry with ``tools`` added (a tool of the same name is replaced)."""
        return ToolRegistry([*self._tools.values(), *tools], self._aliases)

    def without(self, *names: str) -> ToolRegistry:
        """A registry without the tools called ``names``."""
        kept = [tool for name, tool in self._tools.items() if name not in names]
        return ToolRegistry(kept, self._aliases)

    def is_read_only(self, name: str) -> bool:
        tool = self.get(name)
        return tool is not None and tool.read_only

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        """Run one call. Never raises except for cancellation.

        What the model is told holds no secret of the run (:mod:`attractor.redact`):
        a command that prints a key must not send it to the model's provider. A
        call that would write a ``[redacted:...]`` placeholder is refused, since
        it would put the placeholder where the secret was.
        """
        tool = self.get(call.name)
        if tool is not None and not tool.read_only and _holds_marker(call.arguments):
            return ToolResult(PLACEHOLDER_REFUSED.format(name=call.name), True)
        result = await self._execute(tool, call, context)
        output = redact.text(result.output)
        return result if output is result.output else replace(result, output=output)

    async def _execute(self, tool: Tool | None, call: ToolCall, context: ToolContext) -> ToolResult:
        if tool is None:
            return ToolResult(
                f"unknown tool {call.name!r}; available tools: {', '.join(self._tools)}", True
            )
        if call.arguments_error is not None:
            return ToolResult(f"invalid arguments for {call.name}: {call.arguments_error}", True)
        problem = (
            check_arguments(call.arguments, tool.definition.parameters) if tool.checked else None
        )
        if problem is not None:
            return ToolResult(f"invalid arguments for {call.name}: {problem}", True)
        try:
            return ToolResult(await tool.run(context, call.arguments))
        except (anyio.get_cancelled_exc_class(), McpServerError):
            raise  # a server that failed ends the step, not just the call
        except ToolError as error:
            return ToolResult(f"{call.name} failed: {error}", True)
        except Exception as error:  # a tool bug must not crash the node
            kind = type(error).__name__
            return ToolResult(f"{call.name} failed unexpectedly: {kind}: {error}", True)


PLACEHOLDER_REFUSED = (
    "{name} was not run: its arguments hold a [redacted:...] placeholder, which stands for "
    "a secret you are not shown; writing it would replace the secret. Leave the text around "
    "the secret unchanged (edit other lines), or refer to the secret through its variable."
)


def _holds_marker(arguments: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and redact.MARKER in v for v in arguments.values())


def threaded(function: Callable[[ToolContext, dict[str, Any]], str]) -> ToolFunction:
    """Run a blocking tool function in a worker thread so the event loop stays free.

    On cancellation (the run's --timeout, Ctrl-C) the call returns at once and
    the thread is abandoned: a call stuck in a blocking system call must not
    hold the run. The thread is a daemon, so it cannot hold the process at exit
    either (anyio's own worker threads would be joined there; see run_daemon).
    """

    async def run(context: ToolContext, arguments: dict[str, Any]) -> str:
        return await run_daemon(lambda: function(context, arguments))

    return run


_THREAD_NAME = "attractor tool"
_T = TypeVar("_T")


async def run_daemon(call: Callable[[], _T]) -> _T:
    """``call()`` in a new daemon thread; cancelling the wait abandons the thread."""
    done = anyio.Event()
    outcome: list[_T | BaseException] = []
    token = anyio.lowlevel.current_token()

    def work() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # handed to the waiting task, which raises it
            outcome.append(error)
        # RuntimeError: the event loop is closed, so nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=work, name=_THREAD_NAME, daemon=True).start()
    await done.wait()
    [result] = outcome
    if isinstance(result, BaseException):
        raise result
    return result
