"""Forged submissions: reading the answer key, or reaching a forbidden built-in, never passes.

Each attempt asserts "not passed" and the reason the candidate is given. Honest controls (every
restricted task's reference, and honest code using allowed ops) pass through the same sandbox.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterator
from functools import cache

import pytest

from evaluators.code.job import build_job
from evaluators.code.results import CodeResult, Status
from evaluators.code.runner import CodeRunner
from knowledge.loader import load_bank
from knowledge.schema import CodeTask
from tests.code_fixtures import QUESTION_ID, relu_task


@cache
def task(question_id: str) -> CodeTask:
    question = next(q for q in load_bank() if q.id == question_id)
    assert question.code is not None
    return question.code


@pytest.fixture(scope="module")
def runner() -> Iterator[CodeRunner]:
    with CodeRunner(workers=1, timeout_s=10.0) as code_runner:
        yield code_runner


def check(runner: CodeRunner, question_id: str, source: str) -> CodeResult:
    return runner.check(task(question_id), source, question_id)


def assert_refused(result: CodeResult, *phrases: str) -> None:
    assert result.status is not Status.PASSED and result.score == 0, result.to_json()
    for message in result.failures().values():
        for phrase in phrases:
            assert phrase in message, (phrase, message)


ISSUE_EXPLOIT = """import sys
f = sys._getframe()
while 'meta' not in f.f_locals:
    f = f.f_back
exec(f.f_locals['meta']['task']['solution'], globals())
"""


# --- the answer key never enters the jail ------------------------------------------------------

CODE_TASKS = [q.id for q in load_bank() if q.code is not None]


# Setup helpers in the bank that compute the right answer; they serve `verify` only.
REFERENCE_FORMULAS = {"ref_attention", "compare", "focal_reference", "reference_grad", "_true_log_softmax",
                      "_check_output", "_true_distances", "_check_matrix", "true_activations", "expected_batch",
                      "formula", "check_table", "builtin_cell", "clipped", "global_norm", "reference_logits",
                      "expected_multiplier", "check_lrs", "check_schedule", "compare_trace", "check_dropped",
                      "fresh_optimizer_runs"}


@pytest.mark.parametrize("question_id", CODE_TASKS)
def test_no_job_carries_the_answer_key(question_id: str) -> None:
    """The job for every bank task: no reference solution, no verify code, no reference formula."""
    code = task(question_id)
    meta, _ = build_job(code, "submission", [b""] * len(code.checks), {})
    text = json.dumps(meta)
    assert code.solution.strip() not in text and "def verify" not in text and "solution" not in meta
    shipped = {node.name for check in meta["checks"] for node in ast.parse(check["probe"]).body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert not shipped & REFERENCE_FORMULAS, shipped & REFERENCE_FORMULAS
    # The starter's import lines run before the submission: import statements and nothing else of the starter.
    assert all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.parse(meta["imports"]).body)


ISSUE_EXPLOIT = """import sys
f = sys._getframe()
while 'meta' not in f.f_locals:
    f = f.f_back
