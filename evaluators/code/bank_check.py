"""Check that every code task's reference solution passes its own hidden checks.

The checks run a pack's own code (`inputs`, `probe`, `verify`, the reference and the starter) in this
machine's Python, not the sandbox: a pack is trusted as code. Each task runs in a forked child, so one
that never returns (an `inputs()` looping for ever) is stopped at its time limit and reported, and the
rest are still checked.
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
from knowledge.loader import load_bank, load_file
from knowledge.schema import Question

# A task's check runs its code three times (the reference for the expected values, the reference under
# the checks, the starter); each run gets what the sandbox gives one submission (INTERVIEWER_RUNNER_TIMEOUT_S).
RUNS_PER_TASK = 3
RUN_LIMIT_S = 10.0


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
    child = context.Process(target=_report, args=(question, writer), daemon=True)
    child.start()
    writer.close()
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
        _stop(child)
    return [f"{question.id}: the process checking it died (exit code {child.exitcode})"]


def _stop(child: BaseProcess) -> None:
    """Kill the task's whole process group, then reap the child. What its code started (a process that
    sleeps for ever) went on after the child was stopped, holding this command's stdout and stderr, so
    `bank validate | tail` never ended. Called once, before the child is reaped: until then its pid, the
    group's id, cannot go to another process."""
    assert child.pid is not None  # started
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.kill()  # in case it was stopped before it made its group
    child.join(5)


def _report(question: Question, writer: Connection) -> None:
    os.setpgid(0, 0)  # a group of its own, with all the task's code starts, for _stop to kill
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
