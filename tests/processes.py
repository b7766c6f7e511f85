"""Run a command under limits on what it does, not on how busy the machine is.

A wall-clock limit fails a sound command on a loaded machine: `interviewer ingest` uses about 35 s of CPU,
which took 111 s at a load average of 11 on 2 cores, and ran past its 180 s limit at 19. A command that hangs
either spins (its CPU time grows past any budget) or waits (its CPU time stops growing); both are caught here
whatever the load. The wall-clock backstop is for a command that polls for ever, using a little CPU now and then.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

TICKS_S = os.sysconf("SC_CLK_TCK")
POLL_S = 0.5


class Watch:
    """Says when a process (with everything it started) looks hung: it has used `cpu_s` seconds of CPU, or none
    for `idle_s` seconds (blocked, or exited with a pipe still held open by something it started), or run for
    `wall_s` seconds."""

    def __init__(self, pid: int, *, cpu_s: float = 180.0, idle_s: float = 120.0, wall_s: float = 1800.0) -> None:
        self.pid, self.cpu_s, self.idle_s, self.wall_s = pid, cpu_s, idle_s, wall_s
        self.started = self.last_change = time.monotonic()
        self.used = self.previous = 0.0
        self.tree = [pid]

    def stuck(self) -> str | None:
        """Why it looks hung, or None; call it every second or so."""
        now, self.tree = time.monotonic(), _tree(self.pid)
        if (cpu := sum(_cpu_s(pid) for pid in self.tree)) != self.previous:  # less: a child gone, not yet counted
            self.previous, self.used, self.last_change = cpu, max(self.used, cpu), now
        if self.used > self.cpu_s:
            return f"used {self.used:.0f} s of CPU (limit {self.cpu_s:g} s)"
        if now - self.last_change > self.idle_s:
            return f"used no CPU for {self.idle_s:g} s"
        return f"ran for {self.wall_s:g} s" if now - self.started > self.wall_s else None

    def kill(self) -> None:
        for pid in self.tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def run_bounded(args: list[str], *, cpu_s: float = 180.0, idle_s: float = 120.0, wall_s: float = 1800.0,
                input: str | bytes | None = None, **popen: Any) -> subprocess.CompletedProcess:
    """`subprocess.run(args, capture_output=True, input=input, **popen)`, failing the test once the command
    looks hung (see Watch)."""
    proc = subprocess.Popen(args, stdin=subprocess.PIPE if input is not None else None, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **popen)
    watch, pending = Watch(proc.pid, cpu_s=cpu_s, idle_s=idle_s, wall_s=wall_s), input
    while True:
        try:
            stdout, stderr = proc.communicate(pending, timeout=POLL_S)
            return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)
        except subprocess.TimeoutExpired as waited:
            pending, said = None, waited.stderr or b""  # input goes once; a retry must not send it again
        if (why := watch.stuck()) is not None:
            watch.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # a pipe still held by a process it left behind
                said = proc.communicate(timeout=5)[1] or said
            tail = said[-2000:] if isinstance(said, str) else said[-2000:].decode(errors="replace")
            pytest.fail(f"{' '.join(map(str, args))} {why}, stopped; its stderr ended:\n{tail}")


def read_until(proc: subprocess.Popen, marker: str, watch: Watch) -> str:
    """What the process wrote on stdout up to and including `marker`, failing the test if it looks hung first. Reads
    the pipe unbuffered, so what comes after the marker is left for `communicate`."""
    assert proc.stdout is not None
    fd, seen = proc.stdout.fileno(), b""
    # A selector, not select.select: that refuses a descriptor numbered 1024 or more, which a long test run reaches.
    with selectors.DefaultSelector() as readable:
        readable.register(fd, selectors.EVENT_READ)
        while marker.encode() not in seen:
            if readable.select(POLL_S):
                chunk = os.read(fd, 1)  # a byte at a time: nothing past the marker is taken
                if not chunk:
                    said = seen.decode(errors="replace")[-2000:]
                    pytest.fail(f"the process ended before it wrote {marker!r}: {said}")
                seen += chunk
            elif (why := watch.stuck()) is not None:
                pytest.fail(f"no {marker!r} yet and the process {why}: {seen.decode(errors='replace')[-2000:]}")
    return seen.decode(errors="replace")


def _tree(root: int) -> list[int]:
    """The process and its live descendants."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _cpu_s(pid: int) -> float:
    """CPU seconds of a process, all its threads and the children it has waited for."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(tick) for tick in fields[11:15]) / TICKS_S  # utime, stime, cutime, cstime
