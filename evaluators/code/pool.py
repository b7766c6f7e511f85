"""The warm worker pool: a queue of sandbox workers, replaced when they die or age."""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluators.code.errors import RunnerError
from evaluators.code.raw_outcome import RawOutcome
from evaluators.code.sandbox import SandboxConfig
from evaluators.code.worker_handle import Worker

__all__ = ["RawOutcome", "Worker", "WorkerPool"]

RETRY_DELAYS_S = (0.5, 1.0, 2.0, 5.0, 15.0, 30.0)  # between failed restarts of a worker


class WorkerPool:
    """A fixed number of warm workers behind a queue; each recycled after `recycle_after` jobs.

    A worker that dies is replaced in the background and costs at most the job it was running:
    a worker is only handed a job after it said `ready`. A replacement that fails to start is
    retried with backoff, its real stderr is logged, and `health()` reports the pool unhealthy.
    """

    def __init__(self, size: int = 0, config: SandboxConfig | None = None, recycle_after: int = 200,
                 unsandboxed: bool = False, retry_delays: tuple[float, ...] = RETRY_DELAYS_S) -> None:
        self.size = size or os.cpu_count() or 1
        self.config = config or SandboxConfig()
        self.recycle_after = recycle_after
        self.unsandboxed = unsandboxed
        self.retry_delays = retry_delays
        if unsandboxed:
            print("WARNING: code checks run WITHOUT a sandbox; candidate code can read your files "
                  "and secrets. Only for single-user local use.", file=sys.stderr)
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._live = 0  # started and not yet discarded
        self._restart_error: str | None = None  # the last failed restart, until one succeeds
        # bwrap --die-with-parent is tied to the *thread* that forked it (PR_SET_PDEATHSIG), so
        # every worker is forked by this one long-lived thread, never by a short-lived one.
        self._launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-launcher")
        starters = [threading.Thread(target=self._start_first) for _ in range(self.size)]
        self._start_errors: list[BaseException] = []
        for thread in starters:
            thread.start()
        for thread in starters:
            thread.join()
        if self._start_errors:
            self.close()
            raise self._start_errors[0]

    def _new_worker(self) -> Worker:
        return Worker(self.config, self.unsandboxed, lambda f: self._launcher.submit(f).result())

    def _start_first(self) -> None:
        try:
            self._accept(self._new_worker())
        except BaseException as exc:
            self._start_errors.append(exc)

    def _accept(self, worker: Worker) -> None:
        with self._lock:
            if self._closed:
                worker.kill()
                return
            self._live += 1
            self._restart_error = None
        self._idle.put(worker)

    def _replace(self) -> None:
        """Start a replacement, retrying with backoff while it fails; the last delay repeats."""
        attempt = 0
        while not self._closed:
            try:
                worker = self._new_worker()
            except BaseException as exc:
                if self._closed:
                    return  # shutting down: the launcher thread is gone, so the start failed
                delay = self.retry_delays[min(attempt, len(self.retry_delays) - 1)]
                with self._lock:
                    self._restart_error = str(exc)
                print(f"code runner: could not restart a worker (attempt {attempt + 1}, next in {delay:g} s): "
                      f"{exc}", file=sys.stderr)
                attempt += 1
                time.sleep(delay)
                continue
            self._accept(worker)
            return

    def _discard(self, worker: Worker) -> None:
        worker.kill()
        with self._lock:
            self._live -= 1
        if not self._closed:  # restart in the background; callers queue meanwhile
            threading.Thread(target=self._replace, daemon=True).start()

    def health(self) -> tuple[bool, str]:
        """(healthy, detail): unhealthy while a replacement worker keeps failing to start."""
        with self._lock:
            live, error = self._live, self._restart_error
        if self._closed:
            return False, "the runner pool is shut down"
        if error is not None:
            return False, f"{live} of {self.size} sandbox workers running; restarting one fails: {error}"
        return True, f"{live} of {self.size} warm workers"

    def _take(self, wait: float) -> Worker:
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                dead_end = self._live == 0 and self._restart_error is not None
            if dead_end or self._closed:
                raise RunnerError("the code runner cannot start its sandbox workers: "
                                  f"{self._restart_error or 'the pool is shut down'}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunnerError("the code runner is busy or its workers failed to start; try again")
            try:
                worker = self._idle.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if worker.await_ready():
                return worker
            self._discard(worker)  # died between jobs: no job lost, try the next one

    def run(self, meta: dict[str, Any], blobs: list[bytes], timeout: float, keep: int, limit: int,
            wait: float = 300.0) -> RawOutcome:
        deadline = time.monotonic() + wait
        while True:
            worker = self._take(max(deadline - time.monotonic(), 0.0))
            try:
                outcome = worker.run(meta, blobs, timeout, keep, limit)
            finally:
                if worker.alive and worker.jobs < self.recycle_after and not self._closed:
                    self._idle.put(worker)
                else:
                    self._discard(worker)
            if outcome.delivered or not outcome.worker_lost:
                return outcome
            # The worker died after its last job, before it had this one: no job lost, retry.

    def worker_pids(self) -> list[int]:
        return [w.proc.pid for w in list(self._idle.queue)]

    def close(self) -> None:
        with self._lock:
            self._closed = True
        idle = []
        while True:
            try:
                idle.append(self._idle.get_nowait())
            except queue.Empty:
                break
        for worker in idle:  # all told first, then each waited for: a stopping server waited for them in turn
            worker.signal_kill()
        for worker in idle:
            worker.kill()
        self._launcher.shutdown(wait=False)
