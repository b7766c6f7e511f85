"""Run a command under limits on what it does, not on how busy the machine is.

A wall-clock limit fails a sound command on a loaded machine: `interviewer ingest` uses about 35 s of CPU,
which took 111 s at a load average of 11 on 2 cores, and ran past its 180 s limit at 19. A command that hangs
either spins (its CPU time grows past any budget) or waits (its CPU time stops growing); both are caught here
whatever the load. The wall-clock backstop is for a command that polls for ever, using a little CPU now and then.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

TICKS_S = os.sysconf("SC_CLK_TCK")
POLL_S = 0.5


def run_bounded(args: list[str], *, cpu_s: float = 180.0, idle_s: float = 120.0, wall_s: float = 1800.0,
                input: str | bytes | None = None, **popen: Any) -> subprocess.CompletedProcess:
    """`subprocess.run(args, capture_output=True, input=input, **popen)`, failing the test once the command and
    its processes have used `cpu_s` seconds of CPU, or none for `idle_s` seconds (blocked, or exited with a pipe
    still held open by something it started), or run for `wall_s` seconds."""
    proc = subprocess.Popen(args, stdin=subprocess.PIPE if input is not None else None, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **popen)
    started = last_change = time.monotonic()
    used = previous = 0.0
    pending: str | bytes | None = input
    while True:
        try:
            stdout, stderr = proc.communicate(pending, timeout=POLL_S)
            return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)
        except subprocess.TimeoutExpired as waited:
            pending, said = None, waited.stderr or b""  # input goes once; a retry must not send it again
        now, tree = time.monotonic(), _tree(proc.pid)
        if (cpu := sum(_cpu_s(pid) for pid in tree)) != previous:  # less: a child gone, its time not yet counted
            previous, used, last_change = cpu, max(used, cpu), now
        why = (f"used {used:.0f} s of CPU (limit {cpu_s:g} s)" if used > cpu_s
               else f"used no CPU for {idle_s:g} s" if now - last_change > idle_s
               else f"ran for {wall_s:g} s" if now - started > wall_s else None)
        if why is not None:
            for pid in tree:
                _kill(pid)
            with contextlib.suppress(subprocess.TimeoutExpired):  # a pipe still held by a process it left behind
                said = proc.communicate(timeout=5)[1] or said
            tail = said[-2000:] if isinstance(said, str) else said[-2000:].decode(errors="replace")
            pytest.fail(f"{' '.join(map(str, args))} {why}, stopped; its stderr ended:\n{tail}")


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


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
