"""Prompt files: ``prompt="@prompts/plan.md"`` reads the prompt from a file.

The path is relative to the pipeline's file (else to the working directory,
where engines that write paths from the project's root find them: the same
places as a sub-pipeline's ``dot_file``), and must stay inside the pipeline's
folder or the working directory (symbolic links are followed, then checked);
``@../shared/plan.md`` is fine when that file is in the project the run works
in. The file must be a regular file
of at most :data:`PROMPT_FILE_LIMIT` bytes. It is read once, when the pipeline
is loaded, by :class:`PromptFiles` (a transform that runs before ``$goal``
expansion, so ``$goal`` and the rest of the usual expansion apply to the
file's text): lint, ``--dry-run`` and the run all see the same text. A file
that cannot be read is a ``prompt_file`` lint error at the ``prompt``
attribute, so the run never starts with the literal ``@path`` as its prompt.

A run keeps a copy of every prompt file beside its copy of the pipeline (at the
same relative path, each leading ``..`` written ``_up``: see
:func:`snapshot_path`), so a resume reads the prompts the run started with.

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
        where, roots = _locate(graph, path, folder)
        try:
            text = read_confined_text(
                where, roots, PROMPT_FILE_LIMIT, attribute="prompt", node=node.id
            )
        except PipelinePathError as error:
            graph.prompt_errors.append(
                PromptFileError(node.id, path, error.reason, _fix(error), pos)
            )
            return
        node.set("prompt", text, pos)
        graph.prompt_files[node.id] = PromptFile(path, text, str(where.resolve()))


def _locate(graph: Graph, path: str, folder: Path) -> tuple[Path, tuple[Path, ...]]:
    """The file ``path`` names and the folders it must stay in.

    A run's copy of a pipeline (``include_folder`` says where the original
    was) reads the copies the run made, inside the run directory. Otherwise
    the path starts beside the pipeline, else in the working directory (as a
    sub-pipeline's does); either may hold it.
    """
    if graph.include_folder is not None:
        copy = snapshot_path(path)
        return folder / (copy if copy is not None else path), (folder,)
    cwd = Path.cwd()
    beside = folder / path
    if beside.exists() or not (cwd / path).exists():
        return beside, (folder, cwd)
    return cwd / path, (folder, cwd)


def _fix(error: PipelinePathError) -> str:
    kind = error.kind
    if kind == "outside":
        return "keep prompt files inside the pipeline's folder or the working directory"
    if kind == "too_large":
        return f"keep a prompt file under {PROMPT_FILE_LIMIT // MiB} MiB"
    return "check the path: it starts at the pipeline file's folder (else the working directory)"


#: How a leading ``..`` of a prompt path is written in a run's copy.
UP = "_up"


def snapshot_path(path: str) -> str | None:
    """Where a run keeps its copy of prompt file ``path``, relative to the run
    directory: the path itself, each leading ``..`` written ``_up`` (so that
    ``../shared/plan.md`` is kept at ``_up/shared/plan.md``, inside the run
    directory); None for an absolute path."""
    norm = os.path.normpath(path)
    if os.path.isabs(norm):
        return None
    parts = norm.split(os.sep)
    ups = 0
    while ups < len(parts) and parts[ups] == "..":
        ups += 1
    if ups == len(parts):
        return None  # ``..`` alone names a folder
    return os.path.join(*([UP] * ups), *parts[ups:])
