"""Building a Report from what a session stored: its record, its turns and the question bank."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean

from app.reports.model import (
    CoveredPoint,
    FailedCheck,
    GapPoint,
    MissedPoint,
    QuestionEntry,
    Report,
    Strength,
    StudyItem,
    StudyLink,
    StudyReason,
    TopicGaps,
    TopicScore,
)
from app.reports.questions import group_by_question, question_entry, tried_llm
from app.store.records import SessionRecord, TurnRecord
from knowledge.schema import Framework, Question

WEAK_BELOW = 3.5  # of 5: a question scored under this goes into the study plan
UNRUN_FOCUS = "the code: its hidden checks never ran"  # first in the focus of a code task answered in words
LINKS_PER_ITEM = 3  # enough to fill an evening of study without burying the first, most useful one


def build_report(
    *, session: SessionRecord, turns: Sequence[TurnRecord], bank: Mapping[str, Question]
) -> Report:
    """Everything the candidate should see after a session; every claim traces to a stored evaluation."""
    stored = session.state.get("question_scores") or {}
    runs = session.state.get("code_runs") or {}
    entries = [
        question_entry(number=n, question_id=qid, turns=group, bank=bank, stored_score=stored.get(qid),
                       reveal=session.status == "completed", code_runs=runs.get(qid, 0))
        for n, (qid, group) in enumerate(group_by_question(turns), start=1)
    ]
    answered = [e for e in entries if e.score is not None]  # a skip too: it scores 0
    topics = _topic_scores(answered)
    return Report(
        session_id=session.id,
        user_id=session.user_id,
        status=session.status,
        mode=str(session.config.get("mode", "practice")),
        created_at=session.created_at,
        updated_at=session.updated_at,
        config=dict(session.config),
        overall_score=_mean([e.score for e in answered]),
        questions_answered=sum(e.answered for e in entries),
        questions=entries,
        topics=topics,
        strengths=_strengths(answered),
        gaps=_gaps(answered, topics),
        misconceptions=[m for e in answered for m in e.misconceptions],
        study_plan=_study_plan(answered, bank, asked={e.question_id for e in entries}),
        notes=[str(n) for n in session.state.get("notes") or []],
        llm_judged=any(tried_llm(t.evaluation) for t in turns if t.evaluation),
    )


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(fmean(present), 2) if present else None


def _topic_scores(answered: list[QuestionEntry]) -> list[TopicScore]:
    """Mean final score per topic and its points not yet covered, topics in the order the session reached them."""
    by_topic: dict[str, list[QuestionEntry]] = {}
    for entry in answered:
        by_topic.setdefault(entry.topic, []).append(entry)
    return [
        TopicScore(topic=topic, score=round(fmean(e.score or 0.0 for e in entries), 2), questions=len(entries),
                   missed=sum(len(e.missed) for e in entries), partial=sum(len(e.partial) for e in entries),
                   gaps_in=[e.number for e in entries if e.missed or e.partial])
        for topic, entries in by_topic.items()
    ]


def _why_study(entry: QuestionEntry) -> StudyReason | None:
    """Why a scored question goes into the study plan, or None for a strength. A strict interviewer praises neither
    an answer that stated no point in full, whatever its score, nor a code task whose code never ran (its score
    stands on how the words read)."""
    if (entry.score or 0.0) < WEAK_BELOW:
        # Nothing left to state: what cost the points is its penalties (a low score with an empty focus said nothing).
        return "penalties" if entry.penalties and entry.all_stated and not entry.checks_not_run else "low_score"
    if entry.checks_not_run:
        return "checks_not_run"
    return None if entry.covered else "nothing_in_full"


def _strengths(answered: list[QuestionEntry]) -> list[Strength]:
    """The questions answered well, best first: the study plan's complement, each with a point stated in full (its
    quote is under the question, where the report lists it once)."""
    strong = [e for e in answered if _why_study(e) is None]
    return [
        Strength(number=e.number, question_id=e.question_id, question=e.question, topic=e.topic,
                 score=e.score or 0.0, covered=len(e.covered),
                 points=len(e.covered) + len(e.partial) + len(e.missed) + len(e.worth_saying),
                 by_run=sum(p.by_run for p in e.covered))
        for e in sorted(strong, key=lambda e: (-(e.score or 0.0), e.number))
    ]


def _gaps(answered: list[QuestionEntry], topics: list[TopicScore]) -> list[TopicGaps]:
    """Points not fully covered, grouped by topic, weakest topic first."""
    score = {t.topic: t.score for t in topics}
    grouped: dict[str, list[GapPoint]] = {}
    for entry in answered:
        points: list[MissedPoint | CoveredPoint] = [*entry.missed, *entry.partial]
        if not points:  # a topic whose every point was covered has no gaps: it is not listed with none
            continue
        grouped.setdefault(entry.topic, []).extend(
            GapPoint(question_id=entry.question_id, point_id=p.point_id, description=p.description,
                     verdict="missed" if isinstance(p, MissedPoint) else "partial")
            for p in points
        )
    ordered = sorted(grouped, key=lambda topic: score.get(topic, 0.0))
    return [TopicGaps(topic=t, score=score.get(t), points=grouped[t]) for t in ordered]


def _study_plan(answered: list[QuestionEntry], bank: Mapping[str, Question], *, asked: set[str]) -> list[StudyItem]:
    """The questions not answered well, weakest first, each with bank entries to study next (`asked`: the session's
    questions)."""
    weak = sorted((e for e in answered if _why_study(e)), key=lambda e: (e.score, e.number))
    # This session's questions are never "next": answered well, they need no study; answered weakly, they
    # are items of the plan already. Ones already recommended need not repeat.
    skip = set(asked)
    plan: list[StudyItem] = []
    for entry in weak:
        links = _links(entry, bank, exclude=skip)
        skip.update(link.id for link in links)
        reason = _why_study(entry) or "low_score"
        plan.append(StudyItem(
            number=entry.number, question_id=entry.question_id, question=entry.question, topic=entry.topic,
            score=entry.score or 0.0, next=links, reason=reason,
            # What the hidden checks found first: for a code task they are what the score stands on.
            focus=[*[UNRUN_FOCUS] * entry.checks_not_run,
                   *_checks_focus(entry.failed_checks, ""),
                   *_checks_focus(entry.first_run_fixed, " on the first run"),
                   *(f"{m.correction} (wrong claim: {m.claim})" for m in entry.misconceptions),
                   *(p.description for p in entry.missed), *(p.description for p in entry.partial),
                   *(entry.penalties if reason == "penalties" else [])],
        ))
    return plan


def _checks_focus(failed: list[FailedCheck], when: str) -> list[str]:
    """One item per failure, naming every check that failed with it: the starter's NotImplementedError, which
    stops every check alike, is said once, not once per check."""
    named: dict[str, list[str]] = {}
    for check in failed:
        named.setdefault(check.message or check.name, []).append(check.name)
    return [f"{why} (failed check{'s' * (len(names) > 1)} {', '.join(names)}{when})" for why, names in named.items()]


def _links(entry: QuestionEntry, bank: Mapping[str, Question], *, exclude: set[str]) -> list[StudyLink]:
    """The bank's curated `related` entries (its current advice); same-topic questions only when those run
    out. Only entries of the question's own framework or of none: a PyTorch candidate is not sent to study
    TensorFlow."""
    question = bank.get(entry.question_id)
    frameworks = {Framework.GENERAL, question.framework} if question else set(Framework)
    exclude = exclude | {q.id for q in bank.values() if q.framework not in frameworks}
    ids = [r for r in (question.related if question else []) if r in bank and r not in exclude]
    if not ids:
        same_topic = sorted(
            (q for q in bank.values() if q.topic == entry.topic and q.id not in exclude),
            key=lambda q: (abs(q.difficulty - entry.difficulty), q.id),
        )
        ids = [q.id for q in same_topic]
    return [
        StudyLink(id=i, question=bank[i].question, topic=str(bank[i].topic))
        for i in ids[:LINKS_PER_ITEM]
    ]
