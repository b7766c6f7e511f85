"""The offline scorer: honest scores with evidence, robust to the tricks weak answers use."""

from __future__ import annotations

import pytest

from evaluators.adhoc import adhoc_task, derive_rubric
from evaluators.base import GradingTask, Verdict
from evaluators.rubric import RubricScorer
from evaluators.text import is_negated


@pytest.fixture(scope="module")
def scorer(embedder):
    return RubricScorer(embedder)


@pytest.fixture(scope="module")
def by_id(bank):
    return {q.id: q for q in bank}


def grade(scorer, question, answer, earlier=None):
    return scorer.evaluate(GradingTask.from_question(question, answer, earlier))


def graded_both_ways(embedder, by_id, question_id, answer, **changed):
    """The answer scored with the default thresholds and with `changed` ones (skips if the entry is gone)."""
    from dataclasses import replace

    from evaluators.thresholds import Thresholds

    if question_id not in by_id:
        pytest.skip(f"{question_id} not in bank")
    variant = RubricScorer(embedder, replace(Thresholds(), **changed))
    return grade(RubricScorer(embedder), by_id[question_id], answer), grade(variant, by_id[question_id], answer)


RELU_REWORDED = (
    "You derive from autograd.Function and write two static methods. Forward stashes the input on ctx via "
    "save_for_backward and returns the input clamped at zero. Backward pulls the stored input back out and "
    "lets the upstream gradient through only where that input was positive, zero elsewhere. You invoke it "
    "as MyReLU.apply(t), and gradcheck with float64 tensors confirms the derivative numerically."
)


def test_reference_answers_score_high_without_false_misconceptions(scorer, bank):
    low = {}
    for question in bank:
        evaluation = grade(scorer, question, question.reference_answer)
        if evaluation.score < 4.0 or evaluation.misconceptions:
            low[question.id] = (evaluation.score, [m.quote for m in evaluation.misconceptions])
    assert len(low) <= len(bank) // 10, low  # at most 10% of entries (measured: ~6%)


def test_paraphrase_scores_like_the_reference(scorer, by_id):
    question = by_id["relu-autograd-function"]
    reference = grade(scorer, question, question.reference_answer)
    reworded = grade(scorer, question, RELU_REWORDED)
    assert reworded.score >= 3.5
    assert reference.score - reworded.score <= 1.5


def test_every_credit_quotes_the_answer(scorer, by_id):
    evaluation = grade(scorer, by_id["relu-autograd-function"], RELU_REWORDED)
    credited = [p for p in evaluation.points if p.verdict is not Verdict.MISSED]
    assert credited
    assert all(p.evidence and p.evidence in RELU_REWORDED for p in credited)


def test_keyword_stuffing_earns_little(scorer, by_id):
    stuffed = "autograd, Function, ctx, save_for_backward, backward, gradcheck, apply, relu, mask, float64"
    assert grade(scorer, by_id["relu-autograd-function"], stuffed).score <= 1.0


@pytest.mark.parametrize(
    ("question_id", "answer"),
    [
        ("train-vs-eval-mode", "model.eval() turns off gradients so you call it to save memory during inference."),
        ("zero-grad", "zero_grad sets the weights to zero before every optimisation step."),
    ],
)
def test_misconceptions_score_low_despite_shared_vocabulary(scorer, by_id, question_id, answer):
    if question_id not in by_id:
        pytest.skip(f"{question_id} not in bank")
    evaluation = grade(scorer, by_id[question_id], answer)
    assert evaluation.score <= 1.5
    assert evaluation.misconceptions, "the wrong claim should be named"
    assert evaluation.misconceptions[0].quote in answer


def test_negation_of_a_rubric_point_is_not_credit(scorer, by_id):
    question = by_id["relu-autograd-function"]
    negated = "Backward does not need the saved input; you never multiply the gradient by a mask."
    assert grade(scorer, question, negated).score <= 1.0


