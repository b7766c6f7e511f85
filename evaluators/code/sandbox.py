"""Build the command that starts one sandbox worker: bubblewrap as an unprivileged uid.

Isolation layers, outermost first (measured on Debian with bubblewrap 0.8):
- The worker runs as uid/gid 65534 (nobody) in the jail, and on the host where the runner is root (an
  ordinary user's jail runs as that user's uid on the host). Run as root, bwrap would keep root's
  uid outside its user namespace (RLIMIT_NPROC is ignored for root, files owned by root stay
  readable), so a root parent first drops to 65534 with `setpriv`, then starts bwrap, which
  makes an unprivileged user namespace.
- Nobody cannot traverse /root (0700), where pyenv puts the interpreter, and bwrap re-resolves
  `--ro-bind-fd` sources by path, so an fd opened by root does not help. A root parent therefore
  wraps the chain in a private mount namespace (`unshare -m`) where the bind sources are
  mounted on a fresh tmpfs that nobody can traverse. Nothing changes on the host. An ordinary user
  makes the same mounts in a user namespace of its own (`unshare -U -r -m`) and starts bwrap there.
- bwrap unshares every namespace (user, pid, net with only its own loopback, ipc, uts, cgroup),
  disables further user namespaces, clears the environment, dies with its parent, starts a new
  session (no TIOCSTI on our terminal), mounts a fresh /proc, a tmpfs /tmp capped in size and in files
  (mounted in the private mount namespace and bound in; bwrap alone caps only its size) and a minimal /dev,
  and binds read-only only what Python and torch need plus a handful of project files: never the
  project root (it may hold a .env), never /etc beyond ld.so.cache.
- Per submission limits (rlimits, seccomp, non-dumpable) are applied in jail.py.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from evaluators.code.errors import SandboxUnavailable
from evaluators.code.jail import Limits

SANDBOX_UID = 65534
# The jail's own layout, the same whatever the host paths are (a clone under /tmp, under a path
# with spaces, under $HOME): nothing is ever bound under the jail's /tmp, which the worker empties
# after every job, and the worker is told these paths, never the host's.
JAIL_ROOT = "/sandbox"
JAIL_PYTHON = f"{JAIL_ROOT}/python"  # sys.base_prefix
JAIL_SITE = f"{JAIL_ROOT}/site-packages"  # /0, /1, ...
APP_DIR = f"{JAIL_ROOT}/app"  # the project files below
PROJECT_ROOT = Path(__file__).resolve().parents[2]
JAIL_FILES = (
    "evaluators/__init__.py",
    "evaluators/code/__init__.py",
    "evaluators/code/guard.py",
    "evaluators/code/probes.py",
    "evaluators/code/protocol.py",
    "evaluators/code/jail.py",
    "evaluators/code/worker.py",
)
# Covered by a tmpfs inside the private mount namespace only; must not hold any bind source.
STAGE_CANDIDATES = ("/mnt", "/srv", "/media", "/opt", "/var/tmp", "/tmp")
# What the jail holds besides a submission, on top of its limits: a warm worker measured 216 MiB and
# 4 tasks (bwrap twice, the worker, the idle child) in its cgroup; the rest is room for the kernel.
WORKER_BYTES = 512 << 20
WORKER_TASKS = 32
DISTRIBUTION = "torch_interviewer"  # this project's name in site-packages (pyproject's, normalized)
SAFE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
INSTALL_HINT = "install bubblewrap and util-linux (Debian/Ubuntu: `apt-get install bubblewrap util-linux`)"


@dataclass(frozen=True)
class SandboxConfig:
    tmp_bytes: int = 64 << 20  # the jail's whole writable space
    # Files and directories in it: each costs an inode and a dentry but no tmpfs block, so `tmp_bytes` never
    # sees them; 400,000 empty directories fitted in the memory limit, and the worker's sweep of them held up
    # the next job 17 s. Bounded where the runner is root (the jail's /tmp is then mounted before bwrap).
    tmp_inodes: int = 4096
    # Everything in one jail together (cgroups.py): the warm worker, the submission with all it starts,
    # memfds and /tmp with its kernel objects.
    jail_memory_bytes: int = 0  # 0: derived from a submission's limits by `for_submissions`
    jail_tasks: int = 0
    python: str = field(default_factory=lambda: os.path.realpath(sys.executable))
    prefix: str = field(default_factory=lambda: os.path.realpath(sys.base_prefix))
    site_packages: tuple[str, ...] = field(
        default_factory=lambda: tuple(dict.fromkeys(
            os.path.realpath(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")
        ))
    )

    def for_submissions(self, limits: Limits) -> SandboxConfig:
        """This config with the whole-jail limits it leaves at 0 derived from a submission's own."""
        memory = self.jail_memory_bytes or limits.memory_bytes + self.tmp_bytes + WORKER_BYTES
        return replace(self, jail_memory_bytes=memory, jail_tasks=self.jail_tasks or limits.extra_tasks + WORKER_TASKS)

    def sources(self) -> list[str]:
        """Host directories the jail needs, in the order of `targets`."""
        return [self.prefix, *self.site_packages]

    def targets(self) -> list[str]:
        """Where each source appears inside the jail."""
        return [JAIL_PYTHON, *(f"{JAIL_SITE}/{i}" for i in range(len(self.site_packages)))]

    def jail_python(self) -> str:
        """The interpreter's path inside the jail: it finds its standard library from there."""
        relative = os.path.relpath(self.python, self.prefix)
        if relative.startswith(".."):
            raise SandboxUnavailable(f"the interpreter {self.python} is not under its prefix {self.prefix}; "
                                     "use a virtualenv made from a regular Python install")
        return f"{JAIL_PYTHON}/{relative}"


