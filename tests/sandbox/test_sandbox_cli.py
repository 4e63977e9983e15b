"""The sandbox through the real CLI: defaults, faults, lint, dry run, timeouts and kills."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import (
    events,
    finish,
    invoke,
    only_run_dir,
    pids_with,
    sleep_mark,
    spawn,
    wait_for,
    write,
)
from tests.sandbox.conftest import needs_bwrap

TOOL = """digraph p {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    t [shape=parallelogram, tool_command="%s"%s]
    start -> t -> done
}"""


@pytest.fixture
def mark() -> Iterator[str]:
    """A unique number usable as a ``sleep`` argument and found again in /proc."""
    with sleep_mark(47) as word:
        yield word


def _no_bwrap_path(tmp_path: Path) -> str:
    """A PATH with the usual tools but no ``bwrap``."""
    bin_dir = tmp_path / "bin-without-bwrap"
    bin_dir.mkdir()
    for tool in ("sh", "echo", "touch", "cat", "printenv", "true"):
        for folder in ("/usr/bin", "/bin"):
            if os.path.exists(f"{folder}/{tool}"):
                (bin_dir / tool).symlink_to(f"{folder}/{tool}")
                break
    return str(bin_dir)


@needs_bwrap
def test_a_tool_node_is_sandboxed_by_default(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ("touch ok.txt; touch /etc/escape-attempt", ""))
    result = invoke(["run", "p.dot", "--logs-dir", "runs"])
    assert result.exit_code == 1
    assert (workspace / "ok.txt").exists()
    assert not Path("/etc/escape-attempt").exists()
    assert "Read-only file system" in (workspace / "runs" / "t" / "stderr.txt").read_text()


@pytest.mark.parametrize("attrs", ["", ", sandbox=auto"])
def test_sandbox_required_without_bwrap_refuses_to_run(
    workspace: Path, tmp_path: Path, attrs: str
) -> None:
    write(workspace / "p.dot", TOOL % ("touch ran.txt", attrs))
    env = {"PATH": _no_bwrap_path(tmp_path)}
    code, out, err = finish(spawn(["run", "p.dot", "--sandbox", "required"], workspace, env))
    assert code == 2, err
    assert err.strip().splitlines() == [
        "error: the run requires a sandbox, but bwrap is not installed "
        "(Debian/Ubuntu: apt-get install bubblewrap)"
    ]
    assert not (workspace / "ran.txt").exists()


def test_a_simulated_run_tries_no_sandbox(workspace: Path, tmp_path: Path) -> None:
    bin_dir = Path(_no_bwrap_path(tmp_path))
    calls = tmp_path / "bwrap-calls.txt"
    (bin_dir / "bwrap").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    (bin_dir / "bwrap").chmod(0o755)
    write(
        workspace / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; "
        'plan [prompt="plan it"]; start -> plan -> done }',
    )
    env = {"PATH": str(bin_dir)}
    args = ["run", "p.dot", "--backend", "simulate", "--logs-dir", "runs"]
    # Nothing runs a command: no sandbox is tried, none is missing, none is required.
    code, _, err = finish(spawn([*args, "--sandbox", "required"], workspace, env))
    assert code == 0, err
    assert "notice" not in err
    assert not calls.exists()
    # A tool step does run one: the same sandbox is tried, and refused.
    write(workspace / "t.dot", TOOL % ("touch ran.txt", ""))
    code, _, err = finish(spawn(["run", "t.dot", "--sandbox", "required"], workspace, env))
    assert code == 2 and "bwrap cannot create a sandbox here" in err
    assert calls.exists() and not (workspace / "ran.txt").exists()


def test_auto_without_bwrap_says_so_in_one_line_and_runs(workspace: Path, tmp_path: Path) -> None:
    write(workspace / "p.dot", TOOL % ("touch ran.txt", ""))
    env = {"PATH": _no_bwrap_path(tmp_path)}
    code, out, err = finish(spawn(["run", "p.dot", "--logs-dir", "runs"], workspace, env))
    assert code == 0, err
    notices = [line for line in err.splitlines() if line.startswith("notice: no sandbox")]
    assert len(notices) == 1 and "bwrap is not installed" in notices[0]
    assert (workspace / "ran.txt").exists()
    code, out, err = finish(
        spawn(["run", "p.dot", "--logs-dir", "runs2", "--sandbox", "none"], workspace, env)
    )
    assert code == 0 and "notice" not in err


def test_a_missing_writable_path_is_one_line_before_the_step(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ("touch ran.txt", ", writable=missing-dir"))
    result = invoke(["run", "p.dot"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        f"node t: writable path {workspace / 'missing-dir'} does not exist; "
        "create it or remove it from writable="
    )
    assert not (workspace / "ran.txt").exists()


def test_required_refuses_a_node_that_opts_out(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ("true", ", sandbox=none"))
    result = invoke(["run", "p.dot", "--sandbox", "required"])
    assert result.exit_code == 2
    assert "node t: sandbox=none, but the run requires a sandbox" in result.stderr


def test_lint_checks_the_boundary_attributes(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        TOOL % ("true", ', sandbox=vm, network=maybe, env=all, env_allow="A B$"'),
    )
    result = invoke(["lint", "p.dot"])
    assert result.exit_code != 0
    text = result.output + result.stderr
    assert "sandbox" in text and "expected one of auto, bwrap, none" in text
    assert "network" in text and "expected on, off, or host names" in text
    assert "expected one of inherit, core, none" in text
    assert "'B$' is not a variable-name pattern" in text


def _boundary_lines(output: str) -> list[str]:
    """The ``boundary:`` lines of a dry run's plan, one a step that runs commands."""
    return [line.strip() for line in output.splitlines() if "boundary:" in line]