exec(f.f_locals['meta']['task']['solution'], globals())
"""


def test_the_issue_frame_walk_is_refused_in_a_restricted_task(runner: CodeRunner) -> None:
    result = check(runner, "gru-cell-from-scratch", ISSUE_EXPLOIT)
    assert_refused(result, "line 2 uses frame introspection (_getframe)")


def test_the_issue_frame_walk_finds_no_answer_key_in_an_open_task(runner: CodeRunner) -> None:
    result = runner.check(relu_task(), ISSUE_EXPLOIT, QUESTION_ID)
    assert result.status is Status.ERROR and result.score == 0
    assert "KeyError: 'task'" in result.checks[0].message


HUNT = '''import gc, inspect, os, sys
FOUND = []
def look(obj, where):
    if isinstance(obj, dict):
        for key in ("task", "solution", "expected", "verify", "reference"):
            if isinstance(obj.get(key), (str, dict, list)):  # source, or a task's parts
                FOUND.append((where, key))
    if isinstance(obj, str) and "grad_output" in obj and "FORGERY" not in obj:
        FOUND.append((where, obj[:60]))
for frame_info in inspect.stack():
    for name, value in list(frame_info.frame.f_locals.items()):
        look(value, "frame " + name)
        if isinstance(value, dict):
            for item in value.values():
                look(item, "frame " + name + "[...]")
for obj in gc.get_objects():
    look(obj, "gc")
for path in ("/proc/self/cmdline", "/proc/self/environ", "/proc/1/cmdline", "/proc/2/cmdline"):
    try:
        text = open(path, "rb").read().decode(errors="replace")
    except OSError:
        continue
    if "solution" in text or "grad_output" in text:
        FOUND.append((path, text[:60]))
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys", "/usr", "/dev", "/sandbox/python", "/sandbox/site-packages")):
        dirs[:] = []
        continue
    for name in files:
        if name.endswith((".yaml", ".yml", ".json")) or "knowledge" in root:
            FOUND.append(("file", os.path.join(root, name)))
print("FOUND", len(FOUND), FOUND[:5])
for where, what in FOUND:
    if isinstance(what, str) and "class MyReLU" in what:
        exec(what, globals())  # FORGERY: copy the reference if it was anywhere
'''


def test_hunting_the_job_through_inspect_gc_proc_and_files_finds_nothing(runner: CodeRunner) -> None:
    result = runner.check(relu_task(), HUNT, QUESTION_ID)
    assert "FOUND 0 []" in result.stdout, result.stdout
    assert result.status is not Status.PASSED and result.score == 0
    assert "MyReLU" in result.failures()["is-autograd-function"]


def test_the_job_holds_no_verify_code_or_verify_only_setup(runner: CodeRunner) -> None:
    """Print every probe the child was given: reference formulas stay on the trusted side."""
    source = '''import inspect
for info in inspect.stack():
    meta = info.frame.f_locals.get("meta")
    if isinstance(meta, dict) and "checks" in meta:
        print(sorted(meta))
        for c in meta["checks"]:
            print(c["probe"])
def attention(q, k, v, mask=None):
    raise NotImplementedError
'''
    # attention is a restricted task: inspect is refused there before anything runs
    assert_refused(check(runner, "scaled-dot-product-attention", source), "line 1 imports inspect")
    result = runner.check(relu_task(), source, QUESTION_ID)
    # `imports`: the starter's import lines, public (the editor shows the starter)
    assert "['blobs', 'checks', 'forbidden', 'imports', 'limits', 'source']" in result.stdout, result.stdout
    assert "def verify" not in result.stdout and "solution" not in result.stdout
    assert result.status is not Status.PASSED


MEMORY_SCAN = r'''import ctypes, re
pattern = re.compile(rb"PREVIOUS_CANDIDATE_[0-9a-f]{32}")
found = set()
for line in open("/proc/self/maps"):
    fields = line.split()
    start, end = (int(x, 16) for x in fields[0].split("-"))
    if not fields[1].startswith("r") or (len(fields) > 5 and fields[5].startswith("[v")):
        continue
    try:
        found |= set(pattern.findall(ctypes.string_at(start, end - start)))
    except Exception:
        pass
print("matches", len(found))
'''


def test_an_earlier_submission_is_not_in_the_next_childs_memory(runner: CodeRunner) -> None:
    """The worker every child is forked from never holds a job: scanning all of one's own memory
    finds nothing of the previous candidate's code."""
    earlier = relu_task().solution + "\n# PREVIOUS_CANDIDATE_" + "5f0c" * 8 + "\n"
    assert runner.check(relu_task(), earlier, QUESTION_ID).status is Status.PASSED
    result = runner.check(relu_task(), MEMORY_SCAN, QUESTION_ID)
    assert "matches 0" in result.stdout, result.stdout
    assert result.status is not Status.PASSED
    own = runner.check(relu_task(), "# PREVIOUS_CANDIDATE_" + "ab12" * 8 + "\n" + MEMORY_SCAN, QUESTION_ID)
    assert "matches 1" in own.stdout, own.stdout  # the scan does find what is in memory


# --- forbidden built-ins: the source check (before anything runs) ------------------------------

GRU_WITH_BUILTIN = '''import torch
from torch import nn


class MyGRUCell(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.weight_ih = nn.Parameter(torch.randn(3 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.randn(3 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.zeros(3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.zeros(3 * hidden_size))

    def forward(self, x, h=None):
        h = x.new_zeros(x.shape[0], self.hidden_size) if h is None else h
        return torch.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
'''


