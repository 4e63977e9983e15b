"""Prompt files: ``prompt="@prompts/plan.md"`` reads the prompt from a file.

The path is relative to the pipeline's file and must stay inside its folder
(symbolic links are followed, then checked); the file must be a regular file
of at most :data:`PROMPT_FILE_LIMIT` bytes. It is read once, when the pipeline
is loaded, by :class:`PromptFiles` (a transform that runs before ``$goal``
expansion, so ``$goal`` and the rest of the usual expansion apply to the
file's text): lint, ``--dry-run`` and the run all see the same text. A file
that cannot be read is a ``prompt_file`` lint error at the ``prompt``
attribute, so the run never starts with the literal ``@path`` as its prompt.

A run keeps a copy of every prompt file beside its copy of the pipeline (at the
same relative path), so a resume reads the prompts the run started with.

``tool_command`` does not read files this way: a tool command is a shell
command, and ``tool_command="sh scripts/check.sh"`` already runs a script (lint
says so for a ``tool_command`` that starts with ``@``).
"""

from __future__ import annotations

import os
from pathlib import Path

from attractor.dot.graph import Graph, Node
from attractor.dot.prompt_file import PromptFile, PromptFileError
from attractor.errors import PipelinePathError
from attractor.fileio.confine import read_confined_text
from attractor.fileio.reads import MiB

PROMPT_FILE_LIMIT = MiB


def prompt_reference(value: str | None) -> str | None:
    """The path of ``@path``, else None (an ``@`` alone, or no ``@``, is plain text)."""
    if not value or not value.startswith("@"):
        return None
    path = value[1:].strip()
    return path or None


def pipeline_folder(graph: Graph) -> Path | None:
    """The folder relative prompt paths start at (set by ``prepare`` from the file
    it read); None for a pipeline given as text."""
    return graph.folder


class PromptFiles:
    """Replace every ``prompt="@path"`` with the text of that file."""

    def apply(self, graph: Graph) -> Graph:
        folder = pipeline_folder(graph)
        for node in graph.nodes():
            path = prompt_reference(node.attrs.get("prompt"))
            if path is not None:
                self._read(graph, node, path, folder)
        return graph

    @staticmethod
    def _read(graph: Graph, node: Node, path: str, folder: Path | None) -> None:
        pos = node.pos_of("prompt") or node.pos
        if folder is None:
            graph.prompt_errors.append(
                PromptFileError(
                    node.id,
                    path,
                    "a prompt file is read relative to the pipeline's file, "
                    "and this pipeline was given as text",
                    "write the prompt inline, or load the pipeline from a file",
                    pos,
                )
            )
            return
        try:
            text = read_confined_text(
                folder / path, (folder,), PROMPT_FILE_LIMIT, attribute="prompt", node=node.id
            )
        except PipelinePathError as error:
            graph.prompt_errors.append(
                PromptFileError(node.id, path, error.reason, _fix(error), pos)
            )
            return
        node.set("prompt", text, pos)
        graph.prompt_files[node.id] = PromptFile(path, text)


def _fix(error: PipelinePathError) -> str:
    kind = error.kind
    if kind == "outside":
        return "keep prompt files inside the pipeline's folder"
    if kind == "too_large":
        return f"keep a prompt file under {PROMPT_FILE_LIMIT // MiB} MiB"
    return "check the path: it starts at the pipeline file's folder"


def snapshot_path(path: str) -> str | None:
    """Where a run keeps its copy of prompt file ``path``, relative to the run
    directory; None when the path leaves the folder it starts in."""
    norm = os.path.normpath(path)
    if os.path.isabs(norm) or norm == ".." or norm.startswith(".." + os.sep):
        return None
    return norm
