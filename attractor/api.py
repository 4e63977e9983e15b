"""The library API the CLI is built on: load, lint, run, resume and draw a pipeline.

Each function takes the same inputs as the matching command; settings are
resolved exactly as ``attractor run`` resolves them (flags, environment,
config file, graph attributes, defaults). Runs start in the one launcher
(``launch.py``) the CLI and the server use too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.launch import (
    Hooks,
    backend_for,
    launch,
    load_graph,
    plan_resume,
    plan_run,
    resume_settings,
    settings_for,
)

if TYPE_CHECKING:
    from attractor.dot.graph import Graph
    from attractor.engine.run import RunResult
    from attractor.errors import Diagnostic
    from attractor.events import Event
    from attractor.handlers.interviewer import Interviewer

__all__ = [
    "backend_for",
    "check_pipeline",
    "draw",
    "format_pipeline",
    "lint",
    "load",
    "resume",
    "resume_settings",
    "run",
    "settings_for",
]


def load(path: str | Path) -> Graph:
    """Parse and transform a pipeline file; raises ValidationError on lint errors."""
    return load_graph(Path(path))[0]


def format_pipeline(path: str | Path) -> tuple[str, str]:
    """A pipeline file's text and its canonical form (what ``attractor fmt`` writes).

    Raises:
        PipelineError: the file cannot be read or does not parse.
    """
    from attractor.dot.formatter import format_file

    return format_file(path)


def lint(
    path: str | Path, *, config_file: str | None = None, cwd: Path | None = None
) -> list[Diagnostic]:
    """Every diagnostic for a pipeline file (a syntax error is one ``syntax`` diagnostic):
    what ``attractor lint`` reports (see :func:`check_pipeline`)."""
    return check_pipeline(path, config_file=config_file, cwd=cwd)[1]


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


async def run(
    path: str | Path,
    *,
    flags: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    interviewer: Interviewer | None = None,
    observers: list[Callable[[Event], None]] | None = None,
    config_file: str | None = None,
) -> RunResult:
    """Lint and run a pipeline file; ``flags`` are settings as the CLI names them.

    Example: ``await attractor.run("p.dot", flags={"timeout": "5m", "max_turns": "10"})``.
    """
    plan = plan_run(Path(path), flags, config_file)
    hooks = Hooks(interviewer, context=dict(context or {}), observers=list(observers or []))
    return await launch(plan, hooks)


async def resume(
    run_dir: str | Path,
    *,
    flags: Mapping[str, Any] | None = None,
    interviewer: Interviewer | None = None,
    observers: list[Callable[[Event], None]] | None = None,
    config_file: str | None = None,
) -> RunResult:
    """Continue a stopped run from its checkpoint."""
    plan = plan_resume(Path(run_dir), flags, config_file)
    return await launch(plan, Hooks(interviewer, observers=list(observers or [])))


def draw(path: str | Path, *, run_dir: str | Path | None = None, fmt: str = "svg") -> bytes:
    """The pipeline in ``path`` as a picture (``svg``, ``png`` or ``pdf``).

    With ``run_dir``, each node is coloured by its state in that run, with its
    visits and time, and the route the run took is drawn bold.

    Raises:
        UsageError: ``run_dir`` is not a run directory, or is a run of another
            pipeline (its recorded pipeline digest differs from this file's).
    """
    from attractor.errors import UsageError
    from attractor.render import render
    from attractor.runview.inventory import run_state
    from attractor.runview.listing import is_run_dir, pipeline_digest
    from attractor.store.rundir import PIPELINE_COPY, source_hash

    graph = load(path)
    state = None
    if run_dir is not None:
        if not is_run_dir(Path(run_dir)):
            raise UsageError(
                f"--run {run_dir}: not a run directory (no manifest.json or checkpoint.json); "
                "pass a directory that attractor run printed"
            )
        ran = pipeline_digest(Path(run_dir))
        if ran is not None and ran != source_hash(graph.source):
            # Another pipeline's states on this one's nodes would mislead.
            raise UsageError(
                f"--run {run_dir}: that run is not of {path} (its pipeline differs); "
                f"draw the run's own copy: attractor graph {Path(run_dir) / PIPELINE_COPY} "
                f"--run {run_dir}"
            )
        state = run_state(Path(run_dir), graph)
    return render(graph, state, fmt)
