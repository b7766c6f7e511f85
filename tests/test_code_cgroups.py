"""Each jail's cgroup: where it is made, what limits it gets from the settings, and running without one."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.config import Settings
from evaluators.code import cgroups
from evaluators.code.results import Status
from evaluators.code.runner import CodeRunner
from tests.code_fixtures import QUESTION_ID, relu_task, solution

# This machine's layout: cgroup v1 hierarchies beside an empty unified one ("hybrid").
HYBRID_MOUNTS = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
HYBRID_OWN = "9:name=systemd:/\n8:pids:/\n4:memory:/sessions/s1\n0::/\n"
V2_MOUNTS = "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V2_OWN = "0::/system.slice/interviewer.service\n"


def test_jail_cgroups_are_made_inside_our_own() -> None:
    hybrid = cgroups.locate(HYBRID_MOUNTS, HYBRID_OWN)
    assert [(b.path, b.memory, b.pids, b.v2) for b in hybrid] == [
        (Path("/sys/fs/cgroup/memory/sessions/s1"), True, False, False),
        (Path("/sys/fs/cgroup/pids"), False, True, False),
    ]
    (unified,) = cgroups.locate(V2_MOUNTS, V2_OWN)
    assert (unified.path, unified.memory, unified.pids, unified.v2) == (
        Path("/sys/fs/cgroup/system.slice/interviewer.service"), True, True, True)
    # A container's mount shows only its own subtree of the hierarchy.
    container = "30 23 0:27 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    (inside,) = cgroups.locate(container, "0::/docker/abc/app\n")
    assert inside.path == Path("/sys/fs/cgroup/app")
    assert cgroups.locate("22 1 0:20 / /proc rw - proc proc rw\n", "0::/\n") == []
    # A runner started by another begins in the first's leaf: its jails go beside that leaf.
    (second,) = cgroups.locate(V2_MOUNTS, "0::/system.slice/interviewer.service/interviewer-runner\n")
    assert second.path == Path("/sys/fs/cgroup/system.slice/interviewer.service")


def test_without_a_cgroup_the_jails_run_on_their_rlimits_and_say_so_once(monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cgroups, "_bases", lambda: ([], "/sys/fs/cgroup is read-only"))
    monkeypatch.setattr(cgroups, "_warned", threading.Event())
    limits = cgroups.CgroupLimits(1 << 30, 64)
    assert cgroups.JailCgroup.create(limits) is None and cgroups.JailCgroup.create(limits) is None
    with CodeRunner(workers=1, timeout_s=10.0) as runner:
        assert runner.check(relu_task(), solution(), QUESTION_ID).status is Status.PASSED
        assert all(worker.cgroup is None for worker in list(runner.pool._idle.queue))
    warned = capsys.readouterr().err
    assert warned.count("WARNING: jails run without a cgroup") == 1, warned
    assert "/sys/fs/cgroup is read-only" in warned


def test_the_jail_limits_come_from_the_settings(tmp_path: Path) -> None:
    if (why := cgroups.unavailable()) is not None:
        pytest.skip(f"no cgroup for the jails on this host: {why}")
    settings = Settings(data_dir=tmp_path, runner_workers=1, runner_memory_mb=512, runner_jail_memory_mb=1000,
                        runner_jail_tasks=50)
    derived = Settings(data_dir=tmp_path, runner_workers=1, runner_memory_mb=512)
    for config, memory, tasks in ((settings, 1000 << 20, 50), (derived, (512 + 64 + 512) << 20, 32 + 32)):
        with CodeRunner.from_settings(config) as runner:
            (worker,) = list(runner.pool._idle.queue)
            assert worker.cgroup is not None
            found = {}
            for path in worker.cgroup.paths:
                for name in ("memory.limit_in_bytes", "memory.max", "pids.max"):
                    if (path / name).exists():
                        found[name.split(".")[0]] = int((path / name).read_text())
            assert found == {"memory": memory, "pids": tasks}


def test_a_jail_memory_limit_too_small_for_a_submission_is_refused_at_start() -> None:
    with pytest.raises(ValidationError, match="INTERVIEWER_RUNNER_JAIL_MEMORY_MB=1024 leaves no room"):
        Settings(runner_memory_mb=1024, runner_jail_memory_mb=1024)
    with pytest.raises(ValidationError, match="INTERVIEWER_RUNNER_JAIL_TASKS"):
        Settings(runner_jail_tasks=3)


# Runs as the server would, in a cgroup v2 "service" cgroup of its own (argv: that cgroup, the controller to
# delegate); then, with `second`, as a runner that the first one started (the CLI under a test, say). Each
# prints what `_delegated` said ("" when the jails get a cgroup) and where the runner itself ended up.
RUNNER_ON_V2 = """
import os, subprocess, sys, time
from pathlib import Path
from evaluators.code import cgroups
service, controller = Path(sys.argv[1]), sys.argv[2]
cgroups.DELEGATED = (controller,)
if 'second' not in sys.argv:
    (service / 'cgroup.procs').write_text(str(os.getpid()))