def _tool(name: str) -> str:
    found = shutil.which(name, path=SAFE_PATH)
    if not found:
        raise SandboxUnavailable(f"code checks need `{name}` to run submissions safely: {INSTALL_HINT}")
    return found


def _bwrap_args(config: SandboxConfig, trees: list[str], app: str | None = None, tmp: str | None = None) -> list[str]:
    """`trees`: where to bind each of `config.targets()` from. `app`: a directory holding the JAIL_FILES, else
    each is bound from the project. `tmp`: a tmpfs already mounted for /tmp, else bwrap makes one (capped in
    size only)."""
    args = [
        "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
        "--clearenv",
        "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "HOME", "/tmp",
        # The interpreter may carry an absolute RUNPATH to libpython's host directory (pyenv).
        "--setenv", "LD_LIBRARY_PATH", f"{JAIL_PYTHON}/lib",
        "--hostname", "sandbox",
        "--ro-bind", "/usr/lib", "/usr/lib", "--ro-bind-try", "/usr/lib64", "/usr/lib64",
        "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--proc", "/proc", "--dev", "/dev",
        *(["--bind", tmp, "/tmp"] if tmp else ["--size", str(config.tmp_bytes), "--tmpfs", "/tmp"]),
        "--chdir", "/tmp", "--remount-ro", "/dev",  # /dev is an uncapped tmpfs otherwise
    ]
    for tree, target in zip(trees, config.targets(), strict=True):
        args += ["--ro-bind", tree, target]
    for masked in _naming_host_paths(config.site_packages):
        args += ["--ro-bind", "/dev/null", masked]
    for hidden in [*_prefix_beyond_python(config), *_interpreters_own_site_packages(config),
                   *_projects_own_packages(config.site_packages)]:
        args += ["--tmpfs", hidden, "--remount-ro", hidden]
    if app:
        args += ["--ro-bind", app, APP_DIR]
    for relative in () if app else JAIL_FILES:
        args += ["--ro-bind", f"{PROJECT_ROOT}/{relative}", f"{APP_DIR}/{relative}"]
    args += ["--remount-ro", "/"]
    return args


