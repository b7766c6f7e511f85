"""Interview sessions: start one, answer, ask for hints, skip, and fetch the transcript (reports: session_reports)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request, Response
from pydantic import Field, StrictInt

from app.api import session_pages
from app.api.deps import (
    EngineDep,
    LimiterDep,
    RepoDep,
    RunnerDep,
    SettingsDep,
    UserDep,
    code_check_slot,
    owned_session,
    require_size,
)
from app.api.problems import problem_responses
from app.api.schemas import (
    Level,
    QueryInt,
    RequestModel,
    SessionCreated,
    SessionDetail,
    SessionSummary,
    TranscriptTurn,
    TurnOut,
    code_result_out,
    draft_out,
    evaluation_out,
    session_summary,
)
from app.interview import feedback
from app.interview.models import SEED_HELP, SessionConfig, SessionState, TurnOutcome
from app.reports import ready
from app.reports.replies import reply_action
from app.warmup import settle

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=problem_responses(401, 422))
SESSION_ERRORS = problem_responses(404, 409)

CONFIG_EXAMPLES = {
    "defaults": {"summary": "5 adaptive practice questions", "value": {}},
    "focused": {
        "summary": "Autograd and tensors, interview mode",
        "value": {
            "topics": ["autograd", "tensors"],
            "frameworks": ["pytorch"],
            "difficulty": 2,
            "num_questions": 3,
            "mode": "interview",
            "time_limit_s": 300,
            "seed": 7,
        },
    },
}


class SessionConfigIn(SessionConfig):
    """The engine's config, each whole number a JSON integer: no `true` read as 1, no 1.0 or "2" read as a level or
    a count. The bounds are the engine's, repeated here as StrictInt replaces its fields."""

    difficulty: Level = "adaptive"
    num_questions: StrictInt = Field(default=5, ge=1, le=30)
    time_limit_s: StrictInt | None = Field(default=None, ge=30, le=3600)
    seed: StrictInt | None = Field(default=None, ge=-(2**63), le=2**63 - 1, description=SEED_HELP)


TURN_HELP = ("The `turn` of the prompt this acts on (from the prompt): if the session has moved past it (a retry, "
             "a double click), the request is refused with 409 and nothing is recorded")
# Required where acting twice does harm: without it, a client's retry after a timeout (or two parallel
# submits) was taken as the answer to the next prompt, one the candidate never saw. Repeat reads and
# finish cannot act twice, so they may leave it out.
TurnQuery = Annotated[int, Query(ge=0, description=TURN_HELP), QueryInt]
OptionalTurnQuery = Annotated[int | None, Query(ge=0, description=TURN_HELP), QueryInt]


# The schema's example of a code answer, to the task it names (pairwise-distances): it computes the distances, as
# the task asks (torch.cdist, its example before, is refused there).
PAIRWISE_EXAMPLE = ("import torch\n\ndef pairwise_distances(x, y):\n"
                    "    return (x[:, None, :] - y[None, :, :]).pow(2).sum(-1).clamp_min(0).sqrt()")


class AnswerIn(RequestModel):
    """Text, code, or both; code is run against the task's hidden checks on code questions."""

    text: str | None = Field(default=None, examples=["zero_grad clears the .grad buffers, which accumulate."])
    code: str | None = Field(
        default=None, examples=[PAIRWISE_EXAMPLE]
    )
    turn: StrictInt = Field(ge=0, description=TURN_HELP)


ANSWER_EXAMPLES = {
    "text": {
        "summary": "A spoken-style answer",
        "value": {
            "text": "Gradients accumulate in .grad across backward calls, so each step must start from zero.",
            "turn": 0,
        },
    },
    "code": {"summary": "A code answer", "value": {"code": "def f(x):\n    return x.relu()", "text": "", "turn": 0}},
}


@router.post("", status_code=201, response_model=SessionCreated, responses=problem_responses(400, 503))
def create_session(
    user: UserDep,
    engine: EngineDep,
    config: Annotated[SessionConfigIn | None, Body(openapi_examples=CONFIG_EXAMPLES)] = None,
) -> SessionCreated:
    """Start a session; every config field is optional. Returns the first question."""
    session, prompt = engine.start(user_id=user.id, config=config or SessionConfig())
    return SessionCreated(id=session.id, status=session.status, config=session.config, prompt=prompt,
                          notes=session.state.get("notes", []))


@router.get(
    "",
    response_model=list[SessionSummary],
    responses=session_pages.PAGE_RESPONSES,
)
def list_sessions(
    request: Request,
    response: Response,
    user: UserDep,
    repo: RepoDep,
    limit: session_pages.Limit = session_pages.SESSIONS_PER_PAGE,
    cursor: session_pages.Cursor = None,
    status: session_pages.Status = None,
) -> list[SessionSummary]:
    """The caller's sessions, newest first, a page at a time: the `Link` header holds the next page's URL.
    `status=active&limit=1` is the session to continue."""
    after = None if cursor is None else session_pages.start_after(cursor, repo=repo, user_id=user.id)
    rows = repo.list_sessions(user.id, limit=limit + 1, after=after, status=status)
    if len(rows) > limit:  # one more than asked for: there is a next page
        last = rows[limit - 1]
        response.headers["Link"] = session_pages.link_to_next(request, limit=limit, created_at=last.created_at,
                                                              session_id=last.id)
    return [session_summary(s) for s in rows[:limit]]


