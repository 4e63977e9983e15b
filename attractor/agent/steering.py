"""The steering queue: messages a host injects into a running session.

A host (the manager loop, the web view, a test) calls :meth:`SteeringQueue.put`
at any time, from the event loop or another thread. The session takes every
queued message before its next model request and sends each as a user message,
so the model reads it as a further instruction from the user.
"""

from __future__ import annotations

import threading
from collections import deque

MAX_STEERING_CHARS = 20_000


class SteeringQueue:
    """Messages waiting for the next turn of one session, in the order they came."""

    def __init__(self) -> None:
        self._items: deque[str] = deque()
        self._lock = threading.Lock()

    def put(self, text: str) -> None:
        """Queue ``text`` for the next request.

        Raises:
            ValueError: ``text`` is empty or longer than :data:`MAX_STEERING_CHARS`.
        """
        if not text.strip():
            raise ValueError("a steering message must not be empty")
        if len(text) > MAX_STEERING_CHARS:
            raise ValueError(f"a steering message may hold at most {MAX_STEERING_CHARS} characters")
        with self._lock:
            self._items.append(text)

    def drain(self) -> list[str]:
        """Every queued message, oldest first; the queue is empty afterwards."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
        return items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