def test_gru_cell_calling_torch_gru_cell(runner: CodeRunner) -> None:
    result = check(runner, "gru-cell-from-scratch", GRU_WITH_BUILTIN)
    assert_refused(result, "line 16 calls torch.gru_cell; this task asks you to write the cell yourself")
    assert result.status is Status.FAILED


LINEAR_BODY = '''

class CustomLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features).uniform_(-0.1, 0.1))
        self.bias = torch.nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, x):
        return CALL
'''


@pytest.mark.parametrize(("header", "call", "reason"), [
    ("from torch.nn.functional import linear as lin", "lin(x, self.weight, self.bias)",
     "line 2 imports torch.nn.functional.linear; this task asks you to write the layer's arithmetic"),
    ("import torch.nn.functional as F", "getattr(F, 'lin' + 'ear')(x, self.weight, self.bias)",
     "line 12 uses getattr with a computed name"),
    ("import torch.nn.functional as F", "getattr(F, 'linear')(x, self.weight, self.bias)",
     "line 12 calls torch.nn.functional.linear"),
    ("", "torch.ops.aten.linear(x, self.weight, self.bias)", "line 12 uses torch.ops"),
    ("from torch.nn import modules as M", "M.linear.F.linear(x, self.weight, self.bias)",
     "line 12 calls torch.nn.functional.linear"),
    ("import importlib", "importlib.import_module('torch.nn.functional').linear(x, self.weight, self.bias)",
     "line 2 imports importlib"),
    ("", "__import__('torch.nn.functional').nn.functional.linear(x, self.weight, self.bias)",
     "line 12 uses __import__"),
    ("", "torch._C._nn.linear(x, self.weight, self.bias)", "line 12 calls torch.nn.functional.linear"),
    ("", "torch._C._VariableFunctions.mm(x, self.weight.T)", "line 12 uses torch internals (torch._C"),
    ("", "torch.addmm(self.bias, x, self.weight.T)", "line 12 calls torch.addmm"),
    ("import sys", "sys.modules['torch'].nn.functional.linear(x, self.weight, self.bias)",
     "line 12 uses sys.modules"),
    ("", "vars(torch.nn.functional)['linear'](x, self.weight, self.bias)", "line 12 uses vars"),
])
def test_custom_layer_reaching_linear(runner: CodeRunner, header: str, call: str, reason: str) -> None:
    source = f"import torch\n{header}\n" + LINEAR_BODY.replace("CALL", call)
    assert_refused(check(runner, "custom-layer", source), reason)


LOG_SOFTMAX_CAPTURED = '''import torch

_saved = torch.log_softmax


def log_softmax(x, dim=-1):
    return _saved(x, dim)
'''

LOG_SOFTMAX_CLASS_ATTRIBUTE = '''import torch


class Hidden:
    fn = staticmethod(torch.nn.functional.log_softmax)


def log_softmax(x, dim=-1):
    return Hidden.fn(x, dim)
'''


def test_builtin_kept_in_a_module_level_name(runner: CodeRunner) -> None:
    """The bypass of the old per-task guard: capture the built-in at import time."""
    result = check(runner, "stable-log-softmax", LOG_SOFTMAX_CAPTURED)
    assert_refused(result, "line 3 uses torch.log_softmax; this task asks you to build log-softmax")


def test_builtin_captured_as_a_class_attribute(runner: CodeRunner) -> None:
    result = check(runner, "stable-log-softmax", LOG_SOFTMAX_CLASS_ATTRIBUTE)
    assert_refused(result, "line 5 uses torch.nn.functional.log_softmax")


@pytest.mark.parametrize("source", ["import torch\ny = torch" + ".a" * 20000 + "\n", "y = " + "-" * 40000 + "1\n"])
def test_source_too_deep_to_read_is_refused_not_a_crash(runner: CodeRunner, source: str) -> None:
    assert_refused(check(runner, "custom-layer", source), "nested too deeply to be read")


