"""Bulk grading of JSONL answer files: resolve each line's question, score in batches, never stop early."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, TypeGuard

from app.text_input import not_text
from evaluators.adhoc import adhoc_task
from evaluators.base import Evaluation, Evaluator, GradingTask
from evaluators.standard import apply_shift, learn_shift
from knowledge.schema import Question

if TYPE_CHECKING:  # importing Chroma and LangChain costs ~0.7 s; grade runs that never search skip it
    from knowledge.vectorstore import QuestionStore

MAX_ANSWER_CHARS = 20_000
# Lines scored per embedding call. Measured on the 660 calibration answers (`interviewer grade`, warm):
# 64 -> 7.0 s, 256 -> 6.5-6.7 s; the progress bar then moves every ~2.5 s.
BATCH = 256
# A free question text is taken to be its best bank match only when the match's confidence (the top
# hit's fused search score) reaches this. Chosen by bench/bench_search.py: the lowest threshold (on a
# 0.02 grid) that accepts none of 30 questions the bank does not have (their best scores: p95 0.50,
# max 0.54), keeping 93 of the 118 paraphrases whose first hit is right. A refused line costs the user
# a question_id; a wrong match grades against the wrong rubric without saying so.
MATCH_THRESHOLD = 0.56
# Acceptable reference answers one line may bring: each is scored, so a line costs as many.
MAX_REFERENCES = 10


class LineError(ValueError):
    """This line cannot be graded; the message goes into the line's `error` field."""


class ExampleError(LineError):
    """A graded example that cannot be used (`index` counts from 0): nothing is graded without it."""

    def __init__(self, index: int, why: str) -> None:
        super().__init__(f"example {index + 1}: {why}")
        self.index, self.why = index, why


def question_id_text(value: Any) -> Any:
    """An integer id (an LMS's item 17) is read as its digits; another kind of value is no id and is refused by
    name (the API and `interviewer grade` alike: 7.0 was read as '7.0' and true as 'True')."""
    if isinstance(value, bool) or not isinstance(value, int | str | None):
        kinds = {bool: "true or false", float: "a number with a decimal point", list: "an array"}
        kind = kinds.get(type(value), "an object")
        raise ValueError(f"must be a string or an integer (an id such as 17 is read as '17'), not {kind}")
    return str(value) if isinstance(value, int) else value


@dataclass
class GradeLine:
    record: dict[str, Any]
    # One task per acceptable reference answer the line brings (one for a bank entry); none if it has an error.
    tasks: list[GradingTask] = field(default_factory=list)
    matched_id: str | None = None
    match_confidence: float | None = None  # how sure the bank match is, 0-1 (None: no match was needed)
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # about how it was graded, beside the evaluation's own

    @property
    def question_key(self) -> str | None:
        """Which question the line answers, to pair it with graded examples: its question_id, else its
        question text (case and spacing aside). A bank question found by its text is keyed by its bank id, so
        it pairs with lines that give that id (they were graded apart, the example said to be of no answer)."""
        if self.matched_id is not None:
            return f"id:{self.matched_id}"
        if (label := _label(self.record)) is not None:
            return f"id:{label}"
        asked = _asked(self.record)
        return None if asked is None else f"text:{asked}"


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


def best_evaluations(evaluator: Evaluator, lines: list[GradeLine]) -> list[Evaluation | None]:
    """Per line, its evaluation (None for a line with an error), all lines' answers scored in one batch.
    A line with several acceptable reference answers gets the reading that credits it most: measured on
    Beetle's unseen questions (4.8 references each; bench/bench_real.py prints it), Pearson with the 2-way
    grade is 0.485 so, 0.284 against the first reference alone and 0.369 against all of them joined. A
    soft maximum over the references was measured and not kept (bench/SCORER_FINDINGS.md)."""
    evaluations = iter(evaluator.evaluate_many([task for line in lines for task in line.tasks]))
    read = [[next(evaluations) for _ in line.tasks] for line in lines]
    return [max(found, key=lambda e: e.score) if found else None for found in read]  # ties: the first reference


CODE_NOT_RUN = ("a code task: its hidden checks were not run here, and the answer was read as words only; run code "
                "with POST /v1/code/check or `interviewer check`, or answer it in a session")


def evaluation_fields(evaluation: Evaluation, line: GradeLine) -> dict[str, Any]:
    """The output contract's fields for one graded answer."""
    return {
        "score": evaluation.score,
        "points": [p.model_dump(mode="json") for p in evaluation.points],
        "misconceptions": [m.model_dump(mode="json") for m in evaluation.misconceptions],
        "feedback": evaluation.feedback,
        "evaluator": evaluation.evaluator,
        "gate": evaluation.gate,  # "empty" or "non-answer": scored 0 without being read
        "notes": [*evaluation.notes, *line.notes],  # e.g. why an LLM judge's reply was not used
    }


