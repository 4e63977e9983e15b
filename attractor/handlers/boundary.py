"""Each step's boundary: which environment runs its commands, and with what.

A step's settings come from the run (flag, variable, config file, graph
attribute, default: see :mod:`attractor.settings`) and from the node itself:

- ``env``, ``sandbox``, ``network``: the node's own attribute wins for that
  node; ``--sandbox required`` refuses a node that says ``sandbox=none``;
- ``env_allow``, ``env_deny``, ``writable``: the node's values add to the run's.

``sandbox=auto`` runs commands in bubblewrap when it works here, else locally
after a one-line notice (:func:`preflight`).
"""

from __future__ import annotations

import os
import shutil
import stat
import weakref
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.dot.graph import Graph, Node
from attractor.dot.schema import AGENT_BACKENDS, parse_network, parse_paths, parse_patterns
from attractor.errors import UsageError
from attractor.fileio.writes import make_run_dir
from attractor.handlers.backend import backend_name
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import CONTAINER_ENGINES, SANDBOX_REQUIRED, LocalEnvironment
from attractor.settings import Settings
from attractor.valueclass import frozen

# The sandbox and the containers are imported by the steps that use them: a run whose
# steps run no command (or run them unsandboxed) never loads them.
if TYPE_CHECKING:
    from attractor.proc.container import Container

#: Handler types whose steps run commands (tool nodes; agents run shell and hooks).
COMMAND_STEPS = ("tool", "codergen")


@frozen
class Boundary:
    """What one step's commands may reach."""

    sandbox: str  # "bwrap" or "none" once resolved
    policy: EnvPolicy
    network: bool
    writable: tuple[Path, ...]
    #: ``network="a.com,b.org"``: only these hosts, through the engine's proxy.
    hosts: tuple[str, ...] = ()
    #: The container image of ``sandbox=docker|podman`` ('' when none is named).
    image: str = ""


#: The node attributes a step's boundary reads.
_OWN_KEYS = ("env", "env_allow", "env_deny", "sandbox", "network", "writable", "image")
_NO_OWN: tuple[str | None, ...] = (None,) * len(_OWN_KEYS)
#: Boundaries worked out for each live Settings (by id, dropped with it), by base
#: and the node's own values: the same few recur on every node of a run, and a
#: boundary's env policy keeps its answer for each variable it was asked about.
_KNOWN: dict[int, tuple[weakref.ref[Settings], dict[Any, Boundary]]] = {}
_KNOWN_LIMIT = 256


def _own_values(node: Node | None) -> tuple[str | None, ...]:
    """The node's own boundary attributes, stripped (None: absent or blank)."""
    if node is None:  # the run's own commands (workspace_setup): the run's settings alone
        return _NO_OWN
    attrs = node.attrs
    # From a list, not a generator: a tuple built from a generator is resized, and
    # dropped into the interpreter's free list of that size, which grew a node.
    return tuple([(attrs.get(key) or "").strip() or None for key in _OWN_KEYS])


def boundary_of(node: Node | None, settings: Settings, base: Path) -> Boundary:
    """The step's boundary before checking that the sandbox works here (``node`` None:
    the run's own, from the settings alone). Worked out once per run for each
    combination of a node's own values (``writable`` paths resolved then)."""
    own = _own_values(node)
    key = id(settings)
    known = _KNOWN.get(key)
    if known is None or known[0]() is not settings:
        ref = weakref.ref(settings, partial(_forget, key))
        known = _KNOWN[key] = (ref, {})
    boundaries = known[1]
    boundary = boundaries.get((base, own))
    if boundary is None:
        boundary = _boundary(own, settings, base)
        if len(boundaries) < _KNOWN_LIMIT:
            boundaries[(base, own)] = boundary
    return boundary


def _forget(key: int, _: object) -> None:
    _KNOWN.pop(key, None)


def _boundary(own: tuple[str | None, ...], settings: Settings, base: Path) -> Boundary:
    env, env_allow, env_deny, own_sandbox, net, own_writable, own_image = own
    mode = env or settings.env
    allow = settings.env_allow + parse_patterns(env_allow or "")
    deny = settings.env_deny + parse_patterns(env_deny or "")
    sandbox = own_sandbox or settings.sandbox
    if sandbox == "auto" and settings.sandbox == SANDBOX_REQUIRED:
        sandbox = SANDBOX_REQUIRED  # a node's auto cannot undo the run's requirement
    network = parse_network(net) if net is not None else settings.network
    hosts = network if isinstance(network, tuple) else ()
    extra = settings.writable + parse_paths(own_writable or "")
    writable = tuple(dict.fromkeys((base / p).resolve() for p in extra))
    policy = EnvPolicy(mode, allow, deny)
    image = own_image or settings.image or ""
    return Boundary(sandbox, policy, network is True, writable, hosts, image)


