"""``attractor run FILE`` and ``attractor resume RUN_DIR``.

The commands only parse arguments, pick a display and an interviewer and turn
the engine's :class:`~attractor.engine.run.RunResult` into output and an
exit code; the launcher (``launch.py``) loads, checks, starts and closes the
run. Exit codes: 0 succeeded, 1 failed, 2 usage error or invalid pipeline, 74
disk full, 124 timed out, 129 hung up, 130 interrupted, 143 terminated.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from attractor.cli import collector, stop_signals
from attractor.cli.run_arg import missing, run_dir_of
from attractor.cli.run_options import CommonOptions, RunCommand, common_options
from attractor.errors import AttractorError, UsageError, ValidationError

if TYPE_CHECKING:
    from rich.console import Console

    from attractor.cli.display import DisplayMode
    from attractor.dot.graph import Graph
    from attractor.events import Event
    from attractor.launch import Answer, Continuation, Interviewer, Plan, Question, RunResult
    from attractor.settings import Settings

# The launcher, the display and the settings are imported when a command runs
# (``launcher.NAME``), so that ``attractor run --help`` imports click and little else.

_EXIT_CODES = (
    "Exit status: 0 succeeded, 1 failed, 2 usage error or invalid pipeline, "
    "74 disk full (resumable), 124 timed out, 129 hung up (SIGHUP), "
    "130 interrupted (Ctrl-C), 143 terminated (SIGTERM)."
)
_RUN_EPILOG = f"""\b
Examples:
  attractor run pipeline.dot --timeout 30m
  attractor run pipeline.dot --dry-run
  attractor run pipeline.dot --backend simulate --auto-approve
  attractor run pipeline.dot --model gpt-5 --max-turns 20 --logs-dir runs/today
  attractor run pipeline.dot --base-url http://127.0.0.1:8080/v1 --model local
  attractor run pipeline.dot --backend scripted:replies.json --answers answers.txt

{_EXIT_CODES}
"""
_RESUME_EPILOG = f"""\b
Examples:
  attractor resume .attractor/runs/20261122T040646Z-feature
  attractor resume runs/nightly --timeout 1h
  attractor resume --latest

Completed nodes never run again; the node that was running starts over.
{_EXIT_CODES}
"""


@click.command(cls=RunCommand, epilog=_RUN_EPILOG)
@click.argument("file", metavar="FILE")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Run nothing: lint, resolve settings and print the plan of every node and edge.",
)
@common_options(logs_dir=True)
def run(file: str, dry_run: bool, **params: Any) -> NoReturn:
    """Run the pipeline in FILE (a Graphviz DOT file)."""
    if dry_run:
        _execute(params, lambda options: _plan_run(Path(file), options), dry_run=file)
    _execute(params, lambda options: _plan_run(Path(file), options))


@click.command(cls=RunCommand, epilog=_RESUME_EPILOG)
@click.argument("run_dir", metavar="RUN_DIR", required=False)
@click.option("--latest", is_flag=True, help="Resume the newest stopped run under .attractor/runs.")
@click.option(
    "--retry-failed", is_flag=True, help="Continue a failed run: its failed node runs again."
)
@click.option(
    "--from", "from_node", metavar="NODE", help="Go back to NODE as it was first entered."
)
@common_options(logs_dir=False)
def resume(
    run_dir: str | None, latest: bool, retry_failed: bool, from_node: str | None, **params: Any
) -> NoReturn:
    """Continue the run in RUN_DIR (or the newest stopped one) from its last checkpoint."""

    def plan(options: CommonOptions) -> Plan:
        if retry_failed and from_node is not None:
            raise UsageError("--retry-failed and --from exclude each other; pick one")
        how = None
        if retry_failed or from_node is not None:
            import attractor.launch as launcher

            how = launcher.Continuation(retry_failed=retry_failed, from_node=from_node)
        return _plan_resume(_resume_target(run_dir, latest), options, how)

    _execute(params, plan)


_FORK_EPILOG = f"""\b
Examples:
  attractor fork .attractor/runs/20261122T040646Z-feature --from check
  attractor fork runs/nightly --from check --logs-dir runs/nightly-2

