"""The trusted side of a code task's hidden checks: inputs, reference outputs and verification.

Runs outside the sandbox only. The probes themselves run through probes.py, in the jail for
a submission and here, in-process, for the (trusted) reference solution, with the same probe
source the jail gets (job.probe_source), so both are probed alike. Verdicts are only ever
reached here.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import torch

from evaluators.code.forbidden import find_forbidden
from evaluators.code.guard import ForbiddenCall, ForbiddenCalls
from evaluators.code.job import probe_source
from evaluators.code.probes import compile_probe, dumps, exec_submission, loads, run_probe
from knowledge.schema import CodeCheck, CodeTask


def _default_verify(inputs: Any, got: Any, expected: Any) -> None:
    torch.testing.assert_close(got, expected)


def assert_close_to_any(got: Any, accepted: list[Any], **options: Any) -> None:
    """`torch.testing.assert_close` against each of `accepted` in turn, passing on the first match; else the
    mismatch with the first (the right output) is raised. A check lists after the right output the outputs of
    mistakes another check owns and fails, so one typical mistake misses only its own point."""
    mismatch: AssertionError | None = None
    for want in accepted:
        try:
            torch.testing.assert_close(got, want, **options)
            return
        except AssertionError as exc:
            mismatch = mismatch or exc
    if mismatch is not None:
        raise mismatch


def check_function(task: CodeTask, check: CodeCheck, field: str) -> Any:
    """The named trusted-side function (`inputs` or `verify`) of one check, or its default."""
    source = getattr(check, field)
    if source is None:
        return {"inputs": lambda gen: {}, "verify": _default_verify}[field]
    return _compiled(task.setup, source, f"<check {check.name}.{field}>", field)


@functools.lru_cache(maxsize=1024)
def _compiled(setup: str, source: str, filename: str, field: str) -> Any:
    """Compiled once per check, not per submission (~0.6 ms each, five checks a submission)."""
    namespace: dict[str, Any] = {"torch": torch, "assert_close_to_any": assert_close_to_any, "__name__": "__check__"}
    exec(compile(f"{setup}\n{source}", filename, "exec"), namespace)  # noqa: S102
    return namespace[field]


def build_inputs(task: CodeTask, check: CodeCheck, seed: int) -> Any:
    generator = torch.Generator().manual_seed(seed)
    return check_function(task, check, "inputs")(generator)


def verify(task: CodeTask, check: CodeCheck, inputs: Any, got: Any, expected: Any) -> str | None:
    """None when the check passes, else a message for the candidate."""
    try:
        check_function(task, check, "verify")(inputs, got, expected)
    except AssertionError as exc:
        return str(exc).strip() or "output does not match the expected result"
    except Exception as exc:  # a malformed return value (wrong type) is a failed check
        return f"unexpected result: {type(exc).__name__}: {exc}"
    return None


def _probe(task: CodeTask, check: CodeCheck, namespace: dict[str, Any], inputs: Any) -> Any:
    return run_probe(compile_probe(probe_source(task, check), check.name), namespace, loads(dumps(inputs)))


def reference_outputs(task: CodeTask, seed: int) -> dict[str, tuple[Any, Any]]:
    """Inputs and expected value per check, from the (trusted) reference solution."""
    namespace = exec_submission(task.solution)
    results: dict[str, tuple[Any, Any]] = {}
    for check in task.checks:
        inputs = build_inputs(task, check, seed)
        outcome = _probe(task, check, namespace, inputs)
        if outcome.error:
            raise RuntimeError(f"reference solution fails probe {check.name}: {outcome.error}")
        results[check.name] = (inputs, loads(dumps(outcome.value)))
    return results


def _guarded(task: CodeTask) -> Any:
    forbidden = task.forbidden
    return ForbiddenCalls(list(forbidden.names), forbidden.because) if forbidden else contextlib.nullcontext()


def self_check(task: CodeTask, seed: int = 0) -> list[str]:
    """Run the reference against its own checks in-process (trusted code only), with the task's
    forbidden built-ins enforced by both layers as for a submission; list failures."""
    try:
        expected = reference_outputs(task, seed)
    except Exception as exc:
        return [str(exc)]
    finding = find_forbidden(task.solution, task.forbidden)
    if finding is not None:
        return [f"the source check refuses the reference: {finding.message}"]
    failures = []
    with _guarded(task):
        try:
            namespace = exec_submission(task.solution)
            outcomes = {check.name: _probe(task, check, namespace, expected[check.name][0])
                        for check in task.checks}
        except ForbiddenCall as exc:
            return [f"the dispatch guard refuses the reference: {exc}"]
    for check in task.checks:
        inputs, want = expected[check.name]
        outcome = outcomes[check.name]
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
        outcome = _probe(task, check, namespace, inputs)
        if outcome.error or verify(task, check, inputs, loads(dumps(outcome.value)), want):
            return True
    return False
