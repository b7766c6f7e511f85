"""One typical mistake in a code answer fails the check of the point it concerns and no other: the broad value and
gradient checks accept the output that exactly that mistake gives, because another check owns it. Each case is a
one-line edit of the task's reference solution and the checks it must fail."""

from __future__ import annotations

import pytest

from evaluators.code.runner import CodeRunner
from evaluators.run_points import run_verdicts

MISTAKES = [
    ("gradient-accumulation", "no loss scaling",
     [("(loss / accum_steps).backward()", "loss.backward()")], ["scaled-by-accum-steps"]),
    ("gradient-accumulation", "zero_grad before every micro-batch",
     [("        loss = loss_fn(model(x), y)\n",
       "        optimizer.zero_grad()\n        loss = loss_fn(model(x), y)\n")],
     ["matches-large-batch"]),
    ("gradient-accumulation", "scaled losses returned",
     [("losses.append(loss.item())", "losses.append(loss.item() / accum_steps)")], ["returned-losses"]),
    ("gru-cell-from-scratch", "interpolation swapped",
     [("(1 - z) * n + z * h", "z * n + (1 - z) * h")], ["interpolation-direction"]),
    ("gru-cell-from-scratch", "reset gate left out",
     [("i_n + r * h_n", "i_n + h_n")], ["reset-in-candidate"]),
    ("gru-cell-from-scratch", "tanh update gate",
     [("z = torch.sigmoid(i_z + h_z)", "z = torch.tanh(i_z + h_z)")], ["single-step-values"]),
    ("gru-cell-from-scratch", "gates stacked update, reset, new",
     [("i_r, i_z, i_n =", "i_z, i_r, i_n ="), ("h_r, h_z, h_n =", "h_z, h_r, h_n =")], ["weight-gradients"]),
    ("inverted-dropout", "no 1/(1-p) scale",
     [("x * mask / (1.0 - self.p)", "x * mask")], ["train-drop-rate-and-scale"]),
    ("inverted-dropout", "mask kept with probability p",
     [("torch.rand_like(x) >= self.p", "torch.rand_like(x) < self.p")], ["fresh-mask-each-call"]),
    ("layer-norm-from-scratch", "eps outside the square root",
     [("torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)")], ["biased-variance-and-eps"]),
    ("layer-norm-from-scratch", "statistics over the batch dimension",
     [("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(dim=0, keepdim=True)"),
      ("** 2).mean(dim=-1, keepdim=True)", "** 2).mean(dim=0, keepdim=True)")], ["forward-values"]),
    ("early-stopping", "stops one epoch late", [("self.counter >= self.patience", "self.counter > self.patience")],
     ["patience-sequence"]),
    ("early-stopping", "counter never reset", [("            self.counter = 0\n", "")], ["patience-sequence"]),
    ("cnn-image-classifier", "global max pool",
     [("x.mean(dim=(2, 3))", "x.amax(dim=(2, 3))")], ["global-average-pool"]),
    ("cnn-image-classifier", "no ReLU after conv2",
     [("self.pool(F.relu(self.conv2(x)))", "self.pool(self.conv2(x))")], ["logits-match-reference"]),
    ("cnn-image-classifier", "softmax on the logits",
     [("return self.fc(x)", "return torch.softmax(self.fc(x), dim=1)")], ["gradients-match-reference"]),
    ("scaled-dot-product-attention", "divided by d", [("/ math.sqrt(d)", "/ d")], ["scaled-by-sqrt-d"]),
    ("scaled-dot-product-attention", "mask meaning inverted",
     [("masked_fill(~mask,", "masked_fill(mask,")], ["causal-mask"]),
    ("scaled-dot-product-attention", "softmax over the queries",
     [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")],
     ["softmax-over-keys", "large-scores-stable"]),
    ("sinusoidal-positional-encoding", "sin in the odd columns too",
     [("pe[:, 1::2] = torch.cos(pos * freq)", "pe[:, 1::2] = torch.sin(pos * freq)")],
     ["table-values", "long-sequence"]),
    ("custom-collate-fn", "mask inverted", [("[None, :] < lengths", "[None, :] >= lengths")], ["lengths-and-mask"]),
    ("custom-collate-fn", "float labels",
     [('"labels": torch.tensor(labels, dtype=torch.long)', '"labels": torch.tensor(labels, dtype=torch.float)')],
     ["batch-dtypes"]),
    ("custom-loss", "alpha on the wrong class",
     [("self.alpha * targets + (1 - self.alpha) * (1 - targets)",
       "(1 - self.alpha) * targets + self.alpha * (1 - targets)")],
     ["mean-loss-values"]),
    # Every value check failed it, so it missed all four checked points (0.9 with words that state the formula).
    ("custom-loss", "sigmoid(logits) in place of p_t", [("p_t = torch.exp(-ce)", "p_t = torch.sigmoid(logits)")],
     ["mean-loss-values"]),
    ("custom-loss", "mean reduction sums",
     [('if self.reduction == "mean":\n            return loss.mean()',
       'if self.reduction == "mean":\n            return loss.sum()')],
     ["reductions-and-hyperparameters"]),
    ("gradient-clipping", "norm without its square root",
     [("torch.sqrt(sum((g.detach() ** 2).sum() for g in grads))", "sum((g.detach() ** 2).sum() for g in grads)")],
     ["clips-by-global-norm"]),
    ("relu-autograd-function", "backward passes grad_output through unmasked",
     [("return grad_output * (x > 0).to(grad_output.dtype)", "return grad_output")], ["gradcheck-float64"]),
    ("relu-autograd-function", "backward masks by the sign of grad_output",
     [("return grad_output * (x > 0).to(grad_output.dtype)", "return grad_output.clamp(min=0)")],
     ["gradcheck-float64"]),
    # The contract asks for the gradient by hand: handing it to autograd, however, misses gradient-mask alone.
    ("relu-autograd-function", "backward through torch.autograd.grad of clamp",
     [("return grad_output * (x > 0).to(grad_output.dtype)",
       "with torch.enable_grad():\n"
       "            leaf = x.detach().requires_grad_(True)\n"
       "            return torch.autograd.grad(leaf.clamp(min=0), leaf, grad_output)[0]")], ["gradcheck-float64"]),
    ("relu-autograd-function", "backward through .backward() of clamp",
     [("return grad_output * (x > 0).to(grad_output.dtype)",
       "with torch.enable_grad():\n"
       "            leaf = x.detach().requires_grad_(True)\n"
       "            leaf.clamp(min=0).backward(grad_output)\n"
       "        return leaf.grad")], ["gradcheck-float64"]),
    ("relu-autograd-function", "backward through torch.func.vjp of clamp",
     [("return grad_output * (x > 0).to(grad_output.dtype)",
       "return torch.func.vjp(lambda t: t.clamp(min=0), x)[1](grad_output)[0]")], ["gradcheck-float64"]),
    ("relu-autograd-function", "backward through torch.autograd.grad of a clamp built in forward",
     [("        ctx.save_for_backward(x)\n        return x.clamp(min=0)",
       "        with torch.enable_grad():\n"
       "            ctx.leaf = x.detach().requires_grad_(True)\n"
       "            ctx.out = ctx.leaf.clamp(min=0)\n"
       "        return ctx.out.detach().clone()"),
      ("        (x,) = ctx.saved_tensors\n        return grad_output * (x > 0).to(grad_output.dtype)",
       "        return torch.autograd.grad(ctx.out, ctx.leaf, grad_output)[0]")], ["gradcheck-float64"]),
    ("training-loop-from-scratch", "epoch loss the unweighted mean of its batches' losses",
     [("            total += loss.item() * len(xb)\n        history.append(total / len(X))",
       "            total += loss.item()\n        history.append(total / ((len(X) + batch_size - 1) // batch_size))")],
     ["weighted-epoch-means"]),
    # final-weights named optimizer-once too, so a loop without zero_grad missed it and one remaking its optimizer
    # missed loop-order: each failed epoch-losses and final-weights, and missed both points.
    ("training-loop-from-scratch", "no zero_grad", [("            optimizer.zero_grad()\n", "")],
     ["epoch-losses", "final-weights"]),
    ("training-loop-from-scratch", "optimizer made anew each batch",
     [("    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n", ""),
      ("            optimizer.zero_grad()\n",
       "            optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
       "            optimizer.zero_grad()\n")], ["optimizer-created-once"]),
    ("training-loop-from-scratch", "optimizer made anew each epoch",
     [("    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n", ""),
      ("        total = 0.0\n",
       "        total = 0.0\n        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n")],
     ["optimizer-created-once"]),
    # large-logits named log-sum-exp-form too, so a shift by the wrong maximum (or none) missed the form it wrote
    # right, and the log of a stable softmax missed max-subtraction, which it did.
    ("stable-log-softmax", "max over the whole tensor",
     [("m = x.amax(dim=dim, keepdim=True).detach()", "m = x.max().detach()")], ["large-logits"]),
    ("stable-log-softmax", "no max shift", [("m = x.amax(dim=dim, keepdim=True).detach()", "m = 0")], ["large-logits"]),
    ("stable-log-softmax", "log of a stable softmax",
     [("return shifted - shifted.exp().sum(dim=dim, keepdim=True).log()",
       "return (shifted.exp() / shifted.exp().sum(dim=dim, keepdim=True)).log()")], ["spread-logits"]),
    ("pairwise-distances", "distances left squared", [(".sum(dim=-1).sqrt()", ".sum(dim=-1)")], ["values-float32"]),
    ("pairwise-distances", "result always float64", [("diff.pow(2)", "diff.double().pow(2)")], ["float64-preserved"]),
    ("custom-dataset", "length off by one",
     [("len(self.series) - self.window, 0)", "len(self.series) - self.window + 1, 0)")], ["length"]),
    ("custom-dataset", "no negative index", [("        if idx < 0:\n            idx += n\n", "")], ["index-errors"]),
    ("custom-dataset", "target of shape (1,)",
     [("y = self.series[idx + self.window]", "y = self.series[idx + self.window:idx + self.window + 1]")],
     ["sample-shapes"]),
    ("custom-dataset", "window of shape (window, 1)",
     [("x = self.series[idx:idx + self.window]", "x = self.series[idx:idx + self.window].unsqueeze(-1)")],
     ["sample-shapes"]),
    ("custom-dataset", "last partial batch dropped",
     [("shuffle=shuffle)", "shuffle=shuffle, drop_last=True)")], ["loader-batches"]),
    ("binary-classifier", "logits not squeezed",
     [("self.linear(x).squeeze(-1)", "self.linear(x)")], ["forward-logits"]),
    ("transformer-encoder-layer", "scores scaled by sqrt(d_model)",
     [("math.sqrt(self.d_head)", "math.sqrt(d)")], ["head-scale"]),
    ("transformer-encoder-layer", "heads split without the transpose",
     [("t.view(b, l, self.n_heads, self.d_head).transpose(1, 2)", "t.view(b, self.n_heads, l, self.d_head)")],
     ["head-split"]),
    ("resnet-block", "ReLU before the add",
     [("F.relu(out + self.shortcut(x))", "F.relu(out) + self.shortcut(x)")], ["residual-add"]),
    ("resnet-block", "no residual add", [("F.relu(out + self.shortcut(x))", "F.relu(out)")], ["residual-add"]),
    ("resnet-block", "projection only when the channels change",
     [("if stride != 1 or in_channels != out_channels:", "if in_channels != out_channels:")],
     ["projection-block-eval"]),
    ("resnet-block", "projection only when the stride changes",
     [("if stride != 1 or in_channels != out_channels:", "if stride != 1:")], ["projection-block-eval"]),
    ("gan-generator-discriminator", "fakes not detached for D", [("D(fake.detach())", "D(fake)")], ["detached-fakes"]),
    ("gan-generator-discriminator", "fakes not detached for D, G(z) drawn again for G",
     [("D(fake.detach())", "D(fake)"), ("g_loss = bce(D(fake), ones)", "g_loss = bce(D(G(z)), ones)")],
     ["detached-fakes"]),
    ("gan-generator-discriminator", "G trained against label 0",
     [("g_loss = bce(D(fake), ones)", "g_loss = bce(D(fake), zeros)")], ["generator-update"]),
    ("gan-generator-discriminator", "no opt_g.zero_grad", [("    opt_g.zero_grad()\n", "")], ["two-steps"]),
    ("warmup-cosine-schedule", "warmup starts from 0",
     [("(step + 1) / warmup_steps", "step / warmup_steps")], ["warmup-ramp"]),
    ("freeze-layers", "head replaced before freezing",
     [("    for p in model.parameters():\n        p.requires_grad_(False)\n", ""),
      ("    return [p", "    for p in model.parameters():\n        p.requires_grad_(False)\n    return [p")],
     ["new-head-shape"]),
    ("freeze-layers", "head keeps its old classes",
     [("nn.Linear(old_head.in_features, num_classes)", "nn.Linear(old_head.in_features, old_head.out_features)")],
     ["new-head-shape"]),
    ("forward-hooks", "output stored without clone", [("output.detach().clone()", "output.detach()")],
     ["kept-before-in-place"]),
    ("custom-layer", "weight not a Parameter",
     [("nn.Parameter(torch.empty(out_features, in_features))",
       "torch.empty(out_features, in_features, requires_grad=True)")], ["registered-parameters"]),
    ("custom-layer", "bias left out of forward",
     [("return y if self.bias is None else y + self.bias", "return y")], ["forward-values"]),
    ("warmup-cosine-schedule", "progress not clamped after total_steps",
     [("min(1.0, (step - warmup_steps)", "((step - warmup_steps)")], ["warmup-then-cosine"]),
    ("warmup-cosine-schedule", "min_lr_ratio ignored",
     [("return min_lr_ratio + (1 - min_lr_ratio) * 0.5", "return 0.5")], ["decay-floor"]),
    ("transformer-encoder-layer", "no residual around the feed-forward",
     [("self.norm2(x + self.drop_out(ff))", "self.norm2(self.drop_out(ff))")], ["residuals"]),
    ("binary-classifier", "no zero_grad", [("        optimizer.zero_grad()\n", "")], ["training-run-matches"]),
    ("binary-classifier", "MSE on the logits in place of BCE",
     [("nn.BCEWithLogitsLoss()", "nn.MSELoss()")], ["loss-function"]),
    ("binary-classifier", "MSE on the sigmoid in place of BCE",
     [("loss = loss_fn(model(X), y)", "loss = nn.MSELoss()(torch.sigmoid(model(X)), y)")], ["loss-function"]),
    ("gradient-clipping", "gradients scaled up below the threshold too",
     [("if coef < 1:", "if True:")], ["below-threshold-untouched"]),
    ("gradient-clipping", "right clip, unrooted norm returned",
     [("    return total\n", "    return total ** 2\n")], ["returns-norm"]),
    ("gradient-clipping", "parameters iterated twice, so a generator is clipped by nothing",
     [("        for g in grads:\n            g.mul_(coef)\n",
       "        for p in parameters:\n            if p.grad is not None:\n                p.grad.mul_(coef)\n")],
     ["generator-and-missing-grads"]),
    # clipped-training-step judged the clip too, so clipping each gradient by its own norm missed placement as well.
    ("gradient-clipping", "each gradient clipped by its own norm",
     [("    coef = max_norm / (total + 1e-6)\n    if coef < 1:\n        for g in grads:\n            g.mul_(coef)\n",
       "    for g in grads:\n        n = g.detach().norm()\n"
       "        if n > max_norm:\n            g.mul_(max_norm / (n + 1e-6))\n")],
     ["clips-by-global-norm", "generator-and-missing-grads"]),
    ("gradient-clipping", "clipped after optimizer.step()",
     [("    total = clip_grad_norm(model.parameters(), max_norm)\n    optimizer.step()\n",
       "    optimizer.step()\n    total = clip_grad_norm(model.parameters(), max_norm)\n")], ["clipped-training-step"]),
    ("custom-dataset", "target is the window's last item",
     [("y = self.series[idx + self.window]", "y = self.series[idx + self.window - 1]")], ["item-values"]),
]


@pytest.fixture(scope="module")
def runner():
    # A fixed seed: the inputs are the same on every run (a session draws a fresh one per submission).
    with CodeRunner(workers=1, timeout_s=20.0, seed=20261128) as code_runner:
        yield code_runner


@pytest.mark.parametrize(("task_id", "mistake", "edits", "fails"), MISTAKES,
                         ids=[f"{t}: {m}" for t, m, _, _ in MISTAKES])
def test_one_mistake_fails_only_the_check_of_its_point(bank, runner, task_id, mistake, edits, fails):
    question = next(q for q in bank if q.id == task_id)
    code = question.code.solution
    for old, new in edits:
        assert code.count(old) == 1, f"the reference solution no longer has {old!r}"
        code = code.replace(old, new)
    result = runner.check(question.code, code, question.id)
    failed = [c.name for c in result.checks if not c.passed]
    missed = sorted({point for check in question.code.checks if check.name in failed for point in check.points})
    assert len(missed) == 1, f"{mistake} misses the points {missed}"
    assert failed == fails


def test_inputs_captured_in_place_of_outputs_miss_the_hook_points_not_detach_clone(bank, runner):
    """Capturing a hook's inputs failed kept-before-in-place as well as activation-values, so its run was asked "The
    captured output of a Linear layer contains no negative numbers" of values that had them, and lost detach-clone,
    which its detach().clone() showed. kept-before-in-place judges the overwrite alone."""
    question = next(q for q in bank if q.id == "forward-hooks")
    old = "activations[name] = output.detach().clone()"
    assert question.code.solution.count(old) == 1
    code = question.code.solution.replace(old, "activations[name] = inputs[0].detach().clone()")
    result = runner.check(question.code, code, question.id)
    assert [c.name for c in result.checks if not c.passed] == ["activation-values"]


def test_a_transposed_weight_is_not_judged_unregistered(bank, runner):
    """A CustomLinear whose weight is (in, out) failed registered-parameters on its shape, and its run was asked "Your
    layer runs, but its weights never change during training and are missing from the state_dict". The shapes are
    judged where the checks load a state_dict."""
    question = next(q for q in bank if q.id == "custom-layer")
    code = question.code.solution
    for old, new in (("torch.empty(out_features, in_features)", "torch.empty(in_features, out_features)"),
                     ("x @ self.weight.T", "x @ self.weight")):
        assert code.count(old) == 1
        code = code.replace(old, new)
    failed = [c.name for c in runner.check(question.code, code, question.id).checks if not c.passed]
    assert "registered-parameters" not in failed and "forward-values" in failed


def test_a_hand_written_relu_that_runs_gradcheck_passes_and_autograd_in_backward_is_named(bank, runner):
    """relu-autograd-function catches a backward that hands the gradient to autograd by a check, not by forbidding
    torch.autograd.grad: gradcheck calls that, and an answer that verifies its backward with it must still pass."""
    question = next(q for q in bank if q.id == "relu-autograd-function")
    gradcheck = "\n\nx = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)\n" \
                "assert torch.autograd.gradcheck(MyReLU.apply, (x,))\n"
    assert runner.check(question.code, question.code.solution + gradcheck, question.id).passed_checks == 4
    old = "return grad_output * (x > 0).to(grad_output.dtype)"
    code = question.code.solution.replace(old, "return torch.func.vjp(lambda t: t.clamp(min=0), x)[1](grad_output)[0]")
    failed = [c for c in runner.check(question.code, code, question.id).checks if not c.passed]
    assert [c.message for c in failed] == [
        "backward had autograd differentiate clamp, so autograd computed the gradient; "
        "compute it in backward yourself, as the contract asks"]


@pytest.mark.parametrize("backward", [
    "with torch.enable_grad():\n            mask = (x.sign() + 1) / 2\n        return grad_output * mask",
    "with torch.enable_grad():\n            return grad_output * (x.clamp(min=0) > 0).to(grad_output.dtype)",
    "with torch.enable_grad():\n            return torch.where(x > 0, grad_output, x * 0)",
], ids=["sign", "clamp-compared", "where"])
def test_a_hand_written_relu_backward_under_enable_grad_passes(bank, runner, backward):
    """A backward that turns grad mode on (for double backward, say) and computes the mask from the saved input,
    which requires grad, has its ops recorded by autograd but differentiates none of them: gradcheck-float64 said
    "backward ran sign with autograd recording it, so autograd computed the gradient" of a right hand-written one."""
    question = next(q for q in bank if q.id == "relu-autograd-function")
    old = "return grad_output * (x > 0).to(grad_output.dtype)"
    assert question.code.solution.count(old) == 1
    code = question.code.solution.replace(old, backward)
    result = runner.check(question.code, code, question.id)
    assert [c.message for c in result.checks if not c.passed] == []


def test_a_training_loop_bug_does_not_cost_the_epoch_bookkeeping(bank, runner):
    """weighted-epoch-means judges the returned means against the code's own batches' losses: a loop that never
    zeroes its gradients trains wrong (epoch-losses and final-weights fail) but still averages what it saw right.
    Before it, epoch-losses named loss-bookkeeping and loop-order both, so unweighted epoch means cost loop-order."""
    question = next(q for q in bank if q.id == "training-loop-from-scratch")
    code = question.code.solution.replace("            optimizer.zero_grad()\n", "")
    failed = [c.name for c in runner.check(question.code, code, question.id).checks if not c.passed]
    assert "epoch-losses" in failed and "weighted-epoch-means" not in failed


def test_a_data_tie_is_not_credited_with_knowing_that_wrapping_the_storage_breaks_the_tie(bank, runner):
    """`self.output.weight.data = self.embedding.weight.data` puts two Parameters over one storage. Plain SGD steps
    each on the shared memory, which adds up to the tied update, so tie-survives-training passed under SGD and the
    run said "Right: ... neither does wrapping the same storage in a new Parameter" of code that does exactly that.
    Under Adam the two leaves' steps differ from one Parameter's. The mistake is the tie itself: it misses the points
    the tie's checks name and keeps shape-compatibility (its forward pass is right)."""
    question = next(q for q in bank if q.id == "weight-sharing")
    old = "self.output.weight = self.embedding.weight"
    assert question.code.solution.count(old) == 1
    code = question.code.solution.replace(old, "self.output.weight.data = self.embedding.weight.data")
    result = runner.check(question.code, code, question.id)
    failed = [c.name for c in result.checks if not c.passed]
    assert failed == ["unique-parameters", "shared-gradient", "tie-survives-training"]
    verdicts = {v.point_id: v.verdict.value for v in run_verdicts(question, [c.to_json() for c in result.checks])}
    assert verdicts == {"same-parameter-object": "missed", "parameter-count": "missed",
                        "gradients-accumulate": "missed", "copy-breaks-tie": "missed", "shape-compatibility": "covered"}
    # A right tie whose logits are computed by another route (matmul, not Linear's addmm) rounds differently and
    # still passes: Adam's step does not magnify those roundings past the comparison's tolerance.
    old_forward = "return self.output(torch.tanh(self.hidden(self.embedding(tokens))))"
    assert question.code.solution.count(old_forward) == 1
    other_route = question.code.solution.replace(old_forward, "h = torch.tanh(self.hidden(self.embedding(tokens)))\n"
                                                 "        return h @ self.output.weight.T + self.output.bias")
    assert runner.check(question.code, other_route, question.id).passed_checks == len(question.code.checks)
