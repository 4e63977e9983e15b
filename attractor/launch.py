"""Where every run starts: the one launcher the library API, the CLI and the server share.

A run starts in two steps. :func:`plan_run` and :func:`plan_resume` load and
check the graph (:func:`load_graph`) and resolve its settings; they start
nothing and write nothing, so ``--dry-run`` and a refused resume stop there. :func:`launch`
then builds the run-level resources (the model backend today; workspaces,
sandboxes and MCP servers belong in :func:`_open_resources` too), the
executor and the :class:`~attractor.engine.run.RunOptions`, runs the job, and
closes every resource in a shielded scope, whether the run ended, failed or was
cancelled.

What differs between the front ends comes in as :class:`Hooks`: who answers
human gates, who watches the events, whether signals stop the run, and a
front end's own context (the CLI's display) held open for as long as the run.

This module is the composition root: it alone picks the executor
(:func:`executor_for`), so the engine core never imports the Ray executor.
Imports of the engine stay inside functions: importing the library API loads
none of it.

It is also the front ends' way into the run side: the few launcher concerns the
CLI, the server and the language server use from ``engine``, ``store`` and
``handlers`` (the run's result, a continuation, the interviewers, the checks of
starting a run, and what a launch would give a node, which the dry-run plan and
hover show) are re-exported here, each loaded on first use (:data:`_FRONT_END`),
so a front end imports as much of the engine as it did before and no more.
Apart from these, front ends read runs only through the read side, ``runview``
(docs/architecture.md; an import contract checks it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.valueclass import frozen, mutable

if TYPE_CHECKING:
    from attractor.dot.graph import Graph, Node
    from attractor.engine.continuation import Continuation as Continuation
    from attractor.engine.executor import Executor, RunJob
    from attractor.engine.retry import max_retries_for as max_retries_for
    from attractor.engine.run import NodeResult as NodeResult
    from attractor.engine.run import RunOptions
    from attractor.engine.run import RunResult as RunResult
    from attractor.errors import Diagnostic
    from attractor.events import Event
    from attractor.handlers.acp.describe import describe_acp as describe_acp
    from attractor.handlers.backend import CodergenBackend
    from attractor.handlers.backend import backend_name as backend_name
    from attractor.handlers.human import check_auto_choice as check_auto_choice
    from attractor.handlers.human import gates_needing_a_person as gates_needing_a_person
    from attractor.handlers.interviewer import Answer as Answer
    from attractor.handlers.interviewer import AnswerValue as AnswerValue
    from attractor.handlers.interviewer import AutoApproveInterviewer as AutoApproveInterviewer
    from attractor.handlers.interviewer import ConsoleInterviewer as ConsoleInterviewer
    from attractor.handlers.interviewer import Interviewer as Interviewer
    from attractor.handlers.interviewer import Question as Question
    from attractor.handlers.interviewer import QuestionType as QuestionType
    from attractor.handlers.interviewer import QueueInterviewer as QueueInterviewer
    from attractor.handlers.interviewer import match_option as match_option
    from attractor.handlers.interviewer import stdin_can_answer as stdin_can_answer
    from attractor.handlers.mcp_servers import describe_servers as describe_servers
    from attractor.handlers.model_spec import node_model_spec as node_model_spec
    from attractor.handlers.registry import HandlerRegistry
    from attractor.handlers.turn_budget import resolve_budget as resolve_budget
    from attractor.notify.notifier import Notifier
    from attractor.run_status import RunStatus
    from attractor.settings import Settings
    from attractor.store.rundir import check_logs_dir as check_logs_dir
    from attractor.store.rundir import disk_full as disk_full
    from attractor.workspace.preflight import WorkspacePlan

Observer = Callable[["Event"], None]


def load_graph(path: Path, *, include_folder: Path | None = None) -> tuple[Graph, list[Diagnostic]]:
    """Parse, transform and lint ``path``: the graph and its warnings.

    ``include_folder`` is where its sub-pipeline files start, when not beside it
    (a run directory's copy: the folder of the file the run started from).

    Raises:
        ValidationError: the pipeline has lint errors (or does not parse).
        PipelineError: the file cannot be read.
    """
    from attractor.linter.prepare import prepare_checked

    return prepare_checked(path, include_folder=include_folder)


@frozen
class Plan:
    """A checked run, ready to launch: the job and the settings it runs with."""

    job: RunJob
    settings: Settings
    #: The graph's lint warnings (the CLI prints them).
    warnings: list[Diagnostic] = field(default_factory=list)
    #: Resume only: each setting that differs from the run's record, in words.
    notes: list[str] = field(default_factory=list)

    @property
    def graph(self) -> Graph:
        return self.job.graph


def plan_run(
    path: Path,
    flags: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    *,
    graph: Graph | None = None,
    settings: Callable[[Graph], Settings] | None = None,
) -> Plan:
    """A new run of the pipeline file ``path``, its settings resolved as ``attractor run`` does.

    ``graph`` is the file's graph when the caller has loaded (and so checked) it
    already; ``settings`` resolves the settings another way (the server's,
    which confines every path to its root).
    """
    from attractor.engine.executor import RunJob

    warnings: list[Diagnostic] = []
    if graph is None:
        graph, warnings = load_graph(path)
    resolved = settings(graph) if settings is not None else settings_for(graph, flags, config_file)
    return Plan(RunJob("run", path, graph), resolved, warnings)


def plan_resume(
    run_dir: Path,
    flags: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    how: Continuation | None = None,
    *,
    graph: Graph | None = None,
    settings: Callable[[Graph], Settings] | None = None,
) -> Plan:
    """Continuing the run in ``run_dir``, from the run directory's copy of its pipeline.

    ``graph`` and ``settings`` as for :func:`plan_run`.
    """
    from attractor.engine.executor import RunJob
    from attractor.engine.run import origin_folder
    from attractor.store.rundir import RunDir

    warnings: list[Diagnostic] = []
    if graph is None:
        copy = RunDir(run_dir).pipeline_path
        graph, warnings = load_graph(copy, include_folder=origin_folder(copy))
    job = RunJob("resume", run_dir, graph, how)
    if settings is not None:
        return Plan(job, settings(graph), warnings)
    resolved, notes = resume_settings(run_dir, graph, flags, config_file)
    return Plan(job, resolved, warnings, notes)


def plan_fork(
    run_dir: Path,
    node: str,
    flags: Mapping[str, Any] | None = None,
    config_file: str | None = None,
) -> Plan:
    """A new run that starts where the run in ``run_dir`` was when ``node`` was first
    entered, state and workspace (``attractor fork``); ``flags["logs_dir"]`` names
    its directory. The original run is not written.

    Raises:
        UsageError: ``run_dir`` is no run directory, or it never entered ``node``.
    """
    import shutil

    from attractor.engine.continuation import Continuation, continued
    from attractor.engine.setup import initial_context
    from attractor.store.checkpoint import Checkpoint
    from attractor.store.fork import fork_run_dir
    from attractor.store.rundir import RunDir

    how = Continuation(from_node=node, fork=True)
    found = RunDir(run_dir)
    graph, _ = load_graph(found.pipeline_path)
    manifest = found.read_manifest()
    seed = manifest.get("context_seed")
    initial = initial_context(graph, seed if isinstance(seed, dict) else {}).snapshot()
    # Refused here, before anything is copied: a node it never entered.
    point = continued(how, Checkpoint.load(found.checkpoint_path), graph, run_dir, initial)
    rest = {k: v for k, v in (flags or {}).items() if k != "logs_dir"}
    ids = [n.id for n in graph.nodes()]
    target = fork_run_dir(run_dir, node, (flags or {}).get("logs_dir"), point, ids)
    try:
        return plan_resume(target, rest, config_file, how)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise


@mutable
class Hooks:
    """What the front end that starts a run adds to it."""

    #: Who answers human gates (None: every gate takes its default, auto-approve).
    interviewer: Interviewer | None = None
    #: Chooses the interviewer once the backend is built (it may refuse the run);
    #: used when ``interviewer`` is None.
    choose_interviewer: Callable[[Graph], Interviewer] | None = None
    #: Values for the context (``--set KEY=VALUE``; a new run only).
    context: Mapping[str, Any] = field(default_factory=dict)
    #: Called with each event of the run.
    observers: list[Observer] = field(default_factory=list)
    #: Opened once the backend and the interviewer are ready, closed with the run:
    #: the observer it yields watches the run (the CLI's display).
    watch: Callable[[Plan], contextlib.AbstractContextManager[Observer]] | None = None
    #: SIGINT/SIGTERM/SIGHUP stop the run (only the CLI, in the main thread).
    handle_signals: bool = False
    #: Returns when someone outside asks the run to stop, with the status to stop as.
    stop_requests: Callable[[], Awaitable[RunStatus]] | None = None
    #: The node types the run knows (None: the built-in ones); a library's own
    #: types are registered on ``handlers.builtin.default_registry()``.
    registry: HandlerRegistry | None = None
    #: The address of a run's page from its id (the server's), for notifications.
    link: Callable[[str], str] | None = None


async def launch(plan: Plan, hooks: Hooks | None = None) -> RunResult:
    """Run ``plan`` to its end, then close everything it opened (shielded)."""
    import anyio

    hooks = hooks or Hooks()
    stack = contextlib.AsyncExitStack()
    try:
        options = await _open(stack, plan, hooks)
        from attractor.engine.run import execute  # loaded by _open

        notifier = _notifier(plan, hooks)
        if notifier is None:
            return await execute(plan.job, options)
        options.observers.append(notifier)
        async with notifier.running():
            result = await execute(plan.job, options)
            await notifier.drain()  # the run's last notifications, bounded
        result.warnings.extend(notifier.warnings)
        return result
    finally:
        # Closing must finish even when the run is being cancelled.
        with anyio.CancelScope(shield=True):
            await stack.aclose()


async def _open(stack: contextlib.AsyncExitStack, plan: Plan, hooks: Hooks) -> RunOptions:
    """Everything the run uses, each entered into ``stack`` so that it is closed."""
    import anyio

    # First: a repository the run cannot start from is refused before anything else.
    # Its git command runs while the engine's modules load.
    found: dict[str, WorkspacePlan] = {}

    async def plan_workspace() -> None:
        found["plan"] = await workspace_plan(plan)

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(plan_workspace)
            await anyio.lowlevel.checkpoint()  # it has started git (in a repository)
            from attractor.engine.run import RunOptions
    except BaseExceptionGroup as errors:  # as the check would have raised it
        raise errors.exceptions[0] from None
    workspace = found["plan"]
    backend = await _open_resources(stack, plan)
    interviewer = hooks.interviewer
    if interviewer is None and hooks.choose_interviewer is not None:
        interviewer = hooks.choose_interviewer(plan.graph)
    observers = list(hooks.observers)
    if hooks.watch is not None:
        observers.append(stack.enter_context(hooks.watch(plan)))
    if interviewer is None:  # every gate takes its default
        from attractor.handlers.interviewer import AutoApproveInterviewer

        interviewer = AutoApproveInterviewer()
    return RunOptions(
        settings=plan.settings,
        interviewer=interviewer,
        context_seed=dict(hooks.context),
        backend=backend,
        observers=observers,
        handle_signals=hooks.handle_signals,
        executor=executor_for(plan.settings),
        stop_requests=hooks.stop_requests,
        registry=hooks.registry,
        workspace=workspace,
    )


async def workspace_plan(plan: Plan) -> WorkspacePlan:
    """The workspace the run gets, checked before anything runs (attractor.workspace).

    A resumed run keeps the workspace its manifest records, unless
    ``--workspace none`` turns it off for this session.

    Raises:
        UsageError: the repository cannot give the run a workspace now (a rebase or
            merge in progress, no commit yet, a bare repository, git missing).
    """
    from attractor.workspace.preflight import WorkspacePlan, preflight

    settings = plan.settings
    workdir = _workdir(settings)
    source = settings.source("workspace")
    if plan.job.kind == "resume":
        if settings.workspace == "none":
            return WorkspacePlan("none", source, workdir)
        return WorkspacePlan("recorded", "recorded with the run", workdir)
    planned = await preflight(
        settings.workspace,
        source,
        workdir,
        setup=settings.workspace_setup,
        links=settings.workspace_link,
    )
    if not planned.setup:
        return planned
    from attractor.handlers.boundary import describe_boundary

    where = describe_boundary(None, settings, workdir)  # the run's own boundary, no node's
    return replace(planned, setup_boundary=where)


async def _open_resources(stack: contextlib.AsyncExitStack, plan: Plan) -> CodergenBackend:
    """The run-level resources, each closed by ``stack``: the one place they are set up.

    Built before the run starts, so that a missing key, SDK or agent CLI stops
    it before anything is written.
    """
    import anyio

    from attractor.handlers.boundary import runs_commands

    if any(runs_commands(node, plan.settings) for node in plan.graph.nodes()):
        # In a worker thread: the checks may try the sandbox, import an SDK or ask an
        # agent CLI whether it is logged in, which a server's other requests must
        # not wait on.
        backend = await anyio.to_thread.run_sync(backend_for, plan.settings, plan.graph)
    else:  # simulated agents and no command: nothing to wait on, no thread to start
        backend = backend_for(plan.settings, plan.graph)
    stack.push_async_callback(backend.aclose)
    return backend


def _workdir(settings: Settings) -> Path:
    return Path(settings.workdir or ".").resolve()


def _notifier(plan: Plan, hooks: Hooks) -> Notifier | None:
    """The run's webhook notifier (``settings.notify``), an observer of its events; None
    without a webhook. Its secret is read now, so a missing one stops the run first."""
    settings = plan.settings
    if settings.notify is None:
        return None
    from attractor.notify.notifier import Notifier
    from attractor.settings import notify_secret

    return Notifier(
        settings.notify,
        chosen=settings.notify_on,
        fmt=settings.notify_format,
        secret=notify_secret(settings),
        timeout=settings.notify_timeout,
        link=hooks.link,
    )


def executor_for(settings: Settings) -> Executor:
    """The executor ``settings.executor`` names (Ray is imported only when chosen)."""
    from attractor.engine.executor import LocalExecutor
    from attractor.errors import UsageError

    if settings.executor == "ray":
        try:
            from attractor.ray_exec.executor import RayExecutor
        except ModuleNotFoundError as error:
            if error.name != "ray" and not (error.name or "").startswith("ray."):
                raise
            raise UsageError(
                f"{settings.source('executor')} ray needs Ray, which is not installed: "
                "pip install 'attractor[ray]'"
            ) from None
        return RayExecutor(settings.ray_address, make_backend=backend_for)
    return LocalExecutor()


def settings_for(
    graph: Graph,
    flags: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    *,
    cwd: Path | None = None,
) -> Settings:
    """Resolve the run settings for ``graph`` (its attributes are the graph layer).

    The config file is found in ``cwd`` (default: this process's directory), as
    ``attractor run`` started there would find it.
    """
    from attractor.settings import graph_names_model, resolve_settings

    return resolve_settings(
        flags,
        cwd=cwd,
        config_file=config_file,
        graph_attrs=graph.attrs,
        graph_models=graph_names_model(graph),
    )


def resume_settings(
    run_dir: Path,
    graph: Graph,
    flags: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    *,
    cwd: Path | None = None,
) -> tuple[Settings, list[str]]:
    """The settings a stopped run continues with, and notes on what changed.

    The config file is found in ``cwd`` (default: this process's directory).

    The manifest's record (backend, model, workdir, caps, ...) comes right after
    the flags; each flag that changes a recorded value is named in a note. A
    recorded ``--timeout`` gives the time it has left (all of it again when the
    run was stopped by it).

    Raises:
        UsageError: the run's LLM nodes ran on models and the resume would switch
            them to ``simulate`` without ``--backend`` saying so.
    """
    import dataclasses

    from attractor.errors import AttractorError, UsageError
    from attractor.settings import (
        RECORDED_SOURCE,
        graph_names_model,
        record_of,
        resolve_settings,
    )
    from attractor.store.rundir import RunDir

    try:
        manifest = RunDir(run_dir).read_manifest()
    except AttractorError:
        manifest = {}
    recorded = manifest.get("settings")
    recorded = {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
    settings = resolve_settings(
        flags,
        cwd=cwd,
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


def record_failure(run_dir: Path, reason: str) -> None:
    """Record the run in ``run_dir`` failed with ``reason``: a run that died of an
    error the engine could not record (a front end caught it). A run that recorded
    its own end is left as it is; nothing is raised (the disk may be what failed)."""
    import time

    from attractor.run_status import RunStatus
    from attractor.store.rundir import RunDir

    store = RunDir(run_dir)
    with contextlib.suppress(Exception):
        manifest = store.read_manifest()
        if manifest.get("status") in (RunStatus.RUNNING, None):
            manifest.update(status=RunStatus.FAIL, failure_reason=reason, finished_at=time.time())
            store.write_manifest(manifest)


_NOTICES: set[str] = set()


def check_boundaries(settings: Settings, graph: Graph) -> None:
    """Refuse a run whose sandbox cannot hold (UsageError); print a fallback notice once."""
    import sys

    from attractor.handlers.boundary import preflight

    notice = preflight(graph, settings, Path(settings.workdir or ".").resolve())
    if notice is not None and notice not in _NOTICES:
        _NOTICES.add(notice)
        print(notice, file=sys.stderr)


def step_boundary(node: Node, settings: Settings) -> str | None:
    """Where ``node``'s commands would run, in one line (None: a step that runs none,
    a simulated agent stage among them)."""
    from attractor.handlers.backend import backend_name
    from attractor.handlers.boundary import describe_boundary, runs_commands
    from attractor.handlers.external.agents import AGENTS
    from attractor.handlers.external.bounds import describe_cli_boundary

    if not runs_commands(node, settings):
        return None
    base = Path(settings.workdir or ".").resolve()
    cli = AGENTS.get(backend_name(node, settings)) if node.handler_type == "codergen" else None
    if cli is not None:
        return describe_cli_boundary(cli, node, settings, base)
    return describe_boundary(node, settings, base)


def node_boundary(run_dir: Path, graph: Graph, node_id: str, cwd: Path | None = None) -> str | None:
    """The boundary of ``node_id`` in a run: as its last step recorded it in
    ``status.json``, else as the run's recorded settings plan it (the config
    file found in ``cwd``)."""
    recorded = _recorded_boundary(run_dir, node_id)
    if recorded is not None or not graph.has_node(node_id):
        return recorded
    settings = _run_settings(run_dir, graph, cwd)
    return None if settings is None else step_boundary(graph.node(node_id), settings)


def node_boundaries(
    run_dir: Path, graph: Graph, ran: Iterable[str], cwd: Path | None = None
) -> dict[str, str | None]:
    """:func:`node_boundary` of every node of ``graph``, the run's settings resolved once:
    the nodes in ``ran`` as their steps recorded it, the others as planned."""
    ran = set(ran)
    settings = _run_settings(run_dir, graph, cwd)
    found: dict[str, str | None] = {}
    for node in graph.nodes():
        recorded = _recorded_boundary(run_dir, node.id) if node.id in ran else None
        if recorded is None and settings is not None:
            recorded = step_boundary(node, settings)
        found[node.id] = recorded
    return found


def _recorded_boundary(run_dir: Path, node_id: str) -> str | None:
    import json

    from attractor.runview.inventory import stage_path

    try:
        status = json.loads((stage_path(run_dir, node_id) / "status.json").read_bytes())
    except (OSError, ValueError):
        return None
    found = status.get("boundary") if isinstance(status, dict) else None
    return found if isinstance(found, str) else None


def _run_settings(run_dir: Path, graph: Graph, cwd: Path | None) -> Settings | None:
    """The settings the run in ``run_dir`` was started with; None when they cannot be read."""
    from attractor.errors import AttractorError

    try:
        settings, _notes = resume_settings(run_dir, graph, cwd=cwd)
    except (AttractorError, OSError, ValueError):
        return None
    return settings


def backend_for(settings: Settings, graph: Graph) -> CodergenBackend:
    """The model backend, built before the run so a missing key or SDK stops it first.

    The one place a run's backend is built: the engine builds none. ``--backend
    simulate`` gets the deterministic simulate backend. When nodes name their own
    ``backend`` (or the run's is an agent CLI), a router that also checks each
    agent CLI is installed and logged in. The steps' boundaries are checked
    first (:func:`check_boundaries`).
    """
    check_boundaries(settings, graph)
    from attractor.dot.schema import ACP_PREFIX, AGENT_BACKENDS
    from attractor.handlers.backend import backend_name

    agents = [(n, backend_name(n, settings)) for n in graph.nodes() if n.handler_type == "codergen"]
    if settings.backend == "simulate" and all(name == "simulate" for _, name in agents):
        # Nothing to check and nothing to route: no MCP or agent CLI module is loaded.
        from attractor.handlers.simulate import SimulateBackend

        return SimulateBackend()
    from attractor.handlers.external import route_backends
    from attractor.handlers.mcp_servers import check_servers

    builtin = [n for n, name in agents if name == "llm" or name.startswith("scripted:")]
    check_servers(builtin, settings)
    # An agent CLI starts the servers itself: no SDK needed for it.
    check_servers([n for n, name in agents if name in AGENT_BACKENDS], settings, sdk=False)
    acp_nodes = [n for n, name in agents if name.startswith(ACP_PREFIX)]
    if acp_nodes:  # imported only then: a run without ACP nodes loads no ACP module
        from attractor.handlers.acp.servers import check_acp_servers

        for node in acp_nodes:
            check_acp_servers(node, settings)  # the ACP agent starts them itself

    routed = route_backends(settings, graph)
    if routed is not None:
        return routed
    if settings.backend == "simulate":
        from attractor.handlers.simulate import SimulateBackend

        return SimulateBackend()
    from attractor.handlers.agent_backend import build_backend

    return build_backend(settings, graph)


#: What front ends may use of the run side besides the read side (``runview``):
#: name -> the module it comes from, imported when the name is first read. Each
#: is a launcher concern: what a run is started with and returns, who answers its
#: gates, the checks and errors of starting one, and what the launch would give a
#: node (the dry-run plan and the language server's hover show it). Reading runs
#: back (their files, manifest, worker) is the read side's: ``runview``.
_FRONT_END: dict[str, str] = {
    # What a run is started with and what it returns.
    "Continuation": "attractor.engine.continuation",
    "NodeResult": "attractor.engine.run",
    "RunResult": "attractor.engine.run",
    # Who answers the run's human gates (Hooks.interviewer), and choosing one.
    "Answer": "attractor.handlers.interviewer",
    "AnswerValue": "attractor.handlers.interviewer",
    "AutoApproveInterviewer": "attractor.handlers.interviewer",
    "ConsoleInterviewer": "attractor.handlers.interviewer",
    "Interviewer": "attractor.handlers.interviewer",
    "Question": "attractor.handlers.interviewer",
    "QuestionType": "attractor.handlers.interviewer",
    "QueueInterviewer": "attractor.handlers.interviewer",
    "match_option": "attractor.handlers.interviewer",
    "stdin_can_answer": "attractor.handlers.interviewer",
    "check_auto_choice": "attractor.handlers.human",
    "gates_needing_a_person": "attractor.handlers.human",
    # Starting a run: the logs folder checked, a full disk told apart.
    "check_logs_dir": "attractor.store.rundir",
    "disk_full": "attractor.store.rundir",
    # What the launch would give a node (with step_boundary above).
    "backend_name": "attractor.handlers.backend",
    "describe_acp": "attractor.handlers.acp.describe",
    "describe_servers": "attractor.handlers.mcp_servers",
    "max_retries_for": "attractor.engine.retry",
    "node_model_spec": "attractor.handlers.model_spec",
    "resolve_budget": "attractor.handlers.turn_budget",
}


# Hidden from mypy, which then checks each name against the typing imports above
# (a module-level __getattr__ would make every unknown name Any).
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """A front end's name from :data:`_FRONT_END`, its module imported on first use."""
        module = _FRONT_END.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
