"""CodeRunner: check a submission against a code task's hidden checks in the warm sandbox pool.

Inputs are built and expected values computed here, on the trusted side, from the reference
solution (cached per task and seed). The jail gets the job built by job.py (never the answer
key) and only returns raw probe outputs; decoding (weights_only) and verification happen here,
so nothing printed inside the jail counts, and a forged or patched result passes only where it is the
right value (a check whose answer is a constant, such as "is a subclass", can be forged: see README).
A task's forbidden built-ins are refused here from the source (forbidden.py) and watched in the jail
(guard.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
import signal
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from evaluators.code import harness
from evaluators.code.errors import RunnerError
from evaluators.code.forbidden import find_forbidden
from evaluators.code.jail import Limits
from evaluators.code.job import build_job, probe_source, required_names
from evaluators.code.pool import RawOutcome, WorkerPool
from evaluators.code.probes import dumps, loads, missing_name
from evaluators.code.results import NOT_LOADED, NOT_REACHED, CheckResult, CodeResult, Failure, Status
from evaluators.code.sandbox import SandboxConfig
from knowledge.schema import CodeTask, Question

MAX_MESSAGE = 2000
# What no reply or store can carry: half a UTF-16 surrogate pair (an exception's text in the jail can hold one, and
# JSON in the reply and SQLite both refuse it: the API answered 500 and a session that stored it answered 500 on every
# read after) and NUL (PostgreSQL's text refuses it). Each is shown as U+FFFD, as undecodable output is.
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")
# In a check's message (said in feedback, reports and the terminal), control characters too, but tab and line feed:
# an escape sequence in the error a submission raised cleared a terminal's screen and drew its own text there.
_UNSHOWABLE = re.compile("[\ud800-\udfff\x00-\x08\x0b-\x1f\x7f-\x9f]")
CRASH_SIGNALS = {signal.SIGSEGV: "a segmentation fault (often recursion too deep for the C stack)",
                 signal.SIGABRT: "an abort", signal.SIGBUS: "a bus error",
                 signal.SIGFPE: "a fatal arithmetic error"}


class CodeRunner:
    """One warm pool per process; `check` is safe to call from several threads."""

    def __init__(self, workers: int = 0, timeout_s: float = 10.0, memory_mb: int = 2048,
                 recycle_after: int = 200, stdout_keep: int = 8192, output_limit: int = 1 << 20,
                 max_source_chars: int = 50_000, seed: int | None = None,
                 allow_unsandboxed: bool = False, config: SandboxConfig | None = None,
                 bank_dir: Path | None = None, jail_memory_mb: int = 0, jail_tasks: int = 0) -> None:
        self.timeout_s = timeout_s
        self.limits = Limits(memory_bytes=memory_mb << 20, cpu_seconds=int(timeout_s) + 1)
        self.stdout_keep, self.output_limit = stdout_keep, output_limit
        self.max_source_chars = max_source_chars
        # Inputs nobody can precompute: a fresh seed per submission, so expected values a failed check
        # shows ("epoch losses ... differ from the expected [...]") are no answer key for the next one
        # (~20-60 ms of reference run per submission). A fixed seed only where a caller asks (benches).
        self.seed = seed
        self._expected: dict[str, tuple[dict[str, Any], list[bytes], list[str]]] = {}  # with a fixed seed
        self._lock = threading.Lock()
        self._questions: dict[str, Question] | None = None
        self._bank_dir = bank_dir  # where check_files finds tasks by id: the configured pack, if any
        # The whole jail's cgroup limits (0: derived from a submission's limits; see cgroups.py).
        config = (config or SandboxConfig(jail_memory_bytes=jail_memory_mb << 20, jail_tasks=jail_tasks))
        self.pool = WorkerPool(workers, config.for_submissions(self.limits), recycle_after,
                               unsandboxed=allow_unsandboxed)
        # The trusted side runs torch only on a check's small tensors, where a second intra-op
        # thread costs far more than it gives: measured here, nn.GRUCell on a (4, 8) batch takes
        # 16 ms with two threads and 0.08 ms with one, and verifying the GRU task's five checks
        # waited on it. This process's torch is ours alone (the scorer runs on onnxruntime).
        torch.set_num_threads(1)

    @classmethod
    def from_settings(cls, settings: Any) -> CodeRunner:
        return cls(workers=settings.runner_workers, timeout_s=settings.runner_timeout_s,
                   memory_mb=settings.runner_memory_mb, max_source_chars=settings.max_code_chars,
                   allow_unsandboxed=settings.runner_allow_unsandboxed, bank_dir=settings.bank_dir,
                   jail_memory_mb=settings.runner_jail_memory_mb, jail_tasks=settings.runner_jail_tasks)

    def __enter__(self) -> CodeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.pool.close()

    def check(self, task: CodeTask, source: str, question_id: str = "") -> CodeResult:
        if len(source) > self.max_source_chars:
            return _all_failed(task, question_id, Status.ERROR,
                               f"the submission is longer than {self.max_source_chars} characters")
        finding = find_forbidden(source, task.forbidden)
        if finding is not None:  # refused before anything runs
            return _all_failed(task, question_id, Status.FAILED, finding.message)
        expected, inputs, probes = self._reference(task)
        meta, blobs = build_job(task, source, inputs, dict(self.limits.__dict__), probes)
        raw = self.pool.run(meta, blobs, self.timeout_s, self.stdout_keep, self.output_limit)
        return self._judge(task, question_id, expected, raw)

    def check_files(self, question_id: str, paths: Iterable[str | Path]) -> list[dict[str, Any]]:
        """One `interviewer check --json` object per file, all against one code task."""
        task = self._task(question_id)
        results = []
        for path in paths:
            try:
                source = Path(path).read_text(encoding="utf-8-sig")  # a byte-order mark (Notepad's) is no code
            except (OSError, UnicodeDecodeError) as exc:
                result = _all_failed(task, question_id, Status.ERROR, f"cannot read {path}: {exc}")
            else:
                result = self.check(task, source, question_id)
            results.append(result.to_json(file=str(path)))
        return results

    def check_sources(self, question_id: str, sources: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
        """`check_files` for texts the caller read: (file name, source) pairs, so a file that can be read once
        only (a pipe, such as bash's `<(git show HEAD:x.py)`) is read by the one who checked it."""
        task = self._task(question_id)
        return [self.check(task, source, question_id).to_json(file=name) for name, source in sources]

    def _task(self, question_id: str) -> CodeTask:
        if self._questions is None:
            from knowledge.loader import bank_index

            self._questions = bank_index(self._bank_dir) if self._bank_dir else bank_index()
        question = self._questions.get(question_id)
        if question is None:
            raise RunnerError(f"no question with id {question_id!r} in the bank")
        if question.code is None:
            raise RunnerError(f"question {question_id!r} is not a code question: nothing to run")
        return question.code

    def _reference(self, task: CodeTask) -> tuple[dict[str, Any], list[bytes], list[str]]:
        """Inputs and expected outputs (from the reference solution) for this submission's seed, and the
        jail's probe sources (worked out once per probe, in job.py)."""
        key = hashlib.sha256(task.model_dump_json().encode()).hexdigest()
        with self._lock:
            if self.seed is not None and key in self._expected:
                return self._expected[key]
        expected = harness.reference_outputs(task, secrets.randbelow(2**31) if self.seed is None else self.seed)
        probes = [probe_source(task, check) for check in task.checks]
        found = (expected, [dumps(expected[check.name][0]) for check in task.checks], probes)
        if self.seed is not None:
            with self._lock:
                self._expected[key] = found
        return found

    def _judge(self, task: CodeTask, question_id: str, expected: dict[str, Any],
               raw: RawOutcome) -> CodeResult:
        got: dict[str, dict[str, Any]] = {}
        ended = any(meta.get("type") == "end" for meta, _ in raw.frames)
        load_error, resource, exit_info = None, None, None if ended else raw.exit
        for meta, blobs in raw.frames:
            kind = meta.get("type")
            if kind == "check" and meta.get("name") not in got:
                got[str(meta.get("name"))] = {"error": meta.get("error"), "missing": meta.get("missing"),
                                              "blob": blobs[0] if blobs else None}
                resource = resource or _resource(meta)
            elif kind == "load_error":
                load_error, resource = _clip(meta.get("error")), _resource(meta)
            elif kind == "end":
                break  # anything after the child's own `end` was not written by the harness
        status, reason = _status(raw, load_error, resource, exit_info, self.timeout_s, self.output_limit)
        checks = []
        for check in task.checks:
            if load_error is not None:
                result = CheckResult(check.name, check.description, check.weight, False,
                                     f"{NOT_LOADED}{load_error}", Failure.NOT_RUN)
            elif check.name in got:
                inputs, want = expected[check.name]
                result = _verify(task, check, inputs, want, got[check.name])
            else:
                result = CheckResult(check.name, check.description, check.weight, False,
                                     f"{NOT_REACHED}{reason}", Failure.NOT_RUN)
            checks.append(result)
        if status is Status.PASSED and not all(c.passed for c in checks):
            status = Status.FAILED
        stdout = raw.stdout.decode("utf-8", errors="replace")
        if raw.stdout_bytes > len(raw.stdout):
            stdout += f"\n[... output cut at {len(raw.stdout)} of {raw.stdout_bytes} bytes]"
        # Every text here may hold the submission's own (its exceptions' messages, values `verify` quotes).
        checks = [dataclasses.replace(c, message=_UNSHOWABLE.sub("\ufffd", c.message)) if c.message else c
                  for c in checks]
        return CodeResult(question_id, status, checks, _storable(stdout), raw.duration_ms)


def _verify(task: CodeTask, check: Any, inputs: Any, want: Any, got: dict[str, Any]) -> CheckResult:
    def result(message: str | None, failure: Failure = Failure.WRONG) -> CheckResult:
        return CheckResult(check.name, check.description, check.weight, message is None, message,
                           None if message is None else failure)

    if got["error"] is not None:
        missing = got.get("missing")
        if isinstance(missing, str) and missing in required_names(task, check):
            # The check could not call the code at all, so it failed nothing the code did: not run, and the name
            # said in our words (the jail's claim is believed only for a name this check's probe looks up).
            return result(f"{NOT_REACHED}{missing_name(missing)}", Failure.NOT_RUN)
        return result(_clip(got["error"]), Failure.RAISED)
    try:
        value = loads(got["blob"] or b"")
    except Exception:  # weights_only refuses arbitrary objects: never unpickle their classes
        return result("the value your code produced cannot be checked: return dense tensors, numbers, "
                      "strings, lists or dicts")
    return result(harness.verify(task, check, inputs, value, want))


# Why the checks after a limit was hit did not run, by the limit the worker saw (RESOURCE_ERRNOS there).
RESOURCE_REASONS = {
    "memory": "your code ran out of memory (memory limit)",
    "processes": "your code tried to start more processes or threads than the sandbox allows "
                 "(it runs a code task in one process)",
    "open files": "your code opened more files than the sandbox allows",
    "disk": "your code wrote more to files than the sandbox allows",
}


def _resource(meta: dict[str, Any]) -> str | None:
    """The limit a frame says the code hit (a frame is bytes from the jail: anything else is no limit)."""
    kind = meta.get("resource")
    return kind if isinstance(kind, str) and kind in RESOURCE_REASONS else None


def _status(raw: RawOutcome, load_error: str | None, resource: str | None, exit_info: dict | None,
            timeout_s: float, output_limit: int) -> tuple[Status, str]:
    """Overall status, and why checks that produced nothing did not run."""
    sig = exit_info.get("signal") if exit_info else None
    if raw.memory_exceeded:  # shmem, files' kernel objects, several processes: past what rlimits see
        return Status.RESOURCE_LIMIT, "your code ran out of memory (the sandbox's memory limit)"
    if raw.timed_out or sig == signal.SIGXCPU:
        return Status.TIMED_OUT, f"your code exceeded the {timeout_s:g} s time limit"
    if raw.output_exceeded:
        # The limit, not the count: how far past it the output got before the worker was stopped varies from run
        # to run (review s55: "more than 1079892 bytes", then "1055349", for the same code).
        return Status.RESOURCE_LIMIT, f"your code printed more than {_size(output_limit)} of output"
    if sig == signal.SIGXFSZ:
        return Status.RESOURCE_LIMIT, "your code wrote a file larger than the limit"
    if resource:
        return Status.RESOURCE_LIMIT, RESOURCE_REASONS[resource]
    if sig is not None:
        return Status.ERROR, f"your code crashed with {CRASH_SIGNALS.get(sig) or _signal_name(sig)}"
    if exit_info is not None:
        code = exit_info.get("code")
        return Status.ERROR, f"your code exited (exit code {code}) before the checks finished"
    if raw.worker_lost:
        return Status.ERROR, "the sandbox stopped unexpectedly while running your code"
    if load_error is not None:
        return Status.ERROR, load_error
    return Status.PASSED, "the run ended before this check"


def _size(count: int) -> str:
    """A byte count as people write a limit: 1 MB, 64 KB, or bytes when it is no round number of either."""
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def _signal_name(number: int) -> str:
    try:
        return f"signal {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"


def _all_failed(task: CodeTask, question_id: str, status: Status, message: str) -> CodeResult:
    checks = [CheckResult(c.name, c.description, c.weight, False, message, Failure.NOT_RUN) for c in task.checks]
    return CodeResult(question_id, status, checks)


def _storable(text: str) -> str:
    return _UNSTORABLE.sub("\ufffd", text)


def _clip(text: Any) -> str:
    text = str(text)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + " [...]"
