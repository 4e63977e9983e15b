"""The options shared by ``attractor run`` and ``attractor resume``.

Every value is taken as raw text and handed to
:func:`attractor.settings.resolve_settings`, so a bad value reads the same
whichever source it came from (``--max-turns="0": must be an integer from 1 to
500``). Click only parses the command line; it validates nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from attractor.errors import UsageError
from attractor.valueclass import frozen

F = TypeVar("F", bound=Callable[..., Any])


@frozen
class CommonOptions:
    """The parsed, not yet validated, options of one ``run``/``resume`` call."""

    flags: dict[str, str | None]
    config: str | None
    auto_approve: bool
    #: ``--auto-approve=LABEL``: the choice to take at every gate that offers it.
    auto_choice: str | None
    answers: str | None
    context_seed: dict[str, str]
    json: bool
    quiet: bool

    @classmethod
    def from_click(cls, params: dict[str, Any]) -> CommonOptions:
        """Collect the options click parsed; raise UsageError on bad combinations."""
        choice = params.get("auto_approve_choice")
        if choice is not None and not choice.strip():
            raise UsageError("--auto-approve=LABEL: LABEL is empty; name a gate's choice")
        if (params["auto_approve"] or choice) and params["answers"] is not None:
            raise UsageError("--auto-approve and --answers cannot be used together; pick one")
        if params["json"] and params["quiet"]:
            raise UsageError("--json and --quiet cannot be used together; pick one")
        from attractor.settings import FIELD_NAMES  # not for ``--help``

        # Each setting's flag is named after it (--max-turns -> max_turns).
        flags = {name: params.get(name) for name in FIELD_NAMES}
        return cls(
            flags=flags,
            config=params["config"],
            auto_approve=params["auto_approve"] or choice is not None,
            auto_choice=choice,
            answers=params["answers"],
            context_seed=parse_set_pairs(params["set_pairs"]),
            json=params["json"],
            quiet=params["quiet"],
        )


def parse_set_pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    """Turn ``--set KEY=VALUE`` pairs into a context seed; later pairs win."""
    seed: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f'--set="{pair}": expected KEY=VALUE, e.g. --set ticket=ABC-123')
        seed[key.strip()] = value
    return seed


_SETTING_HELP: list[tuple[str, str, str]] = [
    ("--timeout", "D", "Stop the whole run after D (90s, 5m, 1h30m); exit 124."),
    ("--workdir", "DIR", "Working directory of agent and tool steps."),
    ("--profile", "NAME", "Execution profile: smoke, fast, strict or yolo."),
    ("--max-turns", "N", "Hard cap on model requests per node attempt (1-500)."),
    ("--max-total-turns", "N", "Cap on model requests for the whole run."),
    ("--max-total-tokens", "N", "Cap on tokens (input + output) for the whole run."),
    ("--max-cost", "USD", "Cap on the run's model cost in US dollars, e.g. 2.50."),
    ("--max-steps", "N", "Cap on node executions for the run (10000, or 10 per node if more)."),
    (
        "--backend",
        "NAME",
        "simulate, llm, scripted:FILE, claude-code, codex, gemini-cli or acp:NAME.",
    ),
    ("--provider", "NAME", "Model provider (openai, anthropic, gemini)."),
    ("--model", "ID", "Model id."),
    ("--base-url", "URL", "Base URL of an OpenAI-compatible server."),
    (
        "--api-key-env",
        "NAME",
        "Variable holding the key for --base-url (none is sent unless named).",
    ),
    ("--kill-grace", "D", "Wait D between SIGTERM and SIGKILL when stopping commands."),
    ("--shell-timeout-cap", "D", "Longest timeout an agent may give one shell command."),
    ("--executor", "NAME", "Where the run executes: local (default) or ray."),
    ("--ray-address", "ADDR", "Ray cluster to join (auto, ray://HOST:10001); default: start one."),
    ("--env", "POLICY", "Variables commands inherit: core (default), inherit or none."),
    ("--env-allow", "GLOBS", "Variables commands also get, e.g. DEPLOY_TOKEN (comma-separated)."),
    ("--env-deny", "GLOBS", "Variables commands never get (comma-separated globs)."),
    (
        "--sandbox",
        "MODE",
        "auto (default: bwrap when it works), bwrap, none, required, docker or podman.",
    ),
    (
        "--network",
        "on|off|HOSTS",
        "Sandboxed commands' network: on, off (default) or only HOSTS (a.com,b.org).",
    ),
    ("--writable", "PATHS", "Extra writable paths for sandboxed commands (comma-separated)."),
    (
        "--workspace",
        "MODE",
        "worktree (default in a git repository), snapshot (default elsewhere) or none.",
    ),
    ("--workspace-setup", "CMD", "Command run once in a new run worktree (uv sync, npm ci)."),
    (
        "--workspace-link",
        "PATHS",
        "Ignored paths linked into a run worktree (default .venv,venv,node_modules; none).",
    ),
    ("--image", "IMAGE", "Container image of sandbox=docker or podman steps."),
    ("--secrets", "NAMES", "More variables whose values are redacted (DEPLOY_TOKEN,MYCO_*)."),
    ("--notify", "URL", "Webhook to POST the run's events to (JSON; see --notify-on)."),
    (
        "--notify-on",
        "EVENTS",
        "Events to notify (default gate_waiting,run_finished; also run_started, "
        "gate_answered, stage_failed, run_succeeded, run_failed, run_stopped).",
    ),
    ("--notify-format", "FORMAT", "json (default: the documented payload) or slack."),
    ("--notify-secret-env", "NAME", "Variable whose value signs notifications (HMAC-SHA256)."),
    ("--notify-timeout", "D", "Time one notification attempt may take (default 5s)."),
]


class RunCommand(click.Command):
    """A command whose ``--auto-approve`` also takes an attached value.

    ``--auto-approve=LABEL`` names the choice to take; a bare ``--auto-approve``
    stays a flag, so ``run --auto-approve p.dot`` still reads ``p.dot`` as the
    file (a click option with an optional value would swallow it).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rewritten: list[str] = []
        for n, arg in enumerate(args):
            if arg == "--":
                rewritten += args[n:]
                break
            if arg.startswith("--auto-approve="):
                rewritten += ["--auto-approve", "--auto-approve-choice", arg.partition("=")[2]]
            else:
                rewritten.append(arg)
        try:
            return super().parse_args(ctx, rewritten)
        except click.UsageError as err:
            word = _choice_written_apart(args)
            if word is not None and err.message.startswith("Got unexpected extra argument"):
                hint = f"; to take the choice {word} at every gate: --auto-approve={word}"
                raise click.UsageError(err.message + hint, ctx) from None
            raise


