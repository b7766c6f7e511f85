"""The code runner grades real submissions correctly and speaks the `interviewer check` contract."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluators.code import cgroups, raw_outcome, sandbox, worker_handle
from evaluators.code.errors import RunnerError, SandboxUnavailable
from evaluators.code.pool import RawOutcome
from evaluators.code.protocol import FrameDecoder, FrameError, encode
from evaluators.code.results import Failure, Status
from evaluators.code.runner import CodeRunner
from tests.code_fixtures import (
    FORK_BOMB,
    PATIENT_S,
    QUESTION_ID,
    WRONG_BACKWARD,
    relu_task,
    solution,
    wait_until_dead,
)

CONTRACT_KEYS = {"file", "question_id", "status", "passed_checks", "total_checks", "score", "checks",
                 "stdout", "duration_ms"}


@pytest.fixture(scope="module")
def runner() -> Iterator[CodeRunner]:
    with CodeRunner(workers=1, timeout_s=5.0) as code_runner:
        yield code_runner


def test_correct_solution_passes_every_check(runner: CodeRunner) -> None:
    result = runner.check(relu_task(), solution(), QUESTION_ID)
    assert result.status is Status.PASSED
    assert result.passed_checks == result.total_checks == 4 and result.score == 1.0
    assert all(check.message is None for check in result.checks)


def test_wrong_backward_fails_the_gradient_checks_with_expected_vs_actual(runner: CodeRunner) -> None:
    result = runner.check(relu_task(), WRONG_BACKWARD, QUESTION_ID)
    assert result.status is Status.FAILED
    failures = result.failures()
    assert set(failures) == {"gradient-values", "gradcheck-float64"}
    assert "not close" in failures["gradient-values"] and "Mismatched elements" in failures["gradient-values"]
    assert result.score == pytest.approx(1.5 / 5.0)  # weights 0.5 + 1 passed out of 5


def test_syntax_error_reports_its_line(runner: CodeRunner) -> None:
    source = "import torch\n\nclass MyReLU(torch.autograd.Function)\n    pass\n"
    result = runner.check(relu_task(), source, QUESTION_ID)
    assert result.status is Status.ERROR and result.score == 0
    assert all("SyntaxError" in check.message and "line 3" in check.message for check in result.checks)


def test_exception_in_candidate_code_names_their_line_only(runner: CodeRunner) -> None:
    result = runner.check(relu_task(), relu_task().starter, QUESTION_ID)
    message = result.failures()["forward-values"]
    assert message.startswith("NotImplementedError") and "line 7" in message
    assert "harness" not in message and "worker" not in message


def test_dataloader_workers_are_said_to_be_unsupported_on_one_line(runner: CodeRunner) -> None:
    """The jail's /dev/shm is read-only, so DataLoader(num_workers=2) failed with a bare "OSError: [Errno 30]
    Read-only file system", which did not say that worker processes cannot run there."""
    loader = ("from torch.utils.data import DataLoader, TensorDataset\n"
              "batches = list(DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, num_workers=2))\n")
    result = runner.check(relu_task(), solution() + loader, QUESTION_ID)
    message = result.checks[0].message or ""
    assert "num_workers > 0" in message and "use num_workers=0" in message and "one process" in message, message
    assert "\n" not in message and "line 15" in message
    assert result.score == 0


FORK_THEN_EXIT = """import os
import torch

calls = []


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        calls.append(1)
        if len(calls) == 3:  # gradcheck-float64's call: the run ends there
            os._exit(3)
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        os.fork()
        return grad_output * (x > 0).to(grad_output.dtype)
"""


