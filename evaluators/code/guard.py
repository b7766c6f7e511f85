"""Forbidden built-ins, seen at torch's own dispatch while a submission and its probes run.

The second of two layers (the first, forbidden.py, reads the source before anything runs).
A `TorchFunctionMode` sees every call into torch's Python API however it was reached (a name
captured at import time, a class attribute, an alias). Forbidden plain-Python functions
(`clip_grad_norm_`) and modules (`nn.GRUCell`) are not torch functions: a torch call made while
their code is on the stack counts as theirs. A `TorchDispatchMode`, pushed only when a task
names aten ops (`torch.ops.aten._log_softmax`), sees the aten ops that composite built-ins
decompose into, below torch's Python layer. Every hit is recorded, so a submission that catches the error and
falls back to honest code still fails the check it was in.

Bound into the jail: standard library and torch only.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from evaluators.code.probes import SUBMISSION_FILENAME

ATEN_PREFIX = "torch.ops.aten."


class ForbiddenCall(BaseException):  # noqa: N818 - a BaseException so `except Exception` cannot hide it
    """A forbidden built-in was called; `candidate_message` says which, where and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.candidate_message = message


def resolve(name: str) -> Any:
    """The object a qualified name denotes, importing the longest module prefix; None if absent."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj
    return None


def _op_name(func: Any) -> str | None:
    """`aten::linear` for an aten op overload or packet, else None."""
    packet = getattr(func, "_overloadpacket", func)
    return getattr(packet, "_qualified_op_name", None)


class ForbiddenCalls:
    """Context manager: while active, a call to a forbidden built-in raises ForbiddenCall."""

    def __init__(self, names: list[str], because: str) -> None:
        self.because = because
        self.violations: list[str] = []
        self._by_id: dict[int, str] = {}
        self._classes: list[tuple[type, str]] = []
        self._codes: dict[types.CodeType, str] = {}  # forbidden Python code: a torch call under it counts
        self._aten: dict[str, str] = {}  # aten::name -> the forbidden name to report
        self._keep: list[Any] = []  # keep resolved objects alive so their ids stay theirs
        for name in names:
            self._add(name)
        self._modes: list[Any] = [_FunctionGuard(self)]
        if any(name.startswith(ATEN_PREFIX) for name in names):
            self._modes.append(_DispatchGuard(self))

    def _add(self, name: str) -> None:
        if name.startswith(ATEN_PREFIX):
            self._aten[f"aten::{name[len(ATEN_PREFIX):]}"] = name
            return
        obj = resolve(name)
        if obj is None:
            return  # not installed here (torchvision): only the source check can see it
        self._keep.append(obj)
        if isinstance(obj, type):
            self._classes.append((obj, name))
            forward = vars(obj).get("forward")
            if isinstance(forward, types.FunctionType):
                self._codes[forward.__code__] = name
        else:
            self._by_id[id(obj)] = name
            plain = inspect.unwrap(obj) if callable(obj) else None
            if isinstance(plain, types.FunctionType):
                self._codes[plain.__code__] = name
        # The same built-in through torch.ops.aten (torch.ops.aten.gru_cell for torch.gru_cell).
        leaf = name.rsplit(".", 1)[1]
        if not leaf.startswith("_") and f"aten::{leaf}" not in self._aten:
            try:
                getattr(torch.ops.aten, leaf)
            except (AttributeError, RuntimeError):
                return
            self._aten[f"aten::{leaf}"] = name

    def blocked_name(self, func: Any) -> str | None:
        name = self._by_id.get(id(func))
        if name is None and self._aten:
            op = _op_name(func)
            name = self._aten.get(op) if op else None
        if name is None and self._codes:
            name = self._under_forbidden_code()
        return name

    def _under_forbidden_code(self) -> str | None:
        """The forbidden function or module whose code called into torch, if any. The walk stops
        at the submission's or the probe's own frames: anything forbidden is above them."""
        frame = sys._getframe(3)
        while frame is not None:
            code = frame.f_code
            if code in self._codes:
                return self._codes[code]
            if code.co_filename == SUBMISSION_FILENAME or code.co_filename.startswith("<check "):
                return None
            frame = frame.f_back  # type: ignore[assignment]
        return None

    def hit(self, name: str) -> ForbiddenCall:
        where = _submission_line()
        shown = _forbidden_class_on_stack(self._classes) or name
        message = (f"line {where} calls {shown}; {self.because}" if where
                   else f"your code calls {shown}; {self.because}")
        self.violations.append(message)
        return ForbiddenCall(message)

    def __enter__(self) -> ForbiddenCalls:
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(None, None, None)


class _FunctionGuard(TorchFunctionMode):
    def __init__(self, guard: ForbiddenCalls) -> None:
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = self.guard.blocked_name(func)
        if name is not None:
            raise self.guard.hit(name)
        return func(*args, **(kwargs or {}))


class _DispatchGuard(TorchDispatchMode):
    def __init__(self, guard: ForbiddenCalls) -> None:
        super().__init__()
        self.guard = guard

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = self.guard._aten.get(func._schema.name)
        if name is not None:
            raise self.guard.hit(name)
        return func(*args, **(kwargs or {}))


def _submission_line() -> int | None:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == SUBMISSION_FILENAME:
            return frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _forbidden_class_on_stack(classes: list[tuple[type, str]]) -> str | None:
    """`torch.nn.GRUCell` when the forbidden op was reached through a forbidden module's method."""
    if not classes:
        return None
    frame = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_filename != SUBMISSION_FILENAME else None
        for cls, name in classes:
            if owner is not None and isinstance(owner, cls):
                return name
        frame = frame.f_back  # type: ignore[assignment]
    return None
