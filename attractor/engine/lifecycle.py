"""Initialize and finalize a run directory: start, resume, loop_restart and the final write."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph
from attractor.dot.schema import format_duration
from attractor.engine.checkpoint import RUNNING, Checkpoint
from attractor.engine.engine import WalkEnd
from attractor.engine.eventbus import EventBus
from attractor.engine.retry import BackoffConfig
from attractor.engine.rundir import (
    EventLog,
    RunDir,
    new_run_dir,
    sibling_run_dir,
    source_hash,
)
from attractor.engine.state import NodeResult, Run, Walk, save_checkpoint, sum_usage
from attractor.errors import CheckpointError, RunError, UsageError
from attractor.events import (
    PipelineCompleted,
    PipelineFailed,
    PipelineInterrupted,
    PipelineStarted,
    PipelineTimedOut,
)
from attractor.handlers.base import Services
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.registry import HandlerRegistry
from attractor.settings import Settings
from attractor.version import __version__

RESUMABLE = (RUNNING, "timed_out", "interrupted", "terminated")


@dataclass
class RunSetup:
    """What a run directory starts (or continues) with."""

    graph: Graph
    run_dir: RunDir
    source_path: Path | None
    source_text: str
    main: Walk
    start: str
    budget: RunTurnBudget
    seed: dict[str, Any]
    node_results: list[NodeResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    resumed: bool = False
    manifest: dict[str, Any] = field(default_factory=dict)
    #: The first run directory (loop_restart directories are named after it).
    origin: Path | None = None
    restarts: int = 0


def initial_context(graph: Graph, seed: dict[str, Any]) -> Context:
    """Graph attributes mirrored as ``graph.*``, then the ``--set`` values."""
    context = Context({f"graph.{k}": v for k, v in graph.attrs.items()})
    context.set("graph.goal", graph.goal)
    context.apply(seed)
    return context


def _start_node(graph: Graph) -> str:
    node = graph.start_node()
    if node is None:
        raise RunError("the pipeline needs exactly one start node (shape=Mdiamond); run lint")
    return node.id


def _read_source(graph: Graph, source_path: Path | None) -> str:
    if graph.source:
        return graph.source
    if source_path is not None and source_path.is_file():
        return source_path.read_text(encoding="utf-8")
    return ""


def start_setup(
    graph: Graph, source_path: Path | None, settings: Settings, seed: dict[str, Any]
) -> RunSetup:
    """A fresh run directory for ``graph``."""
    start = _start_node(graph)
    run_dir = RunDir(new_run_dir(settings.logs_dir, graph.name))
    run_dir.lock()
    text = _read_source(graph, source_path)
    run_dir.copy_source(text)
    manifest = _manifest(graph, run_dir, source_path, text)
    manifest["context_seed"] = dict(seed)
    return RunSetup(
        graph=graph,
        run_dir=run_dir,
        source_path=source_path,
        source_text=text,
        main=Walk(initial_context(graph, seed)),
        start=start,
        budget=RunTurnBudget(settings.max_total_turns),
        seed=dict(seed),
        manifest=manifest,
        origin=run_dir.path,
    )


def _manifest(graph: Graph, run_dir: RunDir, source: Path | None, text: str) -> dict[str, Any]:
    return {
        "name": graph.name,
        "goal": graph.goal,
        "run_id": run_dir.path.name,
        # Absolute, so a resume started from another directory checks the right file.
        "source_file": str(source.resolve()) if source is not None else None,
        "source_sha256": source_hash(text),
        "attractor_version": __version__,
        "started_at": time.time(),
        "status": RUNNING,
    }


def restart_setup(previous: RunSetup, target: str) -> RunSetup:
    """A new run directory beside the first one, starting at ``target`` with fresh state."""
    origin = previous.origin or previous.run_dir.path
    n = previous.restarts + 1
    run_dir = RunDir(sibling_run_dir(origin, f"restart{n}"))
    run_dir.lock()
    run_dir.copy_source(previous.source_text)
    manifest = _manifest(previous.graph, run_dir, previous.source_path, previous.source_text)
    manifest["restarted_from"] = previous.run_dir.path.name
    manifest["context_seed"] = dict(previous.seed)
    return RunSetup(
        graph=previous.graph,
        run_dir=run_dir,
        source_path=previous.source_path,
        source_text=previous.source_text,
        main=Walk(initial_context(previous.graph, previous.seed)),
        start=target,
        budget=previous.budget,
        seed=previous.seed,
        node_results=previous.node_results,
        warnings=previous.warnings,
        manifest=manifest,
        origin=origin,
        restarts=n,
    )


def resume_setup(
    path: Path,
    settings: Settings,
    prepare: Callable[[Path], Graph],
    seed: dict[str, Any] | None = None,
) -> RunSetup:
    """State restored from the checkpoint of run directory ``path``.

    ``seed`` (``--set`` on resume) overrides the restored context values. The
    directory stays locked against other processes until the run finishes.
    """
    run_dir = RunDir(path)
    if path.is_dir():  # else Checkpoint.load reports what is missing
        run_dir.lock()
    try:
        return _restore(run_dir, settings, prepare, seed or {})
    except BaseException:
        run_dir.unlock()
        raise


def _restore(
    run_dir: RunDir, settings: Settings, prepare: Callable[[Path], Graph], seed: dict[str, Any]
) -> RunSetup:
    path = run_dir.path
    checkpoint = Checkpoint.load(run_dir.checkpoint_path)
    _check_resumable(path, checkpoint)
    graph = prepare(run_dir.pipeline_path)
    manifest = run_dir.read_manifest()
    text = _read_source(graph, run_dir.pipeline_path)
    start = checkpoint.next_node or checkpoint.current_node or _start_node(graph)
    if not graph.has_node(start):
        raise CheckpointError(f"{path}: checkpoint names node {start!r}, not in the pipeline")
    source = manifest.get("source_file")
    main = restore_walk(checkpoint)
    main.context.apply(seed)
    # A loop_restart after the resume starts from the first run's --set values
    # and these, like a restart of the original run would.
    first_seed = manifest.get("context_seed")
    all_seed = {**(first_seed if isinstance(first_seed, dict) else {}), **seed}
    manifest["context_seed"] = all_seed
    return RunSetup(
        graph=graph,
        run_dir=run_dir,
        source_path=Path(source) if source else None,
        source_text=text,
        main=main,
        start=start,
        budget=RunTurnBudget(settings.max_total_turns, used=checkpoint.run_turns_used),
        seed=all_seed,
        node_results=[
            NodeResult.from_json(r) for r in run_dir.read_results(checkpoint.node_results_count)
        ],
        warnings=_source_warnings(manifest),
        resumed=True,
        manifest=manifest,
        origin=path,
    )


def _check_resumable(path: Path, checkpoint: Checkpoint) -> None:
    # Asking to continue a run that has nothing left to do is a usage error
    # (exit 2), like any other command that cannot work as asked.
    if checkpoint.status in RESUMABLE:
        return
    if checkpoint.status == "restarted":
        raise UsageError(
            f"{path}: this run restarted in a new directory (loop_restart); resume that"
        )
    how = {"success": "succeeded", "fail": "failed"}.get(checkpoint.status, checkpoint.status)
    raise UsageError(
        f"{path}: the run already finished (it {how}); nothing to resume, start a new run"
    )


def restore_walk(checkpoint: Checkpoint) -> Walk:
    context = Context(checkpoint.context)
    context.logs = list(checkpoint.logs)
    return Walk(
        context=context,
        completed=list(checkpoint.completed_nodes),
        outcomes={k: Outcome(StageStatus(v)) for k, v in checkpoint.node_outcomes.items()},
        statuses=dict(checkpoint.node_outcomes),
        visits=Counter(checkpoint.node_visits),
        retries=dict(checkpoint.node_retries),
        current=checkpoint.current_node,
    )


def _source_warnings(manifest: dict[str, Any]) -> list[str]:
    source = manifest.get("source_file")
    recorded = manifest.get("source_sha256")
    if not source or not recorded:
        return []
    path = Path(source)
    try:
        current = source_hash(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return [f"{source} is gone; resuming with the copy in the run directory"]
    if current != recorded:
        return [f"{source} changed since this run started; resuming with the copy in the run dir"]
    return []


def open_run(
    setup: RunSetup,
    services: Services,
    registry: HandlerRegistry,
    bus: EventBus,
    backoff: BackoffConfig | None,
) -> Run:
    """Attach the event log, announce the start and write the first checkpoint."""
    run = Run(
        graph=setup.graph,
        run_dir=setup.run_dir,
        services=services,
        registry=registry,
        bus=bus,
        backoff=backoff or BackoffConfig(),
        main=setup.main,
        node_results=setup.node_results,
        manifest=setup.manifest,
    )
    log = EventLog(setup.run_dir.events_path)
    bus.add_observer(log)
    results = _open_results(setup)
    run.results_file = results
    run.results_written = len(setup.node_results) if setup.resumed else 0
    run.closers += [
        lambda: bus.remove_observer(log),
        log.close,
        results.close,
        setup.run_dir.unlock,
    ]
    run.manifest["status"] = RUNNING
    if setup.resumed:
        run.manifest["resumed_at"] = time.time()
    setup.run_dir.write_manifest(run.manifest)
    run.emit(
        PipelineStarted(
            name=setup.graph.name,
            run_id=setup.run_dir.path.name,
            run_dir=str(setup.run_dir.path),
            resumed=setup.resumed,
        )
    )
    save_checkpoint(run, setup.start)
    return run


def _open_results(setup: RunSetup) -> IO[str]:
    """results.jsonl, cut back to the rows the checkpoint covers when resuming."""
    path = setup.run_dir.results_path
    if setup.resumed:
        rows = [json.dumps(r.to_json()) + "\n" for r in setup.node_results]
        path.write_text("".join(rows), encoding="utf-8")
    return path.open("a", encoding="utf-8")


def finish_run(
    run: Run,
    status: str,
    end: WalkEnd | None,
    timeout: float | None,
    restarted_into: str | None = None,
) -> None:
    """Final checkpoint, manifest and event; closes the event log. Runs once."""
    if run.finished:
        return
    run.finished = True
    duration = time.monotonic() - run.started
    run.failure_reason = _failure_reason(run, status, end, timeout)
    stopped = status in RESUMABLE
    if stopped and run.main.current:
        # The node in progress runs again from its start on resume: that entry
        # must not count twice against max_visits.
        run.main.visits[run.main.current] -= 1
        run.main.visits += Counter()  # drops the entry if it fell to zero
    try:
        save_checkpoint(run, run.main.current if stopped else None, status, run.failure_reason)
        _update_manifest(run, status, duration, restarted_into)
    finally:
        run.emit(_final_event(run, status, duration, timeout))
        for close in run.closers:
            close()


def _failure_reason(run: Run, status: str, end: WalkEnd | None, timeout: float | None) -> str:
    node = run.main.current or "?"
    if status == "timed_out":
        after = _timeout_text(run.services.settings) or format_duration(timeout or 0)
        return f"pipeline timed out after {after} while running {node}"
    if status in ("interrupted", "terminated"):
        return f"pipeline {status} while running {node}"
    if status == "fail":
        return end.reason if end is not None and end.reason else "pipeline failed"
    return ""


def _timeout_text(settings: Settings) -> str | None:
    """``--timeout`` as the user wrote it (``90s`` stays ``90s``), None when unset."""
    return settings.text("timeout") if settings.timeout is not None else None


def _update_manifest(run: Run, status: str, duration: float, restarted_into: str | None) -> None:
    manifest = run.manifest
    manifest.update(
        status=status,
        finished_at=time.time(),
        duration=round(duration, 3),
        usage=sum_usage(run.node_results),
        failure_reason=run.failure_reason,
        current_node=run.main.current,
    )
    if restarted_into:
        manifest["restarted_into"] = restarted_into
    run.run_dir.write_manifest(manifest)


def _final_event(
    run: Run, status: str, duration: float, timeout: float | None
) -> PipelineCompleted | PipelineFailed | PipelineTimedOut | PipelineInterrupted:
    if status in ("success", "restarted"):
        return PipelineCompleted(duration=duration, artifact_count=len(run.main.completed))
    if status == "timed_out":
        return PipelineTimedOut(timeout=timeout or 0.0, node=run.main.current, duration=duration)
    if status in ("interrupted", "terminated"):
        signal = "SIGINT" if status == "interrupted" else "SIGTERM"
        return PipelineInterrupted(signal=signal, node=run.main.current, duration=duration)
    return PipelineFailed(error=run.failure_reason, duration=duration)
