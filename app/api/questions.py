"""The question bank, browsable and searchable; reference answers, rubrics and checks stay server-side."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from app.api.deps import BankDep, StoreDep, UserDep
from app.api.problems import problem_responses
from app.api.schemas import QueryInt
from app.errors import NotFoundError, echoed
from evaluators.code.forbidden import contract_with_refusals
from knowledge.schema import Framework, Kind, Topic
from knowledge.vectorstore import SearchHit

router = APIRouter(prefix="/v1/questions", tags=["questions"], responses=problem_responses(401, 422))


class QuestionSummary(BaseModel):
    id: str = Field(examples=["zero-grad"])
    question: str
    framework: Framework
    topic: Topic
    difficulty: int = Field(ge=1, le=3)
    kind: Kind
    score: float | None = Field(default=None, description="Search relevance; absent when browsing")


class QuestionPage(BaseModel):
    items: list[QuestionSummary]
    total: int = Field(description="Questions in the listing over all its pages. Browsing: those the filters admit. "
                       "Searching: the ranked list, which is every question the filters admit, best first, so not "
                       "a count of relevant ones: see `matched`")
    matched: int | None = Field(default=None, description="Searching: how many questions in the ranked list "
                                "contain a word of the search (stop words aside; synonyms count); the ranking "
                                "goes on with questions related in meaning only. Absent when browsing")
    page: int
    per_page: int


class CodeSpec(BaseModel):
    contract: str = Field(description="What the submitted code must define and do")
    starter: str


class QuestionDetail(BaseModel):
    id: str
    question: str
    framework: Framework
    topic: Topic
    difficulty: int = Field(ge=1, le=3)
    kind: Kind
    related: list[str]
    code: CodeSpec | None = None


@router.get("", response_model=QuestionPage)
def list_questions(
    _user: UserDep,
    store: StoreDep,
    q: Annotated[
        str | None, Query(max_length=500, description="Search text (hybrid semantic + keyword)")
    ] = None,
    framework: Framework | None = None,
    topic: Topic | None = None,
    difficulty: Annotated[int | None, Query(ge=1, le=3), QueryInt] = None,
    kind: Kind | None = None,
    page: Annotated[int, Query(ge=1, le=10_000), QueryInt] = 1,
    per_page: Annotated[int, Query(ge=1, le=100), QueryInt] = 20,
) -> QuestionPage:
    """Browse (by id) or search (by relevance) the bank, with filters; paginated. A search ranks every question
    the filters admit: `total` counts them all, `matched` those that contain a word of the search."""
    chosen = {"framework": framework, "topic": topic, "difficulty": difficulty, "kind": kind}
    filters = {k: (v.value if hasattr(v, "value") else v) for k, v in chosen.items() if v is not None}
    hits: list[SearchHit]
    searching = bool(q and q.strip())
    if q and searching:
        # Every admitted question is scored anyway; a shorter list would cap `total` and `matched` at its length.
        hits = store.search(q, k=max(1, store.count()), filters=filters)
    else:
        hits = sorted(store.catalog(filters), key=lambda h: h.id)
    start = (page - 1) * per_page
    items = [_summary(h, ranked=searching) for h in hits[start : start + per_page]]
    matched = sum(h.shares_words for h in hits) if searching else None
    return QuestionPage(items=items, total=len(hits), matched=matched, page=page, per_page=per_page)


@router.get("/{question_id}", response_model=QuestionDetail, responses=problem_responses(404))
def get_question(question_id: str, _user: UserDep, bank: BankDep) -> QuestionDetail:
    """One question; code tasks include their contract and starter code."""
    question = bank.get(question_id)
    if question is None:
        raise NotFoundError(f"no question {echoed(question_id)}; list them with GET /v1/questions")
    code = CodeSpec(contract=contract_with_refusals(question.code), starter=question.code.starter) \
        if question.code else None
    return QuestionDetail(
        id=question.id,
        question=question.question,
        framework=question.framework,
        topic=question.topic,
        difficulty=question.difficulty,
        kind=question.kind,
        related=list(question.related),
        code=code,
    )


def _summary(hit: SearchHit, *, ranked: bool) -> QuestionSummary:
    return QuestionSummary(
        id=hit.id,
        question=hit.question,
        framework=Framework(hit.framework),
        topic=Topic(hit.topic),
        difficulty=hit.difficulty,
        kind=Kind(hit.kind),
        score=hit.score if ranked else None,
    )
