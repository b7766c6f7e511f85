"""The offline scorer: honest scores with evidence, robust to the tricks weak answers use."""

from __future__ import annotations

import pytest

from evaluators.adhoc import adhoc_task, derive_rubric
from evaluators.base import GradingTask, Verdict
from evaluators.rubric import RubricScorer


@pytest.fixture(scope="module")
def scorer(embedder):
    return RubricScorer(embedder)


@pytest.fixture(scope="module")
def by_id(bank):
    return {q.id: q for q in bank}


def grade(scorer, question, answer, earlier=None):
    return scorer.evaluate(GradingTask.from_question(question, answer, earlier))


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
    """A list of the reference's keywords scores far below the reference. Since every answer weighs the
    same in the fit, this team's adversarial answers count for less and the model is flatter at the low
    end: this list went from 1.4 to 1.7 (the reference: 4.8 to 4.7)."""
    stuffed = "autograd, Function, ctx, save_for_backward, backward, gradcheck, apply, relu, mask, float64"
    question = by_id["relu-autograd-function"]
    score = grade(scorer, question, stuffed).score
    assert score <= 2.0 and score < grade(scorer, question, question.reference_answer).score / 2.5


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
    assert grade(scorer, by_id[question_id], answer).score <= 1.5


def test_padding_does_not_raise_a_partial_answer(scorer, by_id):
    question = by_id["relu-autograd-function"]
    partial = "You subclass torch.autograd.Function and write static forward and backward methods."
    padding = (
        " Deep learning has changed many industries over the past decade. Many companies use neural networks"
        " in production, and frameworks keep improving every year. It is important to keep learning and to"
        " read papers, and practice makes perfect when preparing for interviews."
    )
    base = grade(scorer, question, partial).score
    # Filler may share a word with the reference; it must not buy more than that (when length was a
    # signal, padding bought about a point).
    assert grade(scorer, question, partial + padding * 3).score <= round(base + 0.2, 1)  # scores are in tenths


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
    assert good.score >= 2.5 and bad.score <= 1.0


def test_strong_answer_outscores_weak_on_the_same_question(scorer, by_id):
    question = by_id["dropout"]
    strong = grade(scorer, question, question.reference_answer).score
    weak = grade(scorer, question, "Dropout is a layer in neural networks.").score
    assert strong - weak >= 2.5


def test_an_example_after_e_g_stays_in_its_sentence():
    from evaluators.text import split_units

    units = [u.text for u in split_units(
        "Images come in as (N, C, H, W), e.g. (32, 3, 224, 224), i.e. Channels first. Then flatten them."
    )]
    assert units[0] == "Images come in as (N, C, H, W), e.g. (32, 3, 224, 224), i.e. Channels first."
    assert "Then flatten them." in units and not any(u.endswith(("e.g.", "i.e.")) for u in units)


def test_a_sentence_may_start_with_a_lower_case_name_in_code():
    from evaluators.text import split_units

    units = [u.text for u in split_units(
        "detach() returns a new tensor cut out of the graph. requires_grad=False is a flag on a leaf; "
        "torch.no_grad turns recording off. It is fast, etc. and cheap."
    )]
    assert units == ["detach() returns a new tensor cut out of the graph.", "requires_grad=False is a flag on a leaf;",
                     "torch.no_grad turns recording off.", "It is fast, etc. and cheap."]


def test_two_claims_each_opening_with_a_name_in_code_earn_both_points(scorer, by_id):
    # A reviewer's answer: glued into one sentence, the two claims could earn only one point, and the
    # feedback called "Missing" what the candidate had said.
    evaluation = grade(scorer, by_id["detach-vs-requires-grad-false"], (
        "detach() returns a new tensor that shares storage but is cut out of the graph, so no gradient flows back "
        "through it; you use it for targets or logging. requires_grad=False is a flag on a leaf tensor, used to "
        "freeze parameters such as a pretrained backbone."))
    verdicts = {p.point_id: p.verdict for p in evaluation.points}
    assert verdicts["detach-semantics"] != Verdict.MISSED and verdicts["flag-semantics"] != Verdict.MISSED, verdicts


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


