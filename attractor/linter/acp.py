"""``backend="acp:NAME"`` against the config file's ``[acp_agents.NAME]`` tables.

The linter reads no config file itself (it sits below the settings): the
caller that knows where the run's config is (``attractor lint``,
``attractor.api.lint``) hands in a loader, called only when a node names an
ACP agent, so a pipeline without one never touches the config.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from attractor.dot.graph import Graph, SourcePos
from attractor.dot.schema import ACP_PREFIX, is_acp_backend
from attractor.errors import AttractorError, Diagnostic
from attractor.linter.base import at
from attractor.valueclass import frozen

#: Returns (where the config came from, the agent names it defines); may raise
#: an AttractorError for a config file that cannot be read.
AgentsLoader = Callable[[], tuple[str, Collection[str]]]


@frozen
class AcpAgentsRule:
    """A lint rule: every ``acp:NAME`` a codergen node runs names a configured agent."""

    load: AgentsLoader
    name: str = "backend"

    def apply(self, graph: Graph) -> list[Diagnostic]:
        found: list[Diagnostic] = []
        reported: set[SourcePos | None] = set()
        config: tuple[str, Collection[str]] | str | None = None
        for node in graph.nodes():
            chosen = (node.raw("backend") or graph.raw("backend") or "").strip()
            if not is_acp_backend(chosen) or node.handler_type != "codergen":
                continue
            pos = node.pos_of("backend") or graph.pos_of("backend")
            if config is None:
                config = self._config()
            problem = _problem(chosen, config)
            if problem is None or pos in reported:
                continue
            reported.add(pos)
            where = node if node.pos_of("backend") else graph
            message, fix = problem
            found.append(at(self.name, "error", where, message, key="backend", fix=fix))
        return found

    def _config(self) -> tuple[str, Collection[str]] | str:
        try:
            return self.load()
        except AttractorError as exc:
            return str(exc)


def _problem(chosen: str, config: tuple[str, Collection[str]] | str) -> tuple[str, str] | None:
    short = chosen.removeprefix(ACP_PREFIX)
    if isinstance(config, str):
        return f"backend {chosen}: the config file cannot be read: {config}", "fix the config file"
    label, names = config
    if short in names:
        return None
    known = ", ".join(sorted(names)) or "none"
    message = f"backend {chosen} names no [acp_agents.{short}] in {label} (configured: {known})"
    fix = f'add [acp_agents.{short}] with command = "..." to attractor.toml, or name another agent'
    return message, fix
