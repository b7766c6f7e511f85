"""Hostile submissions: each is contained, gets the right verdict, and leaves the pool healthy.

Many attacks are prefixed to a correct solution: the attack must fail harmlessly (its own
printed evidence shows how) and the verdict must still be `passed`, so grading is unaffected.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posix
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from evaluators.code import sandbox
from evaluators.code.probes import describe_exception
from evaluators.code.results import Status
from evaluators.code.runner import CodeRunner
from evaluators.code.sandbox import SandboxConfig
from tests.code_fixtures import (
    FORK_BOMB,
    PATIENT_S,
    QUESTION_ID,
    assert_pool_healthy,
    relu_task,
    solution,
    wait_until_dead,
)

SECRET = "code-runner-test-secret-4f9a2c"
TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def runner() -> Iterator[CodeRunner]:
    os.environ["CODE_RUNNER_TEST_SECRET"] = SECRET  # the server's environment holds a secret
    with CodeRunner(workers=2, timeout_s=TIMEOUT_S, memory_mb=1024) as code_runner:
        yield code_runner
    os.environ.pop("CODE_RUNNER_TEST_SECRET", None)


def run(runner: CodeRunner, source: str, with_solution: bool = False):
    if with_solution:
        source = source + "\n\n" + solution()
    result = runner.check(relu_task(), source, QUESTION_ID)
    assert_pool_healthy(runner)
    return result


def test_fork_bomb(runner: CodeRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ended by the process limit (the fork on line 3 refused), under a time limit that would not end it."""
    monkeypatch.setattr(runner, "timeout_s", PATIENT_S)
    result = run(runner, FORK_BOMB)
    assert result.status is Status.RESOURCE_LIMIT, result.to_json()
    assert all("process" in check.message and "line 3" in check.message for check in result.checks), result.to_json()


def test_busy_loop(runner: CodeRunner) -> None:
    result = run(runner, "while True:\n    pass\n")
    assert result.status is Status.TIMED_OUT
    # The job's own time, stopped at the limit (the test's clock also counted the reference run and run()'s check
    # that the pool still grades, both slow on a loaded machine).
    assert result.duration_ms < (TIMEOUT_S + 5) * 1000, result.duration_ms
    assert "time limit" in result.checks[0].message


def test_sleep_forever(runner: CodeRunner) -> None:
    result = run(runner, "import time\ntime.sleep(10**6)\n")
    assert result.status is Status.TIMED_OUT


def test_ignoring_sigalrm_does_not_escape_the_timeout(runner: CodeRunner) -> None:
    source = "import signal\nfor s in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT):\n" \
             "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n"
    assert run(runner, source).status is Status.TIMED_OUT


def test_20_gb_python_allocation(runner: CodeRunner) -> None:
    result = run(runner, "blob = bytearray(20 * 2**30)\n")
    assert result.status is Status.RESOURCE_LIMIT
    assert "MemoryError" in result.checks[0].message


def test_20_gb_torch_allocation(runner: CodeRunner) -> None:
    result = run(runner, "import torch\nt = torch.ones(5 * 2**30)\n")
    assert result.status is Status.RESOURCE_LIMIT


def test_5_gb_file(runner: CodeRunner) -> None:
    source = "chunk = b'x' * 2**20\nwith open('/tmp/big', 'wb') as f:\n" \
             "    for _ in range(5 * 1024):\n        f.write(chunk)\n"
    result = run(runner, source)
    assert result.status is Status.RESOURCE_LIMIT
    assert "File too large" in result.checks[0].message


def test_writes_outside_tmp_fail_and_tmp_does_not_persist(runner: CodeRunner) -> None:
    source = '''
for path in ["/sandbox/app/evaluators/code/worker.py", "/etc/passwd", "/x", "/usr/lib/x", "/root/x", "/dev/x"]:
    try:
        open(path, "w").write("pwned")
        print("WROTE", path)
    except OSError as exc:
        print("blocked", path, type(exc).__name__)
open("/tmp/left-behind", "w").write("x")
'''
    worker_file = Path(__file__).resolve().parents[1] / "evaluators/code/worker.py"
    before = worker_file.stat().st_mtime
    result = run(runner, source, with_solution=True)
    assert result.status is Status.PASSED
    assert "WROTE" not in result.stdout and result.stdout.count("blocked") == 6
    assert worker_file.stat().st_mtime == before and not Path("/tmp/left-behind").exists()
    for _ in range(2):  # both workers: nothing a previous submission wrote is still there
        listing = run(runner, "import os\nprint(sorted(os.listdir('/tmp')))\n", with_solution=True)
        assert listing.stdout.strip() == "[]"


