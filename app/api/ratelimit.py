"""Per-user limits on the expensive work: runs at once (code checks, grading) and code checks per minute.

Both are counted across every API process of the server (`--workers N`) with no write to the database, in a few
small files per user under the data directory. A run holds a slot, an exclusive lock (flock) on one of the user's
slot files, which the kernel lets go when the run ends or its process dies. Leases in the database were rejected
for the two write transactions they add to every grade and check (SQLite takes one writer at a time) and for their
expiry, which either frees a live run's slot or keeps a crashed worker's for as long as the longest batch; a lock
has neither. The per-minute count is the times of the user's latest checks, read and rewritten under a lock on
their file (a few hundred bytes; each worker kept its own count in memory before, so N workers let a user have N
times the limit). The files are shared by the processes of one machine (one data directory): servers on other
machines, sharing a PostgreSQL database, each count their own.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path


class SlotsUnavailable(Exception):
    """The limits' files cannot be made or opened, so runs cannot be counted (the message names the folder)."""


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
            fd = self._open(f"{self._name}-{key}-{slot}")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            with self._lock:
                self._held.setdefault(key, []).append(fd)
            return True
        return False

    def _open(self, name: str) -> int:
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
    """At most `limit` events per `window_s` per key, and at most `in_flight` of them running at once, both counted
    by every process whose limiter of this `name` has the same `slots_dir`."""

    def __init__(
        self, limit: int, *, slots_dir: Path, name: str, window_s: float = 60.0,
        clock: Callable[[], float] = time.time, in_flight: int | None = None,
    ) -> None:
        super().__init__(in_flight, slots_dir=slots_dir, name=name)
        self.limit = limit
        self.window_s = window_s
        self._clock = clock  # wall-clock time: the same in every process, and after a restart

    def acquire(self, key: object) -> float | None:
        """Count one event for `key`; None when allowed, else the seconds until it would be."""
        fd = self._open(f"{self._name}-{key}-times")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held for one read and one write of a few hundred bytes
            now = self._clock()
            # A time ahead of now (the clock set back) would hold the count up for as long: dropped.
            times = [t for t in _read_times(fd) if now - self.window_s < t <= now]
            if len(times) >= self.limit:
                return max(times[0] + self.window_s - now, 0.001)
            times.append(now)
            data = struct.pack(f"<{len(times)}d", *times[-self.limit:])
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            return None
        finally:
            os.close(fd)  # the lock goes with its only descriptor


def _read_times(fd: int) -> list[float]:
    """The times a count file holds, oldest first; a torn tail (a worker killed while writing) is left out."""
    data = os.pread(fd, 1 << 16, 0)
    whole = len(data) - len(data) % 8
    return sorted(struct.unpack(f"<{whole // 8}d", data[:whole]))
