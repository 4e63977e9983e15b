"""Commands in a container: ``sandbox=docker`` or ``sandbox=podman`` with ``image=``.

Each command is one ``docker run`` (``podman run`` takes the same flags):

- ``--rm`` (the container is removed when the command ends) and ``--init`` (a
  small init as PID 1 forwards signals and reaps what the command leaves);
- ``--name attractor-PID-N``, so a timeout, Ctrl-C or a cancelled step ends it
  with ``docker rm --force NAME``: the client passes SIGTERM on to the container
  (its signal proxy, on without a terminal) but not SIGKILL, and a container's
  processes belong to the daemon, not to the client's process group;
- the workdir, the stage directory, the scratch directory (as ``$TMPDIR``) and
  the ``writable=`` paths mounted read-write at the same paths, the run
  directory read-only when it lies inside the workdir; ``--workdir`` the step's;
- ``--user UID:GID`` of the engine, so files written in the workspace are the
  user's;
- ``--network none`` unless ``network=on`` (the engine's default network);
- the node's filtered environment passed by name (``-e NAME``: the client reads
  each value from its own environment, so no value is on a command line),
  except the host's own paths (``PATH``, ``HOME``, ...), which the image sets.

Where no engine answers (no daemon, no client), :func:`container_problem` says
so in one line and the run is refused before it starts.

The file operations of the seam (the agent's file tools) are answered on the host,
inherited from :class:`~attractor.proc.environment.LocalEnvironment`: the workdir is
mounted at its own path, so they reach the same files a command in the container
does; an engine on another machine (``DOCKER_HOST``) would override them.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import anyio

from attractor.proc.capture import captured
from attractor.proc.environment import LocalEnvironment, Start
from attractor.proc.gitguard import git_guards, run_dir_shield
from attractor.proc.process import ProcessResult
from attractor.valueclass import frozen, mutable

#: Variables of the engine's host that name host paths: the image sets its own.
HOST_ONLY = frozenset(
    ("PATH", "HOME", "PWD", "OLDPWD", "SHELL", "HOSTNAME", "TMPDIR", "VIRTUAL_ENV")
)
#: What the client itself reads to find its engine (never passed into the container).
CLIENT_ENV = (
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_TLS_VERIFY",
    "DOCKER_CERT_PATH",
    "CONTAINER_HOST",
    "CONTAINERS_CONF",
    "XDG_RUNTIME_DIR",
)
_INFO_TIMEOUT = 15.0
_REMOVE_TIMEOUT = 30.0
_names = itertools.count(1)


#: The question each engine's client is asked to learn whether its engine answers: a
#: field of its own ``info`` (a Go template). Docker documents ``.ServerVersion``; podman's
#: info has no such field (its placeholders are ``.Host``, ``.Plugins``, ``.Registries``,
#: ``.Store`` and ``.Version``), so podman is asked for ``.Version.Version``. Both clients
#: exit non-zero when their engine (docker's daemon, podman's service or storage) fails.
INFO_FORMATS = {"docker": "{{.ServerVersion}}", "podman": "{{.Version.Version}}"}


def info_argv(engine: str, program: str | None = None) -> list[str]:
    """``docker info --format {{.ServerVersion}}``, or podman's own (:data:`INFO_FORMATS`)."""
    return [program or engine, "info", "--format", INFO_FORMATS[engine]]


