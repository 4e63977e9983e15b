"""The boundary of an agent-CLI node, in one line for ``--dry-run``.

The CLI process itself runs outside attractor's bubblewrap sandbox: it must
reach its provider over the network and write its session files under its
config directory, so ``network=off`` cannot hold for it. What attractor
controls is its environment (the node's policy plus the CLI's own provider
variables) and, when the node's sandbox is on, the CLI's own sandbox flags for
the commands it runs (see docs/agent-clis.md, "Boundary").
"""

from __future__ import annotations

import os
from pathlib import Path

from attractor.dot.graph import Node
from attractor.handlers.boundary import boundary_of, resolved_sandbox
from attractor.handlers.external.spec import AgentCli
from attractor.proc.allowlist import describe_network
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import CONTAINER_ENGINES
from attractor.settings import Settings


def own_env(cli: AgentCli, policy: EnvPolicy) -> dict[str, str]:
    """The CLI's own provider variables set here, less what the node's ``env_deny`` names."""
    return EnvPolicy("none", allow=cli.passed_env, deny=policy.deny).apply(os.environ)


def describe_cli_boundary(cli: AgentCli, node: Node, settings: Settings, base: Path) -> str:
    """``claude-code outside the sandbox, env=core + own: ...; its commands: ...``."""
    boundary = boundary_of(node, settings, base)
    names = sorted(own_env(cli, boundary.policy))
    env = f"{boundary.policy.describe()} + own: {', '.join(names) if names else 'none set'}"
    kind = resolved_sandbox(boundary)
    if kind == "none":
        return f"{cli.name}, local, no sandbox, {env}"
    if kind in CONTAINER_ENGINES:
        return f"{cli.name}: sandbox={kind} does not apply to an agent CLI (the run is refused)"
    net = describe_network(boundary.network, boundary.hosts)
    if boundary.hosts and not cli.filters_hosts:
        net = "network off (it cannot limit hosts)"
    extra = "".join(f", {p}" for p in boundary.writable)
    missing = cli.missing_for_sandbox()
    if cli.command_sandbox and missing:
        commands = f"not sandboxed ({cli.command_sandbox} needs {' and '.join(missing)})"
    elif cli.command_sandbox:
        commands = f"{cli.command_sandbox}, {net}, writable: workdir{extra}"
    else:
        commands = f"not sandboxed ({cli.name} has no sandbox that works without a container)"
    return (
        f"{cli.name} outside the sandbox (it needs its provider), {env}; its commands: {commands}"
    )
