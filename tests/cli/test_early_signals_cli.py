"""Ctrl-C, SIGTERM and SIGHUP at any moment of a real ``attractor`` process mean
130, 143 and 129: never click's ``Aborted!`` and exit 1 (a failed pipeline)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.runkit import events, finish, run_dirs, wait_for, write

_EXPECTED = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
#: When the signal is sent: at once, a little after the start (click and the
#: engine still loading), as soon as our handlers are in place and a little
#: after, and while a node runs.
_POINTS = ["spawn", "0.05s", "0.1s", "0.15s", "0.3s", "handlers", "handlers+0.2s", "running"]


def _spawn_script(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """``attractor ARGS`` as the console script starts it.

    Not ``python -m attractor``: a Ctrl-C while Python imports runpy, before any
    line of ours, ends that with exit 1 ("Could not import runpy module").
    """
    leaky = ("ATTRACTOR_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_API")  # as runkit.spawn
    env = {k: v for k, v in os.environ.items() if not k.startswith(leaky)}
    return subprocess.Popen(
        [sys.executable, "-c", "from attractor.cli.entry import main; main()", *args],
        cwd=cwd,
        env={**env, "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _python(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by a new interpreter, its output captured."""
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )


def _caught(pid: int) -> int:
    """The SigCgt mask of ``pid``: bit N-1 is set when signal N has a handler."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return 0


def _handlers_in_place(proc: subprocess.Popen[str]) -> bool:
    # Python itself catches SIGINT from the start; SIGHUP is the last one ours installs.
    try:
        return bool(_caught(proc.pid) & (1 << (signal.SIGHUP - 1)))
    except OSError:
        return proc.poll() is not None


def _node_running(logs: Path) -> bool:
    dirs = run_dirs(logs)
    if not dirs or not (dirs[0] / "events.jsonl").exists():
        return False
    return any(e.get("type") == "stage_started" for e in events(dirs[0]))


@pytest.mark.parametrize("signum", list(_EXPECTED), ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("point", _POINTS)
def test_a_stop_signal_at_any_moment_gives_its_exit_code(
    workspace: Path, signum: signal.Signals, point: str
) -> None:
    write(
        workspace / "slow.dot",
        "digraph slow { start [shape=Mdiamond]; done [shape=Msquare]; "
        't [shape=parallelogram, tool_command="sleep 60"]; start -> t -> done }',
    )
    proc = _spawn_script(["run", "slow.dot", "--logs-dir", "runs/{graph}"], workspace)
    if point.startswith("handlers"):
        wait_for(lambda: _handlers_in_place(proc), "the stop-signal handlers")
    if point.endswith("s") and point != "handlers":
        time.sleep(float(point.rpartition("+")[2].removesuffix("s")))
    if point == "running":
        wait_for(lambda: _node_running(workspace / "runs"), "the tool node to start")
    ours = _handlers_in_place(proc)
    proc.send_signal(signum)
    code, out, err = finish(proc)
    assert "Aborted!" not in err
    # Nothing half made: no run directory yet, or one that can be resumed.
    made = workspace / "runs" / "slow"
    assert not made.exists() or (made / "checkpoint.json").is_file(), sorted(made.iterdir())
    if not ours:
        # Sent before the interpreter ran our first lines: the default action (or
        # Python's KeyboardInterrupt) ends it, which a shell sees as 128+N too,
        # except while Python itself is still starting (it then reports a fatal
        # error in its own start-up and exits 1; nothing of ours has run).
        if "Fatal Python error: init_" not in err:
            assert (128 - code if code < 0 else code) == _EXPECTED[signum], err
        return
    assert code == _EXPECTED[signum], err
    assert "Traceback" not in err, err
    assert err.strip(), f"the process says why it stopped; stdout: {out[-500:]!r}"


def test_a_signal_ignored_at_start_stays_ignored() -> None:
    """``nohup attractor ...`` keeps ignoring SIGHUP, as Python itself would."""
    code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "from attractor.cli import stop_signals\n"
        "stop_signals.install(); stop_signals.install()\n"
        "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN,\n"
        "      signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_a_keyboard_interrupt_that_reaches_click_is_130_not_aborted(tmp_path: Path) -> None:
    """A KeyboardInterrupt (Python's own SIGINT handler, where one is in place) that
    reaches click; click would print "Aborted!" and exit 1."""
    script = (
        "import sys, click\n"
        "from attractor.cli import main\n"
        "@click.command()\n"
        "def boom():\n"
        "    raise KeyboardInterrupt\n"
        "main._COMMANDS['boom'] = '__main__:boom'\n"
        "sys.argv = ['attractor', 'boom']\n"
        "main.main()\n"
    )
    done = _python(script)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "error: interrupted (Ctrl-C)\n"


#: A stop signal handled inside ``__del__``: Python drops the handler's exception
#: ("Exception ignored in ..."), as it does in the import system's lock clean-up,
#: where a loaded machine once lost a SIGHUP and the run went on.
_DROPPED = (
    "import os, signal, sys, time\n"
    "from attractor.cli import stop_signals\n"
    "stop_signals.install()\n"
    "class Dropped:\n"
    "    def __del__(self):\n"
    "        os.kill(os.getpid(), signal.SIGHUP)\n"
    "        time.sleep(0.5)  # the handler runs here, and its exception goes nowhere\n"
    "Dropped()\n"
    "print('went on', file=sys.stderr, flush=True)\n"
    "sys.argv = ['attractor', 'run', 'slow.dot', '--logs-dir', 'runs/{graph}']\n"
)


@pytest.mark.parametrize("entry", ["entry", "engine"])
def test_a_stop_signal_whose_exception_was_dropped_still_stops_the_run(
    workspace: Path, entry: str
) -> None:
    write(
        workspace / "slow.dot",
        "digraph slow { start [shape=Mdiamond]; done [shape=Msquare]; "
        't [shape=parallelogram, tool_command="sleep 60"]; start -> t -> done }',
    )
    # "entry": the console script's entry point notices it once click is loaded;
    # "engine": past that point, the run's stop requests notice it as the run starts.
    then = (
        "from attractor.cli.entry import main; main()\n"
        if entry == "entry"
        else "from attractor.cli.main import main; main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _DROPPED + then],
        cwd=workspace,
        env={**os.environ, "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    code, out, err = finish(proc)
    assert "went on" in err  # the signal's exception was dropped indeed
    assert "Exception ignored" not in err and "Traceback" not in err  # and not printed
    assert code == 129, err
    made = workspace / "runs" / "slow"
    if entry == "engine":  # the run started and was saved as hung up, resumable
        assert (made / "checkpoint.json").is_file()
        assert '"hangup"' in (made / "manifest.json").read_text("utf-8")
    else:
        assert not made.exists()


def test_a_stop_signal_wrapped_by_python_still_gives_its_exit_code() -> None:
    """A signal landing in ``__set_name__`` while a module defines a class comes
    out as a RuntimeError caused by the StopSignal (seen while the engine loaded)."""
    script = (
        "import os, signal, sys, time, click\n"
        "from attractor.cli import main\n"
        "class Slot:\n"
        "    def __set_name__(self, owner, name):\n"
        "        os.kill(os.getpid(), signal.SIGHUP)\n"
        "        time.sleep(0.5)  # the handler raises here; Python wraps it\n"
        "@click.command()\n"
        "def load():\n"
        "    class Loaded:\n"
        "        slot = Slot()\n"
        "main._COMMANDS['load'] = '__main__:load'\n"
        "sys.argv = ['attractor', 'load']\n"
        "main.main()\n"
    )
    done = _python(script)
    assert done.returncode == 129, done.stderr
    assert done.stderr == "error: hung up (SIGHUP)\n"


def test_a_stop_signal_inside_the_event_loop_cuts_nothing_short() -> None:
    """A signal that lands while the event loop runs (a child's exit or a worker
    thread's result being handed over, say) must not raise there: what it cut short
    would never finish, and a task waiting for it would hang the process. The work is
    cancelled instead, its cleanup runs, and the stop's exit code comes after."""
    script = (
        "import os, signal, anyio\n"
        "from attractor.cli import stop_signals\n"
        "stop_signals.install()\n"
        "steps = []\n"
        "async def main():\n"
        "    os.kill(os.getpid(), signal.SIGHUP)\n"
        "    steps.append('the rest of the step')\n"
        "    try:\n"
        "        await anyio.run_process(['sleep', '30'])\n"
        "        steps.append('slept')\n"
        "    finally:\n"
        "        steps.append('cleaned up')\n"
        "try:\n"
        "    stop_signals.run(main)\n"
        "except stop_signals.StopSignal as stop:\n"
        "    print(steps, stop.code)\n"
    )
    done = _python(script)
    assert done.stdout.strip() == "['the rest of the step', 'cleaned up'] 129", done.stderr
