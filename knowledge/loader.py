"""Load and validate the YAML question bank, failing with file, entry id and field in one line."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from knowledge.errors import BankError
from knowledge.schema import Question

BANK_DIR = Path(__file__).parent / "bank"
# libyaml's parser when PyYAML was built with it (its wheels are): the bank parses in ~0.05 s against
# ~0.6 s in pure Python, to the same objects, and every CLI run and server start pays it.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(entry)"
    return f"field {field}: {first['msg']}"


def load_file(path: Path) -> list[Question]:
    """Parse one bank file into validated questions."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (OSError, UnicodeDecodeError) as exc:
        raise BankError(f"{path}: cannot read file: {exc}") from exc
    except yaml.YAMLError as exc:
        raise BankError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(raw, list):
        raise BankError(f"{path}: expected a list of questions at the top level")
    questions = []
    for index, item in enumerate(raw):
        entry_id = item.get("id", f"#{index}") if isinstance(item, dict) else f"#{index}"
        try:
            questions.append(Question.model_validate(item))
        except ValidationError as exc:
            raise BankError(f"{path.name}: entry {entry_id}: {_describe(exc)}") from exc
    return questions


def load_bank(directory: Path = BANK_DIR) -> list[Question]:
    """Every question in the bank, checked for unique ids and resolvable `related` links."""
    # Both spellings of the extension: a pack's `extra.yml` beside `main.yaml` was skipped without a word.
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        raise BankError(f"{directory}: no bank files (*.yaml or *.yml) found")
    questions: list[Question] = []
    origin: dict[str, str] = {}
    for path in files:
        for question in load_file(path):
            if question.id in origin:
                raise BankError(
                    f"{path.name}: entry {question.id}: field id: duplicate of an entry in "
                    f"{origin[question.id]}"
                )
            origin[question.id] = path.name
            questions.append(question)
    _check_related(questions, origin)
    return questions


def _check_related(questions: Iterable[Question], origin: dict[str, str]) -> None:
    for question in questions:
        for other in question.related:
            if other not in origin:
                raise BankError(
                    f"{origin[question.id]}: entry {question.id}: field related: "
                    f"unknown id {other!r}"
                )


@lru_cache(maxsize=4)
def cached_bank(directory: Path = BANK_DIR) -> tuple[Question, ...]:
    """The bank, parsed once per process (it only changes on deploy)."""
    return tuple(load_bank(directory))


def bank_index(directory: Path = BANK_DIR) -> dict[str, Question]:
    return {q.id: q for q in cached_bank(directory)}
