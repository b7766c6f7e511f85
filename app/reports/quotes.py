"""The candidate's answers to one question as the report checks its quotes against them.

The evaluators already verify their quotes; the report checks again (with the judge's own rule,
evaluators/quotes.py) because it is the last place a wrong "you said ..." could reach the candidate,
and stored evaluations outlive evaluator versions.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.store.records import TurnRecord


def answer_texts(turns: Iterable[TurnRecord]) -> list[str]:
    """Everything the candidate submitted on these turns, prose and code, as the evaluator read it."""
    texts: list[str] = []
    for turn in turns:
        text, code = turn.answer_text or "", turn.answer_code or ""
        texts.extend(t for t in (text, code) if t.strip())
        if text.strip() and code.strip():
            texts.append(f"{text}\n```python\n{code}\n```")  # the scorer's own concatenation
    return texts
