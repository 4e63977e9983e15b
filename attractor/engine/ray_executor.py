"""The Ray executor (``attractor[ray]``): a whole run, and each parallel branch, as a Ray task.

The run directory is the only thing the driver and the workers share, so it
must live on a filesystem every worker mounts (docs/ray.md). The driver claims
the directory, leaves a probe file in it and submits the run task; the task
first checks that it sees the probe (else the run fails at once, naming the
path) and then drives the run with the engine's own loop. On a retry after its
worker died, the task finds the checkpoint and resumes: completed nodes do not
run again and the interrupted node runs again from its start.

Stopping goes through the run directory too: the driver writes ``.stop`` (or
``.stop-BRANCH`` for one branch) holding the status to stop as, and the task
stops its run exactly as a signal would stop a local one, killing its tool
processes. A task that does not end within the kill grace is force-cancelled.
"""

from __future__ import annotations

import json
import logging
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import ray
from ray.exceptions import RayTaskError

from attractor.dot.graph import Graph
from attractor.dot.resources import RESOURCES_ATTR, parse_resources
from attractor.engine.eventbus import EventBus
from attractor.engine.executor import WORKER_FILE, Drive, RunJob
from attractor.engine.loop import BranchRunnerImpl
from attractor.engine.ray_events import Outbox, drain, event_hub, relay
from attractor.engine.retry import BackoffConfig
from attractor.engine.run import (
    RunOptions,
    RunResult,
    RunStatus,
    Stop,
    drive_job,
    make_services,
    prepare_run_graph,
    watch_signals,
)
from attractor.engine.rundir import CHECKPOINT, PROCESSES, RunDir, new_run_dir
from attractor.engine.setup import run_budget
from attractor.engine.state import NodeResult, Run, Walk
from attractor.errors import AttractorError, RunError, UsageError
from attractor.events import Event, PipelineStarted
from attractor.fileio import write_text
from attractor.handlers.base import BranchResult, BranchRunner
from attractor.handlers.builtin import default_registry
from attractor.handlers.context import Context
from attractor.handlers.interviewer import Interviewer
from attractor.proc.ledger import CURRENT as CURRENT_LEDGER
from attractor.proc.ledger import ProcessLedger, stop_survivors
from attractor.settings import Settings

PROBE = ".shared-check"
STOP = ".stop"
#: How often a task looks for a stop request, and the driver for a finished task.
_POLL = 0.1
#: A run task mostly waits on its branches: a sliver of a core, so that it still
#: lands only on nodes that run work (not on a head started with --num-cpus=0).
_RUN_CPUS = 0.01
#: How long past the kill grace a stopped task may take to write its last checkpoint.
_FINISH_GRACE = 10.0


class RayExecutor:
    """Runs on a Ray cluster: ``address`` to join one, None to start a local one."""

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        self.address = address

    async def execute(self, job: RunJob, options: RunOptions, drive: Drive) -> RunResult:
        connect(self.address)
        settings, run_dir, token = _claim(job, options.settings)
        job = replace(job, path=job.path.resolve())  # the worker's cwd is not ours
        events = Outbox(event_hub(), token)
        interviewer = _portable(options.interviewer)
        spec = _RunSpec(job, run_dir, token, settings, options.context_seed, interviewer, events)
        ref = _run_task.options(num_cpus=_RUN_CPUS).remote(spec)
        bus = options.bus or EventBus()
        for observer in options.observers:
            bus.add_observer(observer)
        stop = Stop()
        try:
            async with anyio.create_task_group() as group:
                if options.handle_signals:
                    await group.start(_signals_to_file, run_dir / STOP, stop)
                group.start_soon(relay, events, bus)
                result: RunResult = await _wait(ref, run_dir / STOP, settings.kill_grace)
                group.cancel_scope.cancel()
        finally:
            drain(events, bus)
            bus.close()
        return result

    def branches(self, run: Run, local: BranchRunner) -> BranchRunner:
        return _RayBranches(run)


def _portable(interviewer: Interviewer | None) -> Interviewer | None:
    """The interviewer, if it can travel to a worker (answers from a file, auto-approve).

    One bound to this process (the server's web page) cannot: human gates of
    that run then fail on the worker, as a console gate does without a terminal.
    """
    try:
        ray.cloudpickle.dumps(interviewer)  # type: ignore[no-untyped-call]
    except Exception:
        return None
    return interviewer


def connect(address: str | None) -> None:
    """Join the cluster at ``address`` (or start a local one) unless already connected."""
    if not ray.is_initialized():
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )


def node_resources(text: str | None) -> dict[str, Any]:
    """The Ray task options for a node's ``resources`` attribute."""
    if not text:
        return {}
    asked = parse_resources(text)
    options: dict[str, Any] = {}
    if "cpu" in asked:
        options["num_cpus"] = asked.pop("cpu")
    if "gpu" in asked:
        options["num_gpus"] = asked.pop("gpu")
    if asked:
        options["resources"] = asked
    return options


