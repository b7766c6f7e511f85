"""The warm worker: runs inside the jail, imports torch once, forks one child per submission.

argv: SIDE_FD MODE APP_DIR SITE_PACKAGES... (MODE is `jail`, or `host` for the loud opt-in
unsandboxed mode, where nothing outside our own children may be touched). Started by exec with
an empty environment.
fd 0/1 carry frames from/to the trusted parent (`job`, `done` in; `ready`, `exit` out); SIDE_FD
is a unix socket to the parent on which only children speak: each new child says hello (the
kernel attaches its pid, which the parent uses to kill the child's whole process group) and
receives three pipes: its stdout, the job, and the results, all ending in the parent.

Never runs candidate code itself. A child (always exactly one, pre-forked and locked down
before the job arrives) runs the submission and the probes and streams one frame per check.
The worker does not reap a finished child until the parent says `done`: the zombie keeps the
process group id reserved, so the parent's kill can never hit a recycled group id. After `done`
it forks the next child, empties /tmp and says `ready`; the parent waits for that before it
sends the next job, so a worker that dies between jobs costs no job.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import errno
import io
import os
import select
import shutil
import signal
import socket
import stat
import sys
import time
import traceback
from typing import TextIO

MAX_FRAME = 64 << 20
JAILED = sys.argv[2] == "jail"


def _really_jailed() -> bool:
    """The jail-only clean-up kills every process it can see and empties /tmp; that must never
    run on a host. Inside bwrap's pid namespace, pid 1 is bwrap itself and we are not root."""
    try:
        with open("/proc/1/comm") as comm:
            init = comm.read().strip()
    except OSError:
        return False
    return init == "bwrap" and os.getuid() != 0


if JAILED and not _really_jailed():
    sys.stderr.write("worker: asked for jail mode outside a bwrap jail; refusing to start\n")
    sys.exit(70)


def _bootstrap() -> None:
    sys.path[:0] = [sys.argv[3], *sys.argv[4:]]
    # There is no ldconfig or compiler in the jail, so name the libraries pyseccomp looks up.
    find = ctypes.util.find_library
    known = {"seccomp": "libseccomp.so.2", "c": "libc.so.6"}
    ctypes.util.find_library = lambda name: known.get(name) or find(name)


_bootstrap()

import pyseccomp  # noqa: E402,F401 - loaded once here, used by every child
import torch  # noqa: E402

from evaluators.code import jail  # noqa: E402
from evaluators.code.guard import REHEARSAL, ForbiddenCalls, prepare, rehearse  # noqa: E402
from evaluators.code.probes import compile_probe, describe_exception, dumps, exec_submission, loads, run_probe  # noqa: E402
from evaluators.code.protocol import FrameDecoder, encode, write_all  # noqa: E402

# Warms the code paths every job takes (autograd, torch.save/load, the guard's kernels and tripwires). Like
# everything the worker holds, a child can read it: it answers none of the bank's tasks.
WARMUP_SOURCE = (
    "import torch\nclass Square(torch.autograd.Function):\n    @staticmethod\n"
    "    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x * x\n"
    "    @staticmethod\n    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return 2 * x * g\n"
)
WARMUP_PROBE = (
    "def probe(ns, inputs):\n    x = inputs['x'].clone().requires_grad_(True)\n"
    "    y = ns['Square'].apply(x)\n    (y.log_softmax(-1) * 2).sum().backward()\n"
    "    return {'y': y.detach(), 'g': x.grad, 'n': 1, 's': 'x'}\n"
)


