"""The bank's phrasings of a rubric point state that point: a one-line answer stating only a neighbouring
fact must not earn it (the scorer matches answers against each point's description and evidence)."""

from __future__ import annotations

import pytest

from evaluators.base import GradingTask, Verdict
from evaluators.rubric import RubricScorer

# (entry, a true sentence about something else, the point it must not earn). Each was credited with that
# point, in full, before the entry's evidence was reworded.
NEIGHBOURING_FACTS = [
    ("cuda-and-pytorch", "NCCL handles communication between GPUs.", "pytorch-dispatch"),
    ("quantization", "Post-training quantization requires no retraining.", "ptq-dynamic-static"),
    ("tf-computation-graph", "Keras fit runs the training step as a graph.", "tracing"),
    ("save-and-load-models", "A state_dict is an ordered dictionary from names such as fc.weight to tensors.",
     "save-state-dict"),
    ("requires-grad", "After loss.backward(), tensor.grad holds the gradient of the loss with respect to that tensor.",
     "tracking-flag"),
    ("nn-module", "Then build an optimizer from model.parameters().", "parameter-registration"),
    ("optimizers", "Param groups let different layers use different learning rates.", "usage-pattern"),
    ("weight-sharing", "After tying, the two layers keep identical weights throughout training.",
     "gradients-accumulate"),
    ("torch-compile", "The first call is slow because it compiles.", "modes"),
    ("gan-generator-discriminator", "Adam with beta1 0.5 is common for GANs.", "separate-optimizers"),
    ("sinusoidal-positional-encoding",
     "In forward you slice the table to the sequence length and add it to the embeddings.", "buffer-not-parameter"),
    ("torchscript", "torch.compile(model) is a just-in-time compiler that keeps your eager Python code.",
     "maintenance-mode"),
]


@pytest.fixture(scope="module")
def scorer(embedder):
    return RubricScorer(embedder)


@pytest.mark.parametrize(("entry", "sentence", "point"), NEIGHBOURING_FACTS)
def test_a_neighbouring_fact_does_not_cover_a_point(bank, scorer, entry, sentence, point):
    question = next(q for q in bank if q.id == entry)
    (evaluation,) = scorer.evaluate_many([GradingTask.from_question(question, sentence)])
    verdict = next(v for v in evaluation.points if v.point_id == point)
    assert verdict.verdict is not Verdict.COVERED, (verdict.credit, verdict.evidence)


@pytest.mark.slow
def test_every_model_answer_states_each_of_its_points(bank, scorer):
    """Graded against its own rubric, a reference answer leaves no point missed: the model answer shown to
    candidates states everything its rubric asks for, one point to a sentence where it can (a sentence
    supports only the point it states best)."""
    evaluations = scorer.evaluate_many([GradingTask.from_question(q, q.reference_answer) for q in bank])
    missed = [(e.question_id, v.point_id) for e in evaluations for v in e.points if v.verdict is Verdict.MISSED]
    assert missed == []


# (entry, a true answer, the claim a plainly wrong answer states). A claim's phrasings that are true in some
# reading accuse correct answers: each true answer here was accused of its claim before the phrasing went.
TRUE_ANSWERS_NEAR_A_CLAIM = [
    # "use x.data to get the tensor without gradients" was a phrasing of the claim, yet it is what .data does.
    ("tensor-vs-variable",
     "Variable was merged into Tensor in 0.4. Old code used x.data to get the tensor without gradients. "
     "Today I would write x.detach() instead.",
     "Variable is deprecated. There is no difference between .data and .detach(), swapping them never "
     "changes anything."),
    # "dropout 0.8 keeps 20 percent of neurons" was a phrasing of the keep-probability claim, yet nn.Dropout(0.8)
    # keeps 20% (torch 2.13: 0.2002 of 100,000 ones non-zero); the embedder reads 20 and 80 alike, so the
    # phrasings of that claim carry it in words, not numbers.
    ("dropout", "p is the probability of zeroing an element, so dropout 0.8 keeps 20 percent of neurons.",
     "p is the keep probability."),
    # "scale by the dimension" is the right answer with "square root of" left out.
    ("scaled-dot-product-attention", "Scale the scores by the square root of the dimension d_k.",
     "I divide the scores by d_k itself, 64 for 64-dimensional keys."),
    # With the default zero_grad (grads set to None) step skips a frozen parameter: torch 2.13 moved it by 0.0
    # under SGD with momentum and AdamW, by 1.41 and 0.16 with zero_grad(set_to_none=False).
    ("frozen-layers-still-change",
     "It's fine to leave frozen parameters in the optimizer. The default zero_grad sets their grads to None, so "
     "step skips them.",
     "Parameters with requires_grad False are never touched by optimizer.step, whatever state the optimizer holds."),
    # Without detach the discriminator's loss does reach the generator: that is why one detaches.
    ("gan-generator-discriminator", "The discriminator loss can update the generator too unless you detach the fakes.",
     "I feed G(z) straight into the discriminator loss without calling detach, it makes no difference."),
    # Loading in __init__ is the claim only for data larger than memory.
    ("custom-dataset", "For a small dataset that fits in memory it is fine to load all the files in __init__.",
     "I read and preprocess every file in __init__ even when the dataset is larger than memory."),
    # "x.to('cuda') moves x to the GPU" reads the same as the reassigned form that is right.
    ("gpu-device-usage", "x = x.to('cuda') moves x to the GPU.",
     "I just call x.to('cuda') without assigning it and x is on the GPU."),
    # add_scalar takes a tensor (torch/utils/tensorboard/summary.py: make_np, then float): what costs memory is
    # keeping the tensors, which the claim now says.
    ("tensorboard-visualization",
     "writer.add_scalar('loss', loss, step) works with the loss tensor itself; calling item() first is optional.",
     "I pass the loss tensor itself to add_scalar without a step, since the writer figures out the x axis and "
     "keeping the tensor costs nothing."),
]


@pytest.mark.parametrize(("entry", "true_answer", "wrong_answer"), TRUE_ANSWERS_NEAR_A_CLAIM)
def test_a_true_answer_is_not_accused_of_a_claim_near_it(bank, scorer, entry, true_answer, wrong_answer):
    question = next(q for q in bank if q.id == entry)
    right, wrong = scorer.evaluate_many([GradingTask.from_question(question, a) for a in (true_answer, wrong_answer)])
    assert [m.quote for m in right.misconceptions] == []
    assert wrong.misconceptions  # the claim is still caught where an answer states it


@pytest.mark.slow
def test_no_correction_read_as_an_answer_is_accused(bank, scorer):
    """Each wrong claim's own correction, given alone as the answer, is accused of nothing: a phrasing of a claim
    that restates its correction (or another claim's) would accuse the candidates who know the truth."""
    tasks = [GradingTask.from_question(q, m.correction) for q in bank for m in q.misconceptions]
    accused = [(t.question_id, t.answer, [m.claim for m in e.misconceptions])
               for t, e in zip(tasks, scorer.evaluate_many(tasks), strict=True) if e.misconceptions]
    assert accused == []
