"""Trusted side of the sandbox: start workers, run jobs with a wall clock and an output cap.

The parent never trusts what comes out of the jail: frames are size-bounded, the candidate's
output is read here (and cut off here), and at the end of every job the parent itself kills
the child's whole process group, using the host pid the kernel attached to the child's hello
(SCM_CREDENTIALS cannot be forged without privileges). The worker keeps the child unreaped
until the parent says `done`, so that group id cannot have been recycled.
"""

from __future__ import annotations

import array
import collections
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from evaluators.code.errors import ProtocolError, RunnerError, SandboxUnavailable
from evaluators.code.protocol import FrameDecoder, FrameError, encode, write_all
from evaluators.code.sandbox import PROJECT_ROOT, SANDBOX_UID, SandboxConfig, worker_command

MAX_FRAME = 64 << 20
STARTUP_TIMEOUT_S = 60.0
GRACE_S = 2.0  # for the worker to report a child we just killed
RETRY_DELAYS_S = (0.5, 1.0, 2.0, 5.0, 15.0, 30.0)  # between failed restarts of a worker


@dataclass
class RawOutcome:
    """What came back for one job, before any verdict."""

    frames: list[tuple[dict[str, Any], list[bytes]]] = field(default_factory=list)
    stdout: bytes = b""
    stdout_bytes: int = 0
    timed_out: bool = False
    output_exceeded: bool = False
    worker_lost: bool = False
    delivered: bool = False  # False when the worker was found dead before it had the job
    duration_ms: float = 0.0


