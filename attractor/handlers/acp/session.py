"""One attempt's ACP session: the agent's process, the handshake, the prompt turns.

:class:`Session` starts the agent (:mod:`.process`), speaks ACP to it through
the SDK's client connection with :class:`~.client.AttractorClient` on
attractor's side, and keeps why it could not go on in :attr:`Session.failure`
(the step's failure reason); :mod:`.backend` judges the outcome.
"""

from __future__ import annotations

import os
import re

import anyio
from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AcpMcpServer,
    ClientCapabilities,
    EnvVarAuthMethod,
    EnvVariable,
    FileSystemCapabilities,
    HttpHeader,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    McpServerStdio,
    PromptResponse,
    SseMcpServer,
)
from anyio.abc import Process
from pydantic import ValidationError

from attractor.config_file import AcpAgent
from attractor.handlers.acp.client import AttractorClient
from attractor.handlers.acp.permissions import Policy
from attractor.handlers.acp.process import (
    STDERR_FILE,
    AgentCommand,
    LineTransport,
    agent_process,
    stderr_tail,
)
from attractor.handlers.acp.servers import expanded_servers
from attractor.handlers.acp.terminals import TERMINALS_DIR, Terminals
from attractor.handlers.acp.updates import prompt_ended
from attractor.handlers.backend import StageRequest
from attractor.handlers.external.tracker import Tracker
from attractor.proc.environment import ExecutionEnvironment, LocalEnvironment
from attractor.proc.process import process_env
from attractor.proc.sandbox_env import BwrapEnvironment
from attractor.redact import scrub_files
from attractor.version import __version__

#: Longest wait for ``initialize`` and ``session/new`` (a cold ``npx`` start is slow).
HANDSHAKE_TIMEOUT = 120.0
#: The JSON-RPC error code of ACP's "authentication required".
AUTH_REQUIRED = -32000
#: What ``session/new`` takes as ``mcpServers``.
_McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class _AgentFailed(Exception):
    """Why the session could not go on (becomes the step's failure reason)."""


