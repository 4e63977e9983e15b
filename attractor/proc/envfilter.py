"""Which of the engine's environment variables a step's command may see.

A policy is one of three modes plus two lists of glob patterns (matched on the
variable's name, case-insensitively):

- ``inherit``: every variable, secrets included (an explicit opt-out);
- ``core`` (the default): the variables a command needs to behave as in the
  user's shell and to find its tools (:data:`CORE_VARIABLES`), minus anything
  shaped like a secret (:data:`SECRET_PATTERNS`);
- ``none``: no variable at all.

``env_allow`` patterns keep more variables, even secret-shaped ones: that is
how a user hands a command a secret on purpose (``env_allow=DEPLOY_TOKEN``).
``env_deny`` patterns drop variables whatever else says, allow included. The
engine's own per-step variables (``ATTRACTOR_STAGE_DIR``, ``ATTRACTOR_NODE``,
hook variables) are added after filtering, so every mode keeps them.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import field

from attractor.redact import glob_regex
from attractor.valueclass import frozen

ENV_POLICIES = ("inherit", "core", "none")

#: Names shaped like secrets: dropped by ``core`` unless ``env_allow`` names them.
SECRET_PATTERNS = (
    "*_API_KEY",
    "*_APIKEY",
    "API_KEY",
    "*_SECRET*",
    "SECRET*",
    "*_TOKEN*",
    "TOKEN",
    "*_PASSWORD*",
    "PASSWORD",
    "*_PASSWD*",
    "*_CREDENTIAL*",
    "*_PRIVATE_KEY*",
    "*_ACCESS_KEY*",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
)

#: What ``core`` keeps: the shell basics, the run's own ATTRACTOR_* variables, and
#: what language toolchains read to find themselves (so ``pytest`` in a virtual
#: environment, ``go test`` or ``cargo test`` still work in a tool node).
CORE_VARIABLES = (
    # the shell basics
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PWD",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TMPDIR",
    "TZ",
    "HOSTNAME",
    # the run's own settings and variables
    "ATTRACTOR_*",
    # CI markers tools change behaviour on
    "CI",
    "GITHUB_ACTIONS",
    # toolchains: Python, Node, Go, Rust, Java, Ruby, C
    "VIRTUAL_ENV",
    "CONDA_*",
    "PYTHON*",
    "PIP_*",
    "UV_*",
    "NODE_PATH",
    "NODE_OPTIONS",
    "NVM_*",
    "NPM_CONFIG_*",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "JAVA_HOME",
    "GEM_HOME",
    "GEM_PATH",
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "LDFLAGS",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    # where programs keep their files
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
)


def _matcher(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One case-insensitive regex for every glob in ``patterns`` (None: no pattern)."""
    return _compiled(tuple(patterns))


@functools.lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    # A policy is built for every step (and for every node at preflight): the same
    # few pattern lists, translated once, not once per node.
    return glob_regex(patterns)


def split_patterns(text: str) -> tuple[str, ...]:
    """``"A_*, B"`` -> ``("A_*", "B")``: patterns are separated by commas or spaces."""
    return tuple(p for p in re.split(r"[,\s]+", text) if p)


def check_pattern(pattern: str) -> str:
    """``pattern`` when it is a usable variable-name glob, else ValueError."""
    if not re.fullmatch(r"[A-Za-z0-9_*?\[\]!-]+", pattern):
        raise ValueError(
            f"{pattern!r} is not a variable-name pattern (letters, digits, _ and the globs * ? [])"
        )
    return pattern


@frozen
class EnvPolicy:
    """Which variables a command inherits: a mode plus allow and deny patterns."""

    mode: str = "core"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    _compiled: tuple[re.Pattern[str] | None, ...] = field(
        default=(), init=False, repr=False, compare=False
    )
    #: Each name's answer once worked out: a step runs its commands with the same
    #: variables, and four pattern matches per variable were most of :meth:`apply`.
    _answers: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.mode not in ENV_POLICIES:
            raise ValueError("expected one of " + ", ".join(ENV_POLICIES))
        compiled = (
            _matcher(CORE_VARIABLES),
            _matcher(SECRET_PATTERNS),
            _matcher(self.allow),
            _matcher(self.deny),
        )
        object.__setattr__(self, "_compiled", compiled)

    def keeps(self, name: str) -> bool:
        """Whether the variable ``name`` reaches the command."""
        answer = self._answers.get(name)
        if answer is None:
            answer = self._answers[name] = self._decide(name)
        return answer

    def _decide(self, name: str) -> bool:
        core, secret, allow, deny = self._compiled
        upper = name.upper()
        if deny is not None and deny.match(upper):
            return False
        if allow is not None and allow.match(upper):
            return True
        if self.mode == "inherit":
            return True
        if self.mode == "none":
            return False
        assert core is not None and secret is not None
        return bool(core.match(upper)) and not secret.match(upper)

    def apply(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The variables of ``environ`` this policy keeps, as a new dict."""
        if self.mode == "inherit" and not self.deny:
            return dict(environ)
        return {k: v for k, v in environ.items() if self.keeps(k)}

    def dropped(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The names this policy removes from ``environ`` (default: the engine's)."""
        source = os.environ if environ is None else environ
        return sorted(k for k in source if not self.keeps(k))

    def declared_secrets(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Secret-shaped variables passed on purpose through ``env_allow``: name -> value.

        Their values reach the command; whatever shows output should hide them.
        """
        source = os.environ if environ is None else environ
        _core, secret, allow, _deny = self._compiled
        if allow is None or secret is None:
            return {}
        return {
            k: v
            for k, v in source.items()
            if allow.match(k.upper()) and secret.match(k.upper()) and self.keeps(k)
        }

    def describe(self) -> str:
        """``env=core`` plus its patterns, for ``--dry-run``."""
        text = f"env={self.mode}"
        if self.allow:
            text += " allow=" + ",".join(self.allow)
        if self.deny:
            text += " deny=" + ",".join(self.deny)
        return text
