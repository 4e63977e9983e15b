"""Run settings, resolved once per run with one fixed precedence.

For every setting the first source that provides it wins:

1. the CLI flag (``--timeout 5m``),
2. the environment variable (``ATTRACTOR_TIMEOUT``),
3. the config file: ``--config FILE``, else ``attractor.toml`` in the working
   directory, else ``[tool.attractor]`` in ``pyproject.toml``,
4. a graph attribute (only for settings a graph may carry, such as ``profile``),
5. the built-in default.

A bad value from any source is a :class:`~attractor.errors.SettingError` (exit 2)
naming that source, e.g. ``ATTRACTOR_TIMEOUT="soon": expected a duration like
90s, 5m or 1h30m``. Values are never silently clamped. Only this module and the
provider layer read the environment.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.config_file import (
    ACP_AGENTS_KEY,
    AcpAgent,
    acp_agents_of,
    read_config,
    tables_of,
)
from attractor.dot.schema import (
    AGENT_BACKENDS,
    MAX_TURNS_LIMIT,
    PROFILES,
    RUN_SANDBOX,
    WORKSPACE_MODES,
    is_acp_backend,
    parse_duration,
    parse_network,
    parse_webhook_url,
)
from attractor.errors import SettingError, UsageError
from attractor.fileio.writes import RUN_PERMISSIONS
from attractor.llm.credentials import check_variable_name, lost_secret, redact_url
from attractor.llm.pricing import ModelPrice
from attractor.mcp_config import McpServerConfig
from attractor.proc.allowlist import parse_hosts
from attractor.proc.envfilter import ENV_POLICIES, check_pattern, split_patterns
from attractor.redact import Redactor
from attractor.valueclass import frozen

if TYPE_CHECKING:
    from attractor.dot.graph import Graph

DURATION_EXPECTED = "expected a duration like 90s, 5m or 1h30m"
TURNS_EXPECTED = f"must be an integer from 1 to {MAX_TURNS_LIMIT}"
BACKENDS_EXPECTED = (
    "expected simulate, llm, scripted:FILE, " + ", ".join(AGENT_BACKENDS) + " or acp:NAME"
)
COST_EXPECTED = "expected an amount of US dollars above zero, like 2.50"


def _duration(raw: Any) -> float:
    if isinstance(raw, int | float) and not isinstance(raw, bool) and raw > 0:
        return float(raw)
    try:
        return parse_duration(str(raw))
    except ValueError:
        raise ValueError(DURATION_EXPECTED) from None


def _ascii_int(raw: Any) -> int | None:
    # str.isdigit() also accepts superscripts and full-width digits; users mean 0-9.
    text = str(raw).strip()
    if isinstance(raw, bool) or not re.fullmatch(r"[0-9]+", text):
        return None
    return int(text)


def _turns(raw: Any) -> int:
    value = _ascii_int(raw)
    if value is None or not 1 <= value <= MAX_TURNS_LIMIT:
        raise ValueError(TURNS_EXPECTED)
    return value


def _positive_int(raw: Any) -> int:
    value = _ascii_int(raw)
    if value is None or value < 1:
        raise ValueError("must be a positive integer")
    return value


def _dollars(raw: Any) -> float:
    text = str(raw).strip().removeprefix("$").strip()
    try:
        value = float(text) if not isinstance(raw, bool) else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(COST_EXPECTED)
    return value


def _profile(raw: Any) -> str:
    text = str(raw).strip()
    if text not in PROFILES:
        raise ValueError("expected one of " + ", ".join(PROFILES))
    return text


#: Provider names people pass as a backend, and the flags they mean.
_PROVIDER_HINTS = {
    "openai": "--provider openai --model ID (or --base-url URL for a local server)",
    "anthropic": "--provider anthropic --model ID",
}


def _backend(raw: Any) -> str:
    text = str(raw).strip()
    if text in ("simulate", "llm", *AGENT_BACKENDS):
        return text
    if text.startswith("scripted:") and len(text) > 9:
        return text
    if is_acp_backend(text):
        return text
    hint = _PROVIDER_HINTS.get(text.lower())
    if hint is not None:
        raise ValueError(f"{BACKENDS_EXPECTED}; {text} is a provider: use {hint}")
    raise ValueError(BACKENDS_EXPECTED)


#: Where runs execute: in this process, or on a Ray cluster (``attractor[ray]``).
EXECUTORS = ("local", "ray")


def _executor(raw: Any) -> str:
    text = str(raw).strip()
    if text not in EXECUTORS:
        raise ValueError("expected one of " + ", ".join(EXECUTORS))
    return text


def _choice(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        text = str(raw).strip()
        if text not in choices:
            raise ValueError("expected one of " + ", ".join(choices))
        return text

    return parse


def _network(raw: Any) -> bool | tuple[str, ...]:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, list):
        return parse_hosts(",".join(str(item) for item in raw))
    return parse_network(str(raw))


def _patterns(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else split_patterns(str(raw))
    return tuple(check_pattern(str(p).strip()) for p in items if str(p).strip())


def _paths(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else str(raw).split(",")
    return tuple(str(p).strip() for p in items if str(p).strip())


#: The ignored directories a run worktree gets by link unless ``workspace_link`` says otherwise.
DEFAULT_LINKS = (".venv", "venv", "node_modules")


def _links(raw: Any) -> tuple[str, ...]:
    paths = _paths(raw)
    if paths == ("none",):
        return ()
    for path in paths:
        if Path(path).is_absolute() or ".." in Path(path).parts:
            raise ValueError(f"{path}: expected paths inside the repository, like .venv")
    return paths


def _permissions(raw: Any) -> str:
    text = str(raw).strip()
    if text not in RUN_PERMISSIONS:
        raise ValueError("expected one of " + ", ".join(RUN_PERMISSIONS))
    return text


def _text(raw: Any) -> str:
    text = str(raw).strip()
    if not text:
        raise ValueError("must not be empty")
    return text


_SECRET_NAME = re.compile(r"[A-Za-z_*?][A-Za-z0-9_*?]*")
SECRETS_EXPECTED = (
    "expected variable names or patterns like DEPLOY_TOKEN or MYCO_*, comma-separated"
)


def _secret_names(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else re.split(r"[,\s]+", str(raw))
    names = tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))
    if not names or not all(_SECRET_NAME.fullmatch(name) for name in names):
        raise ValueError(SECRETS_EXPECTED)
    return names


#: What a run may notify a webhook of (``--notify-on``), and the default choice.
NOTIFY_EVENTS = (
    "run_started",
    "gate_waiting",
    "gate_answered",
    "stage_failed",
    "run_succeeded",
    "run_failed",
    "run_stopped",
    "run_finished",
)
NOTIFY_DEFAULT = ("gate_waiting", "run_finished")
NOTIFY_FORMATS = ("json", "slack")


def _url(raw: Any) -> str:
    return parse_webhook_url(str(raw))


def _notify_events(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else re.split(r"[,\s]+", str(raw))
    names = tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))
    if not names or not all(name in NOTIFY_EVENTS for name in names):
        raise ValueError("expected events among " + ", ".join(NOTIFY_EVENTS) + ", comma-separated")
    return names


@frozen
class _Field:
    name: str
    flag: str
    env: str
    parse: Callable[[Any], Any]
    default: Any = None
    graph_attr: str | None = None


_FIELDS: tuple[_Field, ...] = (
    _Field("timeout", "--timeout", "ATTRACTOR_TIMEOUT", _duration),
    _Field("logs_dir", "--logs-dir", "ATTRACTOR_LOGS_DIR", _text),
    _Field("workdir", "--workdir", "ATTRACTOR_WORKDIR", _text, graph_attr="workdir"),
    _Field("profile", "--profile", "ATTRACTOR_PROFILE", _profile, "fast", "profile"),
    _Field("max_turns", "--max-turns", "ATTRACTOR_MAX_TURNS", _turns),
    _Field("max_total_turns", "--max-total-turns", "ATTRACTOR_MAX_TOTAL_TURNS", _positive_int),
    _Field("max_total_tokens", "--max-total-tokens", "ATTRACTOR_MAX_TOTAL_TOKENS", _positive_int),
    _Field("max_cost", "--max-cost", "ATTRACTOR_MAX_COST", _dollars),
    _Field(
        "max_steps", "--max-steps", "ATTRACTOR_MAX_STEPS", _positive_int, graph_attr="max_steps"
    ),
    _Field("backend", "--backend", "ATTRACTOR_BACKEND", _backend),
    _Field("provider", "--provider", "ATTRACTOR_PROVIDER", _text),
    _Field("model", "--model", "ATTRACTOR_MODEL", _text),
    _Field("base_url", "--base-url", "ATTRACTOR_BASE_URL", _text),
    _Field("api_key_env", "--api-key-env", "ATTRACTOR_API_KEY_ENV", check_variable_name),
    _Field("kill_grace", "--kill-grace", "ATTRACTOR_KILL_GRACE", _duration, 2.0),
    _Field(
        "shell_timeout_cap",
        "--shell-timeout-cap",
        "ATTRACTOR_SHELL_TIMEOUT_CAP",
        _duration,
        600.0,
    ),
    _Field("executor", "--executor", "ATTRACTOR_EXECUTOR", _executor, "local"),
    _Field("ray_address", "--ray-address", "ATTRACTOR_RAY_ADDRESS", _text),
    _Field("env", "--env", "ATTRACTOR_ENV", _choice(ENV_POLICIES), "core", "env"),
    _Field("env_allow", "--env-allow", "ATTRACTOR_ENV_ALLOW", _patterns, (), "env_allow"),
    _Field("env_deny", "--env-deny", "ATTRACTOR_ENV_DENY", _patterns, (), "env_deny"),
    _Field("sandbox", "--sandbox", "ATTRACTOR_SANDBOX", _choice(RUN_SANDBOX), "auto", "sandbox"),
    _Field("network", "--network", "ATTRACTOR_NETWORK", _network, False, "network"),
    _Field("writable", "--writable", "ATTRACTOR_WRITABLE", _paths, (), "writable"),
    _Field("image", "--image", "ATTRACTOR_IMAGE", _text, None, "image"),
    _Field(
        "workspace",
        "--workspace",
        "ATTRACTOR_WORKSPACE",
        _choice(WORKSPACE_MODES),
        graph_attr="workspace",
    ),
    _Field(
        "workspace_setup",
        "--workspace-setup",
        "ATTRACTOR_WORKSPACE_SETUP",
        _text,
        graph_attr="workspace_setup",
    ),
    _Field(
        "workspace_link",
        "--workspace-link",
        "ATTRACTOR_WORKSPACE_LINK",
        _links,
        DEFAULT_LINKS,
        "workspace_link",
    ),
    # Every source adds to this one (see _union): a name declared secret anywhere stays secret.
    _Field("secrets", "--secrets", "ATTRACTOR_SECRETS", _secret_names, (), "secrets"),
    _Field("notify", "--notify", "ATTRACTOR_NOTIFY", _url, graph_attr="notify"),
    _Field(
        "notify_on",
        "--notify-on",
        "ATTRACTOR_NOTIFY_ON",
        _notify_events,
        NOTIFY_DEFAULT,
        "notify_on",
    ),
    _Field(
        "notify_format",
        "--notify-format",
        "ATTRACTOR_NOTIFY_FORMAT",
        _choice(NOTIFY_FORMATS),
        "json",
        "notify_format",
    ),
    _Field(
        "notify_secret_env",
        "--notify-secret-env",
        "ATTRACTOR_NOTIFY_SECRET_ENV",
        check_variable_name,
    ),
    _Field("notify_timeout", "--notify-timeout", "ATTRACTOR_NOTIFY_TIMEOUT", _duration, 5.0),
    # No flag: a choice about a machine or a team, made once in the environment or config.
    _Field(
        "run_permissions",
        "--run-permissions",
        "ATTRACTOR_RUN_PERMISSIONS",
        _permissions,
        "private",
    ),
)
FIELD_NAMES = tuple(f.name for f in _FIELDS)


@frozen
class Settings:
    """Every run option, resolved. ``sources[name]`` says where each value came from.

    A source is the flag (``--max-turns``), the variable (``ATTRACTOR_MAX_TURNS``),
    ``CONFIGFILE: key``, ``graph attribute KEY`` or ``default``.
    """

    timeout: float | None = None
    logs_dir: str | None = None
    workdir: str | None = None
    profile: str = "fast"
    max_turns: int | None = None
    max_total_turns: int | None = None
    max_total_tokens: int | None = None
    max_cost: float | None = None
    #: The run-wide step budget; None: :func:`step_limit`'s default for the graph.
    max_steps: int | None = None
    backend: str = "simulate"
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    #: The variable whose key goes to the model (see attractor.llm.credentials).
    api_key_env: str | None = None
    kill_grace: float = 2.0
    shell_timeout_cap: float = 600.0
    executor: str = "local"
    #: The Ray cluster to join (``auto``, ``ray://HOST:10001``); None starts a local one.
    ray_address: str | None = None
    #: Which variables commands inherit (see attractor.proc.envfilter).
    env: str = "core"
    env_allow: tuple[str, ...] = ()
    env_deny: tuple[str, ...] = ()
    #: Where commands run: auto (bwrap when it works), bwrap, none, required.
    sandbox: str = "auto"
    #: Whether sandboxed commands reach the network: on, off, or only these hosts.
    network: bool | tuple[str, ...] = False
    #: Extra writable paths for sandboxed commands (relative to the workdir).
    writable: tuple[str, ...] = ()
    #: The webhook a run notifies of the events in ``notify_on`` (see attractor.notify);
    #: never recorded with the run (a webhook URL may carry a token).
    notify: str | None = None
    notify_on: tuple[str, ...] = NOTIFY_DEFAULT
    #: ``json`` (the documented payload) or ``slack`` (an incoming-webhook message).
    notify_format: str = "json"
    #: The variable holding the secret that signs each notification (HMAC-SHA256).
    notify_secret_env: str | None = None
    #: Seconds one delivery attempt may take.
    notify_timeout: float = 5.0
    #: The container image of ``sandbox=docker|podman``.
    image: str | None = None
    #: worktree, snapshot or none; None: worktree inside a git repository, else snapshot.
    workspace: str | None = None
    #: A command run once in each new run worktree (``uv sync``, ``npm ci``).
    workspace_setup: str | None = None
    #: Ignored paths of the checkout linked into a run worktree (see attractor.workspace).
    workspace_link: tuple[str, ...] = DEFAULT_LINKS
    #: ``private``: run directories 0700, their files 0600; ``umask``: as the umask says.
    run_permissions: str = "private"
    #: Model prices from the config file's ``[prices.MODEL]`` tables (USD per million tokens).
    prices: dict[str, ModelPrice] = field(default_factory=dict)
    #: Variables (names or shell patterns) whose values are redacted, beyond the
    #: built-in patterns of :mod:`attractor.redact`.
    secrets: tuple[str, ...] = ()
    #: The config file's ``[mcp_servers.NAME]`` tables (``${VAR}`` not yet expanded).
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    #: ACP agents a node may name as ``backend="acp:NAME"`` (``[acp_agents.NAME]``).
    acp_agents: dict[str, AcpAgent] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    #: Each value as the user wrote it (``"90s"``), for messages that echo it.
    texts: dict[str, str] = field(default_factory=dict)

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")

    @property
    def simulates_tools(self) -> bool:
        """True when ``simulate`` was chosen on purpose (flag, variable or config).

        Tool nodes then report the command they would run instead of running it.
        The default backend (``simulate`` because no model is configured) still
        runs tool commands, so a tool-only pipeline works without a model.
        """
        return self.backend == "simulate" and self.source("backend") != "default"

    def text(self, name: str) -> str | None:
        """The value of ``name`` as written by the user, or None for a default."""
        return self.texts.get(name)


#: The step budget of a run when none is set: this many steps, or
#: :data:`STEPS_PER_NODE` per node of a larger graph, whichever is more. A
#: pipeline without loops takes one step per node, so the default never stops
#: it; a loop that nothing bounds is stopped after seconds of instant steps.
DEFAULT_MAX_STEPS = 10_000
STEPS_PER_NODE = 10


def step_limit(settings: Settings, node_count: int) -> tuple[int, str]:
    """The run's step budget and where it comes from (see :data:`DEFAULT_MAX_STEPS`)."""
    if settings.max_steps is not None:
        return settings.max_steps, settings.source("max_steps")
    if node_count * STEPS_PER_NODE > DEFAULT_MAX_STEPS:
        return node_count * STEPS_PER_NODE, f"default: {STEPS_PER_NODE} per node"
    return DEFAULT_MAX_STEPS, "default"


