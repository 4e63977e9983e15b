"""The branches of a parallel node as Ray tasks, spread over the cluster's nodes.

Each branch task walks its branch with the engine's own loop and writes its
nodes' stage directories into the shared run directory. While it runs, its
events reach the run task (and so ``events.jsonl`` and the driver) through the
event hub, its human gates are answered by the driver, and its agents draw on
the run's one budget (``budget.py``). After each node it saves where it
stands in the branch's progress file (``branch_progress.py``): a task retried
because its worker died, or run again after the run resumed, continues from
there. It hands its summary rows back to the run task when it ends.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

import anyio
import ray

from attractor.agent.run_budget import RunLimits
from attractor.dot.graph import Graph
from attractor.dot.resources import RESOURCES_ATTR, parse_resources
from attractor.engine.seam import (
    EventBus,
    Executor,
    NodeResult,
    Run,
    RunOptions,
    open_branch,
    prepare_run_graph,
)
from attractor.events import Event
from attractor.handlers.backend import CodergenBackend
from attractor.handlers.base import BranchResult
from attractor.handlers.context import Context
from attractor.handlers.interviewer import Interviewer
from attractor.proc.ledger import CURRENT as CURRENT_LEDGER
from attractor.proc.ledger import ProcessLedger, stop_survivors
from attractor.ray_exec.budget import SharedBudget, adopt, open_bank
from attractor.ray_exec.events import Batcher, Outbox, RemoteInterviewer, drain, emit_all, relay
from attractor.ray_exec.tasks import (
    STOP,
    cancel_on_request,
    note_worker,
    run_remote,
    unseen,
    unwrapped,
    wait_for,
)
from attractor.redact import CURRENT as CURRENT_REDACTOR
from attractor.settings import Settings, redactor_for
from attractor.store.rundir import PROCESSES, RunDir
from attractor.store.worker import WORKER_FILE
from attractor.valueclass import frozen, mutable
from attractor.workspace.branches import branch_name
from attractor.workspace.transport import Parcel, discard, receive, send, send_back, take_back
from attractor.workspace.workspace import branch_of

#: Builds the model backend of a run's settings (``launch.backend_for``).
#: A backend holds connections and cannot travel: each task builds its own.
BackendFactory = Callable[[Settings, Graph], "CodergenBackend"]


def worker_options(
    settings: Settings,
    graph: Graph,
    interviewer: Interviewer,
    make_backend: BackendFactory | None,
    **more: Any,
) -> RunOptions:
    """The run options of a run task or a branch task, with a backend built on this worker.

    The task closes ``options.backend`` when it ends. Without ``make_backend`` the
    run has no backend, and the engine refuses it.
    """
    backend = make_backend(settings, graph) if make_backend is not None else None
    return RunOptions(settings=settings, interviewer=interviewer, backend=backend, **more)


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


@frozen
class _BranchSpec:
    run_dir: Path
    settings: Settings
    start: str
    context: Context
    stop_at: str | None
    first_index: int
    progress: Path | None
    #: Where the branch's events go (its run task relays them).
    events: Outbox
    #: The driver's interviewer, for the branch's human gates.
    interviewer: RemoteInterviewer
    #: The run's budget while its branches run.
    bank: Any
    limits: RunLimits
    #: For parallel nodes inside the branch.
    executor: Executor
    #: Builds the branch's model backend on its worker.
    make_backend: BackendFactory | None = None
    #: The run's workspace at the fan-out, as a bundle (None: the run has none).
    parcel: Parcel | None = None


@mutable
class _BranchOutput:
    result: BranchResult
    rows: list[NodeResult] = field(default_factory=list)
    #: The branch's commits, as a bundle in the run directory, and their ref in it.
    bundle: Path | None = None
    ref: str = ""
    #: The branch's events the task still held when it ended (see ``events.Batcher``).
    events: list[Event] = field(default_factory=list)


class RayBranches:
    """The branch runner of one parallel node of a run on the cluster."""

    def __init__(
        self,
        run: Run,
        executor: Executor,
        events: Outbox,
        make_backend: BackendFactory | None = None,
    ) -> None:
        self.run = run
        self.executor = executor
        self.events = events
        self.make_backend = make_backend
        self._bank: Any = None

    def bank(self) -> Any:
        """The run budget's bank: the branch's own (nested) or one opened for this node."""
        budget = self.run.services.run_budget
        if isinstance(budget, SharedBudget):
            return budget.bank
        if self._bank is None:
            self._bank = open_bank(budget, self.events.node, self)
        return self._bank

    async def __call__(
        self, start: str, context: Context, stop_at: str | None, progress: Path | None = None
    ) -> BranchResult:
        run = self.run
        outbox = self.events.sub(start)
        spec = _BranchSpec(
            run_dir=run.run_dir.path,
            settings=run.services.settings,
            start=start,
            context=context,
            stop_at=stop_at,
            first_index=run.stage_index,
            progress=progress,
            events=outbox,
            interviewer=RemoteInterviewer(self.events),
            bank=self.bank(),
            limits=run.services.run_budget.limits,
            executor=self.executor,
            make_backend=self.make_backend,
        )
        if run.workspace is not None:  # the branch's files travel as git bundles
            with anyio.CancelScope(shield=True):
                parcel = await send(run.workspace, start, run.run_dir.path)
            spec = dataclasses.replace(spec, parcel=parcel)
        asks = branch_resources(run.graph, start, stop_at)
        ref = _branch_task.options(scheduling_strategy="SPREAD", **asks).remote(spec)
        stop_file = run.run_dir.path / f"{STOP}-{start}"
        stop_file.unlink(missing_ok=True)  # left by an earlier visit of this parallel node
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(relay, outbox, run.bus)
                held = await unwrapped(wait_for(ref, stop_file, run.services.settings.kill_grace))
                group.cancel_scope.cancel()
        finally:  # no await: nothing here can be cancelled
            drain(outbox, run.bus)
            self._settle_budget()
        output: _BranchOutput = held.value()
        emit_all(run.bus, output.events)  # after those it sent while it ran
        for row in output.rows:
            run.add_result(row)
        if run.workspace is not None and output.bundle is not None:
            with anyio.CancelScope(shield=True):
                await take_back(run.workspace, output.bundle, output.ref, start)
        return output.result

    def _settle_budget(self) -> None:
        """What the branches spent, into the run's own budget."""
        if self._bank is not None:
            adopt(self.run.services.run_budget, ray.get(self._bank.state.remote()))


