"""Short, lower-case phrases for the OS errors a file operation meets."""

from __future__ import annotations

import errno

_OS_ERRORS = {
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "is a directory",
    errno.ENAMETOOLONG: "file name too long",
    errno.ENOSPC: "no space left on the device",
}


def reason(error: OSError) -> str:
    """A short lower-case phrase for ``error``."""
    return _OS_ERRORS.get(error.errno or 0, (error.strerror or str(error)).lower())
