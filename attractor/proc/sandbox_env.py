"""The bubblewrap sandbox as an execution environment (:class:`BwrapEnvironment`).

The same seam as :class:`~attractor.proc.environment.LocalEnvironment`, each
command wrapped in ``bwrap`` (the layout in :mod:`attractor.proc.bwrap`), with a
host-side proxy per command when the node allows a list of hosts
(:mod:`attractor.proc.netproxy`). In a module of its own so that a run whose
steps never use the sandbox does not load it.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
import weakref
from dataclasses import field, replace
from pathlib import Path

import anyio
from anyio.abc import SocketStream

from attractor.proc.allowlist import INSIDE_DIR, AllowList, describe_network
from attractor.proc.bwrap import PROXY_REFUSAL, Fence, probe, refusal_note, wrap_argv
from attractor.proc.environment import LocalEnvironment, Start
from attractor.proc.netproxy import serve_client
from attractor.proc.process import ProcessResult
from attractor.valueclass import mutable

#: Names of the per-command proxy sockets (unique within the engine process).
_sockets = itertools.count(1)


@mutable
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

    async def _execute(self, start: Start, cwd: Path, env: dict[str, str]) -> ProcessResult:
        fence = self._fence()
        if fence.proxy_dir is None:  # no proxy: straight to the process
            return await start(env, self.wrap(cwd))
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
                result = await start(env, [*self.wrap(cwd), f"{INSIDE_DIR}/{name}"])
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