@ray.remote(max_retries=3)
def _branch_task(spec: _BranchSpec) -> _BranchOutput:
    return run_remote(_branch_remote, spec)


async def _branch_remote(spec: _BranchSpec) -> _BranchOutput:
    run_dir = RunDir(spec.run_dir)
    if not run_dir.pipeline_path.is_file():
        raise unseen(spec.run_dir)
    graph = _run_graph(run_dir.pipeline_path)
    note_worker(run_dir.stage_dir(spec.start) / WORKER_FILE)
    batcher = Batcher(spec.events)
    bus = EventBus([batcher])
    options = worker_options(
        spec.settings, graph, spec.interviewer, spec.make_backend, executor=spec.executor
    )
    budget = SharedBudget(spec.bank, spec.limits)
    branch = open_branch(spec.run_dir, graph, options, budget, bus, spec.context, spec.first_index)
    stop_file = spec.run_dir / f"{STOP}-{spec.start}"
    # A retry after this branch's worker was lost: its commands may still run
    # (on this machine; a machine that went away took them along).
    ledger_path = spec.run_dir / f"{PROCESSES}-{spec.start}"
    stop_survivors(ledger_path, spec.settings.kill_grace)
    ledger = ProcessLedger(ledger_path)
    token = CURRENT_LEDGER.set(ledger)
    # The worker's environment is the one its commands get: its secrets are redacted.
    redacting = CURRENT_REDACTOR.set(redactor_for(spec.settings))
    result = BranchResult(id=spec.start, status="fail", failure_reason="the branch was stopped")
    local = Path(tempfile.mkdtemp(prefix="attractor-branch-")) if spec.parcel else None
    bundle, ref, done = None, "", False
    try:
        if spec.parcel is not None and local is not None:
            branch.run.workspace = await receive(spec.parcel, local)
        async with anyio.create_task_group() as group:
            group.start_soon(cancel_on_request, stop_file, group.cancel_scope)
            group.start_soon(batcher.send_every)
            result = await branch.runner(spec.start, spec.context, spec.stop_at, spec.progress)
            group.cancel_scope.cancel()
        remote = branch.run.workspace
        if remote is not None and result.commit:
            ref = "refs/heads/" + branch_of(branch_name(remote, spec.start))
            bundle = await send_back(remote, ref, spec.run_dir, spec.start)
        done = True
    finally:
        with anyio.CancelScope(shield=True):
            if local is not None:
                discard(local)
            await branch.backend.aclose()
            ledger.close()
            CURRENT_LEDGER.reset(token)
            CURRENT_REDACTOR.reset(redacting)
            if not done:  # every event is in the hub before the run task drains it
                batcher.send_rest()
    return _BranchOutput(result, list(branch.rows), bundle, ref, batcher.rest())


#: Parsed pipeline copies by path and change time: a worker runs many branches of a run.
_GRAPHS: dict[tuple[Path, int], Graph] = {}


def _run_graph(path: Path) -> Graph:
    key = (path, path.stat().st_mtime_ns)
    if key not in _GRAPHS:
        _GRAPHS.clear()  # one run's at a time is enough to keep
        _GRAPHS[key] = prepare_run_graph(path)
    return _GRAPHS[key]
