"""Escape attempts: each a real command inside the bwrap sandbox, each must be blocked.

The sandbox is laid out as for a real step: the workdir holds the run
directory (the default ``.attractor/runs``), the step's stage directory and the
run's scratch inside it; a fake home with planted secrets is even writable
(``writable=``), so hiding, not a missing mount, must keep its secrets away.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from attractor.proc.bwrap import Fence
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.process import ProcessResult
from attractor.proc.sandbox_env import BwrapEnvironment
from tests.sandbox.conftest import needs_bwrap

pytestmark = [pytest.mark.anyio, needs_bwrap]

PLANTED_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- planted-7c1e"
ENGINE_SECRET = "sk-engine-only-5d2b"


@dataclass
class Box:
    env: BwrapEnvironment
    work: Path
    home: Path
    run_dir: Path
    outside: Path

    async def run(self, command: str) -> ProcessResult:
        return await self.env.run(command, timeout=30, kill_grace=0.5)


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Box:
    monkeypatch.setenv("OPENAI_API_KEY", ENGINE_SECRET)
    work = tmp_path / "work"
    run_dir = work / ".attractor" / "runs" / "r1"
    stage = run_dir / "build"
    stage.mkdir(parents=True)
    (run_dir / "journal.jsonl").write_text('{"event": 1}\n')
    (run_dir / "checkpoint.json").write_text("{}\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(PLANTED_KEY)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key=planted")
    (home / ".netrc").write_text("machine x password planted")
    (home / ".config" / "gcloud").mkdir(parents=True)
    (home / ".config" / "gcloud" / "token").write_text("planted")
    (home / ".docker").mkdir()
    (home / ".docker" / "config.json").write_text('{"auths": "planted"}')
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    fence = Fence(
        work,
        writable=(home,),
        run_dir=run_dir,
        stage_dir=stage,
        scratch=run_dir / "scratch",
        home=home,
    )
    env = BwrapEnvironment(work, EnvPolicy("core"), fence=fence)
    return Box(env, work, home, run_dir, outside)


def _exists(path: str) -> bool:
    return Path(path).exists()


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _blocked(result: ProcessResult) -> None:
    assert result.returncode not in (0, None), (result.stdout, result.stderr)


def _told(box: Box, result: ProcessResult, why: str) -> None:
    """The agent's tool result would carry a note that the sandbox blocked it, saying ``why``."""
    note = box.env.note(result)
    assert note.startswith("[sandbox: ") and why in note, (note, result.stderr)


#: The interpreter itself, not the virtual environment's link to it: a checkout
#: (and its .venv) under /tmp is hidden inside the sandbox, whose /tmp is its own.
PYTHON = os.path.realpath(sys.executable)


def _python_blocked(result: ProcessResult) -> None:
    """Blocked by the sandbox, not by a missing interpreter (exit 127)."""
    _blocked(result)
    assert result.returncode != 127, result.stderr


# -- writes outside the workspace --------------------------------------------------


async def test_01_write_to_etc(box: Box) -> None:
    _blocked(await box.run("echo x > /etc/attractor-escape"))
    assert not _exists("/etc/attractor-escape")


async def test_02_write_to_the_real_home(box: Box) -> None:
    target = Path.home() / f"attractor-escape-{uuid.uuid4().hex}"
    _blocked(await box.run(f"echo x > {target}"))
    assert not target.exists()


async def test_03_write_to_the_host_tmp(box: Box) -> None:
    # /tmp inside is a private tmpfs: the write may succeed there, never on the host.
    await box.run(f"echo changed > {box.outside}")
    assert box.outside.read_text() == "host file\n"
    name = f"/tmp/attractor-escape-{uuid.uuid4().hex}"
    await box.run(f"echo x > {name}")
    assert not _exists(name)


async def test_04_write_to_usr(box: Box) -> None:
    _blocked(await box.run("touch /usr/bin/attractor-escape"))


async def test_05_write_to_var_tmp(box: Box) -> None:
    name = f"/var/tmp/attractor-escape-{uuid.uuid4().hex}"
    _blocked(await box.run(f"touch {name}"))
    assert not _exists(name)


async def test_06_write_to_host_shared_memory(box: Box) -> None:
    name = f"/dev/shm/attractor-escape-{uuid.uuid4().hex}"
    await box.run(f"echo x > {name}")
    assert not _exists(name)