@cache
def _naming_host_paths(site_packages: tuple[str, ...]) -> list[str]:
    """Files of the bound site-packages that name host paths and that the worker never reads (it runs with
    -I and sets its own sys.path): the project's editable-install hook and finder (its source directories),
    and each distribution's `direct_url.json` (where it was installed from). Covered by /dev/null, which the
    jail's nodev mounts refuse to open (importlib.metadata reads that as no file)."""
    found = []
    for i, directory in enumerate(site_packages):
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(directory)):
                inside = f"{JAIL_SITE}/{i}/{name}"
                if name.startswith("__editable__"):
                    found.append(inside)
                elif name.endswith(".dist-info") and os.path.isfile(f"{directory}/{name}/direct_url.json"):
                    found.append(f"{inside}/direct_url.json")
    return found


@cache
def _projects_own_packages(site_packages: tuple[str, ...]) -> list[str]:
    """The project's own packages in a bound site-packages, where it was installed whole (`pip install .`, a
    wheel) rather than editable: the bank's reference solutions, hidden checks and `verify` code, all 15 YAML
    files of it, were readable there. The worker runs its few files from APP_DIR, so each is covered by an
    empty directory. Found from the distribution's RECORD, which lists every file it installed."""
    found = []
    for i, directory in enumerate(site_packages):
        with contextlib.suppress(OSError):
            for info in os.listdir(directory):
                if not (info.startswith(f"{DISTRIBUTION}-") and info.endswith(".dist-info")):
                    continue
                with open(f"{directory}/{info}/RECORD", encoding="utf-8") as record:
                    tops = {line.split(",", 1)[0].split("/", 1)[0] for line in record if "/" in line.split(",", 1)[0]}
                found += [f"{JAIL_SITE}/{i}/{top}" for top in sorted(tops - {info, ".."})
                          if os.path.isdir(f"{directory}/{top}") and not os.path.islink(f"{directory}/{top}")]
    return found


def _prefix_beyond_python(config: SandboxConfig) -> list[str]:
    """The prefix's directories the interpreter does not run from (it needs its executable, the standard
    library and libpython, all under bin/ and lib/): a system Python's prefix is /usr, which bound
    /usr/local whole (local configuration such as an npmrc, whatever was pip-installed system-wide) and /usr/src
    into the jail; a Docker image's is /usr/local, with its etc/. Each is covered by an empty directory."""
    kept = {"bin", "lib", "lib64", os.path.relpath(config.python, config.prefix).split(os.sep, 1)[0]}
    found = []
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(config.prefix)):
            path = os.path.join(config.prefix, name)
            if name not in kept and os.path.isdir(path) and not os.path.islink(path):
                found.append(f"{JAIL_PYTHON}/{name}")
    return found


def _interpreters_own_site_packages(config: SandboxConfig) -> list[str]:
    """The base interpreter's own site-packages when it is not one the jail uses (a virtualenv's base under
    pyenv holds whatever was installed there: 224 entries here, IPython among them): covered by an empty
    directory, so a submission cannot put it on sys.path and import what the worker never offered."""
    found = []
    for key in ("purelib", "platlib"):
        path = os.path.realpath(sysconfig.get_path(key, vars={"base": config.prefix, "platbase": config.prefix}))
        relative = os.path.relpath(path, config.prefix)
        if path not in config.site_packages and not relative.startswith("..") and os.path.isdir(path):
            found.append(f"{JAIL_PYTHON}/{relative}")
    return list(dict.fromkeys(found))