@pytest.mark.parametrize("answer", ["", "fine", "I don't know", "good question, it depends", "idk"])
def test_empty_and_evasive_answers_score_zero_with_a_reason(scorer, by_id, answer):
    evaluation = grade(scorer, by_id["dropout"], answer)
    assert evaluation.score == 0
    assert evaluation.gate in {"empty", "evasive", "too-short"}
    assert "score" in evaluation.feedback or "No answer" in evaluation.feedback


def test_answer_to_another_question_scores_zero(scorer, by_id):
    other = by_id["tensorflow-serving"].reference_answer
    evaluation = grade(scorer, by_id["relu-autograd-function"], other)
    assert evaluation.score <= 0.5
    assert evaluation.gate == "off-topic" or evaluation.score == 0


def test_padding_does_not_raise_a_partial_answer(scorer, by_id):
    question = by_id["relu-autograd-function"]
    partial = "You subclass torch.autograd.Function and write static forward and backward methods."
    padding = (
        " Deep learning has changed many industries over the past decade. Many companies use neural networks"
        " in production, and frameworks keep improving every year. It is important to keep learning and to"
        " read papers, and practice makes perfect when preparing for interviews."
    )
    base = grade(scorer, question, partial).score
    assert grade(scorer, question, partial + padding * 3).score <= base


RELU_CODE = (
    "class MyReLU(torch.autograd.Function):\n    @staticmethod\n"
    "    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x.clamp(min=0)\n"
    "    @staticmethod\n    def backward(ctx, grad_output):\n        x, = ctx.saved_tensors\n"
    "        return grad_output * (x > 0).float()\n"
)


def test_code_in_a_text_answer_counts_as_evidence(scorer, by_id):
    question = by_id["relu-autograd-function"]
    evaluation = grade(scorer, question, f"Like this:\n```python\n{RELU_CODE}```")
    covered = {p.point_id for p in evaluation.points if p.verdict is Verdict.COVERED}
    assert {"save-for-backward", "gradient-mask"} <= covered


def test_code_pasted_without_fences_is_read_as_code(scorer, by_id):
    question = by_id["relu-autograd-function"]
    fenced = grade(scorer, question, f"Like this:\n```python\n{RELU_CODE}```\nThat is the whole function.")
    bare = grade(scorer, question, f"Like this:\n{RELU_CODE}That is the whole function.")
    assert bare.score == fenced.score
    assert [p.verdict for p in bare.points] == [p.verdict for p in fenced.points]


@pytest.mark.parametrize(
    ("right", "wrong"),
    [
        ("Call optimizer.zero_grad() at the start of each iteration, before loss.backward().",
         "I call loss.backward(), then optimizer.zero_grad(), then optimizer.step()."),
        ("You call zero_grad before backward.", "zero_grad goes between backward and step."),
    ],
)
def test_the_order_of_steps_decides_a_sequencing_misconception(scorer, by_id, right, wrong):
    """Embeddings barely see order: "zero_grad before backward" sat at 0.83 to "backward, then
    zero_grad, then step", and the textbook answer was accused of the wrong claim."""
    question = by_id["zero-grad"]
    assert not grade(scorer, question, right).misconceptions
    assert grade(scorer, question, wrong).misconceptions


def test_event_order_reads_before_after_then_and_between():
    from evaluators.text import event_order, order_contradicts

    assert ("zero", "backward") in event_order("call zero_grad before backward")
    assert ("backward", "zero") in event_order("call zero_grad after backward")
    assert ("backward", "zero") in event_order("Before zero_grad runs, call backward")
    assert {("backward", "zero"), ("zero", "step")} <= event_order("zero_grad goes between backward and step")
    assert event_order("zero_grad clears the gradients of the weights") == frozenset()  # no word of sequence
    assert order_contradicts("zero_grad, then backward", "backward, then zero_grad")
    assert not order_contradicts("zero_grad, then backward", "zero_grad resets the weights")


def test_only_runs_of_code_lines_get_fences():
    from evaluators.text import fence_bare_code

    prose = "Call model.eval() before testing.\nThen wrap the loop in torch.no_grad()."
    assert fence_bare_code(prose) == prose  # sentences that mention calls stay prose
    pasted = "Keep it simple:\nopt.zero_grad()\nloss = loss_fn(model(x),\n               y)\nloss.backward()\nDone."
    code = "opt.zero_grad()\nloss = loss_fn(model(x),\n               y)\nloss.backward()"
    assert fence_bare_code(pasted) == f"Keep it simple:\n```\n{code}\n```\nDone."


