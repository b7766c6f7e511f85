"""A cgroup of its own for each jail: one memory and one task limit over the whole bwrap tree.

The rlimits in jail.py are per process and see only address space: memfd and tmpfs pages
(shmem) and the kernel's own objects for files a submission makes (inodes, dentries) are
outside them, and a submission can spread its memory over several processes. The memory
controller counts all of these, for every process in the jail together (measured on Linux 6.18,
cgroup v1: 1.65 GB written to memfds and 400,000 empty directories on a tmpfs were each charged
to the cgroup and stopped by its OOM killer at the limit).

Made and removed here, on the trusted side; the jail never sees a cgroup file (bwrap unshares
the cgroup namespace and mounts no cgroupfs). cgroup v1 (a memory and a pids hierarchy, as on
hybrid hosts) or v2 where the controllers are delegated to our own cgroup. Each jail's cgroup is
made inside the cgroup this process runs in, so a limit set above us still applies. Where none
can be made (not root, a read-only cgroupfs, no delegation) the runner says so once and runs
with the rlimits alone.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PREFIX = "interviewer-jail-"
RUNNER_LEAF = "interviewer-runner"  # cgroup v2: where this process goes so that its cgroup may delegate
DELEGATED = ("memory", "pids")  # cgroup v2: the controllers our cgroup hands to the jails' (a test swaps them)
REMOVE_WAIT_S = 5.0
# Joins the cgroups whose cgroup.procs files are named before `--`, then runs the rest: the jail's
# first process is in its cgroups before it forks anything. A failed join is reported by `joined`.
JOIN = 'while [ "$1" != -- ]; do echo $$ 2>/dev/null >"$1" || :; shift; done; shift; exec "$@"'
STALE_AFTER_S = 60.0  # an empty jail cgroup this old, of a runner no longer alive, was left behind
_names = itertools.count()
_token = secrets.token_hex(4)  # runners in other pid namespaces may have our pid
_warned = threading.Event()


@dataclass(frozen=True)
class CgroupLimits:
    """For the whole jail: the warm worker, the submission and all it starts, its /tmp."""

    memory_bytes: int
    tasks: int


@dataclass(frozen=True)
class _Base:
    """Where jail cgroups are made in one hierarchy, and which limit files it has."""

    path: Path
    memory: bool
    pids: bool
    v2: bool


class JailCgroup:
    """The cgroup directories (one per hierarchy) of one jail."""

    def __init__(self, dirs: list[tuple[_Base, Path]]) -> None:
        self._dirs = dirs

    @classmethod
    def create(cls, limits: CgroupLimits) -> JailCgroup | None:
        """A new cgroup with these limits, or None (said once) where this host gives us none."""
        bases, why = _bases()
        if not bases:
            _warn(why)
            return None
        name = f"{PREFIX}{os.getpid()}-{_token}-{next(_names)}"
        made: list[tuple[_Base, Path]] = []
        try:
            for base in bases:
                path = base.path / name
                path.mkdir()
                made.append((base, path))
                _set_limits(base, path, limits)
        except OSError as exc:
            JailCgroup(made).remove()
            _warn(f"cannot make a cgroup in {base.path}: {exc}")
            return None
        return cls(made)

    @property
    def paths(self) -> list[Path]:
        return [path for _, path in self._dirs]

    def command(self, argv: list[str]) -> list[str]:
        """argv run inside this cgroup from its first instruction."""
        procs = [str(path / "cgroup.procs") for _, path in self._dirs]
        return ["/bin/sh", "-c", JOIN, "sh", *procs, "--", *argv]

    def joined(self, pid: int) -> bool:
        """Whether the process is in every directory of this cgroup (a failed join is warned about)."""
        ok = all(pid in _procs(path) for _, path in self._dirs)
        if not ok:
            _say(f"could not move a jail into its cgroup {self._dirs[0][1]}: it runs without its limits")
        return ok

    def oom_kills(self) -> int:
        """How many processes of the jail the kernel killed for going over the memory limit."""
        for base, path in self._dirs:
            if base.memory:
                events = "memory.events" if base.v2 else "memory.oom_control"
                with contextlib.suppress(OSError):
                    found = re.search(r"^oom_kill (\d+)$", (path / events).read_text(), re.M)
                    return int(found.group(1)) if found else 0
        return 0

    def remove(self) -> None:
        """Remove the directories once their processes are gone, killing any straggler."""
        deadline = time.monotonic() + REMOVE_WAIT_S
        for _, path in reversed(self._dirs):
            while path.exists():
                with contextlib.suppress(OSError):
                    path.rmdir()
                    break
                if time.monotonic() > deadline:
                    _say(f"could not remove the cgroup {path}; remove it by hand once it is empty")
                    break
                for pid in _procs(path):
                    _kill_if_inside(pid, path)
                time.sleep(0.01)


def unavailable() -> str | None:
    """Why jails get no cgroup on this host, or None when they do."""
    bases, why = _bases()
    return None if bases else why


def _set_limits(base: _Base, path: Path, limits: CgroupLimits) -> None:
    if base.memory:
        (path / ("memory.max" if base.v2 else "memory.limit_in_bytes")).write_text(str(limits.memory_bytes))
        # No swap beyond the limit either; where swap is not accounted the file is missing.
        swap = ("memory.swap.max", "0") if base.v2 else ("memory.memsw.limit_in_bytes", str(limits.memory_bytes))
        with contextlib.suppress(OSError):
            (path / swap[0]).write_text(swap[1])
    if base.pids:
        (path / "pids.max").write_text(str(limits.tasks))


def _procs(path: Path) -> list[int]:
    try:
        return [int(line) for line in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_if_inside(pid: int, path: Path) -> None:
    """SIGKILL a process only while it is surely the one listed: the pidfd pins it, then its own
    cgroup file says it is still ours (the pid cannot have been recycled for someone else)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        inside = Path(f"/proc/{pid}/cgroup").read_text()
        if f"/{path.name}\n" in inside:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


