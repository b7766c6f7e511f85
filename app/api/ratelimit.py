"""Per-user limits on the expensive work: runs at once (code checks, grading) and code checks per minute.

Kept in process memory on purpose: exact for one process, no round trip. With `--workers N` each process
counts on its own, so a user gets up to N times each limit (measured: 4 code checks sent at once under
INTERVIEWER_CODE_CHECKS_IN_FLIGHT=1 ran 2 with two workers); `shared_by` says so at start-up. A hard cap across
processes needs state they share: leases in the database would add two write transactions to every grade and
check (SQLite takes one writer at a time) and an expiry that either frees a live run's slot or keeps a crashed
worker's for as long as the longest batch.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable

LIMITS = "INTERVIEWER_GRADING_IN_FLIGHT, _CODE_CHECKS_IN_FLIGHT and _CODE_CHECKS_PER_MINUTE"


def shared_by() -> str | None:
    """How this process shares the server with other API workers, as far as it can tell; None: it is alone.
    WEB_CONCURRENCY is the worker count uvicorn and gunicorn read (`interviewer serve --workers N` sets it); a
    process spawned by another is one of `uvicorn --workers N` (or the child of `--reload`)."""
    declared = os.environ.get("WEB_CONCURRENCY", "").strip()
    if declared.isdigit() and int(declared) > 1:
        return f"one of {int(declared)} API worker processes"
    if multiprocessing.parent_process() is not None:
        return "started by another process (uvicorn --workers N, or --reload)"
    return None


def per_process_warning(how: str) -> str:
    return (f"this API process is {how}: the per-user limits ({LIMITS}) are counted by each worker on its own, so "
            "a user may get up to that many times each; run one worker for exact limits (README, Settings)")


class InFlightLimit:
    """At most `in_flight` running at once per key (None: no cap). One user's work, each piece holding a sandbox
    worker or a thread of the slow routes (app/api/slow_routes.py) while it runs, would otherwise fill the pool
    and every other user waits."""

    def __init__(self, in_flight: int | None = None) -> None:
        self.in_flight = in_flight
        self._running: dict[object, int] = {}
        self._lock = threading.Lock()

    def start(self, key: object) -> bool:
        """Count one more running for `key`; False (nothing counted) when it has as many as it may."""
        with self._lock:
            if self.in_flight is not None and self._running.get(key, 0) >= self.in_flight:
                return False
            self._running[key] = self._running.get(key, 0) + 1
            return True

    def finish(self, key: object) -> None:
        with self._lock:
            left = self._running.get(key, 0) - 1
            if left > 0:
                self._running[key] = left
            else:
                self._running.pop(key, None)


class SlidingWindowLimiter(InFlightLimit):
    """At most `limit` events per `window_s` per key, and at most `in_flight` of them running at once."""

    def __init__(
        self, limit: int, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
        in_flight: int | None = None,
    ) -> None:
        super().__init__(in_flight)
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._events: dict[object, deque[float]] = {}

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