def worker_command(config: SandboxConfig, side_fd: int) -> list[str]:
    """argv that starts a worker in the jail; start it with an empty environment."""
    bwrap = _tool("bwrap")
    inner = [config.jail_python(), "-I", "-B", f"{APP_DIR}/evaluators/code/worker.py", str(side_fd), "jail",
             APP_DIR, *config.targets()[1:]]
    if os.geteuid() == 0:
        # Drop to nobody on the host last, after the mounts that need root; bwrap then maps nobody to itself.
        wrapper = [_tool("unshare"), "--mount"]
        owner, become = SANDBOX_UID, [_tool("setpriv"), f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}",
                                      "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", bwrap]
    elif userns_mounts():
        # An ordinary user makes the same mounts in a user namespace of its own, where it is root over its
        # own files only; bwrap's nested namespace then runs the jail as 65534, which is that root, so the
        # runner's uid on the host, holding no capability.
        wrapper = [_tool("unshare"), "--user", "--map-root-user", "--mount"]
        owner, become = 0, [bwrap, "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL"]
    else:
        return [bwrap, *_bwrap_args(config, config.sources()), *inner]
    stage = _stage_dir([*config.sources(), str(PROJECT_ROOT)])
    script = [f"mount -t tmpfs -o size=1m,mode=0755 jail-stage {stage}", f"mkdir {stage}/empty"]
    trees = []
    for i, source in enumerate(config.sources()):
        # Bound in through a read-only overlay: the jail's /proc/self/mountinfo names a bind mount's source
        # directory (/root/.pyenv/..., the clone's path), an overlay only its layers here in the stage. A kernel
        # without overlayfs (or, in a user namespace, before Linux 5.11) gets the bind mount itself.
        below, tree = f"{stage}/below{i}", f"{stage}/{i}"
        script.append(f"mkdir {below} {tree} && mount --bind {shlex.quote(source)} {below} && "
                      f"{{ mount -t overlay -o lowerdir={below}:{stage}/empty jail-tree {tree} 2>/dev/null || "
                      f"mount --bind {below} {tree}; }}")
        trees.append(tree)
    app = f"{stage}/app"  # the project's few files, copied (44 kB): no host path names them either
    script.append(f"mkdir {app} && (cd {shlex.quote(str(PROJECT_ROOT))} && cp --parents {' '.join(JAIL_FILES)} {app})")
    # bwrap has no option for a tmpfs's inode count, so the jail's /tmp is mounted here and bound in.
    tmp = f"{stage}/tmp"
    script.append(f"mkdir {tmp} && mount -t tmpfs -o size={config.tmp_bytes},nr_inodes={config.tmp_inodes},"
                  f"mode=0700,uid={owner},gid={owner} jail-tmp {tmp}")
    script.append("exec " + shlex.join([*become, *_bwrap_args(config, trees, app, tmp), *inner]))
    return [*wrapper, "--propagation", "private", "--", _tool("sh"), "-ec", " && ".join(script)]


@cache
def userns_mounts() -> bool:
    """Whether this user can mount tmpfs in a user namespace of its own (not where unprivileged user
    namespaces are off, nor where a security module withholds their capabilities, as Ubuntu 24.04's
    AppArmor default does for programs without a profile). Without it the jail's /tmp is capped in size
    only and its mount table names the host paths it binds."""
    try:
        probe = subprocess.run(
            [_tool("unshare"), "--user", "--map-root-user", "--mount", "--", _tool("mount"), "-t", "tmpfs",
             "-o", "size=4k,nr_inodes=4", "jail-probe", "/"], env={}, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError, SandboxUnavailable):
        return False
    if probe.returncode != 0:
        print("code runner: WARNING: jails are made without the mounts of a user namespace "
              f"({probe.stderr.decode(errors='replace').strip()[-200:] or 'unshare failed'}): the jail's /tmp "
              "is capped in size only and its mount table names host paths", file=sys.stderr)
    return probe.returncode == 0


def _stage_dir(sources: list[str]) -> str:
    for candidate in STAGE_CANDIDATES:
        inside = any(s == candidate or s.startswith(candidate + "/") for s in sources)
        if os.path.isdir(candidate) and not os.path.islink(candidate) and not inside:
            return candidate
    raise SandboxUnavailable(f"no staging directory among {STAGE_CANDIDATES} is free of bind sources")
