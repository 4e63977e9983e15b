"""How a run starts: a fresh run directory, a resumed checkpoint, or a loop_restart."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attractor.agent.run_budget import SETTING_OF, RunLimits, RunTurnBudget
from attractor.dot.graph import Graph
from attractor.engine.continuation import Continuation, continued
from attractor.engine.progress import TrackedContext
from attractor.engine.state import NodeResult, Walk, sum_usage
from attractor.errors import CheckpointError, InputFileError, RunError, UsageError
from attractor.fileio.reads import TEXT_LIMIT, read_bounded
from attractor.handlers.context import Context
from attractor.llm.types import Usage
from attractor.proc.ledger import stop_survivors
from attractor.run_status import RESUMABLE, RunStatus
from attractor.settings import Settings, record_of
from attractor.store.base import RunStore, StoreFactory
from attractor.store.checkpoint import RUNNING, Checkpoint
from attractor.store.rundir import (
    PROCESSES,
    RESULTS,
    discard_unstarted,
    new_run_dir,
    sibling_run_dir,
    source_hash,
    use_permissions,
    write_error,
)
from attractor.valueclass import mutable
from attractor.version import __version__
from attractor.workspace.names import COMMIT_KEY, START_KEY


@mutable
class RunSetup:
    """What a run directory starts (or continues) with."""

    graph: Graph
    #: The run directory's store (store/base.py), opened by the setup.
    run_dir: RunStore
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
    #: The last journal record the restored state contains (0 for a new directory).
    journal_seq: int = 0
    #: How a continued run goes on (``retry_failed:NODE``, ``from:NODE``), else "".
    continuation: str = ""
    #: What the run directory had spent before this session (a resume), every attempt counted.
    usage_before: Usage = field(default_factory=Usage)


def initial_context(graph: Graph, seed: dict[str, Any]) -> Context:
    """Graph attributes mirrored as ``graph.*``, then the ``--set`` values."""
    context = TrackedContext({f"graph.{k}": v for k, v in graph.attrs.items()})
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
        return read_bounded(source_path, TEXT_LIMIT, "pipeline file")
    return ""


def start_setup(
    graph: Graph,
    source_path: Path | None,
    settings: Settings,
    seed: dict[str, Any],
    store: StoreFactory,
) -> RunSetup:
    """A fresh run directory for ``graph``, kept in the store ``store`` opens for it."""
    start = _start_node(graph)
    use_permissions(settings.run_permissions)
    run_dir = store(new_run_dir(settings.logs_dir, graph.name, source=settings.source("logs_dir")))
    try:
        run_dir.lock()
        text = _read_source(graph, source_path)
        manifest = _manifest(graph, run_dir, source_path, text)
        manifest["context_seed"] = dict(seed)
        # How nodes execute, so that a resume continues the same way (see api.resume_settings).
        manifest["settings"] = record_of(settings)
        # A simulated run says so where every later reader of the run directory looks.
        manifest["simulated"] = {
            "models": settings.backend == "simulate",
            "tools": settings.simulates_tools,
        }
        # The manifest first: it marks the directory as a run's (see rundir.never_started).
        run_dir.write_manifest(manifest)
        run_dir.copy_source(text)
        run_dir.copy_prompt_files(graph)
    except BaseException as exc:  # a full disk, or a signal: leave nothing half made
        run_dir.unlock()
        discard_unstarted(run_dir.path)
        if isinstance(exc, OSError):
            raise write_error(run_dir.path, exc, "run the pipeline again") from None
        raise
    return RunSetup(
        graph=graph,
        run_dir=run_dir,
        source_path=source_path,
        source_text=text,
        main=Walk(initial_context(graph, seed)),
        start=start,
        budget=run_budget(settings),
        seed=dict(seed),
        manifest=manifest,
        origin=run_dir.path,
    )


def run_budget(
    settings: Settings, turns_used: int = 0, spent: Usage | None = None
) -> RunTurnBudget:
    """The run-wide budgets; on resume, what the earlier part of the run spent counts."""
    limits = RunLimits(
        turns=settings.max_total_turns,
        tokens=settings.max_total_tokens,
        cost=settings.max_cost,
        sources={name: settings.source(name) for name in SETTING_OF.values()},
    )
    return RunTurnBudget(limits, used=turns_used, spent=spent)


def _manifest(graph: Graph, run_dir: RunStore, source: Path | None, text: str) -> dict[str, Any]:
    return {
        "name": graph.name,
        "goal": graph.goal,
        "run_id": run_dir.path.name,
        # Absolute, so a resume started from another directory checks the right file.
        "source_file": str(source.resolve()) if source is not None else None,
        "source_sha256": source_hash(text),
        "attractor_version": __version__,
        "started_at": (now := time.time()),
        "started_at_utc": utc_text(now),
        "status": RUNNING,
    }


def utc_text(ts: float) -> str:
    """An epoch time as ISO 8601 UTC, ``2026-11-23T17:38:33.413Z``."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def restart_setup(previous: RunSetup, target: str, store: StoreFactory) -> RunSetup:
    """A new run directory beside the first one, starting at ``target`` with fresh state."""
    origin = previous.origin or previous.run_dir.path
    n = previous.restarts + 1
    run_dir = store(sibling_run_dir(origin, f"restart{n}"))
    run_dir.lock()
    run_dir.copy_source(previous.source_text)
    run_dir.copy_prompt_files(previous.graph)
    manifest = _manifest(previous.graph, run_dir, previous.source_path, previous.source_text)
    manifest["restarted_from"] = previous.run_dir.path.name
    manifest["settings"] = previous.manifest.get("settings", {})
    manifest["context_seed"] = dict(previous.seed)
    return RunSetup(
        graph=previous.graph,
        run_dir=run_dir,
        source_path=previous.source_path,
        source_text=previous.source_text,
        # Visit limits count across restarts: a loop through a loop_restart edge
        # gets a fresh directory and context, not a fresh allowance.
        main=Walk(
            initial_context(previous.graph, previous.seed), visits=previous.main.visits.copy()
        ),
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
    how: Continuation | None = None,
    *,
    store: StoreFactory,
) -> RunSetup:
    """State restored from the checkpoint of run directory ``path``, kept in the
    store ``store`` opens for it.

    ``seed`` (``--set`` on resume) overrides the restored context values. The
    directory stays locked against other processes until the run finishes.
    """
    run_dir = store(path)
    use_permissions(settings.run_permissions)
    # Only a run gets a lock: a folder without a checkpoint is left as it is,
    # and loading the checkpoint reports what is missing.
    if run_dir.has_checkpoint():
        run_dir.lock()
    try:
        checkpoint = run_dir.load_checkpoint()
        # A command of the previous process that is somehow still running must
        # be gone before its node runs again (see proc/ledger.py).
        stopped = stop_survivors(path / PROCESSES)
        setup = _restore(run_dir, checkpoint, settings, prepare, seed or {}, how)
        if stopped:
            setup.warnings.append(
                f"stopped {len(stopped)} process group(s) the previous attractor left running"
            )
        return setup
    except BaseException:
        run_dir.unlock()
        raise