ZERO_GRAD_RIGHT = (
    "Because calling backward adds the new derivatives onto whatever is already stored on the weights, "
    "you have to clear the stored derivatives at the start of every step"
)


@pytest.mark.parametrize(
    ("question_id", "answer"),
    [
        ("zero-grad", ZERO_GRAD_RIGHT),
        ("broadcasting", "Broadcasting compares shapes from the trailing dimension backwards; two dimensions fit "
         "when they are equal or one of them is 1, and a size-1 dimension is expanded to match. For example a "
         "(3,1) tensor plus a (4,) tensor gives a (3,4) result."),
        ("dropout", "It randomly switches off neurons while training so the network can't rely on particular "
         "ones; it's turned off at test time"),
    ],
)
def test_correct_short_answers_are_scored_on_merit_and_never_accused(scorer, by_id, question_id, answer):
    """Each of these scored 0 under the old gates, flagged with the very misconception it refutes or
    as 'does not address this question'."""
    evaluation = grade(scorer, by_id[question_id], answer)
    assert not evaluation.misconceptions and evaluation.gate is None
    assert evaluation.score >= 1.0
    assert evaluation.score > grade(scorer, by_id[question_id], "It is a thing in PyTorch.").score


@pytest.mark.parametrize("answer", ["", "  ", "I don't know", "idk", "pass", "No idea, sorry.",
                                    "I don\u2019t know", "I give up.", "dunno", "I don't understand", "Just tell me.",
                                    # as real students typed it (SemEval Beetle train, each graded 0)
                                    "I\"m not sure.", "im not sure", "I am not sure", "I'm not sure",
                                    "i don\"t know.", "I can\"t remember", "i still dont know",
                                    "i have absolutely no idea"])
def test_only_empty_and_explicit_non_answers_score_zero_without_the_model(scorer, by_id, answer):
    evaluation = grade(scorer, by_id["dropout"], answer)
    assert evaluation.score == 0 and evaluation.gate in {"empty", "non-answer"}
    assert "scores 0" in evaluation.feedback or "No answer" in evaluation.feedback


@pytest.mark.parametrize("answer", ["I'm not sure, maybe it is something to do with the GPU.",
                                    "I do not know why.", "i dont know the rest", "I don't know what else to say."])
def test_saying_one_does_not_know_and_something_else_is_scored_by_the_model(scorer, by_id, answer):
    """A hedged guess is graded on its guess, though none of its words is the reference's. Off-topic remarks
    ("why", "the rest": SemEval answers graded 0) are scored by the model too, and score little."""
    evaluation = grade(scorer, by_id["dropout"], answer)
    assert evaluation.gate is None and 0 < evaluation.score <= 1.0


@pytest.mark.parametrize("answer", ["I'm not sure, but it randomly switches off neurons while training.",
                                    "I don't know why, dropout just helps.", "No idea how dropout works."])
def test_an_unsure_answer_that_touches_the_topic_is_scored_by_the_model(scorer, by_id, answer):
    assert grade(scorer, by_id["dropout"], answer).gate is None


@pytest.mark.parametrize("answer", ["fine", "good question, it depends", "Dropout."])
def test_vague_answers_are_scored_by_the_model_and_score_little(scorer, by_id, answer):
    evaluation = grade(scorer, by_id["dropout"], answer)
    assert evaluation.gate is None and evaluation.score <= 1.0


def test_a_one_phrase_answer_can_be_complete(scorer):
    question = "Who was the first president of the United States?"
    right = scorer.evaluate(adhoc_task(question=question, reference_answer="George Washington",
                                       answer="George Washington"))
    wrong = scorer.evaluate(adhoc_task(question=question, reference_answer="George Washington",
                                       answer="Abraham Lincoln"))
    assert right.score >= 4.0 and right.score - wrong.score >= 2.0


