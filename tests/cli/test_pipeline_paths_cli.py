"""A path a pipeline names can neither freeze ``attractor run`` nor read outside its roots.

Real subprocesses: a FIFO used to block the event loop inside ``open()``, so the
run ignored ``--timeout``, Ctrl-C and SIGTERM; a test that regressed would hang,
so each process is killed after a generous bound and the test fails instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli.runkit import finish, only_run_dir, spawn, write

#: Far above the few hundred milliseconds these runs take, even on a loaded machine.
BOUND = 30

GATE = """\
digraph g {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    gate  [shape=hexagon, label="Ship it?", human.show="{show}"]
    start -> gate
    gate -> done [label="[Y] Yes"]
}}
"""


def _run(workspace: Path, show: str) -> tuple[int, str, str, Path]:
    write(workspace / "h.dot", GATE.format(show=show))
    args = ["run", "h.dot", "--auto-approve", "--timeout", "5s", "--logs-dir", "runs/{timestamp}"]
    code, out, err = finish(spawn(args, workspace), timeout=BOUND)
    return code, out, err, only_run_dir(workspace / "runs")


def test_a_fifo_human_show_fails_the_gate_instead_of_freezing(workspace: Path) -> None:
    os.mkfifo(workspace / "fifo")
    code, out, err, _ = _run(workspace, "fifo")
    assert code == 1, out + err  # the pipeline failed, promptly, with the reason
    assert "Traceback" not in err
    assert "human.show of node gate" in out + err
    assert "a FIFO (named pipe), not a regular file" in out + err


def test_a_human_show_climbing_out_never_reaches_the_events(workspace: Path) -> None:
    home = workspace.parent / f"{workspace.name}-home"
    write(home / ".ssh" / "id_ed25519", "PRIVATE KEY MATERIAL\n")
    project = workspace / "project"
    project.mkdir()
    show = f"../../{home.name}/.ssh/id_ed25519"
    code, out, err, run_dir = _run(project, show)
    assert code == 1, out + err
    assert "outside the places a run may read" in out + err
    assert "PRIVATE KEY" not in (run_dir / "events.jsonl").read_text(encoding="utf-8")
    assert "PRIVATE KEY" not in out + err


WORKDIR = """\
digraph w {{
    graph [workdir="{workdir}"]
    start [shape=Mdiamond]
    done  [shape=Msquare]
    here  [shape=parallelogram, tool_command="pwd"]
    start -> here -> done
}}
"""


def test_a_graph_workdir_outside_the_roots_is_one_line_before_anything_runs(
    workspace: Path,
) -> None:
    write(workspace / "w.dot", WORKDIR.format(workdir="/etc"))
    code, out, err = finish(spawn(["run", "w.dot", "--logs-dir", "runs/x"], workspace), BOUND)
    assert code == 2, out + err
    (line,) = err.splitlines()
    assert line.startswith("error: graph attribute workdir: /etc: resolves to /etc, outside")
    assert not (workspace / "runs" / "x" / "here").exists()
    # The user's own --workdir is theirs to choose.
    args = ["run", "w.dot", "--logs-dir", "runs/y", "--workdir", "/etc", "-q"]
    assert finish(spawn(args, workspace), BOUND)[0] == 0


def test_a_graph_workdir_is_applied_once(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    write(workspace / "w.dot", WORKDIR.format(workdir="sub"))
    code, out, err = finish(spawn(["run", "w.dot", "--logs-dir", "runs/x", "-q"], workspace), BOUND)
    assert code == 0, out + err
    ran_in = (workspace / "runs" / "x" / "here" / "stdout.txt").read_text().strip()
    assert Path(ran_in) == (workspace / "sub").resolve()