def _restore(
    run_dir: RunStore,
    checkpoint: Checkpoint,
    settings: Settings,
    prepare: Callable[[Path], Graph],
    seed: dict[str, Any],
    how: Continuation | None = None,
) -> RunSetup:
    path = run_dir.path
    if how is None:
        _check_resumable(path, checkpoint)
    graph = prepare(run_dir.pipeline_path)
    manifest = run_dir.read_manifest()
    notes: list[str] = []
    if how is not None:
        first = manifest.get("context_seed")
        initial = initial_context(graph, first if isinstance(first, dict) else {}).snapshot()
        checkpoint = continued(how, checkpoint, graph, path, initial)
        node = checkpoint.next_node or ""
        notes.append(how.describe(node))
        record = {**how.to_json(node), "at": utc_text(time.time())}
        manifest.setdefault("continuations", []).append(record)
        # Saved before the workspace moves to where it continues: a run killed during
        # that move is then one resumed as it is (it finishes the move), not a run that
        # still reads as finished while its branch and files went back. A plain resume
        # moves the files to the context's commit: for --retry-failed, where the failed
        # node began (its failed attempt's files are in the commit after it).
        start = checkpoint.context.get(START_KEY)
        if how.retry_failed and isinstance(start, str) and start:
            checkpoint.context[COMMIT_KEY] = start
        workspace = manifest.get("workspace")
        base = workspace.get("base") if isinstance(workspace, dict) else None
        if not checkpoint.context.get(COMMIT_KEY) and isinstance(base, str) and base:
            # A node first entered before any checkpoint (the first stage): the files
            # go back to the run's first commit.
            checkpoint.context[COMMIT_KEY] = base
        checkpoint.status, checkpoint.failure_reason = RunStatus.RUNNING, ""
        run_dir.save_checkpoint(checkpoint)
        run_dir.write_manifest({**manifest, "status": RunStatus.RUNNING})
    text = _read_source(graph, run_dir.pipeline_path)
    start = checkpoint.next_node or checkpoint.current_node or _start_node(graph)
    if not graph.has_node(start):
        raise CheckpointError(f"{path}: checkpoint names node {start!r}, not in the pipeline")
    source = manifest.get("source_file")
    main = restore_walk(checkpoint)
    main.context.apply(seed)
    # A loop_restart after the resume starts from the first run's --set values
    # and these, like a restart of the original run would.
    # Time spent in earlier sessions: what a --timeout set at the start has used.
    manifest["active_seconds_before"] = manifest.get("active_seconds", 0.0)
    first_seed = manifest.get("context_seed")
    all_seed = {**(first_seed if isinstance(first_seed, dict) else {}), **seed}
    manifest["context_seed"] = all_seed
    results = _node_results(run_dir, checkpoint.node_results_count)
    spent = spent_before(checkpoint, results)
    return RunSetup(
        graph=graph,
        run_dir=run_dir,
        source_path=Path(source) if isinstance(source, str) and source else None,
        source_text=text,
        main=main,
        start=start,
        budget=run_budget(settings, checkpoint.run_turns_used, spent),
        seed=all_seed,
        node_results=results,
        warnings=[*notes, *_source_warnings(manifest)],
        resumed=True,
        manifest=manifest,
        origin=path,
        journal_seq=checkpoint.journal_seq,
        continuation=f"{how.to_json(start)['how']}:{start}" if how is not None else "",
        usage_before=spent,
    )


