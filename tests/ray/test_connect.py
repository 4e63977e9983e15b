"""Joining a cluster: one clear line when it cannot be, and loopback only on this machine."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
from pathlib import Path

from ray.cluster_utils import Cluster

from tests.ray.conftest import run_cli

PIPELINE = """digraph p {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    make  [shape=parallelogram, tool_command="echo made"]
    start -> make -> done
}
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_head_is_one_line_naming_the_address(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(PIPELINE, encoding="utf-8")
    address = f"127.0.0.1:{_closed_port()}"
    args = ["run", "p.dot", "--executor", "ray", "--ray-address", address, "--logs-dir", "runs/r"]
    # Ray itself retries for minutes before its ConnectionError traceback.
    result = run_cli(args, tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"cannot reach the Ray cluster at {address}" in result.stderr
    assert "ray start --head" in result.stderr  # what to do
    assert not (tmp_path / "runs").exists()


def test_a_malformed_address_is_one_line_saying_what_is_expected(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(PIPELINE, encoding="utf-8")
    result = run_cli(["run", "p.dot", "--executor", "ray", "--ray-address", "head:port"], tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "error: --ray-address head:port: expected HOST:PORT (the head's GCS port, 6379 by "
        "default), ray://HOST:10001, or auto\n"
    )


def test_the_ray_executor_without_ray_names_the_extra(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(PIPELINE, encoding="utf-8")
    # A None entry in sys.modules makes `import ray` fail as if it were not installed.
    code = "import sys; sys.modules['ray'] = None; from attractor.cli.main import cli; cli()"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
    result = subprocess.run(
        [sys.executable, "-c", code, "run", "p.dot", "--executor", "ray"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "error: --executor ray needs Ray, which is not installed: pip install 'attractor[ray]'\n"
    )


def _descendants(roots: set[int]) -> set[int]:
    """``roots`` and every process below them (raylets start the workers)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found = set(roots)
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return found


def _listening(pids: set[int]) -> list[str]:
    """The local address of every TCP socket in LISTEN state that ``pids`` hold."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        inodes |= {link[8:-1] for link in links if link.startswith("socket:[")}
    addresses = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                addresses.append(_address(fields[1].split(":")[0]))
    return addresses


def _address(hex_ip: str) -> str:
    raw = bytes.fromhex(hex_ip)
    # /proc/net/tcp{,6} write each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def test_the_test_cluster_listens_on_loopback_only(cluster: Cluster) -> None:
    nodes = [cluster.head_node, *cluster.worker_nodes]
    roots = {process.pid for node in nodes for _, process in node.live_processes()}
    addresses = _listening(_descendants(roots))
    assert addresses, "the cluster's processes hold no listening socket"
    outside = [a for a in addresses if not ipaddress.ip_address(a).is_loopback]
    assert outside == [], f"Ray listens beyond 127.0.0.1: {outside}"
    assert cluster.address.startswith("127.0.0.1:")