class Child:
    """The pre-forked child as the worker sees it: a pid to watch, never a job or a result.

    The job and the results travel between the parent and the child on pipes the parent hands
    the child directly; the worker, whose memory every later child inherits, never holds them.
    """

    def __init__(self, side_fd: int) -> None:
        self.pid = os.fork()
        if self.pid == 0:
            try:
                _child_main(side_fd)
            except BaseException:  # a harness failure, not the candidate's: goes to our stderr
                traceback.print_exc()
            finally:
                os._exit(70)
        self.pidfd = os.pidfd_open(self.pid)

    def watch(self, send, control: int, decoder: FrameDecoder) -> None:
        """Report how the child ended if it exits before the parent says `done`. After a clean
        `end` the parent kills it and says `done` at once, without waiting for this report:
        then the old child's teardown overlaps with forking the next one."""
        if decoder.buffered() or self.pidfd not in select.select([self.pidfd, control], [], [])[0]:
            return
        info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        killed = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
        send(encode({"type": "exit", "signal": info.si_status if killed else None,
                     "code": None if killed else info.si_status}))

    def reap(self) -> None:
        os.close(self.pidfd)
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(self.pid, 0)


def _close_all_but(keep: set[int]) -> None:
    """The worker's fds (its control pipes to the parent above all) must not reach the child."""
    low = 0
    for fd in sorted(keep):
        if low < fd:  # closerange(n, n) closes *everything* on CPython 3.11 (close_range(n, -1))
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _child_main(side_fd: int) -> None:
    os.setpgid(0, 0)
    _close_all_but({0, 1, 2, side_fd})
    side = socket.socket(fileno=side_fd)
    side.send(b"hello")  # the parent reads our host pid from the credentials on this message
    jail.lock_down(JAILED)
    rehearse()  # while the job is on its way
    _, fds, _, _ = socket.recv_fds(side, 16, 3)
    side.close()
    if len(fds) != 3:
        return
    out, job_r, result_w = fds
    meta, blobs = FrameDecoder(MAX_FRAME).read(job_r) or ({}, [])
    os.close(job_r)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    if not meta:
        return
    jail.apply_limits(jail.Limits.from_dict(meta.get("limits", {})))
    results = Results(result_w)
    _run_job(meta, blobs, results)
    _flush()
    results.write(encode({"type": "end"}))
    os._exit(0)


class Results:
    """The result pipe, written by this process alone. A submission that forks leaves a copy of this process that
    comes back into the harness when the submission's code returns; run on, the copy probed the checks again and
    interleaved its frames with ours (the runner read the garbled stream as "your code exited (exit code 0) before
    the checks finished"), and a copy whose original had exited had its own results taken. The copy leaves here
    instead, unflushed (what it printed before the fork is ours, already), and the checks judge the original."""

    def __init__(self, fd: int) -> None:
        self.fd, self.pid = fd, os.getpid()

    def leave_if_copy(self) -> None:
        if os.getpid() != self.pid:
            os._exit(0)

    def write(self, frame: bytes) -> None:
        self.leave_if_copy()
        write_all(self.fd, frame)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # a closed or replaced stream is the candidate's business
            pass


# Which of our limits an error shows was hit (the runner says which; the verdict is then resource_limit). EAGAIN is
# not among them: non-blocking I/O with nothing ready raises it too, so a refused process or memfd is read from what
# the calls that start one say when refused (jail.say_when_a_process_is_refused, keep_to_one_process).
RESOURCE_ERRNOS = {errno.ENOMEM: "memory", errno.EMFILE: "open files",
                   errno.EFBIG: "disk", errno.ENOSPC: "disk", errno.EDQUOT: "disk"}
RESOURCE_EXCEPTIONS = {"MemoryError": "memory"}  # what a description starts with
RESOURCE_PHRASES = {"can't allocate memory": "memory", "can't start new thread": "processes",  # anywhere in it
                    jail.PROCESS_REFUSED: "processes", jail.FORK_REFUSED: "processes", jail.MEMFD_REFUSED: "memory"}


def _resource_kind(description: str, exc: BaseException | None = None) -> str | None:
    """The limit an error shows was hit, or None: from the exception's errno when there is one, else from how the
    error reads (a probe's error reaches here as its description)."""
    if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
        return RESOURCE_ERRNOS[exc.errno]
    for name, kind in RESOURCE_EXCEPTIONS.items():
        if description.startswith(name):
            return kind
    return next((kind for phrase, kind in RESOURCE_PHRASES.items() if phrase in description), None)


