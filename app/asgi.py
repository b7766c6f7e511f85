"""The app as `interviewer serve` has uvicorn make it in each worker: that of app.main, with a stop (SIGTERM, SIGINT)
heard from the start. Uvicorn takes one that comes while the app's modules are imported as a request to stop once
the app has started, so a worker told to stop went on importing them first (seconds of CPU)."""

from __future__ import annotations

from typing import Any

from app.api.startup import stop_ends_the_import


def create_app() -> Any:
    """The API's application, made as app.main.create_app makes it."""
    with stop_ends_the_import():
        from app.main import create_app as make
    return make()
