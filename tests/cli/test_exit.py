"""How an ``attractor`` process ends: without the interpreter's teardown, but with
everything that teardown does that anyone can see.

Each test runs the console script's ``main`` in a new interpreter, as a user's
shell (or a script wrapping the command line) does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.runkit import write

_FLOW = "digraph g { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }\n"


def _main(prelude: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``attractor ARGS`` after ``prelude`` ran in the same interpreter."""
    script = f"{prelude}\nimport sys\nsys.argv = ['attractor', *{args!r}]\n"
    script += "from attractor.cli.entry import main\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_exit_handlers_run_and_the_exit_code_is_kept(tmp_path: Path) -> None:
    write(tmp_path / "bad.dot", "digraph g { start [shape=Mdiamond]; start -> nowhere }\n")
    mark = tmp_path / "handler-ran"
    prelude = (
        "import atexit, pathlib\n"
        f"atexit.register(lambda: pathlib.Path({str(mark)!r}).write_text('yes'))"
    )
    done = _main(prelude, ["lint", "bad.dot"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "error" in done.stdout
    assert mark.read_text() == "yes"


def test_a_long_output_reaches_a_pipe_whole(tmp_path: Path) -> None:
    """Nothing is left in the stream's buffer when the process ends."""
    nodes = "\n".join(f"  n{i}" for i in range(3000))
    chain = " -> ".join(f"n{i}" for i in range(3000))
    text = f"digraph g {{\n  start [shape=Mdiamond]; done [shape=Msquare]\n{nodes}\n"
    write(tmp_path / "big.dot", f"{text}  start -> {chain} -> done\n}}\n")
    done = _main("", ["lint", "big.dot"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("has no prompt or label") == 3000
    assert done.stdout.rstrip().endswith("0 error(s), 3000 warning(s) in 1 file")


#: Work left running by the caller of ``main``: its own thread that is not a daemon, and
#: a thread pool whose workers stop when told at exit (as Python's own exit tells them).
_LEFT_RUNNING = {
    "thread": "threading.Thread(target=job).start()",
    "pool": "concurrent.futures.ThreadPoolExecutor(1).submit(job)",
}


@pytest.mark.parametrize("left", sorted(_LEFT_RUNNING))
def test_work_left_running_is_waited_for_as_python_would(tmp_path: Path, left: str) -> None:
    write(tmp_path / "flow.dot", _FLOW)
    mark = tmp_path / "job-done"
    prelude = (
        "import concurrent.futures, pathlib, threading, time\n"
        "def job():\n"
        "    time.sleep(0.3)\n"
        f"    pathlib.Path({str(mark)!r}).write_text('finished')\n"
        f"{_LEFT_RUNNING[left]}"
    )
    done = _main(prelude, ["lint", "flow.dot"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert mark.read_text() == "finished"


#: What can keep a finished command's process from ending: a thread that is not a
#: daemon and never ends, an exit handler that never returns (as Ray's has done).
_NEVER_ENDING = {
    "thread": "threading.Thread(target=threading.Event().wait).start()",
    "exit handler": "atexit.register(threading.Event().wait)",
}


@pytest.mark.parametrize("waiting", sorted(_NEVER_ENDING))
def test_a_way_out_that_never_ends_is_cut_short_with_the_exit_code_kept(
    tmp_path: Path, waiting: str
) -> None:
    write(tmp_path / "bad.dot", "digraph g { start [shape=Mdiamond]; start -> nowhere }\n")
    prelude = (
        "import atexit, threading\n"
        "import attractor.cli.main\n"
        "attractor.cli.main.TEARDOWN_LIMIT = 0.5\n"
        f"{_NEVER_ENDING[waiting]}"
    )
    done = _main(prelude, ["lint", "bad.dot"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "1 error(s)" in done.stdout  # the command's output, all of it
    assert done.stderr.endswith(
        "warning: the command was done but its process still waited after 0.5s "
        "(a thread or an exit handler that did not end); ended it\n"
    )


def test_a_run_ends_with_its_files_whole(tmp_path: Path) -> None:
    write(tmp_path / "flow.dot", _FLOW)
    args = ["run", "--backend", "simulate", "-q", "--workspace", "none", "flow.dot"]
    done = _main("", args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "pipeline succeeded" in done.stdout
    (run,) = (tmp_path / ".attractor" / "runs").iterdir()
    lines = (run / "events.jsonl").read_text().splitlines()
    assert lines[-1].startswith('{"type": "pipeline_completed"')
    assert '"status": "success"' in (run / "manifest.json").read_text()


def test_an_output_that_cannot_be_written_is_one_line_and_exit_74(tmp_path: Path) -> None:
    write(tmp_path / "flow.dot", _FLOW.replace("start -> done", "start -> x -> done"))
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", "from attractor.cli.entry import main; main()", "lint"]
            + ["flow.dot"],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 74
    assert done.stderr == "error: cannot write the output: No space left on device\n"