def test_tensor_method_version(runner: CodeRunner) -> None:
    source = "import torch\n\n\ndef log_softmax(x, dim=-1):\n    return x.log_softmax(dim)\n"
    assert_refused(check(runner, "stable-log-softmax", source), "line 5 calls torch.Tensor.log_softmax")


# --- forbidden built-ins: the dispatch guard in the jail (not named in the source) -------------

CROSS_ENTROPY = '''import torch
import torch.nn.functional as F


def log_softmax(x, dim=-1):
    moved = x.movedim(dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    n = flat.shape[-1]
    rows = flat.repeat_interleave(n, 0)
    targets = torch.arange(n).repeat(flat.shape[0])
    out = -F.cross_entropy(rows, targets, reduction="none")
    return out.reshape(moved.shape).movedim(-1, dim)
'''


def test_softmax_reached_through_cross_entropy_is_seen_at_the_dispatcher(runner: CodeRunner) -> None:
    """cross_entropy's C++ decomposition calls aten::log_softmax, whose kernel the guard replaced."""
    result = check(runner, "stable-log-softmax", CROSS_ENTROPY)
    assert_refused(result, "line 11 calls torch.log_softmax; this task asks you")


def test_softmax_reached_through_distributions_is_seen_at_the_dispatcher(runner: CodeRunner) -> None:
    source = ("import torch\n\n\ndef log_softmax(x, dim=-1):\n"
              "    return torch.distributions.Categorical(logits=x.movedim(dim, -1)).logits.movedim(-1, dim)\n")
    assert_refused(check(runner, "stable-log-softmax", source), "line 5 calls torch.logsumexp")


@pytest.mark.parametrize("call", ["torch.sparse.log_softmax(x.to_sparse(), dim).to_dense()",
                                  "torch.sparse.softmax(x.to_sparse(), dim).to_dense().log()"])
def test_softmax_reached_through_a_sparse_copy_is_refused(runner: CodeRunner, call: str) -> None:
    """A sparse copy's softmax is another op (aten::_sparse_log_softmax): it passed four of five checks (0.8)."""
    source = f"import torch\n\n\ndef log_softmax(x, dim=-1):\n    return {call}\n"
    assert_refused(check(runner, "stable-log-softmax", source), f"line 5 calls {call.split('(')[0]}")


LAYER_NORM_BY = """import torch
import torch.nn as nn
import torch.nn.functional as F


class MyLayerNorm(nn.Module):
    def __init__(self, normalized_shape, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))

    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        out = {normalised}
        return out.reshape(x.shape) * self.weight + self.bias
"""


# Built-ins that do a task's work under another name, each of which passed every hidden check of its task: the
# last entry of a log-cumulative-sum-exp is the logsumexp, as logaddexp (or logaddexp2) folded along the dim is, and
# batch or instance norm over a reshaped input, or
# rms_norm of the centred one, is layer norm.
@pytest.mark.parametrize(("question_id", "source", "called"), [
    ("stable-log-softmax", "import torch\n\n\ndef log_softmax(x, dim=-1):\n"
     "    return x - torch.logcumsumexp(x, dim).narrow(dim, x.shape[dim] - 1, 1)\n", "line 5 calls torch.logcumsumexp"),
    ("stable-log-softmax", "import torch\n\n\ndef log_softmax(x, dim=-1):\n"
     "    return x - x.logcumsumexp(dim).narrow(dim, x.shape[dim] - 1, 1)\n", "line 5 calls torch.Tensor.logcumsumexp"),
    ("stable-log-softmax", "import functools\nimport torch\n\n\ndef log_softmax(x, dim=-1):\n"
     "    return x - functools.reduce(torch.logaddexp, x.unbind(dim)).unsqueeze(dim)\n", "line 6 uses torch.logaddexp"),
    ("stable-log-softmax", "import math\nimport torch\n\n\ndef log_softmax(x, dim=-1):\n"
     "    bits = x * math.log2(math.e)\n    total = bits.narrow(dim, 0, 1)\n"
     "    for i in range(1, x.shape[dim]):\n        total = total.logaddexp2(bits.narrow(dim, i, 1))\n"
     "    return x - total / math.log2(math.e)\n", "line 9 calls torch.Tensor.logaddexp2"),
    ("layer-norm-from-scratch", LAYER_NORM_BY.format(
        normalised="F.batch_norm(rows.t(), None, None, training=True, eps=self.eps).t()"),
     "line 15 calls torch.nn.functional.batch_norm"),
    ("layer-norm-from-scratch", LAYER_NORM_BY.format(normalised="F.instance_norm(rows[None], eps=self.eps)"),
     "line 15 calls torch.nn.functional.instance_norm"),
    ("layer-norm-from-scratch", LAYER_NORM_BY.format(
        normalised="F.rms_norm(rows - rows.mean(-1, keepdim=True), (rows.shape[-1],), eps=self.eps)"),
     "line 15 calls torch.nn.functional.rms_norm"),
], ids=["logcumsumexp", "logcumsumexp-method", "logaddexp", "logaddexp2-method", "batch-norm", "instance-norm",
        "rms-norm"])
