"""Forbidden built-ins, seen at torch's own dispatch while a submission and its probes run.

The second of two layers (the first, forbidden.py, reads the source before anything runs).
A `TorchFunctionMode` sees every call into torch's Python API however it was reached (a name
captured at import time, a class attribute, an alias). Forbidden plain-Python functions
(`clip_grad_norm_`) and modules (`nn.GRUCell`) are not torch functions: a torch call made while
their code is among the few frames below it counts as theirs. Below torch's Python layer, an aten op a task names
(`torch.ops.aten._log_softmax`, what composite built-ins such as `cross_entropy` decompose into)
gets a CPU kernel that raises, registered through `torch.library` only while the guard is
active: unlike a `TorchDispatchMode`, which runs Python for every aten op (measured +2-4 ms per
submission in a fresh fork), it costs nothing for the ops that are allowed. Every hit is
recorded, so a submission that catches the error and falls back to honest code still fails the
check it was in.

Bound into the jail: standard library and torch only.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import types
import warnings
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from evaluators.code.probes import SUBMISSION_FILENAME

ATEN_PREFIX = "torch.ops.aten."
CALLER_DEPTH = 4
OP_TYPES = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)


class ForbiddenCall(BaseException):  # noqa: N818 - a BaseException so `except Exception` cannot hide it
    """A forbidden built-in was called; `candidate_message` says which, where and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.candidate_message = message


def resolve(name: str, load: bool = True) -> Any:
    """The object a qualified name denotes, or None. Modules already imported are tried first:
    a failed import is slow (it searches every path entry), and torch's are all loaded. With
    `load=False` nothing is imported (in the jail, where that would cost every submission)."""
    parts = name.split(".")
    for importer in (sys.modules.get, _try_import) if load else (sys.modules.get,):
        for cut in range(len(parts), 0, -1):
            obj: Any = importer(".".join(parts[:cut]))
            if obj is None:
                continue
            try:
                for part in parts[cut:]:
                    obj = getattr(obj, part)
            except AttributeError:
                return None
            return obj
    return None


def _try_import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


@functools.cache
def aten_op_names() -> frozenset[str]:
    """Every registered aten op (`aten::linear`); computed once in the worker, before it forks."""
    return frozenset(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))


def _op_name(func: Any) -> str | None:
    """`aten::linear` for an aten op overload or packet, else None."""
    packet = getattr(func, "_overloadpacket", func)
    return getattr(packet, "_qualified_op_name", None)


class ForbiddenCalls:
    """Context manager: while active, a call to a forbidden built-in raises ForbiddenCall."""

    def __init__(self, names: list[str], because: str, keep_kernels: bool = False) -> None:
        """`keep_kernels`: register the raising aten kernels once and never restore the originals
        (in a jailed child, which exists for one submission; about 0.25 ms saved per entry)."""
        self.because = because
        self.keep_kernels = keep_kernels
        self.violations: list[str] = []
        self._by_id: dict[int, str] = {}
        self._classes: list[tuple[type, str]] = []
        self._codes: dict[types.CodeType, str] = {}  # forbidden Python code: a torch call under it counts
        self._aten: dict[str, str] = {}  # aten::name -> the forbidden name to report
        self._keep: list[Any] = []  # keep resolved objects alive so their ids stay theirs
        self._pending = list(names)  # resolved at each entry: the submission may import a module
        self._resolve_pending()
        self._mode = _FunctionGuard(self)
        self._kernels = [n for n in names if n.startswith(ATEN_PREFIX) and f"aten::{n[len(ATEN_PREFIX):]}"
                         in aten_op_names()]
        self._library: Any = None

    def _resolve_pending(self) -> None:
        self._pending = [name for name in self._pending if not self._add(name)]

    def _add(self, name: str) -> bool:
        """Start watching `name`; False while its module is not loaded (torchvision, say)."""
        if name.startswith(ATEN_PREFIX):
            self._aten[f"aten::{name[len(ATEN_PREFIX):]}"] = name
            return True
        obj = resolve(name, load=False)
        if obj is None:
            return False
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
        op = f"aten::{name.rsplit('.', 1)[1]}"
        if op in aten_op_names() and op not in self._aten:
            self._aten[op] = name
        return True

    def blocked_name(self, func: Any, caller: types.FrameType | None) -> str | None:
        """The forbidden name `func` is, or is called under (`caller` made the torch call)."""
        name = self._by_id.get(id(func))
        if name is None and self._aten and type(func) in OP_TYPES:
            name = self._aten.get(_op_name(func) or "")
        if name is None and self._codes:
            name = self._under_forbidden_code(caller)
        return name

    def _under_forbidden_code(self, frame: types.FrameType | None) -> str | None:
        """A forbidden function or module method among the few frames that led to this torch call.
        Bounded on purpose (this runs on every torch call): the bank lists each built-in's
        torch-level equivalent too, so the code nearest the call is what matters."""
        for _ in range(CALLER_DEPTH):
            if frame is None:
                return None
            code = frame.f_code
            name = self._codes.get(code)
            if name is not None:
                return name
            if code.co_filename == SUBMISSION_FILENAME or code.co_filename.startswith("<check "):
                return None
            frame = frame.f_back
        return None

    def hit(self, name: str) -> ForbiddenCall:
        where = _submission_line()
        shown = _forbidden_class_on_stack(self._classes) or name
        message = (f"line {where} calls {shown}; {self.because}" if where
                   else f"your code calls {shown}; {self.because}")
        self.violations.append(message)
        return ForbiddenCall(message)

    def __enter__(self) -> ForbiddenCalls:
        if self._pending:
            self._resolve_pending()
        if self._kernels and self._library is None:
            self._library = torch.library.Library("aten", "IMPL")  # overriding aten kernels is the point
            with warnings.catch_warnings():  # "overriding a previously registered kernel"
                warnings.simplefilter("ignore")
                for name in self._kernels:
                    self._library.impl(name[len(ATEN_PREFIX):], self._raiser(name), "CPU")
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(None, None, None)
        if self._library is not None and not self.keep_kernels:
            self._library._destroy()  # the original kernels are back
            self._library = None

    def _raiser(self, name: str) -> Any:
        def forbidden_kernel(*args: Any, **kwargs: Any) -> Any:
            raise self.hit(name)
        return forbidden_kernel


class _FunctionGuard(TorchFunctionMode):
    def __init__(self, guard: ForbiddenCalls) -> None:
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = self.guard.blocked_name(func, sys._getframe(1))
        if name is not None:
            raise self.guard.hit(name)
        return func(*args) if kwargs is None else func(*args, **kwargs)


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
