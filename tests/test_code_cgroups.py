"""Each jail's cgroup: where it is made, what limits it gets from the settings, and running without one."""

from __future__ import annotations

import threading
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
