"""The manager loop (``shape=house``): a node that supervises a child pipeline.

The node starts the child (``stack.child_dotfile``, node or graph attribute) in
its own run directory, ``children/NODE`` inside the parent's, then cycles: *observe* copies
the child's progress into the context (``stack.child.*``), *steer* queues the
node's ``prompt`` for the child's agents once per child stage, *wait* pauses
``manager.poll_interval`` (or until the child finishes). It ends when the child
ends (its outcome is the node's), when ``manager.stop_condition`` holds
(success; a child still running is stopped and can be resumed), or after
``manager.max_cycles`` (failure). Cancellation (``--timeout``, Ctrl-C) reaches
the child, which stops like any run; resuming the parent resumes the child.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from attractor.dot.conditions import evaluate
from attractor.dot.graph import Graph, Node
from attractor.errors import AttractorError, PipelinePathError
from attractor.events import (
    Event,
    ManagerCycle,
    PipelineStarted,
    StageCompleted,
    StageFailed,
    StageStarted,
)
from attractor.fileio.confine import confine_path
from attractor.handlers.base import ChildResult, ChildRun, StageEnv, Steering
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.run_status import RunStatus
from attractor.valueclass import frozen, mutable

ACTIONS = frozenset({"observe", "steer", "wait"})
#: The folder of the run directory where child runs live.
CHILDREN = "children"
_ALWAYS = ("stack.child.status", "stack.child.outcome", "stack.child.run_dir")


@frozen
class ManagerConfig:
    """The manager's attributes, checked."""

    dotfile: Path
    workdir: Path
    poll_interval: float
    max_cycles: int
    stop_condition: str
    actions: frozenset[str]


def config_for(node: Node, graph: Graph, env: StageEnv) -> ManagerConfig | str:
    """The node's manager settings, or what is wrong with them."""
    raw = str(node.get("stack.child_dotfile") or graph.get("stack.child_dotfile") or "").strip()
    if not raw:
        return f"manager {node.id} has no stack.child_dotfile; name the child pipeline's file"
    if not node.get("stack.child_autostart"):
        return (
            f"manager {node.id}: stack.child_autostart=false is not supported; "
            "the manager always starts (or resumes) its child"
        )
    actions = parse_actions(str(node.get("manager.actions")))
    unknown = sorted(actions - ACTIONS)
    if unknown:
        listed = ", ".join(unknown)
        return f"manager {node.id}: unknown manager.actions {listed}; use observe, steer, wait"
    own = str(node.get("stack.child_workdir") or graph.get("stack.child_workdir") or "").strip()
    try:
        dotfile = _resolve(raw, env, node)
        workdir = _child_workdir(own, env, node, graph)
    except PipelinePathError as error:
        return str(error)
    return ManagerConfig(
        dotfile=dotfile,
        workdir=workdir,
        poll_interval=float(node.get("manager.poll_interval")),
        max_cycles=int(node.get("manager.max_cycles")),
        stop_condition=str(node.get("manager.stop_condition") or "").strip(),
        actions=actions,
    )


def parse_actions(text: str) -> frozenset[str]:
    return frozenset(a.strip() for a in text.split(",") if a.strip())


def _resolve(raw: str, env: StageEnv, node: Node) -> Path:
    """A relative child file is found beside the parent pipeline, else in the workdir.

    Either way it must lie inside the places a run may read (symbolic links
    followed): the parent's working directory or its pipeline's folder.
    """
    path = Path(raw)
    folder = env.services.pipeline_dir
    if not path.is_absolute():
        beside = folder / path if folder is not None else None
        found = beside is not None and beside.exists()
        path = beside if beside is not None and found else env.services.base_workdir / path
    owner = node.id if node.has("stack.child_dotfile") else None
    return confine_path(path, env.read_roots(), attribute="stack.child_dotfile", node=owner)


def _child_workdir(own: str, env: StageEnv, node: Node, graph: Graph) -> Path:
    if not own:
        return env.workdir(node, graph)
    path = env.services.base_workdir / own
    owner = node.id if node.has("stack.child_workdir") else None
    return confine_path(path, env.read_roots(), attribute="stack.child_workdir", node=owner)


class Telemetry:
    """What the manager knows of its child, kept up to date by the child's events."""

    def __init__(self) -> None:
        self.status = "starting"
        self.current_node = ""
        self.completed = 0
        self.last_failure = ""
        self.progress = anyio.Event()
        self.done = anyio.Event()
        self.result: ChildResult | None = None

    def observe(self, event: Event) -> None:
        if isinstance(event, PipelineStarted):
            self.status = "running"
        elif isinstance(event, StageStarted):
            self.current_node = event.name
        elif isinstance(event, StageCompleted):
            self.completed += 1
        elif isinstance(event, StageFailed) and not event.will_retry:
            self.completed += 1
            self.last_failure = f"{event.name}: {event.error}"
        self.progress.set()
        self.progress = anyio.Event()

    def finish(self, result: ChildResult) -> None:
        self.result = result
        self.status = "completed" if result.status == RunStatus.SUCCESS else "failed"
        self.progress.set()
        self.done.set()

    def values(self, run_dir: str, cycles: int) -> dict[str, Any]:
        outcome = ""
        if self.result is not None:
            outcome = "success" if self.result.status == RunStatus.SUCCESS else "fail"
        return {
            "stack.child.status": self.status,
            "stack.child.outcome": outcome,
            "stack.child.current_node": self.current_node,
            "stack.child.completed_nodes": self.completed,
            "stack.child.last_failure": self.last_failure,
            "stack.child.run_dir": run_dir,
            "stack.child.cycles": cycles,
        }


