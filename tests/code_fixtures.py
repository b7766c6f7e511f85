"""Helpers shared by the code runner tests: the benchmark task and jail process bookkeeping."""

from __future__ import annotations

import os
import time
from functools import cache
from pathlib import Path

from evaluators.code.results import Status
from evaluators.code.runner import CodeRunner
from knowledge.loader import load_file
from knowledge.schema import CodeTask

BANK = Path(__file__).resolve().parents[1] / "knowledge" / "bank"
QUESTION_ID = "relu-autograd-function"
SANDBOX_UID = 65534
WRONG_BACKWARD = '''import torch


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x < 0).to(grad_output.dtype)
'''

FORK_BOMB = "import os\nwhile True:\n    os.fork()\n"
# A time limit for runs a limit other than time must end. The copies a fork bomb made spin on until the jail is
# killed, so at a load of 19 a bomb whose fork was refused (line 3: os.fork()) still ended after a 2 s limit:
# timed_out. This one seldom ends a run, so one the process limit did not stop still times out.
PATIENT_S = 60.0


NAIVE_LOG_SOFTMAX = """import torch


def log_softmax(x, dim=-1):
    return x - torch.log(torch.exp(x).sum(dim=dim, keepdim=True))
"""


class ScriptedRunner:
    """A run in which every hidden check of the task passes except those named, which fail as `failure` says (a
    wrong value, by default)."""

    def __init__(self, *failing: str, failure: str = "wrong") -> None:
        self.failing = failing
        self.failure = failure

    def check(self, spec, code, question_id):
        checks = [{"name": c.name, "description": c.description, "weight": c.weight,
                   "passed": c.name not in self.failing, "message": "wrong" if c.name in self.failing else None,
                   "failure": self.failure if c.name in self.failing else None}
                  for c in spec.checks]
        return {"status": "failed" if self.failing else "passed", "checks": checks,
                "score": sum(c["weight"] for c in checks if c["passed"]) / sum(c["weight"] for c in checks)}


@cache
def relu_task() -> CodeTask:
    """The ReLU task as an open one (no forbidden built-ins): the sandbox's tests attack the jail with `inspect`,
    `ctypes` and `gc`, which a restricted task refuses in the source before anything runs, so they would test
    that refusal instead of the jail. Restricted tasks have their own tests (stable-log-softmax)."""
    question = next(q for q in load_file(BANK / "autograd.yaml") if q.id == QUESTION_ID)
    assert question.code is not None
    return question.code.model_copy(update={"forbidden": None})


def solution() -> str:
    return relu_task().solution


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, real uid) for every process on the host."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            table[int(entry)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]))
        except (OSError, KeyError, ValueError):
            continue
    return table


def _descendants(root: int, table: dict[int, tuple[int, int]]) -> set[int]:
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def jail_process_counts(runner: CodeRunner) -> list[int]:
    """Processes under each idle worker's bwrap: bwrap's init, the worker, its spare child."""
    table = _processes()
    return [len(_descendants(pid, table)) for pid in runner.pool.worker_pids()]


def stray_sandbox_processes(runner: CodeRunner) -> set[int]:
    """Processes running as the sandbox uid outside every jail: not below this runner's workers and
    not below any bwrap (other tests or servers on the machine may run pools of their own)."""
    table = _processes()
    ours = set(runner.pool.worker_pids())
    for pid in list(ours):
        ours |= _descendants(pid, table)
    jailed = set()
    for pid in table:
        if _command_name(pid) == "bwrap":
            jailed |= {pid, *_descendants(pid, table)}
    return {pid for pid, (_, uid) in table.items() if uid == SANDBOX_UID} - ours - jailed


def _command_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return ""


def wait_until_clean(runner: CodeRunner, timeout: float = 10.0) -> tuple[list[int], set[int]]:
    """Wait until every worker is idle with exactly its 3 processes and nothing else runs as the sandbox
    uid. Returns the last observation (process counts per jail, stray pids), both taken at one
    instant: a worker being started runs as the sandbox uid for a moment before it is below bwrap, so
    two separate looks can disagree (a CI run once failed on that)."""
    deadline = time.monotonic() + timeout
    while True:
        counts, strays = jail_process_counts(runner), stray_sandbox_processes(runner)
        clean = len(counts) == runner.pool.size and all(c == 3 for c in counts) and not strays
        if clean or time.monotonic() >= deadline:
            return counts, strays
        time.sleep(0.05)


def assert_pool_healthy(runner: CodeRunner) -> None:
    """The pool still grades a correct answer, and no process outlived the previous check."""
    result = runner.check(relu_task(), solution(), QUESTION_ID)
    assert result.status is Status.PASSED, result.to_json()
    counts, strays = wait_until_clean(runner)
    assert counts == [3] * runner.pool.size, f"leftover processes in the jails: {counts}"
    assert not strays, f"processes of the sandbox uid outside every jail: {strays}"


def wait_until_dead(pid: int) -> None:
    """Until the process has exited (a zombie or reaped): from then on the pool's readiness check
    (`Popen.poll` in `Worker.await_ready`) finds it dead, so no job is handed to it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            break
        if state == "Z":
            break
        time.sleep(0.01)