def test_a_builtin_doing_the_tasks_work_under_another_name_is_refused(
        runner: CodeRunner, question_id: str, source: str, called: str) -> None:
    assert_refused(check(runner, question_id, source), called)


def test_flex_attention_is_no_way_around_computing_the_attention(runner: CodeRunner) -> None:
    """torch.nn.attention's flex_attention is a built-in attention the lists did not name: an encoder layer that left
    its attention to it (per batch item, the padded keys sliced off) passed 7 of 8 hidden checks over HTTP (all but
    the input gradient, which it cannot give on CPU)."""
    solution = task("transformer-encoder-layer").solution
    start, end = solution.index("        scores = q @ k"), solution.index("        return self.out_proj(out)\n")
    flex = ("        from torch.nn.attention.flex_attention import flex_attention\n"
            "        outs = []\n"
            "        for i in range(b):\n"
            "            keep = slice(None) if key_padding_mask is None else ~key_padding_mask[i]\n"
            "            outs.append(flex_attention(q[i:i + 1], k[i:i + 1, :, keep], v[i:i + 1, :, keep]))\n"
            "        out = torch.cat(outs).transpose(1, 2).reshape(b, l, d)\n")
    result = check(runner, "transformer-encoder-layer", solution[:start] + flex + solution[end:])
    assert_refused(result, "torch.nn.attention.flex_attention.flex_attention")


def test_catching_the_refusal_and_falling_back_still_fails(runner: CodeRunner) -> None:
    honest = task("stable-log-softmax").solution.replace("def log_softmax(", "def _honest(")
    source = CROSS_ENTROPY.replace("def log_softmax(", "def _forged(") + honest + '''

def log_softmax(x, dim=-1):
    try:
        return _forged(x, dim)
    except BaseException:
        return _honest(x, dim)
'''
    assert_refused(check(runner, "stable-log-softmax", source), "calls torch.log_softmax")


def test_plain_python_builtin_reached_without_naming_it(runner: CodeRunner) -> None:
    """clip_grad_norm_ is no torch function: the guard swaps its code for a tripwire."""
    honest = task("gradient-clipping").solution
    source = honest + '''

def clip_grad_norm(parameters, max_norm):
    import torch.nn as nn
    utils = nn.utils
    return utils.clip_grad.clip_grad_norm_(parameters, max_norm)
'''
    result = check(runner, "gradient-clipping", source)
    assert result.status is not Status.PASSED
    assert "calls torch.nn.utils.clip_grad_norm_; this task asks you to clip the gradients yourself" in \
        " ".join(result.failures().values())


# --- honest controls ----------------------------------------------------------------------------

RESTRICTED = [q.id for q in load_bank() if q.code is not None and q.code.forbidden is not None]


@pytest.mark.parametrize("question_id", RESTRICTED)
def test_every_restricted_reference_passes_in_the_sandbox(runner: CodeRunner, question_id: str) -> None:
    result = check(runner, question_id, task(question_id).solution)
    assert result.status is Status.PASSED, result.to_json()


def test_honest_attention_with_allowed_ops_passes(runner: CodeRunner) -> None:
    source = '''import torch


def attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ v, weights
'''
    assert check(runner, "scaled-dot-product-attention", source).status is Status.PASSED


def test_honest_dropout_with_its_own_helpers_passes(runner: CodeRunner) -> None:
    source = '''import torch
from torch import nn


class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = (torch.rand_like(x) >= self.p).to(x.dtype)
        return x * keep / (1 - self.p)
'''
    assert check(runner, "inverted-dropout", source).status is Status.PASSED


