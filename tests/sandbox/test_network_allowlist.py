"""``network="host,..."``: the listed hosts through the engine's proxy, nothing else.

Real HTTP servers on 127.0.0.1 stand for the listed and unlisted hosts: the
allowed "host" is ``localhost:PORT`` (the proxy resolves it on the host side).
Inside the sandbox ``NO_PROXY`` names localhost (the sandbox's own loopback), so
the commands pass curl's ``--noproxy ''`` to send it through the proxy anyway.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from attractor.dot.schema import parse_network
from attractor.proc.allowlist import AllowList, parse_hosts
from attractor.proc.bwrap import Fence
from attractor.proc.sandbox_env import BwrapEnvironment
from tests.cli.runkit import finish, invoke, spawn, write
from tests.sandbox.conftest import needs_bwrap, needs_socat

pytestmark = pytest.mark.anyio

CURL = "curl -sS --max-time 20 --noproxy ''"


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from {self.server.server_address[1]}{self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def servers() -> Iterator[tuple[int, int]]:
    """Two HTTP servers on 127.0.0.1: the listed one and an unlisted one."""
    started = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello) for _ in range(2)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in started]
    for thread in threads:
        thread.start()
    yield started[0].server_address[1], started[1].server_address[1]
    for server in started:
        server.shutdown()
        server.server_close()


def _box(tmp_path: Path, *hosts: str) -> BwrapEnvironment:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return BwrapEnvironment(work, fence=Fence(work, hosts=hosts))


@needs_bwrap
@needs_socat
async def test_a_listed_host_is_reached_through_the_proxy(
    tmp_path: Path, servers: tuple[int, int]
) -> None:
    listed, _ = servers
    box = _box(tmp_path, f"localhost:{listed}")
    plain = await box.run(f"{CURL} http://localhost:{listed}/plain")
    assert (plain.returncode, plain.stdout) == (0, f"hello from {listed}/plain"), plain.stderr
    tunnel = await box.run(f"{CURL} --proxytunnel http://localhost:{listed}/tunnel")
    assert (tunnel.returncode, tunnel.stdout) == (0, f"hello from {listed}/tunnel"), tunnel.stderr
    assert list(box._fence().proxy_dir.iterdir()) == []  # type: ignore[union-attr]


@needs_bwrap
@needs_socat
async def test_an_unlisted_host_is_refused_with_a_clear_message(
    tmp_path: Path, servers: tuple[int, int]
) -> None:
    listed, unlisted = servers
    box = _box(tmp_path, f"localhost:{listed}")
    why = (
        f"127.0.0.1:{unlisted} is not in this step's network allow-list "
        f"(network=localhost:{listed})"
    )
    plain = await box.run(f"{CURL} http://127.0.0.1:{unlisted}/")
    assert plain.stdout == f"attractor sandbox: {why}\n"
    # curl exits 0 on the proxy's 403 for plain HTTP: the model is told all the same.
    assert plain.returncode == 0
    assert box.note(plain).startswith("[sandbox: 'not in this step's network allow-list' — ")
    script = (
        "import http.client, os; c = http.client.HTTPConnection('127.0.0.1', 3128); "
        f"c.set_tunnel('127.0.0.1', {unlisted}); c.request('GET', '/')"
    )
    tunnel = await box.run(f'python3 -c "{script}"')
    assert tunnel.returncode != 0
    assert f"Tunnel connection failed: 403 Forbidden: {why}" in tunnel.stderr
    assert "not in this step's network allow-list" in box.note(tunnel)
    other_port = await box.run(f"{CURL} http://localhost:{unlisted}/")
    assert other_port.stdout.startswith(f"attractor sandbox: localhost:{unlisted} is not in")


@needs_bwrap
@needs_socat
async def test_a_listed_loopback_address_is_reached_by_a_client_that_honours_no_proxy(
    tmp_path: Path, servers: tuple[int, int]
) -> None:
    listed, _ = servers
    box = _box(tmp_path, f"127.0.0.1:{listed}")
    fetch = f"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{listed}/x').read())"
    result = await box.run(f'python3 -c "{fetch}"')
    assert (result.returncode, result.stdout) == (0, f"b'hello from {listed}/x'\n"), result.stderr
    own = await box.run("printenv NO_PROXY")
    assert own.stdout.split(",") == ["localhost", "::1\n"]


@needs_bwrap
@needs_socat
async def test_a_direct_connection_fails(tmp_path: Path, servers: tuple[int, int]) -> None:
    listed, _ = servers
    box = _box(tmp_path, f"localhost:{listed}", "127.0.0.1")
    direct = await box.run(f"curl -sS --max-time 20 --noproxy '*' http://127.0.0.1:{listed}/")
    assert direct.returncode != 0 and "hello" not in direct.stdout
    assert "Couldn't connect to server" in direct.stderr


@needs_bwrap
async def test_network_off_has_no_proxy(tmp_path: Path, servers: tuple[int, int]) -> None:
    listed, _ = servers
    work = tmp_path / "work"
    work.mkdir()
    off = BwrapEnvironment(work, fence=Fence(work))
    result = await off.run("env")
    assert "HTTP_PROXY" not in result.stdout
    refused = await off.run(f"{CURL} http://localhost:{listed}/")
    assert refused.returncode != 0 and "hello" not in refused.stdout


def test_the_allow_list_matches_names_and_ports() -> None:
    allow = AllowList(parse_hosts("API.GitHub.com, *.pythonhosted.org,pypi.org:8443"))
    assert allow.allows("api.github.com", 443) and allow.allows("api.github.com.", 80)
    assert not allow.allows("api.github.com", 22)
    assert not allow.allows("github.com", 443)
    assert not allow.allows("evilapi.github.com", 443)
    assert allow.allows("files.pythonhosted.org", 443)
    assert not allow.allows("pythonhosted.org", 443)
    assert not allow.allows("evilpythonhosted.org", 443)
    assert allow.allows("pypi.org", 8443) and not allow.allows("pypi.org", 443)


def test_network_values() -> None:
    assert parse_network("on") is True and parse_network("off") is False
    assert parse_network("api.github.com,pypi.org") == ("api.github.com", "pypi.org")
    for bad in ("http://x.com", "a b$", "x.com:99999", "", "a..b", "maybe"):
        with pytest.raises(ValueError, match="expected on, off, or host names"):
            parse_network(bad)


TOOL = """digraph p {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    t [shape=parallelogram, tool_command="true", network="%s"]
    start -> t -> done
}"""


def test_lint_checks_the_hosts(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % "api.github.com,pypi.org")
    assert invoke(["lint", "p.dot"]).exit_code == 0
    write(workspace / "p.dot", TOOL % "https://api.github.com")
    result = invoke(["lint", "p.dot"])
    assert result.exit_code != 0
    assert "'https://api.github.com' is not a host name" in result.output + result.stderr


@needs_bwrap
def test_dry_run_names_the_hosts(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL % "api.github.com,pypi.org")
    result = invoke(["run", "p.dot", "--dry-run"])
    assert result.exit_code == 0, result.stderr
    assert (
        "boundary: bwrap sandbox, network only to api.github.com, pypi.org (through a proxy), "
        "writable: workdir, env=core" in result.output
    )


@needs_bwrap
def test_hosts_without_socat_are_refused_before_the_run(workspace: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "bwrap", "true"):
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}")
    write(workspace / "p.dot", TOOL % "pypi.org")
    code, _, err = finish(spawn(["run", "p.dot"], workspace, {"PATH": str(bin_dir)}))
    assert code == 2
    assert err.strip() == (
        "error: node t: network= lists hosts, which needs socat to reach the proxy from inside "
        "the sandbox (Debian/Ubuntu: apt-get install socat); or set network=on"
    )


@needs_bwrap
@needs_socat
def test_a_tool_node_reaches_its_listed_host(workspace: Path, servers: tuple[int, int]) -> None:
    listed, unlisted = servers
    command = f"{CURL} http://localhost:{listed}/ok > ok.txt; {CURL} http://127.0.0.1:{unlisted}/"
    write(workspace / "p.dot", TOOL.replace('"true"', f'"{command}"') % f"localhost:{listed}")
    result = invoke(["run", "p.dot", "--logs-dir", "runs"])
    assert result.exit_code == 0, result.stderr
    assert (workspace / "ok.txt").read_text() == f"hello from {listed}/ok"
    assert (
        "is not in this step's network allow-list"
        in (workspace / "runs" / "t" / "stdout.txt").read_text()
    )


@needs_bwrap
@needs_socat
async def test_a_client_that_hangs_up_mid_request_does_not_end_the_command(
    tmp_path: Path, servers: tuple[int, int]
) -> None:
    listed, _ = servers
    box = _box(tmp_path, f"localhost:{listed}")
    script = (
        "import socket; s = socket.create_connection(('127.0.0.1', 3128)); "
        "s.sendall(b'CONNECT localhost:1 HTTP/1.1'); s.close(); "
        "s = socket.create_connection(('127.0.0.1', 3128)); s.sendall(b'garbage\\r\\n\\r\\n'); "
        "print(s.recv(100).decode().splitlines()[0]); s.close()"
    )
    command = f'python3 -c "{script}"; {CURL} http://localhost:{listed}/after'
    result = await box.run(command)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"HTTP/1.1 400 Bad Request\nhello from {listed}/after"


def test_the_run_level_setting_takes_hosts_from_each_source(tmp_path: Path) -> None:
    from attractor.errors import SettingError
    from attractor.settings import resolve_settings

    (tmp_path / "attractor.toml").write_text('network = ["pypi.org", "*.pythonhosted.org"]\n')
    assert resolve_settings(env={}, cwd=tmp_path).network == ("pypi.org", "*.pythonhosted.org")
    from_env = resolve_settings(env={"ATTRACTOR_NETWORK": "api.github.com"}, cwd=tmp_path)
    assert from_env.network == ("api.github.com",)
    assert resolve_settings({"network": "on"}, env={}, cwd=tmp_path).network is True
    with pytest.raises(SettingError, match=r'ATTRACTOR_NETWORK="maybe": expected on, off, or'):
        resolve_settings(env={"ATTRACTOR_NETWORK": "maybe"}, cwd=tmp_path)


def test_lists_from_the_config_file_survive_a_resume(tmp_path: Path) -> None:
    from attractor.settings import record_of, resolve_settings

    (tmp_path / "attractor.toml").write_text(
        'network = ["pypi.org", "*.pythonhosted.org"]\nwritable = ["cache", "out"]\n'
    )
    first = resolve_settings(env={}, cwd=tmp_path)
    again = resolve_settings(env={}, cwd=tmp_path / "elsewhere", recorded=record_of(first))
    assert again.network == ("pypi.org", "*.pythonhosted.org")
    assert again.writable == ("cache", "out")