class Session:
    """One attempt's agent process, connection and prompt turns."""

    def __init__(self, agent: AcpAgent, request: StageRequest, tracker: Tracker) -> None:
        self.agent = agent
        self.request = request
        self.tracker = tracker
        self.environment: ExecutionEnvironment = request.environment or LocalEnvironment(
            request.workdir
        )
        self.failure: str | None = None
        self.agent_info: dict[str, str] = {}
        self.exit_code: int | None = None
        self.grace = request.settings.kill_grace
        self.env = self._env()
        #: The node's MCP servers, ``${VAR}`` expanded (a UsageError before the agent starts).
        self.servers = expanded_servers(request.node, request.settings)

    async def drive(self) -> None:
        """Run the session to its end; a failure is kept in :attr:`failure`."""
        started: Process | None = None
        await self.environment.setup()  # the sandbox's folders, before the agent runs in it
        try:
            async with agent_process(self._command()) as process:
                started = process
                transport = LineTransport(process)
                try:
                    await self._talk(transport)
                except _AgentFailed as exc:
                    self.failure = str(exc)
                except (ConnectionError, anyio.BrokenResourceError, anyio.EndOfStream):
                    self.failure = await self._gone(process, transport)
            self.exit_code = process.returncode  # stopped by now
        except OSError as exc:
            if started is not None:  # not a failure to start: let it be seen
                raise
            self.failure = (
                f"ACP agent {self.agent.name} could not start: {self.agent.command}: "
                f"{exc.strerror or exc}; check command in {self.agent.source}"
            )
        finally:
            # What the agent and its commands wrote themselves, read to the end by now.
            stage = self.request.stage_dir
            scrub_files([stage / STDERR_FILE, *sorted((stage / TERMINALS_DIR).glob("*.log"))])

    async def _talk(self, transport: LineTransport) -> None:
        request = self.request
        failure: Exception | None = None
        # Nothing may leave this task group by raising: anyio would wrap it in a group.
        async with anyio.create_task_group() as tg:
            terminals = Terminals(
                self.environment, request.stage_dir / TERMINALS_DIR, tg, self.grace
            )
            client = AttractorClient(
                node_id=request.node.id,
                workdir=request.workdir,
                environment=self.environment,
                policy=Policy.of(request.node),
                tracker=self.tracker,
                terminals=terminals,
                task_group=tg,
                interviewer=request.interviewer,
            )
            conn = connect_to_agent(client, transport)
            session_id: str | None = None
            try:
                session_id = await self._open(conn)
                await self._prompts(conn, client, session_id)
            except (_AgentFailed, ConnectionError, anyio.BrokenResourceError) as exc:
                failure = exc
            finally:
                with anyio.CancelScope(shield=True):
                    if session_id is not None and self.tracker.finished is None:
                        with anyio.move_on_after(min(1.0, self.grace)):
                            await _quietly_cancel(conn, session_id)
                    await conn.close()
                client.writes.settle(self.grace)  # the agent's writes: done, or given up
                tg.cancel_scope.cancel()  # the terminals still running
        if failure is not None:
            raise failure

    async def _open(self, conn: ClientSideConnection) -> str:
        """``initialize`` and ``session/new``; the session id."""
        name = self.agent.name
        try:
            with anyio.fail_after(HANDSHAKE_TIMEOUT):
                init = await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                        terminal=True,
                    ),
                    client_info=Implementation(name="attractor", version=__version__),
                )
                self._note_agent(init)
                session_id = await self._new_session(conn, init)
        except TimeoutError:
            raise _AgentFailed(
                f"ACP agent {name} did not answer initialize and session/new within "
                f"{HANDSHAKE_TIMEOUT:g}s; see {STDERR_FILE}"
            ) from None
        except RequestError as exc:
            said = f"{_said(exc)}{self._login_hint(exc)}"
            raise _AgentFailed(f"ACP agent {name} refused the session: {said}") from None
        except ValidationError as exc:
            raise _AgentFailed(f"ACP agent {name} sent a malformed answer: {_first(exc)}") from None
        return session_id

    async def _new_session(self, conn: ClientSideConnection, init: InitializeResponse) -> str:
        """``session/new``; when the agent asks for a login it offers through a
        variable attractor hands it (``env`` of the agent's table), that login first."""
        cwd = str(self.request.workdir)
        servers = self._mcp_servers(init)
        try:
            return (await conn.new_session(cwd=cwd, mcp_servers=servers)).session_id
        except RequestError as exc:
            method = _env_login(init, self.env) if exc.code == AUTH_REQUIRED else None
            if method is None:
                raise
        await conn.authenticate(method_id=method)
        return (await conn.new_session(cwd=cwd, mcp_servers=servers)).session_id

    def _mcp_servers(self, init: InitializeResponse) -> list[_McpServer]:
        """The node's MCP servers as ACP's ``mcpServers``, secrets expanded (they go
        only into this message on the agent's stdin)."""
        caps = init.agent_capabilities
        http = bool(caps and caps.mcp_capabilities and caps.mcp_capabilities.http)
        out: list[_McpServer] = []
        for server in self.servers:
            if server.command is not None:
                env = [EnvVariable(name=k, value=v) for k, v in server.env]
                out.append(
                    McpServerStdio(
                        name=server.name, command=server.command, args=list(server.args), env=env
                    )
                )
                continue
            if not http:
                raise _AgentFailed(
                    f"ACP agent {self.agent.name} takes no HTTP MCP servers (it does not "
                    f"declare mcpCapabilities.http), so it cannot get {server.name} "
                    f"({server.url}); use a stdio server, or another agent"
                )
            headers = [HttpHeader(name=k, value=v) for k, v in server.headers]
            out.append(
                HttpMcpServer(name=server.name, url=server.url or "", headers=headers, type="http")
            )
        return out

    def _login_hint(self, exc: RequestError) -> str:
        if exc.code != AUTH_REQUIRED:
            return ""
        return (
            f"; log the agent in with its own CLI, or hand it its key with "
            f'env = {{ NAME = "$NAME" }} in {self.agent.source}'
        )

    def _note_agent(self, init: InitializeResponse) -> None:
        info = init.agent_info
        if info is not None:
            self.agent_info = {"name": info.name, "version": info.version}

    async def _prompts(
        self, conn: ClientSideConnection, client: AttractorClient, session_id: str
    ) -> None:
        """The node's prompt, then each steering message, as prompt turns."""
        text = self.request.prompt
        while True:
            client.reader.new_prompt()
            response = await self._turn(conn, client, session_id, text)
            if response is None:  # attractor stopped it
                return
            self.tracker.feed(prompt_ended(response))
            if response.stop_reason != "end_turn" or self.tracker.stop is not None:
                return
            steering = self.request.steering() if self.request.steering else []
            if not steering:
                return
            self.tracker.finished = None  # the session goes on
            text = "\n\n".join(steering)

    async def _turn(
        self, conn: ClientSideConnection, client: AttractorClient, session_id: str, text: str
    ) -> PromptResponse | None:
        """One prompt turn; None when attractor had to stop the agent during it."""
        response: PromptResponse | None = None
        failed: BaseException | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._stop_on_demand, conn, client, session_id, tg.cancel_scope)
            try:
                response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
            except RequestError as exc:
                failed = _AgentFailed(
                    f"ACP agent {self.agent.name} failed the prompt: "
                    f"{_said(exc)}{self._login_hint(exc)}"
                )
            except ValidationError as exc:
                failed = _AgentFailed(
                    f"ACP agent {self.agent.name} sent a malformed answer: {_first(exc)}"
                )
            except (ConnectionError, anyio.BrokenResourceError) as exc:
                failed = exc
            tg.cancel_scope.cancel()
        if failed is not None and not client.stopping.is_set():
            raise failed
        return None if client.stopping.is_set() else response

    async def _stop_on_demand(
        self,
        conn: ClientSideConnection,
        client: AttractorClient,
        session_id: str,
        turn: anyio.CancelScope,
    ) -> None:
        """At attractor's stop: ``session/cancel``, then the kill grace to end the turn."""
        await client.stopping.wait()
        await _quietly_cancel(conn, session_id)
        await anyio.sleep(self.grace)
        turn.cancel()

    async def _gone(self, process: Process, transport: LineTransport) -> str:
        """The reason of a connection that ended under attractor's feet."""
        name = self.agent.name
        if transport.garbage is not None:
            return (
                f"ACP agent {name} wrote something that is not an ACP message to its stdout: "
                f"{transport.garbage!r} (an agent must log to stderr)"
            )
        await self._exit_code(process)
        said = stderr_tail(self.request.stage_dir / STDERR_FILE)
        how = (
            "closed its output" if self.exit_code is None else f"exited with code {self.exit_code}"
        )
        return f"ACP agent {name} {how} during the session: {said or 'see ' + STDERR_FILE}"

    async def _exit_code(self, process: Process) -> None:
        with anyio.move_on_after(self.grace):
            await process.wait()
        self.exit_code = process.returncode

    def _command(self) -> AgentCommand:
        request = self.request
        argv = [self.agent.command, *self.agent.args]
        environment = self.environment
        if isinstance(environment, BwrapEnvironment):
            argv = [*environment.wrap(request.workdir), *argv]
        return AgentCommand(
            argv=argv,
            cwd=request.workdir,
            env=self.env,
            stderr_path=request.stage_dir / STDERR_FILE,
            kill_grace=self.grace,
        )

    def _env(self) -> dict[str, str]:
        """The node's filtered environment, the stage variables, and the agent's ``env``."""
        request = self.request
        stage = {"ATTRACTOR_STAGE_DIR": request.stage_dir, "ATTRACTOR_NODE": request.node.id}
        environment = self.environment
        if isinstance(environment, LocalEnvironment):
            env = environment.policy.apply(process_env(stage))
        else:
            env = process_env(stage)
        for key, value in self.agent.env:
            resolved = _expand(value)
            if resolved is not None:
                env[key] = resolved
        return env


async def _quietly_cancel(conn: ClientSideConnection, session_id: str) -> None:
    """``session/cancel``, ignored when the agent is already gone."""
    try:
        await conn.cancel(session_id=session_id)
    except (ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return


def _expand(value: str) -> str | None:
    """A config ``env`` value: ``$NAME``/``${NAME}`` as a whole is that variable."""
    match = _VARIABLE.fullmatch(value)
    if match is None:
        return value
    return os.environ.get(match.group(1) or match.group(2))


def _env_login(init: InitializeResponse, env: dict[str, str]) -> str | None:
    """The first login the agent offers by variables that are all set in ``env``."""
    for method in init.auth_methods or []:
        if not isinstance(method, EnvVarAuthMethod):
            continue
        needed = [var.name for var in method.vars if not var.optional]
        if needed and all(env.get(name) for name in needed):
            return method.id
    return None


def _said(exc: RequestError) -> str:
    data = exc.data
    detail = ""
    if isinstance(data, dict):
        detail = str(data.get("details") or data.get("reason") or data.get("message") or "")
    elif data is not None:
        detail = str(data)
    text = f"{exc} ({detail})" if detail else str(exc)
    return text[:300]


def _first(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)[:300]
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg', '')}"[:300]
