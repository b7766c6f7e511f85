"""Benchmark the code runner on `relu-autograd-function`: warm pool vs a fresh sandboxed python.

    .venv/bin/python bench/bench_code_runner.py [--checks 200] [--fresh 8]

Latency is per submission (all 4 hidden checks, trusted-side verification included), measured
one submission after another. With one worker each check also waits for the worker to fork
its next pre-forked child; with the default pool (one worker per core) that overlaps.
Both sides go through the same jail (bwrap as uid 65534, same binds, same limits) and the same
trusted-side verification; the only difference is whether torch is already imported in a warm
worker that forks per check, or a new python starts for each check. Prints figures, asserts
nothing (targets: p50 < 25 ms, p95 < 60 ms, >= 50x faster than fresh).

The forbidden-built-in guard (source check + dispatch guard) is measured before/after in the
same run: each restricted task's reference, submitted alternately to the task as it is and to
the same task with its `forbidden` block removed; the difference of the p50s is the overhead
(beside it, the same difference between two unguarded runs: the noise floor). Wall clock is
blurred by other load on a shared machine, so the same comparison is also made in CPU time: the
source check in this process, and a forked child (as in the worker: the guard set up once, kept
for the child's life) that loads the reference and runs every probe with and without the guard.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluators.code.forbidden import find_forbidden  # noqa: E402
from evaluators.code.guard import REHEARSAL, ForbiddenCalls, prepare, rehearse  # noqa: E402
from evaluators.code.harness import reference_outputs  # noqa: E402
from evaluators.code.job import probe_source  # noqa: E402
from evaluators.code.probes import compile_probe, dumps, exec_submission, loads, run_probe  # noqa: E402
from evaluators.code.results import Status  # noqa: E402
from evaluators.code.runner import CodeRunner  # noqa: E402
from evaluators.code.sandbox import SandboxConfig  # noqa: E402
from evaluators.code.worker_handle import Worker  # noqa: E402
from knowledge.loader import load_bank  # noqa: E402

QUESTION_ID = "relu-autograd-function"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def timed_checks(runner: CodeRunner, task, source: str, count: int, settle: bool = False) -> list[float]:
    """`settle`: start each check with every worker ready (the last check's clean-up done), as when
    submissions come seconds apart; otherwise back to back, so that clean-up is in the timing."""
    latencies = []
    for _ in range(count):
        for worker in list(runner.pool._idle.queue) if settle else ():
            worker.await_ready()
        start = time.perf_counter()
        result = runner.check(task, source, QUESTION_ID)
        latencies.append((time.perf_counter() - start) * 1000)
        assert result.status is Status.PASSED, result.to_json()
    return latencies


def fresh_checks(runner: CodeRunner, task, source: str, count: int) -> list[float]:
    """A new sandboxed python per check: start (imports torch), run the one check, stop."""
    pool, latencies = runner.pool, []
    for _ in range(count):
        start = time.perf_counter()
        worker = Worker(SandboxConfig())
        runner.pool = _OneShot(worker)
        result = runner.check(task, source, QUESTION_ID)
        worker.kill()
        latencies.append((time.perf_counter() - start) * 1000)
        assert result.status is Status.PASSED, result.to_json()
    runner.pool = pool
    return latencies


class _OneShot:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def run(self, meta, blobs, timeout, keep, limit):
        return self.worker.run(meta, blobs, timeout, keep, limit)


def throughput(task, source: str, workers: int, count: int) -> float:
    with CodeRunner(workers=workers, seed=0) as runner:
        timed_checks(runner, task, source, 5 * workers)  # warm-up: first spares, reference cache
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2 * workers) as clients:
            results = list(clients.map(lambda _: runner.check(task, source, QUESTION_ID), range(count)))
        elapsed = time.perf_counter() - start
    assert all(r.status is Status.PASSED for r in results)
    return count / elapsed


def guard_overhead(runner: CodeRunner, count: int, settle: bool) -> None:
    """p50 per submission with and without each restricted task's guard, interleaved (off, on,
    off again). `paired`: the median of the differences between neighbouring on and off runs,
    less blurred by load drift, with its bootstrap interval. `a/a`: the same delta between the
    two off runs, which differ in nothing: on a shared machine, a delta within it is noise.
    Settled, each check starts with the worker ready: the cost a submission pays. Back to back,
    each also waits for the worker to fork its next child and tear down the last one (11-20 ms):
    what a saturated runner pays."""
    mode = 'guard, ' + ('settled' if settle else 'back to back')
    print(f"{mode:36}{'off p50':>10}{'on p50':>10}{'delta':>8}{'paired':>8}"
          f"{'95% interval':>16}{'a/a':>8}{'n':>6}")
    for question in load_bank():
        task = question.code
        if task is None or task.forbidden is None:
            continue
        bare = task.model_copy(update={"forbidden": None})
        off: list[float] = []
        on: list[float] = []
        again: list[float] = []
        for variant in (task, bare) * 3:  # warm-up: references, first spares
            timed_checks(runner, variant, task.solution, 1)
        for _ in range(count):
            off += timed_checks(runner, bare, task.solution, 1, settle)
            on += timed_checks(runner, task, task.solution, 1, settle)
            again += timed_checks(runner, bare, task.solution, 1, settle)
        p_on, p_off = statistics.median(on), statistics.median(off)
        differences = [a - b for a, b in zip(on, off, strict=True)]
        low, high = bootstrap_interval(differences)
        print(f"{question.id:36}{p_off:10.1f}{p_on:10.1f}{p_on - p_off:8.1f}{statistics.median(differences):8.1f}"
              f"{f'{low:.1f}..{high:.1f}':>16}{statistics.median(again) - p_off:8.1f}{count:6}")


def bootstrap_interval(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the median (seeded: the same data, the same interval)."""
    draw = random.Random(0).choices
    medians = sorted(statistics.median(draw(values, k=len(values))) for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds) - 1]


