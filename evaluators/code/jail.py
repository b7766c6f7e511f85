"""Per-submission limits, applied inside the sandbox in the forked child before untrusted code.

Runs in the jail: standard library plus pyseccomp only. The child is already uid 65534 in
bubblewrap's namespaces; here it becomes non-dumpable (no /proc/<pid>/mem, no core), enters a
Landlock domain, gets a seccomp deny-list, and hard rlimits (soft == hard, so it cannot raise them back).
The warm worker and bwrap's pid 1 outlive the job and run as the same uid, so whatever the child could
change of theirs would reach every later submission on that worker: their memory, signals, scheduling and
/proc files are all refused here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import resource
from dataclasses import dataclass
from typing import Any

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
_libc = ctypes.CDLL(None, use_errno=True)
# Landlock's system calls have one number on every architecture that has them.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
# What the domain handles (and, with no rule to allow it, denies): device nodes, which the jail never makes,
# and opening files for writing outside WRITABLE. The point of the domain is first itself: a process in it
# cannot ptrace, nor open /proc/<pid>/mem of, any process outside it. bwrap's pid 1 runs as our uid, dumpable,
# with no seccomp and no limits: a submission that could write its memory would run code there that outlives
# the job and speaks for the worker. Its /proc files are ours to write too: /proc/1/autogroup set the nice
# of the autogroup the worker and every later child share (19: the next candidates' code starved under load),
# and /proc/1/oom_score_adj. Everything else writable in the jail is read-only or /proc: only /tmp and /dev
# (/dev/null; the mount is read-only) are written through a path. Pipes and sockets (/dev/stdout) stay open.
LANDLOCK_ACCESS_FS_WRITE_FILE = 1 << 1
LANDLOCK_ACCESS_FS_MAKE_CHAR, LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 6, 1 << 11
WRITABLE = ("/tmp", "/dev")
LANDLOCK_SCOPE_SIGNAL = 1 << 1  # ABI 6: no signal to a process outside the domain either

# Denied outright with EPERM. Sockets: no network (even the jail's own loopback) and no
# abstract unix sockets. Processes: no tracing, no reading other processes' memory, no
# new sessions or groups (so the whole submission stays in one killable process group),
# no exec (no shell escapes). Kernel surface: namespaces, mounts, bpf, io_uring, keyrings.
DENIED = (
    "socket", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "process_madvise",
    "execve", "execveat", "setsid", "setpgid",
    "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_by_handle_at",
    "name_to_handle_at", "fanotify_init", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "syslog", "mount_setattr", "fsopen", "fsmount", "move_mount",
    "open_tree",
    # System V and POSIX message-queue IPC: their objects outlive the process (a shared-memory segment
    # outside every memory limit, or a note left for the next submission on the same warm worker).
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr",
)
# fcntl commands that make the kernel signal another process (F_SETOWN, F_SETSIG, F_SETOWN_EX): a way
# around the kill rules below.
SIGNALLING_FCNTL = (8, 10, 15)
# Calls that set another process's scheduling, allowed between processes of one uid: at nice 19, SCHED_IDLE or
# pinned to one CPU, the worker forked every later child so (the next candidates' code starved under load, for
# the worker's 200 jobs). Refused for the protected processes (the pid argument's position is given), and
# setpriority and ioprio_set refused for anything but one process (a group or a whole uid).
SCHEDULING_CALLS = {"setpriority": 1, "ioprio_set": 1, "sched_setaffinity": 0, "sched_setscheduler": 0,
                    "sched_setparam": 0, "sched_setattr": 0}
ONE_PROCESS_ONLY = {"setpriority": 0, "ioprio_set": 1}  # PRIO_PROCESS, IOPRIO_WHO_PROCESS
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
LOW32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 2048 << 20  # address space on top of what the warm worker already maps
    cpu_seconds: int = 11
    file_bytes: int = 16 << 20
    open_files: int = 128
    extra_tasks: int = 32  # processes + threads the submission may add
    # 1 where no cgroup bounds the jail's processes together: the submission then stays one process (see
    # `keep_to_one_process`). Set by the trusted side per worker, not by the runner's settings.
    one_process: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> Limits:
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__})


def prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def other_tasks() -> list[int]:
    """Every pid/tid in this pid namespace that is not us: the worker, bwrap's init."""
    me = os.getpid()
    tasks = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            try:
                tasks += [int(t) for t in os.listdir(f"/proc/{entry}/task")]
            except OSError:
                tasks.append(int(entry))
    return tasks


def install_seccomp(protected: list[int]) -> None:
    """Deny-list filter. Pid arguments are compared on their low 32 bits (the kernel reads
    pid_t) so high garbage bits cannot slip a forbidden pid past the filter."""
    import pyseccomp as sc

    deny = sc.ERRNO(errno.EPERM)
    filt = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        try:
            filt.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):
            pass  # syscall unknown to this kernel/libseccomp: nothing to deny
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # flags hidden in memory: make libc use clone
    for flag in NAMESPACE_FLAGS:
        filt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    filt.add_rule(deny, "prlimit64", sc.Arg(0, sc.NE, 0))  # only our own limits, only downwards
    for pid in {*protected, 1}:
        for value in (pid & LOW32, -pid & LOW32):
            filt.add_rule(deny, "kill", sc.Arg(0, sc.MASKED_EQ, LOW32, value))
        filt.add_rule(deny, "tkill", sc.Arg(0, sc.MASKED_EQ, LOW32, pid))
        filt.add_rule(deny, "tgkill", sc.Arg(0, sc.MASKED_EQ, LOW32, pid))
        filt.add_rule(deny, "tgkill", sc.Arg(1, sc.MASKED_EQ, LOW32, pid))
    filt.add_rule(deny, "kill", sc.Arg(0, sc.MASKED_EQ, LOW32, LOW32))  # kill(-1, ...)
    for name, which in ONE_PROCESS_ONLY.items():
        filt.add_rule(deny, name, sc.Arg(0, sc.NE, which))
    for name, position in SCHEDULING_CALLS.items():
        for pid in {*protected, 1}:
            filt.add_rule(deny, name, sc.Arg(position, sc.MASKED_EQ, LOW32, pid & LOW32))
    for command in SIGNALLING_FCNTL:
        filt.add_rule(deny, "fcntl", sc.Arg(1, sc.MASKED_EQ, LOW32, command))
    filt.load()