def test_follow_up_answers_add_evidence(scorer, by_id):
    question = by_id["relu-autograd-function"]
    first = "You subclass torch.autograd.Function and write static forward and backward methods."
    later = "I would run torch.autograd.gradcheck on double precision inputs to compare with finite differences."
    alone = grade(scorer, question, first)
    together = grade(scorer, question, later, earlier=[first])
    assert together.score > alone.score


def test_ad_hoc_questions_get_derived_key_points(scorer):
    reference = (
        "Sunlight is scattered by the molecules of the air. Blue light has a shorter wavelength and is "
        "scattered far more strongly than red light. The scattered blue light reaches the eye from every "
        "direction of the sky."
    )
    assert len(derive_rubric(reference)) == 3
    good = scorer.evaluate(
        adhoc_task(
            question="Why is the sky blue?",
            reference_answer=reference,
            answer="Air molecules scatter short blue wavelengths much more than red, so blue comes from all over.",
        )
    )
    bad = scorer.evaluate(adhoc_task(question="Why is the sky blue?", reference_answer=reference, answer="fine"))
    assert good.score >= 2.5 and bad.score == 0


def test_strong_answer_outscores_weak_on_the_same_question(scorer, by_id):
    question = by_id["dropout"]
    strong = grade(scorer, question, question.reference_answer).score
    weak = grade(scorer, question, "Dropout is a layer in neural networks.").score
    assert strong - weak >= 2.5


def test_a_negated_evidence_phrasing_does_not_shadow_a_plain_one(scorer, by_id):
    """The rubric also words define-by-run contrastively ("isn't declared upfront, it gets recorded");
    a plain statement of the point must still earn it, not a polarity-discounted crumb."""
    question = by_id["dynamic-computation-graph"]
    assert any(is_negated(e) for e in question.rubric[0].evidence)  # the situation under test
    answer = "The graph is recorded as the code runs, so Python if statements and loops just work."
    point = grade(scorer, question, answer).points[0]
    assert point.point_id == "define-by-run"
    assert point.verdict is not Verdict.MISSED and point.evidence == "The graph is recorded as the code runs"


def test_one_vague_sentence_cannot_collect_several_points(scorer, by_id):
    question = by_id["autograd-internals"]
    vague = "When you call backward the gradients flow back from the loss through the graph."
    evaluation = grade(scorer, question, vague)
    assert sum(p.credit >= 0.5 for p in evaluation.points) <= 1  # without the reuse discount: 3 points
    assert evaluation.score <= 1.5  # without it: 3.0


def test_restating_the_question_is_not_an_answer(scorer, by_id):
    from dataclasses import replace

    from evaluators.rubric import Thresholds
    from evaluators.text import Unit, content_words, says_nothing_new

    question = by_id["zero-grad"]
    asked = content_words(question.question)
    echo = "optimizer.zero_grad() is what you call at a point of the training loop in PyTorch, it does what it says."
    assert says_nothing_new(Unit("optimizer.zero_grad() is what you call in the training loop", "", False), asked)
    assert not says_nothing_new(Unit("zero_grad resets every parameter's gradient before backward", "", False), asked)
    assert grade(scorer, question, echo).score == 0
    # The same words earn crumbs when restating is not discounted: the discount is what stops it.
    lenient = RubricScorer(scorer._embedder, replace(Thresholds(), echo_factor=1.0))
    assert grade(lenient, question, echo).score > 0


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("images come in as (N, H, W, C)", "images come in as batch height width channels"),
        ("conv2d wants NCHW tensors", "conv2d wants batch channels height width tensors"),
        ("a (C, H, W) image", "a channels height width image"),
        ("shape (N, C, L) for Conv1d", "shape N, C, L for Conv1d"),  # not an image layout: left alone
        ("C, H and x", "C, H and x"),
        ("mask = torch.rand_like(x) < p", "mask = torch rand like x less than p"),
        ("divide by (1-p)", "divide by 1 minus p"),
        ("(n, k) @ (k, m) -> (n, m)", "n, k matrix multiply k, m gives n, m"),
        ("y = x @ w.T", "y = x matrix multiply w.T"),
        ("@torch.no_grad()", "@torch no grad"),  # a decorator is not a product
        ("x >= 0 and channels-last", "x at least 0 and channels-last"),
    ],
)
def test_layouts_and_operators_are_read_as_words(written, read):
    from evaluators.text import spell_out_code

    assert spell_out_code(written) == read