The new run has its own run directory and branch attractor/RUN_ID.
{_EXIT_CODES}
"""


@click.command(cls=RunCommand, epilog=_FORK_EPILOG)
@click.argument("run_dir", metavar="RUN_DIR")
@click.option(
    "--from", "from_node", metavar="NODE", required=True, help="The node the new run starts at."
)
@common_options(logs_dir=True)
def fork(run_dir: str, from_node: str, **params: Any) -> NoReturn:
    """A new run that starts where RUN_DIR was when NODE was first entered.

    Its state and its files start there, on a branch of its own; the run in
    RUN_DIR, its branch and its worktree stay as they are.
    """

    def plan(options: CommonOptions) -> Plan:
        from attractor.launch import plan_fork

        _check_run_dir(run_dir_of(run_dir))
        planned = plan_fork(run_dir_of(run_dir), from_node, options.flags, options.config)
        if not options.quiet:
            click.echo(f"note: forked {run_dir} from {from_node} into {planned.job.path}", err=True)
        return planned

    _execute(params, plan)


def _resume_target(run_dir: str | None, latest: bool) -> Path:
    """RUN_DIR, or with ``--latest`` the newest resumable run under the current folder."""
    if run_dir is not None and latest:
        raise UsageError("give RUN_DIR or --latest, not both")
    if run_dir is not None:
        return run_dir_of(run_dir)
    if not latest:
        raise UsageError("missing RUN_DIR: name the run directory, or pass --latest")
    from attractor.run_status import RESUMABLE, RunStatus
    from attractor.runview.listing import list_runs

    for info in list_runs(Path(".")):
        if info.status != RunStatus.RUNNING and (
            info.status in RESUMABLE or info.status == "stopped"
        ):
            click.echo(f"resuming {info.path}", err=True)
            return info.path
    raise UsageError(
        "--latest: no stopped run under .attractor/runs to resume; "
        "list the runs with attractor runs"
    )


def _execute(
    params: dict[str, Any], plan: Callable[[CommonOptions], Plan], dry_run: str | None = None
) -> NoReturn:
    """Run to the end and exit; library errors become one line and their exit code.

    With ``dry_run`` (the file name) only the plan is printed.
    """
    try:
        options = CommonOptions.from_click(params)
        planned = plan(options)
        code = _print_plan(planned, dry_run) if dry_run else _run_planned(planned, options)
    except ValidationError as err:
        _print_lint(err)
        code = err.exit_code
    except AttractorError as err:
        click.echo(f"error: {err}", err=True)
        code = err.exit_code
    except OSError as err:  # a file the command had to write, outside any run directory
        where = f" ({err.filename})" if err.filename else ""
        click.echo(f"error: {err.strerror or err}{where}", err=True)
        from attractor.launch import disk_full

        code = 74 if disk_full(err) else 1
    except KeyboardInterrupt:
        # Ctrl-C before the engine installed its own handler: nothing ran yet.
        click.echo("error: interrupted", err=True)
        code = 130
    sys.exit(code)


def _print_lint(err: ValidationError) -> None:
    """The diagnostics exactly as ``attractor lint`` prints them, on stderr."""
    from attractor.cli.lint_cmd import format_text_report

    click.echo(format_text_report(err.diagnostics, 1), err=True, nl=False)


# -- planning -------------------------------------------------------------------


def _plan_run(path: Path, options: CommonOptions) -> Plan:
    import attractor.launch as launcher
    from attractor.launch import load_graph, plan_run

    if not os.path.lexists(path):  # a FIFO or a device is refused, naming it, by the loader
        raise UsageError(f"{path}: no such pipeline file; check the path")
    graph, warnings = load_graph(path)
    if not options.quiet:
        for diagnostic in warnings:
            click.echo(diagnostic.format_text(), err=True)
    plan = plan_run(path, options.flags, options.config, graph=graph)
    launcher.check_logs_dir(plan.settings.logs_dir, plan.settings.source("logs_dir"))
    return plan


def _plan_resume(run_dir: Path, options: CommonOptions, how: Continuation | None = None) -> Plan:
    from attractor.launch import plan_resume

    _check_run_dir(run_dir)
    plan = plan_resume(run_dir, options.flags, options.config, how)
    if not options.quiet:
        for note in plan.notes:
            click.echo(f"note: {note}", err=True)
    return plan


def _check_run_dir(run_dir: Path) -> None:
    from attractor.runview.files import checkpoint_file, never_started, pipeline_copy

    # Before anything else (gates, models, the lock file): is this a run directory?
    problem = missing(str(run_dir))
    if problem is not None:
        raise UsageError(problem)
    if never_started(run_dir):
        raise UsageError(
            f"{run_dir}: this run never started (it stopped while its directory was being "
            f"created); start it again: attractor run PIPELINE --logs-dir {run_dir}"
        )
    for needed in (checkpoint_file(run_dir), pipeline_copy(run_dir)):
        if not os.path.lexists(needed):  # anything else there is read, or refused, later
            raise UsageError(
                f"{run_dir}: not a run directory (no {needed.name}); "
                "pass the run directory that attractor run printed"
            )


def _interviewer(options: CommonOptions, graph: Graph) -> Interviewer:
    import attractor.launch as launcher

    if options.auto_approve:
        if options.auto_choice is not None:
            launcher.check_auto_choice(graph, options.auto_choice)
        return launcher.AutoApproveInterviewer(options.auto_choice)
    if options.answers is not None:
        return launcher.QueueInterviewer.from_file(Path(options.answers))
    if not any(node.handler_type == "wait.human" for node in graph.nodes()):
        return _TerminalWhenAsked()  # no gate: only an agent asking leave could ask
    gates = launcher.gates_needing_a_person(graph)
    if gates and not launcher.stdin_can_answer(sys.stdin):
        raise UsageError(
            f"human gate(s) {', '.join(gates)} need answers and stdin is not a terminal "
            "(nothing could answer them): pass --answers FILE (one answer a line), "
            "--auto-approve, or pipe the answers to stdin; a gate with human.default_choice "
            "and human.timeout answers itself"
        )
    return launcher.ConsoleInterviewer()


class _TerminalWhenAsked:
    """The console interviewer of a run without human gates, made at the first question
    (an agent asking leave): a run that asks none loads no interviewer module."""

    def __init__(self) -> None:
        self._console: Interviewer | None = None

    async def ask(self, question: Question) -> Answer:
        import attractor.launch as launcher

        if self._console is None:
            self._console = launcher.ConsoleInterviewer()
        return await self._console.ask(question)


def _print_plan(plan: Plan, file: str) -> int:
    from attractor.cli.plan import format_plan
    from attractor.launch import workspace_plan

    workspace = stop_signals.run(workspace_plan, plan)
    text = format_plan(plan.graph, plan.settings, file, workspace=workspace.describe())
    click.echo(text, nl=False)
    return 0


def _simulation_note(settings: Settings, graph: Graph) -> str | None:
    """The first line of a run whose stages are simulated, else None."""
    if settings.backend != "simulate":
        return None
    import attractor.launch as launcher

    tools = any(node.handler_type == "tool" for node in graph.nodes())
    # Nodes that name their own agent (a CLI, acp:NAME) are not simulated.
    llm = any(
        node.handler_type == "codergen" and launcher.backend_name(node, settings) == "simulate"
        for node in graph.nodes()
    )
    if settings.simulates_tools:
        return "simulated run: LLM stages get canned replies and tool commands are not run"
    if llm:
        extra = "; tool commands run for real" if tools else ""
        return f"simulated run: no model configured, LLM stages get canned replies{extra}"
    return None


# -- running --------------------------------------------------------------------


def _run_planned(plan: Plan, options: CommonOptions) -> int:
    from attractor.cli.display import silence_broken_pipe
    from attractor.launch import Hooks, launch

    screen = _Screen(options)
    hooks = Hooks(
        choose_interviewer=lambda graph: _interviewer(options, graph),
        context=dict(options.context_seed),
        # The collector paused for start-up runs again from the run's first event.
        observers=[collector.resume],
        watch=screen.watch,
        handle_signals=True,
        stop_requests=stop_signals.missed,
    )
    result = stop_signals.run(launch, plan, hooks)
    try:
        _report(result, screen.console, mode=screen.mode, elapsed=screen.elapsed)
    except BrokenPipeError:
        silence_broken_pipe(sys.stdout)
    return result.exit_code


class _Screen:
    """The terminal side of a run: the note of a simulated run, then its display."""

    def __init__(self, options: CommonOptions) -> None:
        from attractor.cli.display import choose_mode

        #: None with --json and --quiet: their displays write plain lines (no rich).
        self.console: Console | None = None
        if not (options.json or options.quiet):
            from rich.console import Console

            self.console = Console(highlight=False)
        self.mode: DisplayMode = choose_mode(
            self.console, json_mode=options.json, quiet=options.quiet
        )
        self.started = time.monotonic()
        #: When the run's final event came: the time after it (the last webhook
        #: deliveries) is not the run's.
        self.ended: float | None = None

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    @contextmanager
    def watch(self, plan: Plan) -> Iterator[Callable[[Event], None]]:
        """Opened by the launcher once the backend and the interviewer are ready."""
        from attractor.cli.display import make_display
        from attractor.settings import redactor_for

        note = _simulation_note(plan.settings, plan.graph)
        if note is not None and self.mode != "quiet":
            # stdout carries only events in JSON mode, so the note goes to stderr there.
            click.echo(note, err=self.mode == "json")
        self.started = time.monotonic()
        redactor = redactor_for(plan.settings)
        path = None
        if self.mode == "live":  # only the live display says how far along the run is
            from attractor.runview.inventory import main_path

            path = main_path(plan.graph)
        with make_display(self.mode, self.console, path, redactor) as display:

            def observe(event: Event) -> None:
                if event.type in _FINAL_EVENTS:
                    self.ended = time.monotonic()
                display(event)

            yield observe


#: The events that end a run (or a session of it).
_FINAL_EVENTS = frozenset(
    {"pipeline_completed", "pipeline_failed", "pipeline_timed_out", "pipeline_interrupted"}
)


def _report(result: RunResult, console: Console | None, *, mode: str, elapsed: float) -> None:
    """Warnings, the summary table and the final line, as the display mode allows."""
    from attractor.cli.summary import final_line, print_summary, workspace_lines
    from attractor.run_status import STOPPED

    if mode not in ("quiet",):
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
    if mode in ("live", "plain"):
        assert console is not None, "live and plain displays have a console"
        print_summary(result, console, rich=mode == "live")
    if mode in ("live", "plain"):
        for text in workspace_lines(result):
            click.echo(text)
    line = final_line(result, elapsed)
    to_stderr = mode == "json" or result.status in STOPPED
    click.echo(line, err=to_stderr)
