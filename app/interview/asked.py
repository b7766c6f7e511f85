"""The question a session asked, as it asked it: answers are judged against that, whatever the pack says now.

A question's turn stores the whole bank entry as asked (`turns.bank_entry`). A pack edited, replaced or
reloaded while a session is open would otherwise have the session's next answer judged against a rubric the
candidate was never asked, while the report lists the stored one.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from knowledge.schema import PACK_CONTEXT, Question, RubricPoint


def as_asked(entry: dict[str, Any] | None, in_bank: Question | None) -> Question | None:
    """The question from its stored copy; for a turn stored before whole entries were kept (text, reference and
    rubric only), the bank's entry with those parts as asked. None when neither can be had."""
    if not entry:
        return in_bank
    try:
        # The copy may come from a pack, whose entries cite the pack's own documents as sources.
        return Question.model_validate(entry, context={PACK_CONTEXT: True})
    except ValidationError:
        if in_bank is None or not {"question", "reference_answer", "rubric"} <= entry.keys():
            return in_bank
    return _older_copy(entry, in_bank)


def _older_copy(entry: dict[str, Any], in_bank: Question) -> Question:
    # An older copy kept no phrasings of its points: a point the bank still states the same way keeps the
    # bank's phrasings, one reworded since is matched by its stored description alone.
    now = {p.id: p for p in in_bank.rubric}
    rubric = []
    for point in entry["rubric"]:
        same = now.get(point["id"])
        if same is not None and same.description == point["description"]:
            rubric.append(same.model_copy(update={"weight": point.get("weight", same.weight)}))
        else:
            rubric.append(RubricPoint(id=point["id"], description=point["description"],
                                      weight=point.get("weight", 1.0), evidence=[point["description"]]))
    ids = {p.id for p in rubric}
    return in_bank.model_copy(update={
        "question": entry["question"], "reference_answer": entry["reference_answer"], "rubric": rubric,
        "follow_ups": [f for f in in_bank.follow_ups if f.point in ids],
    })