def test_a_fork_refused_without_a_cgroup_is_said_to_be_one_not_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a cgroup a fork fails with EAGAIN, which read "BlockingIOError: [Errno 11] Resource temporarily
    unavailable", and the checks the run never reached said "your code ran out of memory (memory limit)"."""
    monkeypatch.setattr(cgroups.JailCgroup, "create", lambda limits: None)
    with CodeRunner(workers=1, timeout_s=5.0) as unbounded:
        result = unbounded.check(relu_task(), FORK_THEN_EXIT, QUESTION_ID)
    failures = result.failures()
    assert result.status is Status.RESOURCE_LIMIT and set(failures) == {"gradient-values", "gradcheck-float64"}
    assert "one process" in failures["gradient-values"] and "line 19" in failures["gradient-values"]
    assert "memory" not in failures["gradcheck-float64"] and "processes" in failures["gradcheck-float64"]

    # A memfd refused there is a limit too, said as one (it read as a refused process).
    with CodeRunner(workers=1, timeout_s=5.0) as unbounded:
        result = unbounded.check(relu_task(), "import os\nos.memfd_create('m')\n" + solution(), QUESTION_ID)
    assert result.status is Status.RESOURCE_LIMIT and all("memfd" in m for m in result.failures().values())


NON_BLOCKING_READ = """import os
r, w = os.pipe()
os.set_blocking(r, False)
os.read(r, 1)
"""