own = Path('/proc/self/cgroup').read_text()
v2 = ''.join(line + '\\n' for line in Path('/proc/self/mountinfo').read_text().splitlines() if ' - cgroup2 ' in line)
(base,) = cgroups.locate(v2, own)
why = cgroups._delegated(base.path)
jail_dir = base.path / f'interviewer-jail-test-{os.getpid()}'
jail = cgroups.JailCgroup([(cgroups._Base(base.path, False, False, True), jail_dir)])
jail_dir.mkdir()
sleeper = subprocess.Popen(jail.command(['sleep', '60']))
deadline = time.monotonic() + 10
while Path(f'/proc/{sleeper.pid}/comm').read_text().strip() != 'sleep' and time.monotonic() < deadline:
    time.sleep(0.001)  # the shell joins the cgroup, then becomes `sleep`
joined = jail.joined(sleeper.pid)
jail.remove()  # kills the sleeper: the jail's straggler
print(repr(why), Path('/proc/self/cgroup').read_text().strip().split('::')[-1], joined, sleeper.wait(), flush=True)
if 'second' not in sys.argv:
    subprocess.run([sys.executable, *sys.argv, 'second'], check=True)
"""


@pytest.fixture
def v2_service() -> Iterator[tuple[Path, str]]:
    """A cgroup of our own in this host's cgroup v2 hierarchy, with a domain controller its parent hands it,
    like a systemd service with Delegate=yes; removed after. On a hybrid host (this one) memory and pids
    belong to v1, so the controller is hugetlb: the kernel's rule for delegating it is the same."""
    mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    roots = [Path(f[4]) for f in mounts if f[f.index("-") + 1] == "cgroup2" and f[3] == "/"]
    if os.geteuid() != 0 or not roots:
        pytest.skip("needs root and a cgroup v2 hierarchy mounted from its root")
    root = roots[0]
    available = (root / "cgroup.controllers").read_text().split()
    controller = next((name for name in ("hugetlb", "memory", "pids") if name in available), None)
    if controller is None:
        pytest.skip(f"no domain controller to delegate in {root}")
    enabled_here = controller not in (root / "cgroup.subtree_control").read_text().split()
    if enabled_here:
        (root / "cgroup.subtree_control").write_text(f"+{controller}")
    service = root / f"interviewer-test-{os.getpid()}"
    service.mkdir()
    try:
        yield service, controller
    finally:
        for path in sorted(service.rglob("*"), key=lambda p: -len(p.parts)):
            if path.is_dir():
                path.rmdir()
        service.rmdir()
        if enabled_here:
            (root / "cgroup.subtree_control").write_text(f"-{controller}")


def test_on_cgroup_v2_a_runner_and_one_it_starts_both_delegate(v2_service: tuple[Path, str], tmp_path: Path) -> None:
    """On the real kernel's v2 rules (a cgroup hands controllers to children only while no process sits in it):
    the first runner moves into a leaf and delegates; a runner it starts began in that leaf, made its own leaf
    inside it and could not delegate there while the first sat in it, so its jails ran without a cgroup."""
    service, controller = v2_service
    script = tmp_path / "runner_on_v2.py"
    script.write_text(RUNNER_ON_V2)
    done = subprocess.run([sys.executable, str(script), str(service), controller], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0, done.stderr
    leaf = f"/{service.name}/{cgroups.RUNNER_LEAF}"
    assert done.stdout.splitlines() == [f"'' {leaf} True -9"] * 2, done.stdout + done.stderr
    assert controller in (service / "cgroup.subtree_control").read_text().split()
