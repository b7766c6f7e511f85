"""Answer drafts: the candidate's unsent answer to the open prompt, saved as they write it, so that a reload,
a closed tab or a crash of the app loses nothing. GET /v1/sessions/{id} returns it with the prompt."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field, StrictInt

from app.api.deps import RepoDep, SettingsDep, UserDep, require_size
from app.api.problems import problem_responses
from app.api.schemas import DraftOut, RequestModel, draft_out

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=problem_responses(401, 422))


class DraftIn(RequestModel):
    turn: StrictInt = Field(ge=0, description="The `turn` of the prompt the draft answers: a prompt the session "
                            "has moved past is refused with 409, so a tab left behind cannot overwrite the draft")
    text: str | None = Field(default=None, examples=["Gradients accumulate in .grad, so"])
    code: str | None = None


@router.put("/{session_id}/draft", response_model=DraftOut, responses=problem_responses(400, 404, 409, 413))
def save_draft(session_id: str, draft: DraftIn, user: UserDep, repo: RepoDep, settings: SettingsDep) -> DraftOut:
    """Keep the draft of the answer to the current prompt, replacing the last one; submitting the answer
    deletes it."""
    require_size(draft.text, settings.max_answer_chars, "text")
    require_size(draft.code, settings.max_code_chars, "code")
    return draft_out(repo.save_draft(session_id, user_id=user.id, turn=draft.turn, text=draft.text, code=draft.code))
