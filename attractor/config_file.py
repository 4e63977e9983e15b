"""The config file: where a run finds it, how it is read, and its tables that
are not settings of their own.

The file is ``--config FILE``, else ``attractor.toml`` in the working
directory, else ``[tool.attractor]`` in ``pyproject.toml``. Its plain keys are
settings (resolved by :mod:`attractor.settings`, which names them); its tables
are model prices (``[prices.MODEL]``), MCP servers (``[mcp_servers.NAME]``, see
:mod:`attractor.mcp_config`) and ACP agents (``[acp_agents.NAME]``), each
checked here into the values a run carries.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attractor.errors import InputFileError, UsageError
from attractor.fileio.reads import TEXT_LIMIT, read_bounded
from attractor.llm.pricing import ModelPrice, parse_price
from attractor.mcp_config import mcp_servers_of
from attractor.valueclass import frozen

#: The config file's table of model prices (not a flag or variable).
PRICES_KEY = "prices"
#: The config file's ``[mcp_servers.NAME]`` tables: MCP servers nodes may name.
MCP_KEY = "mcp_servers"
#: The config file's named ACP agents, ``[acp_agents.NAME]`` (see :class:`AcpAgent`).
ACP_AGENTS_KEY = "acp_agents"
#: The config tables that are not settings of their own.
TABLE_KEYS = (PRICES_KEY, MCP_KEY, ACP_AGENTS_KEY)


def read_config(
    cwd: Path, explicit: str | None, *, settings: Sequence[str]
) -> tuple[str, dict[str, Any]] | None:
    """Load the config table: ``(label, table)``, or None when there is no config file.

    Every key must be one of ``settings`` or of :data:`TABLE_KEYS`. A config
    file that exists must be a regular file of at most
    :data:`~attractor.fileio.reads.TEXT_LIMIT` bytes (a FIFO named ``attractor.toml``
    is an error, not a file to skip or to wait on).
    """
    path = config_file_path(cwd, explicit)
    if path is None:
        return None
    if explicit is not None:
        label = path.name
        table = _read_toml(path, explicit, pyproject=path.name == "pyproject.toml")
    elif path.name == "attractor.toml":
        label = "attractor.toml"
        table = _read_toml(path, label, pyproject=False)
    else:
        label = "pyproject.toml [tool.attractor]"
        table = _read_toml(path, "pyproject.toml", pyproject=True)
        if not table:
            return None
    _check_keys(label, table, settings)
    return label, table


def config_file_path(cwd: Path, explicit: str | None = None) -> Path | None:
    """The file :func:`read_config` reads from ``cwd`` (None: there is none)."""
    if explicit is not None:
        return Path(explicit)
    for name in ("attractor.toml", "pyproject.toml"):
        if os.path.exists(cwd / name):
            return cwd / name
    return None


def line_of(path: Path, table: str, key: str | None = None) -> int:
    """The line of ``[table]`` in the config file (of ``key`` in it, when found there);
    0 when the file cannot be read or the table is not written as a header.

    ``table`` is dotted (``mcp_servers.docs``); in a ``pyproject.toml`` it sits
    under ``tool.attractor``.
    """
    try:
        lines = read_bounded(path, TEXT_LIMIT, "config file").splitlines()
    except InputFileError:
        return 0
    parts = table.split(".")
    if path.name == "pyproject.toml":
        parts = ["tool", "attractor", *parts]
    name = r"\s*\.\s*".join(rf'"?{re.escape(part)}"?' for part in parts)
    header = re.compile(rf"\s*\[\s*{name}\s*\]")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        return 0
    if key is not None:
        assigned = re.compile(rf'\s*"?{re.escape(key)}"?\s*=')
        for i in range(start + 1, len(lines)):
            if lines[i].lstrip().startswith("["):
                break
            if assigned.match(lines[i]):
                return i + 1
    return start + 1


def _check_keys(label: str, table: dict[str, Any], settings: Sequence[str]) -> None:
    # A misspelt key would otherwise be ignored without a word.
    names = (*settings, *TABLE_KEYS)
    for key in table:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            known = ", ".join(names)
            raise UsageError(f"{label}: unknown setting {key!r}{hint} (known: {known})")


def _read_toml(path: Path, shown: str, *, pyproject: bool) -> dict[str, Any]:
    try:
        text = read_bounded(path, TEXT_LIMIT, "config file")
    except InputFileError as exc:
        if exc.kind == "not_regular" and path.is_dir():
            raise UsageError(
                f"config file {shown} is a directory; check the --config path"
            ) from None
        if exc.errno == errno.ENOENT:
            raise UsageError(
                f"config file {shown} does not exist; check the --config path"
            ) from None
        raise UsageError(f"config file {shown}: {exc.reason}; {exc.hint}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{shown}: cannot read config file: {exc}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise UsageError(
            f"{shown}: cannot read config file: values nest too deeply; "
            "settings are plain strings and numbers"
        ) from None
    if pyproject:
        tool = data.get("tool", {})
        table = tool.get("attractor", {}) if isinstance(tool, dict) else {}
        return table if isinstance(table, dict) else {}
    return data


def tables_of(label: str, table: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The tables a config file has, each checked, and where each came from.

    Both are keyed by the table's name (:data:`TABLE_KEYS`), as
    :class:`~attractor.settings.Settings` names its fields.

    Raises:
        UsageError: a table, key or value that is not what it should be.
    """
    readers = {PRICES_KEY: prices_of, MCP_KEY: mcp_servers_of, ACP_AGENTS_KEY: acp_agents_of}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, read in readers.items():
        if key in table:
            values[key] = read(label, table)
            sources[key] = f"{label}: {key}"
    return values, sources


