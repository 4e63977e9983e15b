"""The whole attractor exception hierarchy, and the lint Diagnostic it carries.

This module sits at the bottom of the package and imports nothing of ours, so
every layer can raise these errors (see docs/architecture.md).

Every error a user can see derives from :class:`AttractorError`. The CLI catches
that base class at its edge, prints ``str(error)`` as one line and exits with
``error.exit_code``; nothing below it ever reaches a user as a traceback.

::

    AttractorError                      exit 1 unless stated
    ├── UsageError                      exit 2: bad flag, env var or config value
    │   ├── SettingError                a setting from a named source is invalid
    │   └── ConfigTableError            a config file's table ([mcp_servers.NAME]) is wrong
    ├── PipelineError                   exit 2: the pipeline file cannot be used
    │   ├── PipelineSyntaxError         the DOT text does not parse (file:line:col)
    │   ├── ConditionError              an edge condition does not parse (column)
    │   ├── StylesheetError             a model stylesheet does not parse (line:col)
    │   └── ValidationError             lint found error-severity diagnostics
    ├── InputFileError                  exit 2: a file to read is unusable (fileio)
    │   └── PipelinePathError           a path a pipeline names is refused (outside the roots...)
    ├── RunError                        a run cannot start, continue or resume
    │   ├── CheckpointError             checkpoint.json is missing or unreadable
    │   ├── WorkspaceError              a git operation on the run's workspace failed
    │   └── DiskFullError               exit 74: the run directory's disk is full
    ├── ToolError                       an agent tool refused or failed its call
    │   └── PathEscapeError             a path resolves outside the working dir
    ├── McpServerError                  an MCP server failed its step (start, answer, exit)
    └── LLMError                        a model backend failed
        ├── ProviderNotInstalledError   the provider's SDK extra is missing
        ├── MissingCredentialsError     the API key variable is not set
        └── ProviderError               the provider answered with an error
            └── RetryableProviderError  429, 5xx, timeout, connection error
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from attractor.valueclass import frozen

#: ``style`` is a note about spelling (an alias of a canonical name): it changes
#: nothing at run time, and only ``attractor lint --strict`` counts it.
Severity = Literal["error", "warning", "info", "style"]

#: The generated reference of every lint rule, one anchor per rule id.
RULES_DOC = "docs/rules.md"


@frozen
class Diagnostic:
    """One finding of a lint rule (or a syntax error, with rule ``syntax``)."""

    rule: str
    severity: Severity
    message: str
    file: str
    line: int
    column: int
    node: str | None = None
    edge: tuple[str, str] | None = None
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``attractor lint --format json`` element (exactly these keys)."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "node": self.node,
            "edge": list(self.edge) if self.edge is not None else None,
            "fix": self.fix,
            "docs": self.docs,
        }

    def format_text(self) -> str:
        """``FILE:LINE:COL: SEVERITY RULE: MESSAGE`` plus a ``fix:`` line when known.

        An unreadable file (line 0) prints as ``FILE: SEVERITY RULE: MESSAGE``.
        """
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        text = f"{where}: {self.severity} {self.rule}: {self.message}"
        if self.fix:
            text += f"\n    fix: {self.fix}"
        return text

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    @property
    def docs(self) -> str:
        """Where the rule is documented: its anchor in docs/rules.md."""
        return f"{RULES_DOC}#{self.rule}"


class AttractorError(Exception):
    """Base class of every error attractor raises on purpose."""

    exit_code: int = 1


class UsageError(AttractorError):
    """The user asked for something that cannot work (bad flag or setting)."""

    exit_code = 2


class SettingError(UsageError):
    """A setting value from a named source is invalid.

    The message reads ``SOURCE="VALUE": what is expected``, for example
    ``ATTRACTOR_TIMEOUT="soon": expected a duration like 90s, 5m or 1h30m``.
    """

    def __init__(self, source: str, value: object, expected: str) -> None:
        self.source = source
        self.value = value
        self.expected = expected
        super().__init__(f'{source}="{value}": {expected}')


class ConfigTableError(UsageError):
    """A table of the config file is not what it should be.

    ``table`` is its dotted name (``mcp_servers.docs``) and ``key`` the key at
    fault (None: the table as a whole), so lint can point at the line.
    """

    def __init__(self, message: str, *, table: str, key: str | None = None) -> None:
        self.table = table
        self.key = key
        super().__init__(message)


class PipelineError(AttractorError):
    """The pipeline file cannot be used as written."""

    exit_code = 2


class PipelineSyntaxError(PipelineError):
    """The DOT text does not parse; carries the position and what was expected."""

    def __init__(self, message: str, *, file: str, line: int, column: int) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        super().__init__(f"{file}:{line}:{column}: {message}")


class ConditionError(PipelineError):
    """An edge condition expression does not parse; ``column`` is 1-based in ``text``."""

    def __init__(self, message: str, *, text: str, column: int) -> None:
        self.message = message
        self.text = text
        self.column = column
        super().__init__(f"condition {text!r}, column {column}: {message}")


class StylesheetError(PipelineError):
    """A model stylesheet does not parse; ``line``/``column`` are 1-based in ``text``."""

    def __init__(self, message: str, *, line: int, column: int) -> None:
        self.message = message
        self.line = line
        self.column = column
        super().__init__(f"stylesheet line {line}, column {column}: {message}")


class ValidationError(PipelineError):
    """Lint reported error-severity diagnostics, so the pipeline will not run."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.severity == "error"]
        super().__init__(f"pipeline has {len(errors)} lint error(s); fix them and run again")


