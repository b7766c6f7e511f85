"""A per-user sliding-window rate limit for the expensive code checks."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable


class SlidingWindowLimiter:
    """At most `limit` events per `window_s` per key.

    Kept in process memory on purpose: it is exact for one process and costs no round trip. With
    `--workers N` each process counts on its own, so a user gets up to N times the limit; a shared
    store (Redis, the database) would be needed for a hard cluster-wide cap.
    """

    def __init__(
        self, limit: int, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._events: dict[object, deque[float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: object) -> float | None:
        """Count one event for `key`; None when allowed, else the seconds until it would be."""
        now = self._clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and events[0] <= now - self.window_s:
                events.popleft()
            if len(events) >= self.limit:
                return max(events[0] + self.window_s - now, 0.001)
            events.append(now)
            return None
