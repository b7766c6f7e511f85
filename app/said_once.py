"""Warnings `interviewer serve` says before its workers start, not said again by each worker.

uvicorn starts each worker of `serve --workers N` as a new process, which loads the question bank anew (it is
cached per process) and logged the same "warning: ..." line as the parent: N+1 copies of one line. The parent
notes what it said and hands those lines to its workers in the environment (a spawned worker inherits it); a
worker drops exactly those lines, so one the parent did not say (a pack edited since) is still said.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

SAID_ENV = "_INTERVIEWER_SAID_BY_SERVE"  # not a setting: set by `serve` for its own workers only


@contextmanager
def noting(logger_name: str) -> Iterator[list[str]]:
    """The messages `logger_name` logs meanwhile, each let through as before."""
    said: list[str] = []

    def note(record: logging.LogRecord) -> bool:
        said.append(record.getMessage())
        return True

    logger = logging.getLogger(logger_name)
    logger.addFilter(note)
    try:
        yield said
    finally:
        logger.removeFilter(note)


@contextmanager
def handed_to_workers(said: list[str]) -> Iterator[None]:
    """Meanwhile, the workers started know what was said (see `drop_said`). Taken back after: `serve` run within a
    test's process would leave it to every app the test made later."""
    if not said:
        yield
        return
    os.environ[SAID_ENV] = json.dumps(said)
    try:
        yield
    finally:
        os.environ.pop(SAID_ENV, None)


def drop_said(logger_name: str) -> None:
    """In a worker of `serve`: `logger_name` no longer logs what the parent said. Anywhere else: nothing."""
    said = set(json.loads(os.environ.get(SAID_ENV) or "[]"))
    if said:
        logging.getLogger(logger_name).addFilter(lambda record: record.getMessage() not in said)
