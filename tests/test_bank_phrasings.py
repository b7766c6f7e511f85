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
