"""Paths a pipeline names, confined to the places a run may read.

``human.show``, a child pipeline, a ``workdir``: resolved with symbolic links
followed, refused outside the run's roots
(:class:`~attractor.errors.PipelinePathError`), and read as regular files only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from attractor.errors import InputFileError, PipelinePathError
from attractor.fileio.reads import open_regular, os_error, read_upto, too_large

# -- paths a pipeline names -----------------------------------------------------------


def confine_path(
    path: str | Path,
    roots: Sequence[Path],
    *,
    attribute: str,
    node: str | None,
) -> Path:
    """``path`` with every symbolic link resolved, refused unless it lies inside a root.

    ``roots`` are the places a run may read (the pipeline's folder, the
    workdir); they are resolved too, so a link to them counts as them. A path
    that does not exist yet is resolved as far as it exists.

    Raises:
        PipelinePathError: ``kind`` outside, naming ``attribute`` and ``node``.
    """
    real = Path(os.path.realpath(path))
    allowed = list(dict.fromkeys(Path(os.path.realpath(root)) for root in roots))
    if not any(real == root or real.is_relative_to(root) for root in allowed):
        places = " or ".join(str(root) for root in allowed) or "no folder"
        raise PipelinePathError(
            str(path),
            f"resolves to {real}, outside the places a run may read ({places})",
            "name a path inside the working directory or the pipeline's folder "
            "(symbolic links are followed), or run with a --workdir that holds it",
            kind="outside",
            attribute=attribute,
            node=node,
        )
    return real


def read_confined_text(
    path: str | Path,
    roots: Sequence[Path],
    limit: int,
    *,
    attribute: str,
    node: str | None,
    cut: bool = False,
) -> str:
    """The text of the file a pipeline names, read only if it is safe to read.

    The file must resolve inside ``roots`` (see :func:`confine_path`) and be a
    regular file (opened with O_NONBLOCK and checked with fstat, so a FIFO or a
    device never blocks); it is at most ``limit`` bytes, or with ``cut`` only
    its first ``limit`` bytes are read. Invalid UTF-8 is replaced. This blocks
    on the disk: call it from a worker thread (``anyio.to_thread``), never on
    the event loop.

    Raises:
        PipelinePathError: ``kind`` outside, os, not_regular or too_large.
    """
    real = confine_path(path, roots, attribute=attribute, node=node)
    what = f"{attribute} file"
    try:
        fd, size = open_regular(real, what, follow=False)
    except InputFileError as exc:
        raise _for_attribute(exc, str(path), attribute, node) from None
    try:
        if size > limit and not cut:
            raise _for_attribute(
                too_large(str(path), limit, what, size), str(path), attribute, node
            )
        data = read_upto(fd, 0, limit)
    except OSError as exc:
        raise _for_attribute(os_error(str(path), exc), str(path), attribute, node) from None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def _for_attribute(
    exc: InputFileError, path: str, attribute: str, node: str | None
) -> PipelinePathError:
    hint = {
        "not_regular": f"point {attribute} at a regular file",
        "too_large": f"point {attribute} at a smaller file",
    }.get(exc.kind, exc.hint)
    return PipelinePathError(
        path,
        exc.reason,
        hint,
        kind=exc.kind,
        attribute=attribute,
        node=node,
        limit=exc.limit,
        errno=exc.errno,
    )
