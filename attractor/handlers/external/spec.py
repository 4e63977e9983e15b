"""How attractor drives one agent CLI: its command line, its stream, its login check."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from attractor.handlers.external.mcp import CliServers
from attractor.handlers.external.steps import StreamParser
from attractor.valueclass import frozen


@frozen
class Invocation:
    """What one node attempt asks of the CLI (the prompt goes to its stdin)."""

    max_turns: int
    model: str | None = None
    reasoning_effort: str | None = None
    #: attractor's sandbox is on for the node: tell the CLI to keep its own
    #: commands' writes in the workspace (plus ``writable``) and the network
    #: per ``network`` (see docs/agent-clis.md, "Boundary").
    sandboxed: bool = False
    network: bool = False
    writable: tuple[Path, ...] = ()
    #: ``network="a.com,b.org"``: only these hosts (where the CLI's sandbox can filter).
    hosts: tuple[str, ...] = ()
    #: The node's MCP servers, for the CLI's own configuration.
    mcp: CliServers = CliServers()


@frozen
class AgentCli:
    """One external agent CLI.

    Attributes:
        name: The backend name a graph uses (``claude-code``).
        executable: The program looked up on PATH.
        package: The npm package that installs it.
        checked_version: The version whose flags and stream format were checked.
        build_argv: The command line (``argv[0]`` is ``executable``) for one attempt.
        parser: Makes a fresh stream parser for one attempt.
        turn_flag: The CLI enforces ``max_turns`` itself; otherwise attractor
            counts turns in the stream and stops the CLI at the limit.
        status_command: Arguments of the CLI's own login check (exit 0: logged in).
        credential_env: Variables that are credentials on their own.
        login_file: A file whose presence shows a login (relative to HOME), when
            the CLI has no status command.
        login_hint: What to do when not logged in.
        auth_exit_code: The exit code the CLI uses for "not logged in", if any.
        passed_env: Variables (globs) the CLI itself needs to reach its
            provider: its credentials, endpoint and config-dir variables. They
            reach the CLI's process whatever the node's ``env`` policy says
            (``env_deny`` still removes them); no other secret does.
        command_sandbox: What the CLI's own flags enforce on its commands when
            attractor's sandbox is on for the node ('' when nothing can).
        mcp_env: See the attribute.
        sandbox_needs: Programs that sandbox needs on PATH (Claude Code's needs
            bubblewrap and socat): without them its commands run unsandboxed
            under ``sandbox=auto``, and ``--sandbox required`` refuses the node.
        filters_hosts: The CLI's sandbox takes an allow-list of hosts
            (``network="a.com,b.org"``); without it such a node's commands get no network.
    """

    name: str
    executable: str
    package: str
    checked_version: str
    build_argv: Callable[[Invocation], list[str]]
    parser: Callable[[], StreamParser]
    turn_flag: bool
    login_hint: str
    status_command: tuple[str, ...] = ()
    credential_env: tuple[str, ...] = ()
    login_file: Callable[[Path], bool] | None = None
    auth_exit_code: int | None = None
    passed_env: tuple[str, ...] = ()
    command_sandbox: str = ""
    sandbox_needs: tuple[str, ...] = ()
    filters_hosts: bool = False
    #: Variables that give the CLI the node's MCP servers (a settings file it
    #: writes in the stage directory), when its flags cannot.
    mcp_env: Callable[[CliServers, Path], dict[str, str]] | None = None

    def missing_for_sandbox(self) -> list[str]:
        """What :attr:`sandbox_needs` lacks on this machine's PATH."""
        return [tool for tool in self.sandbox_needs if shutil.which(tool) is None]

    def argv(self, invocation: Invocation) -> list[str]:
        return self.build_argv(invocation)
