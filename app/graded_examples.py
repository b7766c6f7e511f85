"""A grader's own graded examples: each question's standard learned from them, and why an example set none."""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard

from app.grade_lines import BATCH, GradeLine, LineError, best_evaluations
from evaluators.base import Evaluation, Evaluator
from evaluators.standard import apply_shift, learn_shift


class ExampleError(LineError):
    """A graded example that cannot be used (`index` counts from 0): nothing is graded without it."""

    def __init__(self, index: int, why: str) -> None:
        super().__init__(f"example {index + 1}: {why}")
        self.index, self.why = index, why


@dataclass(frozen=True)
class Standard:
    """A question's grading standard, learned from the grader's own examples (evaluators/standard.py)."""

    shift: float  # logits
    examples: int


@dataclass(frozen=True)
class GradedExample:
    """What it takes to say why a graded example set no standard: which question it is of, and its gate."""

    question_key: str | None
    question_id: str | None
    asked: str | None  # the question's text, case and spacing aside
    gate: str | None  # "empty" or "non-answer": scored 0 whatever the standard, so it teaches nothing


def example_share(record: dict[str, Any]) -> float:
    """A graded example's grade as a share of full marks: `grade` out of `grade_max` (5 if not given)."""

    def number(value: Any) -> TypeGuard[int | float]:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)

    grade, top = record.get("grade"), record.get("grade_max", 5)
    if grade is None:
        raise LineError("missing field 'grade' (your grade of this answer, 0 to grade_max)")
    if not number(top) or top <= 0:
        raise LineError("field 'grade_max' must be a number above 0")
    if not number(grade) or not 0 <= grade <= top:
        raise LineError(f"field 'grade' must be a number from 0 to {top:g} (grade_max)")
    return float(grade / top)


class GradedExamples:
    """The examples a grader gave, the standards they set, and the questions of the answers graded since."""

    def __init__(self) -> None:
        self._standards: dict[str | None, Standard] = {}
        self._examples: list[GradedExample] = []
        # The questions of the answers graded so far, key -> (question_id, question text): an example of
        # none of them set no standard, and the caller is told why (an id's typo, an id left off).
        self._graded: dict[str | None, tuple[str | None, str | None]] = {}
        # The questions of answers that could not be graded, key -> where and why (the first such answer): an
        # example of one of them is said to be unused for that, not as if no answer had asked its question.
        self._not_graded: dict[str | None, str] = {}

    def learn(self, records: Iterable[Any], *, resolve: Callable[[dict[str, Any]], GradeLine],
              evaluator: Evaluator) -> int:
        """Learn each question's standard from graded examples (lines as the input's, plus `grade` and
        `grade_max`); returns how many questions have one. A bad example stops it with an ExampleError: a
        wrong standard would shift every grade of its question. Non-answers teach nothing (they
        score 0 whatever the standard) and are left out."""
        lines, shares = [], []
        for index, record in enumerate(records):
            try:
                if not isinstance(record, dict):
                    raise LineError("each example must be a JSON object")
                shares.append(example_share(record))
                lines.append(resolve(record))
                if lines[-1].error:
                    raise LineError(lines[-1].error)
            except LineError as exc:
                raise ExampleError(index, str(exc)) from None
        found: dict[str | None, tuple[list[float], list[float]]] = {}
        for start in range(0, len(lines), BATCH):
            chunk = lines[start : start + BATCH]
            evaluations = best_evaluations(evaluator, chunk)
            for line, share, evaluation in zip(chunk, shares[start : start + BATCH], evaluations, strict=True):
                gate = evaluation.gate if evaluation is not None else None
                self._examples.append(GradedExample(line.question_key, line.label, line.asked, gate))
                if evaluation is not None and gate is None:
                    scores, grades = found.setdefault(line.question_key, ([], []))
                    scores.append(evaluation.score)
                    grades.append(share)
        self._standards = {key: Standard(learn_shift(s, g), len(s)) for key, (s, g) in found.items()}
        return len(self._standards)

    def standard_fields(self, line: GradeLine, evaluation: Evaluation) -> dict[str, Any]:
        """Where the grader gave examples of this line's question: the score at their standard, beside
        the score without it."""
        self._graded.setdefault(line.question_key, (line.label, line.asked))
        standard = self._standards.get(line.question_key)
        if standard is None or evaluation.gate is not None:
            return {}
        return {"score": apply_shift(evaluation.score, standard.shift), "score_without_examples": evaluation.score,
                "examples_used": standard.examples}

    def not_graded(self, line: GradeLine, where: str) -> None:
        """Note an answer that could not be graded (`where` it is in the input, `line.error` why)."""
        if line.question_key is not None:
            self._not_graded.setdefault(line.question_key, f"{where}: {line.error}")

    def unused(self) -> dict[int, str]:
        """Per graded example that set the standard of no answer graded so far (by index from 0): why. The
        caller asks once every answer is graded; an example silently left out would leave them believing
        their standard was applied."""
        unused = {}
        for index, example in enumerate(self._examples):
            if example.gate is not None:
                what = "the answer is empty" if example.gate == "empty" else "the answer is a non-answer"
                unused[index] = f"{what}, which scores 0 at any standard, so it teaches none"
            elif example.question_key not in self._graded:
                failed = self._not_graded.get(example.question_key)
                unused[index] = self._unpaired(example) if failed is None else (
                    f"no answer to its question could be graded ({failed}), so it set no standard; fix that answer "
                    "and send it again")
        return unused

    def _unpaired(self, example: GradedExample) -> str:
        """Why an example paired with no graded answer, and the likeliest fix: an answer that asks the same
        question under another question_id (or none), else a question_id that differs by a typo."""
        if example.question_id is not None:
            why = f"no graded answer has question_id {example.question_id!r}"
        else:
            why = "no graded answer asks this question without a question_id"
        same = [label for label, asked in self._graded.values() if asked is not None and asked == example.asked]
        if same and same[0] is not None:
            return why + f"; one asks the same question with question_id {same[0]!r}: give the example that id"
        if same:
            return why + "; one asks the same question without a question_id: leave the example's off"
        ids = [label for label, _ in self._graded.values() if label is not None]
        if example.question_id is not None and (close := difflib.get_close_matches(example.question_id, ids, n=1)):
            return why + f" (did you mean {close[0]!r}?)"
        return why