def test_it_is_read_as_the_thing_the_answer_last_named(scorer, by_id):
    """'set it on the input batch' states the misconception only once 'it' is read as requires_grad."""
    from evaluators.text import split_units

    answer = (
        "requires_grad tells autograd to record operations on a tensor. "
        "You need to set it on the input batch as well, or the network has nothing to learn from."
    )
    units = split_units(answer)
    assert "set requires grad on the input batch" in units[1].normalised
    assert units[1].text.startswith("You need to set it on")  # the quote stays as written
    if "requires-grad" not in by_id:
        pytest.skip("requires-grad not in bank")
    evaluation = grade(scorer, by_id["requires-grad"], answer)
    assert evaluation.misconceptions and "set it on the input batch" in evaluation.misconceptions[0].quote
    assert evaluation.score <= 1.5


def test_it_stays_when_nothing_was_named():
    from evaluators.text import split_units

    assert split_units("It clears the gradients. Then it runs.")[1].normalised == "Then it runs."
    # "it" that stands for nothing is left alone even after a name
    assert split_units("Call zero_grad() first. It is important to keep learning.")[1].normalised == (
        "It is important to keep learning."
    )


def test_a_shorter_wording_of_a_wrong_claim_is_caught(scorer, by_id):
    """'You don't need to divide the loss' uses only the words of a wrong phrasing, but the phrasing's
    extra words keep the embeddings apart; a correct sentence on the same subject is not accused."""
    if "gradient-accumulation" not in by_id:
        pytest.skip("gradient-accumulation not in bank")
    setup = "Split the batch into micro-batches and call backward on each one, stepping the optimizer every N of them."
    wrong = grade(scorer, by_id["gradient-accumulation"], setup + " You don't need to divide the loss.")
    right = grade(scorer, by_id["gradient-accumulation"], setup + " Divide each loss by N so the sum is the mean.")
    assert [m.quote for m in wrong.misconceptions] == ["You don't need to divide the loss."]
    assert wrong.score <= 1.5
    assert not right.misconceptions and right.score > wrong.score


def test_a_spaced_dash_starts_a_clause_but_a_hyphen_does_not():
    from evaluators.text import split_units

    texts = [u.text for u in split_units("The optimizer sees it twice - effectively doubling the learning rate.")]
    assert "effectively doubling the learning rate." in texts
    assert [u.text for u in split_units("Use a well-known pre-trained model for this task.")] == [
        "Use a well-known pre-trained model for this task."
    ]



def test_an_example_after_e_g_stays_in_its_sentence():
    from evaluators.text import split_units

    units = [u.text for u in split_units(
        "Images come in as (N, C, H, W), e.g. (32, 3, 224, 224), i.e. Channels first. Then flatten them."
    )]
    assert units[0] == "Images come in as (N, C, H, W), e.g. (32, 3, 224, 224), i.e. Channels first."
    assert "Then flatten them." in units and not any(u.endswith(("e.g.", "i.e.")) for u in units)


def test_the_questions_own_words_earn_no_lexical_bonus(embedder, by_id):
    """'TensorFlow is named after the tensor' shares 'TensorFlow' and 'tensor' with rubric points, but the
    question asked about exactly those: echoing them is not evidence."""
    from dataclasses import replace

    from evaluators.thresholds import Thresholds

    if "tf-tensors" not in by_id:
        pytest.skip("tf-tensors not in bank")
    answer = "TensorFlow is named after the tensor, the idea being a tensor flowing through a graph."
    with_bonus = grade(RubricScorer(embedder), by_id["tf-tensors"], answer)
    without = grade(RubricScorer(embedder, replace(Thresholds(), lexical_bonus=0.0)), by_id["tf-tensors"], answer)
    assert [p.credit for p in with_bonus.points] == [p.credit for p in without.points]


