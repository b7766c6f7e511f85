"""Builds the long-lived components from settings, once per process."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from app.config import Settings, get_settings
from app.errors import UserFacingError
from knowledge.embeddings import Embedder, get_embedder

if TYPE_CHECKING:  # Chroma and LangChain take ~0.7 s to import: only what opens the store pays for it
    from knowledge.vectorstore import QuestionStore, UpsertReport

log = logging.getLogger(__name__)


def embedder_for(settings: Settings) -> Embedder:
    if settings.embedder != "openai":
        return get_embedder(settings.embedder)
    return get_embedder(
        "openai",
        openai_model=settings.openai_embedding_model,
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key.get_secret_value(),
    )


def store_for(settings: Settings) -> QuestionStore:
    from knowledge.vectorstore import open_store

    return open_store(
        data_dir=str(settings.data_dir),
        host=settings.chroma_host,
        port=settings.chroma_port,
        base_name=settings.chroma_collection,
        embedder=embedder_for(settings),
    )


def sync_index(
    store: QuestionStore, settings: Settings, *, on_embedded: Callable[[int, int], None] | None = None
) -> UpsertReport:
    """Bring the search index in line with the bank, as `interviewer ingest` would: a fresh data directory
    is indexed, and a bank changed since (a new release, another INTERVIEWER_BANK_DIR) is re-indexed,
    removed entries dropped, so no search returns a question the bank no longer has. Unchanged entries
    cost nothing (~20 ms for the whole bank)."""
    from ingest.pipeline import ingest_bank
    from knowledge.loader import cached_bank

    return ingest_bank(store, list(cached_bank(settings.bank_dir)), on_embedded=on_embedded)


def repository_for(settings: Settings) -> Any:
    """The database, migrated to the current schema (safe when several processes start at once). One
    that cannot be opened (a server down, a wrong URL, a driver not installed, a data folder that
    cannot be made) is a UserFacingError naming it, password hidden: one line, not a traceback."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from app.store import open_repository

    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserFacingError(f"the data folder {settings.data_dir} cannot be created ({exc.strerror})") from None
    try:
        return open_repository(settings.sqlalchemy_url)
    except (SQLAlchemyError, ImportError) as exc:
        try:
            where = make_url(settings.sqlalchemy_url).render_as_string(hide_password=True)
        except SQLAlchemyError:
            where = "INTERVIEWER_DATABASE_URL"
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise UserFacingError(f"the database {where} cannot be opened: {reason}") from None


def rubric_scorer_for(settings: Settings) -> Any:
    """The offline scorer, reading rubric vectors stored by earlier runs (answers are embedded fresh)."""
    from evaluators.rubric import RubricScorer
    from knowledge.stored_vectors import StoredEmbedder

    embedder = embedder_for(settings)
    return RubricScorer(embedder, rubric_embedder=StoredEmbedder(embedder, settings.rubric_vectors_path))


def store_rubric_vectors(settings: Settings, questions: list[Any]) -> None:
    """Embed every entry's rubric texts and store them (only those not stored yet), so that the first
    `grade` run and the first server start on this machine read them instead of embedding ~7,900 texts."""
    from evaluators.base import GradingTask

    rubric_scorer_for(settings).warm([GradingTask.from_question(q, "") for q in questions])


def evaluator_for(settings: Settings) -> Any:
    """The offline rubric scorer, wrapped by the LLM judge when a model is configured."""
    offline = rubric_scorer_for(settings)
    if not settings.llm_enabled:
        return offline
    from app.interview.leaks import AnswerRuns
    from app.llm import chat_model_from_settings
    from evaluators.judge import LLMJudge

    chat_model = chat_model_from_settings(settings)
    if not chat_model:
        return offline
    return LLMJudge(chat_model, offline, reveals=lambda text, reference: bool(AnswerRuns([reference]).in_text(text)),
                    calls_in_flight=settings.llm_calls_in_flight)


def code_runner_for(settings: Settings) -> Any | None:
    """The sandboxed runner, or None (with the reason logged) when the sandbox cannot start here."""
    from evaluators.code.errors import RunnerError
    from evaluators.code.runner import CodeRunner

    try:
        return CodeRunner.from_settings(settings)
    except RunnerError as exc:
        log.warning("code checks disabled: %s", exc)
        return None


def phraser_for(settings: Settings) -> Any:
    from app.interview.phrasing import LLMPhraser, Phraser

    if not settings.llm_enabled:
        return Phraser()
    from app.llm import chat_model_from_settings
    from knowledge.loader import cached_bank

    answers = [q.reference_answer for q in cached_bank(settings.bank_dir)]
    return LLMPhraser(chat_model_from_settings(settings), bank_answers=answers)


def warm_scoring(evaluator: Any, bank: dict[str, Any], engine: Any | None = None) -> None:
    """Embed every rubric and look up every rubric point's related entries (the embedding model loaded on the
    way), so that no candidate waits for a question's first scoring or a query embedding. The server runs it in
    its warm-up (app/warmup.py): GET /readyz names "embeddings" until it has ended."""
    from evaluators.base import GradingTask

    offline = getattr(evaluator, "_fallback", evaluator)
    if hasattr(offline, "warm"):
        offline.warm([GradingTask.from_question(q, "") for q in bank.values()])
    if engine is not None:
        engine.warm()


def engine_for(
    settings: Settings, *, repo: Any, store: QuestionStore, runner: Any | None, evaluator: Any | None = None
) -> Any:
    from app.interview.engine import InterviewEngine
    from app.interview.scoring import AnswerScorer
    from app.interview.selection import QuestionSelector
    from knowledge.loader import bank_index

    return InterviewEngine(
        repo=repo,
        selector=QuestionSelector(store),
        bank=bank_index(settings.bank_dir),
        scorer=AnswerScorer(evaluator=evaluator or evaluator_for(settings), code_runner=runner),
        phraser=phraser_for(settings),
        resume_after_s=resume_after_s(settings),
    )


def resume_after_s(settings: Settings) -> float:
    """How long an answered turn with no next turn is a step still running (in this process or another),
    not one a crash cut short. A step makes up to three LLM calls (judge, follow-up, feedback wording), each
    up to the timeout per attempt: with a slow model a step took 70 s and another process, at a fixed 60 s,
    redid it while it ran (the answer then came back a 409)."""
    from app.interview.engine import RESUME_AFTER_S

    if not settings.llm_base_url:
        return RESUME_AFTER_S
    return max(RESUME_AFTER_S, 3 * settings.llm_timeout_s * (settings.llm_max_retries + 1) + 30)


@lru_cache
def get_store() -> QuestionStore:
    """The process's question store (Chroma clients are meant to be reused)."""
    return store_for(get_settings())