def _warn(why: str) -> None:
    """Once per process: the same reason would otherwise come with every worker started."""
    if not _warned.is_set():
        _warned.set()
        _say(f"jails run without a cgroup memory and task limit ({why}); the per-process rlimits still apply")


def _say(what: str) -> None:
    print(f"code runner: WARNING: {what}", file=sys.stderr)


@cache
def _bases() -> tuple[list[_Base], str]:
    """Where to make jail cgroups on this host (found once), or why nowhere."""
    try:
        bases = locate(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError as exc:
        return [], f"cannot read the cgroup mounts: {exc}"
    if not bases:
        return [], "no cgroup memory controller is mounted"
    for base in bases:
        why = _delegated(base.path) if base.v2 else _writable(base.path)
        if why:
            return [], why
        _remove_stale(base.path)
    return bases, ""


def locate(mountinfo: str, own: str) -> list[_Base]:
    """Our own cgroup's directory in the memory and pids hierarchies (v1), else in the unified one (v2),
    from /proc/self/mountinfo and /proc/self/cgroup."""
    v1: dict[str, tuple[Path, str]] = {}  # controller -> (mount point, root)
    v2: tuple[Path, str] | None = None
    for line in mountinfo.splitlines():
        fields = line.split()
        dash = fields.index("-")
        fstype, options = fields[dash + 1], fields[dash + 3].split(",")
        point, root = Path(fields[4]), fields[3]
        if fstype == "cgroup":
            for controller in ("memory", "pids"):
                if controller in options:
                    v1.setdefault(controller, (point, root))
        elif fstype == "cgroup2" and v2 is None:
            v2 = (point, root)
    where = dict(line.split(":", 2)[1:] for line in own.splitlines())  # controllers ("" for v2) -> path
    if "memory" in v1:
        paths: dict[Path, set[str]] = {}  # one directory for controllers mounted together
        for controller, (point, root) in v1.items():
            path = next((path for names, path in where.items() if controller in names.split(",")), None)
            if path is not None:
                paths.setdefault(_inside(point, root, path), set()).add(controller)
        return [_Base(path, "memory" in kinds, "pids" in kinds, False) for path, kinds in paths.items()]
    if v2 is not None and "" in where:
        unified = _inside(*v2, where[""])
        # A runner started by another (the CLI under a test, a second server process) begins in the first's
        # leaf; jails go beside that leaf, where the controllers are on, not under it, where the first one sits.
        return [_Base(unified.parent if unified.name == RUNNER_LEAF else unified, True, True, True)]
    return []


def _inside(point: Path, root: str, own: str) -> Path:
    """Our cgroup's directory under a mount of its hierarchy (the mount may show a subtree only)."""
    if root != "/" and (own == root or own.startswith(root + "/")):
        own = own[len(root):]
    return point / own.lstrip("/")


def _writable(path: Path) -> str:
    if os.access(path, os.W_OK):
        return ""
    return f"{path} is not writable (a read-only cgroupfs, or not root: give this user the directory)"


def _delegated(path: Path) -> str:
    """Our own v2 cgroup must hand the memory and pids controllers to its children. v2 lets a cgroup do
    that only while no process sits in it, so where we do, we first move into a leaf of our own (what
    systemd asks of a service with Delegate=yes)."""
    control = path / "cgroup.subtree_control"
    try:
        if set(DELEGATED) <= set(control.read_text().split()):
            return ""
        if str(os.getpid()) in (path / "cgroup.procs").read_text().split():
            leaf = path / RUNNER_LEAF
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(os.getpid()))
        control.write_text(" ".join(f"+{name}" for name in DELEGATED))
    except OSError as exc:
        return (f"cannot enable the {' and '.join(DELEGATED)} controllers for children of {path} ({exc}); "
                "run the server alone in a delegated cgroup (systemd: Delegate=yes)")
    return ""


def _remove_stale(path: Path) -> None:
    """Empty jail cgroups left by a runner that was killed before it could remove them."""
    for entry in path.glob(f"{PREFIX}*"):
        owner = entry.name[len(PREFIX):].split("-")[0]
        with contextlib.suppress(OSError):
            old = time.time() - entry.stat().st_mtime > STALE_AFTER_S
            if old and owner.isdigit() and not Path(f"/proc/{owner}").exists():
                entry.rmdir()  # refused while any process is inside
