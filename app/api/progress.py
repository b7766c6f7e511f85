"""The caller's progress: per-topic mastery across sessions, weak topics, session counts."""

from __future__ import annotations

from datetime import datetime
from statistics import fmean

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.api.deps import RepoDep, UserDep
from app.api.problems import problem_responses
from app.interview.selection import RECENT, WEAK_TOPIC_MEAN, topic_standing
from app.reports import ready

router = APIRouter(prefix="/v1/me", tags=["progress"], responses=problem_responses(401))


class MasteryPoint(BaseModel):
    session_id: str
    at: datetime = Field(description="When the session's last answer on this topic was scored")
    mean_score: float = Field(ge=0, le=5)
    answers: int


SCORED = ("Questions scored, a skip or \"I don't know\" among them (scored 0; a report's questions_answered "
          "leaves them out)")


class TopicProgress(BaseModel):
    topic: str
    answers: int = Field(description=SCORED)
    mean_score: float = Field(ge=0, le=5)
    latest_score: float = Field(ge=0, le=5)
    history: list[MasteryPoint] = Field(description="One point per session, oldest first")


class Progress(BaseModel):
    sessions: int
    completed_sessions: int
    answers: int = Field(description=SCORED)
    topics: list[TopicProgress]
    weak_topics: list[str] = Field(description=f"Topics whose latest {RECENT} question scores average below "
                                   f"{WEAK_TOPIC_MEAN}, weakest first: a new session brings them back for review")


@router.get("/progress", response_model=Progress)
def progress(user: UserDep, repo: RepoDep) -> Progress:
    """Mastery per topic over time, from each question's score (after its follow-ups), as its report has it.
    An interview-mode session in progress stays out: its scores are hidden until it is completed."""
    sessions = repo.list_sessions(user.id)
    hidden = {s.id for s in sessions if ready.scores_withheld(s)}
    scores = [row for row in repo.question_scores(user.id) if row.session_id not in hidden]
    by_topic: dict[str, list] = {}
    for row in scores:
        by_topic.setdefault(row.topic, []).append(row)
    topics = [_topic_progress(topic, rows) for topic, rows in sorted(by_topic.items())]
    standing = topic_standing([(row.topic, row.score) for row in scores])
    return Progress(
        sessions=len(sessions),
        completed_sessions=sum(s.status == "completed" for s in sessions),
        answers=len(scores),
        topics=topics,
        weak_topics=[t for t, m in sorted(standing.items(), key=lambda tm: (tm[1], tm[0])) if m < WEAK_TOPIC_MEAN],
    )


def _topic_progress(topic: str, rows: list) -> TopicProgress:
    per_session: dict[str, list] = {}
    for row in rows:  # rows come oldest first, so sessions keep their order of first answer
        per_session.setdefault(row.session_id, []).append(row)
    history = [
        MasteryPoint(
            session_id=session_id,
            at=group[-1].answered_at,
            mean_score=round(fmean(r.score for r in group), 2),
            answers=len(group),
        )
        for session_id, group in per_session.items()
    ]
    return TopicProgress(
        topic=topic,
        answers=len(rows),
        mean_score=round(fmean(r.score for r in rows), 2),
        latest_score=rows[-1].score,
        history=history,
    )