# -- secrets ------------------------------------------------------------------------


async def test_07_read_ssh_private_key(box: Box) -> None:
    result = await box.run(f"cat {box.home}/.ssh/id_rsa")
    assert PLANTED_KEY not in result.stdout
    _blocked(result)
    _told(box, result, f"{box.home}/.ssh is hidden")


async def test_08_list_ssh_dir(box: Box) -> None:
    result = await box.run(f"ls -A {box.home}/.ssh")
    assert "id_rsa" not in result.stdout


async def test_09_read_aws_and_gcloud_credentials(box: Box) -> None:
    result = await box.run(
        f"cat {box.home}/.aws/credentials {box.home}/.config/gcloud/token"
        f" {box.home}/.netrc {box.home}/.docker/config.json"
    )
    assert "planted" not in result.stdout


async def test_10_write_into_the_hidden_ssh_dir_stays_in_the_sandbox(box: Box) -> None:
    await box.run(f"echo evil >> {box.home}/.ssh/authorized_keys")
    assert not (box.home / ".ssh" / "authorized_keys").exists()


async def test_11_read_system_secrets(box: Box) -> None:
    result = await box.run("cat /etc/shadow")
    assert "root:" not in result.stdout


# -- links -------------------------------------------------------------------------


async def test_12_symlink_to_a_host_file_then_write(box: Box) -> None:
    _blocked(await box.run("ln -s /etc/hostname h && echo x >> h"))


async def test_13_planted_symlink_out_of_the_workspace(box: Box) -> None:
    (box.work / "out").symlink_to(box.outside)
    await box.run("echo changed > out")
    assert box.outside.read_text() == "host file\n"


async def test_14_symlink_to_the_ssh_key(box: Box) -> None:
    result = await box.run(f"ln -s {box.home}/.ssh/id_rsa k && cat k")
    assert PLANTED_KEY not in result.stdout


async def test_15_hard_link_to_the_journal_then_write(box: Box) -> None:
    journal = box.run_dir / "journal.jsonl"
    await box.run(f"ln {journal} j && echo forged >> j")
    assert journal.read_text() == '{"event": 1}\n'


async def test_16_hard_link_to_a_host_file(box: Box) -> None:
    _blocked(await box.run("ln /etc/hostname h2"))


# -- the engine's run directory ------------------------------------------------------


async def test_17_write_the_journal(box: Box) -> None:
    _blocked(await box.run(f"echo forged >> {box.run_dir}/journal.jsonl"))
    assert (box.run_dir / "journal.jsonl").read_text() == '{"event": 1}\n'


async def test_18_replace_the_checkpoint(box: Box) -> None:
    _blocked(await box.run(f"rm -f {box.run_dir}/checkpoint.json"))
    _blocked(await box.run(f"echo '{{}}' > {box.run_dir}/x && mv {box.run_dir}/x x"))
    assert (box.run_dir / "checkpoint.json").read_text() == "{}\n"


async def test_19_write_another_stage(box: Box) -> None:
    _blocked(await box.run(f"mkdir {box.run_dir}/other"))


# -- /proc and the engine's environment ----------------------------------------------


async def test_20_the_engine_is_not_in_the_sandbox_proc(box: Box) -> None:
    result = await box.run(f"cat /proc/{os.getpid()}/environ")
    assert ENGINE_SECRET not in result.stdout
    _told(box, result, "the process is outside the sandbox")


async def test_21_proc_1_environ(box: Box) -> None:
    result = await box.run("cat /proc/1/environ; cat /proc/*/environ")
    assert ENGINE_SECRET not in result.stdout


async def test_22_the_environment_has_no_engine_secret(box: Box) -> None:
    result = await box.run("env; printenv OPENAI_API_KEY")
    assert ENGINE_SECRET not in result.stdout


async def test_23_change_a_kernel_setting(box: Box) -> None:
    before = _read("/proc/sys/kernel/panic")
    _blocked(await box.run("echo 77 > /proc/sys/kernel/panic"))
    assert _read("/proc/sys/kernel/panic") == before


# -- devices and mounts ------------------------------------------------------------


async def test_24_read_a_disk(box: Box) -> None:
    _blocked(await box.run("head -c 1 /dev/sda || head -c 1 /dev/vda || head -c 1 /dev/nvme0n1"))


async def test_25_read_kernel_memory(box: Box) -> None:
    _blocked(await box.run("head -c 1 /dev/mem"))


