"""The runs a server drives: started, resumed and cancelled through the engine.

Runs go where ``attractor run`` puts them when run in the root
(``ROOT/.attractor/runs/TIMESTAMP-GRAPH``), work in the root unless told
otherwise, and use the same settings resolution, so a run started here can be
resumed from the command line and the other way round. Each run is a task of
the server's task group in a cancel scope of its own: cancelling the scope
stops the node in progress and kills its processes (the engine's process
ledger), and the run is saved as ``interrupted``, ready to resume.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from anyio.abc import TaskGroup, TaskStatus

from attractor.dot.graph import Graph
from attractor.errors import UsageError
from attractor.events import Event, PipelineStarted
from attractor.fileio.writes import atomic_write_json, run_dir_mode
from attractor.launch import (
    Continuation,
    Hooks,
    Plan,
    launch,
    plan_resume,
    plan_run,
    record_failure,
    resume_settings,
    settings_for,
)
from attractor.run_status import RunStatus
from attractor.runview.inventory import stage_path
from attractor.runview.listing import RUNS_SUBDIR
from attractor.server.confine import check_graph_paths, confine
from attractor.server.questions import Pending, WebInterviewer
from attractor.settings import RECORDED_SOURCE, Settings
from attractor.valueclass import mutable

#: The server's log (uvicorn's, on stderr).
LOG = logging.getLogger("uvicorn.error")

#: Settings a request may give (as the CLI names them); paths are checked apart.
ALLOWED_SETTINGS = frozenset(
    {
        "timeout",
        "max_turns",
        "max_total_turns",
        "profile",
        "backend",
        "provider",
        "model",
        "base_url",
        "max_total_tokens",
        "max_cost",
        "max_steps",
        "kill_grace",
        "shell_timeout_cap",
        "workdir",
    }
)


class Changes:
    """Wakes everyone waiting for the next change of a run (a new event)."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def wait(self, timeout: float) -> None:
        with anyio.move_on_after(timeout):
            await self._event.wait()


@mutable
class ActiveRun:
    """A run this server is driving now."""

    id: str
    path: Path
    interviewer: WebInterviewer
    changes: Changes
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    error: str = ""


