"""What one job's child sends back to the trusted side, read there within bounds and before any verdict.

Nothing here trusts the child: its result frames are capped in size and number and limited to the types
the harness writes, and its output is counted in full but kept only up to what the runner shows.
"""

from __future__ import annotations

import math
import os
import select
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.code.protocol import FrameDecoder, FrameError

MAX_FRAME = 64 << 20
CHILD_FRAMES = ("check", "load_error", "end")  # all a child may say; the worker alone reports `exit`
# All a child's frames together, headers included: a task's results are small tensors, and 80 frames of 32 MB
# each, or thousands of `load_error` frames with a 1 MB message each (1.7 GB in a 10 s job), would otherwise all
# be held by the trusted process.
MAX_CHILD_BYTES = 2 * MAX_FRAME


def ready_to_read(fds: Sequence[int], timeout: float) -> list[int]:
    """Those of `fds` that can be read now or within `timeout` seconds (end of file counts).

    poll, not select.select: select refuses a descriptor numbered 1024 or more, and a server holding
    many connections and stores reaches that, which would fail every code check."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    wait_ms = math.ceil(max(timeout, 0.0) * 1000)
    return [fd for fd, _ in poller.poll(wait_ms)]


@dataclass
class RawOutcome:
    """What came back for one job, before any verdict."""

    frames: list[tuple[dict[str, Any], list[bytes]]] = field(default_factory=list)  # the child's
    exit: dict[str, Any] | None = None  # how the child ended, as the worker saw it
    stdout: bytes = b""
    stdout_bytes: int = 0
    timed_out: bool = False
    output_exceeded: bool = False
    worker_lost: bool = False
    delivered: bool = False  # False when the worker was found dead before it had the job
    memory_exceeded: bool = False  # the kernel killed a process of the jail at its cgroup's memory limit
    duration_ms: float = 0.0


class ChildFrames:
    """Frames the child writes on its result pipe: untrusted, bounded, only the child's types."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False
        self._decoder = FrameDecoder(MAX_FRAME)
        self._bytes = 0
        self._names: set[str] = set()

    def read_into(self, outcome: RawOutcome) -> bool:
        """Read what is there; False once the pipe is closed or the child sent garbage (a frame of a type
        or shape the harness never writes, a second result for one check, more than MAX_CHILD_BYTES)."""
        chunk = os.read(self.fd, 1 << 20)
        self._bytes += len(chunk)
        try:
            if self._bytes > MAX_CHILD_BYTES:
                raise FrameError(f"more than {MAX_CHILD_BYTES} bytes of results")
            self._decoder.feed(chunk)
            while (frame := self._decoder.frame()) is not None:
                self._keep(frame, outcome)
        except FrameError:
            chunk = b""
        self.closed = not chunk
        return not self.closed

    def _keep(self, frame: tuple[dict[str, Any], list[bytes]], outcome: RawOutcome) -> None:
        meta, _ = frame
        if meta.get("type") not in CHILD_FRAMES:
            raise FrameError("not a frame the harness writes")
        if meta["type"] == "check":
            name = meta.get("name")
            if not isinstance(name, str) or name in self._names:
                raise FrameError("a check result without a name, or a second one")
            self._names.add(name)
        outcome.frames.append(frame)


def ended(outcome: RawOutcome) -> bool:
    """Whether the job is over: the worker reported the child's exit, or the child said `end`."""
    return outcome.exit is not None or ended_cleanly(outcome)


def read_output(fd: int, outcome: RawOutcome, keep: int) -> bool:
    """Read the child's output that is there, keeping the first `keep` bytes; False once the pipe is closed."""
    chunk = os.read(fd, 1 << 16)
    outcome.stdout_bytes += len(chunk)
    if len(outcome.stdout) < keep:
        outcome.stdout += chunk[: keep - len(outcome.stdout)]
    return bool(chunk)


def ended_cleanly(outcome: RawOutcome) -> bool:
    """Whether the child said `end`: it ran every check and flushed its output."""
    return any(meta.get("type") == "end" for meta, _ in outcome.frames)


def drain_output(fd: int, outcome: RawOutcome, keep: int, wait: float) -> None:
    """Output written before the child died; the group is dead, so this ends quickly."""
    deadline = time.monotonic() + wait
    while ready_to_read([fd], deadline - time.monotonic()):
        if not read_output(fd, outcome, keep) or outcome.stdout_bytes > 4 * keep + (1 << 20):
            return