# What a submission could change in its jail that outlives it, for every later submission on the same warm worker:
# the worker's scheduling (each child is forked from it: at nice 19, SCHED_IDLE and pinned to one CPU, the next
# candidates' code was starved under load), the autogroup the worker shares with bwrap's pid 1 (written through
# /proc/1/autogroup), pid 1's OOM score, and /tmp's own mode (0o500: the next candidates could not write a file),
# extended attributes and times (a note for the next submission).
JAIL_STATE = """import os
state = {"nice": os.getpriority(os.PRIO_PROCESS, 0), "policy": os.sched_getscheduler(0),
         "cpus": sorted(os.sched_getaffinity(0)), "tmp mode": oct(os.stat("/tmp").st_mode),
         "tmp xattrs": os.listxattr("/tmp"), "tmp mtime set back": os.stat("/tmp").st_mtime < 946684800}
for name in ("/proc/self/autogroup", "/proc/1/oom_score_adj"):
    try:
        state[name] = open(name).read().split()[-1]
    except OSError:
        state[name] = None  # a kernel without autogroups
try:
    open("/tmp/mine", "w").close()
    state["tmp writable"] = True
except OSError:
    state["tmp writable"] = False
print(state)
"""
TAMPER = """import os
others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
calls = [("nice", lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 19)),
         ("cpus", lambda pid: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))})),
         ("policy", lambda pid: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))]
for pid in others:
    for what, call in calls:
        try:
            call(pid)
            print("CHANGED", what, "of", pid)
        except OSError as exc:
            print("refused", what, "of", pid, exc.errno)
for which, who in ((os.PRIO_PGRP, os.getpgid(os.getppid())), (os.PRIO_USER, os.getuid())):
    try:
        os.setpriority(which, who, 19)
        print("CHANGED nice of", which, who)
    except OSError as exc:
        print("refused nice of", which, who, exc.errno)
for name, value in (("/proc/1/autogroup", "19"), ("/proc/1/oom_score_adj", "1000")):
    try:
        with open(name, "w") as proc_file:
            proc_file.write(value)
        print("WROTE", name)
    except OSError as exc:
        print("refused", name, exc.errno)
os.setxattr("/tmp", "user.note", b"from the last submission")
os.utime("/tmp", (12345, 12345))
os.chmod("/tmp", 0o500)
"""


def test_nothing_a_submission_changes_in_its_jail_reaches_the_next_one(runner: CodeRunner) -> None:
    from evaluators.code.jail import landlock_abi

    def states() -> list[str]:  # one run per worker: consecutive jobs go to the pool's workers in turn
        return [runner.check(relu_task(), JAIL_STATE + solution(), QUESTION_ID).stdout.strip()
                for _ in range(runner.pool.size)]

    before = states()
    assert all("'tmp writable': True" in state for state in before), before
    for _ in range(runner.pool.size):
        result = runner.check(relu_task(), TAMPER + solution(), QUESTION_ID)
        assert result.status is Status.PASSED, result.to_json()
        assert "CHANGED" not in result.stdout, result.stdout
        if landlock_abi():  # which also keeps the submission from writing pid 1's files
            assert "WROTE" not in result.stdout, result.stdout
    assert states() == before
    assert_pool_healthy(runner)


def test_reading_host_secrets(runner: CodeRunner) -> None:
    source = '''
import glob, os
print(dict(os.environ))
for path in ["/etc/shadow", "/proc/1/environ", "/proc/self/environ", *glob.glob("/proc/*/environ"),
             "/work/main/.env", "/root/.bashrc", "/proc/1/root/etc/shadow"]:
    try:
        print(path, open(path, "rb").read()[:2000])
    except OSError as exc:
        print("blocked", path, type(exc).__name__)
'''
    result = run(runner, source, with_solution=True)
    assert result.status is Status.PASSED
    assert SECRET not in result.stdout
    assert "root:" not in result.stdout and "blocked /etc/shadow" in result.stdout


def skip_unless_staged() -> None:
    """The jail's mounts are staged by root, or by an ordinary user in a user namespace of its own."""
    if os.geteuid() != 0 and not sandbox.userns_mounts():
        pytest.skip("this user cannot mount in a user namespace of its own (the jail is then bwrap's alone)")


def test_the_interpreters_prefix_shows_only_what_it_runs_from(runner: CodeRunner) -> None:
    """A virtualenv's base interpreter keeps its own site-packages (pyenv's held 224 entries, IPython among
    them), which `sys.path.append` made importable; and the prefix was bound whole: for a system Python that
    is /usr, with /usr/local (an npmrc, system-wide pip installs) and /usr/src."""
    config = SandboxConfig()
    hidden = [*sandbox._prefix_beyond_python(config), *sandbox._interpreters_own_site_packages(config)]
    if not hidden:
        pytest.skip("the interpreter's prefix holds only what it runs from, and its site-packages is the jail's")
    listing = run(runner, f"import os\nprint([os.listdir(path) for path in {hidden!r}])\n", with_solution=True)
    assert listing.status is Status.PASSED and listing.stdout.strip() == repr([[]] * len(hidden)), listing.stdout


