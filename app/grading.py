"""Bulk grading of JSONL answer files: resolve each line's question, score in batches, never stop early."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from app.grade_lines import BATCH, GradeLine, LineError, best_evaluations, load_json_line, question_id_text
from app.graded_examples import GradedExamples
from app.text_input import not_text
from evaluators.adhoc import adhoc_task
from evaluators.base import Evaluation, Evaluator, GradingTask
from knowledge.schema import Question

if TYPE_CHECKING:  # importing Chroma and LangChain costs ~0.7 s; grade runs that never search skip it
    from knowledge.vectorstore import QuestionStore

MAX_ANSWER_CHARS = 20_000
# A free question text is taken to be its best bank match only when the match's confidence (the top
# hit's fused search score) reaches this. Chosen by bench/bench_search.py: the lowest threshold (on a
# 0.02 grid) that accepts none of 30 questions the bank does not have (their best scores: p95 0.50,
# max 0.54), keeping 93 of the 118 paraphrases whose first hit is right. A refused line costs the user
# a question_id; a wrong match grades against the wrong rubric without saying so.
MATCH_THRESHOLD = 0.56
# Acceptable reference answers one line may bring: each is scored, so a line costs as many.
MAX_REFERENCES = 10


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
        self._examples = GradedExamples()

    def learn_standards(self, records: Iterable[Any]) -> int:
        """Learn each question's standard from graded examples; returns how many questions have one."""
        return self._examples.learn(records, resolve=self.resolve, evaluator=self._evaluator)

    def standard_fields(self, line: GradeLine, evaluation: Evaluation) -> dict[str, Any]:
        """The score at the grader's standard for this line's question, where their examples set one."""
        return self._examples.standard_fields(line, evaluation)

    def not_graded(self, line: GradeLine, where: str) -> None:
        """Note a line that could not be graded, so an example of its question is said to be unused for that."""
        self._examples.not_graded(line, where)

    def unused_examples(self) -> dict[int, str]:
        """Per graded example that set the standard of no answer graded so far (by index from 0): why."""
        return self._examples.unused()

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
        if question is None:
            raise LineError(_what_to_ask(record, in_bank=str(record.get("question_id")) in self._bank))
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
        pending: list[tuple[int, GradeLine]] = []
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():  # kept as a line of its own, so output line N is input line N
                yield from self._flush(pending, on_line)
                pending = []
                yield {"line": number, "skipped": "blank line"}
                continue
            line = self._parse(raw)
            if not line.record:
                line.record = {"line": number}  # unparseable: say which line it was
            pending.append((number, line))
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
        self, pending: list[tuple[int, GradeLine]], on_line: Callable[[bool], None] | None
    ) -> Iterator[dict[str, Any]]:
        lines = [line for _, line in pending]
        for (number, line), evaluation in zip(pending, best_evaluations(self._evaluator, lines), strict=True):
            if evaluation is not None:
                ours = {**evaluation_fields(evaluation, line), **self.standard_fields(line, evaluation)}
                if line.matched_id:
                    ours.update(matched_id=line.matched_id, match_confidence=line.match_confidence)
            else:
                ours = {"error": line.error}
                self.not_graded(line, f"line {number}")
            # A field of the caller's that ours would overwrite (their own `score`, say) is kept under `given`,
            # and so is their own `given` then.
            given = {k: v for k, v in line.record.items() if k in ours or k == "given"}
            if set(given) == {"given"}:
                given = {}
            if on_line:
                on_line(evaluation is None)
            yield {**line.record, **ours, **({"given": given} if given else {})}


def _what_to_ask(record: dict[str, Any], *, in_bank: bool) -> str:
    """Why a line without a question cannot be graded, and the fields that would grade it: "missing field
    'question'" alone did not say that a bank question_id would do, nor that a reference of one's own needs the
    question's text."""
    if record.get("reference_answer") is None:
        return ("missing field 'question_id' or 'question': give a bank question's id, or the question's text "
                "(with reference_answer for a question of your own)")
    return ("missing field 'question' (a string): a reference_answer of your own is graded with the question's "
            "text, and question_id is then only your label" + (
                "; leave reference_answer out to grade against the bank's question of that id"
                if in_bank else ""))


def _not_a_string(field: str, value: Any) -> str:
    return f"missing field '{field}' (a string)" if value is None else \
        f"field '{field}' must be a string, not {type(value).__name__}"
