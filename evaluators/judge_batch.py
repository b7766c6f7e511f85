"""A batch's judge calls, a few in flight at once, on threads neither Ctrl-C nor a stopping server waits for.

The caller waits for the calls' results, for a stop, or for Ctrl-C, whichever comes first; then no queued call is
made. The calls under way end on their own (each bounded by the timeout) or with the process: their threads are
daemons. ThreadPoolExecutor's are not, and the interpreter's exit joined them, so a process told to stop lived on
until its last call under way ended; and `interviewer serve`, told to stop during a batch, waited for the whole
batch to be judged (133.8 s at a 90 s timeout, 8 answers of 60 s each, 4 in flight).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, InvalidStateError, wait
from contextvars import copy_context
from typing import Any, TypeVar

from evaluators.base import EvaluatorStopped

T = TypeVar("T")
R = TypeVar("R")


class Stop:
    """Set once, when the process is stopping: a batch waiting on its calls hears of it at once."""

    def __init__(self) -> None:
        self.told: Future[object] = Future()  # a future, so that a batch waits on it and on its calls at once

    def set(self) -> None:
        try:
            self.told.set_result(None)
        except InvalidStateError:  # set before
            pass

    def is_set(self) -> bool:
        return self.told.done()


def in_flight(work: Callable[[T], R], items: Sequence[T], *, at_once: int, stop: Stop) -> list[R]:
    """`work` done on every item, `at_once` at a time, the results in order. The first exception `work` raises is
    raised; EvaluatorStopped once `stop` is set."""
    if stop.is_set():
        raise EvaluatorStopped("told to stop before the batch began")
    futures: list[Future[R]] = [Future() for _ in items]
    queued = deque(zip(items, futures, strict=True))  # popleft is atomic: the workers share it without a lock

    def worker() -> None:
        while queued and not stop.is_set():
            try:
                item, future = queued.popleft()
            except IndexError:  # another worker took the last one
                return
            if not future.set_running_or_notify_cancel():  # the caller gave up the batch
                continue
            try:
                future.set_result(work(item))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
                future.set_exception(exc)

    try:
        for _ in range(min(at_once, len(items))):
            threading.Thread(target=worker, name="judge", daemon=True).start()
        pending = set(futures)
        while pending:
            waited: list[Future[Any]] = [*pending, stop.told]
            wait(waited, return_when=FIRST_COMPLETED)
            if stop.is_set():
                raise EvaluatorStopped(f"told to stop with {len(pending)} of {len(items)} answers not judged")
            done = {future for future in pending if future.done()}
            for future in done:
                if (error := future.exception()) is not None:
                    raise error
            pending -= done
    except BaseException:  # Ctrl-C, a stop, a failed call: no call still queued is made
        for future in futures:
            future.cancel()
        raise
    return [future.result() for future in futures]


def unless_stopped(work: Callable[[], R], *, stop: Stop) -> R:
    """`work`'s result (or exception), made on a daemon thread in the caller's context; EvaluatorStopped as soon as
    `stop` is set, the call left to end on its own. One model call made on the caller's thread held a stopping
    `interviewer serve` until its reply came: uvicorn waits for every request under way (59.8 s for one judge call)."""
    context = copy_context()  # the breaker's step scope and LangChain's callbacks live there
    try:
        return in_flight(lambda _: context.run(work), [None], at_once=1, stop=stop)[0]
    except EvaluatorStopped:
        raise EvaluatorStopped("told to stop during a model call") from None
