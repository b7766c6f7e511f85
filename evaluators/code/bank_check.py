"""Check that every code task's reference solution passes its own hidden checks."""

from __future__ import annotations

import sys
from pathlib import Path

from evaluators.code.harness import self_check, starter_fails
from knowledge.loader import load_bank, load_file
from knowledge.schema import Question


def code_task_problems(questions: list[Question]) -> list[str]:
    """One line per problem: a reference that fails a check, or a starter that passes them all."""
    problems: list[str] = []
    for question in questions:
        if question.code is None:
            continue
        failures = self_check(question.code)
        problems.extend(f"{question.id}: reference fails {failure}" for failure in failures)
        if not failures and not starter_fails(question.code):
            problems.append(f"{question.id}: the starter code passes every check")
    return problems


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
