"""The stdio transport of an MCP server that runs as a process of the step.

The SDK's own ``stdio_client`` starts the server itself; this one is given a
process started by :func:`attractor.proc.service.open_service` (the step's
environment, sandbox, process group and the run's ledger) and bridges its pipes
to the SDK's message streams, one JSON-RPC message per line, each parsed and
written by the SDK's own message types. Two faults end the connection at once
rather than leave a request waiting: a line that is not an MCP message, and a
message longer than :data:`MAX_MESSAGE` bytes. :class:`Watch` says which, for
the step's failure reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import mcp_types
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from attractor.valueclass import mutable

#: The longest message read from a server (a tool result of 50 MB fits, even
#: sent twice as text and structured content; the model sees it truncated like
#: any tool's output).
MAX_MESSAGE = 128 * 1024 * 1024
#: Characters of a bad line quoted in the failure reason.
QUOTE = 120


@mutable
class Watch:
    """What went wrong with the connection, if anything (for the step's failure)."""

    problem: str = ""

    def note(self, problem: str) -> None:
        if not self.problem:
            self.problem = problem


@asynccontextmanager
async def process_transport(process: Process, watch: Watch) -> AsyncIterator[TransportStreams]:
    """The SDK's read and write streams over ``process``'s stdout and stdin."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_writer:
            await _read(process, watch, read_writer)

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            watch.note("it closed its input")
            await read_writer.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            group.cancel_scope.cancel()
            with anyio.CancelScope(shield=True):
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()


async def _read(
    process: Process,
    watch: Watch,
    out: anyio.abc.ObjectSendStream[SessionMessage | Exception],
) -> None:
    assert process.stdout is not None
    buffer = bytearray()
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        async for chunk in process.stdout:
            start = len(buffer)
            buffer += chunk
            while (end := buffer.find(b"\n", start)) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                start = 0
                message = _parse(line, watch)
                if message is None:
                    return
                if message is not _BLANK:
                    await out.send(message)
            if len(buffer) > MAX_MESSAGE:
                watch.note(f"it sent a message longer than {MAX_MESSAGE // (1024 * 1024)} MB")
                return
    watch.note("it exited" if process.returncode is not None else "it exited or closed its output")


_BLANK = SessionMessage(mcp_types.JSONRPCNotification(jsonrpc="2.0", method="blank"))


def _parse(line: bytes, watch: Watch) -> SessionMessage | None:
    """The message on ``line`` (``_BLANK`` for an empty line), None when it is not one."""
    if not line.strip():
        return _BLANK
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line))
    except ValueError:
        shown = line[:QUOTE].decode("utf-8", "replace")
        watch.note(f"it wrote something that is not an MCP message on its stdout: {shown!r}")
        return None