def test_only_the_nearest_phrasings_set_the_wrong_words(embedder, by_id):
    """A sentence close to 'x = x + y changes x in place' states it; a farther phrasing of the same claim,
    with vocabulary of its own, must not make that sentence look innocent for lacking those words."""
    answer = (
        "In-place ops end with an underscore, like add_, and write into the tensor's memory. "
        "And note x = x + y also changes x in place."
    )
    banded, pooled = graded_both_ways(embedder, by_id, "inplace-operations", answer, wording_band=1.0)
    assert [m.quote for m in banded.misconceptions] == ["And note x = x + y also changes x in place."]
    assert banded.score <= 1.5 and not pooled.misconceptions


def test_key_terms_in_code_lines_weigh_more(embedder, by_id):
    """The embedding model reads a fenced code line poorly: the rubric's key terms it uses count extra."""
    from dataclasses import replace

    from evaluators.thresholds import Thresholds

    code = (
        "```python\nfor x, y in loader:\n    optimizer.zero_grad()\n    loss = loss_fn(model(x), y)\n"
        "    loss.backward()\n    optimizer.step()\n```"
    )
    plain = RubricScorer(embedder, replace(Thresholds(), code_lexical_factor=1.0))
    assert grade(RubricScorer(embedder), by_id["zero-grad"], code).score > grade(plain, by_id["zero-grad"], code).score


def test_a_probe_scores_its_claims_phrasings_above_the_truth():
    import numpy as np

    from evaluators.rubric_vectors import misconception_probes

    rng = np.random.default_rng(0)

    def around(direction, n):
        v = direction + 0.3 * rng.standard_normal((n, 8))
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    wrong_side, true_side = np.eye(8)[0] + np.eye(8)[1], np.eye(8)[0] - np.eye(8)[1]  # share a topic axis
    (probe,) = misconception_probes([around(wrong_side, 6)], around(true_side, 20), ridge=0.0005)
    unseen_wrong, unseen_true = around(wrong_side, 10), around(true_side, 10)
    wrong_scores, true_scores = unseen_wrong @ probe[:-1] + probe[-1], unseen_true @ probe[:-1] + probe[-1]
    assert wrong_scores.min() > 0.0 > true_scores.max()  # the veto and the sure mark sit in that gap
    assert np.median(wrong_scores) > 0.5 > -0.5 > np.median(true_scores)


# The detector as it was before the probes: similarity checks only, at their earlier threshold.
WITHOUT_PROBES = {"misconception": 0.74, "probe_sure": float("inf"), "probe_veto": float("-inf")}


def test_the_probe_clears_a_true_sentence_that_only_shares_a_wrong_claims_topic(embedder, by_id):
    """'pick one with cuda:1' is as close to 'model.to("cuda") spreads the model over the GPUs' as a
    wrong sentence would be; the claim's probe, fitted on the bank's own texts, puts it on the true side."""
    answer = "On a machine with several GPUs you pick one with cuda:1 or cuda:2."
    with_probe, similarity_only = graded_both_ways(embedder, by_id, "device-types-multi-gpu", answer, **WITHOUT_PROBES)
    assert similarity_only.misconceptions and not with_probe.misconceptions


def test_the_probe_catches_a_wrong_claim_worded_unlike_its_phrasings(embedder, by_id):
    """Passing the live loss tensor to add_scalar, said as a shortcut: below the similarity threshold of
    every phrasing, but on the wrong side by the claim's probe."""
    answer = (
        "Create a SummaryWriter and call writer.add_scalar('loss', loss) each step; "
        "you can just pass the loss tensor itself."
    )
    with_probe, similarity_only = graded_both_ways(
        embedder, by_id, "tensorboard-visualization", answer, **WITHOUT_PROBES
    )
    assert [m.claim for m in with_probe.misconceptions] == ["Logging the loss tensor itself every step is fine."]
    assert not similarity_only.misconceptions and with_probe.score < similarity_only.score
