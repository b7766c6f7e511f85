"""The dispatch-level guard (guard.py) in-process, as the trusted side uses it: each way a
forbidden built-in is disarmed refuses it however it is reached, and everything is restored on
exit. The same guard in the jail is exercised end to end by test_code_forgery.py."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest
import torch

from evaluators.code.guard import ForbiddenCall, ForbiddenCalls, rehearse

BECAUSE = "write it yourself"


@pytest.fixture
def helpers() -> Iterator[types.ModuleType]:
    """A loaded module with a plain function and a closure, as a library would have."""
    module = types.ModuleType("guard_helpers")
    exec("def double(x):\n    return x * 2\n\n"  # noqa: S102 - test fixture
         "def _scaler(k):\n    def scale(x):\n        return x * k\n    return scale\n\n"
         "scale = _scaler(3)\n", module.__dict__)
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def refused(call, *names: str) -> str:
    guard = ForbiddenCalls(list(names), BECAUSE)
    with guard, pytest.raises(ForbiddenCall) as raised:
        call()
    assert guard.violations == [str(raised.value)]
    return str(raised.value)


X, H = torch.randn(2, 3), torch.randn(2, 4)
W_IH, W_HH = torch.randn(12, 3), torch.randn(12, 4)


def test_a_builtin_is_refused_through_a_name_captured_before_the_guard() -> None:
    captured = torch.gru_cell
    message = refused(lambda: captured(X, H, W_IH, W_HH), "torch.gru_cell")
    assert message == f"your code calls torch.gru_cell; {BECAUSE}"
    assert captured(X, H, W_IH, W_HH).shape == (2, 4)  # restored on exit


@pytest.mark.parametrize("mode", [torch.no_grad, torch.inference_mode])
def test_a_composite_builtin_is_refused_without_autograd(mode) -> None:
    def call():
        with mode():
            torch.gru_cell(X, H, W_IH, W_HH)
    refused(call, "torch.gru_cell")


def test_every_overload_is_refused_out_variants_and_torch_ops_included() -> None:
    bias, weight, out = torch.zeros(4), torch.randn(3, 4), torch.empty(2, 4)
    refused(lambda: torch.addmm(bias, X, weight, out=out), "torch.addmm")
    refused(lambda: torch.ops.aten.addmm.out(bias, X, weight, out=out), "torch.addmm")
    refused(lambda: X.addmm(torch.eye(3), torch.eye(3)), "torch.addmm")
    assert torch.addmm(bias, X, weight, out=out) is out


def test_a_builtin_reached_inside_torch_is_refused() -> None:
    targets = torch.tensor([0, 1])
    refused(lambda: torch.nn.functional.cross_entropy(H, targets), "torch.log_softmax")


def test_a_python_function_is_refused_through_any_alias_and_restored(helpers) -> None:
    alias = helpers.double
    assert "calls guard_helpers.double" in refused(lambda: alias(X), "guard_helpers.double")
    assert torch.equal(alias(X), X * 2)


def test_a_forbidden_module_is_refused_in_its_subclasses() -> None:
    class MyCell(torch.nn.GRUCell):
        pass
    cell = MyCell(3, 4)
    assert "calls torch.nn.GRUCell" in refused(lambda: cell(X, H), "torch.nn.GRUCell")
    assert cell(X, H).shape == (2, 4)


def test_a_closure_is_watched_by_the_function_mode(helpers) -> None:
    """A tripwire cannot take a closure's cells: torch calls under its code are refused instead."""
    assert "calls guard_helpers.scale" in refused(lambda: helpers.scale(X), "guard_helpers.scale")
    assert torch.equal(helpers.scale(X), X * 3)


def test_a_builtin_without_an_aten_op_is_watched_by_the_function_mode() -> None:
    assert "calls torch.Tensor.tolist" in refused(lambda: X.tolist(), "torch.Tensor.tolist")
    assert len(X.tolist()) == 2


def test_allowed_ops_run_untouched() -> None:
    guard = ForbiddenCalls(["torch.gru_cell", "torch.nn.functional.linear", "torch.nn.GRUCell"], BECAUSE)
    with guard:
        y = torch.sigmoid(X @ W_IH.T).masked_fill(X[:, :1] > 0, 0.0).exp()
        torch.nn.functional.log_softmax(y, -1).sum()
    assert y.shape == (2, 12) and guard.violations == []


def test_a_module_imported_after_the_guard_was_made_is_disarmed_at_the_next_entry(helpers) -> None:
    guard = ForbiddenCalls(["guard_late.double"], BECAUSE)
    late = types.ModuleType("guard_late")
    late.double = helpers.double
    sys.modules["guard_late"] = late
    try:
        with guard, pytest.raises(ForbiddenCall):
            late.double(X)
    finally:
        del sys.modules["guard_late"]


def test_a_rehearsal_leaves_nothing_armed() -> None:
    """A fresh child rehearses a guard on gru_cell, softmin and addmm before its job: a task that
    allows them must find them working, and a task that forbids them must still be refused."""
    expected = torch.gru_cell(X, H, W_IH, W_HH)
    rehearse()
    assert torch.equal(torch.gru_cell(X, H, W_IH, W_HH), expected)
    torch.nn.functional.softmin(X, -1)
    torch.addmm(X, X, torch.eye(3))
    assert "torch.gru_cell" in refused(lambda: torch.gru_cell(X, H, W_IH, W_HH), "torch.gru_cell")
