"""How the candidate met a prompt, as stored turns are read back: an "I don't know" typed as the answer is the
button's "I don't know"."""

from __future__ import annotations

from typing import Any

from evaluators.text import is_non_answer


def reply_action(turn: Any) -> str | None:
    """The turn's action, with an answer that was only an explicit non-answer ("I don't know", "no idea, sorry"; no
    code) read as "dont_know". Since 07b656b the engine stores those so; sessions stored before kept them as answers,
    which the report called "Your answer" and counted as answered though the answer scored 0 as a non-answer."""
    if turn.action != "answer" or (turn.answer_code or "").strip():
        return str(turn.action) if turn.action is not None else None
    return "dont_know" if is_non_answer(turn.answer_text or "") else "answer"
