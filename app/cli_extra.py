"""Registers the commands of other domains (grading, code checks, interviews, server, keys)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach every optional command group that exists in this build."""