def branch_resources(graph: Graph, start: str, stop_at: str | None) -> dict[str, Any]:
    """What a branch asks: for each resource, the most any of its nodes asks."""
    most: dict[str, float] = {}
    seen: set[str] = set()
    todo = [start]
    while todo:
        node_id = todo.pop()
        if node_id in seen or node_id == stop_at:
            continue
        seen.add(node_id)
        node = graph.node(node_id)
        for name, amount in parse_resources(node.raw(RESOURCES_ATTR) or "").items():
            most[name] = max(amount, most.get(name, 0.0))
        todo.extend(e.target for e in node.outgoing())
    return node_resources(",".join(f"{k}={v}" for k, v in most.items()))


# -- the whole run ------------------------------------------------------------------


@dataclass(frozen=True)
class _RunSpec:
    job: RunJob
    run_dir: Path
    token: str
    settings: Settings
    seed: dict[str, Any]
    interviewer: Interviewer | None
    #: The run's events, for the driver's observers (display, --json, the server).
    events: Outbox


def _claim(job: RunJob, settings: Settings) -> tuple[Settings, Path, str]:
    """The run directory (claimed now, so a retried task finds it) and its probe token."""
    if job.kind == "resume":
        run_dir = job.path.resolve()
    else:
        run_dir = new_run_dir(settings.logs_dir, job.graph.name, source=settings.source("logs_dir"))
        run_dir = run_dir.resolve()
    workdir = Path(settings.workdir or ".").resolve()
    (run_dir / STOP).unlink(missing_ok=True)  # a stop request of an earlier session
    token = secrets.token_hex(8)
    write_text(run_dir / PROBE, token)
    return replace(settings, logs_dir=str(run_dir), workdir=str(workdir)), run_dir, token


@ray.remote(max_retries=3)
def _run_task(spec: _RunSpec) -> RunResult:
    try:
        return anyio.run(_drive_remote, spec)
    except AttractorError as exc:
        raise _Failure(str(exc), exc.exit_code) from None


async def _drive_remote(spec: _RunSpec) -> RunResult:
    first = (spec.run_dir / PROBE).exists()  # the first attempt removes the probe
    fresh = spec.job.kind == "run" and not (spec.run_dir / CHECKPOINT).exists()
    check_shared(spec.run_dir, spec.token, required=fresh)
    if fresh:
        job = spec.job
    elif first:  # a resume, as asked
        job = replace(spec.job, path=spec.run_dir)
    else:  # a retry after the worker was lost: continue from the checkpoint
        job = RunJob("resume", spec.run_dir, spec.job.graph)
    options = RunOptions(
        settings=spec.settings,
        interviewer=spec.interviewer,
        context_seed=dict(spec.seed) if fresh else {},
        executor=RayExecutor(),
        stop_requests=lambda: _stop_requested(spec.run_dir / STOP),
        observers=[_noting_worker(spec.run_dir / WORKER_FILE), spec.events],
    )
    try:
        return await drive_job(job, options)
    finally:
        spec.events.flush()  # every event is with the driver before the run's end


def check_shared(run_dir: Path, token: str, *, required: bool) -> None:
    """Fail at once when this worker does not see the run directory the driver wrote."""
    probe = run_dir / PROBE
    try:
        seen = probe.read_text(encoding="utf-8")
    except OSError:
        seen = None
    if seen is None and (required or not run_dir.is_dir()):
        raise _unseen(run_dir)
    if seen is not None and seen != token:
        raise RunError(f"{run_dir} was claimed by another run; pass another --logs-dir")
    probe.unlink(missing_ok=True)


def _noting_worker(path: Path) -> Callable[[Event], None]:
    def observe(event: Event) -> None:
        if isinstance(event, PipelineStarted):  # the run directory is set up by then
            note_worker(path)

    return observe


def note_worker(path: Path) -> None:
    """Write which cluster node and host this task runs on."""
    node = ray.get_runtime_context().get_node_id()
    write_text(path, json.dumps({"node_id": node, "host": socket.gethostname()}) + "\n")


def _unseen(run_dir: Path) -> RunError:
    host = socket.gethostname()
    return RunError(
        f"the Ray worker on {host} cannot see the run directory {run_dir}: "
        "put the logs root (--logs-dir) on a filesystem every worker mounts (docs/ray.md)"
    )


# -- stopping -------------------------------------------------------------------


async def _stop_requested(path: Path) -> RunStatus:
    """Return the status written to ``path`` once the driver writes it."""
    while True:
        text = _read_stop(path)
        if text is not None:
            return text if text in _STOP_STATUSES else "interrupted"  # type: ignore[return-value]
        await anyio.sleep(_POLL)