def test_a_number_is_an_answer(scorer):
    """An answer of digits alone was once read as no answer at all and scored 0 without the model."""
    question = "How many senators does the US Senate have?"
    evaluation = scorer.evaluate(adhoc_task(question=question, reference_answer="one hundred (100)", answer="100"))
    assert evaluation.gate is None and evaluation.score > 0


def test_a_wrong_claim_lowers_the_score_without_wiping_out_the_credit(scorer, by_id):
    question = by_id["zero-grad"]
    clean = grade(scorer, question, question.reference_answer)
    wrong = grade(scorer, question, question.reference_answer
                  + " PyTorch clears gradients automatically after each step.")
    assert [m.claim for m in wrong.misconceptions] == ["PyTorch clears gradients automatically after each step."]
    assert 2.5 <= wrong.score < clean.score
    assert any(p.verdict is Verdict.COVERED for p in wrong.points)


def test_naming_a_wrong_claim_to_reject_it_is_not_accused(scorer, by_id):
    for answer in (
        "Some people think PyTorch clears gradients automatically after each step, but it does not.",
        "backward adds into .grad instead of PyTorch clearing gradients automatically after each step.",
        "PyTorch does not clear gradients automatically after each step.",
    ):
        assert not grade(scorer, by_id["zero-grad"], answer).misconceptions, answer


@pytest.mark.parametrize("question_id", ["cnn-image-classifier", "resnet-block", "rnn-lstm-gru"])
def test_an_answer_that_states_the_correction_is_not_accused_of_the_claim_it_names(scorer, by_id, question_id):
    """The claim's sentence alone reads as the claim; beside a sentence stating the correction it is named
    to be rejected. Each of these was accused before the detector looked for the correction."""
    question = by_id[question_id]
    for m in question.misconceptions:
        claim = m.claim[0].lower() + m.claim[1:]
        assert grade(scorer, question, m.claim).misconceptions, m.claim
        refuting = f"A common mistake is to think that {claim} In fact, {m.correction}"
        assert not grade(scorer, question, refuting).misconceptions, refuting


@pytest.mark.parametrize(("question_id", "claim_opens"), [
    ("dataset-and-dataloader", "num_workers"), ("sequential-vs-module", "Sequential"), ("cuda-out-of-memory", "GPU"),
])
def test_a_correction_in_the_same_sentence_as_the_claim_clears_it(scorer, by_id, question_id, claim_opens):
    """The whole sentence reads as the claim; the clause after the break states the correction. Each of
    these was accused before the detector read the text either side of a sentence's clause breaks."""
    question = by_id[question_id]
    m = next(m for m in question.misconceptions if m.claim.startswith(claim_opens))
    # "GPU memory" stays as written; "Sequential models" opens the clause lower-cased.
    claim, correction = ((t if t[1:2].isupper() else t[0].lower() + t[1:]).rstrip(".") for t in (m.claim, m.correction))
    assert grade(scorer, question, m.claim).misconceptions, m.claim
    refuting = f"Some people believe {claim}, but that is wrong: {correction}."
    assert not grade(scorer, question, refuting).misconceptions, refuting


def test_a_credited_quote_is_about_its_point(scorer, by_id):
    """A sentence supports only the point it states best: the in-place sentence is not evidence that
    out-of-place ops return a new tensor."""
    evaluation = grade(scorer, by_id["inplace-operations"],
                       "In-place operations like x.add_(y) modify the tensor's storage directly.")
    credited = [p for p in evaluation.points if p.evidence]
    assert len(credited) == 1 and "trailing underscore" in credited[0].description
    assert all(p.verdict is Verdict.MISSED for p in evaluation.points if "Out-of-place" in p.description)


