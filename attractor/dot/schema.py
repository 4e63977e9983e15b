"""The attributes attractor understands, with their types and defaults, in one place.

Attribute values are kept as the text the author wrote (after unescaping); this
module turns that text into Python values. A value that does not parse is a lint
error (rule ``attribute_value``), never a crash: typed accessors on the graph
model fall back to the default for a bad value, and the engine refuses to run a
graph with lint errors.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Callable
from typing import Any, Literal

from attractor.mcp_config import MCP_SERVER_NAME
from attractor.proc.allowlist import parse_hosts
from attractor.valueclass import frozen

Scope = Literal["graph", "node", "edge"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DURATION_FORM = "a duration like 250ms, 90s, 15m, 2h, 1d or 1h30m"

FIDELITY_MODES = ("full", "truncate", "compact", "summary:low", "summary:medium", "summary:high")
PROFILES = ("smoke", "fast", "strict", "yolo")
#: The agent's tool profiles (attractor.agent.profiles.PROFILE_NAMES).
TOOL_PROFILES = ("openai", "anthropic", "gemini", "default")
MAX_TURNS_LIMIT = 500
#: Where a step's commands run (attractor.proc.environment); ``required`` is run-level only.
SANDBOX_MODES = ("auto", "bwrap", "none", "docker", "podman")
RUN_SANDBOX = (*SANDBOX_MODES, "required")
#: Where a run's files live and how they are checkpointed (see attractor.workspace).
WORKSPACE_MODES = ("worktree", "snapshot", "none")
#: How a fan-in takes its branches' changes (see attractor.workspace).
MERGE_POLICIES = ("all", "selected", "none")
ENV_MODES = ("inherit", "core", "none")
#: External coding-agent CLIs a codergen node may run as its backend.
AGENT_BACKENDS = ("claude-code", "codex", "gemini-cli")
#: What the ``backend`` attribute of a graph or node may name (besides ``acp:NAME``).
NODE_BACKENDS = ("llm", "simulate", *AGENT_BACKENDS)
#: ``backend="acp:NAME"``: the ACP agent ``[acp_agents.NAME]`` of the config file.
ACP_PREFIX = "acp:"
_ACP_NAME = re.compile(r"[A-Za-z0-9_.-]+")
#: How an ACP agent's tool-permission requests are answered (``acp_permissions``).
ACP_PERMISSIONS = ("deny", "allow_read", "allow_edits", "ask", "allow_all")


def is_acp_backend(text: str) -> bool:
    """``acp:NAME`` with a well-formed NAME."""
    return text.startswith(ACP_PREFIX) and bool(_ACP_NAME.fullmatch(text[len(ACP_PREFIX) :]))


def _backend(text: str) -> str:
    s = text.strip()
    if s in NODE_BACKENDS or is_acp_backend(s):
        return s
    raise ValueError("expected one of " + ", ".join(NODE_BACKENDS) + " or acp:NAME")


def parse_duration(text: str) -> float:
    """Parse ``250ms``, ``90s``, ``15m``, ``2h``, ``1d`` or compounds like ``1h30m``.

    Returns seconds. Raises ValueError (message: the accepted form) otherwise.
    """
    s = text.strip()
    pos = 0
    total = 0.0
    for match in _DURATION_PART.finditer(s):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not s or pos != len(s) or total <= 0:
        raise ValueError(f"expected {DURATION_FORM}")
    return total


def parse_interval(text: str) -> float:
    """A duration that may also be zero (``0s``, ``0``): an interval with no wait.

    Raises ValueError (message: the accepted form) otherwise.
    """
    s = text.strip()
    if re.fullmatch(r"0+(?:\.0+)?(?:ms|s|m|h|d)?", s):
        return 0.0
    try:
        return parse_duration(s)
    except ValueError:
        raise ValueError(f"expected {DURATION_FORM}, or 0s") from None


def format_duration(seconds: float) -> str:
    """Render seconds the way a user would write them: ``5m``, ``1h30m``, ``1.5s``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds != int(seconds):
        return f"{seconds:g}s"
    rest = int(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts)


def parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    raise ValueError("expected true or false")


def parse_on_off(text: str) -> bool:
    """``network``: on/off (true/false, yes/no, 1/0 too)."""
    low = text.strip().lower()
    if low in ("on", "true", "yes", "1"):
        return True
    if low in ("off", "false", "no", "0"):
        return False
    raise ValueError("expected on or off")


