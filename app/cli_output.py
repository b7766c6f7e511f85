"""What the CLI's command modules share: stderr for people, stdout for JSON, the bank search opened
with progress. Imported by the command modules and never importing them, so `cli` and its command
modules do not import each other."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn


def console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console that prints text as it is: rich's [markup] is off, since what is printed holds the
    user's own words (answers, queries, key names, file paths) and "[/b]" in them would raise. Styles
    are given as arguments or Text spans instead."""
    return Console(stderr=stderr, soft_wrap=soft_wrap, markup=False)


err = console(stderr=True, soft_wrap=True)


def progress() -> Progress:
    """A progress bar on stderr, so stdout stays clean for JSON."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def open_bank_search(settings: Any) -> Any:
    """The bank search for a command; a missing or empty bank is indexed first (once), with progress
    on stderr, and a bank changed since it was indexed is re-indexed. A Chroma server that cannot be
    reached is one line naming it (a SearchError). The command closes the store when it ends (`with`)."""
    from app.services import store_for

    store = store_for(settings)
    try:
        return _indexed(store, settings)
    except BaseException:
        store.close()
        raise


def _indexed(store: Any, settings: Any) -> Any:
    import time

    from app.services import sync_index
    from knowledge.loader import cached_bank

    if store.count():
        synced = sync_index(store, settings)
        if synced.added or synced.updated or synced.removed:
            err.print(f"The question bank changed since it was indexed: {synced.added} new, {synced.updated} "
                      f"changed and {synced.removed} removed entries brought into the search index.")
        return store
    total = len(cached_bank(settings.bank_dir))
    err.print(f"The question bank is not indexed yet: indexing its {total} entries (once, as `interviewer ingest`)...")
    started = time.perf_counter()
    with progress() as bar:
        task = bar.add_task("Indexing the question bank", total=total)
        sync_index(store, settings, on_embedded=lambda done, _: bar.update(task, completed=done))
    err.print(f"Indexed the question bank in {time.perf_counter() - started:.1f} s.")
    return store


def emit_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