def resolved_sandbox(boundary: Boundary) -> str:
    """``bwrap`` when the step's commands run sandboxed here, ``docker`` or ``podman`` in a
    container, else ``none``."""
    if boundary.sandbox in ("none", *CONTAINER_ENGINES):
        return boundary.sandbox
    from attractor.proc.sandbox_env import sandbox_problem

    if boundary.sandbox == "auto" and sandbox_problem() is not None:
        return "none"
    return "bwrap"


def environment_for(
    node: Node | None,
    settings: Settings,
    workdir: Path,
    *,
    base: Path,
    run_dir: Path | None = None,
    stage_dir: Path | None = None,
) -> LocalEnvironment:
    """The execution environment of one step of ``node`` (None: the run's own command,
    ``workspace_setup``, in the run's boundary: the graph's or the run's sandbox, network,
    env and writable settings)."""
    boundary = boundary_of(node, settings, base)
    kind = resolved_sandbox(boundary)
    if kind == "none":
        return LocalEnvironment(workdir, boundary.policy)
    scratch = None
    if run_dir is not None and run_dir.is_dir():
        scratch = run_dir / "scratch"
        make_run_dir(scratch, exist_ok=True)  # private like the rest of the run directory
    if kind in CONTAINER_ENGINES:
        from attractor.proc.container import ContainerEnvironment

        box = _container(boundary, kind, workdir, run_dir, stage_dir, scratch)
        return ContainerEnvironment(workdir, boundary.policy, box=box)
    from attractor.proc.bwrap import Fence
    from attractor.proc.sandbox_env import BwrapEnvironment

    fence = Fence(
        workdir,
        writable=boundary.writable,
        run_dir=run_dir,
        stage_dir=stage_dir,
        scratch=scratch,
        network=boundary.network,
        hosts=boundary.hosts,
    )
    return BwrapEnvironment(workdir, boundary.policy, fence=fence)


def _container(
    boundary: Boundary,
    engine: str,
    workdir: Path,
    run_dir: Path | None = None,
    stage_dir: Path | None = None,
    scratch: Path | None = None,
) -> Container:
    from attractor.proc.container import Container

    return Container(
        engine,
        boundary.image,
        workdir,
        writable=boundary.writable,
        run_dir=None if run_dir is None else run_dir.resolve(),
        stage_dir=None if stage_dir is None else stage_dir.resolve(),
        scratch=None if scratch is None else scratch.resolve(),
        network=boundary.network,
    )


def looser_than_the_run(node: Node, settings: Settings, base: Path) -> str | None:
    """What lets ``node``'s commands do more than the run's own (None: nothing): the
    sandbox off, the network or more of it, more writable paths, more of the engine's
    variables. A child pipeline's file may have been written by a step, so its nodes
    may not loosen the boundary."""
    run, own = boundary_of(None, settings, base), boundary_of(node, settings, base)
    wider = ("none", "core", "inherit")  # the env policies, from the fewest variables
    if wider.index(own.policy.mode) > wider.index(run.policy.mode):
        return f"env={own.policy.mode}"
    allowed = [p for p in own.policy.allow if p not in run.policy.allow]
    if allowed:
        return "env_allow=" + ",".join(allowed)
    if resolved_sandbox(own) == "none" and resolved_sandbox(run) != "none":
        return "sandbox=none"
    if own.network and not run.network:
        return "network=on"
    if not own.network and not run.network and not set(own.hosts) <= set(run.hosts):
        return "network=" + ",".join(h for h in own.hosts if h not in run.hosts)
    more = [str(p) for p in own.writable if p not in run.writable]
    return "writable=" + ",".join(more) if more else None


def describe_boundary(node: Node | None, settings: Settings, base: Path) -> str:
    """One line for ``--dry-run``: where the node's commands would run."""
    boundary = boundary_of(node, settings, base)
    policy = boundary.policy.describe()
    kind = resolved_sandbox(boundary)
    if kind == "none":
        return f"local, no sandbox, {policy}"
    if kind in CONTAINER_ENGINES:
        from attractor.proc.container import container_problem, describe_container

        box = _container(boundary, kind, base)
        return describe_container(box, policy, container_problem(kind) if box.image else None)
    from attractor.proc.allowlist import describe_network

    net = describe_network(boundary.network, boundary.hosts)
    extra = "".join(f", {p}" for p in boundary.writable)
    return f"bwrap sandbox, {net}, writable: workdir{extra}, {policy}"


def runs_commands(node: Node, settings: Settings) -> bool:
    """Whether ``node``'s step may run commands: a tool step, or an agent not simulated."""
    if node.handler_type not in COMMAND_STEPS:
        return False
    return node.handler_type != "codergen" or backend_name(node, settings) != "simulate"