def find_config(cwd: Path, explicit: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """The config table a run here reads: ``(label, table)``, or None without a config file.

    Its keys are checked against the settings (see :func:`~attractor.config_file.read_config`).
    """
    return read_config(cwd, explicit, settings=FIELD_NAMES)


#: The settings that decide how nodes execute, kept in a run's manifest for resume.
RECORDED = (
    "backend", "provider", "model", "base_url", "api_key_env", "workdir", "profile", "max_turns",
    "max_total_turns", "max_total_tokens", "max_cost", "max_steps", "timeout", "kill_grace",
    "shell_timeout_cap", "env", "env_allow", "env_deny", "sandbox", "network", "writable", "image",
    "secrets", "workspace", "workspace_setup", "workspace_link",
)  # fmt: skip
RECORDED_SOURCE = "recorded with the run"
#: The settings that bound what a step may do, as their defaults are written: a resumed
#: run keeps them as it started, unless a flag or a variable says otherwise.
BOUNDARY_DEFAULTS = {
    "sandbox": "auto",
    "network": "off",
    "writable": "",
    "env": "core",
    "env_allow": "",
}


def absolute_backend(backend: str) -> str:
    """``backend`` with a scripted model's file made absolute (from this directory)."""
    if backend.startswith("scripted:"):
        return "scripted:" + str(Path(backend.removeprefix("scripted:")).resolve())
    return backend


def record_of(settings: Settings) -> dict[str, str]:
    """The settings a user chose (not defaults), as written, for the run's manifest.

    The working directory is kept absolute (a resume may start elsewhere) and a
    base URL loses its user info and query values (:func:`redact_url`): no secret
    is written to a run directory. ``api_key_env`` is a variable's name, never a key.
    """
    recorded: dict[str, str] = {}
    for name in RECORDED:
        text = settings.text(name)
        if text is None:
            continue
        if name == "workdir":
            text = str(Path(text).resolve())
        elif name == "backend":
            text = absolute_backend(text)
        elif name == "base_url":
            text = redact_url(text)
        recorded[name] = text
    return recorded


def resolve_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    config_file: str | None = None,
    graph_attrs: Mapping[str, str] | None = None,
    graph_models: bool = False,
    recorded: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve every setting from flags, environment, config file, graph, defaults.

    ``recorded`` (a resumed run's :func:`record_of`) comes right after the flags:
    a run continues with the settings it was started with unless a flag says
    otherwise.

    ``flags`` maps setting names (``max_turns``) to CLI values; None means not given.
    ``graph_models`` says the graph's LLM nodes name a model or provider (see
    :func:`graph_names_model`); the backend then defaults to ``llm``, as it does
    when a provider or model is configured for the run.
    """
    flags = flags or {}
    unknown = set(flags) - set(FIELD_NAMES)
    if unknown:
        raise ValueError(f"unknown settings: {sorted(unknown)}")
    env = os.environ if env is None else env
    config = find_config(cwd or Path.cwd(), config_file)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    texts: dict[str, str] = {}
    # Per setting, its sources in precedence order (the same kinds for every
    # setting without a graph attribute) and the index of the one that gave it.
    layers_of: dict[str, list[tuple[str, Any]]] = {}
    for f in _FIELDS:
        layers: list[tuple[str, Any]] = [(f.flag, flags.get(f.name))]
        if recorded is not None:
            layers.append((f"{RECORDED_SOURCE} ({f.flag})", recorded.get(f.name)))
        layers.append((f.env, env.get(f.env)))
        if recorded is not None and f.name in BOUNDARY_DEFAULTS and f.name not in recorded:
            # It ran with the default: a config file in the workdir, which a step may
            # have written, does not loosen the boundary on resume.
            default = BOUNDARY_DEFAULTS[f.name]
            layers.append((f"{RECORDED_SOURCE} ({f.flag}, the default)", default))
        if config is not None:
            label, table = config
            layers.append((f"{label}: {f.name}", table.get(f.name)))
        if f.graph_attr and graph_attrs is not None:
            layers.append((f"graph attribute {f.graph_attr}", graph_attrs.get(f.graph_attr)))
        pick = _union if f.name == "secrets" else _first
        values[f.name], sources[f.name], raw = pick(f, layers)
        if raw is not None:  # a config file's list as the comma-separated text a flag takes
            texts[f.name] = ", ".join(map(str, raw)) if isinstance(raw, list) else str(raw).strip()
        layers_of[f.name] = layers
    _bind_key_to_url(values, sources, texts, layers_of)
    _check_workdir(values.get("workdir"), sources["workdir"], cwd or Path.cwd())
    if values["backend"] is None:
        configured = any(values[k] is not None for k in ("provider", "model", "base_url"))
        values["backend"] = "llm" if configured or graph_models else "simulate"
        if graph_models and not configured:
            sources["backend"] = "graph node llm_model/llm_provider"
    if config is not None:
        tables, table_sources = tables_of(*config)
        values.update(tables)
        sources.update(table_sources)
    return Settings(**values, sources=sources, texts=texts)


def _bind_key_to_url(
    values: dict[str, Any],
    sources: dict[str, str],
    texts: dict[str, str],
    layers_of: dict[str, list[tuple[str, Any]]],
) -> None:
    """Keep ``api_key_env`` only for the base URL it was named with.

    A key variable named in one place (the config file, ATTRACTOR_API_KEY_ENV)
    goes to the base URL named in that same place or below it, never to a base
    URL that a source of higher precedence (a flag, or a request to ``attractor
    serve``) puts in its stead: that URL gets no key unless named with it. A
    resumed run's base URL that lost a secret when recorded must be given again.
    """
    url_source = sources["base_url"]
    if url_source.startswith(RECORDED_SOURCE) and lost_secret(texts["base_url"]):
        raise UsageError(
            f"the run's base URL {texts['base_url']} carried a secret, which was not "
            "recorded: pass --base-url again"
        )
    if values["api_key_env"] is None or url_source == "default":
        return
    url_layers = layers_of["base_url"]
    key_layer = [label for label, _ in layers_of["api_key_env"]].index(sources["api_key_env"])
    if [label for label, _ in url_layers].index(url_source) >= key_layer:
        return
    named_with = url_layers[key_layer][1]
    if named_with is not None and str(named_with).strip() == texts["base_url"]:
        return
    sources["api_key_env"] = (
        f"not applied: {sources['api_key_env']} names a key for another base URL "
        f"than {url_source} gives"
    )
    values["api_key_env"] = None
    texts.pop("api_key_env", None)


def configured_acp_agents(
    cwd: Path | None = None, config_file: str | None = None
) -> tuple[str, list[str]]:
    """Where the config comes from and the ACP agents it names (for lint).

    Raises:
        UsageError: the config file or its ``acp_agents`` tables are malformed.
    """
    config = find_config(cwd or Path.cwd(), config_file)
    if config is None:
        return "the config (no attractor.toml here)", []
    label, table = config
    agents = acp_agents_of(label, table) if ACP_AGENTS_KEY in table else {}
    return label, sorted(agents)


def graph_names_model(graph: Graph) -> bool:
    """True when an LLM node names a model or provider (itself or by the stylesheet)."""
    return any(
        node.handler_type == "codergen" and (node.raw("llm_model") or node.raw("llm_provider"))
        for node in graph.nodes()
    )


def _check_workdir(workdir: str | None, source: str, cwd: Path) -> None:
    # Caught here, before a run directory exists, rather than at the first tool call.
    if workdir is not None and not (cwd / workdir).is_dir():
        raise SettingError(source, workdir, "expected an existing directory")


def _union(f: _Field, layers: list[tuple[str, Any]]) -> tuple[Any, str, Any]:
    """Every source's names together; the sources joined by `` + ``."""
    names: dict[str, None] = {}
    given: list[str] = []
    for source, raw in layers:
        if raw is None or (isinstance(raw, str) and raw == "" and source == f.env):
            continue
        try:
            names.update(dict.fromkeys(f.parse(raw)))
        except ValueError as exc:
            raise SettingError(source, raw, str(exc)) from None
        given.append(source)
    if not given:
        return f.default, "default", None
    return tuple(names), " + ".join(given), ",".join(names)


def notify_secret(settings: Settings, env: Mapping[str, str] | None = None) -> bytes | None:
    """The key that signs the run's notifications, read from the variable
    ``notify_secret_env`` names; None when no variable is named.

    Raises:
        SettingError: the variable is not set or empty.
    """
    name = settings.notify_secret_env
    if name is None:
        return None
    value = (os.environ if env is None else env).get(name, "")
    if not value:
        raise SettingError(
            settings.source("notify_secret_env"),
            name,
            f"the variable {name} is not set; export the webhook's signing secret in it",
        )
    return value.encode("utf-8")


def redactor_for(settings: Settings, env: Mapping[str, str] | None = None) -> Redactor:
    """The run's :class:`~attractor.redact.Redactor`: the secret variables of ``env``
    (default: this process's environment), declared ones and the model key's and the
    notification secret's included."""
    keys = [k for k in (settings.api_key_env, settings.notify_secret_env) if k]
    declared = [*settings.secrets, *keys]
    declared += [n for server in settings.mcp_servers.values() for n in server.variables()]
    return Redactor.from_environment(os.environ if env is None else env, declared)


def environment_redactor(env: Mapping[str, str] | None = None) -> Redactor:
    """A redactor for readers outside a run (the server, the terminal): the secret
    variables of ``env`` (default: this process's), ``ATTRACTOR_SECRETS`` included."""
    env = os.environ if env is None else env
    try:
        declared = _secret_names(env.get("ATTRACTOR_SECRETS") or "")
    except ValueError:  # none, or a bad value the run's settings will name
        declared = ()
    return Redactor.from_environment(env, declared)


def _first(f: _Field, layers: list[tuple[str, Any]]) -> tuple[Any, str, Any]:
    for source, raw in layers:
        if raw is None or (isinstance(raw, str) and raw == "" and source == f.env):
            continue
        try:
            return f.parse(raw), source, raw
        except ValueError as exc:
            raise SettingError(source, raw, str(exc)) from None
    return f.default, "default", None
