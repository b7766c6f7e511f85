"""Forbidden built-ins, refused wherever a submission reaches them, while it and its probes run.

The second of two layers (the first, forbidden.py, reads the source before anything runs).
Nothing here runs per torch call: a forbidden built-in is disarmed at its own definition, so it
raises however it was reached (a name captured at import time, a class attribute, an alias,
`torch.ops`, torch's own composite functions calling it):
- a torch built-in (`torch.gru_cell`, `F.linear`, `Tensor.logsumexp`) is a C function over an
  aten op of the same name; every overload of that op (and of each `torch.ops.aten.*` name a task
  lists) gets a kernel that raises, registered through `torch.library` at the key the op's own
  kernel sits at (its CompositeImplicitAutograd decomposition, else CPU);
- a plain-Python function (`clip_grad_norm_`, `F.softmin`) and a module's `forward`
  (`nn.GRUCell`) get their code object swapped for a tripwire that raises.
Allowed ops cost nothing. A TorchFunctionMode (which runs Python on every torch call: measured
+0.5-4.4 ms per submission even when empty) is entered only for a name neither can disarm (a
built-in with no aten op of its name, a closure). Every hit is recorded, so a submission that
catches the error and falls back to honest code still fails the check it was in.

Bound into the jail: standard library and torch only.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import sys
import types
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from evaluators.code.probes import SUBMISSION_FILENAME

ATEN_PREFIX = "torch.ops.aten."
CALLER_DEPTH = 4
TRIPWIRE = "forbidden built-in"
_TRIPWIRE_CODE = compile(f"def tripwire(*args, **kwargs):\n    return {TRIPWIRE!r}.trip()\n", "<guard>", "exec")
_TRIPWIRE_CODE = next(c for c in _TRIPWIRE_CODE.co_consts if isinstance(c, types.CodeType))
_shared_library: Any = None
REHEARSAL = (["torch.gru_cell", "torch.nn.functional.softmin", "torch.ops.aten.addmm"], "warm-up")


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
def aten_overloads() -> dict[str, tuple[tuple[str, str], ...]]:
    """Every aten op's overloads by the op's name (`addmm`: `addmm`, `addmm.out`, ...), each
    with the key to replace its kernel at: a decomposition (CompositeImplicitAutograd) serves
    every backend and autograd; other ops are replaced for CPU, where submissions run."""
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    runs_on_cpu = torch._C._dispatch_has_computed_kernel_for_dispatch_key
    table: dict[str, list[tuple[str, str]]] = {}
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("aten::") and runs_on_cpu(name, "CPU"):  # `addmm.dtype` is CUDA-only
            key = "CompositeImplicitAutograd" if has_kernel(name, "CompositeImplicitAutograd") else "CPU"
            table.setdefault(name[6:].split(".")[0], []).append((name[6:], key))
    return {op: tuple(overloads) for op, overloads in table.items()}


def prepare() -> None:
    """What every guard needs, done once in the worker before it forks (a child would redo it
    per submission): the aten op table, and the library that single-use guards register into."""
    global _shared_library
    aten_overloads()
    if _shared_library is None:
        with _overriding():  # torch warns about it once per process: here, not in each child
            spent = torch.library.Library("aten", "IMPL")
            spent.impl("gru_cell", _raise_nothing, "CompositeImplicitAutograd")
            spent._destroy()
        _shared_library = torch.library.Library("aten", "IMPL")


def rehearse() -> None:
    """Set up and take down a guard, in a fresh child before its job arrives. A child's first
    guard faults in the pages it writes (copy-on-write after the fork): measured ~0.6 ms of a
    restricted task's ~1.3 ms guard set-up, paid here instead of after the job arrives.
    Leaves nothing armed: a guard that is not `keep` restores every kernel and function."""
    with ForbiddenCalls(*REHEARSAL):
        pass


def _raise_nothing(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError


@contextlib.contextmanager
def _overriding() -> Iterator[None]:
    """Silence "overriding a previously registered kernel": overriding aten kernels is the point."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


