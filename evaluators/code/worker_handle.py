"""Trusted side of one sandbox worker: start it, run one job at a time with a wall clock and an
output cap.

The parent never trusts what comes out of the jail: frames are size-bounded, the candidate's
output is read and cut off on this side (raw_outcome.py), and at the end of every job the parent
itself kills the child's whole process group, using the host pid the kernel attached to the child's hello
(SCM_CREDENTIALS cannot be forged without privileges). The worker keeps the child unreaped
until the parent says `done`, so that group id cannot have been recycled.

The job and the child's results travel on pipes between this parent and the child alone (passed
to the child over the side socket): the long-lived worker, whose memory every later child
inherits by fork, never holds a submission, a probe or a probe's output.
"""

from __future__ import annotations

import array
import collections
import contextlib
import os
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from evaluators.code.cgroups import CgroupLimits, JailCgroup
from evaluators.code.errors import ProtocolError, SandboxUnavailable
from evaluators.code.jail import Limits
from evaluators.code.protocol import FrameDecoder, FrameError, encode, write_all
from evaluators.code.raw_outcome import (
    MAX_FRAME,
    ChildFrames,
    RawOutcome,
    drain_output,
    ended,
    ended_cleanly,
    read_output,
    ready_to_read,
)
from evaluators.code.sandbox import PROJECT_ROOT, SANDBOX_UID, SandboxConfig, worker_command