def test_one_sentence_supports_at_most_one_point(scorer, by_id):
    vague = "When you call backward the gradients flow back from the loss through the graph."
    evaluation = grade(scorer, by_id["autograd-internals"], vague)
    assert sum(p.evidence is not None for p in evaluation.points) <= 1


def test_the_fitted_model_reads_every_signal_the_scorer_gives(scorer, by_id):
    from evaluators.signals import SIGNALS, fitted_model

    model = fitted_model()
    assert model.signals == SIGNALS and len(model.weights) == len(SIGNALS)
    ((values, _),) = scorer.signals_many([GradingTask.from_question(by_id["dropout"], RELU_REWORDED)])
    assert set(values) == set(SIGNALS)
    # Signs fixed by meaning: likeness to the reference never lowers a score, a wrong claim never raises it.
    for name, weight in zip(model.signals, model.weights, strict=True):
        assert weight <= 0 if name == "wrong" else weight >= 0


def test_rubrics_and_answer_sentences_are_read_once_and_the_rubric_cache_is_bounded(bank):
    """A repeated answer (a follow-up turn re-reads the earlier one) and its rubric cost no second model
    pass. Beyond its size the rubric cache drops the oldest entry, which is built again when asked for."""
    from evaluators.text import split_units
    from knowledge.embeddings import HashingEmbedder

    class Counting(HashingEmbedder):
        def __init__(self) -> None:
            self.texts: list[str] = []

        def embed_batch(self, texts):
            self.texts.extend(texts)
            return super().embed_batch(texts)

    embedder = Counting()
    scorer = RubricScorer(embedder, cache_size=2)
    first, second, third = bank[:3]
    answer = "Gradients add up across calls. You clear them before each step."
    before = grade(scorer, first, answer)
    assert embedder.texts  # the rubric and the answer were read
    embedder.texts.clear()
    assert grade(scorer, first, answer) == before
    assert embedder.texts == []  # all of it came from the caches
    grade(scorer, second, answer)
    grade(scorer, third, answer)
    assert len(scorer._cache) == 2
    embedder.texts.clear()
    grade(scorer, first, answer)
    assert split_units(first.reference_answer)[0].text in embedder.texts  # dropped, so built again


def test_a_code_fences_language_tag_is_not_a_word_of_the_answer(scorer):
    """Words are read from the answer's units: "```python" is markup, not a claim about Python."""
    reference = "Python lists hold objects of any type, while a tensor holds numbers of one dtype."
    (tagged, _), (plain, _) = scorer.signals_many([
        adhoc_task(question="How does a tensor differ from a list?", reference_answer=reference,
                   answer=f"```{tag}\nx = torch.zeros(3, dtype=torch.float32)\n```")
        for tag in ("python", "")
    ])
    assert tagged["stem_recall"] == plain["stem_recall"] > 0  # "torch", "float32" read; "python" not


def test_a_well_scored_answer_to_a_one_claim_reference_is_not_told_it_missed_the_claim(scorer):
    """A point with one phrasing (an ad-hoc reference's claim) meets fewer chances to match than a bank
    point: its closeness is raised before the verdict cut-offs. Without that, this answer scored 3.1 with
    the feedback 'Missing: <the reference>'."""
    evaluation = scorer.evaluate(adhoc_task(
        question="What does dropout do?",
        reference_answer="Dropout randomly zeroes activations during training to reduce overfitting; it is "
                         "disabled at eval time.",
        answer="It randomly turns off neurons in training so the net does not overfit.",
    ))
    assert evaluation.score >= 2.5
    assert [p.verdict for p in evaluation.points] != [Verdict.MISSED]
    assert not evaluation.feedback.startswith("Missing")


