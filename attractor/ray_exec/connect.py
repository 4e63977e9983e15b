"""Joining a Ray cluster, or starting one on this machine that stays on loopback.

A cluster attractor starts itself (no ``--ray-address``) and a cluster named by
a loopback address (``127.0.0.1:PORT``, ``localhost:PORT``) use 127.0.0.1 for
everything: every Ray process listens there and nothing talks to the machine's
other addresses. Ray itself swaps a loopback address for the machine's outward
address (its head and workers then listen on every interface); its switch for
single-machine clusters, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, keeps it on
127.0.0.1, and is set here for this process and every Ray process it starts.

Without an address a new cluster is started, even when another one runs on
this machine (Ray would join that one). A cluster that cannot be reached is one
line naming the address and what to do (exit 2), found at once by a plain TCP
connect instead of Ray's own retries for minutes.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket

import ray

from attractor.errors import UsageError

#: Ray's switch for single-machine clusters (node address 127.0.0.1).
LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: How long the reachability check waits for the head to accept a connection.
REACH_TIMEOUT = 5.0
_CLIENT_PORT = 10001  # a ray:// address without a port


def connect(address: str | None) -> None:
    """Join the cluster at ``address`` (or start a local one) unless already connected.

    Raises:
        UsageError: the address is malformed or nothing answers there.
    """
    if ray.is_initialized():
        return
    if address in (None, "local") or is_loopback(address or ""):
        keep_on_loopback()
    target = host_port(address)
    if target is not None:
        check_reachable(address or "", *target)
    try:
        ray.init(
            # "local" starts a cluster of our own even when another one of this
            # machine is recorded for ray.init() to join.
            address=address or "local",
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    except (ConnectionError, ValueError, RuntimeError) as error:
        raise UsageError(f"cannot join the Ray cluster at {address}: {error}") from None


def keep_on_loopback() -> None:
    """Make Ray use 127.0.0.1 as this node's address, here and in what it starts."""
    os.environ[LOOPBACK_SWITCH] = "0"
    # Ray read the variable when it was imported; its address lookup reads this
    # attribute on every call.
    import ray._private.ray_constants as constants

    constants.ENABLE_RAY_CLUSTER = False


def host_port(address: str | None) -> tuple[str, int] | None:
    """``(host, port)`` of a ``HOST:PORT`` or ``ray://HOST[:PORT]`` address; None for others.

    ``auto``, ``local`` and no address name no host to check.

    Raises:
        UsageError: the address has a port that is not a number.
    """
    if address is None or address in ("auto", "local"):
        return None
    text = address.removeprefix("ray://")
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = text, str(_CLIENT_PORT) if address.startswith("ray://") else ""
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(
            f"--ray-address {address}: expected HOST:PORT (the head's GCS port, 6379 by "
            "default), ray://HOST:10001, or auto"
        )
    return host, int(port)


def is_loopback(address: str) -> bool:
    """True when ``address`` names this machine's loopback interface."""
    target = host_port(address) if address not in ("auto", "local") else None
    if target is None:
        return False
    host = target[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_reachable(address: str, host: str, port: int) -> None:
    """Fail at once, naming the address, when nothing accepts a connection there."""
    try:
        with socket.create_connection((host, port), timeout=REACH_TIMEOUT):
            return
    except OSError as error:
        reason = error.strerror or type(error).__name__
    start = f"ray start --head --port {port}"
    if is_loopback(address):  # a head on this machine that stays on loopback
        start = f"{LOOPBACK_SWITCH}=0 {start}"
    raise UsageError(
        f"cannot reach the Ray cluster at {address} ({reason.lower()}): start its head "
        f"({start}) or pass the address it printed with --ray-address; without "
        "--ray-address attractor starts a local cluster"
    )
