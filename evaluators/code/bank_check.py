"""Check that every code task's reference solution passes its own hidden checks.

The checks run a pack's own code (`inputs`, `probe`, `verify`, the reference and the starter) in this
machine's Python, not the sandbox: a pack is trusted as code. Each task runs in a forked child, so one
that never returns (an `inputs()` looping for ever) is stopped at its time limit and reported, and the
rest are still checked; whatever the task's code started is killed with it (see `_keep`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from evaluators.code.harness import self_check, starter_fails
from evaluators.code.jail import PR_SET_CHILD_SUBREAPER, prctl
from knowledge.loader import load_bank, load_file
from knowledge.schema import Question

# A task's check runs its code three times (the reference for the expected values, the reference under
# the checks, the starter); each run gets what the sandbox gives one submission (INTERVIEWER_RUNNER_TIMEOUT_S).
RUNS_PER_TASK = 3
RUN_LIMIT_S = 10.0
KEEPER_WAIT_S = 10.0  # for the keeper to kill and reap what a task started


def code_task_problems(questions: list[Question], *, run_limit_s: float = RUN_LIMIT_S) -> list[str]:
    """One line per problem: a reference that fails a check, a starter that passes them all, or a task
    whose check did not finish in RUNS_PER_TASK * run_limit_s."""
    _warm_up()
    problems: list[str] = []
    for question in questions:
        if question.code is not None:
            problems.extend(_bounded(question, RUNS_PER_TASK * run_limit_s))
    return problems


def _warm_up() -> None:
    """Torch's first ops and an optimizer's first step (it imports torch._dynamo) once here, not in every
    forked child: three tasks took 8.8 s forked cold and 0.4 s forked from a warm process."""
    import torch

    # libgomp's thread pool does not survive fork (children forked after a two-thread op took 120 s over
    # those three tasks), and one thread is what the sandbox's worker gives a submission.
    torch.set_num_threads(1)
    param = torch.nn.Parameter(torch.zeros(2))
    (param * 2).sum().backward()
    torch.optim.Adam([param]).step()


def _task_problems(question: Question) -> list[str]:
    assert question.code is not None
    failures = self_check(question.code)
    problems = [f"{question.id}: reference fails {failure}" for failure in failures]
    if not failures and not starter_fails(question.code):
        problems.append(f"{question.id}: the starter code passes every check")
    return problems


def _bounded(question: Question, limit_s: float) -> list[str]:
    # Forked, not spawned: the child inherits the imported torch instead of paying for its import per task
    # (this process runs no torch op itself, so no thread pool is copied half-held).
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    stop_r, stop_w = os.pipe()
    keeper = context.Process(target=_keep, args=(question, writer, stop_r, stop_w), daemon=True)
    keeper.start()
    writer.close()
    os.close(stop_r)
    try:
        if not reader.poll(limit_s):
            return [f"{question.id}: its checks did not finish in {limit_s:g} s and were stopped (does an "
                    "inputs, probe or verify function, the reference or the starter loop for ever?)"]
        try:
            problems: list[str] = reader.recv()
            return problems
        except EOFError:
            pass
    finally:
        reader.close()
        _stop(keeper, stop_w)
    return [f"{question.id}: the process checking it died ({_how_it_ended(keeper.exitcode)})"]


def _stop(keeper: BaseProcess, stop_w: int) -> None:
    """Tell the keeper to kill all the task's code started, and wait until it has. What that code started
    went on after the task was stopped (a process that sleeps for ever, holding this command's stdout and
    stderr, so `bank validate | tail` never ended); a process group missed what left it (`setsid()`)."""
    os.close(stop_w)
    keeper.join(KEEPER_WAIT_S)
    if keeper.exitcode is None:  # never seen; the pack's processes are then left as they are
        keeper.kill()
        keeper.join()


def _keep(question: Question, writer: Connection, stop_r: int, stop_w: int) -> None:
    """The keeper of one task's processes: checks the task in a child of its own, then, when this command
    closes the stop pipe (the task is done or late, or the command died), kills every process below it.
    As a subreaper it inherits every orphan of the task's code, however it left (a new session, a double
    fork), so nothing can get out from under it; it runs none of the pack's code itself."""
    os.close(stop_w)
    os.setpgid(0, 0)  # the terminal's Ctrl-C goes to this command alone, which then stops the keeper
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    task = os.fork()
    if task == 0:
        os.close(stop_r)
        try:
            _report(question, writer)
        finally:
            os._exit(0)
    writer.close()
    os.read(stop_r, 1)  # returns at EOF: this command closed its end, or died
    os._exit(_kill_descendants(task))


def _kill_descendants(task: int) -> int:
    """SIGKILL every process below this one until none is left; the task process's exit code (128 + the
    signal that ended it)."""
    status = 0
    while True:
        for pid in _children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            pid, wait_status = os.waitpid(-1, 0)  # an orphan is ours before its parent can be reaped
        except ChildProcessError:
            return status
        if pid == task:
            code = os.waitstatus_to_exitcode(wait_status)
            status = code if code >= 0 else 128 - code


def _children() -> list[int]:
    """Our children, from /proc: none is reaped meanwhile (we alone reap them), so no pid is recycled."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry))
    return found


def _how_it_ended(code: int | None) -> str:
    if code is not None and code > 128:
        return f"killed by signal {code - 128}"
    return f"exit code {code}"


def _report(question: Question, writer: Connection) -> None:
    try:
        problems = _task_problems(question)
    except Exception as exc:  # a pack's code can raise anything; it is this task's problem, not the run's
        problems = [f"{question.id}: checking it raised {type(exc).__name__}: {exc}"]
    writer.send(problems)
    writer.close()


def main(argv: list[str]) -> int:
    questions = [q for f in argv for q in load_file(Path(f))] if argv else load_bank()
    problems = code_task_problems(questions)
    for line in problems:
        print(line)
    print(f"{len(questions)} questions, {sum(q.code is not None for q in questions)} code tasks, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