def parse_network(text: str) -> bool | tuple[str, ...]:
    """``network``: on/off, or an allow-list of hosts (see :mod:`attractor.proc.netproxy`)."""
    try:
        return parse_on_off(text)
    except ValueError:
        return parse_hosts(text)


_INTEGER = re.compile(r"-?\d+")


def _int_parser(low: int | None, high: int | None) -> Callable[[str], int]:
    if low is not None and high is not None:
        form = f"an integer from {low} to {high}"
    elif low is not None:
        form = f"an integer of at least {low}"
    else:
        form = "an integer"

    def parse(text: str) -> int:
        s = text.strip()
        if not _INTEGER.fullmatch(s):
            raise ValueError(f"expected {form}")
        value = int(s)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"expected {form}")
        return value

    return parse


def _choice_parser(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        s = text.strip()
        if s not in choices:
            raise ValueError("expected one of " + ", ".join(choices))
        return s

    return parse


_DECIMAL = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")


def parse_weight(text: str) -> int | float:
    """``weight``: a number, as Graphviz takes it (``2``, ``2.0``, ``-0.5``).

    An integral value is an int (``2.0`` is 2), so a plan prints it as written.
    """
    s = text.strip()
    if not _DECIMAL.fullmatch(s):
        raise ValueError("expected a number, like 2 or 1.5")
    if "." not in s:
        return int(s)
    value = float(s)
    if not math.isfinite(value):
        raise ValueError("expected a number, like 2 or 1.5")
    return int(value) if value.is_integer() else value


def parse_max_turns(text: str) -> int | str:
    """``max_turns``: an integer 1..500 or the word ``auto``."""
    if text.strip() == "auto":
        return "auto"
    try:
        return _int_parser(1, MAX_TURNS_LIMIT)(text)
    except ValueError:
        raise ValueError(f"expected an integer from 1 to {MAX_TURNS_LIMIT}, or auto") from None


def parse_webhook_url(text: str) -> str:
    """``notify``: an http:// or https:// URL with a host (and a valid port)."""
    text = text.strip()
    scheme, sep, _ = text.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or any(c.isspace() for c in text):
        raise ValueError("expected an http:// or https:// URL, like https://hooks.example.com/x")
    try:
        parts = urllib.parse.urlsplit(text)
        usable = bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a port that is not a number from 0 to 65535
        usable = False
    if not usable:
        raise ValueError(
            "expected a host and, after ':', a port from 1 to 65535, like "
            "https://hooks.example.com:8443/x"
        )
    return text


def _webhook(text: str) -> str:
    return parse_webhook_url(text) if text.strip() else text


def _string(text: str) -> str:
    return text


_VARIABLE_GLOB = re.compile(r"[A-Za-z0-9_*?\[\]!-]+")


def parse_patterns(text: str) -> tuple[str, ...]:
    """``env_allow``/``env_deny``: variable-name globs separated by commas or spaces."""
    patterns = tuple(p for p in re.split(r"[,\s]+", text) if p)
    for pattern in patterns:
        if not _VARIABLE_GLOB.fullmatch(pattern):
            raise ValueError(
                f"{pattern!r} is not a variable-name pattern; "
                "expected patterns of letters, digits, _ and * ? []"
            )
    return patterns


#: An entry of ``mcp_allow``/``mcp_deny``: ``mcp__NAME__TOOL``, TOOL a glob.
_MCP_TOOL_PATTERN = re.compile(r"mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_.*?\[\]!-]+)")


def parse_mcp_servers(text: str) -> tuple[str, ...]:
    """``mcp``: MCP server names (``[mcp_servers.NAME]`` in the config), comma-separated."""
    names = tuple(dict.fromkeys(n.strip() for n in re.split(r"[,\s]+", text) if n.strip()))
    for name in names:
        if not MCP_SERVER_NAME.fullmatch(name):
            raise ValueError(
                f"{name!r} is not an MCP server name; "
                "expected names of letters, digits, - and single _"
            )
    return names


def parse_mcp_tools(text: str) -> tuple[tuple[str, str], ...]:
    """``mcp_allow``/``mcp_deny``: ``mcp__NAME__TOOL`` entries (TOOL may hold * and ?)."""
    entries: list[tuple[str, str]] = []
    for item in (p for p in re.split(r"[,\s]+", text) if p):
        found = _MCP_TOOL_PATTERN.fullmatch(item)
        if found is None or not MCP_SERVER_NAME.fullmatch(found.group(1)):
            raise ValueError(
                f"{item!r} is not an MCP tool pattern; expected entries mcp__SERVER__TOOL "
                "(TOOL may use * and ?), e.g. mcp__tracker__get_*"
            )
        entries.append((found.group(1), found.group(2)))
    return tuple(entries)


def parse_paths(text: str) -> tuple[str, ...]:
    """``writable``: comma-separated paths."""
    return tuple(p.strip() for p in text.split(",") if p.strip())


@frozen
class AttrSpec:
    """One known attribute: where it may appear, how it parses, its default."""

    name: str
    scopes: frozenset[Scope]
    parse: Callable[[str], Any]
    default: Any
    doc: str

    def coerce(self, raw: str) -> Any:
        """Parse ``raw``; raises ValueError whose message names the accepted form."""
        return self.parse(raw)

    @property
    def free_text(self) -> bool:
        """Any text is a value of this attribute (the value is the text itself)."""
        return self.parse is _string


_G: frozenset[Scope] = frozenset({"graph"})
_N: frozenset[Scope] = frozenset({"node"})
_E: frozenset[Scope] = frozenset({"edge"})
_GN: frozenset[Scope] = frozenset({"graph", "node"})
_NE: frozenset[Scope] = frozenset({"node", "edge"})
_ALL: frozenset[Scope] = frozenset({"graph", "node", "edge"})

_nonneg = _int_parser(0, None)
_positive = _int_parser(1, None)
_turns = _int_parser(1, MAX_TURNS_LIMIT)
_fidelity = _choice_parser(FIDELITY_MODES)

_SPECS: list[AttrSpec] = [
    # graph
    AttrSpec("goal", _G, _string, "", "goal of the pipeline; $goal in prompts"),
    AttrSpec("model_stylesheet", _G, _string, "", "CSS-like model defaults per node"),
    AttrSpec("default_max_retries", _G, _nonneg, 0, "retries for nodes without max_retries"),
    AttrSpec("default_max_retry", _G, _nonneg, 0, "legacy alias of default_max_retries"),
    AttrSpec("default_fidelity", _G, _fidelity, "", "default context fidelity"),
    AttrSpec("default_max_turns", _G, _turns, None, "turn budget for nodes without max_turns"),
    AttrSpec("default_sprint_limit", _G, _nonneg, 0, "reflection every N turns (0 = off)"),
    AttrSpec("default_max_visits", _G, _positive, None, "visit limit for nodes without one"),
    AttrSpec("max_steps", _G, _positive, None, "run-wide step budget (node executions)"),
    AttrSpec("profile", _G, _choice_parser(PROFILES), None, "execution profile"),
    AttrSpec("stack.child_dotfile", _GN, _string, "", "child pipeline for a manager loop"),
    AttrSpec("stack.child_workdir", _GN, _string, "", "working directory of the child"),
    AttrSpec("secrets", _G, _string, "", "more variables whose values are redacted"),
    AttrSpec("rankdir", _G, _choice_parser(("TB", "LR", "BT", "RL")), "TB", "layout direction"),
    AttrSpec("notify", _G, _webhook, "", "webhook URL the run notifies (--notify)"),
    AttrSpec("notify_on", _G, _string, "", "events to notify, e.g. gate_waiting,run_failed"),
    AttrSpec("notify_format", _G, _choice_parser(("json", "slack")), "json", "json or slack"),
    # graph and node
    AttrSpec("retry_target", _GN, _string, "", "where to go when failing for good"),
    AttrSpec("fallback_retry_target", _GN, _string, "", "second choice of retry_target"),
    AttrSpec("tool_hooks.pre", _GN, _string, "", "shell command before each tool call"),
    AttrSpec("tool_hooks.post", _GN, _string, "", "shell command after each tool call"),
    AttrSpec("workdir", _GN, _string, "", "working directory of agent and tool steps"),
    AttrSpec("mcp", _GN, parse_mcp_servers, (), "MCP servers whose tools the agent gets"),
    AttrSpec("mcp_allow", _GN, parse_mcp_tools, (), "MCP tools offered (mcp__NAME__TOOL globs)"),
    AttrSpec("mcp_deny", _GN, parse_mcp_tools, (), "MCP tools withheld (mcp__NAME__TOOL globs)"),
    AttrSpec(
        "backend",
        _GN,
        _backend,
        "",
        "what answers a codergen node: llm, simulate, an agent CLI or acp:NAME",
    ),
    AttrSpec(
        "acp_permissions",
        _GN,
        _choice_parser(ACP_PERMISSIONS),
        "allow_edits",
        "what an ACP agent may do: deny, allow_read, allow_edits, ask or allow_all",
    ),
    AttrSpec("env", _GN, _choice_parser(ENV_MODES), "core", "variables commands inherit"),
    AttrSpec("env_allow", _GN, parse_patterns, "", "variable globs commands also get"),
    AttrSpec("env_deny", _GN, parse_patterns, "", "variable globs commands never get"),
    AttrSpec(
        "sandbox", _GN, _choice_parser(SANDBOX_MODES), "auto", "auto, bwrap, none, docker, podman"
    ),
    AttrSpec("image", _GN, _string, "", "container image of sandbox=docker or podman"),
    AttrSpec("network", _GN, parse_network, False, "sandboxed commands' network: on, off or hosts"),
    AttrSpec("writable", _GN, parse_paths, "", "extra writable paths for the sandbox"),
    AttrSpec("workspace", _G, _choice_parser(WORKSPACE_MODES), "", "worktree, snapshot or none"),
    AttrSpec("workspace_setup", _G, _string, "", "command run once in a new run worktree"),
    AttrSpec("workspace_link", _G, parse_paths, "", "ignored paths linked into the worktree"),
    # node
    AttrSpec("shape", _N, _string, "box", "Graphviz shape; picks the handler"),
    AttrSpec("type", _N, _string, "", "explicit handler type"),
    AttrSpec("prompt", _N, _string, "", "instruction for the stage"),
    AttrSpec("max_retries", _N, _nonneg, None, "extra attempts after the first"),
    AttrSpec("goal_gate", _N, parse_bool, False, "must succeed before the pipeline exits"),
    AttrSpec("class", _N, _string, "", "comma-separated stylesheet classes"),
    AttrSpec("timeout", _N, parse_duration, None, "time limit of one node attempt"),
    AttrSpec("llm_model", _GN, _string, "", "model id (on the graph: every node's default)"),
    AttrSpec("llm_provider", _GN, _string, "", "provider key (on the graph: the default)"),
    AttrSpec("reasoning_effort", _N, _choice_parser(("low", "medium", "high")), "high", ""),
    AttrSpec(
        "tool_profile",
        _N,
        _choice_parser(TOOL_PROFILES),
        None,
        "agent tool set: openai, anthropic, gemini or default "
        "(else the model family's, else the provider's)",
    ),
    AttrSpec("context_window", _N, _positive, None, "model context size in tokens"),
    AttrSpec("auto_status", _N, parse_bool, False, "SUCCESS when the handler writes none"),
    AttrSpec("allow_partial", _N, parse_bool, False, "accept PARTIAL_SUCCESS at the end"),
    AttrSpec("max_turns", _N, parse_max_turns, None, "turn budget (1..500 or auto)"),
    AttrSpec("sprint_limit", _N, _nonneg, None, "reflection every N work turns (0 = off)"),
    AttrSpec("max_visits", _N, _positive, None, "how often the node may be entered"),
    AttrSpec(
        "on_turn_limit",
        _N,
        _choice_parser(("fail", "partial_success", "retry")),
        "fail",
        "status when the turn budget runs out",
    ),
    AttrSpec("tool_command", _N, _string, "", "shell command of a tool node"),
    AttrSpec(
        "join_policy",
        _N,
        _choice_parser(("wait_all", "first_success")),
        "wait_all",
        "when a parallel fan-out is done",
    ),
    AttrSpec("max_parallel", _N, _positive, 16, "branches running at once"),
    AttrSpec(
        "merge",
        _N,
        _choice_parser(MERGE_POLICIES),
        "all",
        "which branches' file changes a fan-in merges: all, selected or none",
    ),
    AttrSpec(
        "resources",
        _N,
        _string,
        "",
        "what a branch asks of a Ray worker: cpu=4,gpu=1 or a custom resource",
    ),
    AttrSpec("human.default_choice", _GN, _string, "", "choice a gate takes by default"),
    AttrSpec("human.timeout", _N, parse_duration, None, "how long a human gate waits"),
    AttrSpec("human.show", _N, _string, "", "file shown with a human gate's question"),
    AttrSpec(
        "manager.poll_interval",
        _N,
        parse_interval,
        45.0,
        "manager loop poll interval (0s: a cycle at every step of the child)",
    ),
    AttrSpec("manager.max_cycles", _N, _positive, 1000, "manager loop cycles"),
    AttrSpec("manager.stop_condition", _N, _string, "", "manager loop stop condition"),
    AttrSpec("manager.actions", _N, _string, "observe,wait", "manager loop actions"),
    AttrSpec("stack.child_autostart", _N, parse_bool, True, "start the child pipeline"),
    AttrSpec("dot_file", _N, _string, "", "pipeline file a sub-pipeline node runs inline"),
    AttrSpec(
        "simulate",
        _N,
        _string,
        "",
        "simulate backend: statuses per execution, e.g. fail,fail,success (last repeats)",
    ),
    # node and edge
    AttrSpec("fidelity", _NE, _fidelity, "", "context fidelity mode"),
    AttrSpec("thread_id", _ALL, _string, "", "conversation shared under full fidelity"),
    # edge
    AttrSpec("condition", _E, _string, "", "guard expression"),
    AttrSpec("weight", _E, parse_weight, 0, "priority among eligible edges (a number)"),
    AttrSpec("loop_restart", _E, parse_bool, False, "restart the run from the target"),
    # everywhere
    AttrSpec("label", _ALL, _string, "", "display name / routing key"),
]

#: Graphviz presentation attributes: accepted anywhere, never interpreted.
PRESENTATION_ATTRIBUTES = frozenset(
    """arrowhead arrowsize arrowtail bgcolor center color colorscheme comment compound
    concentrate constraint dir fillcolor fixedsize fontcolor fontname fontsize group headlabel
    height labelangle labeldistance labelfloat labelfontcolor labelfontname labelfontsize
    labeljust labelloc layout margin minlen newrank nodesep ordering orientation pad penwidth
    peripheries rank ranksep ratio regular rotate samehead sametail size sides skew splines
    style taillabel tooltip URL width xlabel""".split()  # noqa: SIM905
)

SPECS: dict[str, AttrSpec] = {spec.name: spec for spec in _SPECS}


def spec_for(name: str, scope: Scope) -> AttrSpec | None:
    """The spec of attribute ``name`` in ``scope``, or None when it is not ours there."""
    spec = SPECS.get(name)
    if spec is None or scope not in spec.scopes:
        return None
    return spec


def known_names(scope: Scope) -> list[str]:
    """Every attribute name understood in ``scope`` (for did-you-mean suggestions)."""
    return sorted(n for n, s in SPECS.items() if scope in s.scopes)


#: Typed values already parsed, by (name, scope, raw text): the same few texts
#: (``max_visits=3``, ``timeout="5m"``) recur on thousands of nodes.
_TYPED: dict[tuple[str, str, str | None], Any] = {}
_TYPED_LIMIT = 1 << 16


def typed_value(name: str, scope: Scope, raw: str | None) -> Any:
    """The typed value of ``raw`` (default when absent or invalid; raw text if unknown)."""
    key = (name, scope, raw)
    value = _TYPED.get(key, _TYPED)
    if value is not _TYPED:
        return value
    spec = spec_for(name, scope)
    if raw is not None and (spec is None or spec.parse is _string):
        return raw  # not kept: the text itself is the value
    if spec is None:
        value = None
    elif raw is None:
        value = spec.default
    else:
        try:
            value = spec.coerce(raw)
        except ValueError:
            value = spec.default
    if len(_TYPED) < _TYPED_LIMIT:  # every default and parsed value is an immutable scalar
        _TYPED[key] = value
    return value


SHAPE_TO_TYPE: dict[str, str] = {
    "Mdiamond": "start",
    "Msquare": "exit",
    "box": "codergen",
    "hexagon": "wait.human",
    "diamond": "conditional",
    "component": "parallel",
    "tripleoctagon": "parallel.fan_in",
    "parallelogram": "tool",
    "house": "stack.manager_loop",
    "folder": "subgraph",
}