def _run_job(meta: dict, blobs: list[bytes], results: Results) -> None:
    forbidden = meta.get("forbidden")
    guard = ForbiddenCalls(forbidden["names"], forbidden["because"], keep=True) if forbidden else None
    try:
        with guard or contextlib.nullcontext():
            namespace = exec_submission(meta["source"], meta.get("imports") or "")
    except BaseException as exc:  # SyntaxError, SystemExit, a forbidden call, anything at import time
        description = describe_exception(exc)
        message = guard.violations[0] if guard and guard.violations else description
        _flush()
        results.write(encode({"type": "load_error", "error": message, "resource": _resource_kind(description, exc)}))
        return
    for check, blob in zip(meta["checks"], blobs, strict=True):
        results.leave_if_copy()  # before it probes anything
        _flush()
        results.write(_probe_frame(check, namespace, loads(blob), guard))


def _probe_frame(check: dict, namespace: dict, inputs, guard: ForbiddenCalls | None) -> bytes:
    name = check["name"]
    seen = len(guard.violations) if guard else 0
    try:
        probe = compile_probe(check["probe"], name)
        with guard or contextlib.nullcontext():
            outcome = run_probe(probe, namespace, inputs)
        if guard and len(guard.violations) > seen:  # caught and hidden by the submission: still counts
            return encode({"type": "check", "name": name, "error": guard.violations[seen], "forbidden": True})
        if outcome.error:
            return encode({"type": "check", "name": name, "error": outcome.error, "missing": outcome.missing,
                           "resource": _resource_kind(outcome.error)})
        return encode({"type": "check", "name": name}, [dumps(outcome.value)])
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, a forbidden call or an unpicklable value
        forbidden = bool(guard and len(guard.violations) > seen)
        description = guard.violations[seen] if guard and forbidden else describe_exception(exc)
        return encode({"type": "check", "name": name, "error": description,
                       "resource": _resource_kind(description, exc), "forbidden": forbidden})


def _warm_up() -> None:
    prepare()  # the guard's tables and library: once, before any fork
    # An optimizer's first step imports torch._dynamo (~1.7 s): in every fresh child otherwise.
    param = torch.nn.Parameter(torch.zeros(2))
    param.grad = torch.ones(2)
    for optimizer in (torch.optim.SGD([param], lr=0.1, momentum=0.9), torch.optim.Adam([param])):
        torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
        optimizer.step()
    namespace = exec_submission(WARMUP_SOURCE)
    inputs = loads(dumps({"x": torch.randn(4, 3, dtype=torch.float64)}))
    probe = {"name": "warm-up", "probe": WARMUP_PROBE}
    _probe_frame(probe, namespace, inputs, None)
    _probe_frame(probe, namespace, inputs, ForbiddenCalls(*REHEARSAL))


def _others(keep: int) -> list[int]:
    """Processes in the jail besides bwrap's init, us and the new spare (zombies included)."""
    me = os.getpid()
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) not in (1, me, keep)]


class TmpItself:
    """/tmp's own mode and extended attributes as the worker found them. /tmp belongs to the jail's uid, so a
    submission may chmod it, give it extended attributes (a default ACL among them) and set its times, and an
    empty directory kept them all: at 0o500 no later submission on the worker could write a file there, at 0
    the sweep failed and took the worker down, and an attribute was a note for the next candidate."""

    def __init__(self) -> None:
        self.mode = stat.S_IMODE(os.stat("/tmp").st_mode)
        self.xattrs = set(os.listxattr("/tmp"))  # a security module's label: not ours to remove

    def restore(self) -> None:
        os.chmod("/tmp", stat.S_IRWXU)  # an attribute is removed only with write permission
        for name in set(os.listxattr("/tmp")) - self.xattrs:
            os.removexattr("/tmp", name)
        os.chmod("/tmp", self.mode)  # again once an access ACL is gone (chmod rewrites one, leaving its entries)
        os.utime("/tmp")