def prices_of(label: str, table: dict[str, Any]) -> dict[str, ModelPrice]:
    """The ``[prices.MODEL]`` tables of the config file, each checked."""
    raw = table[PRICES_KEY]
    if not isinstance(raw, dict):
        raise UsageError(
            f"{label}: {PRICES_KEY} must be a table of models, e.g. "
            f'[{PRICES_KEY}."my-model"] with input = 1.0 and output = 2.0'
        )
    prices: dict[str, ModelPrice] = {}
    for model, entry in raw.items():
        try:
            prices[model] = parse_price(entry, f"{PRICES_KEY}.{model}")
        except ValueError as exc:
            raise UsageError(f"{label}: {exc}") from None
    return prices


@frozen
class AcpAgent:
    """One ``[acp_agents.NAME]`` table: how to start an ACP agent.

    ``env`` values are literal, except a whole value ``$NAME`` or ``${NAME}``,
    which is that variable of attractor's own environment (unset: left out).
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    #: Where it was defined, for messages (``attractor.toml: acp_agents.claude``).
    source: str = ""


_ACP_AGENT_KEYS = ("command", "args", "env")
_ACP_AGENT_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def acp_agents_of(label: str, table: dict[str, Any]) -> dict[str, AcpAgent]:
    """The ``[acp_agents.NAME]`` tables of a config file, each checked.

    Raises:
        UsageError: a table, key or value that is not what an agent needs.
    """
    raw = table[ACP_AGENTS_KEY]
    example = f'[{ACP_AGENTS_KEY}.claude] with command = "claude-agent-acp"'
    if not isinstance(raw, dict):
        raise UsageError(f"{label}: {ACP_AGENTS_KEY} must be a table of agents, e.g. {example}")
    agents: dict[str, AcpAgent] = {}
    for name, entry in raw.items():
        where = f"{label}: {ACP_AGENTS_KEY}.{name}"
        if not _ACP_AGENT_NAME.fullmatch(name):
            raise UsageError(f"{where}: a name has only letters, digits, '_', '.' and '-'")
        if not isinstance(entry, dict):
            raise UsageError(f"{where} must be a table, e.g. {example}")
        agents[name] = _acp_agent(name, entry, where)
    return agents


def _acp_agent(name: str, entry: dict[str, Any], where: str) -> AcpAgent:
    unknown = [key for key in entry if key not in _ACP_AGENT_KEYS]
    if unknown:
        known = ", ".join(_ACP_AGENT_KEYS)
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (known: {known})")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise UsageError(f'{where}: command must name the agent\'s program, e.g. command = "npx"')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError(f'{where}: args must be a list of strings, e.g. args = ["--acp"]')
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise UsageError(f'{where}: env must be a table of strings, e.g. env = {{ KEY = "$KEY" }}')
    return AcpAgent(name, command.strip(), tuple(args), tuple(env.items()), where)
