"""Per-user limits on the expensive work: runs at once (code checks, grading) and code checks per minute.

Runs at once are counted across every API process of the server (`--workers N`) with no write to the database: a
run holds a slot, an exclusive lock (flock) on one of a few files per user under the data directory, which the
kernel lets go when the run ends or its process dies. Leases in the database were rejected for the two write
transactions they add to every grade and check (SQLite takes one writer at a time) and for their expiry, which
either frees a live run's slot or keeps a crashed worker's for as long as the longest batch; a lock has neither.
The files are shared by the processes of one machine (one data directory): servers on other machines, sharing a
PostgreSQL database, each count their own. The per-minute count is kept in process memory (exact for one process,
no round trip): with N workers a user gets up to N times it; `shared_by` says so at start-up.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

LIMITS = "INTERVIEWER_CODE_CHECKS_PER_MINUTE"


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
    return (f"this API process is {how}: the per-user limit {LIMITS} is counted by each worker on its own, so a "
            "user may get up to that many times it; run one worker for an exact limit (README, Settings)")


class SlotsUnavailable(Exception):
    """The slot files cannot be made or opened, so runs at once cannot be counted (the message names the folder)."""


class InFlightLimit:
    """At most `in_flight` running at once per key (None: no cap), counted by every process whose limit of this
    `name` has the same `slots_dir`. One user's work, each piece holding a sandbox worker or a thread of the slow
    routes (app/api/slow_routes.py) while it runs, would otherwise fill the pool and every other user waits."""

    def __init__(self, in_flight: int | None, *, slots_dir: Path, name: str) -> None:
        self.in_flight = in_flight
        self._slots_dir, self._name = slots_dir, name
        self._held: dict[object, list[int]] = {}  # the slots' descriptors this process holds, per key
        self._lock = threading.Lock()

    def start(self, key: object) -> bool:
        """Take one of `key`'s slots; False (nothing taken) when every one is held, here or by another process."""
        if self.in_flight is None:
            return True
        for slot in range(self.in_flight):
            fd = self._open_slot(f"{self._name}-{key}-{slot}")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            with self._lock:
                self._held.setdefault(key, []).append(fd)
            return True
        return False

    def _open_slot(self, name: str) -> int:
        # A descriptor of its own: flock holds per open file, so two threads of one process exclude each other
        # as two processes do. Not inherited by the sandbox's workers, which start by exec.
        try:
            self._slots_dir.mkdir(parents=True, exist_ok=True)
            return os.open(self._slots_dir / name, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # a read-only data directory, a file where the folder goes: the server's to fix
            raise SlotsUnavailable(f"{self._slots_dir}: {exc.strerror or exc}") from exc

    def finish(self, key: object) -> None:
        """Let go of one slot this process took for `key`."""
        with self._lock:
            held = self._held.get(key)
            if not held:
                return
            fd = held.pop()
            if not held:
                del self._held[key]
        os.close(fd)  # its only descriptor closed, the file's lock goes with it


class SlidingWindowLimiter(InFlightLimit):
    """At most `limit` events per `window_s` per key, and at most `in_flight` of them running at once."""

    def __init__(
        self, limit: int, *, slots_dir: Path, name: str, window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic, in_flight: int | None = None,
    ) -> None:
        super().__init__(in_flight, slots_dir=slots_dir, name=name)
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
