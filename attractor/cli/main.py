"""The ``attractor`` command group.

Subcommands live in their own modules and are imported only when invoked, so
``attractor lint`` never pays for importing the engine or a model SDK.
"""

from __future__ import annotations

import importlib
import sys

import click

from attractor.version import __version__

#: command name -> "module:attribute" of its click command.
_COMMANDS = {
    "lint": "attractor.cli.lint_cmd:lint",
    "run": "attractor.cli.run_cmd:run",
    "resume": "attractor.cli.run_cmd:resume",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="attractor")
def cli() -> None:
    """Run multi-stage AI and coding-agent workflows written as Graphviz DOT graphs."""


def main() -> None:
    """Console-script entry point."""
    sys.exit(cli.main(standalone_mode=True))
