"""Where a step's commands run: the execution environment seam.

Every command a step runs (the agent's ``shell`` tool, a tool node's
``tool_command``, ``tool_hooks``) goes through an :class:`ExecutionEnvironment`:

- :class:`LocalEnvironment` runs it on this machine, in its own process group,
  with the environment filtered by an :class:`~attractor.proc.envfilter.EnvPolicy`;
- :class:`BwrapEnvironment` runs it the same way inside a bubblewrap sandbox
  (see :mod:`attractor.proc.bwrap`): writes only to the workdir and the run's
  scratch, secret files hidden, network off unless asked for.

Both share the process machinery of :mod:`attractor.proc.process` (process-group
kill on timeout and cancellation, the run's ledger for the crash guard).

The file operations (read, write, edit, list, glob, grep, apply a patch) are part
of the seam too: the agent's file tools call them on the step's environment, never
on the host directly, so an environment that keeps its files elsewhere (a remote
machine, a container without the workdir mounted) answers them itself. The ones
here answer them on the host, by descriptor, confined beneath the workdir
(:class:`~attractor.proc.hostfs.ops.HostFiles`). For the sandbox that is the same
as doing them inside it: the workdir is bound into the sandbox at its own path
and writable there, and nothing outside it is reached (the walk refuses a path
or symlink that climbs out), so a file operation sees and changes exactly the
files a sandboxed command could; doing it on the host saves starting a sandbox
per read.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.abc import SocketStream

from attractor.proc.allowlist import INSIDE_DIR, AllowList, describe_network
from attractor.proc.bwrap import PROXY_REFUSAL, Fence, probe, refusal_note, wrap_argv
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.hostfs import DEFAULT_READ_LIMIT
from attractor.proc.hostfs.ops import HostFiles
from attractor.proc.netproxy import serve_client
from attractor.proc.process import ProcessResult, process_env, run_process

SANDBOX_MODES = ("auto", "bwrap", "none", "docker", "podman")
#: Names of the per-command proxy sockets (unique within the engine process).
_sockets = itertools.count(1)
#: Run-level only: like ``auto``, but a run without a working sandbox is refused.
SANDBOX_REQUIRED = "required"


class ExecutionEnvironment(Protocol):
    """What a step may do with commands and files, wherever it runs."""

    @property
    def name(self) -> str: ...

    @property
    def workdir(self) -> Path: ...

    @property
    def platform(self) -> str: ...

    async def setup(self) -> None:
        """Prepare the environment (directories, probes); idempotent."""

    async def teardown(self) -> None:
        """Release what :meth:`setup` took."""

    async def run(
        self,
        command: str,
        *,
        cwd: Path | None = None,
        timeout: float | None = None,
        kill_grace: float = 2.0,
        extra_env: Mapping[str, Any] | None = None,
        stdout_path: Path | None = None,
        stderr_path: Path | None = None,
        stdin_path: Path | None = None,
        stdout_limit: int | None = None,
    ) -> ProcessResult:
        """Run ``command`` through ``/bin/sh -c`` in its own process group."""
        ...

    def within(self, workdir: Path) -> ExecutionEnvironment:
        """The same environment with its file operations confined to ``workdir`` (a
        folder of its own workdir, e.g. a subagent's)."""
        ...

    def read_file(self, path: str | Path) -> bytes:
        """The bytes of a file beneath the workdir."""
        ...

    def write_file(self, path: str | Path, data: bytes) -> None:
        """Write a file beneath the workdir (parent folders made)."""
        ...

    # The file operations of the agent's tools: each answers the text the model reads,
    # and raises ToolError (or OSError) for a path it cannot use.

    def read_lines(self, path: str, offset: int = 1, limit: int = DEFAULT_READ_LIMIT) -> str:
        """Lines ``offset`` (1-based) to ``offset + limit - 1`` of a text file, numbered."""
        ...

    def write_text(self, path: str, content: str) -> str:
        """Replace (or create) a file with ``content``."""
        ...

    def edit_text(self, path: str, old: str, new: str, *, replace_all: bool = False) -> str:
        """Replace ``old`` in a text file (once, unless ``replace_all``)."""
        ...

    def list_dir(self, path: str = ".") -> str:
        """The entries of a directory."""
        ...

    def glob(self, pattern: str, path: str = ".") -> str:
        """The paths under ``path`` matching ``pattern`` (``**/*.py``)."""
        ...

    def grep(
        self, pattern: str, path: str = ".", *, regex: bool = False, ignore_case: bool = False
    ) -> str:
        """The lines under ``path`` holding ``pattern`` (a regex when ``regex``)."""
        ...

    def apply_patch(self, patch: str) -> str:
        """Apply a v4a patch, all or nothing as far as the files allow."""
        ...

    def describe(self) -> str:
        """One line for ``--dry-run``: the boundary of the step."""
        ...

    def note(self, result: ProcessResult) -> str:
        """A note for the model when ``result`` looks like a refusal of the boundary."""
        ...


@dataclass
class LocalEnvironment(HostFiles):
    """Commands on this machine with a filtered environment; files on it, beneath the workdir."""

    workdir: Path
    policy: EnvPolicy = field(default_factory=EnvPolicy)
    name: str = "local"

    @property
    def platform(self) -> str:
        return sys.platform

    async def setup(self) -> None:
        return None

    async def teardown(self) -> None:
        return None

    def env(self, extra_env: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The command's variables: the engine's, filtered, plus ``extra_env``."""
        env = self.policy.apply(process_env())
        for key, value in (extra_env or {}).items():
            env[key] = str(value)
        return env

    def wrap(self, cwd: Path | None = None) -> list[str]:
        """The program and flags wrapped around each command (none here)."""
        return []

    async def run(
        self,
        command: str,
        *,
        cwd: Path | None = None,
        timeout: float | None = None,
        kill_grace: float = 2.0,
        extra_env: Mapping[str, Any] | None = None,
        stdout_path: Path | None = None,
        stderr_path: Path | None = None,
        stdin_path: Path | None = None,
        stdout_limit: int | None = None,
    ) -> ProcessResult:
        await self.setup()
        return await run_process(
            command,
            cwd=cwd or self.workdir,
            timeout=timeout,
            kill_grace=kill_grace,
            env=self.env(extra_env),
            stdout_path=stdout_path,
            stderr_path=stderr_path,
            stdin_path=stdin_path,
            wrap=self.wrap(cwd),
            stdout_limit=stdout_limit,
        )

    def _inside(self, path: str | Path) -> Path:
        full = (self.workdir / path).resolve()
        if not full.is_relative_to(self.workdir.resolve()):
            raise PermissionError(f"{path}: outside the working directory {self.workdir}")
        return full

    def read_file(self, path: str | Path) -> bytes:
        return self._inside(path).read_bytes()

    def write_file(self, path: str | Path, data: bytes) -> None:
        target = self._inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def within(self, workdir: Path) -> LocalEnvironment:
        return self if workdir == self.workdir else replace(self, workdir=workdir)

    def describe(self) -> str:
        return f"local, no sandbox, {self.policy.describe()}"

    def note(self, result: ProcessResult) -> str:
        """A note for the model about how the command hit the boundary ('' when it did not)."""
        return ""


@dataclass
class BwrapEnvironment(LocalEnvironment):
    """Commands inside a bubblewrap sandbox (see :mod:`attractor.proc.bwrap`)."""

    fence: Fence | None = None
    name: str = "bwrap"

    def _fence(self) -> Fence:
        return self.fence if self.fence is not None else Fence(self.workdir)

    #: The bwrap command line per working directory, worked out by the first
    #: command there: the layout is fixed for the rest of the step.
    _wraps: dict[Path, list[str]] = field(default_factory=dict, repr=False)

    async def setup(self) -> None:
        fence = self._fence()
        for path in (fence.scratch, fence.stage_dir):
            if path is not None and not path.is_dir():  # normally made by the engine
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if fence.hosts and not fence.network and fence.proxy_dir is None:
            # Short and private: a unix socket's path has a limit of about 100 bytes.
            folder = Path(tempfile.mkdtemp(prefix="attractor-net-"))
            weakref.finalize(self, shutil.rmtree, folder, True)
            self.fence = replace(fence, proxy_dir=folder)

    async def run(
        self,
        command: str,
        *,
        cwd: Path | None = None,
        timeout: float | None = None,
        kill_grace: float = 2.0,
        extra_env: Mapping[str, Any] | None = None,
        stdout_path: Path | None = None,
        stderr_path: Path | None = None,
        stdin_path: Path | None = None,
        stdout_limit: int | None = None,
    ) -> ProcessResult:
        await self.setup()
        fence = self._fence()
        if fence.proxy_dir is None:  # no proxy: straight to the process (setup is done)
            return await run_process(
                command,
                cwd=cwd or self.workdir,
                timeout=timeout,
                kill_grace=kill_grace,
                env=self.env(extra_env),
                stdout_path=stdout_path,
                stderr_path=stderr_path,
                stdin_path=stdin_path,
                wrap=self.wrap(cwd),
                stdout_limit=stdout_limit,
            )
        # One proxy per command, living exactly as long as it (see attractor.proc.netproxy).
        name = f"{next(_sockets)}.sock"
        socket = fence.proxy_dir / name
        allow = AllowList(fence.hosts)
        setting = ",".join(fence.hosts)
        try:
            listener = await anyio.create_unix_listener(socket)
            async with listener, anyio.create_task_group() as tg:

                async def handle(client: SocketStream) -> None:
                    await serve_client(client, allow, setting)

                tg.start_soon(listener.serve, handle, tg)
                result = await run_process(
                    command,
                    cwd=cwd or self.workdir,
                    timeout=timeout,
                    kill_grace=kill_grace,
                    env=self.env(extra_env),
                    stdout_path=stdout_path,
                    stderr_path=stderr_path,
                    stdin_path=stdin_path,
                    wrap=[*self.wrap(cwd), f"{INSIDE_DIR}/{name}"],
                    stdout_limit=stdout_limit,
                )
                tg.cancel_scope.cancel()
        finally:
            socket.unlink(missing_ok=True)
        return result

    def wrap(self, cwd: Path | None = None) -> list[str]:
        """``bwrap`` and its flags for a command in ``cwd``, the writable workdir."""
        cwd = cwd or self.workdir
        argv = self._wraps.get(cwd)
        if argv is None:
            fence = self._fence()
            if cwd != fence.workdir:  # a subagent's folder: only it is writable
                fence = replace(fence, workdir=cwd)
            argv = self._wraps[cwd] = wrap_argv(fence)
        return argv

    def describe(self) -> str:
        fence = self._fence()
        net = describe_network(fence.network, fence.hosts)
        extra = "".join(f", {p}" for p in fence.writable)
        return f"bwrap sandbox, {net}, writable: workdir{extra}, {self.policy.describe()}"

    def note(self, result: ProcessResult) -> str:
        """Why the sandbox stopped the command, for the model ('' when nothing says it did).

        A failed command is looked at whole (a hidden path it named, a process or
        server outside the sandbox, an errno text of a wall); a command that exited
        0 only for the allow-list proxy's refusal, which a plain HTTP client prints
        as the body of a 403 and does not fail on.
        """
        if result.returncode is None:
            return ""
        if result.returncode == 0:
            return refusal_note("", None, result.stdout) if PROXY_REFUSAL in result.stdout else ""
        return refusal_note(result.stderr, self._fence(), result.stdout)


def sandbox_problem() -> str | None:
    """None when the bwrap sandbox works here, else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return "the bwrap sandbox needs Linux"
    return probe()