class Worker:
    """One warm worker process in its own jail."""

    def __init__(self, config: SandboxConfig, unsandboxed: bool = False,
                 launch: Callable[[Callable[[], subprocess.Popen]], subprocess.Popen] = lambda f: f(),
                 ) -> None:
        self.jobs = 0
        self.alive = True
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self._side = ours
        command = self._command(config, theirs.fileno(), unsandboxed)
        self.proc = launch(lambda: subprocess.Popen(  # empty environment: no secrets in /proc/*/environ
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=[theirs.fileno()], env={}, cwd="/", start_new_session=True, close_fds=True,
        ))
        theirs.close()
        self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_reader.start()
        self._decoder = FrameDecoder(MAX_FRAME)
        self._ready = False
        if not self.await_ready(STARTUP_TIMEOUT_S):
            raise SandboxUnavailable(self._startup_failure())

    def await_ready(self, timeout: float = 10.0) -> bool:
        """Wait for the worker's `ready` (sent at start and after each job's clean-up). False, and
        the worker killed, when it died or hung instead: then no job was handed to it."""
        if self.proc.poll() is not None:
            self._ready = False
            self.kill()
        if not self._ready and self.alive:
            frame = self._next_frame(time.monotonic() + timeout)
            self._ready = frame is not None and frame[0].get("type") == "ready"
            if not self._ready:
                self.kill()
        return self._ready

    def stderr_tail(self) -> str:
        """The last lines the worker wrote on stderr (read fully once it has exited)."""
        if self.proc.poll() is not None:
            self._stderr_reader.join(timeout=2)
        return b"".join(self._stderr).decode(errors="replace").strip()[-1500:]

    @staticmethod
    def _command(config: SandboxConfig, side_fd: int, unsandboxed: bool) -> list[str]:
        if unsandboxed:
            return [config.python, "-I", "-B", str(PROJECT_ROOT / "evaluators/code/worker.py"),
                    str(side_fd), "host", str(PROJECT_ROOT), *config.site_packages]
        return worker_command(config, side_fd)

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line[:500])

    def _startup_failure(self) -> str:
        tail = self.stderr_tail()
        hint = ""
        if "uid map" in tail or "namespace" in tail or "Operation not permitted" in tail:
            hint = (" Unprivileged user namespaces look disabled: enable them "
                    "(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0).")
        return f"the code sandbox failed to start: {tail or 'no output'}.{hint}"

    def _next_frame(self, deadline: float) -> tuple[dict[str, Any], list[bytes]] | None:
        """Next frame from the worker, or None if it died, lied or missed the deadline."""
        fd = self.proc.stdout.fileno()
        try:
            while (frame := self._decoder.frame()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                    return None
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self._decoder.feed(chunk)
        except FrameError:
            return None
        return frame

    def _child_pid(self, timeout: float) -> int:
        """Host pid of the pre-forked child, from the credentials on its hello."""
        if not select.select([self._side], [], [], timeout)[0]:
            raise ProtocolError("sandbox child did not say hello")
        size = socket.CMSG_SPACE(struct.calcsize("3i"))
        msg, ancillary, _, _ = self._side.recvmsg(16, size)
        for level, kind, data in ancillary:
            if (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS) and msg == b"hello":
                pid, uid, _ = struct.unpack("3i", data[:12])
                if uid in (SANDBOX_UID, os.getuid()) and os.getpgid(pid) == pid:
                    return pid
        raise ProtocolError("sandbox child sent a bad hello")

    def run(self, meta: dict[str, Any], blobs: list[bytes], timeout: float, keep: int,
            limit: int) -> RawOutcome:
        outcome, start = RawOutcome(), time.monotonic()
        self.jobs += 1
        self._ready = False  # until the worker says so after this job's clean-up
        try:
            child = self._child_pid(timeout=10)
            out_r, out_w = os.pipe()
            self._side.sendmsg([b"out"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [out_w]))])
            os.close(out_w)
            try:
                write_all(self.proc.stdin.fileno(), encode({**meta, "type": "job"}, blobs))
                outcome.delivered = True
                self._collect(outcome, out_r, start + timeout, keep, limit)
            finally:
                _kill_group(child)  # always: daemons, threads and children die with the check
                self._finish(outcome)
                # After `end` the child has flushed: its output is already in the pipe.
                _drain(out_r, outcome, keep, wait=0.0 if _ended_cleanly(outcome) else 0.5)
                os.close(out_r)
            if not outcome.worker_lost:
                write_all(self.proc.stdin.fileno(), encode({"type": "done"}))
        except (OSError, ProtocolError):
            outcome.worker_lost = True
        if outcome.worker_lost:
            self.kill()
        outcome.duration_ms = (time.monotonic() - start) * 1000
        return outcome

    def _finish(self, outcome: RawOutcome) -> None:
        """After the kill, the worker reports the child's exit; frames before it still count."""
        deadline = time.monotonic() + GRACE_S
        while not outcome.worker_lost and not _ended(outcome):
            frame = self._next_frame(deadline)
            if frame is None:
                outcome.worker_lost = True
            else:
                outcome.frames.append(frame)

    def _collect(self, outcome: RawOutcome, out_r: int, deadline: float, keep: int, limit: int) -> None:
        fd = self.proc.stdout.fileno()
        watched = [fd, out_r]
        while not _ended(outcome):
            try:
                if (frame := self._decoder.frame()) is not None:
                    outcome.frames.append(frame)
                    continue
            except FrameError:
                outcome.worker_lost = True
                return
            remaining = deadline - time.monotonic()
            ready = select.select(watched, [], [], remaining)[0] if remaining > 0 else []
            if not ready:
                outcome.timed_out = True
                return
            if out_r in ready and not _read_output(out_r, outcome, keep):
                watched.remove(out_r)  # the child closed its output; frames may still come
            if outcome.stdout_bytes > limit:
                outcome.output_exceeded = True
                return
            if fd in ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    outcome.worker_lost = True
                    return
                try:
                    self._decoder.feed(chunk)
                except FrameError:
                    outcome.worker_lost = True
                    return

    def kill(self) -> None:
        """Kill the whole jail: bwrap's init dies, and with it every process inside."""
        if not self.alive:
            return
        self.alive = False
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        self._side.close()
        for stream in (self.proc.stdin, self.proc.stdout):
            stream.close()


def _ended(outcome: RawOutcome) -> bool:
    return bool(outcome.frames) and outcome.frames[-1][0].get("type") in ("end", "exit")


def _read_output(fd: int, outcome: RawOutcome, keep: int) -> bool:
    chunk = os.read(fd, 1 << 16)
    outcome.stdout_bytes += len(chunk)
    if len(outcome.stdout) < keep:
        outcome.stdout += chunk[: keep - len(outcome.stdout)]
    return bool(chunk)


def _ended_cleanly(outcome: RawOutcome) -> bool:
    return bool(outcome.frames) and outcome.frames[-1][0].get("type") == "end"


