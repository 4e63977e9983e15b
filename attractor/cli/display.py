"""What the terminal shows while a pipeline runs: observers of the event stream.

Four displays share one interface (call with an event; use as a context
manager around the run):

- :class:`LiveDisplay`: a rich live region with one line per active node (its
  turn, the tool call in progress, a tool node's last line of output), the
  overall elapsed time and node i of n on the main path, and finished nodes
  scrolling above it (stdout is a terminal, NO_COLOR unset);
- :class:`PlainDisplay`: one plain line per notable event (logs, pipes, CI);
- :class:`JsonDisplay`: every event as one JSON line on stdout (``--json``);
- :class:`QuietDisplay`: nothing (``--quiet``).

All but the quiet one print a single warning line on stderr when an agent node
hits its turn limit.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Literal

from attractor import events as ev
from attractor.cli.stage_lines import stage_line
from attractor.dot.schema import format_duration
from attractor.redact import Redactor
from attractor.valueclass import mutable

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

# rich is imported by the live display only: a run with --json or --quiet (and its
# start-up) does without it.

DisplayMode = Literal["live", "plain", "json", "quiet"]


def turn_limit_warning(event: ev.TurnLimitReached) -> str:
    """The one warning line for a node that used up its turn budget."""
    return (
        f"warning: node {event.node} reached its turn limit ({event.turns_used} of "
        f"{event.limit} turns); raise it with the node attribute max_turns, "
        "--max-turns or ATTRACTOR_MAX_TURNS"
    )


def silence_broken_pipe(stream: IO[str]) -> None:
    """Point ``stream``'s descriptor at /dev/null once its reader is gone (``| head``).

    The run goes on; only its display is dropped, and Python's final flush no
    longer fails.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


