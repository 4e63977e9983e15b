"""Prompt-file rules: ``prompt="@FILE"`` names a file that can be read."""

from __future__ import annotations

from attractor.dot.graph import Graph
from attractor.errors import Diagnostic
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()


@rule("prompt_file", "error")
def prompt_file(graph: Graph) -> list[Diagnostic]:
    """``prompt="@path"`` names a readable file; ``tool_command`` does not take ``@``.

    A prompt that starts with ``@`` is read from that file, relative to the
    pipeline's file (else to the working directory, as a sub-pipeline's
    ``dot_file``) and inside the pipeline's folder or the working directory:
    a regular file of at most 1 MiB. ``$goal`` is expanded in its text as in
    an inline prompt, and a run keeps a copy of it beside its copy of the
    pipeline, so a resume reads the same text. A file that cannot be read is
    an error here, so the run never sends the literal ``@path`` to the model.

    ``tool_command`` is a shell command and reads no file: for a script, write
    ``tool_command="sh scripts/check.sh"`` (it runs in the working directory).
    A ``tool_command`` that starts with ``@`` is an error.
    """
    found = [
        Diagnostic(
            "prompt_file",
            "error",
            f'prompt file "{bad.path}" of {bad.node}: {bad.reason}',
            bad.pos.file,
            bad.pos.line,
            bad.pos.column,
            bad.node,
            None,
            bad.fix,
        )
        for bad in graph.prompt_errors
    ]
    for node in facts(graph).nodes:
        command = node.attrs.get("tool_command", "")
        if command.startswith("@"):
            script = command[1:].strip() or "script.sh"
            found.append(
                at(
                    "prompt_file",
                    "error",
                    node,
                    f'tool_command="{command}" of {node.id}: a tool command is a shell '
                    "command and reads no file; the shell would run a program named "
                    f"{command.split()[0]}",
                    key="tool_command",
                    fix=f'write tool_command="sh {script}"',
                )
            )
    return found