def spent_before(checkpoint: Checkpoint, results: list[NodeResult]) -> Usage:
    """What the run spent before it stopped: the checkpoint's total of every attempt;
    a checkpoint written before attractor kept that total has only the summary rows."""
    if checkpoint.run_usage is not None:
        return Usage.from_json(checkpoint.run_usage)
    return sum_usage(results)


def _node_results(run_dir: RunStore, count: int) -> list[NodeResult]:
    results = []
    for n, row in enumerate(run_dir.read_results(count), start=1):
        try:
            results.append(NodeResult.from_json(row))
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(
                f"{run_dir.path / RESULTS}: line {n} is not a node result; "
                "the run directory is damaged, start a new run"
            ) from None
    return results


def _check_resumable(path: Path, checkpoint: Checkpoint) -> None:
    # Asking to continue a run that has nothing left to do is a usage error
    # (exit 2), like any other command that cannot work as asked.
    if checkpoint.status in RESUMABLE:
        return
    if checkpoint.status == RunStatus.RESTARTED:
        raise UsageError(
            f"{path}: this run restarted in a new directory (loop_restart); resume that"
        )
    said: dict[str, str] = {RunStatus.SUCCESS: "succeeded", RunStatus.FAIL: "failed"}
    how = said.get(checkpoint.status, checkpoint.status)
    again = (
        "resume --retry-failed runs the failed node again, --from NODE goes back to NODE, "
        "or start a new run"
        if checkpoint.status == RunStatus.FAIL
        else "resume --from NODE goes back to NODE, or start a new run"
    )
    raise UsageError(f"{path}: the run already finished (it {how}); {again}")


def restore_walk(checkpoint: Checkpoint) -> Walk:
    context = TrackedContext(checkpoint.context)
    context.logs = list(checkpoint.logs)
    return Walk(
        context=context,
        completed=list(checkpoint.completed_nodes),
        statuses=dict(checkpoint.node_outcomes),
        visits=Counter(checkpoint.node_visits),
        retries=dict(checkpoint.node_retries),
        current=checkpoint.current_node,
    )


def _source_warnings(manifest: dict[str, Any]) -> list[str]:
    source = manifest.get("source_file")
    recorded = manifest.get("source_sha256")
    if not isinstance(source, str) or not source or not recorded:
        return []
    try:
        current = source_hash(read_bounded(source, TEXT_LIMIT, "pipeline file"))
    except InputFileError as exc:
        if exc.kind == "os":
            return [f"{source} is gone; resuming with the copy in the run directory"]
        return [f"{source}: {exc.reason}; resuming with the copy in the run directory"]
    if current != recorded:
        return [f"{source} changed since this run started; resuming with the copy in the run dir"]
    return []
