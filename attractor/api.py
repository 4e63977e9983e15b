"""The library API the CLI is built on: load, lint, run, resume and draw a pipeline.

Each function takes the same inputs as the matching command; settings are
resolved exactly as ``attractor run`` resolves them (flags, environment,
config file, graph attributes, defaults).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attractor.dot.graph import Graph
    from attractor.engine.run import RunOptions, RunResult
    from attractor.errors import Diagnostic
    from attractor.events import Event
    from attractor.handlers.backend import CodergenBackend
    from attractor.handlers.interviewer import Interviewer
    from attractor.settings import Settings


def load(path: str | Path) -> Graph:
    """Parse and transform a pipeline file; raises ValidationError on lint errors."""
    from attractor.engine.run import prepare_run_graph

    return prepare_run_graph(Path(path))


def lint(path: str | Path) -> list[Diagnostic]:
    """Every diagnostic for a pipeline file (a syntax error is one ``syntax`` diagnostic)."""
    from attractor.linter.prepare import prepare

    return prepare(Path(path))[1]


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
    from attractor.engine.executor import RunJob
    from attractor.engine.run import execute

    graph = load(path)
    settings = settings_for(graph, flags, config_file)
    options = _options(settings, graph, context, interviewer, observers)
    try:
        return await execute(RunJob("run", Path(path), graph), options)
    finally:
        if options.backend is not None:
            await options.backend.aclose()


async def resume(
    run_dir: str | Path,
    *,
    flags: Mapping[str, Any] | None = None,
    interviewer: Interviewer | None = None,
    observers: list[Callable[[Event], None]] | None = None,
    config_file: str | None = None,
) -> RunResult:
    """Continue a stopped run from its checkpoint."""
    from attractor.engine.executor import RunJob
    from attractor.engine.run import execute
    from attractor.engine.rundir import RunDir

    graph = load(RunDir(Path(run_dir)).pipeline_path)
    settings, _notes = resume_settings(Path(run_dir), graph, flags, config_file)
    options = _options(settings, graph, None, interviewer, observers)
    try:
        return await execute(RunJob("resume", Path(run_dir), graph), options)
    finally:
        if options.backend is not None:
            await options.backend.aclose()


def draw(path: str | Path, *, run_dir: str | Path | None = None, fmt: str = "svg") -> bytes:
    """The pipeline in ``path`` as a picture (``svg``, ``png`` or ``pdf``).

    With ``run_dir``, each node is coloured by its state in that run, with its
    visits and time, and the route the run took is drawn bold.

    Raises:
        UsageError: ``run_dir`` is not a run directory, or is a run of another
            pipeline (its recorded pipeline digest differs from this file's).
    """
    from attractor.engine.inventory import is_run_dir, pipeline_digest, run_state
    from attractor.engine.rundir import PIPELINE_COPY, source_hash
    from attractor.errors import UsageError
    from attractor.render import render

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


def settings_for(
    graph: Graph, flags: Mapping[str, Any] | None = None, config_file: str | None = None
) -> Settings:
    """Resolve the run settings for ``graph`` (its attributes are the graph layer)."""
    from attractor.settings import graph_names_model, resolve_settings

    return resolve_settings(
        flags,
        config_file=config_file,
        graph_attrs=graph.attrs,
        graph_models=graph_names_model(graph),
    )


def resume_settings(
    run_dir: Path,
    graph: Graph,
    flags: Mapping[str, Any] | None = None,
    config_file: str | None = None,
) -> tuple[Settings, list[str]]:
    """The settings a stopped run continues with, and notes on what changed.

    The manifest's record (backend, model, workdir, caps, ...) comes right after
    the flags; each flag that changes a recorded value is named in a note. A
    recorded ``--timeout`` gives the time it has left (all of it again when the
    run was stopped by it).

    Raises:
        UsageError: the run's LLM nodes ran on models and the resume would switch
            them to ``simulate`` without ``--backend`` saying so.
    """
    import dataclasses

    from attractor.engine.rundir import RunDir
    from attractor.errors import AttractorError, UsageError
    from attractor.settings import (
        RECORDED_SOURCE,
        graph_names_model,
        record_of,
        resolve_settings,
    )

    try:
        manifest = RunDir(run_dir).read_manifest()
    except AttractorError:
        manifest = {}
    recorded = manifest.get("settings")
    recorded = {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
    settings = resolve_settings(
        flags,
        config_file=config_file,
        graph_attrs=graph.attrs,
        graph_models=graph_names_model(graph),
        recorded=recorded,
    )
    # Compared and shown as recorded: absolute paths, base URLs without secrets.
    now = record_of(settings)
    notes = [
        f"{settings.source(name)} {now[name]} replaces the run's {name} {was}"
        for name, was in recorded.items()
        if now.get(name, was) != was and not settings.source(name).startswith(RECORDED_SOURCE)
    ]
    simulated = manifest.get("simulated")
    used_models = isinstance(simulated, dict) and simulated.get("models") is False
    if used_models and settings.backend == "simulate" and settings.source("backend") != "--backend":
        raise UsageError(
            f"{run_dir} ran its LLM nodes on models, and this resume would finish them on "
            "the simulate backend (no model settings recorded or given): pass the flags the "
            "run was started with (--provider/--model/--backend), or --backend simulate to "
            "simulate on purpose"
        )
    if manifest.get("status") in ("success", "fail"):
        return settings, []  # the engine refuses it: nothing to resume, nothing to note
    if settings.timeout is not None and settings.source("timeout").startswith(RECORDED_SOURCE):
        used = float(manifest.get("active_seconds", 0.0) or 0.0)
        left = settings.timeout - used
        written = settings.text("timeout")
        if left > 0:
            settings = dataclasses.replace(settings, timeout=left)
            notes.append(f"the run's --timeout {written} has {left:.0f}s left")
        else:  # a run stopped by its timeout: this session gets the same time again
            notes.append(
                f"the run's --timeout {written} was used up ({used:.0f}s ran); this session "
                f"gets {written} again (pass --timeout to choose)"
            )
    return settings, notes


_NOTICES: set[str] = set()


def check_boundaries(settings: Settings, graph: Graph) -> None:
    """Refuse a run whose sandbox cannot hold (UsageError); print a fallback notice once."""
    import sys

    from attractor.handlers.boundary import preflight

    notice = preflight(graph, settings, Path(settings.workdir or ".").resolve())
    if notice is not None and notice not in _NOTICES:
        _NOTICES.add(notice)
        print(notice, file=sys.stderr)


def backend_for(settings: Settings, graph: Graph) -> CodergenBackend | None:
    """The model backend, built before the run so a missing key or SDK stops it first.

    None means the engine's own ``simulate`` backend. When nodes name their own
    ``backend`` (or the run's is an agent CLI), a router that also checks each
    agent CLI is installed and logged in. The steps' boundaries are checked
    first (:func:`check_boundaries`).
    """
    check_boundaries(settings, graph)
    from attractor.handlers.external import route_backends

    routed = route_backends(settings, graph)
    if routed is not None:
        return routed
    if settings.backend == "simulate":
        return None
    from attractor.handlers.agent_backend import build_backend

    return build_backend(settings, graph)


def _options(
    settings: Settings,
    graph: Graph,
    context: Mapping[str, Any] | None,
    interviewer: Interviewer | None,
    observers: list[Callable[[Event], None]] | None,
) -> RunOptions:
    from attractor.engine.executor import executor_for
    from attractor.engine.run import RunOptions
    from attractor.handlers.interviewer import AutoApproveInterviewer

    return RunOptions(
        settings=settings,
        interviewer=interviewer or AutoApproveInterviewer(),
        context_seed=dict(context or {}),
        backend=backend_for(settings, graph),
        observers=list(observers or []),
        executor=executor_for(settings),
    )