InputProblem = Literal["os", "not_regular", "too_large", "not_utf8", "too_deep", "outside"]


class InputFileError(AttractorError):
    """A file attractor reads cannot be used: see :func:`attractor.fileio.reads.read_bounded`.

    ``kind`` says why: ``os`` (open or read failed; ``errno`` is set), ``not_regular``
    (a FIFO, device, directory...), ``too_large`` (over ``limit`` bytes),
    ``not_utf8`` or ``too_deep`` (JSON nested deeper than ``limit`` levels).
    The message reads ``PATH: REASON; HINT``; callers that know better what to
    do turn it into their own error with ``reason`` and their own hint.
    """

    exit_code = 2

    def __init__(
        self,
        path: str,
        reason: str,
        hint: str,
        *,
        kind: InputProblem,
        limit: int | None = None,
        errno: int | None = None,
    ) -> None:
        self.path = path
        self.reason = reason
        self.hint = hint
        self.kind = kind
        self.limit = limit
        self.errno = errno
        super().__init__(f"{path}: {reason}; {hint}")


class PipelinePathError(InputFileError):
    """A path a pipeline names (``human.show``, ``stack.child_dotfile``, ``workdir``) is refused.

    Such a path must resolve, symbolic links followed, inside the places a run
    may read (``kind`` outside otherwise) and name a regular file under a size
    limit (a directory for ``workdir``). The message names the attribute, the
    node and what to do: ``human.show of node review: ../secret: ...; hint``.
    """

    def __init__(
        self,
        path: str,
        reason: str,
        hint: str,
        *,
        kind: InputProblem,
        attribute: str,
        node: str | None,
        limit: int | None = None,
        errno: int | None = None,
    ) -> None:
        super().__init__(path, reason, hint, kind=kind, limit=limit, errno=errno)
        self.attribute = attribute
        self.node = node
        where = f"{attribute} of node {node}" if node else f"graph attribute {attribute}"
        self.args = (f"{where}: {path}: {reason}; {hint}",)

    def __str__(self) -> str:
        return str(self.args[0])


class RunError(AttractorError):
    """A run cannot start, continue or resume."""


class WorkspaceError(RunError):
    """A git operation on the run's workspace failed (attractor.workspace).

    ``command`` is the git command that failed, ``detail`` what git said.
    """

    def __init__(self, message: str, command: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.command = command
        self.detail = detail


class CheckpointError(RunError):
    """checkpoint.json is missing, unreadable or from an incompatible version."""

    exit_code = 2


class DiskFullError(RunError):
    """The run directory cannot be written: no space (or quota) left on its disk.

    The run stopped where its last checkpoint says; the message says how to go
    on once there is space (resume it, or run it again if it never started).
    Exit 74 (``EX_IOERR``): neither the pipeline's failure (1) nor a usage error (2).
    """

    exit_code = 74


class ToolError(AttractorError):
    """An agent tool refused or failed its call; the text goes back to the model."""


class PathEscapeError(ToolError):
    """A tool path resolves outside the working directory."""

    def __init__(self, path: str, workdir: str) -> None:
        self.path = path
        self.workdir = workdir
        super().__init__(
            f"path {path!r} resolves outside the working directory; "
            "use a path relative to the working directory"
        )


class McpServerError(AttractorError):
    """An MCP server a step uses failed: it did not start, answer in time, speak MCP,
    or it exited. Unlike a tool's own error, this ends the step (a failure of it)."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server {server}: {reason}")


class LLMError(AttractorError):
    """A model backend failed."""


class ProviderNotInstalledError(LLMError, UsageError):
    """The SDK for a provider is not installed."""

    def __init__(self, provider: str, extra: str) -> None:
        self.provider = provider
        self.extra = extra
        super().__init__(f"the {provider} provider needs its SDK: pip install 'attractor[{extra}]'")


class MissingCredentialsError(LLMError, UsageError):
    """The API key for a provider is not configured."""

    def __init__(self, provider: str, variable: str) -> None:
        self.provider = provider
        self.variable = variable
        super().__init__(
            f"the {provider} provider needs an API key: set {variable} in the environment"
        )


class ProviderError(LLMError):
    """The provider answered with an error that retrying will not fix."""

    def __init__(
        self,
        reason: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
    ) -> None:
        self.reason = reason
        self.provider = provider
        self.model = model
        self.status = status
        where = f"{provider} model {model}"
        code = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{where}{code}: {reason}")


class RetryableProviderError(ProviderError):
    """A transient provider failure (429, 5xx, timeout, connection error)."""

    def __init__(
        self,
        reason: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(reason, provider=provider, model=model, status=status)
        self.retry_after = retry_after