def test_the_single_phrasing_offset_moves_verdicts_of_one_phrasing_points_only(embedder, by_id):
    """Bank points carry several phrasings: their verdicts, credits and every score stay as they were."""
    from dataclasses import replace

    plain = RubricScorer(embedder)
    raised = RubricScorer(embedder, model=replace(
        plain.model, points=replace(plain.model.points, single_phrasing_offset=1.0)))
    bank_task = GradingTask.from_question(by_id["dropout"], "It randomly zeroes some activations while training.")
    assert raised.evaluate(bank_task) == plain.evaluate(bank_task)
    adhoc = adhoc_task(question="Who was the first president of the United States?",
                       reference_answer="George Washington", answer="Abraham Lincoln")
    before, after = plain.evaluate(adhoc), raised.evaluate(adhoc)
    assert after.score == before.score
    assert before.points[0].verdict is not Verdict.COVERED and after.points[0].verdict is Verdict.COVERED


def test_a_sentence_denying_the_claim_is_not_accused_of_it(scorer, by_id):
    """"It is not true that X" reads as negated, so it is compared only with the entry's negated cues; one
    of them ("... batch size doesn't matter ...") sat close enough to accuse it until the detector asked
    whether the sentence is nearer a phrasing of the other polarity, the claim itself."""
    question = by_id["batch-normalization"]
    m = next(m for m in question.misconceptions if "each sample across its own features" in m.claim)
    stated = next(cue for cue in m.cues if cue.startswith("BatchNorm works fine with a batch of one"))
    assert [w.claim for w in grade(scorer, question, stated).misconceptions] == [m.claim], stated
    denial = "It is not true that batchNorm normalises each sample across its own features."
    assert not grade(scorer, question, denial).misconceptions, denial


def test_typographic_apostrophes_read_as_plain_ones():
    """Phones and word processors type "don\u2019t": the same words, the same polarity."""
    from evaluators.text import content_words, is_negated

    assert is_negated("It doesn\u2019t copy the data.") and not is_negated("It copies the data.")
    assert content_words("It doesn\u2019t copy") == content_words("It doesn't copy")


def test_feedback_on_a_one_word_reference_says_what_was_expected(scorer):
    """A bare reference ("Paris") is turned into a point whose wording reads right after "Missing:" or
    "Right:"; "The answer states: Paris" read as if the candidate had said it."""
    task = adhoc_task(question="What is the capital of France?", reference_answer="Paris",
                      answer="No clue, maybe Rome?")
    evaluation = scorer.evaluate(task)
    assert [p.description for p in evaluation.points] == ["Expected answer: Paris"]
    assert "Expected answer: Paris" in evaluation.feedback and "states" not in evaluation.feedback


def test_feedback_lists_points_without_a_full_stop_before_each_semicolon():
    from evaluators.base import PointVerdict, Verdict
    from evaluators.feedback import compose_feedback
    from knowledge.schema import RubricPoint

    points = [RubricPoint(id=i, description=f"The answer says {i}.", weight=1, evidence=[f"{i} is said"]) for i in "ab"]
    missed = [PointVerdict.judged(p, Verdict.MISSED, 0.0, None) for p in points]
    assert compose_feedback(missed, [], None) == "Missing: The answer says a; The answer says b."
    right = compose_feedback([PointVerdict.judged(points[0], Verdict.COVERED, 1.0, "a is said"), missed[1]], [], None)
    assert right == 'Right: The answer says a (you said: "a is said")\nMissing: The answer says b.'


def test_feedback_quotes_the_sentence_that_earned_a_partial_point():
    """"Partly there: X" at a credit of 0.002 gave the candidate nothing to judge it by."""
    from evaluators.base import PointVerdict, Verdict
    from evaluators.feedback import compose_feedback
    from knowledge.schema import RubricPoint

    point = RubricPoint(id="a", description="The answer says a.", weight=1, evidence=["a is said"])
    partly = compose_feedback([PointVerdict.judged(point, Verdict.PARTIAL, 0.002, "a might be said")], [], None)
    assert partly == 'Partly there: The answer says a (you said: "a might be said")'
    assert compose_feedback([PointVerdict.judged(point, Verdict.PARTIAL, 0.5, None)], [], None) == \
        "Partly there: The answer says a"


