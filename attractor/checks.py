"""The one check of a pipeline file that ``attractor lint``, the MCP ``lint`` tool and
a server's refusal to start a run share: the lint rules and the config file a run
would read. Kept apart from the library API so that ``attractor lint`` loads none of
the run's code (the launcher).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attractor.dot.graph import Graph
    from attractor.errors import Diagnostic


def check_pipeline(
    path: str | Path, *, config_file: str | None = None, cwd: Path | None = None
) -> tuple[Graph | None, list[Diagnostic]]:
    """A pipeline file's graph (None: it does not parse) and every diagnostic of it.

    The one check ``attractor lint``, the MCP ``lint`` tool and a server's
    refusal to start a run share: the lint rules, then what a run from ``cwd``
    (default: this directory) would find wrong in its config file
    (``config_file``, else ``attractor.toml`` or ``pyproject.toml`` there): an
    ``acp:NAME`` backend or an MCP server with no table, and a broken
    ``[mcp_servers.NAME]`` table (at its line in the config file). The config
    file is read only when a node names an ACP agent or an MCP server.

    Raises:
        PipelineError: the file cannot be read.
    """
    from attractor.linter.acp import AcpAgentsRule
    from attractor.linter.prepare import prepare
    from attractor.settings import configured_acp_agents

    here = (cwd or Path.cwd()).absolute()
    rule = AcpAgentsRule(lambda: configured_acp_agents(here, config_file))
    graph, found = prepare(Path(path), file=str(path), extra_rules=[rule])
    if graph is not None and any(n.raw("mcp") for n in [graph, *graph.nodes()]):
        extra = _mcp_config(graph, here, config_file)
        # The pipeline file's findings by position, then the config file's.
        found = sorted([*found, *extra], key=lambda d: (d.file != str(path), d.line, d.column))
    return graph, found


def _mcp_config(graph: Graph, cwd: Path, config_file: str | None) -> list[Diagnostic]:
    """The MCP servers the graph names that the config does not define, then each
    broken ``[mcp_servers.NAME]`` table of the config."""
    from attractor.config_file import MCP_KEY, config_file_path, line_of
    from attractor.errors import Diagnostic, UsageError
    from attractor.linter.mcp import unknown_servers
    from attractor.mcp_config import mcp_server_problems
    from attractor.settings import find_config

    where = config_file_path(cwd, config_file)
    shown = "attractor.toml" if where is None else _shown(where, cwd)
    try:
        config = find_config(cwd, config_file)
    except UsageError as error:
        message = f"the config file cannot be read, so no MCP server can start: {error}"
        return [Diagnostic("mcp", "error", message, shown, 0, 0, fix="fix the config file")]
    if config is None:
        return unknown_servers(graph, (), None)
    label, table = config
    servers = table.get(MCP_KEY)
    found = unknown_servers(graph, set(servers) if isinstance(servers, dict) else (), label)
    for problem in mcp_server_problems(label, table) if MCP_KEY in table else []:
        line = line_of(where, problem.table, problem.key) if where is not None else 0
        message = str(problem).removeprefix(f"{label}: ")
        fix = f"correct [{problem.table}] in {label}: a run from here stops on it"
        found.append(Diagnostic("mcp", "error", message, shown, line, 1 if line else 0, fix=fix))
    return found


def _shown(path: Path, cwd: Path) -> str:
    """``path`` as a diagnostic names it: relative to ``cwd`` when inside it."""
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)