def _drain(fd: int, outcome: RawOutcome, keep: int, wait: float) -> None:
    """Output written before the child died; the group is dead, so this ends quickly."""
    deadline = time.monotonic() + wait
    while select.select([fd], [], [], max(deadline - time.monotonic(), 0))[0]:
        if not _read_output(fd, outcome, keep) or outcome.stdout_bytes > 4 * keep + (1 << 20):
            return


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class WorkerPool:
    """A fixed number of warm workers behind a queue; each recycled after `recycle_after` jobs.

    A worker that dies is replaced in the background and costs at most the job it was running:
    a worker is only handed a job after it said `ready`. A replacement that fails to start is
    retried with backoff, its real stderr is logged, and `health()` reports the pool unhealthy.
    """

    def __init__(self, size: int = 0, config: SandboxConfig | None = None, recycle_after: int = 200,
                 unsandboxed: bool = False, retry_delays: tuple[float, ...] = RETRY_DELAYS_S) -> None:
        self.size = size or os.cpu_count() or 1
        self.config = config or SandboxConfig()
        self.recycle_after = recycle_after
        self.unsandboxed = unsandboxed
        self.retry_delays = retry_delays
        if unsandboxed:
            print("WARNING: code checks run WITHOUT a sandbox; candidate code can read your files "
                  "and secrets. Only for single-user local use.", file=sys.stderr)
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._live = 0  # started and not yet discarded
        self._restart_error: str | None = None  # the last failed restart, until one succeeds
        # bwrap --die-with-parent is tied to the *thread* that forked it (PR_SET_PDEATHSIG), so
        # every worker is forked by this one long-lived thread, never by a short-lived one.
        self._launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-launcher")
        starters = [threading.Thread(target=self._start_first) for _ in range(self.size)]
        self._start_errors: list[BaseException] = []
        for thread in starters:
            thread.start()
        for thread in starters:
            thread.join()
        if self._start_errors:
            self.close()
            raise self._start_errors[0]

    def _new_worker(self) -> Worker:
        return Worker(self.config, self.unsandboxed, lambda f: self._launcher.submit(f).result())

    def _start_first(self) -> None:
        try:
            self._accept(self._new_worker())
        except BaseException as exc:
            self._start_errors.append(exc)

    def _accept(self, worker: Worker) -> None:
        with self._lock:
            if self._closed:
                worker.kill()
                return
            self._live += 1
            self._restart_error = None
        self._idle.put(worker)

    def _replace(self) -> None:
        """Start a replacement, retrying with backoff while it fails; the last delay repeats."""
        attempt = 0
        while not self._closed:
            try:
                worker = self._new_worker()
            except BaseException as exc:
                if self._closed:
                    return  # shutting down: the launcher thread is gone, so the start failed
                delay = self.retry_delays[min(attempt, len(self.retry_delays) - 1)]
                with self._lock:
                    self._restart_error = str(exc)
                print(f"code runner: could not restart a worker (attempt {attempt + 1}, next in {delay:g} s): "
                      f"{exc}", file=sys.stderr)
                attempt += 1
                time.sleep(delay)
                continue
            self._accept(worker)
            return

    def _discard(self, worker: Worker) -> None:
        worker.kill()
        with self._lock:
            self._live -= 1
        if not self._closed:  # restart in the background; callers queue meanwhile
            threading.Thread(target=self._replace, daemon=True).start()

    def health(self) -> tuple[bool, str]:
        """(healthy, detail): unhealthy while a replacement worker keeps failing to start."""
        with self._lock:
            live, error = self._live, self._restart_error
        if self._closed:
            return False, "the runner pool is shut down"
        if error is not None:
            return False, f"{live} of {self.size} sandbox workers running; restarting one fails: {error}"
        return True, f"{live} of {self.size} warm workers"

    def _take(self, wait: float) -> Worker:
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                dead_end = self._live == 0 and self._restart_error is not None
            if dead_end or self._closed:
                raise RunnerError("the code runner cannot start its sandbox workers: "
                                  f"{self._restart_error or 'the pool is shut down'}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunnerError("the code runner is busy or its workers failed to start; try again")
            try:
                worker = self._idle.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if worker.await_ready():
                return worker
            self._discard(worker)  # died between jobs: no job lost, try the next one

    def run(self, meta: dict[str, Any], blobs: list[bytes], timeout: float, keep: int, limit: int,
            wait: float = 300.0) -> RawOutcome:
        deadline = time.monotonic() + wait
        while True:
            worker = self._take(max(deadline - time.monotonic(), 0.0))
            try:
                outcome = worker.run(meta, blobs, timeout, keep, limit)
            finally:
                if worker.alive and worker.jobs < self.recycle_after and not self._closed:
                    self._idle.put(worker)
                else:
                    self._discard(worker)
            if outcome.delivered or not outcome.worker_lost:
                return outcome
            # The worker died after its last job, before it had this one: no job lost, retry.

    def worker_pids(self) -> list[int]:
        return [w.proc.pid for w in list(self._idle.queue)]

    def close(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                break
        self._launcher.shutdown(wait=False)