def _child_cpu_ms(task, solution: str, blobs: list[bytes], probes: list, guarded: bool) -> float:
    """CPU ms a forked child (as in the worker) spends building the guard, loading the code and
    running every probe; CPU time, so other load on the machine does not blur the difference."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        rehearse()  # as a pre-forked child does while its job is on its way
        start = time.process_time()
        guard = ForbiddenCalls(list(task.forbidden.names), task.forbidden.because, keep=True) if guarded else None
        with guard or contextlib.nullcontext():
            namespace = exec_submission(solution)
        for probe, blob in zip(probes, blobs, strict=True):
            inputs = loads(blob)
            with guard or contextlib.nullcontext():
                run_probe(probe, namespace, inputs)
        os.write(write, f"{(time.process_time() - start) * 1000:.3f}".encode())
        os._exit(0)
    os.close(write)
    spent = float(os.read(read, 64))
    os.close(read)
    os.waitpid(pid, 0)
    return spent


def guard_cpu_overhead(count: int) -> None:
    """Both layers' CPU cost per submission: the source check (trusted side) plus the guard in
    a forked child, against the same child without it; medians of interleaved runs."""
    torch.set_num_threads(1)
    prepare()  # what the worker's warm-up does before it forks
    with ForbiddenCalls(*REHEARSAL):
        torch.nn.functional.relu(torch.randn(3, 3) @ torch.randn(3, 3)).sum()
    print(f"{'guard CPU per submission (ms)':36}{'source':>8}{'off':>8}{'on':>8}{'total':>8}{'n':>6}")
    for question in load_bank():
        task = question.code
        if task is None or task.forbidden is None:
            continue
        expected = reference_outputs(task, seed=0)
        blobs = [dumps(expected[check.name][0]) for check in task.checks]
        probes = [compile_probe(probe_source(task, check), check.name) for check in task.checks]
        source_ms, off, on = [], [], []
        for _ in range(count):  # apart from the forks below: after a fork the parent's first
            start = time.process_time()  # writes fault too, which a runner (no forks) never pays
            find_forbidden(task.solution, task.forbidden)
            source_ms.append((time.process_time() - start) * 1000)
        for _ in range(count):
            off.append(_child_cpu_ms(task, task.solution, blobs, probes, guarded=False))
            on.append(_child_cpu_ms(task, task.solution, blobs, probes, guarded=True))
        s, p_off, p_on = statistics.median(source_ms), statistics.median(off), statistics.median(on)
        print(f"{question.id:36}{s:8.2f}{p_off:8.2f}{p_on:8.2f}{s + p_on - p_off:8.2f}{count:6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--fresh", type=int, default=8)
    parser.add_argument("--guard", type=int, default=30, help="submissions per restricted task and variant")
    args = parser.parse_args()
    question = next(q for q in load_bank() if q.id == QUESTION_ID)
    task, source = question.code, question.code.solution
    print(f"{QUESTION_ID}: {len(task.checks)} hidden checks per submission, {os.cpu_count()} cores")
    with CodeRunner(workers=1, seed=0) as runner:
        timed_checks(runner, task, source, 20)  # warm-up
        single = timed_checks(runner, task, source, args.checks)
        fresh = fresh_checks(runner, task, source, args.fresh)
    with CodeRunner(seed=0) as runner:  # the default pool: one worker per core
        timed_checks(runner, task, source, 20)
        warm = timed_checks(runner, task, source, args.checks)
    warm_p50, fresh_p50 = statistics.median(warm), statistics.median(fresh)
    print(f"{'':36}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    rows = [(f"warm pool ({runner.pool.size} workers, default)", warm),
            ("warm pool (1 worker, back-to-back)", single), ("fresh sandboxed python per check", fresh)]
    for label, values in rows:
        print(f"{label:36}{statistics.median(values):10.1f}{percentile(values, 95):10.1f}{len(values):6}")
    print(f"speed-up (p50 fresh / p50 warm pool): {fresh_p50 / warm_p50:.0f}x")
    for workers in (1, 2):
        rate = throughput(task, source, workers, args.checks)
        print(f"throughput, {workers} worker{'s' if workers > 1 else ''}: {rate:.1f} checks/s")
    if args.guard:
        with CodeRunner(workers=1, seed=0) as runner:
            for settle in (True, False):
                guard_overhead(runner, args.guard, settle)
        guard_cpu_overhead(args.guard)


if __name__ == "__main__":
    main()