def test_a_whole_install_of_the_project_keeps_its_bank_out_of_the_jail(tmp_path: Path) -> None:
    """Installed with `pip install .` (not editable), the project's packages sit in the bound site-packages:
    the jail read all 15 bank files, reference solutions and hidden checks."""
    site = tmp_path / "site"
    (site / "knowledge" / "bank").mkdir(parents=True)
    (site / "knowledge" / "bank" / "relu.yaml").write_text(f"reference_solution: {SECRET}\n")
    (site / "torch_interviewer-0.1.0.dist-info").mkdir()
    (site / "torch_interviewer-0.1.0.dist-info" / "RECORD").write_text(
        "knowledge/bank/relu.yaml,,\ntorch_interviewer-0.1.0.dist-info/RECORD,,\n../../../bin/interviewer,,\n")
    for path in (tmp_path, *tmp_path.rglob("*")):  # readable by the jail's uid, as a venv's files are
        path.chmod(0o755 if path.is_dir() else 0o644)
    config = SandboxConfig()
    with CodeRunner(workers=1, timeout_s=TIMEOUT_S, config=replace(config, site_packages=(
            *config.site_packages, str(site)))) as code_runner:
        source = "import glob\nfor path in glob.glob('/sandbox/site-packages/*/knowledge/**', recursive=True):\n" \
                 "    print(path, open(path).read() if path.endswith('.yaml') else '')\n"
        result = run(code_runner, source, with_solution=True)
    assert result.status is Status.PASSED and SECRET not in result.stdout, result.stdout
    listed = result.stdout.split()
    assert len(listed) == 1 and listed[0].endswith("/knowledge/"), listed  # there, and empty


def test_no_host_path_shows_in_the_jail(runner: CodeRunner) -> None:
    """The jail's mountinfo named each bind's host source (the interpreter under /root/.pyenv, the venv's
    site-packages, the clone's own files), and the project's editable install named the clone in its finder
    and its direct_url.json. Where the runner was not root, so did bwrap's argv in /proc/1/cmdline, under the
    user's home. (The interpreter's own files still name its prefix: see the README.)"""
    skip_unless_staged()
    source = """
import glob
site = '/sandbox/site-packages/*/'
for path in glob.glob(site + '__editable__*') + glob.glob(site + '*.dist-info/direct_url.json'):
    try:
        print(path, repr(open(path).read()))
    except OSError as exc:
        print('refused', path, type(exc).__name__)
print(open('/proc/1/cmdline').read().replace(chr(0), ' '))  # bwrap's init: its argv names each bind's source
print(open('/proc/self/mountinfo').read())  # 4 kB of the 8 kB of output kept
"""
    result = run(runner, source, with_solution=True)
    assert result.status is Status.PASSED and "/sandbox/python ro" in result.stdout, result.to_json()
    config = SandboxConfig()
    for host in (config.prefix, *config.site_packages, str(Path(__file__).resolve().parents[1])):
        if not "/usr/lib".startswith(host):  # a system Python's prefix, /usr, names the jail's own /usr/lib too
            assert host not in result.stdout, (host, result.stdout)
    assert result.stdout.count("refused") == 3 and "refused /sandbox/site-packages/0/" in result.stdout, result.stdout


def test_no_network_even_to_loopback(runner: CodeRunner) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    source = f'''
import socket
for family, address in [(socket.AF_INET, ("127.0.0.1", {port})), (socket.AF_UNIX, "\\0x")]:
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.connect(address)
        print("CONNECTED")
    except OSError as exc:
        print("blocked", type(exc).__name__)
try:
    print(socket.getaddrinfo("example.com", 80))
except OSError as exc:
    print("dns blocked", type(exc).__name__)
'''
    result = run(runner, source, with_solution=True)
    listener.setblocking(False)  # a completed connection would be waiting in the backlog
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()
    assert result.status is Status.PASSED
    assert "CONNECTED" not in result.stdout and "dns blocked" in result.stdout


def test_subprocess_os_system_and_ctypes_escapes(runner: CodeRunner) -> None:
    source = '''
import ctypes, os, subprocess, sys
try:
    print(subprocess.run(["/bin/sh", "-c", "id"], capture_output=True))
except OSError as exc:
    print("subprocess blocked", type(exc).__name__)
try:
    print(subprocess.run([sys.executable, "-c", "print('ESCAPED')"], capture_output=True).stdout)
except OSError as exc:
    print("python blocked", type(exc).__name__)
print("system status", os.system("echo ESCAPED"))
libc = ctypes.CDLL(None, use_errno=True)
print("raw socket", libc.syscall(41, 2, 1, 0), ctypes.get_errno())   # socket(AF_INET, STREAM)
print("ptrace", libc.syscall(101, 16, 1, 0, 0), ctypes.get_errno())  # PTRACE_ATTACH to pid 1
print("unshare", libc.syscall(272, 0x10000000), ctypes.get_errno())   # CLONE_NEWUSER
print("kill high bits", libc.syscall(62, ctypes.c_long((1 << 32) | 1), 9), ctypes.get_errno())
'''
    result = run(runner, source, with_solution=True)
    assert result.status is Status.PASSED
    assert "ESCAPED" not in result.stdout.replace("echo ESCAPED", "")
    for line in ("raw socket -1 1", "ptrace -1 1", "unshare -1 1", "kill high bits -1 1"):
        assert line in result.stdout, result.stdout


