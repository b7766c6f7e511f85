"""Load and validate the YAML question bank, failing with file, entry id and field in one line."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from knowledge.errors import BankError
from knowledge.schema import Question

BANK_DIR = Path(__file__).parent / "bank"
# libyaml's parser when PyYAML was built with it (its wheels are): the bank parses in ~0.05 s against
# ~0.6 s in pure Python, to the same objects, and every CLI run and server start pays it.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _describe(error: ValidationError) -> list[str]:
    """One line per field the entry gets wrong, not only the first: a pack with a bad topic and a bad
    difficulty in one entry took a run of `bank validate` per mistake."""
    return [f"field {'.'.join(str(part) for part in e['loc']) or '(entry)'}: {e['msg']}" for e in error.errors()]


def read_file(path: Path) -> tuple[list[Question], list[str]]:
    """The valid questions of one bank file, and one line per problem (file, entry id and field)."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"{path}: cannot read file: {exc}"]
    except yaml.YAMLError as exc:
        return [], [f"{path}: invalid YAML: {_yaml_problem(exc)}"]
    if not isinstance(raw, list):
        return [], [f"{path}: expected a list of questions at the top level"]
    questions, problems = [], []
    for index, item in enumerate(raw):
        entry_id = item.get("id", f"#{index}") if isinstance(item, dict) else f"#{index}"
        try:
            questions.append(Question.model_validate(item))
        except ValidationError as exc:
            problems += [f"{path.name}: entry {entry_id}: {line}" for line in _describe(exc)]
    return questions, problems


def load_file(path: Path) -> list[Question]:
    """Parse one bank file into validated questions."""
    questions, problems = read_file(path)
    _raise_first(problems)
    return questions


def bank_problems(directory: Path = BANK_DIR) -> tuple[list[Question], list[str]]:
    """Every valid question in the bank, and every problem found in it, one line each: entries that do not
    validate, duplicate ids and `related` links to no entry."""
    # Both spellings of the extension: a pack's `extra.yml` beside `main.yaml` was skipped without a word.
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        return [], [f"{directory}: no bank files (*.yaml or *.yml) found"]
    questions: list[Question] = []
    problems: list[str] = []
    origin: dict[str, str] = {}
    for path in files:
        read, found = read_file(path)
        problems += found
        for question in read:
            if question.id in origin:
                problems.append(f"{path.name}: entry {question.id}: field id: duplicate of an entry in "
                                f"{origin[question.id]}")
                continue
            origin[question.id] = path.name
            questions.append(question)
    problems += [f"{origin[q.id]}: entry {q.id}: field related: unknown id {other!r}"
                 for q in questions for other in q.related if other not in origin]
    return questions, problems


def load_bank(directory: Path = BANK_DIR) -> list[Question]:
    """Every question in the bank, checked for unique ids and resolvable `related` links."""
    questions, problems = bank_problems(directory)
    _raise_first(problems)
    return questions


def _raise_first(problems: list[str]) -> None:
    """One line for the CLI's and the API's errors: the first problem, and how many more there are."""
    if problems:
        more = f" (and {len(problems) - 1} more: `interviewer bank validate` lists them)" if len(problems) > 1 else ""
        raise BankError(problems[0] + more)


@lru_cache(maxsize=4)
def cached_bank(directory: Path = BANK_DIR) -> tuple[Question, ...]:
    """The bank, parsed once per process (it only changes on deploy)."""
    return tuple(load_bank(directory))


def bank_index(directory: Path = BANK_DIR) -> dict[str, Question]:
    return {q.id: q for q in cached_bank(directory)}


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error in one line with where it is: its first line alone ("while parsing a flow sequence") named
    neither the line nor what was expected, which in a pack of hundreds of lines left the mistake to be hunted."""
    def at(mark: Any) -> str:
        return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""

    problem, context = getattr(exc, "problem", None), getattr(exc, "context", None)
    if not problem:
        return str(exc).splitlines()[0]
    said = f"{at(getattr(exc, 'problem_mark', None))}: {problem}".lstrip(": ")
    started = at(getattr(exc, "context_mark", None))
    return said + (f" ({context}{' at ' + started if started else ''})" if context else "")
