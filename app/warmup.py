"""The server's slow parts, built one after another on a background thread once it listens.

The port used to open only after the code sandbox's workers had started (22 s on a fresh data directory), and the
app became ready a minute after launch. Now the server listens at once and builds, in this order: the question
index (a fresh or changed bank), the embeddings (the model, every rubric, related entries) and the sandbox, which
only a code answer needs. A request that needs a part still building waits for it a while, then gets a 503 with
Retry-After naming what is still starting: never an answer from a half-built index, never a 500.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)

WAIT_S = 30.0  # how long a request waits for a part still building before it is told to come back
RETRY_AFTER_S = 5


class StillWarming(Exception):
    """A request needs a part that is still being built; the API answers 503 with Retry-After."""

    def __init__(self, part: str, doing: str, retry_after_s: int = RETRY_AFTER_S) -> None:
        super().__init__(f"{doing}; try again in a few seconds")
        self.part, self.retry_after_s = part, retry_after_s


class Part:
    """One slow part: built once by `build`; `close` frees what it built (the sandbox's workers)."""

    def __init__(self, name: str, build: Callable[[], Any], *, doing: str = "",
                 close: Callable[[Any], None] | None = None) -> None:
        self.name, self.doing = name, doing or f"the server is still starting its {name}"
        self._build, self._close = build, close
        self._done = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self.value: Any = None
        self.error: str | None = None

    @property
    def ready(self) -> bool:
        return self._done.is_set()

    def run(self) -> None:
        """Build the part (on the warm-up thread). A failure is logged and leaves None: each user of a part says
        what its absence means (no sandbox: code read as text; no index: /readyz names it)."""
        try:
            value = self._build()
        except Exception as exc:  # noqa: BLE001 - one part failing must not stop the others
            if self._stopped.is_set():  # a stop pulled what it was built on (the embedder's threads): not a failure
                log.info("start-up: %s given up, the server is stopping", self.name)
            else:
                log.exception("start-up: %s failed", self.name)
            value, self.error = None, type(exc).__name__
        with self._lock:  # a stop meanwhile: nobody will close it later, so it is closed here
            keep = not self._stopped.is_set()
            if keep:
                self.value = value
        if not keep and value is not None and self._close is not None:
            self._close(value)
        self._done.set()

    def wait(self, timeout: float | None = None) -> Any:
        """The built part, waiting up to `timeout` seconds (WAIT_S) for it; StillWarming if it is not there by then
        or the server is stopping (uvicorn waits for every request before it stops)."""
        deadline = time.monotonic() + (WAIT_S if timeout is None else timeout)
        while not self._done.wait(min(0.25, max(deadline - time.monotonic(), 0.0))):
            if self._stopped.is_set():
                raise StillWarming(self.name, "the server is stopping")
            if time.monotonic() >= deadline:
                raise StillWarming(self.name, self.doing)
        return self.value

    def stop(self, *, close: bool = True) -> None:
        """No more waiting for it; with `close`, what was built is closed (a part built later is closed then)."""
        with self._lock:
            self._stopped.set()
            value = self.value
            if close:
                self.value = None
        if close and value is not None and self._close is not None:
            self._close(value)


class Warmup:
    """The parts, built in the order given on one daemon thread; `done` is set once every one has ended."""

    def __init__(self, parts: Iterable[Part]) -> None:
        self.parts = {part.name: part for part in parts}
        self.done = threading.Event()
        self._stopping = threading.Event()

    def start(self) -> Warmup:
        threading.Thread(target=self._run, name="warm-up", daemon=True).start()
        return self

    def _run(self) -> None:
        try:
            for part in self.parts.values():
                if self._stopping.is_set():  # told to stop: nothing more is built
                    break
                part.run()
        finally:
            self.done.set()

    def waiting_for(self) -> list[str]:
        """The parts not built yet, in the order they will be."""
        return [name for name, part in self.parts.items() if not part.ready]

    def part(self, name: str) -> Part:
        return self.parts[name]

    def stop(self, *, close: bool = True) -> None:
        """No further part is built and waiting requests are let go (on SIGTERM: uvicorn waits for every request
        before it stops); with `close`, once requests have ended, what was built is closed (a part still building is
        closed as soon as it is built)."""
        self._stopping.set()
        for part in self.parts.values():
            part.stop(close=close)


def settle(component: Any, timeout: float | None = None) -> Any:
    """A component given as a Part (still building at the time it was handed out) waited for; anything else as is."""
    return component.wait(timeout) if isinstance(component, Part) else component