class RunManager:
    """Starts runs as tasks of one task group and keeps the ones still going."""

    def __init__(
        self, root: Path, run_flags: dict[str, str] | None = None, page_url: str | None = None
    ) -> None:
        self.root = root
        #: The web page's address (``http://HOST:PORT/``): a notification links to the run there.
        self.page_url = page_url
        #: Settings of the server for every run (--executor, --ray-address).
        self.run_flags = dict(run_flags or {})
        self.active: dict[str, ActiveRun] = {}
        #: Every id a run still going has had (a loop_restart gives it a new one), to its launch.
        self._launches: dict[str, _Launch] = {}
        #: Runs that died of an error the engine could not record: why, by id.
        self.died: dict[str, str] = {}
        self._group: TaskGroup | None = None
        #: One per run a stream follows, so a waiting stream wakes on each event.
        self.changes: dict[str, Changes] = {}
        #: Set once the server stops: event streams end after their last event.
        self.closing = False
        self._idle = anyio.Event()

    def run_link(self, run_id: str) -> str:
        """The address of run ``run_id`` on the web page (without the token)."""
        return f"{self.page_url}#/run/{quote(run_id, safe='')}"

    def attach(self, group: TaskGroup) -> None:
        self._group = group

    def changes_for(self, run_id: str) -> Changes:
        return self.changes.setdefault(run_id, Changes())

    def confine(self, relative: str, what: str) -> Path:
        """``relative`` resolved inside the root.

        Raises:
            PermissionError: it leads outside the root (the message says so).
        """
        return confine(self.root, relative, what)

    def flags(self, requested: dict[str, Any], *, new_run: bool = True) -> dict[str, Any]:
        """The request's settings checked, plus where runs and work go.

        A resume (``new_run`` false) keeps the run's recorded workdir unless the
        request names one.
        """
        unknown = sorted(set(requested) - ALLOWED_SETTINGS)
        if unknown:
            raise UsageError(
                f"unknown run setting(s) {', '.join(unknown)}; "
                f"use {', '.join(sorted(ALLOWED_SETTINGS))}"
            )
        flags = {k: str(v) for k, v in requested.items() if v is not None}
        flags.update(self.run_flags)
        if new_run or "workdir" in flags:
            flags["workdir"] = str(self.confine(flags.get("workdir", "."), "workdir"))
        backend = flags.get("backend", "").strip()  # as the settings will read it
        if backend.startswith("scripted:"):
            script = self.confine(backend.removeprefix("scripted:"), "scripted backend file")
            flags["backend"] = f"scripted:{script}"
        flags["logs_dir"] = str(self.root / RUNS_SUBDIR / "{timestamp}-{graph}")
        return flags

    async def start(
        self, graph: Graph, source: Path, requested: dict[str, Any], seed: dict[str, Any]
    ) -> str:
        """Start ``graph`` in a new run directory; returns the run id once it exists."""
        flags = self.flags(requested)
        plan = await anyio.to_thread.run_sync(
            lambda: plan_run(
                source,
                graph=graph,
                settings=lambda g: self.checked(g, settings_for(g, flags, cwd=self.root)),
            )
        )
        return await self._launch(plan, seed)

    def checked(self, graph: Graph, settings: Settings) -> Settings:
        """``settings`` once the workdir and every path ``graph`` names are inside the root.

        Raises:
            PermissionError: one of them leads outside (the message names it).
        """
        workdir = Path(settings.workdir) if settings.workdir else self.root
        if not workdir.is_absolute():
            workdir = self.root / workdir
        self.confine(str(workdir), "the run's workdir")
        check_graph_paths(graph, self.root, workdir.resolve())
        return settings

    def _resume_settings(self, path: Path, graph: Graph, flags: dict[str, Any]) -> Settings:
        settings, _ = resume_settings(path, graph, flags, cwd=self.root)
        if "workdir" not in flags and not settings.source("workdir").startswith(RECORDED_SOURCE):
            # A run recorded no workdir when it worked where it ran: here, the root
            # (not this process's directory, nor an environment's or config's choice).
            settings, _ = resume_settings(
                path, graph, {**flags, "workdir": str(self.root)}, cwd=self.root
            )
        return self.checked(graph, settings)

    async def resume(
        self,
        path: Path,
        graph: Graph,
        requested: dict[str, Any],
        how: Continuation | None = None,
    ) -> str:
        """Continue the run in ``path`` (same directory, same id).

        Without ``how`` a stopped run goes on where it stopped; ``how`` re-runs
        a failed run's failed node or goes back to a node (``resume
        --retry-failed`` / ``--from NODE``).
        """
        if path.name in self.active:
            raise UsageError(f"run {path.name} is still running; cancel it first")
        flags = self.flags(requested, new_run=False)
        del flags["logs_dir"]
        plan = await anyio.to_thread.run_sync(
            lambda: plan_resume(
                path, how=how, graph=graph, settings=lambda g: self._resume_settings(path, g, flags)
            )
        )
        return await self._launch(plan, {})

    async def _launch(self, plan: Plan, seed: dict[str, Any]) -> str:
        if self._group is None:
            raise RuntimeError("the run manager is not attached to a task group")
        run_id: str = await self._group.start(self._drive, plan, seed)
        return run_id

    async def _drive(
        self, plan: Plan, seed: dict[str, Any], *, task_status: TaskStatus[str]
    ) -> None:
        """One run from start to end; reports its id once its directory exists.

        A backend that cannot be built fails the request that started the run.
        """
        started = _Launch()
        interviewer = WebInterviewer(on_answer=started.record_answer)
        hooks = Hooks(
            interviewer,
            context=dict(seed),
            observers=[lambda event: self._observe(event, interviewer, started, task_status)],
            stop_requests=started.stopped,
            link=self.run_link if self.page_url else None,
        )
        try:
            with started.scope:
                await launch(plan, hooks)
        except Exception as exc:
            if started.run is None:
                raise  # before the run existed: the request that started it says why
            self._died(started.run, exc)
        finally:
            for run_id in started.ids:
                self._launches.pop(run_id, None)
            if started.run is not None:
                self.active.pop(started.run.id, None)
                started.run.changes.notify()
            self._idle.set()

    def _died(self, run: ActiveRun, exc: BaseException) -> None:
        """A run the engine could not end by itself: record it failed, with why, and log it."""
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        detail = str(exc) or type(exc).__name__
        run.error = f"the run stopped on an error: {detail}"
        self.died[run.id] = run.error
        LOG.error("run %s failed: %s", run.id, run.error)
        record_failure(run.path, run.error)

    def ended_by_error(self, data: dict[str, Any]) -> dict[str, Any]:
        """A run's listing fields, failed with its reason when it died of an error here.

        The manifest may still say ``running`` when the error kept the engine
        (and this server) from writing it.
        """
        reason = self.died.get(str(data.get("id")))
        if reason is not None and data.get("id") not in self.active:
            if data.get("status") in (RunStatus.RUNNING, "stopped", RunStatus.FAIL):
                data["status"] = RunStatus.FAIL
                data["failure_reason"] = data.get("failure_reason") or reason
            data["error"] = reason
        return data

    def _observe(
        self,
        event: Event,
        interviewer: WebInterviewer,
        launch: _Launch,
        task_status: TaskStatus[str],
    ) -> None:
        if isinstance(event, PipelineStarted):
            # A loop_restart goes on in a new directory: the run is known by its new id.
            first = launch.run is None
            if launch.run is not None:
                self.active.pop(launch.run.id, None)
            launch.run = ActiveRun(
                event.run_id,
                Path(event.run_dir),
                interviewer,
                self.changes_for(event.run_id),
                launch.scope,
            )
            self.active[event.run_id] = launch.run
            launch.ids.append(event.run_id)
            self._launches[event.run_id] = launch
            self.died.pop(event.run_id, None)  # a resume starts it afresh
            if first:
                task_status.started(event.run_id)
        if launch.run is not None:
            launch.run.changes.notify()

    async def shutdown(self, status: RunStatus = RunStatus.INTERRUPTED) -> None:
        """Stop every run as ``status`` (the server's stop signal's), wait until each
        has saved itself, then end the streams."""
        for started in set(self._launches.values()):  # a restarted run's, once
            started.stop(status)
        while self.active:
            self._idle = anyio.Event()
            await self._idle.wait()
        self.closing = True
        for changes in self.changes.values():
            changes.notify()

    def cancel(self, run_id: str) -> bool:
        """Cancel a run this server drives; False when it is not one of them.

        A run that went on in a new directory (``loop_restart``) is still cancelled
        by the id its start returned.
        """
        launch = self._launches.get(run_id)
        if launch is None:
            return False
        launch.stop(RunStatus.INTERRUPTED)
        return True


