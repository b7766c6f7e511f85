"""Feedback text from verdicts: what was right, what was missing, what was wrong. No praise without a quote."""

from __future__ import annotations

from collections.abc import Iterable

from evaluators.base import DetectedMisconception, PointVerdict, Verdict

GATE_MESSAGES = {
    "empty": "No answer was given, so nothing could be credited.",
    "non-answer": "The answer does not attempt the question (for example 'I don't know'), so it scores 0. "
    "Try stating what you do know, even partially.",
}
# The heading of the points a code answer's full code score made unneeded for it (PointVerdict.beyond_score).
BEYOND_SCORE = "Not needed for the score, worth saying in an interview"
# A score under this, on an answer with every point covered and no wrong claim, is lower than its verdicts explain: the
# bank's 138 model answers, each graded as an answer to its question, all score at least this (lowest 4.7, mean 4.79).
# It only decides whether the feedback says why (score_note); the score does not read it.
FULL_ANSWER_SCORE = 4.0
SCORE_NOTE_START = "No point is missing, but the score also weighs"


def compose_feedback(
    verdicts: list[PointVerdict], wrong: list[DetectedMisconception], gate: str | None, *,
    score: float | None = None, content_share: float | None = None,
) -> str:
    """`score` and `content_share` (the share of the model answer's words the answer uses, signals.stem_recall) come
    from the offline scorer alone, whose score reads more than the verdicts: see score_note."""
    if gate:
        return f"{GATE_MESSAGES[gate]} A complete answer covers: {listed(p.description for p in verdicts)}"
    parts = []
    covered = [p for p in verdicts if p.verdict is Verdict.COVERED]
    partial = [p for p in verdicts if p.verdict is Verdict.PARTIAL]
    missed = [p for p in verdicts if p.verdict is Verdict.MISSED and not p.beyond_score]
    unneeded = [p for p in verdicts if p.verdict is Verdict.MISSED and p.beyond_score]
    if covered:
        parts.append("Right: " + "; ".join(_said(p) for p in covered))
    if partial:
        # With the sentence that earned it: a partial credit can be tiny, and the sentence lets the candidate
        # judge how near it came (the graders found most such points stated: bench/bench_scorer.py).
        parts.append("Partly there: " + "; ".join(_said(p) for p in partial))
    if missed:
        parts.append("Missing: " + listed(f"{_bare(p.description)} ({p.evidence}{_in_words(p)})" if p.checks
                                           else p.description for p in missed))
    if unneeded:
        parts.append(f"{BEYOND_SCORE}: " + listed(p.description for p in unneeded))
    if wrong:
        parts.append("Wrong: " + "; ".join(f'{"your code has: " if m.from_code else ""}"{m.quote}" - {m.correction}'
                                           for m in wrong))
    note = score_note(verdicts, wrong, score, content_share)
    if note:
        parts.append(note)
    return "\n".join(parts)


def score_note(verdicts: list[PointVerdict], wrong: list[DetectedMisconception], score: float | None,
               content_share: float | None) -> str | None:
    """Why an answer covering every point and stating nothing wrong scored under FULL_ANSWER_SCORE, in the candidate's
    terms. The score is fitted on teachers' grades of whole answers (evaluators/signals.py): beside the points'
    closeness it reads how much of the whole model answer the answer matches, word by word and by the share of the
    model answer's words it uses, and a concise answer stating every point lacks the rest. requires_grad's five
    points all covered scored 3.8 with 33% of the model answer's words, where the model answer itself reads
    4.8 (tests/test_rubric_scorer.py). The LLM judge's score is its points' credits, so it passes neither; a code
    answer's feedback, composed again after its run, has a score the run gives, and no note either. A point only
    partly stated gets none: its "Partly there" line already says where credit went, and "no point is missing" would
    read as praise for a wrong answer (reference "Paris", answer "Lyon" is one partial point)."""
    if score is None or content_share is None or score >= FULL_ANSWER_SCORE or wrong:
        return None
    if any(p.verdict is not Verdict.COVERED and not p.beyond_score for p in verdicts):
        return None
    return (f"{SCORE_NOTE_START} how much of the full model answer's content you give "
            f"(you used {content_share:.0%} of its content words), so see the model answer for what more it says.")


def score_note_in(feedback: str) -> str | None:
    """The score_note line of a stored feedback (a report lists it among the question's scoring notes)."""
    return next((line for line in feedback.splitlines() if line.startswith(SCORE_NOTE_START)), None)


def _said(point: PointVerdict) -> str:
    """A point and what earned it: the hidden checks that verify it (its evidence says so), the candidate's
    sentence, or nothing (an LLM judge's partial point may have none)."""
    if point.checks:
        return f"{_bare(point.description)} ({point.evidence})"
    if not point.evidence:
        return _bare(point.description)
    return f'{_bare(point.description)} ({"your code has" if point.from_code else "you said"}: "{point.evidence}")'


def _in_words(point: PointVerdict) -> str:
    """A point a failed check missed that the words state: said, so the candidate knows the words were read."""
    return f'; said in words, not yet shown by your code: "{point.words}"' if point.words else ""


def _bare(sentence: str) -> str:
    return sentence.rstrip(". ")


def listed(sentences: Iterable[str]) -> str:
    """Sentences as one run-on list: "A; B." (each sentence's own full stop made "A.; B."); the reports' too."""
    return "; ".join(_bare(s) for s in sentences) + "."
