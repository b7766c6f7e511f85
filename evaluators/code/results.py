"""What a code check returns: a status, one result per hidden check, captured output."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASSED = "passed"  # every check passed
    FAILED = "failed"  # the code ran, some check did not pass
    ERROR = "error"  # the code did not load, crashed or exited before the checks finished
    TIMED_OUT = "timed_out"  # wall clock or CPU time limit
    RESOURCE_LIMIT = "resource_limit"  # memory, file size, processes or output


class Failure(StrEnum):
    """How a check that did not pass failed: what the run shows the code did at that check (an interviewer may
    tell a candidate "your code returns NaN here" only after a check got a value from it and judged it wrong)."""

    WRONG = "wrong"  # the code returned a value at this check, and the check judged it wrong
    RAISED = "raised"  # the code raised (or reached a forbidden built-in) while this check ran it
    # The check never ran the code: it did not load, was refused, the run stopped before, or it lacks a name the
    # check calls (a class or function the contract asks for by name).
    NOT_RUN = "not_run"


# How a check that never ran the code says why (runner.py), so an interviewer can quote just the reason.
NOT_LOADED = "your code failed before any check could run: "
NOT_REACHED = "not run: "


def not_run_reason(message: str) -> str:
    """Why a check never ran the code, without the check's own framing: "NameError: name 'nn' is not defined
    (line 1: ...)" of "your code failed before any check could run: NameError: ..."."""
    for framing in (NOT_LOADED, NOT_REACHED):
        if message.startswith(framing):
            return message[len(framing):]
    return message


@dataclass(frozen=True)
class CheckResult:
    name: str
    description: str
    weight: float
    passed: bool
    message: str | None = None  # why it failed, in the candidate's terms
    failure: Failure | None = None  # None when it passed

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "weight": self.weight,
                "passed": self.passed, "message": self.message,
                "failure": None if self.failure is None else str(self.failure)}


@dataclass(frozen=True)
class CodeResult:
    question_id: str
    status: Status
    checks: list[CheckResult] = field(default_factory=list)
    stdout: str = ""
    duration_ms: float = 0.0

    @property
    def passed_checks(self) -> int:
        return sum(check.passed for check in self.checks)

    @property
    def total_checks(self) -> int:
        return len(self.checks)

    @property
    def score(self) -> float:
        """Weighted fraction of checks passed (partial credit)."""
        total = sum(check.weight for check in self.checks)
        earned = sum(check.weight for check in self.checks if check.passed)
        return round(earned / total, 4) if total else 0.0

    def failures(self) -> dict[str, str]:
        return {check.name: check.message or "" for check in self.checks if not check.passed}

    def to_json(self, file: str | None = None) -> dict[str, Any]:
        """The `interviewer check --json` object for one file."""
        return {
            "file": file,
            "question_id": self.question_id,
            "status": str(self.status),
            "passed_checks": self.passed_checks,
            "total_checks": self.total_checks,
            "score": self.score,
            "checks": [check.to_json() for check in self.checks],
            "stdout": self.stdout,
            "duration_ms": round(self.duration_ms, 1),
        }