@cache
def container_problem(engine: str) -> str | None:
    """None when ``engine`` (docker or podman) answers here, else one line saying why not."""
    program = shutil.which(engine)
    if program is None:
        return f"{engine} is not installed"
    try:
        done = subprocess.run(
            info_argv(engine, program),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_INFO_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"no {engine} engine answered `{engine} info` within {_INFO_TIMEOUT:.0f}s"
    except OSError as error:
        return f"{engine} cannot start: {error}"
    return info_problem(engine, done.returncode, done.stdout, done.stderr)


def info_problem(engine: str, code: int, out: bytes, err: bytes) -> str | None:
    """What ``ENGINE info``'s answer says: None when it named the engine's version."""
    if code != 0:
        lines = (err or out).decode(errors="replace").strip().splitlines()
        detail = lines[-1] if lines else f"exit code {code}"
        return f"no {engine} engine runs here ({engine} info: {detail})"
    if not out.strip():  # an old client that prints no server and exits 0
        return f"no {engine} engine runs here ({engine} info named no engine version)"
    return None


@frozen
class Container:
    """What a container of one step is made of."""

    engine: str
    image: str
    workdir: Path
    writable: tuple[Path, ...] = ()
    run_dir: Path | None = None
    stage_dir: Path | None = None
    scratch: Path | None = None
    network: bool = False


def run_argv(box: Container, cwd: Path, names: list[str], name: str) -> list[str]:
    """``docker run ...`` up to the image, followed by the command's argv; ``cwd``
    resolved, as the volumes are."""
    argv = [shutil.which(box.engine) or box.engine, "run", "--rm", "--init", "-i"]
    argv += ["--name", name, "--user", f"{os.getuid()}:{os.getgid()}"]
    if not box.network:
        argv += ["--network", "none"]
    argv += _volumes(box)
    for key in names:
        if key not in HOST_ONLY:
            argv += ["--env", key]
    if box.scratch is not None:
        argv += ["--env", f"TMPDIR={box.scratch}"]
    argv += ["--workdir", str(cwd.resolve()), box.image]
    return argv


def _volumes(box: Container) -> list[str]:
    """The ``--volume`` flags: the writable paths, git's control files and the run
    directory read-only over them (as in the bwrap sandbox: see
    attractor.proc.gitguard), the step's own folders writable again. The engine
    mounts parents before children; a path is mounted once, as its last entry says."""
    roots = list(dict.fromkeys(p.resolve() for p in (box.workdir, *box.writable)))
    own = [p.resolve() for p in (box.scratch, box.stage_dir) if p is not None]
    mounts = dict.fromkeys(roots, True)
    mounts.update(git_guards(roots))
    shield = run_dir_shield(box.run_dir, roots)
    if shield is not None:
        mounts[shield] = False  # the engine's journal stays its own
    mounts.update((p, True) for p in own)
    return [
        arg for p, rw in mounts.items() for arg in ("--volume", f"{p}:{p}" if rw else f"{p}:{p}:ro")
    ]


def remove_argv(engine: str, name: str) -> list[str]:
    """Kill and remove the container ``name`` (its command timed out or was cancelled)."""
    return [shutil.which(engine) or engine, "rm", "--force", name]


@mutable
class ContainerEnvironment(LocalEnvironment):
    """Commands in a fresh container each (see the module docstring)."""

    box: Container | None = None
    name: str = "container"

    def _box(self) -> Container:
        assert self.box is not None
        return self.box

    async def _execute(self, start: Start, cwd: Path, env: dict[str, str]) -> ProcessResult:
        box = self._box()
        name = f"attractor-{os.getpid()}-{next(_names)}"
        client = {k: os.environ[k] for k in CLIENT_ENV if k in os.environ}
        wrap = run_argv(box, cwd, sorted(env), name)
        try:
            result = await start({**env, **client}, wrap)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _remove(box.engine, name)
            raise
        if result.timed_out:  # the client is gone; the container may not be
            with anyio.CancelScope(shield=True):
                await _remove(box.engine, name)
        return result

    def describe(self) -> str:
        return describe_container(self._box(), self.policy.describe())


def describe_container(box: Container, policy: str, problem: str | None = None) -> str:
    """``docker container (image alpine:3), network off, writable: workdir, env=core``,
    then why the run is refused here when ``problem`` says no engine answers."""
    net = "network on" if box.network else "network off"
    extra = "".join(f", {p}" for p in box.writable)
    image = f"image {box.image}" if box.image else "no image: the run is refused; set image="
    text = f"{box.engine} container ({image}), {net}, writable: workdir{extra}, {policy}"
    return text if problem is None else f"{text}; the run is refused here: {problem}"


async def _remove(engine: str, name: str) -> None:
    with anyio.move_on_after(_REMOVE_TIMEOUT):
        await captured(remove_argv(engine, name), cwd=Path("/"), env=os.environ)