@router.get("/{session_id}", response_model=SessionDetail, responses=SESSION_ERRORS)
def get_session(session_id: str, user: UserDep, engine: EngineDep, repo: RepoDep) -> SessionDetail:
    """State, the current prompt and the transcript so far (scores hidden in an active interview)."""
    prompt = engine.current_prompt(session_id=session_id, user_id=user.id)
    session = owned_session(repo, session_id, user.id)
    hide = ready.scores_withheld(session)
    draft = None if prompt is None else repo.draft(session_id, turn=prompt.turn)
    told = SessionState.model_validate(session.state).turn_notes
    turns = repo.turns(session_id)
    # A typed "I don't know" is the button's (reply_action), also in sessions stored before the engine said so.
    transcript = [
        TranscriptTurn(
            position=t.position,
            kind=t.kind,
            question_id=t.question_id,
            topic=t.topic,
            difficulty=t.difficulty,
            prompt=t.prompt,
            action=reply_action(t),
            answer_text=t.answer_text,
            answer_code=t.answer_code,
            hints_used=t.hints_used,
            hints=list(t.hints),
            asked_at=t.created_at,
            answered_at=t.answered_at,
            evaluation=None if hide else evaluation_out(
                t.evaluation and feedback.shown_while_asked(t.evaluation, t.question_id, prompt)),
            code_result=None if hide else code_result_out(t.code_result),
            notes=told.get(t.position, []),
        )
        for t in turns
    ]
    return SessionDetail(
        id=session.id,
        status=session.status,
        config=session.config,
        prompt=prompt,
        notes=session.state.get("notes", []),
        created_at=session.created_at,
        updated_at=session.updated_at,
        transcript=transcript,
        draft=None if draft is None else draft_out(draft),
    )


@router.post(
    "/{session_id}/answers", response_model=TurnOut, responses=problem_responses(400, 404, 409, 413, 429, 503)
)
def submit_answer(
    session_id: str,
    user: UserDep,
    engine: EngineDep,
    settings: SettingsDep,
    runner: RunnerDep,
    limiter: LimiterDep,
    answer: Annotated[AnswerIn, Body(openapi_examples=ANSWER_EXAMPLES)],
) -> TurnOut:
    """Answer the current prompt: returns the evaluation (practice mode) and the next prompt."""
    require_size(answer.text, settings.max_answer_chars, "text")
    require_size(answer.code, settings.max_code_chars, "code")
    # Code runs in the sandbox, and counts like a code check, only on a code task's prompt: the engine says
    # when, once it knows the answer is for the current prompt (a stale answer is a 409 and costs nothing).
    with code_check_slot(user, limiter) as take:

        def before_code_run() -> None:
            # A sandbox still starting is waited for here, before anything of the answer is kept: a while, then a
            # 503 with Retry-After (the answer can be sent again as is). A run is counted only where one happens.
            if settle(runner) is not None:
                take()

        outcome = engine.answer(
            session_id=session_id, user_id=user.id, text=answer.text, code=answer.code, turn=answer.turn,
            before_code_run=None if runner is None else before_code_run,
        )
    return _turn_out(outcome)


@router.post("/{session_id}/hint", response_model=TurnOut, responses=SESSION_ERRORS)
def hint(session_id: str, user: UserDep, engine: EngineDep, turn: TurnQuery) -> TurnOut:
    """A hint for the current question, in `message`; each one costs points on that question."""
    return _turn_out(engine.hint(session_id=session_id, user_id=user.id, turn=turn))


@router.post("/{session_id}/skip", response_model=TurnOut, responses=SESSION_ERRORS)
def skip(session_id: str, user: UserDep, engine: EngineDep, turn: TurnQuery) -> TurnOut:
    """Skip the current question (scored 0) and move on."""
    return _turn_out(engine.skip(session_id=session_id, user_id=user.id, turn=turn))


@router.post("/{session_id}/dont-know", response_model=TurnOut, responses=SESSION_ERRORS)
def dont_know(session_id: str, user: UserDep, engine: EngineDep, turn: TurnQuery) -> TurnOut:
    """Say "I don't know": scored 0; practice mode shows the model answer."""
    return _turn_out(engine.dont_know(session_id=session_id, user_id=user.id, turn=turn))


@router.post("/{session_id}/repeat", response_model=TurnOut, responses=SESSION_ERRORS)
def repeat(session_id: str, user: UserDep, engine: EngineDep, turn: OptionalTurnQuery = None) -> TurnOut:
    """The current prompt again."""
    return _turn_out(engine.repeat(session_id=session_id, user_id=user.id, turn=turn))


@router.post("/{session_id}/finish", response_model=TurnOut, responses=SESSION_ERRORS)
def finish(session_id: str, user: UserDep, engine: EngineDep, turn: OptionalTurnQuery = None) -> TurnOut:
    """End the session now (an interview-mode one too): its report covers what was answered. The prompt on
    screen stays unanswered and unscored, and no further question is drawn."""
    return _turn_out(engine.finish(session_id=session_id, user_id=user.id, turn=turn))


def _turn_out(outcome: TurnOutcome) -> TurnOut:
    return TurnOut(
        status=outcome.status,
        prompt=outcome.prompt,
        message=outcome.message,
        notes=outcome.notes,
        evaluation=evaluation_out(outcome.evaluation),
        code_result=code_result_out(outcome.code_result),
    )
