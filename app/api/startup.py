"""The server's start-up, given up when the server is told to stop before it ends; and what a stop gives up after.

Uvicorn takes SIGTERM and SIGINT during start-up as a request to stop once start-up is over: a worker told to stop
while it built its components (opening the bank, the scorer, the sandbox's pool: 45 s on a busy two-core machine)
went on building them, and `serve --workers 2` took that long to stop after SIGTERM (as when its workers, killed,
were restarted just before it), as if it ignored the signal. A stop while the app's modules are imported (4.5 s
of CPU, most of a minute on a busy machine) ends the worker at once (`stop_ends_the_import`, in app/main.py).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

import anyio

T = TypeVar("T")
STOPS = (signal.SIGINT, signal.SIGTERM)


async def unless_stopped(work: Callable[[], T]) -> T | None:
    """`work` run in a thread; None as soon as SIGTERM or SIGINT comes before it ends (the thread, a daemon, is left
    to the process's exit, which would wait for any other). Each signal still reaches the handler it had (uvicorn's,
    which then stops the server)."""
    if threading.current_thread() is not threading.main_thread():  # signals are for the main thread only
        return await anyio.to_thread.run_sync(work)
    before = {sig: signal.getsignal(sig) for sig in STOPS}
    if any(_stop_taken(handler) for handler in before.values()):
        return None
    loop = asyncio.get_running_loop()
    built: asyncio.Future[T] = loop.create_future()
    stop = asyncio.Event()

    def build() -> None:
        try:
            outcome: tuple[T | None, BaseException | None] = (work(), None)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting start-up, which raises it
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(_settle, built, *outcome)
        except RuntimeError:  # the loop is closed: start-up was given up
            pass

    for sig in STOPS:
        signal.signal(sig, _heard_first(before, loop, stop.set))
    threading.Thread(target=build, name="start-up", daemon=True).start()
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((built, stopped), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        stopped.cancel()
    return built.result() if built.done() else None


@contextmanager
def stops_heard(on_stop: Callable[[], None]) -> Iterator[None]:
    """Within it SIGTERM or SIGINT first calls `on_stop` (on the event loop), then the handler it had (uvicorn's,
    which stops the server): uvicorn waits for every request under way before it stops, and so waited for a
    batch's model calls (133.8 s at a 90 s timeout; a second Ctrl-C quits without waiting, dropping every request)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in STOPS}
    if any(_stop_taken(handler) for handler in before.values()):
        on_stop()
    for sig in STOPS:
        signal.signal(sig, _heard_first(before, asyncio.get_running_loop(), on_stop))
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _heard_first(
    before: dict[signal.Signals, Any], loop: asyncio.AbstractEventLoop, first: Callable[[], None]
) -> Callable[[int, FrameType | None], None]:
    """A stop's handler: `first`, called on the loop, then the handler the signal had before."""

    def stopping(sig: int, frame: FrameType | None) -> None:
        handler = before[signal.Signals(sig)]
        if handler == signal.SIG_IGN:
            return
        loop.call_soon_threadsafe(first)  # from a signal handler: the loop's own queue is not safe to touch
        if callable(handler):
            handler(sig, frame)
        else:  # SIG_DFL: what it does without us
            signal.signal(sig, handler)
            signal.raise_signal(sig)

    return stopping


@contextmanager
def stop_ends_the_import() -> Iterator[None]:
    """Within it SIGTERM or SIGINT, once its handler (uvicorn's) has taken it, ends the process (SystemExit): nothing
    is built yet, and uvicorn would only note it and start the app all the same."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in STOPS}
    if any(_stop_taken(handler) for handler in before.values()):
        raise SystemExit(0)

    def stopping(sig: int, frame: FrameType | None) -> None:
        handler = before[signal.Signals(sig)]
        if handler == signal.SIG_IGN:
            return
        if callable(handler):
            handler(sig, frame)
        raise SystemExit(0)

    for sig in STOPS:
        signal.signal(sig, stopping)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _stop_taken(handler: object) -> bool:
    """Whether the handler has taken a stop already: uvicorn's is a method of its server, which sets `should_exit`.
    It takes signals from before it imports the app (seconds on a busy machine), before this module listens."""
    return getattr(getattr(handler, "__self__", None), "should_exit", False) is True


def _settle(future: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]  # None only with an error
