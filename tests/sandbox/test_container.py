"""``sandbox=docker|podman``: the ``docker run`` line, and the refusal where no engine runs.

No container engine runs on the machines this suite runs on, so what is tested
for real is the preflight (one line, exit 2, nothing run) through the real CLI
and the real ``docker`` client where it is installed; the command line each
step would run is checked flag by flag.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attractor.proc.container import (
    Container,
    container_problem,
    info_argv,
    info_problem,
    remove_argv,
    run_argv,
)
from tests.cli.runkit import finish, invoke, spawn, write
from tests.workspace.gitkit import git, make_repo

TOOL = """digraph p {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    t [shape=parallelogram, tool_command="touch ran.txt"%s]
    start -> t -> done
}"""


def _path_without(tmp_path: Path, missing: str) -> str:
    """A PATH with the usual tools (and a docker client if there is one) but not ``missing``."""
    folder = tmp_path / f"bin-without-{missing}"
    folder.mkdir()
    for tool in ("sh", "touch", "true", "bwrap", "docker", "podman"):
        found = next((d for d in os.get_exec_path() if os.path.exists(f"{d}/{tool}")), None)
        if tool != missing and found is not None:
            (folder / tool).symlink_to(f"{found}/{tool}")
    return str(folder)


@pytest.mark.skipif(
    container_problem("docker") is None, reason="a Docker engine runs here: nothing to refuse"
)
def test_no_docker_engine_is_refused_before_the_run_in_one_line(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ', sandbox=docker, image="python:3.12-slim"')
    code, out, err = finish(spawn(["run", "p.dot"], workspace))
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert line.startswith("error: node t: sandbox=docker, but ")
    assert "no docker engine runs here (docker info: " in line or "docker is not installed" in line
    assert not (workspace / "ran.txt").exists()
    assert "-> t" not in out


def test_each_engine_is_asked_a_question_its_own_info_documents() -> None:
    # docker info has .ServerVersion; podman info has .Host, .Store, .Version... and no
    # ServerVersion, so it is asked for its own version.
    assert info_argv("docker") == ["docker", "info", "--format", "{{.ServerVersion}}"]
    assert info_argv("podman", "/usr/bin/podman") == [
        "/usr/bin/podman", "info", "--format", "{{.Version.Version}}",
    ]  # fmt: skip
    assert info_problem("podman", 0, b"5.4.2\n", b"") is None
    assert info_problem("docker", 0, b"\n", b"") == (
        "no docker engine runs here (docker info named no engine version)"
    )
    refused = info_problem("podman", 125, b"", b"Error: unable to connect to Podman socket\n")
    assert refused == (
        "no podman engine runs here (podman info: Error: unable to connect to Podman socket)"
    )


@pytest.mark.skipif(
    container_problem("docker") is None, reason="a Docker engine runs here: nothing to refuse"
)
def test_dry_run_says_a_container_node_would_be_refused(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ', sandbox=docker, image="python:3.12-slim"')
    result = invoke(["run", "p.dot", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.output.splitlines() if "boundary:" in x)
    problem = container_problem("docker")
    assert line.strip() == (
        "boundary: docker container (image python:3.12-slim), network off, writable: workdir, "
        f"env=core; the run is refused here: {problem}"
    )
    assert not (workspace / "ran.txt").exists()


def test_a_missing_client_is_named(workspace: Path, tmp_path: Path) -> None:
    write(workspace / "p.dot", TOOL % ', sandbox=podman, image="alpine:3"')
    env = {"PATH": _path_without(tmp_path, "podman")}
    code, _, err = finish(spawn(["run", "p.dot"], workspace, env))
    assert code == 2
    assert err.strip() == "error: node t: sandbox=podman, but podman is not installed"
    assert not (workspace / "ran.txt").exists()


def test_a_container_without_an_image_or_with_hosts_is_one_line(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ", sandbox=docker")
    result = invoke(["run", "p.dot"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "node t: sandbox=docker needs an image: set image= on the node or the graph "
        '(e.g. image="python:3.12-slim")'
    )
    plan = invoke(["run", "p.dot", "--dry-run"])
    assert "boundary: docker container (no image: the run is refused; set image=)" in plan.output
    write(workspace / "p.dot", TOOL % ', sandbox=docker, image="a:1", network="pypi.org"')
    result = invoke(["run", "p.dot"])
    assert result.exit_code == 2
    assert "sandbox=docker takes network=on or off, not a list of hosts" in result.stderr


def test_lint_and_dry_run_know_the_container(workspace: Path) -> None:
    graph = TOOL.replace("digraph p {", 'digraph p {\n    graph [image="python:3.12-slim"]')
    write(workspace / "p.dot", graph % ", sandbox=docker, network=on")
    assert invoke(["lint", "p.dot"]).exit_code == 0
    result = invoke(["run", "p.dot", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert (
        "boundary: docker container (image python:3.12-slim), network on, writable: workdir, "
        "env=core" in result.output
    )


def test_the_run_line_mounts_the_workspace_at_its_path_and_cuts_the_network(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    run_dir = work / ".attractor" / "runs" / "r1"
    stage, scratch, cache = run_dir / "t", run_dir / "scratch", tmp_path / "cache"
    for folder in (stage, scratch, cache):
        folder.mkdir(parents=True)
    box = Container(
        "docker",
        "python:3.12-slim",
        work,
        writable=(cache,),
        run_dir=run_dir,
        stage_dir=stage,
        scratch=scratch,
    )
    names = ["ATTRACTOR_NODE", "DEPLOY_TOKEN", "HOME", "LANG", "PATH", "VIRTUAL_ENV"]
    argv = run_argv(box, work / "sub", names, "attractor-1-2")
    assert argv[0].endswith("docker")
    assert argv[1:] == [
        "run", "--rm", "--init", "-i",
        "--name", "attractor-1-2", "--user", f"{os.getuid()}:{os.getgid()}",
        "--network", "none",
        "--volume", f"{work}:{work}",
        "--volume", f"{cache}:{cache}",
        "--volume", f"{work / '.attractor'}:{work / '.attractor'}:ro",  # whole: see gitguard
        "--volume", f"{scratch}:{scratch}",
        "--volume", f"{stage}:{stage}",
        # by name only: the client reads each value from its own environment
        "--env", "ATTRACTOR_NODE", "--env", "DEPLOY_TOKEN", "--env", "LANG",
        "--env", f"TMPDIR={scratch}",
        "--workdir", str(work / "sub"),
        "python:3.12-slim",
    ]  # fmt: skip
    on = run_argv(Container("podman", "alpine:3", work, network=True), work, [], "n")
    assert "--network" not in on and on[-1] == "alpine:3"
    assert remove_argv("docker", "attractor-1-2")[1:] == ["rm", "--force", "attractor-1-2"]


def test_the_run_line_keeps_gits_control_files_read_only(tmp_path: Path) -> None:
    # As in the bwrap sandbox (test_git_guard.py): what a commit writes stays
    # writable, what git runs (config, hooks) and a worktree's links do not.
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    work, common = (tmp_path / "wt").resolve(), (repo / ".git").resolve()
    admin = common / "worktrees" / "wt"
    box = Container("docker", "alpine:3", work, writable=(common,))
    argv = run_argv(box, work, [], "n")
    volumes = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--volume"]
    assert volumes == [
        f"{work}:{work}",
        f"{common}:{common}:ro",
        f"{common / 'objects'}:{common / 'objects'}",
        f"{common / 'refs'}:{common / 'refs'}",
        f"{common / 'logs'}:{common / 'logs'}",
        f"{admin}:{admin}",
        f"{admin / 'commondir'}:{admin / 'commondir'}:ro",
        f"{admin / 'gitdir'}:{admin / 'gitdir'}:ro",
        f"{admin / 'config.worktree'}:{admin / 'config.worktree'}:ro",  # made empty
        f"{work / '.git'}:{work / '.git'}:ro",
    ]


def test_lint_warns_of_a_container_without_an_image(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % ", sandbox=docker")
    result = invoke(["lint", "p.dot"])
    text = result.output + result.stderr
    assert "warning container_image: node 't' runs its commands in a docker container" in text
    graph = TOOL.replace("digraph p {", 'digraph p {\n    graph [image="alpine:3"]')
    write(workspace / "p.dot", graph % ", sandbox=docker")
    assert "container_image" not in invoke(["lint", "p.dot"]).output


def test_an_agent_cli_node_cannot_run_in_a_container(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        """digraph p {
            start [shape=Mdiamond]
            done  [shape=Msquare]
            work  [prompt="x", backend="claude-code", sandbox=docker, image="alpine:3"]
            start -> work -> done
        }""",
    )
    result = invoke(["run", "p.dot"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "node work: sandbox=docker does not apply to the claude-code agent CLI; "
        "use sandbox=auto or bwrap for it"
    )
    plan = invoke(["run", "p.dot", "--dry-run"])
    assert (
        "boundary: claude-code: sandbox=docker does not apply to an agent CLI (the run is refused)"
        in plan.output
    )
