"""When code typed in a fence into a code task's words is run: always on the task's own prompt, and on a follow-up
only as a whole solution (it defines every name of the contract)."""

from __future__ import annotations

from app.interview.fenced import code_from_words, contract_names, split_fenced
from knowledge.loader import bank_index


def fenced(code: str, words: str = "Fixed:") -> str:
    return f"{words}\n```python\n{code}\n```"


def test_on_a_follow_up_a_whole_solution_runs_and_a_part_of_one_is_said_not_to():
    gan = bank_index()["gan-generator-discriminator"].code
    assert contract_names(gan) == ["Generator", "Discriminator", "train_step"]
    step_only = "def train_step(G, D, opt_g, opt_d, real, z):\n    return 0.0, 0.0"
    text, code, message = code_from_words(gan, fenced(step_only), follow_up=True)
    assert (text, code) == (fenced(step_only), None)  # read as words, snippet and all
    assert "not run" in message and "lacks Generator and Discriminator" in message
    text, code, message = code_from_words(gan, fenced(gan.solution), follow_up=True)
    assert (text, code) == ("Fixed:", gan.solution.strip())
    assert message.startswith("The fenced code in your answer defines Generator, Discriminator and train_step")
    # On the task's own prompt any fenced code is the code answer, as before.
    assert code_from_words(gan, fenced(step_only), follow_up=False)[1] == step_only


def test_a_fix_that_does_not_parse_still_runs_so_its_run_names_the_syntax_error():
    relu = bank_index()["relu-autograd-function"].code
    broken = "class MyReLU(torch.autograd.Function):\n    def forward(ctx, x)\n        return x"
    assert code_from_words(relu, fenced(broken), follow_up=True)[1] == broken
    assert code_from_words(relu, "No code here.", follow_up=True) == ("No code here.", None, None)


def test_a_fix_sent_beside_a_traceback_or_the_output_it_prints_runs_alone():
    """A fix in one fence and a traceback or printed output in another were joined and run as one: a right
    log_softmax fix failed to load (SyntaxError at the traceback, NameError at `tensor(...)`) and the question's
    score fell from 1.9 to 0.7. Blocks that define or do nothing stay in the words."""
    task = bank_index()["stable-log-softmax"].code
    traceback = "Before:\n```\nTraceback (most recent call last):\n  File \"x.py\"\nRuntimeError: inf\n```"
    output = "It now prints\n```text\ntensor([ 0., -1000.])\n```"
    for follow_up in (True, False):
        text, code, _ = code_from_words(task, f"{traceback}\n{fenced(task.solution)}\n{output}", follow_up=follow_up)
        assert code == task.solution.strip()
        assert text == f"{traceback}\nFixed:\n\n{output}"  # read as words, in their place
    # A usage line alone is still no whole solution on a follow-up, and is said not to have run.
    text, code, message = code_from_words(task, fenced("log_softmax(torch.randn(3))"), follow_up=True)
    assert code is None and "not run" in message


def test_a_name_defined_in_two_fences_is_said_to_run_from_the_last():
    """Fences run as one program: "the fix, then the old code instead of it" had the old code checked, silently."""
    task = bank_index()["stable-log-softmax"].code
    naive = "import torch\n\ndef log_softmax(x, dim=-1):\n    return x - torch.log(torch.exp(x).sum(dim, keepdim=True))"
    for follow_up in (True, False):
        _, code, message = code_from_words(task, f"{fenced(task.solution)}\ninstead of\n{fenced(naive)}",
                                           follow_up=follow_up)
        assert code is not None and code.endswith(naive.splitlines()[-1])
        assert "log_softmax is defined in more than one fence" in message and "the last definition" in message
    assert "more than one" not in code_from_words(task, fenced(task.solution), follow_up=True)[2]


def test_an_example_call_in_a_fence_of_its_own_stays_in_the_words_and_is_said_to():
    """`out = log_softmax(x)` in a fence after the fix was joined to it and ran at load, where `x` is not defined, so a
    right fix failed to load. A fence that uses the contract's names and defines none of them, nor any function or
    class, and imports nothing, is an example of use."""
    task = bank_index()["stable-log-softmax"].code
    example = "out = log_softmax(x)"
    answer = f"{fenced(task.solution)}\nUse it as\n{fenced(example)}"
    for follow_up in (True, False):
        text, code, message = code_from_words(task, answer, follow_up=follow_up)
        assert code == task.solution.strip()
        assert text == f"Fixed:\n\nUse it as\n{fenced(example)}"
        assert "`out = log_softmax(x)`, which only uses your code, was read as an example of use" in message
    assert split_fenced(answer, contract_names(task))[1] == task.solution.strip()  # the code the scorer says ran
    # Fences a solution may need stay code: an import, a constant, a helper (even one that calls the contract's name).
    for part in ("import math", "EPS = 1e-12", "def helper(x):\n    return log_softmax(x)"):
        _, code, message = code_from_words(task, f"{fenced(task.solution)}\n{fenced(part)}", follow_up=True)
        assert code is not None and code.endswith(part) and "example" not in message