def preflight(graph: Graph, settings: Settings, base: Path) -> str | None:
    """Refuse a run whose boundaries cannot hold; else a notice to show, or None.

    Raises:
        UsageError: ``--sandbox required`` (or a node's ``sandbox=bwrap``)
            without a working sandbox, a node's ``sandbox=none`` under
            ``--sandbox required``, or a ``writable`` path that does not exist.
    """
    steps = [node for node in graph.nodes() if runs_commands(node, settings)]
    if not steps:  # nothing runs a command: no sandbox to try
        return None
    from attractor.proc.sandbox_env import sandbox_problem

    problem = sandbox_problem()
    fallback: list[str] = []
    notices: list[str] = []
    for node in steps:
        boundary = boundary_of(node, settings, base)
        readonly = _read_only_workdir(node, graph, settings, base, boundary, problem)
        if readonly is not None:
            notices.append(readonly)
        for path in boundary.writable:
            if not path.exists():
                raise UsageError(
                    f"node {node.id}: writable path {path} does not exist; create it or "
                    "remove it from writable="
                )
        if settings.sandbox == SANDBOX_REQUIRED and boundary.sandbox == "none":
            raise UsageError(
                f"node {node.id}: sandbox=none, but the run requires a sandbox "
                f"({settings.source('sandbox')} required)"
            )
        if boundary.sandbox in CONTAINER_ENGINES:
            _check_container(node, boundary, settings)
            continue
        if problem is None or boundary.sandbox == "none":
            if problem is None and boundary.sandbox != "none" and boundary.hosts:
                _check_bridge(node)
            continue
        if boundary.sandbox in ("bwrap", SANDBOX_REQUIRED):
            who = "the run" if settings.sandbox == SANDBOX_REQUIRED else f"node {node.id}"
            raise UsageError(f"{who} requires a sandbox, but {problem}")
        fallback.append(node.id)
    if fallback:
        notices.insert(
            0,
            f"notice: no sandbox: {problem}; commands run unsandboxed with a filtered "
            "environment (--sandbox none hides this notice, --sandbox required refuses)",
        )
    return "\n".join(dict.fromkeys(notices)) or None


def _check_container(node: Node, boundary: Boundary, settings: Settings) -> None:
    """A container needs an image, an engine that answers, and no host allow-list."""
    engine = boundary.sandbox
    if not boundary.image:
        raise UsageError(
            f"node {node.id}: sandbox={engine} needs an image: set image= on the node or "
            'the graph (e.g. image="python:3.12-slim")'
        )
    if boundary.hosts:
        raise UsageError(
            f"node {node.id}: sandbox={engine} takes network=on or off, not a list of hosts "
            "(use sandbox=bwrap for an allow-list)"
        )
    backend = node.raw("backend") or settings.backend
    if node.handler_type == "codergen" and backend in AGENT_BACKENDS:
        raise UsageError(
            f"node {node.id}: sandbox={engine} does not apply to the {backend} agent CLI; "
            "use sandbox=auto or bwrap for it"
        )
    from attractor.proc.container import container_problem

    problem = container_problem(engine)
    if problem is not None:
        raise UsageError(f"node {node.id}: sandbox={engine}, but {problem}")


def _check_bridge(node: Node) -> None:
    """An allow-list of hosts needs ``socat`` inside the sandbox (see attractor.proc.netproxy)."""
    if shutil.which("socat") is None:
        raise UsageError(
            f"node {node.id}: network= lists hosts, which needs socat to reach the proxy from "
            "inside the sandbox (Debian/Ubuntu: apt-get install socat); or set network=on"
        )


def _read_only_workdir(
    node: Node,
    graph: Graph,
    settings: Settings,
    base: Path,
    boundary: Boundary,
    problem: str | None,
) -> str | None:
    """A notice when the node's commands would find their workdir read-only."""
    sandboxed = boundary.sandbox != "none" and problem is None
    raw = str(node.get("workdir") or "").strip()
    if not raw and settings.source("workdir") != "graph attribute workdir":
        raw = str(graph.get("workdir") or "").strip()
    workdir = (base / raw).resolve() if raw else base
    if not workdir.is_dir() or writable_inside(workdir, sandboxed=sandboxed):
        return None
    return (
        f"notice: node {node.id}: the workspace {workdir} is read-only for its commands; "
        "a command that writes there fails (make it writable to allow writes)"
    )


def writable_inside(path: Path, *, sandboxed: bool) -> bool:
    """Whether a command may write in ``path``: inside the sandbox even root obeys the mode bits."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return False
        if not sandboxed or os.geteuid() != 0:
            return os.access(path, os.W_OK)
        info = path.stat()
    except OSError:
        return False
    if info.st_uid == 0:
        return bool(info.st_mode & stat.S_IWUSR)
    if info.st_gid in (0, *os.getgroups()):
        return bool(info.st_mode & stat.S_IWGRP)
    return bool(info.st_mode & stat.S_IWOTH)
