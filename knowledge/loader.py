"""Load and validate the YAML question bank, failing with file, entry id and field in one line."""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from knowledge.errors import BankError
from knowledge.schema import PACK_CONTEXT, Question

log = logging.getLogger(__name__)
BANK_DIR = Path(__file__).parent / "bank"
# libyaml's parser when PyYAML was built with it (its wheels are): the bank parses in ~0.05 s against
# ~0.6 s in pure Python, to the same objects, and every CLI run and server start pays it.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _describe(error: ValidationError) -> list[str]:
    """One line per field the entry gets wrong, not only the first: a pack with a bad topic and a bad
    difficulty in one entry took a run of `bank validate` per mistake."""
    return [f"field {'.'.join(str(part) for part in e['loc']) or '(entry)'}: {e['msg']}{_read_as(e)}"
            for e in error.errors()]


# The bare words YAML 1.1 (PyYAML) reads as a boolean, in any case, and one to show quoted: `id: off` is False.
_BOOLEAN_WORDS = {True: ("yes, on and true", "on"), False: ("no, off and false", "off")}


def _read_as(error: ErrorDetails) -> str:
    """Why a text field got no text, when YAML read the word as a boolean: "Input should be a valid string" alone
    left a pack's author looking at `id: off` for the mistake."""
    if error["type"] != "string_type" or not isinstance(error.get("input"), bool):
        return ""
    words, example = _BOOLEAN_WORDS[error["input"]]
    return (f" (YAML read the bare word as the boolean {str(error['input']).lower()}, as it does {words}: put it "
            f'in quotes, e.g. "{example}")')


def _entry_name(item: object, index: int) -> str:
    """How a problem line names an entry: its id, or, for a draft whose id is not filled in yet, its position
    and its question's first words (several drafts were all "entry None")."""
    entry_id = item.get("id") if isinstance(item, dict) else None
    if isinstance(entry_id, str) and entry_id.strip():
        return entry_id
    question = item.get("question") if isinstance(item, dict) else None
    words = str(question).split() if isinstance(question, str) else []
    opening = " ".join(words[:6]) + (" ..." if len(words) > 6 else "")
    return f"#{index + 1} (no id yet" + (f': "{opening}")' if opening else ")")


def is_pack(directory: Path) -> bool:
    """Whether a bank directory is a question pack rather than the project's own bank."""
    return directory.resolve() != BANK_DIR.resolve()


def read_file(path: Path, *, pack: bool = False) -> tuple[list[Question], list[str]]:
    """The valid questions of one bank file, and one line per problem (file, entry id and field). A pack's
    entries may cite its own documents as sources; the project's bank cites its seed files only."""
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
        entry_id = _entry_name(item, index)
        try:
            questions.append(Question.model_validate(item, context={PACK_CONTEXT: pack}))
        except ValidationError as exc:
            problems += [f"{path.name}: entry {entry_id}: {line}" for line in _describe(exc)]
    return questions, problems


def load_file(path: Path) -> list[Question]:
    """Parse one bank file into validated questions."""
    questions, problems = read_file(path, pack=is_pack(path.parent))
    _raise_first(problems)
    return questions


def bank_problems(directory: Path = BANK_DIR, *, same_texts: bool = False) -> tuple[list[Question], list[str]]:
    """Every valid question in the bank, and every problem found in it, one line each: entries that do not
    validate, duplicate ids and `related` links to no entry. With `same_texts` (`bank validate`), also entries
    that ask the same question as another under a different id, in the bank and, for a pack, in the project's
    bank: an interview could ask both in one session."""
    questions, problems, origin = _read_bank(directory)
    if same_texts:
        built_in = _read_bank(BANK_DIR) if is_pack(directory) else None
        problems += same_text_problems(questions, origin, built_in=built_in and (built_in[0], built_in[2]))
    return questions, problems


def _read_bank(directory: Path) -> tuple[list[Question], list[str], dict[str, str]]:
    """The valid questions, the problems, and the file each question's id comes from."""
    # Both spellings of the extension: a pack's `extra.yml` beside `main.yaml` was skipped without a word.
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        return [], [f"{directory}: no bank files (*.yaml or *.yml) found"], {}
    questions: list[Question] = []
    problems: list[str] = []
    origin: dict[str, str] = {}
    for path in files:
        read, found = read_file(path, pack=is_pack(directory))
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
    return questions, problems, origin


def _normalised(text: str) -> str:
    """A question's words only: case, spacing and punctuation do not make another question."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def same_text_problems(
    questions: list[Question],
    origin: dict[str, str],
    *,
    built_in: tuple[list[Question], dict[str, str]] | None = None,
) -> list[str]:
    """One line per entry whose question text is another entry's, naming both ids. Exact text only (after
    normalising): a reworded duplicate is for `interviewer ingest --docs`'s similarity check to catch."""
    problems = []
    first: dict[str, str] = {}
    for question in questions:
        key = _normalised(question.question)
        if key in first:
            problems.append(f"{origin[question.id]}: entry {question.id}: field question: same text as entry "
                            f"{first[key]} in {origin[first[key]]}")
        else:
            first[key] = question.id
    if built_in is not None:
        bank, bank_origin = built_in
        ours = {_normalised(q.question): q.id for q in bank}
        for question in questions:
            other = ours.get(_normalised(question.question))
            if other is not None and other != question.id:  # the same id is the bank's entry, copied
                problems.append(f"{origin[question.id]}: entry {question.id}: field question: same text as the "
                                f"project's bank entry {other} in {bank_origin[other]}")
    return problems


def load_bank(directory: Path = BANK_DIR) -> list[Question]:
    """Every question in the bank, checked for unique ids and resolvable `related` links. One question text under
    two ids is a warning, one line, not a refusal: a pack that served before keeps serving, as its other checks
    that only `bank validate` makes (reference solutions) do not stop it either, and a session may ask both, no
    worse. Only within the bank served: a pack is served instead of the built-in bank, never beside it."""
    questions, problems, origin = _read_bank(directory)
    _raise_first(problems)
    if same := same_text_problems(questions, origin):
        log.warning("warning: %s%s; served all the same, and a session may ask both: give one of them another text",
                    same[0], _more(same))
    return questions


def _more(problems: list[str]) -> str:
    return f" (and {len(problems) - 1} more: `interviewer bank validate` lists them)" if len(problems) > 1 else ""


def _raise_first(problems: list[str]) -> None:
    """One line for the CLI's and the API's errors: the first problem, and how many more there are."""
    if problems:
        raise BankError(problems[0] + _more(problems))


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