def test_non_blocking_io_with_nothing_ready_is_the_codes_error_not_a_process_limit(
        runner: CodeRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """EAGAIN from a non-blocking read read as a refused process: resource_limit, and the checks it stopped said
    "your code tried to start more processes or threads than the sandbox allows". Only a call that starts a process
    says it was refused; a fork past the limit is still one."""
    result = runner.check(relu_task(), NON_BLOCKING_READ + solution(), QUESTION_ID)
    assert result.status is Status.ERROR, result.to_json()
    assert all("BlockingIOError" in m and "os.read(r, 1)" in m for m in result.failures().values()), result.to_json()
    assert not any("processes" in m for m in result.failures().values())
    monkeypatch.setattr(runner, "timeout_s", PATIENT_S)
    bomb = runner.check(relu_task(), FORK_BOMB, QUESTION_ID)
    assert bomb.status is Status.RESOURCE_LIMIT and "processes" in bomb.checks[-1].message, bomb.to_json()


def test_stdout_is_captured(runner: CodeRunner) -> None:
    result = runner.check(relu_task(), "print('hello from the candidate')\n" + solution(), QUESTION_ID)
    assert result.status is Status.PASSED and "hello from the candidate" in result.stdout


@pytest.mark.parametrize("ending, status, why", [
    ("while True:\n    time.sleep(0.01)\n", Status.TIMED_OUT, "time limit"),
    ("os.abort()\n", Status.ERROR, "an abort"),
])
def test_output_printed_before_the_run_was_stopped_is_shown(
        runner: CodeRunner, monkeypatch: pytest.MonkeyPatch, ending: str, status: Status, why: str) -> None:
    """The child's stdout was block-buffered to its pipe: a run stopped by the time limit or a crash showed none of
    what it printed (stdout ''), so a candidate debugging an endless loop saw nothing. Now each line, and text
    not yet ended by a line feed, reaches the output as it is written."""
    monkeypatch.setattr(runner, "timeout_s", 2.0)
    source = "import os, sys, time\nprint('loss at step 1: 0.5')\nsys.stdout.write('step 2 ...')\n" + ending
    result = runner.check(relu_task(), source, QUESTION_ID)
    assert result.status is status and why in (result.checks[0].message or ""), result.to_json()
    assert result.stdout == "loss at step 1: 0.5\nstep 2 ...", result.to_json()


def test_output_and_errors_are_shown_in_the_order_they_were_written(runner: CodeRunner) -> None:
    """stderr (line-buffered) reached the output before stdout (block-buffered) printed earlier."""
    source = "import sys\nprint('first')\nsys.stderr.write('second\\n')\nprint('third')\n" + solution()
    result = runner.check(relu_task(), source, QUESTION_ID)
    assert result.status is Status.PASSED and result.stdout == "first\nsecond\nthird\n", result.to_json()


def test_output_to_the_limit_is_read_in_batches_not_line_by_line(
        runner: CodeRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unbuffered, a printing loop writes a few bytes at a time, and the trusted side read each write as it came:
    a loop printing to the 1 MB limit cost the server's process ~260 ms of CPU instead of ~3 ms. Read at most every
    OUTPUT_PAUSE_S, the pipe gathers the lines between reads."""
    reads = []

    def counted(fd: int, outcome: RawOutcome, keep: int) -> bool:
        reads.append(fd)
        return raw_outcome.read_output(fd, outcome, keep)

    monkeypatch.setattr(worker_handle, "read_output", counted)
    result = runner.check(relu_task(), "i = 0\nwhile True:\n    print('step', i)\n    i += 1\n", QUESTION_ID)
    assert result.status is Status.RESOURCE_LIMIT and "output" in (result.checks[0].message or "")
    assert len(reads) < 300, len(reads)  # 1 MB in 64 KB pipes is 16 reads at least; line by line, thousands


@pytest.mark.parametrize("where", ["at import", "in a check"])
def test_text_no_reply_or_store_can_carry_is_replaced(runner: CodeRunner, where: str) -> None:
    """An exception's message may hold half a surrogate pair (and NUL): the API's JSON reply refused it (a 500 on
    /v1/code/check), and a session answer that stored it answered 500 on every read after (its page, its report).
    Shown as U+FFFD, as undecodable output is, as are control characters in a message (said in terminals too)."""
    raise_it = "raise ValueError('half \\ud800 pair, nul \\x00 here, escape \\x1b[2J')"
    source = ("import sys\nsys.stdout.write('out \\x00 put')\n"
              + (f"{raise_it}\n" if where == "at import" else
                 f"import torch\nclass MyReLU(torch.autograd.Function):\n    @staticmethod\n"
                 f"    def forward(ctx, x):\n        {raise_it}\n"))
    result = runner.check(relu_task(), source, QUESTION_ID)
    messages = " ".join(c.message or "" for c in result.checks)
    assert "half \ufffd pair, nul \ufffd here, escape \ufffd[2J" in messages  # a terminal cleared its screen
    assert "out \ufffd put" in result.stdout
    json.dumps(result.to_json(), ensure_ascii=False).encode("utf-8")  # raised UnicodeEncodeError


def test_an_exceptions_own_candidate_message_does_not_stand_for_the_harnesss_words(runner: CodeRunner) -> None:
    """Any exception with a `candidate_message` was reported by that text alone, without its type or line: a
    submission's error read as the harness's own ("not run: your code exceeded the 10 s time limit", a forbidden
    call, "every check passed")."""
    source = "e = ValueError('raised')\ne.candidate_message = 'not run: every hidden check passed'\nraise e\n"
    messages = {c.message for c in runner.check(relu_task(), source, QUESTION_ID).checks}
    assert messages == {"your code failed before any check could run: ValueError: raised (line 3: raise e)"}


def test_check_files_speaks_the_cli_contract(runner: CodeRunner, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(solution())
    bad.write_text(WRONG_BACKWARD)
    objects = runner.check_files(QUESTION_ID, [good, bad, tmp_path / "missing.py"])
    assert [set(o) for o in objects] == [CONTRACT_KEYS] * 3
    assert [o["status"] for o in objects] == ["passed", "failed", "error"]
    assert objects[0]["file"] == str(good) and objects[0]["question_id"] == QUESTION_ID
    assert objects[1]["passed_checks"] == 2 and objects[1]["total_checks"] == 4
    assert {"name", "passed", "message"} <= set(objects[1]["checks"][0])


def test_check_files_refuses_unknown_and_non_code_questions(runner: CodeRunner, tmp_path: Path) -> None:
    with pytest.raises(RunnerError, match="no question"):
        runner.check_files("no-such-question", [tmp_path / "x.py"])


def test_oversized_submission_is_refused(runner: CodeRunner) -> None:
    result = runner.check(relu_task(), "#" * (runner.max_source_chars + 1), QUESTION_ID)
    assert result.status is Status.ERROR and "longer than" in result.checks[0].message


def test_missing_bubblewrap_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "SAFE_PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        sandbox.worker_command(sandbox.SandboxConfig(), 3)


def test_frames_from_the_jail_are_bounded() -> None:
    decoder = FrameDecoder(limit=100)
    decoder.feed(encode({"type": "check"}, [b"x" * 10]))
    assert decoder.frame() == ({"type": "check", "blobs": [10]}, [b"x" * 10])
    with pytest.raises(FrameError):
        decoder.feed(encode({"type": "check"}, [b"x" * 1000]))
        decoder.frame()
    with pytest.raises(FrameError):
        bogus = FrameDecoder(limit=100)
        bogus.feed(b"\x00\x00\x00\x05notjs")
        bogus.frame()


def test_a_worker_killed_mid_job_costs_only_that_job() -> None:
    with CodeRunner(workers=1, timeout_s=20.0) as code_runner:
        (jail,) = code_runner.pool.worker_pids()
        idle = _bytes_read_under(jail)
        pending = ThreadPoolExecutor(max_workers=1).submit(
            code_runner.check, relu_task(), "import time\ntime.sleep(15)\n", QUESTION_ID)
        deadline = time.monotonic() + 30  # on a loaded machine the reference run alone can take a while
        while _bytes_read_under(jail) == idle:  # until the jail has read the job: killed before, it is re-run
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.2)
        os.killpg(jail, signal.SIGKILL)
        lost = pending.result(timeout=30)
        assert lost.status is Status.ERROR and "sandbox stopped unexpectedly" in lost.checks[0].message
        for _ in range(3):
            result = code_runner.check(relu_task(), solution(), QUESTION_ID)
            assert result.status is Status.PASSED, result.to_json()
        assert code_runner.pool.worker_pids() != [jail]
        assert code_runner.pool.health()[0]


def _bytes_read_under(root: int) -> int:
    """Bytes read by the process and all its descendants (/proc/PID/io's rchar): it grows when a job arrives."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree = {root}
    while grown := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= grown
    total = 0
    for pid in tree:
        try:
            total += int((Path("/proc") / str(pid) / "io").read_text().split("rchar:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total


def test_checks_run_when_the_server_already_holds_over_1024_descriptors() -> None:
    """A busy server's pipes to its workers are numbered past 1023, where select.select refuses them."""
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with CodeRunner(workers=1, timeout_s=5.0) as code_runner:
            assert code_runner.check(relu_task(), solution(), QUESTION_ID).status is Status.PASSED
            wrong = code_runner.check(relu_task(), WRONG_BACKWARD, QUESTION_ID)
            assert wrong.status is Status.FAILED and 0 < wrong.passed_checks < wrong.total_checks
            endless = "import time\nprint('hi', flush=True)\ntime.sleep(30)\n"
            stuck = code_runner.check(relu_task(), endless, QUESTION_ID)
            assert stuck.status is Status.TIMED_OUT and "hi" in stuck.stdout
    finally:
        for fd in held:
            os.close(fd)


def test_a_worker_dead_between_jobs_costs_no_job(runner: CodeRunner) -> None:
    (jail,) = runner.pool.worker_pids()
    os.killpg(jail, signal.SIGKILL)
    wait_until_dead(jail)
    assert runner.check(relu_task(), solution(), QUESTION_ID).status is Status.PASSED


def test_a_failing_restart_says_why_retries_and_makes_readyz_unhealthy(tmp_path: Path) -> None:
    from app.api.health import NotReady, _runner_state

    with CodeRunner(workers=1, timeout_s=5.0) as code_runner:
        pool = code_runner.pool
        working = pool.config
        # From now on a new worker finds no packages: it starts, then dies importing them.
        pool.config = dataclasses.replace(working, site_packages=(str(tmp_path),))
        pool.retry_delays = (0.05,)
        (jail,) = pool.worker_pids()
        os.killpg(jail, signal.SIGKILL)
        # Wait until it is really gone: a job written to a worker still dying counts as delivered and
        # costs that job (by design), which is not what this test is about. Seen under load in CI.
        wait_until_dead(jail)
        started = time.monotonic()
        with pytest.raises(RunnerError, match="cannot start its sandbox workers"):
            code_runner.check(relu_task(), solution(), QUESTION_ID)
        # Fails fast: the message says the pool gave up on its workers, where a caller waiting for a busy pool
        # gives up after 300 s. The bound leaves a loaded machine its restart attempt.
        assert time.monotonic() - started < 150
        healthy, detail = pool.health()
        assert not healthy and "0 of 1" in detail
        assert "No module named" in detail, detail  # the worker's real stderr, not "no output"
        with pytest.raises(NotReady, match="cannot keep its workers running"):
            _runner_state(code_runner)
        pool.config = working  # the cause goes away: the next retry brings the pool back
        deadline = time.monotonic() + 60
        while not pool.health()[0] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert code_runner.check(relu_task(), solution(), QUESTION_ID).status is Status.PASSED


def test_check_files_finds_tasks_in_the_configured_pack(tmp_path: Path) -> None:
    """INTERVIEWER_BANK_DIR names a pack: `interviewer check` must look its ids up there, not in the default bank."""
    import shutil

    from app.config import Settings

    pack = tmp_path / "pack"
    shutil.copytree(Path(__file__).parents[1] / "knowledge" / "bank", pack)
    for file in pack.glob("*.yaml"):
        file.write_text(file.read_text(encoding="utf-8").replace(QUESTION_ID, "my-own-relu"), encoding="utf-8")
    with CodeRunner.from_settings(Settings(data_dir=tmp_path / "data", bank_dir=pack, runner_workers=1)) as runner:
        assert runner._task("my-own-relu").contract
        with pytest.raises(RunnerError, match="no question with id"):
            runner._task(QUESTION_ID)


def test_each_submission_gets_fresh_inputs(runner: CodeRunner) -> None:
    """A failed check may show expected values; with the next submission's inputs drawn anew, they are no
    answer key for it (a runner lives as long as the server)."""
    spy = solution().replace("        ctx.save_for_backward(x)",
                             "        print('input', round(float(x.double().abs().sum()), 6))\n"
                             "        ctx.save_for_backward(x)", 1)
    assert spy != solution()
    seen = [runner.check(relu_task(), spy, QUESTION_ID).stdout for _ in range(2)]
    assert "input" in seen[0] and seen[0] != seen[1]


def test_the_reference_is_probed_for_each_submission_without_recompiling_its_probes(bank, monkeypatch) -> None:
    """Each submission's fresh inputs have the reference probed afresh on the trusted side; working out each probe's
    setup and compiling it again took ~15 ms of CPU of the GAN task's ~50 ms there (of ~10 ms of the Transformer's)."""
    import ast

    from evaluators.code import harness, probes

    task = next(q for q in bank if q.id == "gan-generator-discriminator").code
    harness.reference_outputs(task, seed=1)
    work: list[str] = []
    parse, compile_ = ast.parse, compile
    monkeypatch.setattr(ast, "parse", lambda *a, **k: work.append("parse") or parse(*a, **k))
    monkeypatch.setattr(probes, "compile", lambda src, name, *rest: work.append(name) or compile_(src, name, *rest),
                        raising=False)
    harness.reference_outputs(task, seed=2)
    assert [w for w in work if w != "<submission>"] == []


def test_a_classifier_that_squeezes_away_a_batch_of_one_fails_its_shape_check(runner: CodeRunner, bank) -> None:
    task = next(q for q in bank if q.id == "binary-classifier")
    squeezed = task.code.solution.replace(".squeeze(-1)", ".squeeze()")  # (1,) becomes ()
    assert squeezed != task.code.solution
    result = runner.check(task.code, squeezed, task.id)
    failed = {c.name: c.message for c in result.checks if not c.passed}
    assert list(failed) == ["forward-logits"] and "batch of one" in failed["forward-logits"]


def test_a_code_file_saved_with_a_byte_order_mark_runs(runner: CodeRunner, tmp_path: Path) -> None:
    marked = tmp_path / "relu.py"
    marked.write_text(solution(), encoding="utf-8-sig")
    (result,) = runner.check_files(QUESTION_ID, [marked])
    assert result["status"] == "passed", result



def test_a_class_the_contract_names_but_the_code_lacks_is_named_not_a_key_error(runner: CodeRunner, bank) -> None:
    task = next(q for q in bank if q.id == "custom-layer").code
    result = runner.check(task, "import torch\n\nclass MyLinear(torch.nn.Module):\n    pass\n", "custom-layer")
    assert result.status is not Status.PASSED
    messages = [c.message or "" for c in result.checks if c.message]
    assert messages and all("KeyError" not in m for m in messages)
    assert any("does not define CustomLinear" in m for m in messages), messages
    # The candidate's own KeyError keeps its type and line.
    own = runner.check(task, "import torch\nclass CustomLinear(torch.nn.Module):\n    def __init__(self, *a, **k):\n"
                             "        raise KeyError('weights')\n", "custom-layer")
    assert any(m.startswith("KeyError: 'weights'") and "line 4" in m for m in (c.message or "" for c in own.checks))


def test_a_name_the_contract_asks_for_missing_is_not_run_not_raised(runner: CodeRunner, bank) -> None:
    """Without the class the checks call, no check ran the code: every check said `raised`, and the follow-up then
    asked "Your code failed one of my checks: ..." of code that never ran. A name missing is classed not run, and the
    message names it; a name the code does define but whose code raises keeps `raised`."""
    task = next(q for q in bank if q.id == "gan-generator-discriminator").code
    lacking = task.solution.replace("class Discriminator", "class Critic").replace("def train_step", "def step")
    result = runner.check(task, lacking, "gan-generator-discriminator")
    by_name = {c.name: c for c in result.checks}
    assert by_name["generator-output"].passed
    assert by_name["discriminator-logits"].failure is Failure.NOT_RUN
    assert by_name["discriminator-logits"].message == (
        "not run: your code does not define Discriminator, which the task asks for by that name")
    assert all(c.failure is Failure.NOT_RUN and "does not define train_step" in (c.message or "")
               for name, c in by_name.items() if name not in {"generator-output", "discriminator-logits"})
    own = runner.check(task, task.solution.replace("class Discriminator(nn.Module):",
                                                   "class Discriminator(nn.Module):\n    def __new__(cls, *a):\n"
                                                   "        raise KeyError('Discriminator')\n"), "x")
    assert {c.failure for c in own.checks if c.name == "discriminator-logits"} == {Failure.RAISED}


def test_a_run_claiming_a_name_no_check_calls_is_missing_is_not_believed(runner: CodeRunner, bank) -> None:
    """The class is decided on the trusted side: the jail's word that a name is missing counts only for a name the
    check's own probe looks up; otherwise the check raised, as the run said."""
    task = next(q for q in bank if q.id == "custom-layer").code
    expected, _, _ = runner._reference(task)
    frames = [({"type": "check", "name": c.name, "error": "KeyError: 'weights'", "missing": name}, [])
              for c, name in zip(task.checks, ["weights", "CustomLinear", 7, None, "torch"], strict=True)]
    raw = RawOutcome(frames=[*frames, ({"type": "end"}, [])])
    judged = runner._judge(task, "custom-layer", expected, raw)
    assert [c.failure for c in judged.checks] == [Failure.RAISED, Failure.NOT_RUN, *[Failure.RAISED] * 3]
    assert judged.checks[1].message == ("not run: your code does not define CustomLinear, which the task asks for "
                                        "by that name")


def test_a_submission_without_the_starters_import_lines_runs_with_them(runner: CodeRunner, bank) -> None:
    """A correct CustomLinear sent without `import torch` / `import torch.nn as nn` failed before any check
    (NameError: nn) and scored 0.7. The starter's import lines run first, as coding platforms run theirs; an
    error still names the candidate's own line."""
    task = next(q for q in bank if q.id == "custom-layer").code
    body = "".join(line for line in task.solution.splitlines(keepends=True)
                   if not line.startswith(("import ", "from ")))
    assert "nn.Parameter" in body and "math.sqrt" in body
    assert runner.check(task, body, "custom-layer").status is Status.PASSED
    broken = runner.check(task, "\n\nclass CustomLinear(nn.Module):\n    def __init__(self, *a, **k):\n"
                                "        super().__init__()\n        self.weight = nn.Parameter(torhc.ones(2))\n",
                          "custom-layer")
    assert all("NameError: name 'torhc' is not defined (line 6:" in (c.message or "") for c in broken.checks)


MEMORY_HOG = "a = []\nfor i in range(200):\n    a.append(b'x' * 10**8)\n"


def test_code_stopped_by_a_limit_lists_every_check_as_not_run(
        runner: CodeRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review saw "0 of 0 checks" for code stopped by the memory limit, where a syntax error listed every check:
    the total is the task's and each check says it was not run, and why (only names and descriptions, which every
    run shows, leave the trusted side)."""
    monkeypatch.setattr(runner, "timeout_s", PATIENT_S)  # filling 2 GB takes seconds on a busy machine
    result = runner.check(relu_task(), MEMORY_HOG + solution(), QUESTION_ID).to_json()
    names = [check.name for check in relu_task().checks]
    assert result["status"] == "resource_limit" and (result["passed_checks"], result["total_checks"]) == (0, 4)
    assert [c["name"] for c in result["checks"]] == names, result
    assert all(c["failure"] == "not_run" and "MemoryError" in c["message"] for c in result["checks"]), result


@pytest.mark.parametrize("raw, status", [
    (RawOutcome(memory_exceeded=True, worker_lost=True), Status.RESOURCE_LIMIT),
    (RawOutcome(output_exceeded=True, stdout_bytes=1 << 21), Status.RESOURCE_LIMIT),
    (RawOutcome(exit={"signal": signal.SIGXFSZ}), Status.RESOURCE_LIMIT),
    (RawOutcome(timed_out=True), Status.TIMED_OUT),
    (RawOutcome(exit={"signal": signal.SIGSEGV}), Status.ERROR),
    (RawOutcome(exit={"code": 3}), Status.ERROR),
    (RawOutcome(worker_lost=True, delivered=True), Status.ERROR),
])
def test_every_run_that_reached_no_check_lists_the_tasks_checks_as_not_run(raw: RawOutcome, status: Status) -> None:
    """Each way a run can end before any check (limits, a crash, an exit, a lost worker): the task's checks, each
    not run with the reason, so the total is the task's and never 0 of 0."""
    judged = CodeRunner._judge(SimpleNamespace(timeout_s=5.0, output_limit=1 << 20), relu_task(), QUESTION_ID, {},  # type: ignore[arg-type]
                               raw)
    assert judged.status is status and (judged.passed_checks, judged.total_checks) == (0, 4)
    assert [c.name for c in judged.checks] == [c.name for c in relu_task().checks]
    assert all(c.failure is Failure.NOT_RUN and c.message and c.message.startswith("not run: ") for c in judged.checks)


@pytest.mark.parametrize("limit, said", [(1 << 20, "more than 1 MB of output"), (64 << 10, "more than 64 KB of output"),
                                         (1000, "more than 1000 bytes of output")])
def test_too_much_output_names_the_limit_not_how_far_past_it_the_run_got(limit: int, said: str) -> None:
    """Review s55: `for i in range(10**6): print('x'*100)` was told "more than 1079892 bytes" on one run and
    "1055349" on the next: the count where the worker happened to be stopped, not the limit it passed."""
    for printed in (1_079_892, 1_055_349):
        raw = RawOutcome(output_exceeded=True, stdout_bytes=printed)
        judged = CodeRunner._judge(SimpleNamespace(timeout_s=5.0, output_limit=limit), relu_task(), QUESTION_ID,  # type: ignore[arg-type]
                                   {}, raw)
        assert judged.status is Status.RESOURCE_LIMIT
        assert all(said in (c.message or "") and str(printed) not in (c.message or "") for c in judged.checks), \
            judged.checks[0].message
