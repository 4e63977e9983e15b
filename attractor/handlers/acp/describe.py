"""Which ACP agent a node names, checked before the run, and its ``--dry-run`` line.

Nothing here imports the ACP SDK: a dry run and the pre-run checks work
without it, and a run that needs it says how to install it.
"""

from __future__ import annotations

import importlib.util
import shlex
import shutil
from typing import TYPE_CHECKING

from attractor.config_file import AcpAgent
from attractor.dot.graph import Node
from attractor.dot.schema import ACP_PREFIX
from attractor.errors import UsageError
from attractor.handlers.acp.permissions import Policy
from attractor.handlers.acp.written import where_backend
from attractor.settings import Settings

if TYPE_CHECKING:
    from attractor.handlers.backend import CodergenBackend

INSTALL_HINT = "pip install 'attractor[acp]'"


def acp_agent_for(name: str, node: Node, settings: Settings) -> AcpAgent:
    """The ``[acp_agents.NAME]`` that ``backend="acp:NAME"`` names.

    Raises:
        UsageError: no such table in the config file.
    """
    short = name.removeprefix(ACP_PREFIX)
    agent = settings.acp_agents.get(short)
    if agent is None:
        known = ", ".join(sorted(settings.acp_agents)) or "none"
        raise UsageError(
            f"{where_backend(node)}: backend {name} names no [acp_agents.{short}] in the config "
            f"(configured: {known}); add one to attractor.toml with command (and args, env)"
        )
    return agent


def acp_backend(name: str, node: Node, settings: Settings) -> CodergenBackend:
    """The backend of the nodes that name ``acp:NAME``, once the agent can start.

    Raises:
        UsageError: the agent is not configured, the SDK is not installed, or the
            agent's program is not on PATH.
    """
    agent = acp_agent_for(name, node, settings)
    if importlib.util.find_spec("acp") is None:
        raise UsageError(
            f"{where_backend(node)}: backend {name} needs the agent-client-protocol "
            f"package; install it with {INSTALL_HINT}"
        )
    if shutil.which(agent.command) is None:
        raise UsageError(
            f"{where_backend(node)}: backend {name} runs {agent.command!r}, which is not on "
            f"PATH; install it or fix command in {agent.source}"
        )
    from attractor.handlers.acp.backend import AcpBackend

    return AcpBackend(agent)


def describe_acp(name: str, node: Node, settings: Settings) -> str:
    """``acp:claude: claude-agent-acp (attractor.toml: acp_agents.claude), permissions ...``."""
    short = name.removeprefix(ACP_PREFIX)
    agent = settings.acp_agents.get(short)
    if agent is None:
        return f"{name}: not configured (no [acp_agents.{short}] in the config)"
    command = shlex.join([agent.command, *agent.args])
    return f"{name}: {command} (from {agent.source}), acp_permissions={Policy.of(node).name}"