def _sweep(jailed: bool, keep: int, tmp: TmpItself | None) -> None:
    """Kill and reap anything left of the last submission, then empty /tmp and restore /tmp itself. Outside a
    jail (the opt-in unsandboxed mode) /proc and /tmp are the host's: only reap our children."""
    for pid in _others(keep) if jailed else ():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    # As subreaper we inherit the orphans; a SIGKILLed process takes a moment to exit, and
    # until we reap it, it lingers as a zombie.
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue
        except ChildProcessError:
            break
        if not jailed or not _others(keep):
            break
        time.sleep(0.001)
    if not jailed or tmp is None:
        return
    try:
        tmp.restore()  # first: a /tmp the submission made unreadable cannot be emptied
        for entry in os.scandir("/tmp"):
            _remove(entry.path)
    except Exception as exc:  # OSError, or RecursionError in a tree 1,000 directories deep
        # Never hand the next submission what this one left: stop, and the parent (which
        # waits for `ready` before it sends a job) starts a clean worker instead.
        sys.stderr.write(f"worker: could not restore /tmp ({exc}); stopping\n")
        sys.exit(71)


def _remove(path: str) -> None:
    def fix_and_retry(func, target, _exc):  # the candidate may have chmod-ed things to 000
        os.chmod(os.path.dirname(target), 0o700)
        os.chmod(target, 0o700) if os.path.isdir(target) else None
        func(target)

    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        shutil.rmtree(path, onerror=fix_and_retry)
    else:
        os.unlink(path)


def _unbuffered(stream: TextIO) -> io.TextIOWrapper:
    """`stream` as `python -u` makes it: every write goes straight to its file descriptor."""
    raw = io.FileIO(stream.fileno(), "w", closefd=False)
    return io.TextIOWrapper(raw, encoding=stream.encoding, errors=stream.errors, write_through=True)


def main() -> None:
    side_fd = int(sys.argv[1])
    control = (os.dup(0), os.dup(1))  # keep the parent's pipes off 0/1, which children inherit
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    os.dup2(2, 1)
    # A child's fd 1 and 2 are its output pipe (_child_main), and it inherits these streams. Block-buffered (stdout
    # to a pipe), what a submission printed stayed in the child's memory until it flushed: a run the parent killed
    # (time limit, memory, a crash) showed none of it, so a candidate debugging an endless loop saw nothing, and
    # stdout came after the (line-buffered) stderr. Unbuffered, the output reaches the parent as it is written.
    for name in ("stdout", "stderr"):
        stream = _unbuffered(getattr(sys, name))
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)  # the same object: sys.__stdout__ is written to as well, and flushed
    torch.set_num_threads(1)  # libgomp's thread pool does not survive fork
    jail.prctl(jail.PR_SET_DUMPABLE, 0)  # children are the same uid: keep them out of our memory
    jail.prctl(jail.PR_SET_CHILD_SUBREAPER, 1)  # orphans of a submission come to us to be reaped
    if JAILED and not jail.landlock_abi():  # said once per worker, in the server's log
        sys.stderr.write("worker: this kernel has no Landlock (Linux 5.13 or later): submissions are not kept out "
                         "of the memory of the jail's pid 1\n")
    tmp = TmpItself() if JAILED else None
    _warm_up()
    child = Child(side_fd)
    send = lambda data: write_all(control[1], data)  # noqa: E731
    send(encode({"type": "ready", "pid": os.getpid()}))
    decoder = FrameDecoder(MAX_FRAME)
    while (frame := decoder.read(control[0])) is not None:
        meta, blobs = frame
        if meta.get("type") == "job":
            child.watch(send, control[0], decoder)
        elif meta.get("type") == "done":
            # Fork the next child first: the old one's exit (tearing down a torch-sized address
            # space) then overlaps with the fork. The parent has already killed the old group,
            # and the new child gets no job before the sweep below is done.
            old, child = child, Child(side_fd)
            old.reap()
            _sweep(JAILED, keep=child.pid, tmp=tmp)
            send(encode({"type": "ready", "pid": os.getpid()}))
        else:
            break


if __name__ == "__main__":
    main()