class ManagerLoopHandler:
    """Supervises a child pipeline; see the module docstring."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        config = config_for(node, graph, env)
        if isinstance(config, str):
            return Outcome.fail(config)
        runner = env.services.run_child
        if runner is None:
            return Outcome.fail(f"manager {node.id} needs the engine to run its child pipeline")
        # Beside the node's folder, not in it: an attempt's files move aside when
        # another starts, and a resumed attempt must find its child where it left it.
        name = env.stage_dir.name
        if (env.visit, env.attempt) != (1, 1):
            name += f"-v{env.visit}-a{env.attempt}"
        child_dir = env.logs_root / CHILDREN / name
        telemetry = Telemetry()
        steering = Steering()
        child = ChildRun(config.dotfile, child_dir, config.workdir, telemetry.observe, steering)

        async def run_child() -> None:
            try:
                result = await runner(child)
            except AttractorError as error:  # a child file that is missing or does not lint
                reason = f"{config.dotfile}: {_first_line(error)}"
                result = ChildResult(RunStatus.FAIL, f"it could not start: {reason}", child_dir)
            telemetry.finish(result)

        async with anyio.create_task_group() as group:
            group.start_soon(run_child)
            loop = _Loop(node, graph, context, env, config, telemetry, steering)
            loop.relative_dir = child_dir.relative_to(env.logs_root).as_posix()
            outcome = await loop.run()
            group.cancel_scope.cancel()  # a child still running stops (resumable)
        return outcome


def _first_line(error: AttractorError) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@mutable
class _Loop:
    node: Node
    graph: Graph
    context: Context
    env: StageEnv
    config: ManagerConfig
    telemetry: Telemetry
    steering: Steering
    relative_dir: str = ""
    steered_at: str = ""

    async def run(self) -> Outcome:
        for cycle in range(1, self.config.max_cycles + 1):
            values = self.telemetry.values(self.relative_dir, cycle)
            self.env.emit(
                ManagerCycle(
                    node=self.node.id,
                    cycle=cycle,
                    child_status=self.telemetry.status,
                    child_node=self.telemetry.current_node,
                    completed_nodes=self.telemetry.completed,
                )
            )
            if "steer" in self.config.actions:
                self._steer()
            ended = self._ended(values)
            if ended is not None:
                return ended
            await self._pause()
        reason = f"the child did not finish within manager.max_cycles={self.config.max_cycles}"
        return self._outcome(StageStatus.FAIL, reason, self.config.max_cycles)

    def _ended(self, values: dict[str, Any]) -> Outcome | None:
        cycle = int(values["stack.child.cycles"])
        result = self.telemetry.result
        if result is not None:
            if result.status == RunStatus.SUCCESS:
                return self._outcome(StageStatus.SUCCESS, "", cycle, "the child pipeline succeeded")
            why = result.failure_reason or result.status
            reason = f"the child pipeline {result.status}: {why}"
            return self._outcome(StageStatus.FAIL, reason, cycle)
        if self.config.stop_condition and self._stop_holds(values):
            note = f"stop condition holds: {self.config.stop_condition}"
            return self._outcome(StageStatus.SUCCESS, "", cycle, note)
        return None

    def _stop_holds(self, values: dict[str, Any]) -> bool:
        view = self.context.clone()
        if "observe" in self.config.actions:
            view.apply(values)
        return evaluate(
            self.config.stop_condition,
            outcome=str(values["stack.child.outcome"]),
            preferred_label="",
            context=view,
        )

    async def _pause(self) -> None:
        """One poll interval (cut short when the child ends); without ``wait``, or
        with a poll interval of 0s, the next thing the child does, so the loop
        never spins."""
        if "wait" in self.config.actions and self.config.poll_interval > 0:
            with anyio.move_on_after(self.config.poll_interval):
                await self.telemetry.done.wait()
        else:
            await self.telemetry.progress.wait()

    def _steer(self) -> None:
        current = self.telemetry.current_node
        text = self.node.prompt.replace("$goal", self.graph.goal).strip()
        if text and current and current != self.steered_at:
            self.steered_at = current
            self.steering.push(text)

    def _outcome(self, status: StageStatus, reason: str, cycles: int, notes: str = "") -> Outcome:
        updates = self.telemetry.values(self.relative_dir, cycles)
        if "observe" not in self.config.actions:  # only how it ended, not the telemetry
            updates = {k: v for k, v in updates.items() if k in _ALWAYS}
        return Outcome(
            status,
            notes=notes or reason,
            failure_reason=reason,
            context_updates=updates,
            details={"child_run_dir": self.relative_dir, "cycles": cycles},
        )