class BulkGrader:
    def __init__(
        self, *, evaluator: Evaluator, bank: dict[str, Question], store: QuestionStore | None,
        open_store: Callable[[], QuestionStore | None] | None = None, max_answer_chars: int = MAX_ANSWER_CHARS,
    ) -> None:
        self._evaluator = evaluator
        self._max_answer_chars = max_answer_chars
        self._bank = bank
        self._store = store
        # Opening Chroma costs ~1 s; a file whose lines all name a question_id or bring a reference
        # answer never needs it, so the CLI opens it at the first line that does.
        self._open_store = open_store
        self._standards: dict[str | None, Standard] = {}
        self._examples: list[GradedExample] = []
        # The questions of the answers graded so far, key -> (question_id, question text): an example of
        # none of them set no standard, and the caller is told why (an id's typo, an id left off).
        self._graded: dict[str | None, tuple[str | None, str | None]] = {}

    def learn_standards(self, records: Iterable[Any]) -> int:
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
                lines.append(self.resolve(record))
                if lines[-1].error:
                    raise LineError(lines[-1].error)
            except LineError as exc:
                raise ExampleError(index, str(exc)) from None
        found: dict[str | None, tuple[list[float], list[float]]] = {}
        for start in range(0, len(lines), BATCH):
            chunk = lines[start : start + BATCH]
            evaluations = best_evaluations(self._evaluator, chunk)
            for line, share, evaluation in zip(chunk, shares[start : start + BATCH], evaluations, strict=True):
                gate = evaluation.gate if evaluation is not None else None
                self._examples.append(GradedExample(line.question_key, _label(line.record), _asked(line.record), gate))
                if evaluation is not None and gate is None:
                    scores, grades = found.setdefault(line.question_key, ([], []))
                    scores.append(evaluation.score)
                    grades.append(share)
        self._standards = {key: Standard(learn_shift(s, g), len(s)) for key, (s, g) in found.items()}
        return len(self._standards)

    def standard_fields(self, line: GradeLine, evaluation: Evaluation) -> dict[str, Any]:
        """Where the grader gave examples of this line's question: the score at their standard, beside
        the score without it."""
        self._graded.setdefault(line.question_key, (_label(line.record), _asked(line.record)))
        standard = self._standards.get(line.question_key)
        if standard is None or evaluation.gate is not None:
            return {}
        return {"score": apply_shift(evaluation.score, standard.shift), "score_without_examples": evaluation.score,
                "examples_used": standard.examples}

    def unused_examples(self) -> dict[int, str]:
        """Per graded example that set the standard of no answer graded so far (by index from 0): why. The
        caller asks once every answer is graded; an example silently left out would leave them believing
        their standard was applied."""
        unused = {}
        for index, example in enumerate(self._examples):
            if example.gate is not None:
                what = "the answer is empty" if example.gate == "empty" else "the answer is a non-answer"
                unused[index] = f"{what}, which scores 0 at any standard, so it teaches none"
            elif example.question_key not in self._graded:
                unused[index] = self._unpaired(example)
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

    def resolve(self, record: dict[str, Any]) -> GradeLine:
        line = GradeLine(record=record)
        try:
            line.tasks = self._tasks_for(record, line)
        except LineError as exc:
            line.error = str(exc)
        return line

    def _tasks_for(self, record: dict[str, Any], line: GradeLine) -> list[GradingTask]:
        try:
            question_id_text(record.get("question_id"))
        except ValueError as exc:
            raise LineError(f"field 'question_id' {exc}") from None
        for name in ("answer", "question", "reference_answer"):
            value = record.get(name)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and (why := not_text(text)):
                    raise LineError(f"field '{name}' {why}")
        answer, question = record.get("answer"), record.get("question")
        if not isinstance(answer, str):
            raise LineError(_not_a_string("answer", answer))
        if len(answer) > self._max_answer_chars:
            raise LineError(f"answer is {len(answer)} characters; the limit is {self._max_answer_chars}")
        own_reference = record.get("reference_answer") is not None
        if record.get("question_id") is not None and not own_reference:
            entry = self._bank.get(str(record["question_id"]))
            if entry is None:
                raise LineError(f"unknown question_id {record['question_id']!r}")
            line.notes += [CODE_NOT_RUN] if entry.code else []
            return [GradingTask.from_question(entry, answer)]
        # With a reference answer of the caller's own, a question_id is the caller's label for the
        # question (an LMS item id): it pairs the line with graded examples and is not looked up.
        if not isinstance(question, str):
            raise LineError(_not_a_string("question", question))
        if not question.strip():
            raise LineError("field 'question' is empty: give the question's text")
        if own_reference:
            return self._adhoc(question, record["reference_answer"], answer)
        return [self._match(question, answer, line)]

    def _adhoc(self, question: str, references: Any, answer: str) -> list[GradingTask]:
        """One task per acceptable reference answer: a string, or a list of them."""
        if isinstance(references, str):
            references = [references]
        if not (isinstance(references, list) and 0 < len(references) <= MAX_REFERENCES
                and all(isinstance(r, str) for r in references)):
            raise LineError(f"field 'reference_answer' must be a string or a list of 1-{MAX_REFERENCES} strings")
        tasks = []
        for i, reference in enumerate(references):
            try:
                tasks.append(adhoc_task(question=question, reference_answer=reference, answer=answer))
            except ValueError as exc:  # in a list, say which alternative is empty
                where = f"reference_answer[{i}]" if len(references) > 1 else "reference_answer"
                raise LineError(str(exc).replace("reference_answer", where, 1)) from exc
        return tasks

    def _match(self, question: str, answer: str, line: GradeLine) -> GradingTask:
        if self._store is None and self._open_store is not None:
            self._store, self._open_store = self._open_store(), None
        if self._store is None:
            raise LineError("no question_id or reference_answer, and no bank search is available")
        hits = [hit for hit in self._store.search(question, k=3) if hit.id in self._bank]
        if not hits:
            raise LineError("question matches no bank entry; add question_id or reference_answer")
        best = hits[0]
        confidence = round(min(max(best.score, 0.0), 1.0), 3)
        if confidence < MATCH_THRESHOLD:
            raise LineError(
                f"question matches no bank entry closely enough (closest: {best.id!r}, confidence {confidence:.2f}, "
                f"below {MATCH_THRESHOLD}); add question_id or reference_answer"
            )
        line.matched_id, line.match_confidence = best.id, confidence
        line.notes += [CODE_NOT_RUN] if self._bank[best.id].code else []
        return GradingTask.from_question(self._bank[best.id], answer)

    def grade_stream(
        self, lines: Iterator[bytes], on_line: Callable[[bool], None] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Graded records in input order; bad lines carry `error` and the run goes on. `on_line` hears of
        each line, and whether it failed (a caller's own `error` field, even null, does not say so)."""
        pending: list[GradeLine] = []
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():  # kept as a line of its own, so output line N is input line N
                yield from self._flush(pending, on_line)
                pending = []
                yield {"line": number, "skipped": "blank line"}
                continue
            line = self._parse(raw)
            if not line.record:
                line.record = {"line": number}  # unparseable: say which line it was
            pending.append(line)
            if len(pending) >= BATCH:
                yield from self._flush(pending, on_line)
                pending = []
        yield from self._flush(pending, on_line)

    def _parse(self, raw: bytes) -> GradeLine:
        try:
            record = load_json_line(raw)
        except LineError as exc:
            return GradeLine(record={}, error=str(exc))
        if not isinstance(record, dict):
            return GradeLine(record={}, error="each line must be a JSON object")
        return self.resolve(record)

    def _flush(
        self, pending: list[GradeLine], on_line: Callable[[bool], None] | None
    ) -> Iterator[dict[str, Any]]:
        for line, evaluation in zip(pending, best_evaluations(self._evaluator, pending), strict=True):
            if evaluation is not None:
                ours = {**evaluation_fields(evaluation, line), **self.standard_fields(line, evaluation)}
                if line.matched_id:
                    ours.update(matched_id=line.matched_id, match_confidence=line.match_confidence)
            else:
                ours = {"error": line.error}
            # A field of the caller's that ours would overwrite (their own `score`, say) is kept under `given`,
            # and so is their own `given` then.
            given = {k: v for k, v in line.record.items() if k in ours or k == "given"}
            if set(given) == {"given"}:
                given = {}
            if on_line:
                on_line(evaluation is None)
            yield {**line.record, **ours, **({"given": given} if given else {})}


def _label(record: dict[str, Any]) -> str | None:
    return None if record.get("question_id") is None else str(record["question_id"])


def _asked(record: dict[str, Any]) -> str | None:
    """A line's question text, case and spacing aside (how lines without a question_id pair)."""
    question = record.get("question")
    return " ".join(question.lower().split()) if isinstance(question, str) else None


def load_json_line(raw: bytes) -> Any:
    """One JSONL line's value, or a LineError saying what is wrong with it. A byte-order mark (Windows tools
    write one) is dropped. NaN, Infinity and numbers past a float (1e999) are not JSON and would be written
    back as they came; an integer of thousands of digits, or arrays nested past the stack, are refused."""
    try:
        return json.loads(raw.decode("utf-8-sig"), parse_constant=_not_json, parse_float=_finite)
    except UnicodeDecodeError:
        raise LineError("line is not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise LineError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise LineError("invalid JSON: nested too deeply") from None
    except LineError:
        raise
    except ValueError as exc:  # Python's limit on an integer's digits
        raise LineError(f"invalid JSON: {exc}") from None


def _not_json(constant: str) -> Any:
    raise LineError(f"invalid JSON: {constant} is not a JSON value (write null, or the number as a string)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise LineError(f"invalid JSON: {text} is past the largest number (write it as a string)")
    return value


def _not_a_string(field: str, value: Any) -> str:
    return f"missing field '{field}' (a string)" if value is None else \
        f"field '{field}' must be a string, not {type(value).__name__}"


def count_lines(stream: BinaryIO) -> int:
    total = sum(1 for raw in stream if raw.strip())
    stream.seek(0)
    return total
