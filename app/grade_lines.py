"""One line of a grade file: its JSON read safely, the question it answers, and lines scored in batches."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from evaluators.base import Evaluation, Evaluator, GradingTask

# Lines scored per embedding call. Measured on the 660 calibration answers (`interviewer grade`, warm):
# 64 -> 7.0 s, 256 -> 6.5-6.7 s; the progress bar then moves every ~2.5 s.
BATCH = 256


class LineError(ValueError):
    """This line cannot be graded; the message goes into the line's `error` field."""


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
    def label(self) -> str | None:
        """The line's question_id as text: a bank id, or the caller's own label for the question."""
        return None if self.record.get("question_id") is None else str(self.record["question_id"])

    @property
    def asked(self) -> str | None:
        """The line's question text, case and spacing aside (how lines without a question_id pair)."""
        question = self.record.get("question")
        return " ".join(question.lower().split()) if isinstance(question, str) else None

    @property
    def question_key(self) -> str | None:
        """Which question the line answers, to pair it with graded examples: its question_id, else its
        question text (case and spacing aside). A bank question found by its text is keyed by its bank id, so
        it pairs with lines that give that id (they were graded apart, the example said to be of no answer)."""
        if self.matched_id is not None:
            return f"id:{self.matched_id}"
        if (label := self.label) is not None:
            return f"id:{label}"
        asked = self.asked
        return None if asked is None else f"text:{asked}"


def best_evaluations(evaluator: Evaluator, lines: list[GradeLine]) -> list[Evaluation | None]:
    """Per line, its evaluation (None for a line with an error), all lines' answers scored in one batch.
    A line with several acceptable reference answers gets the reading that credits it most: measured on
    Beetle's unseen questions (4.8 references each; bench/bench_real.py prints it), Pearson with the 2-way
    grade is 0.485 so, 0.284 against the first reference alone and 0.369 against all of them joined. A
    soft maximum over the references was measured and not kept (bench/SCORER_FINDINGS.md)."""
    evaluations = iter(evaluator.evaluate_many([task for line in lines for task in line.tasks]))
    read = [[next(evaluations) for _ in line.tasks] for line in lines]
    return [max(found, key=lambda e: e.score) if found else None for found in read]  # ties: the first reference


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


def count_lines(stream: BinaryIO) -> int:
    total = sum(1 for raw in stream if raw.strip())
    stream.seek(0)
    return total
