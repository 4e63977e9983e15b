"""What ``attractor logs`` prints: each step's output and agent tool calls, every attempt.

It reads a run's ``events.jsonl`` in order: ``stage_output`` events give a
tool step's lines as they were written (stdout and stderr interleaved as they
came) and a tool hook's (``hook_stdout``/``hook_stderr``, marked ``hook|``),
``tool_call_started``/``_completed`` the agent's tool calls and the end of their
results. Where the events leave something out (a batch that skipped
bytes of a chatty command, or a run recorded before steps emitted their
output), the step's ``stdout.txt``/``stderr.txt`` fill it in.

A step's header line is printed when it first shows something, and again
(``continued``) when parallel branches interleave.
"""

from __future__ import annotations

import codecs
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from attractor.errors import InputFileError
from attractor.events import call_summary
from attractor.fileio.reads import open_regular
from attractor.runview.timeline import attempt_folder
from attractor.valueclass import mutable

#: How ANSI escapes in output are treated: all taken out, colours kept, all kept.
AnsiMode = Literal["strip", "colours", "raw"]

#: A CSI sequence (colours, cursor moves), an OSC (titles, links) or a two-byte escape.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_COLOUR = re.compile(r"\x1b\[[0-9;:]*m")
#: Lines of one agent tool call's result shown (its end); the transcript has it all.
RESULT_LINES = 20
_STREAMS = ("stdout", "stderr")
#: The streams of a tool hook's output (``hook_stdout``, ``hook_stderr``).
_HOOK = "hook_"
_FINAL = {
    "pipeline_completed": "pipeline succeeded",
    "pipeline_failed": "pipeline failed",
    "pipeline_timed_out": "pipeline timed out",
    "pipeline_interrupted": "pipeline stopped",
}


def clean(text: str, mode: AnsiMode) -> str:
    """``text`` with its ANSI escapes treated as ``mode`` says."""
    if mode == "raw" or "\x1b" not in text:
        return text
    if mode == "strip":
        return _ESCAPE.sub("", text)
    return _ESCAPE.sub(lambda m: m.group() if _COLOUR.fullmatch(m.group()) else "", text)


@mutable
class _Attempt:
    node: str
    visit: int
    attempt: int
    handler: str
    folder: Path
    #: Bytes of each stream's file shown so far (by events or from the file).
    shown: dict[str, int] = field(default_factory=dict)
    headed: bool = False
    #: The agent's tool call whose start was the last line shown ("" when none).
    last_call: str = ""

    def title(self) -> str:
        kind = f" ({self.handler})" if self.handler else ""
        return f"{self.node}{kind}, visit {self.visit}, attempt {self.attempt}"