# The reviewer's answer to requires-grad (stop 55): every point stated, in a fifth of the model answer's length.
REQUIRES_GRAD_CONCISE = (
    "requires_grad=True makes autograd record every operation on the tensor so backward() can compute its gradient "
    "into .grad. Results of operations on it also require grad and have a grad_fn. Plain tensors default to False, "
    "while nn.Parameter defaults to True, so model weights are tracked automatically. Only floating point and complex "
    "tensors can require grad. Setting it to False freezes a parameter, for example a pretrained backbone, which "
    "saves compute and memory."
)


def test_a_right_concise_answer_scored_under_four_is_told_what_the_score_also_reads(scorer, by_id):
    """No point missed and nothing wrong, yet 3.8: the score also reads how much of the whole model answer the
    answer matches (word by word, and the share of its words used: 33% here, the model answer's own 99%), which
    the verdicts do not show. The feedback says so with the figure, and points to the model answer."""
    question = by_id["requires-grad"]
    concise = grade(scorer, question, REQUIRES_GRAD_CONCISE)
    assert all(p.verdict is not Verdict.MISSED for p in concise.points) and not concise.misconceptions
    assert concise.score < 4.0
    assert concise.feedback.splitlines()[-1] == (
        "No point is missing, but the score also weighs how much of the full model answer's content you give "
        "(you used 33% of its content words), so see the model answer for what more it says.")
    # Not said where the score is no lower than a model answer's, nor where a missed point already says why.
    assert "No point is missing" not in grade(scorer, question, question.reference_answer).feedback
    first = REQUIRES_GRAD_CONCISE.split(". ")[0] + "."
    short = grade(scorer, question, first)
    assert short.score < 4.0 and any(p.verdict is Verdict.MISSED for p in short.points)
    assert "No point is missing" not in short.feedback


def test_the_score_note_is_the_offline_scorers_alone():
    """The LLM judge's score is its points' credits, so it passes no content share, and its feedback has no note;
    a wrong claim or a missed point is reason enough on its own."""
    from evaluators.base import DetectedMisconception, PointVerdict
    from evaluators.feedback import compose_feedback, score_note_in

    covered = [PointVerdict(point_id="a", description="A.", weight=1, verdict=Verdict.COVERED, credit=1.0,
                            evidence="a")]
    missed = [*covered, PointVerdict(point_id="b", description="B.", weight=1, verdict=Verdict.MISSED, credit=0.0)]
    wrong = [DetectedMisconception(claim="c", correction="d", quote="e")]
    assert score_note_in(compose_feedback(covered, [], None, score=3.0, content_share=0.25)) is not None
    assert score_note_in(compose_feedback(covered, [], None, score=3.0)) is None  # the judge's call
    assert score_note_in(compose_feedback(covered, [], None, score=4.0, content_share=0.25)) is None
    assert score_note_in(compose_feedback(missed, [], None, score=3.0, content_share=0.25)) is None
    assert score_note_in(compose_feedback(covered, wrong, None, score=3.0, content_share=0.25)) is None


def test_a_partly_stated_point_is_not_told_no_point_is_missing():
    """The reviewer's ad-hoc grade (stop 56): reference "Paris", answer "Lyon" is one point partly there at 2.2, and
    its feedback went on "No point is missing, but...", as if the answer were complete. The note is for answers
    whose every point is covered; the "Partly there" line says where the credit went."""
    from evaluators.base import PointVerdict
    from evaluators.feedback import compose_feedback, score_note_in

    partial = [PointVerdict(point_id="claim-1", description="Expected answer: Paris", weight=1,
                            verdict=Verdict.PARTIAL, credit=0.4, evidence="Lyon")]
    feedback = compose_feedback(partial, [], None, score=2.2, content_share=0.0)
    assert feedback == 'Partly there: Expected answer: Paris (you said: "Lyon")'
    assert score_note_in(feedback) is None
