"""Where a step's commands run: the execution environment seam.

Every command a step runs (the agent's ``shell`` tool, a tool node's
``tool_command``, ``tool_hooks``) goes through an :class:`ExecutionEnvironment`:

- :class:`LocalEnvironment` runs it on this machine, in its own process group,
  with the environment filtered by an :class:`~attractor.proc.envfilter.EnvPolicy`;
- :class:`~attractor.proc.sandbox_env.BwrapEnvironment` runs it the same way
  inside a bubblewrap sandbox (see :mod:`attractor.proc.bwrap`): writes only to
  the workdir and the run's scratch, secret files hidden, network off unless
  asked for. It has a module of its own, loaded only by a step that uses it.

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

import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from attractor.proc.envfilter import EnvPolicy
from attractor.proc.hostfs import DEFAULT_READ_LIMIT, READ_FILE_LIMIT
from attractor.proc.hostfs.ops import HostFiles
from attractor.valueclass import mutable

if TYPE_CHECKING:  # the process machinery loads with the first command (not for a simulated run)
    from attractor.proc.process import ProcessResult

#: The container engines a step may run its commands in (:mod:`attractor.proc.container`).
CONTAINER_ENGINES = ("docker", "podman")
SANDBOX_MODES = ("auto", "bwrap", "none", *CONTAINER_ENGINES)
#: Run-level only: like ``auto``, but a run without a working sandbox is refused.
SANDBOX_REQUIRED = "required"
#: Starts a step's command with these variables, wrapped in this program and its flags.
Start = Callable[[dict[str, str], list[str]], Awaitable["ProcessResult"]]


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

    def read_file(self, path: str | Path, limit: int = READ_FILE_LIMIT) -> bytes:
        """The bytes of a regular file beneath the workdir, at most ``limit`` of them."""
        ...

    def write_file(self, path: str | Path, data: bytes) -> None:
        """Replace (or create) a regular file beneath the workdir (parent folders made)."""
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


@mutable
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
        from attractor.proc.process import process_env

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
        from attractor.proc.process import run_process

        await self.setup()
        where = cwd or self.workdir

        async def start(env: dict[str, str], wrap: list[str]) -> ProcessResult:
            return await run_process(
                command,
                cwd=where,
                timeout=timeout,
                kill_grace=kill_grace,
                env=env,
                stdout_path=stdout_path,
                stderr_path=stderr_path,
                stdin_path=stdin_path,
                wrap=wrap,
                stdout_limit=stdout_limit,
            )

        return await self._execute(start, where, self.env(extra_env))

    async def _execute(self, start: Start, cwd: Path, env: dict[str, str]) -> ProcessResult:
        """Run the command through ``start`` with its variables and wrapper: what an
        environment changes (a sandbox's wrapper and proxy, a container's name and
        clean-up), the rest of :meth:`run` being the same for all."""
        return await start(env, self.wrap(cwd))

    def within(self, workdir: Path) -> LocalEnvironment:
        return self if workdir == self.workdir else replace(self, workdir=workdir)

    def describe(self) -> str:
        return f"local, no sandbox, {self.policy.describe()}"

    def note(self, result: ProcessResult) -> str:
        """A note for the model about how the command hit the boundary ('' when it did not)."""
        return ""