class _Display:
    """Base: a no-op context manager that ignores every event."""

    def __init__(self, out: IO[str] | None = None, err: IO[str] | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self._out_gone = False

    def write_line(self, line: str) -> None:
        """One line on stdout; after a broken pipe, nothing."""
        if self._out_gone:
            return
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except BrokenPipeError:
            self._out_gone = True
            silence_broken_pipe(self.out)

    def __enter__(self) -> _Display:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop any live output; safe to call twice."""

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.TurnLimitReached):
            self.warn(turn_limit_warning(event))

    def warn(self, line: str) -> None:
        print(line, file=self.err, flush=True)


class QuietDisplay(_Display):
    """``--quiet``: shows nothing while running."""

    def __call__(self, event: ev.Event) -> None:
        return None


class JsonDisplay(_Display):
    """``--json``: each event as one JSON object per line on stdout."""

    def __call__(self, event: ev.Event) -> None:
        self.write_line(json.dumps(event.to_json(), ensure_ascii=False))
        super().__call__(event)


class PlainDisplay(_Display):
    """One plain line per stage start, end, failure, retry and human interaction."""

    def __call__(self, event: ev.Event) -> None:
        event = ev.shown(event)  # a sub-pipeline's stages as NODE/CHILD
        line = stage_line(event)
        if line is not None:
            self.write_line(line.plain)
        super().__call__(event)


@mutable
class _Active:
    """A node that is running now, as the live region shows it."""

    name: str
    handler: str
    started: float
    attempt: int = 1
    turn: str = ""
    #: The agent's tool call in progress (``shell: pytest -q``).
    tool: str = ""
    #: How many tool calls the node made, and the last one (built-in agent or agent CLI).
    tool_calls: int = 0
    last_tool: str = ""


class _ActiveView:
    """The live region: one line per active node, re-rendered on each refresh.

    Once the run has started, a last line gives the overall elapsed time and
    how far along the main path (start to exit, shortest) the run has got.
    """

    def __init__(
        self, main_path: list[str] | None = None, redactor: Redactor | None = None
    ) -> None:
        self.active: dict[str, _Active] = {}
        #: A tool's output file is scrubbed of secrets only when it ends: its lines
        #: shown meanwhile are redacted here.
        self.redactor = redactor
        self.main_path = main_path or []
        self.route: list[str] = []
        self.run_dir: Path | None = None
        self.started: float | None = None

    def __rich__(self) -> RenderableType:
        from rich.console import Group

        now = time.monotonic()
        lines = [self._line(node, now) for node in list(self.active.values())]
        if self.started is not None:
            lines.append(self._footer(now - self.started))
        return Group(*lines)

    def _line(self, node: _Active, now: float) -> Text:
        from rich.text import Text

        text = Text("  ", no_wrap=True, overflow="ellipsis")
        text.append("● ", style="cyan")
        text.append(node.name, style="bold")
        if node.handler:
            text.append(f" ({node.handler})", style="dim")
        text.append(f"  {_elapsed(now - node.started)}")
        if node.attempt > 1:
            text.append(f"  attempt {node.attempt}", style="yellow")
        if node.turn:
            text.append(f"  {node.turn}", style="magenta")
        if node.tool:
            text.append(f"  ▸ {node.tool}", style="cyan")
        elif node.tool_calls:
            calls = f"{node.tool_calls} tool call{'s' if node.tool_calls > 1 else ''}"
            text.append(f"  {calls}, last {node.last_tool}", style="dim")
        output = self._last_output(node)
        if output:
            text.append(f"  │ {output}", style="dim")
        return text

    def _last_output(self, node: _Active) -> str:
        """A tool node's latest line of output, read from its stage folder."""
        if node.handler != "tool" or self.run_dir is None:
            return ""
        from attractor.runview.inventory import last_line, stage_path

        line = last_line(stage_path(self.run_dir, node.name) / "stdout.txt")
        if self.redactor is not None:
            line = self.redactor.text(line)
        return line[:_OUTPUT_WIDTH]

    def _footer(self, elapsed: float) -> Text:
        from rich.text import Text

        text = Text("  ", style="dim", no_wrap=True)
        text.append(f"elapsed {_elapsed(elapsed)}")
        if self.main_path:
            from attractor.runview.inventory import progress

            done = progress(self.main_path, self.route)
            text.append(f"  ·  node {done.index} of {done.total} on the main path")
        return text

    def track(self, event: ev.Event) -> None:
        """Follow ``event``: which nodes run, their turns and tool calls."""
        active = self.active
        if isinstance(event, ev.PipelineStarted):
            self.run_dir = Path(event.run_dir)
            if self.started is None:
                self.started = time.monotonic()
        elif isinstance(event, ev.StageStarted):
            active[event.name] = _Active(event.name, event.handler, time.monotonic(), event.attempt)
            if "/" not in event.name:  # a sub-pipeline's stage is not on the parent's route
                self.route.append(event.name)
        elif isinstance(event, ev.StageCompleted | ev.StageFailed):
            active.pop(event.name, None)
        elif isinstance(event, ev.AgentTurnStarted) and event.node in active:
            active[event.node].turn = _turn_text(event)
        elif isinstance(event, ev.ToolCallStarted) and event.node in active:
            active[event.node].tool = f"{event.tool}: {event.summary}"[:_OUTPUT_WIDTH]
        elif isinstance(event, ev.ToolCallCompleted) and event.node in active:
            node = active[event.node]
            node.tool, node.last_tool = "", event.tool
            node.tool_calls += 1


#: How much of a tool call or a line of output the live region shows.
_OUTPUT_WIDTH = 60


def _elapsed(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 60 else format_duration(round(seconds))


class LiveDisplay(_Display):
    """A rich live region of active nodes; finished nodes print above it."""

    def __init__(
        self,
        console: Console,
        err: IO[str] | None = None,
        main_path: list[str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        super().__init__(console.file, err)
        self.console = console
        self.view = _ActiveView(main_path, redactor)
        from rich.live import Live

        self.live = Live(self.view, console=console, refresh_per_second=4, transient=True)

    def __enter__(self) -> LiveDisplay:
        self.live.start()
        return self

    def close(self) -> None:
        self.live.stop()

    def __call__(self, event: ev.Event) -> None:
        event = ev.shown(event)  # a sub-pipeline's stages as NODE/CHILD
        self.view.track(event)
        # Starts show in the live region; only what finished scrolls above it.
        line = None if isinstance(event, ev.StageStarted) else stage_line(event)
        if line is not None:
            self.console.print(line.rich())
        if isinstance(event, ev.InterviewStarted):
            # The console interviewer needs the terminal to itself.
            self.live.stop()
        elif isinstance(event, ev.InterviewCompleted | ev.InterviewTimeout):
            self.live.start()
        super().__call__(event)

    def warn(self, line: str) -> None:
        """The warning as one unwrapped line on stderr, as the plain display prints it.

        The live region shares the terminal, so it steps aside (it is transient:
        stopping clears it) while the line is written, then comes back below it.
        """
        running = self.live.is_started
        if running:
            self.live.stop()
        try:
            super().warn(line)
        finally:
            if running:
                self.live.start()

    def refresh(self) -> None:
        self.live.refresh()


def _turn_text(event: ev.AgentTurnStarted) -> str:
    if event.kind == "reflection":
        return f"reflecting (turn {event.turn}/{event.max_turns})"
    if event.kind == "final":
        return f"final turn {event.turn}/{event.max_turns}"
    return f"turn {event.turn}/{event.max_turns}"


def choose_mode(console: Console | None, *, json_mode: bool, quiet: bool) -> DisplayMode:
    """Live only on a colour terminal; plain when piped or NO_COLOR is set.

    ``console`` may be None only with ``json_mode`` or ``quiet``, which need none.
    """
    if json_mode:
        return "json"
    if quiet:
        return "quiet"
    assert console is not None, "a console is needed to choose between live and plain"
    if console.is_terminal and not console.no_color and not console.is_dumb_terminal:
        return "live"
    return "plain"


def make_display(
    mode: DisplayMode,
    console: Console | None,
    main_path: list[str] | None = None,
    redactor: Redactor | None = None,
) -> _Display:
    """The display for ``mode``, writing to ``console``'s file.

    ``main_path`` (the node ids from start to exit) lets the live display say
    how far along the run is; ``redactor`` takes the run's secrets out of the
    output it reads from a running tool's file (events come redacted).
    """
    if mode == "live":
        assert console is not None, "the live display draws on a console"
        return LiveDisplay(console, main_path=main_path, redactor=redactor)
    out = sys.stdout if console is None else console.file
    if mode == "json":
        return JsonDisplay(out)
    if mode == "quiet":
        return QuietDisplay(out)
    return PlainDisplay(out)
