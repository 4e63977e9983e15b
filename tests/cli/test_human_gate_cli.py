"""Human gates through the CLI: the no-answer preflight, piped answers, a typo."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.runkit import finish, lines_of, run_dirs, spawn, write

PIPELINE = """\
digraph gate {{
    start  [shape=Mdiamond]
    exit   [shape=Msquare]
    build  [shape=parallelogram, tool_command="echo built >> side.txt"]
    review [shape=hexagon, label="Ship it?"{extra}]
    start -> build -> review
    review -> exit  [label="[Y] Yes"]
    review -> build [label="[N] No"]
}}
"""
LOGS = ["--logs-dir", "runs/{timestamp}-{graph}"]


def test_gates_nobody_can_answer_are_a_usage_error_before_any_node_runs(
    workspace: Path,
) -> None:
    write(workspace / "p.dot", PIPELINE.format(extra=""))
    code, out, err = finish(spawn(["run", "p.dot", *LOGS], workspace))  # stdin: /dev/null
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("error: human gate(s) review need answers and stdin is not a terminal")
    )
    assert "--answers FILE" in err and "--auto-approve" in err
    assert not (workspace / "side.txt").exists() and run_dirs(workspace / "runs") == []


def test_a_gate_with_a_default_and_a_timeout_answers_itself(workspace: Path) -> None:
    extra = ', human.default_choice="Y", human.timeout="50ms"'
    write(workspace / "p.dot", PIPELINE.format(extra=extra))
    code, out, err = finish(spawn(["run", "p.dot", *LOGS], workspace))
    assert code == 0, err
    assert "timed out; took human.default_choice" in out


def test_piped_answers_with_a_typo_ask_again(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE.format(extra=", max_retries=0"))
    proc = spawn(["run", "p.dot", *LOGS], workspace, stdin=subprocess.PIPE)
    code, out, err = finish_with_input(proc, "maybe\nN: build it again\nY\n")
    assert code == 0, err
    assert "'maybe' is not one of the choices (Y, N). Ship it?" in err
    assert lines_of(workspace / "side.txt") == ["built", "built"]
    assert "human chose [N] No: build it again" in out


def finish_with_input(proc: subprocess.Popen[str], text: str) -> tuple[int, str, str]:
    out, err = proc.communicate(text, timeout=60)
    return proc.returncode, out, err