def test_killing_the_parent_or_everyone(runner: CodeRunner) -> None:
    pids = sorted(runner.pool.worker_pids())
    source = '''
import os, signal
for target in (os.getppid(), 1, -1, -os.getppid()):
    try:
        os.kill(target, signal.SIGKILL)
        print("KILLED", target)
    except OSError as exc:
        print("blocked", target, type(exc).__name__)
'''
    result = run(runner, source, with_solution=True)
    assert result.status is Status.PASSED
    assert "KILLED" not in result.stdout
    assert sorted(runner.pool.worker_pids()) == pids  # the same workers, never restarted


def test_thousands_of_threads(runner: CodeRunner) -> None:
    source = "import threading, time\nfor _ in range(5000):\n" \
             "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
    assert run(runner, source).status is Status.RESOURCE_LIMIT


def test_daemon_does_not_outlive_the_check(runner: CodeRunner) -> None:
    source = '''
import os, time
try:
    first = os.fork()
except BlockingIOError:  # a jail without a cgroup keeps a submission to one process
    first = 1
if first == 0:
    try:
        os.setsid()
    except OSError:
        pass
    if os.fork() == 0:
        while True:
            time.sleep(0.1)
    os._exit(0)
'''
    result = run(runner, source, with_solution=True)  # run() asserts no leftover process
    assert result.status is Status.PASSED


def test_a_fork_before_correct_code_is_judged_on_the_code(runner: CodeRunner) -> None:
    """The copy os.fork() left came back into the harness, probed the checks again and garbled the result stream, so
    a right solution failed: "not run: your code exited (exit code 0) before the checks finished"."""
    source = "import os\ntry:\n    os.fork()\nexcept BlockingIOError:  # a jail without a cgroup refuses it\n    pass\n"
    result = run(runner, source, with_solution=True)
    assert result.status is Status.PASSED, result.to_json()


def test_a_forked_copy_does_not_answer_for_the_process_that_exited(runner: CodeRunner) -> None:
    """The checks run in the process they started in: when it exits, a copy forked before is not heard instead."""
    source = "import os\ntry:\n    if os.fork() != 0:\n        os._exit(0)\nexcept BlockingIOError:\n    os._exit(0)\n"
    result = run(runner, source, with_solution=True)
    assert result.status is Status.ERROR, result.to_json()
    assert all(not c.passed and "exited (exit code 0)" in (c.message or "") for c in result.checks), result.to_json()


SEVERAL_PROCESSES = """import os, time
r, w = os.pipe()
for _ in range(3):
    if os.fork() == 0:
        held = bytearray(700 << 20)  # under each process's 1 GiB address space, 2.1 GB together
        os.write(w, b'x')
        time.sleep(3)
        os._exit(0)
print('children holding', len(b''.join(os.read(r, 1) for _ in range(3))) * 700, 'MiB', flush=True)
"""


def test_processes_together_stay_within_one_limit_without_a_cgroup(runner: CodeRunner) -> None:
    """Without a cgroup (an ordinary user's runner) each forked process had an address-space limit of its own:
    three children held 2.1 GB under a 1 GiB limit and the submission passed."""
    if any(worker.bounded for worker in list(runner.pool._idle.queue)):
        pytest.skip("the jails' cgroup bounds their processes together on this host")
    result = run(runner, SEVERAL_PROCESSES, with_solution=True)
    assert result.status is Status.RESOURCE_LIMIT and "children holding" not in result.stdout, result.to_json()


def test_one_process_filter_refuses_fork_and_memfd_but_not_threads() -> None:
    """The filter itself, on the host, so it runs wherever seccomp does (with or without bwrap or a cgroup)."""
    pytest.importorskip("pyseccomp")  # imported before the fork, so the child takes no import lock
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            from evaluators.code import jail

            jail.prctl(jail.PR_SET_NO_NEW_PRIVS, 1)
            jail.keep_to_one_process()
            seen = []
            # posix.fork is the system call itself (os.fork says why it is refused before trying it)
            for name, attempt in (("fork", posix.fork), ("memfd", lambda: os.memfd_create("m"))):
                try:
                    attempt()
                    seen.append(f"{name} allowed")
                except OSError as exc:
                    seen.append(f"{name} {errno.errorcode[exc.errno or 0]}")
            thread = threading.Thread(target=seen.append, args=("thread ran",))
            thread.start()
            thread.join()
            os.write(write, " | ".join(seen).encode())
        finally:
            os._exit(0)
    os.close(write)
    report = os.read(read, 1000).decode()
    os.waitpid(pid, 0)
    assert report == "fork EAGAIN | memfd EAGAIN | thread ran", report


def test_1_gb_of_output(runner: CodeRunner) -> None:
    result = run(runner, "line = 'x' * 2**20\nfor _ in range(1024):\n    print(line)\n")
    assert result.status is Status.RESOURCE_LIMIT
    assert len(result.stdout) < 20_000 and "output cut" in result.stdout
    assert result.duration_ms < 10_000, result.duration_ms  # the job's own time, as in test_busy_loop


