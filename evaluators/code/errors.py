"""Errors of the code runner that people see as one clear line."""

from __future__ import annotations


class RunnerError(Exception):
    """The code runner cannot do what was asked; the message says why and what to do."""


class SandboxUnavailable(RunnerError):
    """The sandbox cannot start on this machine (missing tool or kernel feature)."""


class ProtocolError(RunnerError):
    """A sandbox worker sent something malformed or too large; the worker is discarded."""
