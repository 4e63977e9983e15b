"""The Ray executor (``attractor[ray]``): a whole run, and each parallel branch, as a Ray task.

The run directory is the only thing the driver and the workers share, so it
must live on a filesystem every worker mounts (docs/ray.md). The driver claims
the directory, leaves a probe file in it and submits the run task; the task
first checks that it sees the probe (else the run fails at once, naming the
path) and then drives the run with the engine's own loop. On a retry after its
worker died, the task finds the checkpoint and resumes: completed nodes do not
run again and the interrupted node runs again from its start.

While the task runs, the driver relays its events to the run's observers and
answers its human gates with the run's interviewer (``events.py``). The
branches of its parallel nodes are tasks of their own (``branches.py``).
Stopping goes through the run directory (``tasks.py``).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import ray

from attractor.engine.seam import (
    Drive,
    EventBus,
    Run,
    RunJob,
    RunOptions,
    RunResult,
    Stop,
    drive_job,
    watch_signals,
)
from attractor.errors import InputFileError, RunError
from attractor.events import Event, PipelineStarted
from attractor.fileio.reads import read_bounded
from attractor.fileio.writes import write_text
from attractor.handlers.base import BranchRunner
from attractor.handlers.interviewer import ConsoleInterviewer
from attractor.ray_exec.branches import BackendFactory, RayBranches, worker_options
from attractor.ray_exec.connect import connect
from attractor.ray_exec.events import (
    Batcher,
    Outbox,
    RemoteInterviewer,
    drain,
    emit_all,
    event_hub,
    relay,
)
from attractor.ray_exec.tasks import (
    STOP,
    Held,
    note_worker,
    run_remote,
    stop_requested,
    unseen,
    unwrapped,
    wait_for,
)
from attractor.run_status import RunStatus
from attractor.settings import Settings, absolute_backend
from attractor.store.rundir import CHECKPOINT, new_run_dir
from attractor.store.worker import WORKER_FILE
from attractor.valueclass import frozen
from attractor.workspace.preflight import WorkspacePlan

PROBE = ".shared-check"
#: The probe holds a token of a few dozen characters.
_PROBE_LIMIT = 4096
#: A run task mostly waits on its branches: a sliver of a core, so that it still
#: lands only on nodes that run work (not on a head started with --num-cpus=0).
_RUN_CPUS = 0.01


class RayExecutor:
    """Runs on a Ray cluster: ``address`` to join one, None to start a local one.

    In a run task, ``events`` is where the run's events go; its branches send
    theirs to the run task under keys of their own. ``make_backend`` builds the
    model backend on each worker (the driver's cannot travel): the launcher
    passes ``launch.backend_for``.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        events: Outbox | None = None,
        make_backend: BackendFactory | None = None,
    ) -> None:
        self.address = address
        self.events = events
        self.make_backend = make_backend

    async def execute(self, job: RunJob, options: RunOptions, drive: Drive) -> RunResult:
        connect(self.address)
        settings, run_dir, token = _claim(job, options.settings)
        job = replace(job, path=job.path.resolve())  # the worker's cwd is not ours
        events = Outbox(event_hub(), token, ray.get_runtime_context().get_node_id())
        spec = _RunSpec(
            job,
            run_dir,
            token,
            settings,
            options.context_seed,
            events,
            self.make_backend,
            options.workspace,
        )
        bus = options.bus or EventBus()
        for observer in options.observers:
            bus.add_observer(observer)
        interviewer = options.interviewer or ConsoleInterviewer()
        stop = Stop()
        output: _RunOutput | None = None
        try:
            async with anyio.create_task_group() as group:
                if options.handle_signals:
                    await group.start(_signals_to_file, run_dir / STOP, stop)
                if options.stop_requests is not None:  # a front end's cancel (serve)
                    group.start_soon(_requests_to_file, options.stop_requests, run_dir / STOP)
                group.start_soon(relay, events, bus, interviewer)
                # Submitted with no wait before wait_for's: a stop from here on reaches it.
                ref = _run_task.options(num_cpus=_RUN_CPUS).remote(spec)
                held: Held[_RunOutput] = await unwrapped(
                    wait_for(ref, run_dir / STOP, settings.kill_grace)
                )
                group.cancel_scope.cancel()
            output = held.value()
        finally:
            drain(events, bus)
            if output is not None:  # the events the task held to the end come last
                emit_all(bus, output.events)
            bus.close()
        return output.result

    def branches(self, run: Run, local: BranchRunner) -> BranchRunner:
        if self.events is None:  # not in a run task: nothing to relay branch events to
            return local
        return RayBranches(run, self, self.events, self.make_backend)