def _read_stop(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None


_STOP_STATUSES = ("timed_out", "interrupted", "terminated", "hangup")


async def _signals_to_file(path: Path, stop: Stop, *, task_status: Any) -> None:
    """Pass a stop signal on to the remote run as a stop request."""
    scope = anyio.CancelScope()
    await watch_signals(scope, stop, task_status=task_status)
    write_text(path, stop.status or "interrupted")


async def _wait(ref: Any, stop_file: Path, grace: float) -> Any:
    """The task's value; on cancellation, ask it to stop, then cancel it by force."""
    try:
        await _finished(ref)
    except BaseException:
        with anyio.CancelScope(shield=True):
            write_text(stop_file, "interrupted")
            with anyio.move_on_after(grace + _FINISH_GRACE):
                await _finished(ref)
            ray.cancel(ref, force=True)
        raise
    return _value(ref)


async def _finished(ref: Any) -> None:
    while True:
        ready, _ = ray.wait([ref], timeout=0)
        if ready:
            return
        await anyio.sleep(_POLL)


class _Failure(Exception):
    """An error of the engine on a worker, as plain values (every error pickles then)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message, exit_code)
        self.message, self.exit_code = message, exit_code


def _value(ref: Any) -> Any:
    """The task's value; its error as the one-line error the CLI prints."""
    try:
        return ray.get(ref)
    except RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, _Failure):
            error = UsageError if cause.exit_code == UsageError.exit_code else RunError
            raise error(cause.message) from None
        first = str(cause).strip().splitlines()[-1:] or ["no message"]
        raise RunError(f"the Ray task failed: {first[0]}") from None


# -- parallel branches ----------------------------------------------------------


@dataclass(frozen=True)
class _BranchSpec:
    run_dir: Path
    settings: Settings
    interviewer: Interviewer
    start: str
    context: Context
    stop_at: str | None
    first_index: int


@dataclass
class _BranchOutput:
    result: BranchResult
    rows: list[NodeResult] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


class _RayBranches:
    """Runs each branch as a Ray task, spread over the cluster's nodes."""

    def __init__(self, run: Run) -> None:
        self.run = run

    async def __call__(self, start: str, context: Context, stop_at: str | None) -> BranchResult:
        run = self.run
        spec = _BranchSpec(
            run.run_dir.path,
            run.services.settings,
            run.services.interviewer,
            start,
            context,
            stop_at,
            run.stage_index,
        )
        asks = branch_resources(run.graph, start, stop_at)
        ref = _branch_task.options(scheduling_strategy="SPREAD", **asks).remote(spec)
        stop_file = run.run_dir.path / f"{STOP}-{start}"
        stop_file.unlink(missing_ok=True)  # left by an earlier visit of this parallel node
        output: _BranchOutput = await _wait(ref, stop_file, run.services.settings.kill_grace)
        for event in output.events:
            run.emit(event)
        for row in output.rows:
            run.add_result(row)
        return output.result


@ray.remote(max_retries=3)
def _branch_task(spec: _BranchSpec) -> _BranchOutput:
    try:
        return anyio.run(_branch_remote, spec)
    except AttractorError as exc:
        raise _Failure(str(exc), exc.exit_code) from None


async def _branch_remote(spec: _BranchSpec) -> _BranchOutput:
    run_dir = RunDir(spec.run_dir)
    if not run_dir.pipeline_path.is_file():
        raise _unseen(spec.run_dir)
    graph = _run_graph(run_dir.pipeline_path)
    note_worker(run_dir.stage_dir(spec.start) / WORKER_FILE)
    output = _BranchOutput(BranchResult(id=spec.start, status="fail"))
    bus = EventBus()
    bus.add_observer(output.events.append)
    options = RunOptions(settings=spec.settings, interviewer=spec.interviewer)
    services, owned = make_services(options, graph, run_budget(spec.settings), bus)
    run = Run(
        graph=graph,
        run_dir=run_dir,
        services=services,
        registry=default_registry(),
        bus=bus,
        backoff=BackoffConfig(),
        main=Walk(spec.context),
        stage_index=spec.first_index,
        executor=RayExecutor(),
    )
    stop_file = spec.run_dir / f"{STOP}-{spec.start}"
    # A retry after this branch's worker was lost: its commands may still run
    # (on this machine; a machine that went away took them along).
    ledger_path = spec.run_dir / f"{PROCESSES}-{spec.start}"
    stop_survivors(ledger_path, spec.settings.kill_grace)
    ledger = ProcessLedger(ledger_path)
    token = CURRENT_LEDGER.set(ledger)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_request, stop_file, group.cancel_scope)
            output.result = await BranchRunnerImpl(run)(spec.start, spec.context, spec.stop_at)
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if owned:
                await services.backend.aclose()
            ledger.close()
            CURRENT_LEDGER.reset(token)
    output.rows = list(run.node_results)
    return output


#: Parsed pipeline copies by path and change time: a worker runs many branches of a run.
_GRAPHS: dict[tuple[Path, int], Graph] = {}


def _run_graph(path: Path) -> Graph:
    key = (path, path.stat().st_mtime_ns)
    if key not in _GRAPHS:
        _GRAPHS.clear()  # one run's at a time is enough to keep
        _GRAPHS[key] = prepare_run_graph(path)
    return _GRAPHS[key]


async def _cancel_on_request(stop_file: Path, scope: anyio.CancelScope) -> None:
    await _stop_requested(stop_file)
    scope.cancel()
