"""Turn a code task's hidden checks into callables, and run probes against a namespace.

Two sides use this module. The trusted side builds inputs, runs the reference solution and
verifies results. The sandbox side (inside the jail) executes the submission and the probes
and ships raw outputs back. Verdicts are only ever reached on the trusted side.
"""

from __future__ import annotations

import io
import linecache
import traceback
from dataclasses import dataclass
from typing import Any

import torch

from knowledge.schema import CodeCheck, CodeTask

SUBMISSION_FILENAME = "<submission>"
MAX_TRACE_FRAMES = 6


@dataclass(frozen=True)
class ProbeOutcome:
    """What a probe returned, or the error it raised, in the submission's terms."""

    value: Any = None
    error: str | None = None  # "ValueError: msg (line 12)"


def _default_verify(inputs: Any, got: Any, expected: Any) -> None:
    torch.testing.assert_close(got, expected)


def _compile(source: str, filename: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"torch": torch, "__name__": "__check__"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own check source
    return namespace


def check_function(task: CodeTask, check: CodeCheck, field: str) -> Any:
    """The named function (`inputs`, `probe` or `verify`) of one check, or its default."""
    source = getattr(check, field)
    if source is None:
        return {"inputs": lambda gen: {}, "verify": _default_verify}[field]
    namespace = _compile(f"{task.setup}\n{source}", f"<check {check.name}.{field}>")
    return namespace[field]


def build_inputs(task: CodeTask, check: CodeCheck, seed: int) -> Any:
    generator = torch.Generator().manual_seed(seed)
    return check_function(task, check, "inputs")(generator)


def dumps(value: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def loads(blob: bytes) -> Any:
    """Decode untrusted bytes: weights_only refuses anything but tensors and plain data."""
    return torch.load(io.BytesIO(blob), weights_only=True)


def exec_submission(source: str) -> dict[str, Any]:
    """Run the submission as a module; its lines stay readable for tracebacks."""
    linecache.cache[SUBMISSION_FILENAME] = (
        len(source),
        None,
        source.splitlines(keepends=True),
        SUBMISSION_FILENAME,
    )
    namespace: dict[str, Any] = {"__name__": "submission"}
    exec(compile(source, SUBMISSION_FILENAME, "exec"), namespace)  # noqa: S102 - sandboxed
    return namespace


def describe_exception(exc: BaseException) -> str:
    """Exception type and message with the line in the submission, no harness frames."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename == SUBMISSION_FILENAME
    ]
    text = f"{type(exc).__name__}: {exc}".strip()
    if isinstance(exc, SyntaxError) and exc.filename == SUBMISSION_FILENAME:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    if frames:
        last = frames[-1]
        where = f"line {last.lineno}"
        if last.line:
            where += f": {last.line.strip()}"
        return f"{text} ({where})"
    return text


def run_probe(task: CodeTask, check: CodeCheck, namespace: dict[str, Any], inputs: Any) -> ProbeOutcome:
    try:
        probe = check_function(task, check, "probe")
        return ProbeOutcome(value=probe(namespace, inputs))
    except Exception as exc:  # the submission's failure is data, not our crash
        return ProbeOutcome(error=describe_exception(exc))


def verify(task: CodeTask, check: CodeCheck, inputs: Any, got: Any, expected: Any) -> str | None:
    """None when the check passes, else a message for the candidate."""
    try:
        check_function(task, check, "verify")(inputs, got, expected)
    except AssertionError as exc:
        return str(exc).strip() or "output does not match the expected result"
    except Exception as exc:  # a malformed return value (wrong type) is a failed check
        return f"unexpected result: {type(exc).__name__}: {exc}"
    return None


def reference_outputs(task: CodeTask, seed: int) -> dict[str, tuple[Any, Any]]:
    """Inputs and expected value per check, from the (trusted) reference solution."""
    namespace = exec_submission(task.solution)
    results: dict[str, tuple[Any, Any]] = {}
    for check in task.checks:
        inputs = build_inputs(task, check, seed)
        outcome = run_probe(task, check, namespace, loads(dumps(inputs)))
        if outcome.error:
            raise RuntimeError(f"reference solution fails probe {check.name}: {outcome.error}")
        results[check.name] = (inputs, loads(dumps(outcome.value)))
    return results


def self_check(task: CodeTask, seed: int = 0) -> list[str]:
    """Run the reference against its own checks in-process (trusted code only); list failures."""
    failures = []
    try:
        expected = reference_outputs(task, seed)
    except Exception as exc:
        return [str(exc)]
    namespace = exec_submission(task.solution)
    for check in task.checks:
        inputs, want = expected[check.name]
        outcome = run_probe(task, check, namespace, loads(dumps(inputs)))
        if outcome.error:
            failures.append(f"{check.name}: {outcome.error}")
            continue
        message = verify(task, check, inputs, loads(dumps(outcome.value)), want)
        if message:
            failures.append(f"{check.name}: {message}")
    return failures


def starter_fails(task: CodeTask, seed: int = 0) -> bool:
    """True when the starter code does not pass every check (a check that cannot fail is useless)."""
    expected = reference_outputs(task, seed)
    try:
        namespace = exec_submission(task.starter)
    except Exception:
        return True
    for check in task.checks:
        inputs, want = expected[check.name]
        outcome = run_probe(task, check, namespace, loads(dumps(inputs)))
        if outcome.error or verify(task, check, inputs, loads(dumps(outcome.value)), want):
            return True
    return False
