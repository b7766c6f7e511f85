"""A grader's own standard: one logit shift per question, learned from their graded examples."""

from __future__ import annotations

import pytest

from app.graded_examples import ExampleError
from app.grading import BulkGrader
from evaluators.base import Evaluation, Evaluator, GradingTask
from evaluators.standard import apply_shift, learn_shift


def test_no_examples_no_shift():
    assert learn_shift([], []) == 0.0
    assert apply_shift(2.7, 0.0) == 2.7


def test_lenient_examples_raise_scores_and_strict_ones_lower_them():
    lenient = learn_shift([2.0, 2.5, 3.0], [0.9, 1.0, 1.0])
    strict = learn_shift([2.0, 2.5, 3.0], [0.0, 0.1, 0.2])
    assert lenient > 0 > strict
    assert apply_shift(2.5, lenient) > 2.5 > apply_shift(2.5, strict)


def test_more_examples_of_one_standard_move_it_further():
    """The prior holds a few examples back; agreeing examples add up."""
    few = learn_shift([2.5] * 2, [1.0] * 2)
    many = learn_shift([2.5] * 20, [1.0] * 20)
    assert 0 < few < many


def test_examples_that_agree_with_the_scorer_leave_it_alone():
    assert abs(learn_shift([1.0, 2.5, 4.0], [0.2, 0.5, 0.8])) < 0.05


class ByLength(Evaluator):
    """Scores an answer by its length, so tests see the standard and not the scorer."""

    name = "by-length"

    def evaluate_many(self, tasks: list[GradingTask]) -> list[Evaluation]:
        return [Evaluation(question_id=t.question_id, score=min(5.0, len(t.answer) / 10), points=[], misconceptions=[],
                           feedback="", model_answer=t.reference_answer, evaluator=self.name,
                           gate="empty" if not t.answer.strip() else None)
                for t in tasks]


def graded(grader: BulkGrader, records: list[dict]) -> list[dict]:
    import json

    return list(grader.grade_stream(iter(json.dumps(r).encode() for r in records)))


def test_a_question_with_examples_is_graded_at_their_standard_and_others_are_not():
    grader = BulkGrader(evaluator=ByLength(), bank={}, store=None)
    mine = {"question": "Why zero the gradients?", "reference_answer": "They accumulate."}
    other = {"question": "What is a tensor?", "reference_answer": "An n-dimensional array."}
    examples = [{**mine, "answer": "a" * 20, "grade": 5}, {**mine, "answer": "b" * 25, "grade": 4.5},
                {**mine, "answer": "", "grade": 0}]  # a non-answer: scores 0 whatever the standard
    assert grader.learn_standards(examples) == 1
    out = graded(grader, [{**mine, "answer": "c" * 22}, {**other, "answer": "c" * 22},
                          {"question": " why ZERO the gradients? ", "reference_answer": "x", "answer": "c" * 22},
                          {**mine, "answer": ""}])
    assert out[0]["score_without_examples"] == out[1]["score"] == 2.2
    assert out[0]["score"] > 2.2 and out[0]["examples_used"] == 2
    assert "examples_used" not in out[1]
    assert out[2]["score"] == out[0]["score"]  # the same question, typed differently
    assert out[3]["score"] == 0.0 and "examples_used" not in out[3]


@pytest.mark.parametrize(
    ("example", "message"),
    [
        ({"grade": 7}, "example 2: field 'grade' must be a number from 0 to 5"),
        ({"grade": 3, "grade_max": 2}, "from 0 to 2 (grade_max)"),
        ({"grade": True}, "field 'grade' must be a number"),
        ({"grade": None, "score": 4}, "example 2: missing field 'grade'"),  # named otherwise ("score")
        ({"grade": 1, "grade_max": 0}, "'grade_max' must be a number above 0"),
        ({"grade": 1, "reference_answer": 3}, "example 2: field 'reference_answer' must be"),
    ],
)
def test_a_bad_example_stops_learning_and_says_which(example, message):
    grader = BulkGrader(evaluator=ByLength(), bank={}, store=None)
    good = {"question": "q", "reference_answer": "r", "answer": "a", "grade": 1}
    with pytest.raises(ExampleError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        grader.learn_standards([good, {**good, **example}])
    assert caught.value.index == 1


def test_an_example_whose_question_only_failed_to_grade_says_so_not_did_you_mean():
    """The only answer to an example's question failed (too long): the example's note read "no graded answer has
    question_id 'model-eval' (did you mean 'model-eval-2'?)", a typo hint for an id that was right (review s50)."""
    grader = BulkGrader(evaluator=ByLength(), bank={}, store=None, max_answer_chars=50)
    own = {"question": "What does model.eval() change?", "reference_answer": "Dropout off, running batch-norm stats."}
    grader.learn_standards([{**own, "question_id": "model-eval", "answer": "Dropout is off.", "grade": 4}])
    out = graded(grader, [{**own, "question_id": "model-eval", "answer": "x" * 51},
                          {**own, "question": "Why zero_grad?", "question_id": "model-eval-2", "answer": "To reset."}])
    assert "error" in out[0] and "score" in out[1]
    assert grader.unused_examples() == {0: "no answer to its question could be graded (line 1: answer is 51 "
                                           "characters; the limit is 50), so it set no standard; fix that answer "
                                           "and send it again"}
