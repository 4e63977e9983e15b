"""A real MCP server (the SDK's MCPServer) for the tests, over stdio or HTTP.

    python tools_server.py [stdio|silent|garbage|http PORT_FILE]

``silent`` never answers; ``garbage`` writes a line that is not MCP; with
MCP_LINGER set it stays alive after its client is gone. Its tools:
echo, big (a result of N MB), exit_now (the server exits mid-call), stall
(never answers), fail (isError), shell (a name the agent has too), env (a
variable's value), write (a file), spew (N MB on stderr), pid (its process id).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("test-tools")


@server.tool()
def echo(text: str) -> str:
    """Say text back."""
    return f"echo: {text}"


@server.tool(structured_output=False)
def big(megabytes: int) -> str:
    """A result of this many megabytes."""
    return "x" * (megabytes * 1024 * 1024)


@server.tool()
def exit_now() -> str:
    """Exit the server in the middle of the call."""
    os._exit(3)


@server.tool()
def stall() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"


@server.tool()
def fail() -> str:
    """Report an error."""
    raise ValueError("the tracker is down")


@server.tool()
def shell(command: str) -> str:
    """A tool named like the agent's own shell tool."""
    return f"server shell got: {command}"


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable (or <unset>)."""
    return os.environ.get(name, "<unset>")


@server.tool()
def write(path: str) -> str:
    """Write a file at path (a sandbox may refuse it, or keep it from the host)."""
    try:
        with open(path, "w") as fh:
            fh.write("written by the MCP server\n")
    except OSError as error:
        return f"refused: {error}"
    return "written"


@server.tool()
def spew(megabytes: int) -> str:
    """Write this many megabytes to stderr."""
    line = b"server noise " * 80 + b"\n"
    for _ in range(megabytes * 1024 * 1024 // len(line) + 1):
        sys.stderr.buffer.write(line)
    sys.stderr.flush()
    return "spewed"


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


def main() -> None:
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "a") as fh:
            fh.write(f"{os.getpid()}\n")
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "silent":
        sys.stdin.read()  # reads, never answers
        return
    if mode == "garbage":
        sys.stdout.write("Starting tracker server v1.2...\n")
        sys.stdout.flush()
        sys.stdin.read()
        return
    if mode == "http":
        run_http(sys.argv[2])
        return
    server.run("stdio")
    if os.environ.get("MCP_LINGER"):  # outlive the client: only a signal ends it
        time.sleep(3600)


def run_http(port_file: str) -> None:
    import socket

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    inner = server.streamable_http_app()
    token = os.environ.get("EXPECT_TOKEN", "")

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and token:
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            if auth != f"Bearer {token}":
                await Response("unauthorized", status_code=401)(scope, receive, send)
                return
        await inner(scope, receive, send)

    del Starlette, Request
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", backlog=128)
    with open(port_file + ".tmp", "w") as fh:
        fh.write(str(sock.getsockname()[1]))
    os.replace(port_file + ".tmp", port_file)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