@needs_bwrap
def test_dry_run_shows_each_steps_boundary(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        """digraph p {
            start [shape=Mdiamond]
            done  [shape=Msquare]
            a [shape=parallelogram, tool_command="true"]
            b [shape=parallelogram, tool_command="true", network=on, sandbox=none]
            c [shape=parallelogram, tool_command="true", network=on, env_allow="DEPLOY_*"]
            start -> a -> b -> c -> done
        }""",
    )
    result = invoke(["run", "p.dot", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    lines = _boundary_lines(result.output)
    assert lines == [
        "boundary: bwrap sandbox, network off, writable: workdir, env=core",
        "boundary: local, no sandbox, env=core",
        "boundary: bwrap sandbox, network on, writable: workdir, env=core allow=DEPLOY_*",
    ]


@needs_bwrap
def test_timeout_kills_a_sleep_inside_the_sandbox(workspace: Path, mark: str) -> None:
    write(
        workspace / "p.dot", TOOL % (f"echo started > started.txt; sleep {mark} & sleep {mark}", "")
    )
    args = ["run", "p.dot", "--timeout", "2s", "--logs-dir", "runs/{timestamp}"]
    code, out, err = finish(spawn(args, workspace))
    assert code == 124, err
    assert (workspace / "started.txt").exists()
    assert pids_with(mark) == [], "a sleep survived the run"


@needs_bwrap
def test_ctrl_c_and_kill_9_leave_no_sandboxed_process(workspace: Path, mark: str) -> None:
    write(workspace / "p.dot", TOOL % (f"touch started.txt; sleep {mark}", ""))
    proc = spawn(["run", "p.dot", "--logs-dir", "runs/{timestamp}"], workspace)
    wait_for(lambda: (workspace / "started.txt").exists(), "the sandboxed command to start")
    wait_for(lambda: pids_with(mark) != [], "the sleep to show up")
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130, err
    wait_for(lambda: pids_with(mark) == [], "the sleep to be gone after Ctrl-C", timeout=10)

    (workspace / "started.txt").unlink()
    proc = spawn(["run", "p.dot", "--logs-dir", "runs/{timestamp}-b"], workspace)
    wait_for(lambda: (workspace / "started.txt").exists(), "the sandboxed command to start")
    wait_for(lambda: pids_with(mark) != [], "the sleep to show up")
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc)
    # --die-with-parent: the sandbox goes with the engine, its sleep with it.
    wait_for(lambda: pids_with(mark) == [], "the sleep to be gone after kill -9", timeout=10)


@needs_bwrap
def test_the_agent_is_told_when_the_sandbox_refused(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        """digraph p {
            start [shape=Mdiamond]
            done  [shape=Msquare]
            work  [prompt="try"]
            start -> work -> done
        }""",
    )
    call = {"name": "shell", "arguments": {"command": "touch /usr/local/escape-attempt"}}
    turns = [{"text": "", "tool_calls": [call]}, {"text": "done"}]
    write(workspace / "model.json", json.dumps({"responses": turns, "then": "stop"}))
    args = ["run", "p.dot", "--logs-dir", "runs/{timestamp}", "--backend", "scripted:model.json"]
    result = invoke(args)
    assert result.exit_code == 0, result.stderr
    run_dir = only_run_dir(workspace / "runs")
    done = [e for e in events(run_dir) if e["type"] == "tool_call_completed"]
    output = done[0]["output"]
    assert "Read-only file system" in output
    assert (
        "[sandbox: " in output and "only the working directory and $TMPDIR are writable" in output
    )


def test_status_json_says_where_the_step_ran(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ("true", ", sandbox=none, env=none"))
    result = invoke(["run", "p.dot", "--logs-dir", "runs"])
    assert result.exit_code == 0, result.stderr
    status = json.loads((workspace / "runs" / "t" / "status.json").read_text())
    assert status["boundary"] == "local, no sandbox, env=none"


def test_a_bwrap_that_cannot_create_namespaces_is_named(workspace: Path, tmp_path: Path) -> None:
    bin_dir = Path(_no_bwrap_path(tmp_path))
    refusal = "bwrap: No permissions to create new namespace, likely because the kernel does not"
    fake = bin_dir / "bwrap"  # what bwrap says where user namespaces are disabled
    fake.write_text(f"#!/bin/sh\necho '{refusal}' >&2\nexit 1\n")
    fake.chmod(0o755)
    write(workspace / "p.dot", TOOL % ("touch ran.txt", ""))
    env = {"PATH": str(bin_dir)}
    code, _, err = finish(spawn(["run", "p.dot", "--sandbox", "required"], workspace, env))
    assert code == 2
    assert err.strip() == (
        f"error: the run requires a sandbox, but bwrap cannot create a sandbox here ({refusal}); "
        "user namespaces may be disabled"
    )
    code, _, err = finish(spawn(["run", "p.dot", "--logs-dir", "runs"], workspace, env))
    assert code == 0, err
    assert f"notice: no sandbox: bwrap cannot create a sandbox here ({refusal})" in err
    assert (workspace / "ran.txt").exists()


def _guards(engine: int) -> list[int]:
    """The crash guard processes the engine ``engine`` started."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat[stat.rfind(b")") + 2 :].split()[1])
        if parent == engine and b"guard.py" in cmdline:
            found.append(int(entry.name))
    return found


@needs_bwrap
def test_a_sandboxed_command_dies_with_the_engine_even_without_its_guard(
    workspace: Path, mark: str
) -> None:
    write(workspace / "p.dot", TOOL % (f"touch started.txt; sleep {mark}", ""))
    proc = spawn(["run", "p.dot", "--logs-dir", "runs/{timestamp}"], workspace)
    # Wait for the command itself, not for a process whose command line names the
    # sleep: bwrap's own argv names it as soon as bwrap is exec'd, before bwrap has
    # asked to die with its parent. An engine killed in that window leaves only the
    # crash guard to clean up, and this test kills the guard too.
    wait_for(lambda: (workspace / "started.txt").exists(), "the sandboxed command to start")
    wait_for(lambda: len(_guards(proc.pid)) == 1, "the crash guard to start")
    for pid in (*_guards(proc.pid), proc.pid):
        os.kill(pid, signal.SIGKILL)
    finish(proc)
    wait_for(lambda: pids_with(mark) == [], "the sleep to die with the engine", timeout=10)


@needs_bwrap
def test_a_read_only_workspace_is_one_notice_before_the_step(workspace: Path) -> None:
    folder = workspace / "ro"
    folder.mkdir()
    write(folder / "p.dot", TOOL % ("cat p.dot > /dev/null", ""))
    folder.chmod(0o555)
    try:
        args = ["run", "p.dot", "--logs-dir", str(workspace / "runs")]
        code, out, err = finish(spawn(args, folder))
    finally:
        folder.chmod(0o755)
    assert code == 0, err  # reading still works
    notice = (
        f"notice: node t: the workspace {folder} is read-only for its commands; a command "
        "that writes there fails (make it writable to allow writes)"
    )
    assert err.splitlines()[:1] == [notice], (out, err)
    assert out.index("-> t") > 0  # the notice came before the step


@needs_bwrap
def test_a_nested_sandbox_is_named_in_one_line(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ("touch ran.txt", ""))
    outer = ["bwrap", "--die-with-parent", "--unshare-user", "--cap-drop", "ALL"]
    outer += ["--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    outer += ["--tmpfs", "/tmp", "--bind", str(workspace), str(workspace), "--"]
    env = {k: v for k, v in os.environ.items() if k.isupper() and "KEY" not in k}
    env["NO_COLOR"] = "1"
    done = subprocess.run(
        [*outer, sys.executable, "-m", "attractor", "run", "p.dot", "--sandbox", "required"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: the run requires a sandbox, but bwrap cannot create")
    assert line.endswith(
        "attractor already runs inside a sandbox or container, which does not allow a nested one"
    )
    assert not (workspace / "ran.txt").exists()


@needs_bwrap
def test_resume_runs_the_interrupted_step_inside_the_sandbox(workspace: Path, mark: str) -> None:
    command = (
        "if [ -f first.txt ]; then touch resumed.txt; touch /etc/escape-on-resume; "
        f"else touch first.txt; sleep {mark}; fi"
    )
    write(workspace / "p.dot", TOOL % (command, ""))
    proc = spawn(["run", "p.dot", "--logs-dir", "runs"], workspace)
    # bwrap's own command line names the mark too: wait for the command itself.
    wait_for(lambda: (workspace / "first.txt").exists(), "the sandboxed command to start")
    wait_for(lambda: pids_with(mark) != [], "the sandboxed sleep to start")
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130, err
    wait_for(lambda: pids_with(mark) == [], "the sleep to be gone after Ctrl-C", timeout=10)
    code, out, err = finish(spawn(["resume", "runs"], workspace))
    assert code == 1, (out, err)  # the step ran again, sandboxed: /etc stayed read-only
    assert (workspace / "resumed.txt").exists()
    assert not Path("/etc/escape-on-resume").exists()
    assert "Read-only file system" in (workspace / "runs" / "t" / "stderr.txt").read_text()
    status = json.loads((workspace / "runs" / "t" / "status.json").read_text())
    assert status["boundary"].startswith("bwrap sandbox")


@needs_bwrap
def test_a_repository_config_an_earlier_step_wrote_runs_inside_the_sandbox(
    workspace: Path, tmp_path: Path
) -> None:
    # git runs core.fsmonitor on `git status`: the agent's start reads git state,
    # so a config planted earlier would otherwise run on the host, unsandboxed. (A
    # sandboxed step cannot plant it: test_git_guard.py; this one runs unsandboxed.)
    outside = tmp_path.parent / f"outside-{uuid.uuid4().hex}"
    outside.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    write(
        workspace / "p.dot",
        """digraph p {
            start [shape=Mdiamond]
            done  [shape=Msquare]
            plant [shape=parallelogram, sandbox=none,
                   tool_command="git config core.fsmonitor 'sh hook.sh'"]
            work  [prompt="look"]
            start -> plant -> work -> done
        }""",
    )
    write(workspace / "hook.sh", f"env > {outside}/env.txt; touch {outside}/ran; exit 1\n")
    write(workspace / "model.json", json.dumps({"responses": [{"text": "done"}], "then": "stop"}))
    args = ["run", "p.dot", "--logs-dir", "runs", "--backend", "scripted:model.json"]
    env = {"PLANTED_API_KEY": "sk-planted-never-seen"}
    code, _, err = finish(spawn(args, workspace, env))
    assert code == 0, err
    assert "sh hook.sh" in (workspace / ".git" / "config").read_text()  # it was planted
    assert not (outside / "ran").exists(), "the planted git hook ran outside the sandbox"
    assert not (outside / "env.txt").exists()


def test_a_dry_run_names_no_boundary_for_a_simulated_stage(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        """digraph p {
            start [shape=Mdiamond]
            done  [shape=Msquare]
            plan [prompt="plan it"]
            t [shape=parallelogram, tool_command="true", sandbox=none]
            start -> plan -> t -> done
        }""",
    )
    result = invoke(["run", "p.dot", "--dry-run", "--backend", "simulate"])
    assert result.exit_code == 0, result.stderr
    lines = _boundary_lines(result.output)
    assert lines == ["boundary: local, no sandbox, env=core"]  # the tool step's alone


@needs_bwrap
def test_a_config_file_a_step_wrote_does_not_unsandbox_the_resume(
    workspace: Path, tmp_path: Path
) -> None:
    # The run started with the default sandbox; its step appended sandbox = "none"
    # to attractor.toml (in the workdir, writable) and failed: --retry-failed once
    # ran the step again without a sandbox.
    outside = tmp_path.parent / f"outside-{uuid.uuid4().hex}"
    outside.mkdir()
    again = f"echo x > {outside}/escaped"
    first = "touch tried; echo sandbox = \\'none\\' >> attractor.toml; exit 1"
    plant = f"if [ -f tried ]; then {again}; else {first}; fi"
    write(
        workspace / "p.dot",
        f"""digraph p {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            step  [shape=parallelogram, tool_command="{plant}"]
            start -> step -> done
        }}""",
    )
    assert invoke(["run", "p.dot", "--logs-dir", "runs/r"]).exit_code == 1
    assert "sandbox = 'none'" in (workspace / "attractor.toml").read_text()  # it was written
    resumed = invoke(["resume", "runs/r", "--retry-failed"])
    assert resumed.exit_code == 1, resumed.output + resumed.stderr
    assert not (outside / "escaped").exists()


@needs_bwrap
def test_a_child_pipeline_a_step_rewrote_cannot_run_unsandboxed(
    workspace: Path, tmp_path: Path
) -> None:
    # The sub-pipeline's file lies in the workdir: a step rewrote it with a node of
    # sandbox=none, which then ran on the host.
    outside = tmp_path.parent / f"outside-{uuid.uuid4().hex}"
    outside.mkdir()
    child = """digraph child {{ start [shape=Mdiamond]; done [shape=Msquare];
        c1 [shape=parallelogram{extra}, tool_command="touch {outside}/escaped"]
        start -> c1 -> done }}"""
    write(workspace / "child.dot", child.format(extra="", outside=outside))
    write(workspace / "evil.txt", child.format(extra=", sandbox=none", outside=outside))
    write(
        workspace / "p.dot",
        """digraph p {
            start [shape=Mdiamond]
            done  [shape=Msquare]
            s1  [shape=parallelogram, tool_command="cp evil.txt child.dot"]
            sub [shape=folder, dot_file="child.dot"]
            start -> s1 -> sub -> done
        }""",
    )
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 1, result.output + result.stderr
    assert "node c1 sets sandbox=none, looser than the run's boundary" in result.output
    assert not (outside / "escaped").exists()
    # More of the engine's variables (its API keys among them) are refused the same way.
    write(workspace / "evil.txt", child.format(extra=', env_allow="*KEY*"', outside=outside))
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r2"])
    assert result.exit_code == 1, result.output + result.stderr
    assert "node c1 sets env_allow=*KEY*, looser than the run's boundary" in result.output


@needs_bwrap
def test_branches_write_their_worktrees_under_a_writable_path_that_holds_the_run(
    tmp_path: Path,
) -> None:
    """A snapshot's branches work in worktrees inside the run directory; a --writable
    path holding the run directory puts a read-only shield over it, under which each
    branch's own worktree must stay writable."""
    work = tmp_path / "work"
    work.mkdir()
    write(work / "p.dot", """digraph fan {
        start [shape=Mdiamond]; done [shape=Msquare]
        split [shape=component]; join [shape=tripleoctagon]
        left  [shape=parallelogram, tool_command="echo left > left.txt"]
        right [shape=parallelogram, tool_command="echo right > right.txt"]
        start -> split; split -> left -> join; split -> right -> join; join -> done
    }""")  # fmt: skip
    args = ["run", str(work / "p.dot"), "--workdir", str(work), "--sandbox", "required"]
    args += ["--logs-dir", str(tmp_path / "logs" / "r"), "--writable", str(tmp_path)]
    result = invoke(args)
    assert result.exit_code == 0, result.output + result.stderr
    assert (work / "left.txt").read_text() == "left\n"
    assert (work / "right.txt").read_text() == "right\n"


@needs_bwrap
def test_a_writable_path_that_holds_the_run_directory_leaves_the_run_directory_read_only(
    workspace: Path,
) -> None:
    """A writable path that holds the run's own directory (``--writable .attractor/runs``)
    stays under the run directory's read-only shield: the checkpoint, journal and
    manifest are the engine's."""
    step = "echo forged > $ATTRACTOR_STAGE_DIR/../forged.txt; echo ok > ok.txt"
    write(workspace / "p.dot", TOOL % (step, ""))
    (workspace / ".attractor" / "runs").mkdir(parents=True)
    result = invoke(
        ["run", "p.dot", "--sandbox", "required", "--writable", ".attractor/runs"]
        + ["--logs-dir", ".attractor/runs/r"]
    )
    assert result.exit_code == 0, result.output + result.stderr
    assert (workspace / "ok.txt").read_text() == "ok\n"
    assert not (workspace / ".attractor" / "runs" / "r" / "forged.txt").exists()