class LogPrinter:
    """Turns a run's events, in order, into log lines for ``write``.

    ``node`` keeps one node's steps only; ``every_step`` heads every attempt
    even when it showed nothing (one node's visits are worth seeing).
    """

    def __init__(
        self,
        run_dir: Path,
        write: Callable[[str], None],
        *,
        node: str | None = None,
        ansi: AnsiMode = "strip",
    ) -> None:
        self.run_dir = run_dir
        self._write = write
        self.node = node
        self.ansi = ansi
        self._open: dict[str, _Attempt] = {}
        #: A sub-pipeline's stage (``NODE/CHILD``): its child run's directory and own name.
        self._children: dict[str, tuple[Path, str]] = {}
        self._starts: Counter[tuple[str, int, int]] = Counter()
        self._current: _Attempt | None = None
        #: The last text written ended its line (or nothing was written yet).
        self._line_ended = True
        self.ended = False

    # -- events -----------------------------------------------------------------

    def event(self, e: dict[str, Any]) -> None:
        kind = str(e.get("type"))
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            try:
                handler(e)
            except (KeyError, TypeError, ValueError):  # a damaged event: skip it
                return
        elif kind in _FINAL:
            self._final(kind, e)

    def _wanted(self, node: str) -> bool:
        # A sub-pipeline node's own child stages (NODE/CHILD) come with it.
        return self.node is None or node == self.node or node.startswith(self.node + "/")

    def _on_child_event(self, e: dict[str, Any]) -> None:
        """A sub-pipeline's child event: shown as the parent's, named ``NODE/CHILD``."""
        inner, root = self._from_child(e, self.run_dir)
        for key in ("name", "node"):
            value = inner.get(key)
            if isinstance(value, str) and "/" in value:
                self._children[value] = (root, value.rsplit("/", 1)[1])
        self.event(inner)

    def _from_child(self, e: dict[str, Any], root: Path) -> tuple[dict[str, Any], Path]:
        """The innermost event of nested child events, renamed, and its run directory."""
        node, inner = str(e["node"]), e["event"]
        root = root / str(e["child_dir"])
        if not isinstance(inner, dict):
            raise TypeError("a child event holds no event")
        if inner.get("type") == "child_event":
            inner, root = self._from_child(inner, root)
        renamed = {
            k: f"{node}/{inner[k]}" for k in ("name", "node") if isinstance(inner.get(k), str)
        }
        return {**inner, **renamed}, root

    def _folder(self, name: str, visit: int, attempt: int, started: int = 1) -> Path:
        root, own = self._children.get(name, (self.run_dir, name))
        return attempt_folder(root, own, visit, attempt, started)

    def _on_pipeline_started(self, e: dict[str, Any]) -> None:
        self.ended = False

    def _on_stage_started(self, e: dict[str, Any]) -> None:
        name = str(e["name"])
        attempt = _count(e.get("attempt"), 1)
        visit = _count(e.get("visit"), 1)
        self._starts[name, visit, attempt] += 1
        if not self._wanted(name):
            return
        self._close(name)
        folder = self._folder(name, visit, attempt, self._starts[name, visit, attempt])
        step = _Attempt(name, visit, attempt, str(e.get("handler") or ""), folder)
        self._open[name] = step
        if self.node is not None:
            self._head(step)

    def _on_stage_output(self, e: dict[str, Any]) -> None:
        step = self._step(str(e["node"]))
        if step is None:
            return
        stream, text, offset = str(e["stream"]), str(e["text"]), int(e["offset"])
        skipped = _count(e.get("skipped"), 0)
        hook = stream.startswith(_HOOK)
        if skipped and text.count("\n") > 1:
            note, text = text.split("\n", 1)
            # A hook's file holds only the latest hook's output: no filling from it.
            if hook or not self._from_file(step, stream, offset - skipped, offset):
                self._line(step, note)
        if hook:  # a tool hook's lines, marked so among the agent's calls
            self._text(step, "".join(f"  hook| {line}" for line in text.splitlines(True)))
            return
        self._text(step, text)
        step.shown[stream] = offset + len(text.encode("utf-8"))

    def _on_tool_call_started(self, e: dict[str, Any]) -> None:
        step = self._step(str(e["node"]))
        if step is not None:
            summary = str(e.get("summary") or "")
            call = f"{e['tool']}{': ' + summary if summary else ''}"
            self._line(step, f"> {call}")
            step.last_call = call

    def _on_tool_call_completed(self, e: dict[str, Any]) -> None:
        step = self._step(str(e["node"]))
        if step is None:
            return
        arguments = e.get("arguments")
        summary = call_summary(arguments) if isinstance(arguments, dict) else ""
        call = f"{e['tool']}{': ' + summary if summary else ''}"
        if step.last_call != call or self._current is not step:
            # Not right after its start (calls run side by side, or an agent CLI
            # reports a call only once it is done): say which call this is.
            self._line(step, f"< {call}")
        step.last_call = ""
        lines = str(e.get("output") or "").splitlines()
        if len(lines) > RESULT_LINES:
            where = (step.folder / "transcript.jsonl").relative_to(self.run_dir)
            hidden = len(lines) - RESULT_LINES
            self._line(step, f"  [... {hidden} earlier lines of the result; all in {where}]")
            lines = lines[-RESULT_LINES:]
        for line in lines:
            self._line(step, "  " + line)
        if e.get("is_error"):
            self._line(step, f"  ({e['tool']} failed)")

    def _on_stage_completed(self, e: dict[str, Any]) -> None:
        self._end(str(e["name"]), f"{e.get('status', 'success')} in {float(e['duration']):.1f}s")

    def _on_stage_failed(self, e: dict[str, Any]) -> None:
        retry = ", will retry" if e.get("will_retry") else ""
        self._end(str(e["name"]), f"fail{retry}: {e.get('error', '')}")

    def _final(self, kind: str, e: dict[str, Any]) -> None:
        for name, step in list(self._open.items()):
            self._close(name)
            if step.headed:  # the run ended while it ran: say so, as each attempt ends
                self._out(f"<== {name}: stopped\n")
        why = str(e.get("error") or "")
        self._out(f"== {_FINAL[kind]}{': ' + why if why else ''}\n")
        self._current = None
        self.ended = True

    # -- attempts -----------------------------------------------------------------

    def _step(self, node: str) -> _Attempt | None:
        """The node's attempt that is running (one is made up for events without a start)."""
        if not self._wanted(node):
            return None
        step = self._open.get(node)
        if step is None:
            step = self._open[node] = _Attempt(node, 1, 1, "", self._folder(node, 1, 1))
        return step

    def _end(self, node: str, how: str) -> None:
        step = self._open.get(node)
        if step is None:
            return
        self._close(node)
        if step.headed:
            self._out(f"<== {node}: {clean(how, 'strip')}\n")
            self._current = None

    def _close(self, node: str) -> None:
        """End the node's open attempt: what no event showed of its files comes now."""
        step = self._open.pop(node, None)
        if step is not None:
            self.fill(step)

    def fill(self, step: _Attempt) -> None:
        for stream in _STREAMS:
            if stream not in step.shown:  # no event said anything of this stream
                self._from_file(step, stream, 0, None)

    def finish(self) -> None:
        """The end of what there is to read (not following): show the open attempts' files."""
        for step in self._open.values():
            self.fill(step)

    # -- output -------------------------------------------------------------------

    def _head(self, step: _Attempt) -> None:
        if self._current is step:
            return
        more = " (continued)" if step.headed else ""
        self._out(f"==> {step.title()}{more}\n")
        step.headed = True
        self._current = step

    def _line(self, step: _Attempt, line: str) -> None:
        self._text(step, line + "\n")

    def _text(self, step: _Attempt, text: str) -> None:
        if text:
            self._text_part(step, text if text.endswith("\n") else text + "\n")

    def _out(self, text: str) -> None:
        """Write ``text`` on a line of its own."""
        if not self._line_ended:
            text = "\n" + text
        self._write(text)
        self._line_ended = text.endswith("\n")

    def _from_file(self, step: _Attempt, stream: str, start: int, end: int | None) -> bool:
        """Show bytes ``start`` to ``end`` (None: the end) of the attempt's stream file."""
        try:
            fd, size = open_regular(step.folder / f"{stream}.txt", "output file", follow=False)
        except InputFileError:
            return False
        try:
            stop = size if end is None else min(end, size)
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            position = start
            while position < stop:
                data = os.pread(fd, min(1024 * 1024, stop - position), position)
                if not data:
                    break
                position += len(data)
                self._text_part(step, decoder.decode(data))
            self._text_part(step, decoder.decode(b"", final=True))
            if not self._line_ended and end is None:
                self._write("\n")  # a file that ends without a newline
                self._line_ended = True
            if end is None:
                step.shown[stream] = position
            return position > start
        except OSError:
            return False
        finally:
            os.close(fd)

    def _text_part(self, step: _Attempt, text: str) -> None:
        """Output of ``step``, which may end in the middle of a line."""
        if text:
            self._head(step)
            self._write(clean(text, self.ansi))
            self._line_ended = text.endswith("\n")


def _count(value: Any, default: int) -> int:
    return value if type(value) is int else default
