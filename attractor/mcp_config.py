"""The config file's ``[mcp_servers.NAME]`` tables: the MCP servers nodes may name.

A server is either a command the step starts (stdio)::

    [mcp_servers.tracker]
    command = "tracker-mcp"
    args = ["--project", "web"]
    env = { TRACKER_TOKEN = "${TRACKER_TOKEN}" }

or a streamable HTTP endpoint::

    [mcp_servers.docs]
    url = "http://127.0.0.1:8123/mcp"
    headers = { Authorization = "Bearer ${DOCS_TOKEN}" }

Values of ``env`` and ``headers`` may name variables of attractor's own
environment as ``${NAME}``: secrets stay out of the file, and the values of the
variables named are redacted from everything the run writes. They are expanded
only when a step starts the server (:meth:`McpServerConfig.expanded`), so a
server no node uses needs none of its variables. ``startup_timeout`` (default
30s) bounds the start and handshake, ``call_timeout`` (default 5m) each tool
call.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from attractor.errors import ConfigTableError, UsageError
from attractor.valueclass import frozen

KEYS = ("command", "args", "env", "url", "headers", "startup_timeout", "call_timeout")
DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 300.0
#: An MCP server's name: letters, digits, ``-`` and single ``_`` (``__`` separates
#: the parts of a tool's name as the model sees it: ``mcp__NAME__TOOL``).
MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

Pairs = tuple[tuple[str, str], ...]


@frozen
class McpServerConfig:
    """One ``[mcp_servers.NAME]`` table, checked; ``${VAR}`` kept until :meth:`expanded`."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Pairs = ()
    url: str | None = None
    headers: Pairs = ()
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    #: Where it was written (``attractor.toml: mcp_servers.tracker``).
    source: str = ""

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def variables(self) -> list[str]:
        """The variables its ``env`` and ``headers`` name (their values are secrets)."""
        return [v for _, text in (*self.env, *self.headers) for v in _VARIABLE.findall(text)]

    def expanded(self, environ: Mapping[str, str] | None = None) -> McpServerConfig:
        """The same server with ``${VAR}`` replaced by the variables' values.

        Raises:
            UsageError: a variable it names is not set.
        """
        environ = os.environ if environ is None else environ

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environ:
                raise UsageError(
                    f"{self.source} names ${{{name}}}, which is not set: export {name} "
                    "before the run (or remove it from the server's env/headers)"
                )
            return environ[name]

        def pairs(items: Pairs) -> Pairs:
            return tuple((key, _VARIABLE.sub(value, text)) for key, text in items)

        return replace(self, env=pairs(self.env), headers=pairs(self.headers))

    def describe(self) -> str:
        """One line for ``--dry-run``: what the server is, no secret in it."""
        if self.command is not None:
            return f"{self.name} (stdio: {' '.join([self.command, *self.args])})"
        return f"{self.name} (http: {self.url})"


def mcp_servers_of(label: str, table: dict[str, Any]) -> dict[str, McpServerConfig]:
    """The ``[mcp_servers.NAME]`` tables of the config file, each checked.

    Raises:
        ConfigTableError: naming the file, the server and what to write instead.
    """
    return {name: _server(label, name, entry) for name, entry in _tables(label, table).items()}


def mcp_server_problems(label: str, table: dict[str, Any]) -> list[ConfigTableError]:
    """What is wrong with the ``[mcp_servers.NAME]`` tables: one error per bad server
    (the first thing wrong with it), for lint; empty when every table is right."""
    try:
        raw = _tables(label, table)
    except ConfigTableError as error:
        return [error]
    problems: list[ConfigTableError] = []
    for name, entry in raw.items():
        try:
            _server(label, name, entry)
        except ConfigTableError as error:
            problems.append(error)
    return problems


def _tables(label: str, table: dict[str, Any]) -> dict[str, Any]:
    raw = table["mcp_servers"]
    if not isinstance(raw, dict):
        raise ConfigTableError(
            f"{label}: mcp_servers must be a table of servers, e.g. [mcp_servers.tracker] "
            'with command = "tracker-mcp"',
            table="mcp_servers",
        )
    return raw


class _Where:
    """Where a server's table is, to build its errors."""

    def __init__(self, label: str, name: str) -> None:
        self.table = f"mcp_servers.{name}"
        self.text = f"{label}: {self.table}"

    def error(self, text: str, key: str | None = None) -> ConfigTableError:
        return ConfigTableError(f"{self.text}: {text}", table=self.table, key=key)


def _server(label: str, name: str, entry: Any) -> McpServerConfig:
    where = _Where(label, name)
    if not MCP_SERVER_NAME.fullmatch(name):
        raise where.error("the name may hold letters, digits, - and single _ only")
    if not isinstance(entry, dict):
        raise where.error('it must be a table with command = "..." or url = "..."')
    for key in entry:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise where.error(f"unknown key {key!r}{hint} (known: {', '.join(KEYS)})", key)
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise where.error("give either command (a stdio server) or url (HTTP), not both")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise where.error("command must be a non-empty string", "command")
    if url is not None and (not isinstance(url, str) or not re.match(r"https?://", url)):
        raise where.error("url must start with http:// or https://", "url")
    for key in ("args", "env") if url is not None else ("headers",):
        if key in entry:
            kind = "an HTTP server" if url is not None else "a stdio server"
            raise where.error(f"{key} does not apply to {kind}", key)
    return McpServerConfig(
        name=name,
        command=command,
        args=_strings(where, entry.get("args", [])),
        env=_pairs(where, "env", entry.get("env", {}), re.compile(r"[A-Za-z_][A-Za-z0-9_]*")),
        url=url,
        headers=_pairs(where, "headers", entry.get("headers", {}), _HEADER_NAME),
        startup_timeout=_seconds(where, entry, "startup_timeout", DEFAULT_STARTUP_TIMEOUT),
        call_timeout=_seconds(where, entry, "call_timeout", DEFAULT_CALL_TIMEOUT),
        source=where.text,
    )


def _strings(where: _Where, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise where.error('args must be a list of strings, e.g. ["--port", "0"]', "args")
    return tuple(raw)


def _pairs(where: _Where, key: str, raw: Any, names: re.Pattern[str]) -> Pairs:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise where.error(f'{key} must be a table of strings, e.g. {{ NAME = "${{VAR}}" }}', key)
    for name in raw:
        if not names.fullmatch(name):
            raise where.error(f"{name!r} is not a valid name in {key}", key)
    return tuple(raw.items())


def _seconds(where: _Where, entry: dict[str, Any], key: str, default: float) -> float:
    raw = entry.get(key)
    if raw is None:
        return default
    found = None if isinstance(raw, bool) else _DURATION.fullmatch(str(raw).strip())
    seconds = float(found.group(1)) * _UNIT[found.group(2) or "s"] if found else 0.0
    if not seconds > 0:
        raise where.error(f"{key} must be a time above zero, like 30, 30s or 2m", key)
    return seconds
