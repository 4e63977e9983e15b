"""The file operations of an execution environment that sees the host's files.

:class:`HostFiles` is what :class:`~attractor.proc.environment.LocalEnvironment`
(and so the bubblewrap sandbox and the container environment, which inherit it)
answers the file operations of the seam with: each one walks its paths by
descriptor beneath the environment's ``workdir`` (:mod:`attractor.proc.hostfs.beneath`),
so it reads and writes exactly what a command of the step may, the workdir, and
nothing above it. The answers are the text the agent's tools hand the model.

Globbing, searching and patching are imported by the operation that needs them:
every step has an environment, but only an agent's tools use them (they bring
``re2``, ``hashlib`` and the descriptor walk, a tenth of a short run's start-up).
"""

from __future__ import annotations

from pathlib import Path

from attractor.proc.hostfs import DEFAULT_READ_LIMIT, READ_FILE_LIMIT


class HostFiles:
    """File operations beneath ``self.workdir`` on this machine (a mixin of the environments)."""

    workdir: Path

    def read_file(self, path: str | Path, limit: int = READ_FILE_LIMIT) -> bytes:
        """The bytes of a regular file of at most ``limit`` bytes."""
        from attractor.proc.hostfs.textfiles import read_bytes

        return read_bytes(self.workdir, str(path), limit)

    def write_file(self, path: str | Path, data: bytes) -> None:
        """Replace (or create) a regular file with ``data`` in one rename."""
        from attractor.proc.hostfs.textfiles import write_bytes

        write_bytes(self.workdir, str(path), data)

    def read_lines(self, path: str, offset: int = 1, limit: int = DEFAULT_READ_LIMIT) -> str:
        """Lines ``offset`` (1-based) to ``offset + limit - 1`` of a text file, numbered."""
        from attractor.proc.hostfs.textfiles import read_lines

        return read_lines(self.workdir, path, offset, limit)

    def write_text(self, path: str, content: str) -> str:
        """Replace (or create) a file with ``content`` in one rename; a line saying so."""
        from attractor.proc.hostfs.textfiles import write_text

        return write_text(self.workdir, path, content)

    def edit_text(self, path: str, old: str, new: str, *, replace_all: bool = False) -> str:
        """Replace ``old`` (once, unless ``replace_all``) in a text file; a line saying so."""
        from attractor.proc.hostfs.textfiles import edit_text

        return edit_text(self.workdir, path, old, new, replace_all)

    def list_dir(self, path: str = ".") -> str:
        """The entries of a directory, one a line, folders ending in ``/``."""
        from attractor.proc.hostfs.textfiles import list_dir

        return list_dir(self.workdir, path)

    def glob(self, pattern: str, path: str = ".") -> str:
        """The paths under ``path`` matching ``pattern`` (``**/*.py``), one a line."""
        from attractor.proc.hostfs.globbing import glob_files

        return glob_files(self.workdir, pattern, path)

    def grep(
        self, pattern: str, path: str = ".", *, regex: bool = False, ignore_case: bool = False
    ) -> str:
        """The lines under ``path`` holding ``pattern``, as ``path:line: text``."""
        from attractor.proc.hostfs.search import grep

        return grep(self.workdir, pattern, path, regex=regex, ignore_case=ignore_case)

    def apply_patch(self, patch: str) -> str:
        """Apply a v4a patch, all or nothing as far as the files allow; a line per file."""
        from attractor.proc.hostfs.patch import apply_patch

        return apply_patch(self.workdir, patch)