# --- a check whose answer is the same on every run can be answered from a table -----------------------------------

def _cosine_multipliers(warmup: int, total: int, floor: float, steps: int) -> list[float]:
    """The right multipliers of one schedule: what a run's failure messages ("at step 3 ... expected 0.0691") give."""
    rows = []
    for step in range(steps):
        if step < warmup:
            rows.append((step + 1) / warmup)
            continue
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        rows.append(floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))
    return rows


# A seed whose drawn schedules are none of the table's (seed 1 draws warmup 0 and total 10, which the table answers).
TABLE_SEED = 2


def test_a_warmup_cosine_schedule_looked_up_in_a_table_fails(runner: CodeRunner, monkeypatch) -> None:
    """warmup-cosine-schedule's five checks ran fixed schedules (warmup 4 and total 20, 5 and 20, 3 and 12, 2 and 8,
    0 and 10), so a multiplier that looked its values up by (warmup_steps, total_steps), a table a candidate can copy
    from the messages of a failed run, passed all five without computing a cosine. The schedules are drawn now.
    Under one fixed seed: with a fresh one per run, a draw that happens to be one of the table's schedules (warmup 0
    and total 10 is one in nine) is answered right by it, and the test failed 1 run in a few."""
    monkeypatch.setattr(runner, "seed", TABLE_SEED)
    table = {(4, 20): _cosine_multipliers(4, 20, 0.0, 4), (5, 20): _cosine_multipliers(5, 20, 0.0, 25),
             (3, 12): _cosine_multipliers(3, 12, 0.1, 15), (2, 8): _cosine_multipliers(2, 8, 0.2, 8),
             (0, 10): _cosine_multipliers(0, 10, 0.0, 12)}
    source = f"""import torch

TABLE = {table!r}


def make_warmup_cosine(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    rows = TABLE[(warmup_steps, total_steps)]
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: rows[min(step, len(rows) - 1)])
"""
    result = check(runner, "warmup-cosine-schedule", source)
    assert result.status is not Status.PASSED and result.passed_checks == 0, result.to_json()


# --- a check's right answer is drawn from the seed, unless it is a layout or a flag -------------------------------

# Checks whose right answer is the same for every seed by its nature: a layout of names and shapes, a flag, the
# constant values a fresh module starts from. Every other check draws its input from the seed, so the output
# of one run, read back from its failure messages, is no answer to the next.
SEED_FREE_CHECKS = {
    ("cnn-image-classifier", "parameter-layout"), ("cnn-image-classifier", "output-shapes"),
    ("resnet-block", "state-dict-layout"), ("gru-cell-from-scratch", "parameter-layout"),
    ("scaled-dot-product-attention", "shapes-batched-heads"), ("transformer-encoder-layer", "parameter-layout"),
    ("relu-autograd-function", "is-autograd-function"), ("custom-dataset", "sample-shapes"),
    ("shape-mismatch-debugging", "parameter-shapes"), ("custom-layer", "registered-parameters"),
    ("custom-layer", "no-bias"), ("forward-hooks", "detached-no-grad"), ("forward-hooks", "hooks-removed-on-error"),
    ("layer-norm-from-scratch", "parameters-init"), ("pairwise-distances", "output-shape"),
    ("training-loop-from-scratch", "optimizer-created-once"), ("training-loop-from-scratch", "train-and-eval-modes"),
    ("training-loop-from-scratch", "eval-under-no-grad"), ("freeze-layers", "requires-grad-flags"),
    ("freeze-layers", "returned-parameters"), ("custom-collate-fn", "batch-dtypes"),
    ("shape-mismatch-debugging", "batch-output-shape"), ("shape-mismatch-debugging", "single-image-shape"),
}
# Checks that judge one output against the submission's own other outputs (its batch losses, its gradients before
# clipping), whose values other checks judge against the seed's inputs: any run's outputs agree with themselves.
SELF_CONSISTENT_CHECKS = {
    ("gradient-clipping", "generator-and-missing-grads"), ("training-loop-from-scratch", "weighted-epoch-means"),
}


