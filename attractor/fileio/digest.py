"""The SHA-256 of a run's texts (the pipeline's, a thread's name), without ``hashlib``.

``hashlib`` starts OpenSSL's digests when it is imported: about 1% of a short
run's start-up, for one hash. The standard library's own C module is enough,
as ``random`` does for its seeds: ``_sha256`` up to Python 3.11, ``_sha2``
since 3.12; ``hashlib`` only where neither is built.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def _constructor() -> Callable[[bytes], Any]:
    for module, name in (("_sha256", "sha256"), ("_sha2", "sha256"), ("hashlib", "sha256")):
        try:
            found: Callable[[bytes], Any] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        return found
    raise ImportError("no SHA-256 in this Python")  # pragma: no cover - hashlib always has it


_SHA256 = _constructor()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, in hexadecimal."""
    return str(_SHA256(data).hexdigest())