def _syscall(number: int, *args: object) -> int:
    function = _libc.syscall
    function.restype = ctypes.c_long
    return int(function(ctypes.c_long(number), *args))


def landlock_abi() -> int:
    """This kernel's Landlock ABI version; 0 without Landlock (before Linux 5.13, or turned off)."""
    return max(0, _syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION))


def enter_landlock_domain() -> int:
    """Enter a Landlock domain of our own; its ABI version, or 0 where the kernel has none (the seccomp
    filter and rlimits still apply there, but pid 1's memory is not protected)."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    fields = [LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK]
    if abi >= 6:
        fields += [0, LANDLOCK_SCOPE_SIGNAL]  # handled_access_net, scoped
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in WRITABLE:
            _allow_writes_beneath(ruleset, path)
        if _syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


class _PathBeneath(ctypes.Structure):
    """struct landlock_path_beneath_attr (packed)."""

    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _allow_writes_beneath(ruleset: int, path: str) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneath(LANDLOCK_ACCESS_FS_WRITE_FILE, fd)
        if _syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                    ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def lock_down(jailed: bool) -> None:
    """Job-independent part, done in the pre-forked child while it waits for work."""
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_NO_NEW_PRIVS, 1)  # before Landlock, which requires it
    if jailed:
        enter_landlock_domain()
    install_seccomp(other_tasks() if jailed else [os.getppid()])


CLONE_VM = 0x00000100


def keep_to_one_process() -> None:
    """Without a cgroup each new process gets an address-space limit of its own (3 children held 3,048 MiB
    under a 1 GiB limit), and a memfd's pages count in no rlimit (1.65 GB in 120 of them). So no fork (a clone
    that does not share our memory; threads and vfork do) and no memfd: both fail with EAGAIN, as at the task
    limit, which the verdict reads as resource_limit. A second filter on top of `install_seccomp`'s."""
    import pyseccomp as sc

    refuse = sc.ERRNO(errno.EAGAIN)
    filt = sc.SyscallFilter(sc.ALLOW)
    filt.add_rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_VM, 0))
    for name in ("fork", "memfd_create"):
        try:
            filt.add_rule(refuse, name)
        except (OSError, ValueError, RuntimeError):
            pass  # no such syscall on this architecture (fork on arm64): clone covers it
    filt.load()
    # The filter refuses both anyway; these say why ("Resource temporarily unavailable" did not).
    os.fork = _refused_fork
    os.memfd_create = _refused_memfd


FORK_REFUSED = "the sandbox runs a code task in one process: it cannot start another (os.fork, multiprocessing)"
MEMFD_REFUSED = "the sandbox cannot bound the memory of a memfd here, so it makes none (os.memfd_create)"
PROCESS_REFUSED = "the sandbox allows no more processes or threads"


def _refused_fork() -> int:
    raise BlockingIOError(errno.EAGAIN, FORK_REFUSED)


def _refused_memfd(*args: object, **kwargs: object) -> int:
    raise BlockingIOError(errno.EAGAIN, MEMFD_REFUSED)


def say_when_a_process_is_refused() -> None:
    """EAGAIN is both a process refused at the task limit and non-blocking I/O with nothing ready, and the verdict
    read every BlockingIOError as the first (a resource limit). The calls that start a process say when they were
    refused, so an EAGAIN they did not mark is the code's own error. A call reached by another route (posix.fork)
    is refused all the same, and read as that error."""
    import _posixsubprocess

    for module, name in ((os, "fork"), (os, "forkpty"), (os, "posix_spawn"), (os, "posix_spawnp"),
                         (_posixsubprocess, "fork_exec")):
        start = getattr(module, name, None)
        if start is not None:
            setattr(module, name, _refusal_said(start))


def _refusal_said(start: Any) -> Any:
    @functools.wraps(start)
    def starting(*args: Any, **kwargs: Any) -> Any:
        try:
            return start(*args, **kwargs)
        except BlockingIOError as exc:
            raise BlockingIOError(errno.EAGAIN, f"{PROCESS_REFUSED} ({exc.strerror})") from None

    return starting


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _task_count() -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                count += 1
    return count


def apply_limits(limits: Limits) -> None:
    """Hard rlimits for this job. NPROC counts our uid's tasks in this jail (bwrap's init,
    the worker, us), so the allowance is on top of what exists now."""
    pairs = {
        resource.RLIMIT_AS: _vm_size() + limits.memory_bytes,
        resource.RLIMIT_CPU: limits.cpu_seconds,
        resource.RLIMIT_FSIZE: limits.file_bytes,
        resource.RLIMIT_NOFILE: limits.open_files,
        resource.RLIMIT_NPROC: _task_count() + limits.extra_tasks,
        resource.RLIMIT_CORE: 0,
    }
    for kind, value in pairs.items():
        resource.setrlimit(kind, (value, value))
    say_when_a_process_is_refused()
    if limits.one_process:
        keep_to_one_process()