async def test_26_remount_the_root_writable(box: Box) -> None:
    _blocked(await box.run("mount -o remount,rw / && touch /etc/attractor-escape"))
    assert not _exists("/etc/attractor-escape")


# -- signals ---------------------------------------------------------------------


async def test_27_kill_the_engine(box: Box) -> None:
    for kill in ("kill", "/bin/kill"):  # the shell's builtin and the program say it apart
        result = await box.run(f"{kill} -TERM {os.getpid()}")
        _blocked(result)
        _told(box, result, "the process is outside the sandbox")


async def test_28_kill_the_parent(box: Box) -> None:
    await box.run("kill -KILL $PPID; kill -KILL -1")
    assert os.getpid() > 0  # still alive: the test process got no signal
    result = await box.run("echo still here")
    assert result.stdout == "still here\n"


# -- network -----------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)
            conn.sendall(b"hello from the host\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    for conn in accepted:
        conn.close()


CONNECT = (
    '{python} -c \'import socket,sys; s=socket.create_connection(("127.0.0.1", {port}), 5);'
    " print(s.recv(100).decode())'"
)


async def test_29_connect_to_a_server_on_loopback(box: Box, listener: int) -> None:
    result = await box.run(CONNECT.format(python=PYTHON, port=listener))
    assert "hello from the host" not in result.stdout
    _python_blocked(result)
    _told(box, result, "the network is off")
    curl = await box.run(f"curl -sS http://127.0.0.1:{listener}/")
    _blocked(curl)
    _told(box, curl, "the network is off")


async def test_30_network_on_reaches_it(tmp_path: Path, box: Box, listener: int) -> None:
    assert box.env.fence is not None
    fence = Fence(box.work, network=True, home=box.home)
    env = BwrapEnvironment(box.work, EnvPolicy("core"), fence=fence)
    result = await env.run(CONNECT.format(python=PYTHON, port=listener), timeout=30)
    assert result.stdout == "hello from the host\n\n", result.stderr


async def test_31_unix_socket_of_the_host(box: Box) -> None:
    path = f"/run/attractor-escape-{uuid.uuid4().hex}.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(path)
    except OSError:
        pytest.skip("cannot create a socket in /run here")
    server.listen()
    try:
        code = f"import socket; s=socket.socket(socket.AF_UNIX); s.connect({path!r})"
        _python_blocked(await box.run(f'{PYTHON} -c "{code}"'))
    finally:
        server.close()
        os.unlink(path)


async def test_32_abstract_unix_socket_of_the_host(box: Box) -> None:
    name = f"attractor-escape-{uuid.uuid4().hex}"
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + name)
    server.listen()
    try:
        code = f"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0{name}')"
        _python_blocked(await box.run(f'{PYTHON} -c "{code}"'))
    finally:
        server.close()


# -- what the step may do ------------------------------------------------------------


async def test_an_ordinary_failure_gets_no_sandbox_note(box: Box) -> None:
    # A file genuinely missing in the workspace, a missing program, a failing test:
    # nothing the sandbox did, so no note claims it.
    for command in ("cat missing.txt", "no-such-program-here", "exit 3", "ls ./nothing/"):
        result = await box.run(command)
        _blocked(result)
        assert box.env.note(result) == "", (command, result.stderr)
    # With network=on, a refused connection is the server's answer, not the sandbox's.
    fence = Fence(box.work, network=True, home=box.home)
    online = BwrapEnvironment(box.work, EnvPolicy("core"), fence=fence)
    listener_gone = socket.create_server(("127.0.0.1", 0))
    port = listener_gone.getsockname()[1]
    listener_gone.close()
    refused = await online.run(CONNECT.format(python=PYTHON, port=port), timeout=30)
    _blocked(refused)
    assert "Connection refused" in refused.stderr
    assert online.note(refused) == ""


async def test_the_workspace_stage_and_scratch_stay_writable(box: Box) -> None:
    stage = box.run_dir / "build"
    result = await box.run(
        f'echo a > made.txt && echo b > {stage}/status.json && echo c > "$TMPDIR/t"'
    )
    assert result.returncode == 0, result.stderr
    assert (box.work / "made.txt").read_text() == "a\n"
    assert (stage / "status.json").read_text() == "b\n"
    assert (box.run_dir / "scratch" / "t").read_text() == "c\n"