class _Launch:
    """One launch of a run: its cancel scope and, once it exists, the active run."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        #: Set when the run is asked to stop, and the status it is to stop as.
        self._stop = anyio.Event()
        self._status = RunStatus.INTERRUPTED
        self.run: ActiveRun | None = None
        #: Every id the run has had, its first one first.
        self.ids: list[str] = []

    def stop(self, status: RunStatus) -> None:
        """Ask the run to stop as ``status``: its engine (here or on a Ray worker)
        cancels it and saves it so."""
        if not self._stop.is_set():
            self._status = status
            self._stop.set()

    async def stopped(self) -> RunStatus:
        """Returns once the run is asked to stop (the launch's ``stop_requests``)."""
        await self._stop.wait()
        return self._status

    def record_answer(self, pending: Pending) -> None:
        """The answer and its comment, kept in the gate's stage folder (answer.json)."""
        if self.run is None or pending.answer is None:
            return
        with contextlib.suppress(OSError):
            folder = stage_path(self.run.path, pending.question.stage or "gate")
            folder.mkdir(mode=run_dir_mode(), exist_ok=True)
            atomic_write_json(
                folder / "answer.json",
                {
                    "question": pending.question.text,
                    "answer": pending.answer.value,
                    "label": pending.answer.text,
                    "comment": pending.comment,
                    "answered_by": pending.answer.answered_by,
                    "answered_at": time.time(),
                },
            )