def test_deep_recursion(runner: CodeRunner) -> None:
    result = run(runner, "def f(n):\n    return f(n + 1)\nf(0)\n")
    assert result.status is Status.ERROR
    assert "RecursionError" in result.checks[0].message and "line 2" in result.checks[0].message


def test_recursion_that_overflows_the_c_stack(runner: CodeRunner) -> None:
    source = "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nf(0)\n"
    result = run(runner, source)  # 3.11 keeps Python frames off the C stack: memory or time runs out
    assert result.status in (Status.ERROR, Status.RESOURCE_LIMIT, Status.TIMED_OUT)
    assert result.score == 0


def test_fake_json_verdict_on_stdout(runner: CodeRunner) -> None:
    fake = 'import json\nprint(json.dumps({"status": "passed", "score": 1.0, "passed_checks": 4}))\n'
    result = run(runner, fake + relu_task().starter)
    assert result.status is Status.FAILED and result.score < 1


FORGED_NAME = "All hidden checks passed.\n\x1b[2J<b>Score 5 / 5</b>" * 200


@pytest.mark.parametrize("source, said", [
    ("class Passed(Exception):\n    pass\nraise Passed('all passed')\n",
     'your Exception subclass "Passed": all passed (line 3: raise Passed(\'all passed\'))'),
    (f"E = type('E', (ValueError,), {{}})\nE.__name__ = {FORGED_NAME!r}\nraise E('boom')\n",
     "your ValueError subclass: boom (line 3: raise E('boom'))"),
    # Claiming to be Python's own, by name, module and qualified name: still not the very class.
    ("class ValueError(KeyError):\n    __module__, __qualname__ = 'builtins', 'ValueError'\nraise ValueError('x')\n",
     'your KeyError subclass "ValueError": \'x\' (line 3: raise ValueError(\'x\'))'),
    ("class Name(type):\n    __name__ = property(lambda cls: 'every check passed')\n"
     "class E(Exception, metaclass=Name):\n    pass\nraise E('x')\n",
     'your Exception subclass "E": x (line 5: raise E(\'x\'))'),
])
def test_an_exception_class_named_as_the_harness_would_speak_is_shown_as_the_codes_own(
        runner: CodeRunner, source: str, said: str) -> None:
    """An exception's type was shown as its class's name, which is any text the code sets: `class Passed`, or a
    name holding "All hidden checks passed", line breaks, escape sequences and markup, 10,000 characters of it,
    read in the feedback and the report as the harness's own words. A class of the submission's is now said to be
    the code's, quoted, and named only when its name is a short identifier."""
    result = run(runner, source)
    assert result.status is Status.ERROR
    assert {c.message for c in result.checks} == {f"your code failed before any check could run: {said}"}


def test_library_exception_classes_are_named_as_they_are() -> None:
    classes = [ValueError, KeyError, torch.OutOfMemoryError, torch.linalg.LinAlgError, json.JSONDecodeError]
    said = [describe_exception(c.__new__(c)).split(":")[0] for c in classes]
    assert said == ["ValueError", "KeyError", "OutOfMemoryError", "_LinAlgError", "JSONDecodeError"]


def test_pythons_and_torchs_exception_names_read_as_before(runner: CodeRunner) -> None:
    source = ("import torch\nclass MyReLU(torch.autograd.Function):\n    @staticmethod\n"
              "    def forward(ctx, x):\n        return x @ torch.zeros(5, 7)\n")
    message = run(runner, source).failures()["forward-values"]
    assert message.startswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied"), message


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "os._exit(0)"])
def test_exiting_before_the_checks(runner: CodeRunner, exit_call: str) -> None:
    result = run(runner, f"import os, sys\n{exit_call}\n", with_solution=True)
    assert result.status is Status.ERROR and result.score == 0


def test_exiting_inside_a_probe(runner: CodeRunner) -> None:
    source = solution() + "\nimport os\nMyReLU.apply = staticmethod(lambda x: os._exit(0))\n"
    result = run(runner, source)
    assert result.status is Status.ERROR and result.passed_checks == 1  # only the subclass check


def test_patched_torch_comparisons(runner: CodeRunner) -> None:
    patch = '''
import torch
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
'''
    from tests.code_fixtures import WRONG_BACKWARD

    result = run(runner, patch + WRONG_BACKWARD)
    assert result.status is Status.FAILED
    assert {"gradient-values", "gradcheck-float64"} <= set(result.failures())


def test_forged_frames_on_inherited_fds(runner: CodeRunner) -> None:
    source = '''
import os, struct, json
frame = json.dumps({"type": "end", "blobs": []}).encode()
for fd in range(3, 64):
    try:
        os.write(fd, struct.pack(">I", len(frame)) + frame)
    except OSError:
        pass
'''
    result = run(runner, source + relu_task().starter)
    assert result.status is not Status.PASSED and result.score < 1


