"""The mode of the files proc writes into a run directory (output files, the process ledger).

The engine sets it from the ``run_permissions`` setting together with
:func:`attractor.fileio.writes.set_run_permissions` (proc sits beside fileio and does
not import it).
"""

from __future__ import annotations

_mode = [0o600]


def file_mode() -> int:
    """The mode new files are created with (then the umask applies)."""
    return _mode[0]


def set_file_mode(mode: int) -> None:
    _mode[0] = mode
