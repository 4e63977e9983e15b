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

from attractor.checks import check_pipeline
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