class ForbiddenCalls:
    """Context manager: while active, a call to a forbidden built-in raises ForbiddenCall."""

    def __init__(self, names: list[str], because: str, keep: bool = False) -> None:
        """`keep`: disarm once and never re-arm (in a jailed child, which exists for one
        submission); otherwise everything is restored on exit."""
        self.because = because
        self.keep = keep
        self.violations: list[str] = []
        self._kernels: dict[tuple[str, str], str] = {}  # (aten overload, key) -> the name to report
        self._tripwires: dict[types.FunctionType, types.CodeType] = {}  # function -> its tripwire
        self._watched: dict[int, str] = {}  # what only the TorchFunctionMode can see, by id
        self._watched_codes: dict[types.CodeType, str] = {}
        self._keep_alive: list[Any] = []  # so the ids in _watched stay theirs
        self._pending = [name for name in names if not self._add(name)]
        self._originals: dict[types.FunctionType, types.CodeType] = {}
        self._library: Any = None
        self._registered: set[str] = set()
        self._mode: _FunctionGuard | None = None

    def _add(self, name: str) -> bool:
        """Plan how to disarm `name`; False while its module is not loaded (torchvision, say)."""
        if name.startswith(ATEN_PREFIX):
            self._add_op(name[len(ATEN_PREFIX):], name)
            return True
        obj = resolve(name, load=False)
        if obj is None:
            return False
        if isinstance(obj, type):
            forward = vars(obj).get("forward")
            if isinstance(forward, types.FunctionType):
                self._add_function(forward, name)
            return True
        plain = inspect.unwrap(obj) if callable(obj) else obj
        python = isinstance(plain, types.FunctionType)
        if python:
            self._add_function(plain, name)
        # The aten op of the same name: a built-in's own op; for a Python function (F.softmax),
        # the op it wraps, which Tensor methods and torch's C++ code reach without it.
        if not self._add_op(name.rsplit(".", 1)[-1], name) and not python:
            self._keep_alive.append(obj)
            self._watched.setdefault(id(obj), name)
        return True

    def _add_op(self, op: str, name: str) -> bool:
        for overload in aten_overloads().get(op, ()):
            self._kernels.setdefault(overload, name)
        return op in aten_overloads()

    def _add_function(self, function: types.FunctionType, name: str) -> None:
        if function.__closure__:  # a tripwire cannot take over a closure's cells: watch its calls
            self._keep_alive.append(function)
            self._watched_codes.setdefault(function.__code__, name)
        elif function not in self._tripwires:
            consts = tuple(_Tripwire(self, name) if c == TRIPWIRE else c for c in _TRIPWIRE_CODE.co_consts)
            self._tripwires[function] = _TRIPWIRE_CODE.replace(
                co_consts=consts, co_name=function.__code__.co_name, co_qualname=function.__code__.co_qualname)

    def hit(self, name: str) -> ForbiddenCall:
        where = _submission_line()
        message = f"line {where} calls {name}; {self.because}" if where else f"your code calls {name}; {self.because}"
        self.violations.append(message)
        return ForbiddenCall(message)

    def __enter__(self) -> ForbiddenCalls:
        if self._pending:  # the submission may have imported the module since
            self._pending = [name for name in self._pending if not self._add(name)]
        for function, tripwire in self._tripwires.items():
            if function not in self._originals:
                self._originals[function] = function.__code__
                function.__code__ = tripwire
        self._register_kernels()
        if self._watched or self._watched_codes:
            self._mode = self._mode or _FunctionGuard(self)
            self._mode.__enter__()
        return self

    def _register_kernels(self) -> None:
        if not self._kernels:
            return
        if self._library is None:
            # A single-use guard registers into the library made before the fork; one that
            # restores its kernels needs a library of its own to destroy.
            self._library = _shared_library if self.keep and _shared_library is not None \
                else torch.library.Library("aten", "IMPL")
            self._registered = set()
        with contextlib.nullcontext() if self._library is _shared_library else _overriding():
            raisers = {name: self._raiser(name) for name in set(self._kernels.values())}
            for (overload, key), name in self._kernels.items():
                if overload not in self._registered:
                    self._library.impl(overload, raisers[name], key)
                    self._registered.add(overload)

    def __exit__(self, *exc: object) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
        if self.keep:
            return
        for function, original in self._originals.items():
            function.__code__ = original
        self._originals.clear()
        if self._library is not None:
            self._library._destroy()  # the original kernels are back
            self._library = None

    def _raiser(self, name: str) -> Any:
        def forbidden_kernel(*args: Any, **kwargs: Any) -> Any:
            raise self.hit(name)
        return forbidden_kernel


class _Tripwire:
    """Stands in a disarmed function's code as a constant; the function's body calls `trip`."""

    def __init__(self, guard: ForbiddenCalls, name: str) -> None:
        self.guard, self.name = guard, name

    def trip(self) -> Any:
        raise self.guard.hit(self.name)


class _FunctionGuard(TorchFunctionMode):
    """Only for names nothing else can disarm (none in the bank today): sees every torch call."""

    def __init__(self, guard: ForbiddenCalls) -> None:
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = self.guard._watched.get(id(func)) or _under(self.guard._watched_codes, sys._getframe(1))
        if name is not None:
            raise self.guard.hit(name)
        return func(*args) if kwargs is None else func(*args, **kwargs)


def _under(codes: dict[types.CodeType, str], frame: types.FrameType | None) -> str | None:
    """A watched function among the few frames that led to this torch call (bounded on purpose)."""
    for _ in range(CALLER_DEPTH if codes else 0):
        if frame is None or frame.f_code.co_filename == SUBMISSION_FILENAME:
            return None
        if (name := codes.get(frame.f_code)) is not None:
            return name
        frame = frame.f_back
    return None


def _submission_line() -> int | None:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == SUBMISSION_FILENAME:
            return frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None
