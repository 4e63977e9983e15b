"""The sub-pipeline (``shape=folder`` or ``type=subgraph``): another pipeline run inline.

The node runs the pipeline file of its ``dot_file`` as a child run, and waits
for it: the child's run directory is ``child`` inside the node's stage folder
(``child-vVISIT-aATTEMPT`` for a later visit or retry), with its own stage
folders, checkpoint and event log; the events of its steps are also passed on
to the parent's followers as ``child_event`` events (the display shows the
child's stages as ``NODE/CHILD``, ``attractor logs`` their output). It shares
the parent run's settings, backend, interviewer, turn, token and cost budgets,
step budget and deadline (``--timeout`` covers it); stopping the parent stops
it, and resuming the parent resumes it where it stopped (counting the steps
the child took before against the step budget).

Context, in and out: the child starts with a copy of the parent's context,
less the engine's own keys (``outcome``, ``preferred_label``, ``current_node``,
``graph.*``, ``internal.*``: the child has its own). When it ends, every key
whose value it changed or added comes back as the node's context updates. The
node succeeds when the child run succeeds, and fails (with the child's
failure reason) otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attractor.dot.graph import Graph, Node
from attractor.dot.includes import DOT_FILE, written_path
from attractor.errors import AttractorError, PipelinePathError
from attractor.events import CHILD_EVENTS, ChildEvent, Event
from attractor.fileio.confine import confine_path
from attractor.handlers.base import ChildResult, ChildRun, StageEnv
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.run_status import RunStatus

#: Context keys that belong to one run's engine: never handed in or back.
_ENGINE_KEYS = frozenset({"outcome", "preferred_label", "current_node"})
_ENGINE_PREFIXES = ("graph.", "internal.")
#: The folder of the node's stage folder that holds the child run.
CHILD = "child"


def _own(key: str) -> bool:
    return key not in _ENGINE_KEYS and not key.startswith(_ENGINE_PREFIXES)


def handed_in(context: Context) -> dict[str, Any]:
    """What the child starts with: the parent's context less the engine's keys."""
    return {k: v for k, v in context.snapshot().items() if _own(k)}


def handed_back(given: Mapping[str, Any], ended: Mapping[str, Any]) -> dict[str, Any]:
    """The keys the child added or changed, less the engine's."""
    return {k: v for k, v in ended.items() if _own(k) and (k not in given or given[k] != v)}


def child_dir_name(visit: int, attempt: int) -> str:
    """``child`` for the first attempt of the first visit, else ``child-vV-aA``."""
    return CHILD if (visit, attempt) == (1, 1) else f"{CHILD}-v{visit}-a{attempt}"


def resolve(node: Node, env: StageEnv) -> Path:
    """The node's pipeline file, beside the parent pipeline (else in the workdir).

    Raises:
        PipelinePathError: it leads outside the places a run may read.
    """
    path = Path(written_path(node)).expanduser()
    folder = env.services.pipeline_dir
    if not path.is_absolute():
        beside = folder / path if folder is not None else None
        found = beside is not None and beside.exists()
        path = beside if beside is not None and found else env.services.base_workdir / path
    return confine_path(path, env.read_roots(), attribute=DOT_FILE, node=node.id)


def _passing_on(node: Node, env: StageEnv, child_dir: Path) -> Callable[[Event], None]:
    """The child's observer: its steps' events (its own event log has them all) go
    on to the parent's followers as ``child_event`` events, so the parent's display
    and ``attractor logs`` show the child's stages as ``NODE/CHILD``."""
    where = child_dir.relative_to(env.logs_root).as_posix()

    def observe(event: Event) -> None:
        if event.type in CHILD_EVENTS:
            env.emit(ChildEvent(node=node.id, child_dir=where, event=event))

    return observe


class SubPipelineHandler:
    """Runs another pipeline file inline; see the module docstring."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        if not written_path(node):
            return Outcome.fail(f"sub-pipeline {node.id} names no pipeline file (dot_file)")
        runner = env.services.run_child
        if runner is None:
            return Outcome.fail(f"sub-pipeline {node.id} needs the engine to run its pipeline")
        try:
            dotfile = resolve(node, env)
            workdir = env.workdir(node, graph)
        except PipelinePathError as error:
            return Outcome.fail(str(error))
        child_dir = env.stage_dir / child_dir_name(env.visit, env.attempt)
        given = handed_in(context)
        child = ChildRun(
            dotfile,
            child_dir,
            workdir,
            _passing_on(node, env, child_dir),
            env.services.steering,
            context=given,
            shares_steps=True,
        )
        try:
            result = await runner(child)
        except AttractorError as error:  # the file went missing, or no longer lints
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return Outcome.fail(f"sub-pipeline {dotfile.name} could not start: {first}")
        return _outcome(node, result, given, child_dir.relative_to(env.logs_root).as_posix())


def _outcome(node: Node, result: ChildResult, given: dict[str, Any], where: str) -> Outcome:
    updates = handed_back(given, result.context)
    details = {"child_run_dir": where, "child_status": str(result.status)}
    if result.status == RunStatus.SUCCESS:
        note = f"sub-pipeline {written_path(node)} succeeded"
        return Outcome(StageStatus.SUCCESS, notes=note, context_updates=updates, details=details)
    why = result.failure_reason or str(result.status)
    ended = "failed" if result.status == RunStatus.FAIL else str(result.status)
    reason = f"sub-pipeline {written_path(node)} {ended}: {why}"
    return Outcome(
        StageStatus.FAIL,
        notes=reason,
        failure_reason=reason,
        context_updates=updates,
        details=details,
    )