def _choice_written_apart(args: list[str]) -> str | None:
    """The word right after a bare ``--auto-approve``, when it is no option."""
    for n, arg in enumerate(args[:-1]):
        if arg == "--auto-approve" and not args[n + 1].startswith("-"):
            return args[n + 1]
    return None


def common_options(*, logs_dir: bool) -> Callable[[F], F]:
    """Decorate a command with the shared options (``--logs-dir`` only for ``run``)."""

    def decorate(func: F) -> F:
        options = [
            click.option("--config", metavar="FILE", help="Config file (default attractor.toml)."),
            click.option(
                "--auto-approve",
                is_flag=True,
                help=(
                    "Answer every human gate without asking: yes to yes/no; at a choice the "
                    "gate's human.default_choice, else its first choice. --auto-approve=LABEL "
                    "takes the choice LABEL wherever a gate offers it."
                ),
            ),
            # --auto-approve=LABEL arrives here (see RunCommand.parse_args).
            click.option("--auto-approve-choice", hidden=True),
            click.option("--answers", metavar="FILE", help="Answers for human gates, one a line."),
            click.option(
                "--set",
                "set_pairs",
                multiple=True,
                metavar="K=V",
                help="Seed a context value (repeatable).",
            ),
            click.option("--json", is_flag=True, help="Print every event as a JSON line."),
            click.option("--quiet", "-q", is_flag=True, help="Print only the final line."),
        ]
        options += [
            click.option(flag, metavar=meta, help=text) for flag, meta, text in _SETTING_HELP
        ]
        if logs_dir:
            options.append(
                click.option(
                    "--logs-dir",
                    metavar="DIR",
                    help="The run directory (default .attractor/runs/{timestamp}-{graph}).",
                )
            )
        for option in reversed(options):
            func = option(func)
        return func

    return decorate