# -- the whole run ------------------------------------------------------------------


@frozen
class _RunSpec:
    job: RunJob
    run_dir: Path
    token: str
    settings: Settings
    seed: dict[str, Any]
    #: The run's events, for the driver's observers (display, --json, the server).
    events: Outbox
    #: Builds the run's model backend on the worker.
    make_backend: BackendFactory | None = None
    #: The run's workspace as the launcher planned it (attractor.workspace).
    workspace: WorkspacePlan | None = None


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
    # The worker's working directory is not ours: every path it gets is absolute.
    settings = replace(
        settings,
        logs_dir=str(run_dir),
        workdir=str(workdir),
        backend=absolute_backend(settings.backend),
    )
    return settings, run_dir, token


@frozen
class _RunOutput:
    result: RunResult
    #: The run's events the task still held when it ended (see ``events.Batcher``).
    events: list[Event]


@ray.remote(max_retries=3)
def _run_task(spec: _RunSpec) -> _RunOutput:
    return run_remote(_drive_remote, spec)


async def _drive_remote(spec: _RunSpec) -> _RunOutput:
    first = (spec.run_dir / PROBE).exists()  # the first attempt removes the probe
    fresh = spec.job.kind == "run" and not (spec.run_dir / CHECKPOINT).exists()
    check_shared(spec.run_dir, spec.token, required=fresh)
    if fresh:
        job = spec.job
    elif first:  # a resume, as asked
        job = replace(spec.job, path=spec.run_dir)
    else:  # a retry after the worker was lost: continue from the checkpoint
        job = RunJob("resume", spec.run_dir, spec.job.graph)
    batcher = Batcher(spec.events)
    options = worker_options(
        spec.settings,
        job.graph,
        # Every gate of the run, its branches' too, is answered on the driver.
        RemoteInterviewer(spec.events),
        spec.make_backend,
        context_seed=dict(spec.seed) if fresh else {},
        executor=RayExecutor(events=spec.events, make_backend=spec.make_backend),
        stop_requests=lambda: stop_requested(spec.run_dir / STOP),
        observers=[_noting_worker(spec.run_dir / WORKER_FILE), batcher],
        workspace=spec.workspace,
    )
    done = False
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(batcher.send_every)
            result = await drive_job(job, options)
            group.cancel_scope.cancel()
        done = True
    finally:
        if not done:  # every event is with the driver before the run's end
            batcher.send_rest()
        if options.backend is not None:
            with anyio.CancelScope(shield=True):
                await options.backend.aclose()
    return _RunOutput(result, batcher.rest())


def check_shared(run_dir: Path, token: str, *, required: bool) -> None:
    """Fail at once when this worker does not see the run directory the driver wrote."""
    probe = run_dir / PROBE
    try:
        seen: str | None = read_bounded(probe, _PROBE_LIMIT, "probe file")
    except InputFileError:
        seen = None
    if seen is None and (required or not run_dir.is_dir()):
        raise unseen(run_dir)
    if seen is not None and seen != token:
        raise RunError(f"{run_dir} was claimed by another run; pass another --logs-dir")
    probe.unlink(missing_ok=True)


def _noting_worker(path: Path) -> Callable[[Event], None]:
    def observe(event: Event) -> None:
        if isinstance(event, PipelineStarted):  # the run directory is set up by then
            note_worker(path)

    return observe


async def _requests_to_file(requests: Callable[[], Awaitable[RunStatus]], path: Path) -> None:
    """Pass a front end's stop request on to the remote run, with its status (the run
    stops itself as the engine does here; ``wait_for`` waits for it to end)."""
    write_text(path, await requests())


async def _signals_to_file(path: Path, stop: Stop, *, task_status: Any) -> None:
    """Pass a stop signal on to the remote run as a stop request."""
    scope = anyio.CancelScope()
    await watch_signals(scope, stop, task_status=task_status)
    write_text(path, stop.status or RunStatus.INTERRUPTED)
