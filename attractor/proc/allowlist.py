"""The allow-list of ``network="a.com,b.org"``: parsing, matching, and the sandbox side.

No I/O and no anyio here (the linter reads :func:`parse_hosts`); the proxy that
enforces the list is :mod:`attractor.proc.netproxy`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from attractor.valueclass import frozen

#: The port the bridge listens on inside the sandbox.
INSIDE_PORT = 3128
#: Where the proxy's socket folder appears inside the sandbox.
INSIDE_DIR = "/run/attractor-net"
_DEFAULT_PORTS = (80, 443)
_HOST = re.compile(r"(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?(:\d{1,5})?")
HOSTS_FORM = "on, off, or host names like api.github.com,pypi.org (host:port for another port)"


def parse_hosts(text: str) -> tuple[str, ...]:
    """The allow-list in ``network="a.com,b.org:8443"`` (lower case, in order).

    Raises:
        ValueError: an entry that is not a host name (with an optional port).
    """
    hosts: list[str] = []
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        name, port = split_host_port(item.lower(), None)
        # One word alone is more likely a typo of on/off than a host: it needs a port.
        dotted = "." in name.rstrip(".") or port is not None or name == "localhost"
        if not _HOST.fullmatch(item) or ".." in item or not dotted:
            raise ValueError(f"expected {HOSTS_FORM}; {item!r} is not a host name")
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"expected {HOSTS_FORM}; {item!r} has no valid port")
        hosts.append(item.lower())
    if not hosts:
        raise ValueError(f"expected {HOSTS_FORM}")
    return tuple(dict.fromkeys(hosts))


def split_host_port(target: str, default: int | None) -> tuple[str, int | None]:
    """``host:port`` (or ``[v6]:port``) into its parts; ``default`` when no port."""
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else default
    host, colon, port = target.rpartition(":")
    if colon and port.isdigit():
        return host, int(port)
    return target, default


@frozen
class AllowList:
    """Which ``host:port`` a sandboxed command may reach through the proxy."""

    hosts: tuple[str, ...]

    def allows(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        for entry in self.hosts:
            name, only = split_host_port(entry, None)
            name = name.rstrip(".")
            ports = (only,) if only is not None else _DEFAULT_PORTS
            if port not in ports:
                continue
            if name.startswith("*."):
                if host.endswith(name[1:]):
                    return True
            elif host == name:
                return True
        return False

    def describe(self) -> str:
        return "network only to " + ", ".join(self.hosts) + " (through a proxy)"


def proxy_env(hosts: Sequence[str] = ()) -> dict[str, str]:
    """The variables that send a command's HTTP(S) through the bridge.

    ``NO_PROXY`` keeps the sandbox's own loopback direct (servers the command
    starts itself), except a loopback name the allow-list names: that entry
    means the host's server, which only the proxy reaches.
    """
    url = f"http://127.0.0.1:{INSIDE_PORT}"
    listed = {split_host_port(entry, None)[0].rstrip(".") for entry in hosts}
    local = ",".join(name for name in ("localhost", "127.0.0.1", "::1") if name not in listed)
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "NO_PROXY": local,
        "no_proxy": local,
    }


def bridge_argv(socat: str) -> list[str]:
    """The program run first inside the sandbox: it starts the bridge, then the command.

    Followed by the socket's path inside the sandbox, then the command's argv.
    It waits (at most about a second) until the bridge listens, so the command's
    first connection finds it.
    """
    listening = f":{INSIDE_PORT:04X} 00000000:0000 0A"
    script = (
        "s=$1; shift; "
        f'{socat} TCP-LISTEN:{INSIDE_PORT},bind=127.0.0.1,reuseaddr,fork "UNIX-CONNECT:$s" '
        "2>/dev/null & i=0; "
        f"while [ $i -lt 500 ] && ! grep -q '{listening}' /proc/net/tcp 2>/dev/null; "
        'do i=$((i+1)); done; exec "$@"'
    )
    return ["/bin/sh", "-c", script, "attractor-net"]


def describe_network(network: bool, hosts: Sequence[str]) -> str:
    """``network on``, ``network off`` or ``network only to a, b (through a proxy)``."""
    if hosts and not network:
        return AllowList(tuple(hosts)).describe()
    return "network on" if network else "network off"