@pytest.mark.slow
def test_one_seeds_right_outputs_replayed_fail_every_check_but_layouts_and_flags() -> None:
    """An answer that returns what the reference gave on one seed (a constant a candidate can learn from a failed
    run's messages) is verified against two other seeds' inputs: only the seed-free and self-consistent checks pass
    it on both. Before, fifteen more did, among them early-stopping's patience and min-delta traces,
    custom-dataset's lengths [15, 9, 0, 0], the sinusoidal tables and a custom-layer initialised in ±1/8 whatever
    its in_features. (A count such as an optimizer's steps can match on one seed by chance, so both must pass.)"""
    from evaluators.code.harness import reference_outputs, verify

    replayed_passes = set()
    for question in load_bank():
        if question.code is None:
            continue
        learned, *others = [reference_outputs(question.code, seed) for seed in (1, 2, 3)]
        for check in question.code.checks:
            if all(verify(question.code, check, run[check.name][0], learned[check.name][1], run[check.name][1]) is None
                   for run in others):
                replayed_passes.add((question.id, check.name))
    assert sorted(replayed_passes) == sorted(SEED_FREE_CHECKS | SELF_CONSISTENT_CHECKS)


def test_early_stopping_traces_looked_up_in_a_table_fail(runner: CodeRunner) -> None:
    """early-stopping's checks ran fixed loss sequences, so a stopper that replays, by call count, the (stop, counter,
    best_loss) rows the failure messages give passed patience-sequence and min-delta-threshold without a patience rule.
    The runs are drawn per seed now: the rows of one seed's runs pass that seed and fail another."""
    from evaluators.code.harness import reference_outputs

    code = task("early-stopping")
    learned = reference_outputs(code, 1)
    table = {(inputs["patience"], inputs.get("min_delta", 0.0)): [[row["stop"], row["counter"], row["best_loss"]]
                                                                    for row in rows]
             for name, (inputs, rows) in learned.items() if name != "best-state-is-a-copy"}
    source = f"""import torch

TABLE = {table!r}


class EarlyStopping:
    def __init__(self, patience, min_delta=0.0):
        self.rows, self.calls, self.best_state = TABLE.get((patience, min_delta), [[False, 0, 0.0]]), 0, None

    def step(self, val_loss, model):
        stop, self.counter, self.best_loss = self.rows[min(self.calls, len(self.rows) - 1)]
        self.calls += 1
        if self.counter == 0:
            self.best_state = {{k: v.detach().clone() for k, v in model.state_dict().items()}}
        return stop
"""
    traced = {"patience-sequence", "min-delta-threshold"}
    with CodeRunner(workers=1, timeout_s=10.0, seed=1) as same_seed:
        passed = {c.name for c in same_seed.check(code, source, "early-stopping").checks if c.passed}
    assert traced <= passed  # the forgery is a real one: it passes the seed it was learned from
    failed = {c.name for c in runner.check(code, source, "early-stopping").checks if not c.passed}
    assert traced <= failed


def test_activations_captured_without_hooks_do_not_show_the_detached_copy() -> None:
    """kept-before-in-place passed any capture that was not the ReLU-overwritten output, so a capture_activations that
    registered no hook and returned zeros passed it and detached-no-grad, and its run said detach-clone was shown.
    A capture must now be a tensor the forward pass computed (another layer's is activation-values' to judge)."""
    from evaluators.code.harness import _probe, reference_outputs, verify
    from evaluators.code.probes import dumps, exec_submission, loads

    code = task("forward-hooks")
    constant = """import torch
def capture_activations(model, x, layer_names):
    found = dict(model.named_modules())
    for name in layer_names:
        if name not in found:
            raise KeyError(name)
    return {name: torch.zeros(1) for name in layer_names}
"""
    expected = reference_outputs(code, 1)
    namespace = exec_submission(constant)
    failed = []
    for check in code.checks:
        inputs, want = expected[check.name]
        outcome = _probe(code, check, namespace, inputs)
        if outcome.error or verify(code, check, inputs, loads(dumps(outcome.value)), want):
            failed.append(check.name)
    assert "kept-before-in-place" in failed
    assert {p for c in code.checks if c.name in failed for p in c.points} >= {"detach-clone"}