def test_system_v_ipc_and_signalling_fcntl_are_denied(runner: CodeRunner) -> None:
    """A shared-memory segment outlives the job outside every memory limit (and can carry a note to the
    next submission on the warm worker); F_SETOWN + F_SETSIG would signal the worker around the kill rules."""
    source = (
        "import ctypes, fcntl, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('shmget', libc.shmget(0, 1 << 20, 0o1600), 'msgget', libc.msgget(0, 0o1600))\n"
        "r, w = os.pipe()\n"
        "try:\n    fcntl.fcntl(r, fcntl.F_SETOWN, 1)\n    print('F_SETOWN allowed')\n"
        "except PermissionError:\n    print('F_SETOWN denied')\n"
    )
    result = run(runner, source, with_solution=True)
    assert result.status is Status.PASSED, result.to_json()
    assert "shmget -1 msgget -1" in result.stdout and "F_SETOWN denied" in result.stdout


FORGE = '''
import io, json, os, struct, zipfile
import torch

def _result_fd():
    out = os.readlink("/proc/self/fd/1")
    for fd in range(3, 64):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("pipe:") and link != out:
            return fd

def send(meta, blobs=(), raw=None):
    raw = raw or json.dumps({**meta, "blobs": [len(b) for b in blobs]}).encode()
    data = struct.pack(">I", len(raw)) + raw + b"".join(blobs)
    view, fd = memoryview(data), _result_fd()
    while view:
        view = view[os.write(fd, view):]

def saved(value, deflate=False):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    if not deflate:
        return buffer.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    return out.getvalue()
'''


@pytest.mark.parametrize("attack", [
    'send({}, raw=b"[" * 200000 + b"]" * 200000)',  # a header nested past the stack
    'send({"type": "check", "name": ["x"]}, [saved(1.0)])',  # a name that is no name
    'send({"type": "check", "name": NAME}, [saved(torch.zeros(1).expand(2 * 10**10))])',  # 2e10 to compare
    'send({"type": "check", "name": NAME}, [saved(torch.zeros(4), deflate=True)])',  # may inflate to GBs
    'send({"type": "check", "name": NAME}, [saved(1.0)]); send({"type": "check", "name": NAME}, [saved(2.0)])',
], ids=["deep-header", "list-name", "expanded-tensor", "deflated-record", "second-result"])
def test_forged_result_frames_cost_the_trusted_side_nothing(runner: CodeRunner, attack: str) -> None:
    name = relu_task().checks[0].name
    used = time.process_time()  # the trusted side's CPU (this process), which a loaded machine does not stretch
    result = run(runner, FORGE + f"NAME = {name!r}\n{attack}\nsend({{'type': 'end'}})\nos._exit(0)\n")
    used = time.process_time() - used
    assert result.status is not Status.PASSED and not any(c.passed for c in result.checks), result.to_json()
    assert used < 10, f"{used:.1f} s of CPU"


def test_all_a_child_writes_on_its_result_pipe_is_bounded_headers_included(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only blobs counted toward MAX_CHILD_BYTES, and a child may send any number of `load_error` frames, each
    with a message of up to 1 MB in its header: one 10 s job had the trusted process hold 1.7 GB of them."""
    from evaluators.code import raw_outcome
    from evaluators.code.protocol import encode, write_all

    monkeypatch.setattr(raw_outcome, "MAX_CHILD_BYTES", 4 << 20)
    read, write = os.pipe()

    def flood() -> None:
        with contextlib.suppress(OSError):  # the reader stops reading and closes its end
            for _ in range(12):
                write_all(write, encode({"type": "load_error", "error": "x" * 1_000_000}))
        os.close(write)

    writer = threading.Thread(target=flood)
    writer.start()
    frames, outcome = raw_outcome.ChildFrames(read), raw_outcome.RawOutcome()
    while frames.read_into(outcome):
        pass
    os.close(read)
    writer.join()
    assert len(outcome.frames) <= 4, f"{len(outcome.frames)} frames of 1 MB kept"


def test_results_that_would_cost_the_trusted_side_are_refused_before_verifying() -> None:
    """Decoded outside every limit: a 2 KB tensor expanded to 2e10 elements (minutes of CPU to compare),
    and a deflated record (a few MB that inflate to gigabytes)."""
    import io
    import zipfile

    import torch

    from evaluators.code.probes import dumps, loads

    with pytest.raises(ValueError, match="elements"):
        loads(dumps({"weight": torch.zeros(1).expand(2 * 10**10)}))
    deflated = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(dumps(torch.zeros(4)))) as src, \
            zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    with pytest.raises(ValueError, match="compressed"):
        loads(deflated.getvalue())
    assert torch.equal(loads(dumps(torch.arange(4))), torch.arange(4))  # as torch.save writes it: fine
    # A pickle decodes in pure Python at about a second per MiB: a long list of numbers is refused unread.
    # Timed in CPU, which a loaded machine does not stretch: decoded, this list costs 3.2 s of it.
    long_list = dumps([0.5] * 3_000_000)  # written on the jail's side: not what is timed
    used = time.process_time()
    with pytest.raises(ValueError, match="structure over 64 KiB"):
        loads(long_list)
    assert time.process_time() - used < 1.0
    # Under the old 1 MiB bound, 480,000 zeros (0.6 s of CPU, seven checks a job: 4 s) were decoded before the
    # count of values refused them; the bank's largest pickle is 1.2 KB.
    zeros = dumps([0] * 480_000)
    used = time.process_time()
    with pytest.raises(ValueError, match="structure over 64 KiB"):
        loads(zeros)
    assert time.process_time() - used < 0.1
    assert loads(dumps({"out": torch.ones(1 << 20), "shape": [1, 2]}))["shape"] == [1, 2]  # tensor data is apart
    shared = dumps([[0] * 4000] * 4000)  # 16 KB as a pickle (one list, shared), 16 million values to walk
    used = time.process_time()
    with pytest.raises(ValueError, match="values in a result"):
        loads(shared)
    assert time.process_time() - used < 1.0


def test_a_result_of_many_empty_records_is_refused_before_either_zip_reader_walks_them() -> None:
    """Both zip readers (Python's, for the compression check, and torch's) parse every entry of an archive's
    central directory: 600,000 empty records, a 59 MB result, cost the trusted process 6 s of CPU (5 s in Python,
    holding the GIL) and 400 MB to decode; the bank's results hold at most 26 records."""
    import io
    import zipfile

    import torch

    from evaluators.code.probes import MAX_RECORDS, dumps, loads

    def padded(value: object, records: int) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(dumps(value))) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                dst.writestr(info, src.read(info))
            for i in range(records):
                dst.writestr(f"archive/pad/{i}", b"")
        return out.getvalue()

    forged = padded(torch.zeros(4), 100_000)  # 10 MB: a second of CPU to decode (the 59 MB version took six)
    used = time.process_time()
    with pytest.raises(ValueError, match="records in a result"):
        loads(forged)
    assert time.process_time() - used < 0.2
    assert torch.equal(loads(padded(torch.zeros(4), MAX_RECORDS - 10)), torch.zeros(4))  # within the bound: decoded
    many = [torch.full((2,), float(i)) for i in range(300)]  # a record each
    assert len(loads(dumps(many))) == len(many)