STARTUP_TIMEOUT_S = 60.0
GRACE_S = 2.0  # for the worker to report a child we just killed
# The child's output is unbuffered (worker.py), so a printing loop writes a line at a time; read as each line came,
# a loop printing to the output limit cost this process 260 ms of CPU instead of 3 ms. Read at most this often, the
# pipe gathers lines in between (a child that fills it waits; results and the child's exit are still seen at once).
OUTPUT_PAUSE_S = 0.01


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
        whole = config.for_submissions(Limits())  # where no runner derived them from its own limits
        self.cgroup = JailCgroup.create(CgroupLimits(whole.jail_memory_bytes, whole.jail_tasks))
        command = self._command(config, theirs.fileno(), unsandboxed)
        if self.cgroup is not None:
            command = self.cgroup.command(command)
        try:
            self.proc = launch(lambda: subprocess.Popen(  # empty environment: no secrets in /proc/*/environ
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=[theirs.fileno()], env={}, cwd="/", start_new_session=True, close_fds=True,
            ))
        except BaseException:
            if self.cgroup is not None:
                self.cgroup.remove()
            raise
        finally:
            theirs.close()
        stdin, stdout, stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None  # all three are pipes
        self._stdin, self._stdout, self._err = stdin, stdout, stderr
        self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_reader.start()
        self._decoder = FrameDecoder(MAX_FRAME)
        self._ready = False
        if not self.await_ready(STARTUP_TIMEOUT_S):
            raise SandboxUnavailable(self._startup_failure())
        # Whether the jail's processes are bounded together; if not, a submission is kept to one process.
        self.bounded = self.cgroup is not None and self.cgroup.joined(self.proc.pid)  # warns if not

    def await_ready(self, timeout: float = 10.0) -> bool:
        """Wait for the worker's `ready` (sent at start and after each job's clean-up). False, and
        the worker killed, when it died or hung instead: then no job was handed to it."""
        if self.proc.poll() is not None:
            self._ready = False
            self.kill()
        if not self._ready and self.alive:
            frame = self._next_frame(time.monotonic() + timeout)
            while frame is not None and frame[0].get("type") == "exit":  # a cleanly ended child's
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
        for line in self._err:
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
        fd = self._stdout.fileno()
        try:
            while (frame := self._decoder.frame()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not ready_to_read([fd], remaining):
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
        if not ready_to_read([self._side.fileno()], timeout):
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
        if not self.bounded:
            meta = {**meta, "limits": {**meta.get("limits", {}), "one_process": 1}}
        oom_kills = self.cgroup.oom_kills() if self.cgroup else 0
        self.jobs += 1
        self._ready = False  # until the worker says so after this job's clean-up
        ours: list[int] = []
        try:
            child = self._child_pid(timeout=10)
            _first_to_go(child)
            out_r, out_w = os.pipe()
            job_r, job_w = os.pipe()
            results_r, results_w = os.pipe()
            ours = [out_r, job_w, results_r]
            theirs = array.array("i", [out_w, job_r, results_w])
            try:
                self._side.sendmsg([b"job"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, theirs)])
            finally:
                for fd in theirs:
                    os.close(fd)
            results = ChildFrames(results_r)
            try:
                write_all(self._stdin.fileno(), encode({"type": "job"}))  # watch the child's exit
                write_all(job_w, encode(meta, blobs))
                os.close(job_w)
                ours.remove(job_w)
                outcome.delivered = True
                self._collect(outcome, results, out_r, start + timeout, keep, limit)
            finally:
                _kill_group(child)  # always: daemons, threads and children die with the check
                self._finish(outcome, results)
                # After `end` the child has flushed: its output is already in the pipe.
                drain_output(out_r, outcome, keep, wait=0.0 if ended_cleanly(outcome) else 0.5)
            if not outcome.worker_lost:
                write_all(self._stdin.fileno(), encode({"type": "done"}))
        except (OSError, ProtocolError):
            outcome.worker_lost = True
        finally:
            for fd in ours:
                os.close(fd)
        if self.cgroup is not None:  # whichever process the kernel chose to kill, the job is why
            outcome.memory_exceeded = self.cgroup.oom_kills() > oom_kills
        # A jail that hit its memory limit may still hold what the job left there (the kernel objects of
        # its files, until the sweep): a fresh jail is cheaper than finding out.
        if outcome.worker_lost or outcome.memory_exceeded:
            self.kill()
        outcome.duration_ms = (time.monotonic() - start) * 1000
        return outcome

    def _finish(self, outcome: RawOutcome, results: ChildFrames) -> None:
        """After the kill. A child that said `end` is done: nothing it writes later counts, and
        how it died does not matter (the worker may still report it; await_ready skips that).
        Otherwise frames it wrote before it died still count, and the worker's report of how
        it ended is the reason the remaining checks did not run."""
        if ended_cleanly(outcome):
            return
        deadline = time.monotonic() + GRACE_S
        while not results.closed and time.monotonic() < deadline:
            if ready_to_read([results.fd], deadline - time.monotonic()):
                results.read_into(outcome)
        while not outcome.worker_lost and outcome.exit is None:
            frame = self._next_frame(deadline)
            if frame is None or frame[0].get("type") != "exit":
                outcome.worker_lost = True
            else:
                outcome.exit = frame[0]

    def _collect(self, outcome: RawOutcome, results: ChildFrames, out_r: int, deadline: float, keep: int,
                 limit: int) -> None:
        fd = self._stdout.fileno()
        watched = [fd, results.fd, out_r]
        output_at = 0.0  # when the child's output is read next
        while not ended(outcome):
            now = time.monotonic()
            if now >= deadline:
                outcome.timed_out = True
                return
            pausing = now < output_at
            listening = [f for f in watched if not (pausing and f == out_r)]
            ready = ready_to_read(listening, min(deadline, output_at) - now if pausing else deadline - now)
            if out_r in ready:
                if not read_output(out_r, outcome, keep):
                    watched.remove(out_r)  # the child closed its output; frames may still come
                output_at = time.monotonic() + OUTPUT_PAUSE_S
            if outcome.stdout_bytes > limit:
                outcome.output_exceeded = True
                return
            if results.fd in ready and not results.read_into(outcome):
                watched.remove(results.fd)  # closed (or garbled): the worker reports the exit
            if fd in ready:
                frame = self._next_frame(time.monotonic() + GRACE_S)
                if frame is None or frame[0].get("type") != "exit":
                    outcome.worker_lost = True
                    return
                outcome.exit = frame[0]

    def signal_kill(self) -> None:
        """SIGKILL the jail, without waiting for it to go: `kill` then waits. Several jails told at once end together
        (the kernel takes ~0.2 s to empty each one's cgroup, which `kill` waits for)."""
        if self.alive:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)

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
        if self.cgroup is not None:
            self.cgroup.remove()
        self._side.close()
        for stream in (self._stdin, self._stdout):
            stream.close()


def _first_to_go(pid: int) -> None:
    """At the jail's memory limit the kernel kills one process: let it be the submission (and all it
    forks), not the warm worker, whose resident set is larger. Set from here: the child is not dumpable,
    so its own /proc files are not its to write. Only root may raise another process's score."""
    try:
        with open(f"/proc/{pid}/oom_score_adj", "w") as score:
            score.write("1000")
    except OSError:
        pass  # not root (then the kernel picks by size alone), or no OOM killer at all


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