def test_a_results_tensors_hold_at_most_max_elements_together() -> None:
    """Each tensor was bounded alone: one expanded to 2**24 elements and listed 150 times is 2 KB on the wire,
    and custom-dataset's `verify` concatenates the list (10 GB in the trusted process; 8 times: +460 MB)."""
    import torch

    from evaluators.code.probes import MAX_ELEMENTS, dumps, loads

    wide = torch.zeros(1).expand(MAX_ELEMENTS // 2)
    with pytest.raises(ValueError, match="tensor elements in a result"):
        loads(dumps({"shuffled": [[torch.zeros(4), wide]] * 3}))
    with pytest.raises(ValueError, match="tensor elements in a result"):  # tensors as a dict's keys count too
        loads(dumps({torch.zeros(1).expand(MAX_ELEMENTS // 2 + i): i for i in range(3)}))
    assert len(loads(dumps([wide, wide]))) == 2  # at the bound: checked


def test_a_forged_sparse_result_is_refused_before_verify_can_touch_it() -> None:
    """torch.load(weights_only=True) does not check a sparse tensor's indices: `dense - result` in a `verify`
    then wrote at element -4 of the trusted process's buffer (index 10**8: a segmentation fault)."""
    import torch

    from evaluators.code.probes import dumps, loads

    forged = torch.sparse_coo_tensor(torch.tensor([[-1], [0]]), torch.ones(1), (4, 4), check_invariants=False)
    for value in (forged, {"out": [forged]}, torch.ones(2, 2).to_sparse()):
        with pytest.raises(ValueError, match="return dense tensors"):
            loads(dumps(value))


def test_a_sparse_result_is_refused_with_a_message_that_says_dense(runner: CodeRunner) -> None:
    source = solution() + "\n_apply = MyReLU.apply\nMyReLU.apply = staticmethod(lambda x: _apply(x).to_sparse())\n"
    result = run(runner, source)
    assert result.failures()["forward-values"] == ("the value your code produced cannot be checked: return dense "
                                                   "tensors, numbers, strings, lists or dicts"), result.to_json()


# Every other process in the jail: bwrap's pid 1 (our uid, dumpable, no seccomp, no limits) and the worker.
OTHERS_MEMORY = """
import os
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    for mode in ("r+b", "rb"):
        try:
            open(f"/proc/{pid}/mem", mode).close()
            print("OPENED", pid, mode)
        except OSError as exc:
            print("refused", pid, mode, exc.errno)
"""


def test_no_other_process_in_the_jail_can_be_read_or_written(runner: CodeRunner) -> None:
    """Written, pid 1's memory ran the attacker's code outside the filter and limits, past the job and the
    worker, answering for the next user's job (a Landlock domain stops it)."""
    from evaluators.code.jail import landlock_abi

    if not landlock_abi():
        pytest.skip("this kernel has no Landlock")
    result = run(runner, OTHERS_MEMORY, with_solution=True)
    assert result.status is Status.PASSED and "refused 1 r+b" in result.stdout, result.stdout
    assert "OPENED" not in result.stdout, result.stdout


def test_files_in_tmp_are_bounded_in_number_too(runner: CodeRunner) -> None:
    """Empty directories cost an inode and a dentry each but no tmpfs block: 400,000 of them fitted in the
    size and memory limits, the submission passed, and the worker's sweep of them held up the next job 17 s."""
    skip_unless_staged()
    source = ("import os\nn = 0\ntry:\n    while True:\n        os.mkdir(f'/tmp/{n}')\n        n += 1\n"
              "finally:\n    print('made', n, flush=True)\n")
    result = run(runner, source, with_solution=True)
    assert result.status is Status.RESOURCE_LIMIT, result.to_json()
    assert "No space left on device" in result.checks[0].message
    assert int(result.stdout.split()[-1]) < SandboxConfig().tmp_inodes


# Memory the rlimits do not see: shmem (memfds) and the kernel's objects for files (bounded in number as
# well: see the test above). Each jail's cgroup bounds it. A small jail (about 180 MiB beside a warm worker
# of ~220 MiB) so the attack meets the limit in a second or two.
MEMFD_HOARD = """import os
chunk = b'\\1' * 2**20
held = []
for i in range(120):  # 1.8 GB: RLIMIT_NOFILE is 128, RLIMIT_FSIZE caps each memfd at 16 MiB
    fd = os.memfd_create(f'm{i}')
    for _ in range(15):
        os.write(fd, chunk)
    held.append(fd)
print('held', 15 * len(held), 'MiB in memfds', flush=True)
"""
@pytest.fixture(scope="module")
def small_jail() -> Iterator[CodeRunner]:
    from evaluators.code import cgroups

    if (why := cgroups.unavailable()) is not None:
        pytest.skip(f"no cgroup for the jails on this host: {why}")
    with CodeRunner(workers=1, timeout_s=10.0, memory_mb=256, jail_memory_mb=400, jail_tasks=6) as code_runner:
        yield code_runner
        last = jail_cgroups(code_runner)
    assert last and not any(path.exists() for path in last), "a jail's cgroup outlived its pool"


def jail_cgroups(runner: CodeRunner) -> set[Path]:
    """The cgroup directories (one per hierarchy) of the pool's idle workers."""
    return {path for worker in list(runner.pool._idle.queue) if worker.cgroup for path in worker.cgroup.paths}


def test_memory_outside_the_rlimits_meets_the_jails_memory_limit(small_jail: CodeRunner) -> None:
    before = jail_cgroups(small_jail)
    result = run(small_jail, MEMFD_HOARD, with_solution=True)
    assert result.status is Status.RESOURCE_LIMIT, result.to_json()
    assert "memory limit" in result.checks[0].message
    # Before its time limit, by the job's own clock (the test's also counted the jail's replacement, 17 s
    # on a loaded machine): the memory limit ended it, not the clock.
    assert result.duration_ms < small_jail.timeout_s * 1000, result.duration_ms
    assert before and not any(path.exists() for path in before)  # that jail was replaced, its cgroup removed


def test_output_printed_before_the_jails_memory_limit_killed_the_run_is_shown(small_jail: CodeRunner) -> None:
    """The kernel kills the child at the jail's memory limit: what it printed before, block-buffered, died with it."""
    result = run(small_jail, "print('about to hoard')\n" + MEMFD_HOARD, with_solution=True)
    assert result.status is Status.RESOURCE_LIMIT, result.to_json()
    assert result.stdout.startswith("about to hoard\n"), result.to_json()


def test_the_jails_task_limit_counts_every_task_in_the_jail(small_jail: CodeRunner) -> None:
    """6 tasks: bwrap twice, the worker, the child and one thread of the submission's. (RLIMIT_NPROC would
    allow 32 more, less the tasks other jails run as the same uid on this host.)"""
    (worker,) = list(small_jail.pool._idle.queue)
    assert worker.cgroup is not None
    (events,) = [path / "pids.events" for path in worker.cgroup.paths if (path / "pids.events").exists()]
    source = "import threading, time\nfor _ in range(3):\n    threading.Thread(target=time.sleep, args=(2,)).start()\n"
    result = run(small_jail, source, with_solution=True)
    assert result.status is Status.RESOURCE_LIMIT, result.to_json()
    assert "can't start new thread" in result.checks[0].message
    assert int(events.read_text().split()[-1]) > 0  # refused by the cgroup, not by the rlimit


def test_a_killed_workers_cgroup_goes_with_it(small_jail: CodeRunner) -> None:
    (jail,) = small_jail.pool.worker_pids()
    before = jail_cgroups(small_jail)  # one directory per hierarchy (memory, pids)
    os.killpg(jail, signal.SIGKILL)
    wait_until_dead(jail)  # a job sent to a worker still dying is lost with it, by design: not what this is about
    assert run(small_jail, solution()).status is Status.PASSED  # a fresh worker in a fresh cgroup
    after = jail_cgroups(small_jail)
    assert before and len(after) == len(before) and not any(path.exists() for path in before), (before, after)
