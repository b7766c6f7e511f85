"""Whole sessions driven by scripted candidates against the real bank, store, scorer and database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from app.errors import ConflictError, UserFacingError
from app.interview.engine import InterviewEngine
from app.interview.models import Mode, PromptKind, SessionConfig
from app.interview.phrasing import Phrased, Phraser
from app.interview.scoring import AnswerScorer
from app.interview.selection import QuestionSelector
from app.store import open_repository
from evaluators.base import Evaluation, Evaluator, GradingTask, PointVerdict, Verdict
from evaluators.rubric import RubricScorer
from tests.conftest import REPO
from tests.postgres import postgres_server  # noqa: F401  (fixture)
from tests.processes import run_bounded


@pytest.fixture(scope="module")
def scorer(embedder):
    return RubricScorer(embedder)


@pytest.fixture
def repo(tmp_path: Path):
    return open_repository(f"sqlite:///{tmp_path / 'interviews.db'}")


@pytest.fixture
def engine(repo, ingested_store, bank, scorer):
    return InterviewEngine(
        repo=repo,
        selector=QuestionSelector(ingested_store),
        bank={q.id: q for q in bank},
        scorer=AnswerScorer(evaluator=scorer),
    )


@pytest.fixture
def user(repo):
    return repo.get_or_create_user("alice").id


def by_id(bank):
    return {q.id: q for q in bank}


def run_session(engine, user, config, answer_for):
    """Answer every prompt with answer_for(question_id, prompt); return all outcomes and prompts."""
    session, prompt = engine.start(user_id=user, config=config)
    prompts, outcomes = [prompt], []
    while prompt is not None:
        outcome = engine.answer(session_id=session.id, user_id=user, text=answer_for(prompt), code=None)
        outcomes.append(outcome)
        prompt = outcome.prompt
        prompts.append(prompt)
    return session, [p for p in prompts if p], outcomes


def test_strong_candidate_outscores_weak_and_questions_never_repeat(engine, repo, user, bank):
    bank_map = by_id(bank)
    config = SessionConfig(num_questions=4, topics=["autograd", "tensors"], seed=7)
    strong, prompts, _ = run_session(engine, user, config, lambda p: bank_map[p.question_id].reference_answer)
    weak_user = repo.get_or_create_user("bob").id
    weak, _, _ = run_session(engine, weak_user, config, lambda p: "It is a PyTorch thing you use sometimes.")
    strong_scores = repo.get_session(strong.id, user).state["question_scores"]
    weak_scores = repo.get_session(weak.id, weak_user).state["question_scores"]
    assert sum(strong_scores.values()) / 4 >= 3.5
    assert sum(weak_scores.values()) / 4 <= 1.0
    asked = [p.question_id for p in prompts if p.kind is PromptKind.QUESTION]
    assert len(asked) == len(set(asked)) == 4
    assert all(bank_map[q].topic.value in {"autograd", "tensors"} for q in asked)


def test_no_repeats_across_sessions_and_a_repeat_only_once_all_are_seen_said_so(engine, user, bank):
    pool = {q.id for q in bank if q.topic.value == "frameworks"}
    config = SessionConfig(num_questions=len(pool) - 1, topics=["frameworks"], seed=1)  # all but one of the pool
    _, first, _ = run_session(engine, user, config, lambda p: "I don't know")
    second_session, second, _ = run_session(engine, user, config, lambda p: "I don't know")
    third_session, third, _ = run_session(engine, user, config, lambda p: "I don't know")
    first_ids, second_ids = [p.question_id for p in first], [p.question_id for p in second]
    # One question is new: the second session asks only it, rather than fill up with ones already seen.
    assert second_ids == [(pool - set(first_ids)).pop()] and second[0].total == 1
    assert any("Only 1 question(s) in these topics are new to you" in n for n in second_session.state["notes"])
    # Every one seen: they come back, least recently seen first, and the session says so.
    assert [p.question_id for p in third][:1] == first_ids[:1]
    assert any("asked every question in these topics before" in n for n in third_session.state["notes"])


def test_a_session_asks_for_no_more_questions_than_its_topics_hold(engine, user, bank):
    """A session of one more question than the distributed-training topic holds is one of as many as it holds,
    said in its notes, so the candidate is never shown "Question 6 of 7" as the last one."""
    pool = [q for q in bank if q.topic.value == "distributed"]
    config = SessionConfig(num_questions=len(pool) + 1, topics=["distributed"])
    session, prompt = engine.start(user_id=user, config=config)
    assert session.config["num_questions"] == len(pool) == prompt.total
    notes = session.state["notes"]
    assert any(f"Only {len(pool)} question(s) in these topics are in the bank" in note for note in notes)
    assert prompt.notes == notes  # told with the first question, not only in the report at the end


def test_a_session_whose_question_left_the_bank_goes_on_as_asked_or_without_a_copy_is_a_conflict(
    engine, repo, user, bank, ingested_store, scorer, tmp_path
):
    """A new bank release drops the question a session is on: the session goes on with the question as it was
    asked (stored with its turn). A turn stored before copies were kept has nothing to judge an answer by: its
    actions are refused with a reason, not a crash."""
    import sqlite3

    config = SessionConfig(num_questions=2, topics=["autograd"], seed=3)
    session, prompt = engine.start(user_id=user, config=config)
    older, older_prompt = engine.start(user_id=repo.get_or_create_user("bob").id, config=config)
    assert older_prompt.question_id == prompt.question_id
    with sqlite3.connect(tmp_path / "interviews.db") as db:  # as stored before copies were kept
        db.execute("UPDATE turns SET bank_entry = NULL WHERE session_id = ?", (older.id,))
    later = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), scorer=AnswerScorer(evaluator=scorer),
                            bank={q.id: q for q in bank if q.id != prompt.question_id})
    outcome = later.answer(session_id=session.id, user_id=user, text="Autograd records a graph.", code=None)
    assert outcome.status == "active" and repo.turns(session.id)[0].evaluation["question_id"] == prompt.question_id
    bob = older.user_id
    with pytest.raises(ConflictError, match="no longer in the question bank"):
        later.answer(session_id=older.id, user_id=bob, text="Autograd records a graph.", code=None)
    with pytest.raises(ConflictError, match="no longer in the question bank"):
        later.hint(session_id=older.id, user_id=bob)
    assert later.current_prompt(session_id=older.id, user_id=bob) is None
    # It can still be finished, so it does not stay active for good.
    assert later.finish(session_id=older.id, user_id=bob).status == "completed"
    assert repo.get_session(older.id, bob).status == "completed"


def test_entries_the_index_holds_but_the_bank_does_not_are_never_asked(repo, user, bank, ingested_store, scorer):
    """A pack ingested again while the server runs: the index lists an entry the server's bank lacks. It is
    not drawn (it was a KeyError, a 500 and a session stored with no question)."""
    topic = "distributed"
    missing = {q.id for q in bank if q.topic.value == topic}
    def engine_with(known):
        return InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store),
                               scorer=AnswerScorer(evaluator=scorer), bank={q.id: q for q in bank if q.id in known})

    engine = engine_with({q.id for q in bank} - missing)
    with pytest.raises(UserFacingError, match="no bank questions match"):
        engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=[topic]))
    assert repo.list_sessions(user) == []
    kept = sorted(missing)[0]  # one of them still known: only it is asked
    engine = engine_with({q.id for q in bank} - missing | {kept})
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=[topic]))
    assert prompt.question_id == kept and session.config["num_questions"] == 1


def test_follow_up_probes_a_missed_point_and_its_answer_can_earn_it(engine, user, bank):
    question = by_id(bank)["relu-autograd-function"]
    config = SessionConfig(num_questions=1, topics=["autograd"], difficulty=3, seed=3)
    session, prompt = engine.start(user_id=user, config=config)
    while prompt.question_id != question.id:  # make sure we are on the ReLU task for this test
        session, prompt = engine.start(user_id=user, config=config.model_copy(update={"seed": config.seed + 1}))
        config = config.model_copy(update={"seed": config.seed + 1})
    partial = "You subclass torch.autograd.Function and write static forward and backward methods."
    outcome = engine.answer(session_id=session.id, user_id=user, text=partial, code=None)
    assert outcome.prompt.kind is PromptKind.FOLLOW_UP
    missed = {p["point_id"] for p in outcome.evaluation["points"] if p["verdict"] != Verdict.COVERED}
    turns = engine._repo.turns(session.id)
    assert turns[-1].target_point in missed
    probe = next(f for f in question.follow_ups if f.point == turns[-1].target_point)
    target = next(p for p in question.rubric if p.id == probe.point)
    assert target.description.lower() not in outcome.prompt.text.lower()
    reply = " ".join(target.evidence)
    second = engine.answer(session_id=session.id, user_id=user, text=reply, code=None)
    verdicts = {p["point_id"]: p["verdict"] for p in second.evaluation["points"]}
    assert verdicts[target.id] != Verdict.MISSED
    assert second.evaluation["score"] > outcome.evaluation["score"]


def test_at_most_two_follow_ups_per_question(engine, user):
    config = SessionConfig(num_questions=1, topics=["modules"], seed=5)
    session, prompt = engine.start(user_id=user, config=config)
    kinds = []
    while prompt is not None:
        kinds.append(prompt.kind)
        outcome = engine.answer(session_id=session.id, user_id=user, text="Modules hold layers.", code=None)
        prompt = outcome.prompt
    assert kinds.count(PromptKind.FOLLOW_UP) <= 2


def test_hint_costs_credit_and_is_recorded(engine, user, bank):
    bank_map = by_id(bank)
    config = SessionConfig(num_questions=1, topics=["tensors"], seed=11)
    session, prompt = engine.start(user_id=user, config=config)
    hint = engine.hint(session_id=session.id, user_id=user)
    assert hint.message and hint.message.startswith(("Think about", "A complete answer also has a point"))
    answer = bank_map[prompt.question_id].reference_answer
    outcome = engine.answer(session_id=session.id, user_id=user, text=answer, code=None)
    assert outcome.evaluation["penalties"] == ["1 hint(s) used: -0.5 points"]
    assert engine._repo.turns(session.id)[0].hints_used == 1


def test_a_right_concise_answer_under_four_says_why_in_the_feedback_and_the_report(engine, repo, user):
    """Every point of requires-grad stated in a few sentences scores under 4: the practice feedback says what the
    score also reads, and the report lists it under the question in every format."""
    from app.reports import build_report, render
    from app.reports.html_doc import esc
    from app.reports.markdown_doc import md
    from tests.test_rubric_scorer import REQUIRES_GRAD_CONCISE

    config = SessionConfig(num_questions=3, topics=["autograd"], difficulty=1, seed=5)  # the topic's three 1s
    session, prompt = engine.start(user_id=user, config=config)
    shown = None
    while prompt is not None:
        concise = prompt.question_id == "requires-grad" and prompt.kind is PromptKind.QUESTION
        outcome = engine.answer(session_id=session.id, user_id=user, code=None,
                                text=REQUIRES_GRAD_CONCISE if concise else "I don't know")
        shown = outcome.evaluation if concise else shown
        prompt = outcome.prompt
    note = "No point is missing, but the score also weighs how much of the full model answer's content you give"
    assert shown is not None and shown["score"] < 4.0 and note in shown["feedback"]
    report = build_report(session=repo.get_session(session.id, user), turns=repo.turns(session.id), bank={})
    (entry,) = [q for q in report.questions if q.question_id == "requires-grad"]
    assert any(n.startswith(note) for n in entry.scoring_notes)
    assert f"- Scoring: {md(note)}" in render(report, "markdown")[0].decode()
    assert f"Scoring: {esc(note)}" in render(report, "html")[0].decode()


def test_a_hint_given_is_shown_again_on_reload_and_quoted_in_the_report(engine, repo, user):
    from app.reports import build_report, render
    from app.reports.html_doc import esc
    from app.reports.markdown_doc import md

    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["tensors"], seed=11))
    assert prompt.hints == []
    given = engine.hint(session_id=session.id, user_id=user)
    (text,) = given.prompt.hints
    assert given.message.startswith(text)
    assert engine.current_prompt(session_id=session.id, user_id=user).hints == [text]  # a reloaded page
    assert engine.repeat(session_id=session.id, user_id=user).prompt.hints == [text]
    engine.skip(session_id=session.id, user_id=user)
    report = build_report(session=repo.get_session(session.id, user), turns=repo.turns(session.id), bank={})
    assert report.questions[0].hints == [text]
    assert f"- Hint given: {md(text)}" in render(report, "markdown")[0].decode()
    assert f"Hint given: {esc(text)}" in render(report, "html")[0].decode()


def test_a_probe_given_as_a_hint_is_not_asked_again_as_the_follow_up(engine, user, bank):
    def heaviest_probe(question):  # the probe both the first hint and the first follow-up would reach for
        first, second = sorted((p.weight for p in question.rubric), reverse=True)[:2]
        heavy = max(question.rubric, key=lambda p: p.weight).id
        return next((f.prompt for f in question.follow_ups if f.point == heavy and not f.presumes_code), None) \
            if first > second else None  # a probe about the candidate's code is no hint before code ran

    probe = {q.id: heaviest_probe(q) for q in bank}
    for topic in ("modules", "autograd", "tensors", "training-loop", "optimisation", "regularisation"):
        session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=[topic], seed=5))
        if probe[prompt.question_id]:
            break
        engine.skip(session_id=session.id, user_id=user)
    else:
        pytest.fail("no question drawn has a single heaviest point with a probe")
    (hint,) = engine.hint(session_id=session.id, user_id=user).prompt.hints
    assert probe[prompt.question_id] in hint
    outcome = engine.answer(session_id=session.id, user_id=user, text="It is about tensors.", code=None)
    assert outcome.prompt.kind is PromptKind.FOLLOW_UP, outcome  # the answer merits a follow-up: another probe
    assert probe[prompt.question_id] not in outcome.prompt.text, (prompt.question_id, hint)


def test_i_dont_know_typed_to_a_follow_up_moves_on_and_keeps_the_earlier_score(engine, user):
    config = SessionConfig(num_questions=2, topics=["modules"], seed=5)
    session, prompt = engine.start(user_id=user, config=config)
    first = engine.answer(session_id=session.id, user_id=user, text="Modules hold layers.", code=None)
    assert first.prompt.kind is PromptKind.FOLLOW_UP and first.prompt.question_id == prompt.question_id
    outcome = engine.answer(session_id=session.id, user_id=user, text="I don't know", code=None)
    assert outcome.prompt.kind is PromptKind.QUESTION and outcome.prompt.question_id != prompt.question_id
    assert outcome.evaluation["score"] == first.evaluation["score"]
    turn = engine._repo.turns(session.id)[1]
    assert (turn.action, turn.answer_text) == ("dont_know", "I don't know")  # the transcript keeps the words
    typed = engine.answer(session_id=session.id, user_id=user, text="I don't know.", code=None)  # to a question
    assert typed.evaluation["model_answer"] and typed.evaluation["gate"] == "dont_know"
    assert engine._repo.turns(session.id)[2].action == "dont_know"  # counted as not known, not as answered


def test_a_hedged_guess_typed_is_an_answer_scored_by_the_model_not_an_i_dont_know(engine, user):
    session, _ = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["modules"], seed=5))
    outcome = engine.answer(session_id=session.id, user_id=user, code=None,
                            text="I'm not sure, maybe it is something to do with the GPU.")
    assert outcome.evaluation["gate"] is None and outcome.evaluation["score"] > 0
    assert engine._repo.turns(session.id)[0].action == "answer"


def test_skip_and_dont_know_score_zero_and_show_the_model_answer(engine, user, bank):
    config = SessionConfig(num_questions=2, topics=["deployment"], seed=2)
    session, prompt = engine.start(user_id=user, config=config)
    outcome = engine.dont_know(session_id=session.id, user_id=user)
    assert outcome.evaluation["score"] == 0 and outcome.evaluation["model_answer"]
    outcome = engine.skip(session_id=session.id, user_id=user)
    assert outcome.status == "completed"
    with pytest.raises(ConflictError):
        engine.skip(session_id=session.id, user_id=user)


def test_interview_mode_withholds_feedback_until_the_end(engine, user, bank):
    config = SessionConfig(num_questions=1, topics=["tensors"], mode=Mode.INTERVIEW)
    session, prompt = engine.start(user_id=user, config=config)
    outcome = engine.answer(session_id=session.id, user_id=user, text="A tensor is an n-d array.", code=None)
    assert outcome.evaluation is None
    assert engine._repo.turns(session.id)[0].evaluation is not None  # still stored for the report


def test_adaptive_difficulty_steps_up_after_strong_answers(engine, user, bank):
    bank_map = by_id(bank)
    config = SessionConfig(num_questions=3, topics=["autograd", "tensors", "modules"], seed=4)
    session, prompts, _ = run_session(engine, user, config, lambda p: bank_map[p.question_id].reference_answer)
    main = [p for p in prompts if p.kind is PromptKind.QUESTION]
    assert main[0].difficulty == 2
    assert main[-1].difficulty == 3


def test_adaptive_difficulty_keeps_a_level_per_topic(engine, repo, user, bank):
    """Strong on autograd, weak on tensors: each topic is met at its own level, where one level for the session
    swung with every change of topic."""
    bank_map = by_id(bank)
    config = SessionConfig(num_questions=6, topics=["autograd", "tensors"], seed=3)

    def answer(prompt):
        if prompt.topic == "autograd":
            return bank_map[prompt.question_id].reference_answer
        return "It is a PyTorch thing you use sometimes."

    session, prompts, _ = run_session(engine, user, config, answer)
    asked = [(p.topic, p.difficulty) for p in prompts if p.kind is PromptKind.QUESTION]
    autograd, tensors = ([d for t, d in asked if t == topic] for topic in ("autograd", "tensors"))
    # Old: [('tensors', 2), ('autograd', 1), ('autograd', 2), ('tensors', 3), ('tensors', 2), ('autograd', 1)]
    assert autograd == sorted(autograd) and autograd[-1] == 3, asked
    assert tensors == sorted(tensors, reverse=True) and tensors[-1] == 1, asked
    assert repo.get_session(session.id, user).state["topic_levels"] == {"autograd": 3, "tensors": 1}


def test_the_bank_drives_selection(engine, user, repo, bank, embedder, tmp_path):
    """A peer shipped retrieval that silently matched nothing: ours refuses an empty pool loudly."""
    from knowledge.vectorstore import open_store

    empty = InterviewEngine(
        repo=repo, selector=QuestionSelector(open_store(data_dir=str(tmp_path / "e"), embedder=embedder)),
        bank=by_id(bank), scorer=AnswerScorer(evaluator=RubricScorer(embedder)),
    )
    with pytest.raises(UserFacingError, match="no bank questions match"):
        empty.start(user_id=user, config=SessionConfig())
    seen = set()
    for seed in range(6):
        _, prompt = engine.start(user_id=user, config=SessionConfig(topics=["distributed"], seed=seed))
        seen.add(prompt.question_id)
    assert seen == {q.id for q in bank if q.topic.value == "distributed"}


def test_empty_answer_is_refused_and_loses_nothing(engine, user):
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1))
    with pytest.raises(UserFacingError, match="needs text or code"):
        engine.answer(session_id=session.id, user_id=user, text="  ", code=None)
    assert engine.current_prompt(session_id=session.id, user_id=user).question_id == prompt.question_id


CRASHING_CHILD = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from app.store import open_repository
from app.interview.engine import InterviewEngine
from app.interview.models import SessionConfig
from app.interview.scoring import AnswerScorer
from app.interview.selection import QuestionSelector
from evaluators.rubric import RubricScorer
from knowledge.embeddings import HashingEmbedder
from knowledge.loader import bank_index
from knowledge.vectorstore import open_store

repo = open_repository({url!r})
store = open_store(data_dir={chroma!r}, embedder=HashingEmbedder())
bank = bank_index()
store.upsert(list(bank.values()))
engine = InterviewEngine(repo=repo, selector=QuestionSelector(store), bank=bank,
                         scorer=AnswerScorer(evaluator=RubricScorer(HashingEmbedder())))
user = repo.get_or_create_user("carol").id
session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=3, seed=9))
print(session.id, prompt.question_id, flush=True)
real_add_turn = repo.add_turn
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # the answer is committed; the next turn never is
repo.add_turn = die
engine.answer(session_id=session.id, user_id=user, text="A tensor is an n-dimensional array on a device.", code=None)
"""


def killed_child(script: str, url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The script (formatted with the repo, the database URL and a Chroma folder) run in a child process that
    kills itself with SIGKILL, as a crash would."""
    script = script.format(repo=str(REPO), url=url, chroma=str(tmp_path / "chroma"))
    env = {**os.environ, "INTERVIEWER_DATA_DIR": str(tmp_path)}
    child = run_bounded([sys.executable, "-c", textwrap.dedent(script)], text=True, env=env)
    assert child.returncode == -signal.SIGKILL, child.stderr
    return child


@pytest.mark.slow
def test_kill_9_mid_session_then_resume_loses_nothing(tmp_path: Path, bank):
    from knowledge.embeddings import HashingEmbedder
    from knowledge.vectorstore import open_store

    url = f"sqlite:///{tmp_path / 'crash.db'}"
    child = killed_child(CRASHING_CHILD, url, tmp_path)
    session_id, first_question = child.stdout.split()
    repo = open_repository(url)
    user = repo.get_or_create_user("carol").id
    turns = repo.turns(session_id)
    assert turns[0].answered and turns[0].evaluation is not None  # nothing lost
    engine = InterviewEngine(
        repo=repo, selector=QuestionSelector(open_store(data_dir=str(tmp_path / "chroma"), embedder=HashingEmbedder())),
        bank=by_id(bank), scorer=AnswerScorer(evaluator=RubricScorer(HashingEmbedder())), resume_after_s=3600,
    )
    # Just answered, maybe still being handled by a live process: not finished from here yet.
    assert engine.current_prompt(session_id=session_id, user_id=user) is None and len(repo.turns(session_id)) == 1
    engine = InterviewEngine(
        repo=repo, selector=QuestionSelector(open_store(data_dir=str(tmp_path / "chroma"), embedder=HashingEmbedder())),
        bank=by_id(bank), scorer=AnswerScorer(evaluator=RubricScorer(HashingEmbedder())), resume_after_s=0,
    )
    prompt = engine.current_prompt(session_id=session_id, user_id=user)
    assert prompt is not None and prompt.question_id != first_question or prompt.kind is PromptKind.FOLLOW_UP
    assert len(repo.turns(session_id)) == 2


# The same child, killed while the first question of its session is worded (an LLM's wording can take a minute;
# a closed terminal or a restarted server ends the process there).
KILLED_AT_FIRST_WORDING = CRASHING_CHILD.split("session, prompt =")[0] + """
from app.interview.phrasing import Phraser
Phraser.question = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
engine.start(user_id=user, config=SessionConfig(num_questions=3, seed=9))
"""


class BrokenWording(Phraser):
    def question(self, question, *, number, total):
        raise RuntimeError("the wording step broke")


def test_a_start_that_fails_before_its_first_question_is_asked_leaves_no_session(
    repo, user, ingested_store, bank, scorer
):
    """The session row was stored before its first question was chosen and worded: a start failing there left an
    active session with no prompt in the user's history, which every action refused as "completed"."""
    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer), phraser=BrokenWording())
    with pytest.raises(RuntimeError, match="wording step broke"):
        engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["autograd"]))
    assert repo.list_sessions(user) == [] and repo.questions_asked(user) == 0


class NotedWording(Phraser):
    def question(self, question, *, number, total):
        return Phrased(super().question(question, number=number, total=total).text, note=f"note on question {number}")


def test_a_prompt_shown_again_or_asked_by_a_resumed_step_keeps_its_notes(repo, user, ingested_store, bank, scorer):
    """A prompt's notes were only the ones its own step added since the state was loaded: fetched again they were
    gone, and a step a crash cut short, finished by the next request, asked its question without them."""
    def engine(store_repo, resume_after_s=60.0):
        return InterviewEngine(repo=store_repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                               scorer=AnswerScorer(evaluator=scorer), phraser=NotedWording(),
                               resume_after_s=resume_after_s)

    class CrashBeforeNextTurn:
        def __getattr__(self, name):
            return getattr(repo, name)

        def add_turn(self, *args, **kwargs):
            raise KeyboardInterrupt  # the process dies once the answer is committed

    session, prompt = engine(repo).start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"]))
    assert prompt.notes == ["Q1: note on question 1"]
    again = engine(repo).current_prompt(session_id=session.id, user_id=user)
    assert again is not None and again.notes == ["Q1: note on question 1"]
    with pytest.raises(KeyboardInterrupt):
        engine(CrashBeforeNextTurn()).skip(session_id=session.id, user_id=user)
    resumed = engine(repo, resume_after_s=0).current_prompt(session_id=session.id, user_id=user)
    assert resumed is not None and resumed.number == 2 and resumed.notes == ["Q2: note on question 2"]


@pytest.mark.slow
def test_a_start_killed_before_its_first_question_is_asked_leaves_no_session(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    killed_child(KILLED_AT_FIRST_WORDING, url, tmp_path)
    repo = open_repository(url)
    assert repo.list_sessions(repo.get_or_create_user("carol").id) == []


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("gibberish", lambda p: "asdf qwer zxcv uiop hjkl vbnm"),
        ("empty-ish", lambda p: "..."),
        ("repetitive", lambda p: "Tensors are like numpy arrays but they can run on a GPU and track gradients."),
    ],
)
def test_weak_scripted_candidates_score_low_and_reports_reflect_the_turns(engine, repo, bank, name, answer):
    from app.reports import build_report

    user = repo.get_or_create_user(name).id
    config = SessionConfig(num_questions=3, topics=["training-loop", "deployment", "modules"], seed=21)
    session, prompts, outcomes = run_session(engine, user, config, answer)
    scores = repo.get_session(session.id, user).state["question_scores"]
    assert len(scores) == 3
    assert sum(scores.values()) / 3 <= 1.25, scores  # a quarter of the scale at most (repetitive: 1.03)
    report = build_report(session=repo.get_session(session.id, user), turns=repo.turns(session.id), bank=by_id(bank))
    reported = {q.question_id: q.score for q in report.questions}
    assert reported == pytest.approx(scores)
    assert report.strengths == [] or name == "repetitive"


def test_feedback_is_grounded_in_related_bank_entries(engine, user, bank):
    config = SessionConfig(num_questions=1, topics=["autograd"], seed=2)
    session, prompt = engine.start(user_id=user, config=config)
    outcome = engine.answer(session_id=session.id, user_id=user, text="Gradients are computed somehow.", code=None)
    related = outcome.evaluation["related"]
    assert 1 <= len(related) <= 3
    ids = by_id(bank)
    assert all(r["id"] in ids and r["id"] != prompt.question_id for r in related)


def test_skipping_a_follow_up_keeps_the_earlier_answer_score(engine, user, bank):
    question = by_id(bank)["relu-autograd-function"]
    config = SessionConfig(num_questions=1, topics=["autograd"], difficulty=3, seed=3)
    session, prompt = engine.start(user_id=user, config=config)
    while prompt.question_id != question.id:
        config = config.model_copy(update={"seed": config.seed + 1})
        session, prompt = engine.start(user_id=user, config=config)
    partial = "You subclass torch.autograd.Function and write static forward and backward methods."
    first = engine.answer(session_id=session.id, user_id=user, text=partial, code=None)
    assert first.prompt.kind is PromptKind.FOLLOW_UP and first.evaluation["score"] > 0
    engine.skip(session_id=session.id, user_id=user)
    state = engine._repo.get_session(session.id, user).state
    assert state["question_scores"][question.id] == first.evaluation["score"]


class CountingStore:
    """The real store, counting the lookups that cost a query embedding or a Chroma read."""

    def __init__(self, inner) -> None:
        self._inner, self.searches, self.catalogs = inner, 0, 0

    def search(self, *args, **kwargs):
        self.searches += 1
        return self._inner.search(*args, **kwargs)

    def search_many(self, queries, **kwargs):
        self.searches += len(queries)
        return self._inner.search_many(queries, **kwargs)

    def catalog(self, *args, **kwargs):
        self.catalogs += 1
        return self._inner.catalog(*args, **kwargs)


def test_warmed_selector_answers_turns_without_new_lookups(repo, ingested_store, bank, scorer, user):
    store = CountingStore(ingested_store)
    engine = InterviewEngine(
        repo=repo, selector=QuestionSelector(store), bank={q.id: q for q in bank},
        scorer=AnswerScorer(evaluator=scorer),
    )
    engine.warm()
    warmed = store.searches
    assert warmed == sum(len(q.rubric) for q in bank)
    config = SessionConfig(num_questions=3, topics=["autograd"])
    run_session(engine, user, config, lambda prompt: "It is something PyTorch does, mostly for speed.")
    run_session(engine, user, config, lambda prompt: "I believe it is handled by the framework itself.")
    assert store.searches == warmed  # related entries for missed points came from the warm cache
    assert store.catalogs == 1  # one question pool per filter, however many turns and sessions


def test_related_entries_merge_the_missed_points_best_first(ingested_store, bank):
    selector = QuestionSelector(ingested_store)
    question = by_id(bank)["zero-grad"]
    missed = [p.description for p in question.rubric]
    merged = selector.related(question.id, question.question, missed)
    assert 1 <= len(merged) <= 3 and question.id not in {r["id"] for r in merged}
    one = selector.related(question.id, question.question, missed[:1])
    best_single = ingested_store.search(f"{question.question} {missed[0]}", k=4)
    assert one[0]["id"] == next(h.id for h in best_single if h.id != question.id)


class SlowPhraser(Phraser):
    """Pauses the thread named "answering" between storing its answer and adding the next turn."""

    def __init__(self) -> None:
        self.reached, self.release = threading.Event(), threading.Event()

    def _pause(self) -> None:
        if threading.current_thread().name == "answering":
            self.reached.set()
            self.release.wait(30)

    def question(self, question, *, number, total):
        self._pause()
        return super().question(question, number=number, total=total)

    def follow_up(self, question, probe, related=None):
        self._pause()
        return super().follow_up(question, probe, related)


@pytest.mark.parametrize("other_process", [False, True], ids=["same-process", "another-process"])
def test_a_poll_while_an_answer_is_scored_adds_no_second_turn(
    tmp_path, repo, ingested_store, bank, scorer, user, other_process
):
    """A page polling the session while an answer is still being handled (in this process or another sharing
    the database: it sees no prompt yet, without waiting for the step) must not take the half-done step (answer
    stored, next turn not yet added) for a crash and add the next turn itself; the answer gets its 200."""
    phraser = SlowPhraser()
    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer), phraser=phraser)
    poller = engine if not other_process else InterviewEngine(
        repo=open_repository(f"sqlite:///{tmp_path / 'interviews.db'}"), selector=QuestionSelector(ingested_store),
        bank=by_id(bank), scorer=AnswerScorer(evaluator=scorer))
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["autograd"], seed=1))
    answered: list = []
    answering = threading.Thread(name="answering", target=lambda: answered.append(engine.answer(
        session_id=session.id, user_id=user, text="It is about gradients.", code=None)))
    answering.start()
    assert phraser.reached.wait(60)
    polled: list = []
    poll = threading.Thread(target=lambda: polled.append(poller.current_prompt(session_id=session.id, user_id=user)))
    poll.start()
    poll.join(5.0)  # the old engine finished the step from here, then the answering request added its turn too
    read_while_handled = not poll.is_alive()
    phraser.release.set()
    answering.join(60)
    poll.join(60)
    turns = repo.turns(session.id)
    assert [t.position for t in turns] == [0, 1] and turns[0].answered and not turns[1].answered
    assert answered[0].prompt.turn == 1
    assert read_while_handled and polled[0] is None
    assert poller.current_prompt(session_id=session.id, user_id=user).turn == 1


def test_an_action_on_a_prompt_another_one_took_says_what_was_done_to_it(engine, user):
    """Answer, skip and "I don't know" sent at once on one prompt: the skip won, and the rest were told "it was
    answered already" (review s56). A refusal names what the winner did: skipped, answered, or "I don't know"."""
    session, _ = engine.start(user_id=user, config=SessionConfig(num_questions=5, topics=["tensors"], seed=2))
    engine.skip(session_id=session.id, user_id=user, turn=0)
    with pytest.raises(ConflictError, match=r"turn 0 is not the current prompt \(turn 1 is\): it was skipped already"):
        engine.answer(session_id=session.id, user_id=user, text="a racing answer", code=None, turn=0)
    engine.dont_know(session_id=session.id, user_id=user, turn=1)
    with pytest.raises(ConflictError, match="turn 1 is not .*: it was answered \u201cI don't know\u201d already"):
        engine.skip(session_id=session.id, user_id=user, turn=1)
    moved = engine.answer(session_id=session.id, user_id=user, text="It is a view of the same storage.", code=None,
                          turn=2)
    with pytest.raises(ConflictError, match="turn 2 is not the current prompt .*: it was answered already"):
        engine.dont_know(session_id=session.id, user_id=user, turn=2)
    assert moved.prompt is not None and moved.prompt.turn == 3


def test_reading_a_session_or_acting_on_another_never_waits_for_a_step_under_way(
    repo, ingested_store, bank, scorer, user, monkeypatch
):
    """A reload while an answer's step waits on a model (minutes with a local LLM) answers at once; another
    session, even one whose id the old striped locks put on the same lock, reads and answers meanwhile."""
    first = uuid.uuid4().hex
    stripe = zlib.crc32(first.encode()) % 64
    second = next(i for i in iter(lambda: uuid.uuid4().hex, None) if zlib.crc32(i.encode()) % 64 == stripe)
    ids = iter([first, second])
    monkeypatch.setattr("app.interview.engine.new_session_id", lambda: next(ids))
    phraser = SlowPhraser()
    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer), phraser=phraser)
    held, _ = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["autograd"], seed=1))
    bob = repo.get_or_create_user("bob").id  # one user's sessions choose questions one at a time (Asker)
    other, other_prompt = engine.start(user_id=bob, config=SessionConfig(num_questions=2, topics=["tensors"], seed=2))
    assert (held.id, other.id) == (first, second)
    answering = threading.Thread(name="answering", target=lambda: engine.answer(
        session_id=held.id, user_id=user, text="It is about gradients.", code=None))
    answering.start()
    try:
        assert phraser.reached.wait(60)
        reload: list = []
        elsewhere: list = []

        def other_session() -> None:
            elsewhere.append(engine.current_prompt(session_id=other.id, user_id=bob))
            elsewhere.append(engine.skip(session_id=other.id, user_id=bob, turn=other_prompt.turn))

        readers = [threading.Thread(target=lambda: reload.append(engine.current_prompt(session_id=held.id,
                                                                                         user_id=user))),
                   threading.Thread(target=other_session)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(10)
        assert [r.is_alive() for r in readers] == [False, False], "waited for the step under way [reload, other]"
        assert reload == [None] and elsewhere[0].turn == 0 and elsewhere[1].prompt.turn == 1
    finally:
        phraser.release.set()
        answering.join(60)


def test_another_user_never_waits_while_the_next_question_is_worded(repo, ingested_store, bank, scorer, user):
    """One user's sessions choose their next question one at a time, held while a model words it (minutes with a
    local LLM). That lock was one of 64 stripes by user id, so a user whose id matched mod 64 waited too."""
    phraser = SlowPhraser()
    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer), phraser=phraser)
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=3, topics=["tensors"], seed=1))
    other = next(u for u in iter(lambda: repo.get_or_create_user(uuid.uuid4().hex).id, None) if u % 64 == user % 64)
    skipping = threading.Thread(name="answering", target=lambda: engine.skip(
        session_id=session.id, user_id=user, turn=prompt.turn))
    skipping.start()
    try:
        assert phraser.reached.wait(60)
        started: list = []
        starting = threading.Thread(target=lambda: started.append(engine.start(
            user_id=other, config=SessionConfig(num_questions=2, topics=["autograd"], seed=2))))
        starting.start()
        starting.join(10)
        assert not starting.is_alive(), "another user's start waited for this user's question to be worded"
        assert started[0][1].turn == 0
    finally:
        phraser.release.set()
        skipping.join(60)


def test_a_retried_answer_is_told_it_was_received_not_that_the_prompt_moved_on(engine, repo, user):
    """A client that gave up waiting for the model (or a resubmit after a reload) sends the same answer again:
    the 409 says the first one was received and scored, and nothing new is recorded."""
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=3, topics=["tensors"], seed=2))
    engine.answer(session_id=session.id, user_id=user, text="A tensor holds numbers.", code=None, turn=prompt.turn)
    turns = len(repo.turns(session.id))
    with pytest.raises(ConflictError, match=r"your answer to turn 0 was received already and has been scored"):
        engine.answer(session_id=session.id, user_id=user, text="A tensor holds numbers.", code=None, turn=prompt.turn)
    with pytest.raises(ConflictError, match="turn 0 is not the current prompt"):  # a different answer: as before
        engine.answer(session_id=session.id, user_id=user, text="Something else.", code=None, turn=prompt.turn)
    assert len(repo.turns(session.id)) == turns


def test_an_action_on_a_prompt_already_answered_is_refused_and_records_nothing(engine, repo, user):
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=3, topics=["tensors"], seed=2))
    assert prompt.turn == 0
    moved = engine.skip(session_id=session.id, user_id=user, turn=prompt.turn)  # the first click
    assert moved.prompt.turn == 1
    with pytest.raises(ConflictError, match="turn 0 is not the current prompt"):
        engine.skip(session_id=session.id, user_id=user, turn=prompt.turn)  # the double click
    with pytest.raises(ConflictError, match="turn 0 is not the current prompt"):
        engine.answer(session_id=session.id, user_id=user, text="a retried answer", code=None, turn=0)
    turns = repo.turns(session.id)
    assert len(turns) == 2 and turns[1].action is None
    assert engine.hint(session_id=session.id, user_id=user, turn=1).prompt.turn == 1


def test_hints_each_point_toward_another_point_and_never_repeat_the_follow_up(engine, user, bank):
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["training-loop"],
                                                                      seed=1))
    question = by_id(bank)[prompt.question_id]
    first, second = (engine.hint(session_id=session.id, user_id=user).message for _ in range(2))
    assert first != second
    heaviest = sorted(question.rubric, key=lambda p: -p.weight)[:2]
    for hint, point in zip((first, second), heaviest, strict=True):  # the two heaviest points, one each
        probe = next((f.prompt for f in question.follow_ups if f.point == point.id and not f.presumes_code), None)
        assert (probe or " ".join(point.description.split()[:4])) in hint


def test_a_hint_on_a_follow_up_names_its_point_once(engine, user):
    session, _ = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["training-loop"], seed=1))
    follow_up = engine.answer(session_id=session.id, user_id=user, text="It resets a thing.", code=None).prompt
    assert follow_up.kind is PromptKind.FOLLOW_UP
    target = engine._repo.turns(session.id)[-1].target_point
    hint = engine.hint(session_id=session.id, user_id=user).message
    described = next(p.description for p in engine._bank[follow_up.question_id].rubric if p.id == target)
    assert follow_up.text not in hint and " ".join(described.split()[:4]) in hint  # the point's topic, in words
    with pytest.raises(ConflictError, match="no more hints"):
        engine.hint(session_id=session.id, user_id=user)


def test_a_late_follow_up_halves_only_what_it_adds(repo, ingested_store, bank, scorer, monkeypatch):
    import app.interview.turns as turns_module  # whose clock times an answer against its limit (turns.late)

    def follow_up_score(late: bool) -> tuple[float, float]:
        engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                                 scorer=AnswerScorer(evaluator=scorer))
        user = repo.get_or_create_user(f"late-{late}").id
        config = SessionConfig(num_questions=1, topics=["training-loop"], seed=1, time_limit_s=30)
        session, prompt = engine.start(user_id=user, config=config)
        monkeypatch.setattr(turns_module, "elapsed_s", lambda _: 1.0)
        first = engine.answer(session_id=session.id, user_id=user, code=None,
                              text="It resets the gradients before the next backward pass.")
        assert first.prompt.kind is PromptKind.FOLLOW_UP
        monkeypatch.setattr(turns_module, "elapsed_s", lambda _: 1000.0 if late else 1.0)
        reference = by_id(bank)[prompt.question_id].reference_answer
        engine.answer(session_id=session.id, user_id=user, text=reference, code=None)
        scores = repo.get_session(session.id, user).state["question_scores"]
        return first.evaluation["score"], scores[prompt.question_id]

    kept, on_time = follow_up_score(late=False)
    assert on_time > kept  # the whole reference adds to a weak first answer
    _, late = follow_up_score(late=True)
    assert late == pytest.approx(kept + (on_time - kept) / 2, abs=0.11)


def naive_log_softmax_followed_up(engine, user, bank) -> tuple[Any, str, list[str]]:
    """The stable log-softmax task answered with the naive formula, which fails large-logits only (scored 3.1: it
    misses max-subtraction alone) and is followed up; the task, the session's id and every code the runner was given."""
    from tests.code_fixtures import NAIVE_LOG_SOFTMAX, ScriptedRunner

    runs: list[str] = []

    class FixedLater:
        def check(self, spec, code, question_id):
            runs.append(code)
            return ScriptedRunner(*(["large-logits"] if code.strip() == NAIVE_LOG_SOFTMAX.strip() else [])).check(
                spec, code, question_id)

    engine._scorer = AnswerScorer(evaluator=engine._scorer._evaluator, code_runner=FixedLater())
    task = by_id(bank)["stable-log-softmax"]
    for seed in range(60):
        session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["autograd"],
                                                                          difficulty=2, seed=seed))
        if prompt.question_id == task.id:
            break
    first = engine.answer(session_id=session.id, user_id=user, text="", code=NAIVE_LOG_SOFTMAX)
    # Only max-subtraction (3 of the checked points' 8) is missed: the naive form is the log-sum-exp form.
    assert first.evaluation["code_score"] == 3.1 and first.prompt.kind is PromptKind.FOLLOW_UP
    # Asked about what failed: the bank's probe for the point the failed check verifies (max-subtraction).
    assert first.prompt.text == next(f.prompt for f in task.follow_ups if f.point == "max-subtraction")
    return task, session.id, runs


def test_code_fixed_on_the_follow_up_about_its_failed_check_is_not_scored_as_right_first_time(engine, user, bank):
    """A naive log-softmax fails the large-logits check; the follow-up asks about that failure, and the fixed code
    sent in answer adds half of what it gains (it scored 5.0, as if it had been right the first time)."""
    task, session_id, _ = naive_log_softmax_followed_up(engine, user, bank)
    fixed = engine.answer(session_id=session_id, user_id=user, text="", code=task.code.solution)
    assert fixed.evaluation["score"] == pytest.approx(3.1 + (5.0 - 3.1) / 2, abs=0.06)
    assert "code fixed on a follow-up: what the new run added is halved" in fixed.evaluation["penalties"]


def test_code_fixed_in_a_fence_on_the_follow_up_is_run_and_charged_as_code_sent_as_code(engine, user, bank):
    """The fix typed in a fence beside words, in answer to the follow-up about the failed check, was never run: the
    score stayed at the first run's and nothing said so. Now it runs as code sent as code would (:code, the code
    box), and what it adds is halved as a fix."""
    task, session_id, runs = naive_log_softmax_followed_up(engine, user, bank)
    words = "exp overflows for large logits; subtract the max first:"
    fixed = engine.answer(session_id=session_id, user_id=user, code=None,
                          text=f"{words}\n```python\n{task.code.solution}\n```")
    assert runs[-1] == task.code.solution.strip()
    assert fixed.message == "The fenced code in your answer defines log_softmax, so it was run as your corrected code."
    assert fixed.evaluation["score"] == pytest.approx(3.1 + (5.0 - 3.1) / 2, abs=0.06)
    assert "code fixed on a follow-up: what the new run added is halved" in fixed.evaluation["penalties"]
    turn = engine._repo.turns(session_id)[1]
    assert (turn.answer_text, turn.answer_code) == (words, task.code.solution.strip())


def test_fenced_code_beside_code_sent_as_code_is_said_to_be_read_as_words(engine, user, bank):
    """A follow-up answered with code in the code box (the editor, :code) and a fix in a fence in the words ran the
    code box's code and read the fence as words, saying nothing: the candidate believed their fix was run."""
    from tests.code_fixtures import NAIVE_LOG_SOFTMAX, ScriptedRunner

    runs: list[str] = []

    class Recording:
        def check(self, spec, code, question_id):
            runs.append(code)
            return ScriptedRunner("large-logits").check(spec, code, question_id)

    engine._scorer = AnswerScorer(evaluator=engine._scorer._evaluator, code_runner=Recording())
    task = by_id(bank)["stable-log-softmax"]
    session = start_at(engine, user, task, difficulty=2)
    assert engine.answer(session_id=session.id, user_id=user, text="", code=NAIVE_LOG_SOFTMAX).prompt.kind is \
        PromptKind.FOLLOW_UP
    edited = NAIVE_LOG_SOFTMAX + "\n# edited\n"
    both = engine.answer(session_id=session.id, user_id=user, code=edited,
                         text=f"Subtract the max:\n```python\n{task.code.solution}\n```")
    assert runs == [NAIVE_LOG_SOFTMAX, edited]
    assert both.message.startswith("The code sent as code was run; the fenced code in your words was read as words")


def test_a_code_task_answered_in_words_asks_for_the_code(engine, user, bank):
    """pairwise-distances answered in words only moved on: its probes left both presume code ("your solution")."""
    from app.interview.followups import SHOW_IN_CODE

    session = start_at(engine, user, by_id(bank)["pairwise-distances"], difficulty=2)
    words = engine.answer(session_id=session.id, user_id=user, code=None,
                          text="I would write it with plain tensor operations.")
    assert words.prompt is not None and words.prompt.kind is PromptKind.FOLLOW_UP
    assert words.prompt.text == SHOW_IN_CODE


class MissesOnly(Evaluator):
    """Reads every answer as covering all points but `missed`: the words answer a probe cannot reach."""

    name = "misses-only"

    def __init__(self, missed: set[str]) -> None:
        self._missed = missed

    def evaluate_many(self, tasks: list[GradingTask]) -> list[Evaluation]:
        return [Evaluation(
            question_id=task.question_id, score=2.0, feedback="", model_answer=task.reference_answer,
            evaluator=self.name, points=[PointVerdict.judged(p, Verdict.MISSED if p.id in self._missed else
                                                             Verdict.COVERED, 0.0, None) for p in task.rubric],
        ) for task in tasks]


def hinted_gru_cell(repo, ingested_store, bank, user, missed: set[str]):
    """gru-cell-from-scratch with both its probes in words given away as hints before the first answer."""
    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=MissesOnly(missed)))
    question = by_id(bank)["gru-cell-from-scratch"]
    session = start_at(engine, user, question, difficulty=question.difficulty)
    hints = [engine.hint(session_id=session.id, user_id=user).message for _ in range(2)]
    in_words = [f.prompt for f in question.follow_ups if not f.presumes_code]
    assert len(in_words) == 2 and all(any(probe in hint for hint in hints) for probe in in_words), hints
    return engine, session, question


def test_a_code_task_whose_probes_in_words_were_hints_asks_for_its_code_once(repo, ingested_store, bank, user):
    """The probes in words given away as hints, the code was asked for aimed at a point that has one, so the next
    answer in words did not count it as asked: "now show it in code" was asked twice in a row."""
    from app.interview.followups import SHOW_IN_CODE

    engine, session, _ = hinted_gru_cell(repo, ingested_store, bank, user, {"candidate-reset", "interpolation"})
    words = engine.answer(session_id=session.id, user_id=user, code=None, text="A GRU gates its hidden state.")
    assert words.prompt is not None and words.prompt.text == SHOW_IN_CODE
    again = engine.answer(session_id=session.id, user_id=user, code=None, text="I would gate it in a loop.")
    assert again.prompt is None or again.prompt.kind is PromptKind.QUESTION, again.prompt


def test_the_point_the_code_request_aimed_at_keeps_its_probe_about_the_code(repo, ingested_store, bank, user):
    """The code request was recorded as a probe of the point it aimed at (stacked-parameters), so once the code came
    that point's own probe about it was never asked and the interview moved on."""
    from app.interview.followups import SHOW_IN_CODE

    missed = {"stacked-parameters", "candidate-reset", "interpolation"}
    engine, session, question = hinted_gru_cell(repo, ingested_store, bank, user, missed)
    words = engine.answer(session_id=session.id, user_id=user, code=None, text="A GRU gates its hidden state.")
    assert words.prompt is not None and words.prompt.text == SHOW_IN_CODE
    code = engine.answer(session_id=session.id, user_id=user, text="", code=question.code.starter)
    about_code = next(f.prompt for f in question.follow_ups if f.point == "stacked-parameters")
    assert code.prompt is not None and code.prompt.text == about_code, code.prompt


def test_code_sent_to_a_server_without_a_sandbox_is_not_asked_for_again(engine, user, bank):
    """With no sandbox (this engine has no runner) code sent is read as text and no run is stored: the follow-up
    must not ask for the code the candidate just sent, and may ask about it."""
    from app.interview.followups import SHOW_IN_CODE

    task = by_id(bank)["pairwise-distances"]
    session = start_at(engine, user, task, difficulty=2)
    sent = engine.answer(session_id=session.id, user_id=user, text="", code=task.code.starter)
    assert sent.message == "code checks are unavailable on this server; your code was read as text only"
    assert sent.prompt is not None and sent.prompt.kind is PromptKind.FOLLOW_UP
    assert sent.prompt.text != SHOW_IN_CODE


def test_code_first_sent_on_a_follow_up_is_not_halved_as_a_fix(engine, user, bank):
    """layer-norm-from-scratch answered in words, then its code sent on the follow-up: what the first run added was
    halved as "code fixed on a follow-up", though no run had failed before it."""
    from tests.code_fixtures import ScriptedRunner

    engine._scorer = AnswerScorer(evaluator=engine._scorer._evaluator, code_runner=ScriptedRunner())
    task = by_id(bank)["layer-norm-from-scratch"]
    session = start_at(engine, user, task, difficulty=task.difficulty)
    words = engine.answer(session_id=session.id, user_id=user, code=None,
                          text="I would write it with plain tensor operations.")
    assert words.prompt is not None and words.prompt.kind is PromptKind.FOLLOW_UP
    code = engine.answer(session_id=session.id, user_id=user, text="", code=task.code.solution)
    assert code.code_result["status"] == "passed"
    assert not [n for n in code.evaluation.get("penalties", []) if "code fixed" in n]
    # The run's whole share: every check passed, and how LayerNorm differs from batch norm, which the question asks
    # for in words, is not said (7 of the 9 points' weight).
    assert code.evaluation["score"] == pytest.approx(5 * 7 / 9, abs=0.06)


def test_words_beside_passing_code_add_to_its_score_and_never_take_from_it(scorer, bank):
    from app.interview.followups import choose_follow_up

    class PassingRunner:
        def check(self, spec, code, question_id):
            return {"status": "passed", "score": 1.0, "passed_checks": 4, "total_checks": 4, "checks": []}

    question = by_id(bank)["relu-autograd-function"]
    answer_scorer = AnswerScorer(evaluator=scorer, code_runner=PassingRunner())
    code_only = answer_scorer.score(question, text="", code=question.code.solution, earlier=[])
    with_words = answer_scorer.score(question, text="I would check it with gradcheck.", code=question.code.solution,
                                     earlier=[])
    assert code_only.score == with_words.score == 5.0 and with_words.evaluation["rubric_score"] < 4.5
    assert choose_follow_up(question, with_words.rubric, score=with_words.score, asked=0, probed=[]) is None


def test_a_hint_given_by_another_process_while_an_answer_is_scored_is_never_free(
    tmp_path, repo, ingested_store, bank, scorer, user
):
    """Two servers on one database: a hint asked for at one while the other scores the answer to that turn.
    The answer was charged for the hints it saw, so it is refused (nothing recorded) and charged on resending;
    a hint that comes after the answer is stored is refused, as it could never be charged."""
    other = InterviewEngine(repo=open_repository(f"sqlite:///{tmp_path / 'interviews.db'}"),
                            selector=QuestionSelector(ingested_store), bank=by_id(bank),
                            scorer=AnswerScorer(evaluator=scorer))

    class HintMeanwhile(AnswerScorer):
        def score(self, question, **kwargs):
            other.hint(session_id=session.id, user_id=user, turn=0)
            return super().score(question, **kwargs)

    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=HintMeanwhile(evaluator=scorer))
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=2))
    answer = by_id(bank)[prompt.question_id].reference_answer
    with pytest.raises(ConflictError, match="a hint was given on turn 0 while this answer was scored"):
        engine.answer(session_id=session.id, user_id=user, text=answer, code=None, turn=0)
    assert not repo.turns(session.id)[0].answered and repo.turns(session.id)[0].hints_used == 1
    resent = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer))
    outcome = resent.answer(session_id=session.id, user_id=user, text=answer, code=None, turn=0)
    assert outcome.evaluation["penalties"] == ["1 hint(s) used: -0.5 points"]
    first = repo.turns(session.id)[0]
    with pytest.raises(ConflictError, match="answered meanwhile"):
        repo.add_hint(first.id, seen=first.hints_used)
    assert repo.turns(session.id)[0].hints_used == 1


def test_a_hint_on_a_follow_up_costs_its_points_when_the_follow_up_is_given_up(engine, user):
    for action in ("skip", "dont_know"):
        session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["training-loop"],
                                                                          seed=1))
        first = engine.answer(session_id=session.id, user_id=user, code=None,
                              text="It resets the gradients before the next backward pass.")
        assert first.prompt.kind is PromptKind.FOLLOW_UP and first.evaluation["score"] >= 0.5
        engine.hint(session_id=session.id, user_id=user)
        given_up = getattr(engine, action)(session_id=session.id, user_id=user)
        state = engine._repo.get_session(session.id, user).state
        assert state["question_scores"][prompt.question_id] == round(first.evaluation["score"] - 0.5, 1)
        assert given_up.evaluation["penalties"] == ["1 hint(s) used on the follow-up: -0.5 points"]
        assert "earlier answer stands, less 0.5 points for the 1 hint(s) taken on this follow-up." in \
            given_up.evaluation["feedback"]


def test_a_late_follow_up_charges_a_hint_taken_before_the_first_answer_once(
    repo, ingested_store, bank, scorer, monkeypatch
):
    import app.interview.turns as turns_module  # whose clock times an answer against its limit (turns.late)

    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer))
    user = repo.get_or_create_user("hinted").id
    config = SessionConfig(num_questions=1, topics=["training-loop"], seed=1, time_limit_s=30)
    session, prompt = engine.start(user_id=user, config=config)
    monkeypatch.setattr(turns_module, "elapsed_s", lambda _: 1.0)
    engine.hint(session_id=session.id, user_id=user)
    text = "It resets the gradients before the next backward pass."
    first = engine.answer(session_id=session.id, user_id=user, code=None, text=text)
    assert first.prompt.kind is PromptKind.FOLLOW_UP and first.evaluation["penalties"]
    monkeypatch.setattr(turns_module, "elapsed_s", lambda _: 1000.0)
    engine.answer(session_id=session.id, user_id=user, text=text, code=None)  # adds nothing, and is late
    late = repo.get_session(session.id, user).state["question_scores"][prompt.question_id]
    assert late == pytest.approx(first.evaluation["score"], abs=0.11)  # not the hint charged a second time


def test_the_code_run_is_counted_only_for_code_on_the_current_code_prompt(engine, user, bank):
    runs: list[str] = []
    concept, _ = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["deployment"], seed=1))
    engine.answer(session_id=concept.id, user_id=user, text="words", code="x = 1",
                  before_code_run=lambda: runs.append("concept"))
    task = next(q for q in bank if q.code is not None)
    for seed in range(40):
        session, prompt = engine.start(user_id=user, config=SessionConfig(
            num_questions=1, topics=[task.topic.value], seed=seed))
        if prompt.code_contract:
            break
    with pytest.raises(ConflictError):  # a stale answer is refused before anything is counted
        engine.answer(session_id=session.id, user_id=user, text=None, code="x = 1", turn=1,
                      before_code_run=lambda: runs.append("stale"))
    engine.answer(session_id=session.id, user_id=user, text=None, code="x = 1", turn=0,
                  before_code_run=lambda: runs.append("code"))
    assert runs == ["code"]


def test_a_late_answer_stays_halved_when_a_follow_up_on_time_adds_nothing(
    repo, ingested_store, bank, scorer, monkeypatch
):
    import app.interview.turns as turns_module  # whose clock times an answer against its limit (turns.late)

    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer))
    user = repo.get_or_create_user("slow").id
    session, prompt = engine.start(user_id=user, config=SessionConfig(
        num_questions=1, topics=["training-loop"], seed=1, time_limit_s=30))
    monkeypatch.setattr(turns_module, "elapsed_s", lambda _: 1000.0)
    first = engine.answer(session_id=session.id, user_id=user, code=None,
                          text="It resets the gradients before the next backward pass.")
    assert first.prompt.kind is PromptKind.FOLLOW_UP and first.evaluation["score"] > 0
    monkeypatch.setattr(turns_module, "elapsed_s", lambda _: 1.0)
    quick = engine.answer(session_id=session.id, user_id=user, text="That is all I can say about it.", code=None)
    assert quick.evaluation["score"] == pytest.approx(first.evaluation["score"], abs=0.11)  # not back to whole
    # The note is the first answer's: the follow-up answered in time showed it as its own (review s50); the
    # question's notes, which its report lists, keep it.
    assert first.evaluation["penalties"] == ["answered after the 30s limit: score halved"]
    assert quick.evaluation["penalties"] == []
    assert quick.evaluation["question_penalties"] == ["answered after the 30s limit: score halved"]


def test_code_pasted_in_a_fence_into_the_words_is_run_and_read_as_code_by_the_follow_up(engine, user, bank):
    class CountingRunner:
        def __init__(self):
            self.runs = []

        def check(self, spec, code, question_id):
            self.runs.append(code)
            return {"status": "failed", "score": 0.0, "checks": []}  # failing, so a follow-up comes

    runner = CountingRunner()
    engine._scorer = AnswerScorer(evaluator=engine._scorer._evaluator, code_runner=runner)
    task = by_id(bank)["relu-autograd-function"]
    for seed in range(60):
        session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["autograd"],
                                                                          seed=seed))
        if prompt.question_id == task.id:
            break
    code = task.code.solution
    outcome = engine.answer(session_id=session.id, user_id=user, code=None,
                            text=f"I subclass autograd.Function.\n```python\n{code}\n```")
    assert runner.runs == [code.strip()] and outcome.evaluation["code_score"] == 0.0
    assert outcome.message.startswith("The fenced code in your answer was run as your code.")
    earlier = engine._repo.get_session(session.id, user).state["answers_so_far"]
    assert earlier == [f"I subclass autograd.Function.\n```python\n{code.strip()}\n```"]
    # A snippet in answer to the follow-up illustrates a point: not run (it does not define MyReLU), and said so.
    assert outcome.prompt.kind is PromptKind.FOLLOW_UP
    snippet = engine.answer(session_id=session.id, user_id=user, code=None,
                            text="Call it as\n```python\nMyReLU.apply(x)\n```")
    assert len(runner.runs) == 1
    assert snippet.message.startswith("The fenced code in your answer was not run: on a follow-up, code runs as a "
                                      "new submission only when it is a whole solution defining MyReLU")


def test_a_fixed_level_that_runs_out_says_so_once(engine, user, bank):
    easy = [q for q in bank if q.topic.value == "autograd" and q.difficulty == 1]
    config = SessionConfig(num_questions=len(easy) + 2, topics=["autograd"], difficulty=1, seed=1)
    session, prompts, _ = run_session(engine, user, config, lambda p: "It tracks operations.")
    levels = [p.difficulty for p in prompts if p.kind is PromptKind.QUESTION]
    assert levels[: len(easy)] == [1] * len(easy) and set(levels[len(easy):]) - {1}  # unseen before the level
    notes = engine._repo.get_session(session.id, user).state["notes"]
    assert sum("No question at difficulty 1 that you have not seen is left" in n for n in notes) == 1


def test_a_fixed_level_is_kept_before_topics_spread_and_its_end_is_told_with_that_question(engine, user, bank):
    """Difficulty 3 over tensors and performance-memory asked a tensors question at difficulty 2, saying nothing,
    while unseen difficulty-3 questions of performance-memory were left: the topics' spread came first."""
    topics = ["performance-memory", "tensors"]
    hard = [q for q in bank if q.topic.value in topics and q.difficulty == 3]
    config = SessionConfig(num_questions=len(hard) + 1, topics=topics, difficulty=3, seed=5)
    _, prompts, _ = run_session(engine, user, config, lambda p: "It is about memory.")
    main = [p for p in prompts if p.kind is PromptKind.QUESTION]
    assert [p.difficulty for p in main[:-1]] == [3] * len(hard) and main[-1].difficulty != 3, main
    assert not [n for p in prompts[:prompts.index(main[-1])] for n in p.notes if "difficulty" in n]
    assert any("No question at difficulty 3 that you have not seen is left" in n for n in main[-1].notes)


def test_an_interview_does_not_say_the_level_its_own_answers_reached_while_its_scores_are_withheld(
        engine, user, bank):
    """In interview mode the scores wait for the end, yet a strong candidate read "Your answers put you at difficulty
    3, but no question at that level ... is left" on a prompt: their own answers' level, said while their report was
    a 409. An interview holds it until it ends, then says it (in its notes and report), naming the question; a
    practice session says it at once (the test above)."""
    from app.interview.models import Mode

    bank_map = by_id(bank)
    hard = [q for q in bank if q.topic.value == "autograd" and q.difficulty == 3]
    config = SessionConfig(num_questions=len(hard) + 3, topics=["autograd"], seed=2, mode=Mode.INTERVIEW)
    session, prompt = engine.start(user_id=user, config=config)
    told = list(prompt.notes)
    while prompt is not None:
        outcome = engine.answer(session_id=session.id, user_id=user, text=bank_map[prompt.question_id].reference_answer,
                                code=None)
        prompt = outcome.prompt
        stored = engine._repo.get_session(session.id, user)
        if prompt is not None:
            told += [*prompt.notes, *stored.state["notes"]]
            assert not any("Your answers put you at difficulty" in n for n in told), told
    ended = engine._repo.get_session(session.id, user)
    assert ended.status == "completed"
    assert any(n.startswith("Question ") and ": Your answers put you at difficulty 3, but no question at that level"
               in n and n.endswith(", so it is at difficulty 2.") for n in ended.state["notes"]), ended.state["notes"]


def test_an_interview_ended_early_tells_the_level_note_it_held(engine, user, bank):
    """Ended early (Finish), an interview tells what it held until its end as well as when it runs its course."""
    from app.interview.models import Mode

    bank_map = by_id(bank)
    hard = [q for q in bank if q.topic.value == "autograd" and q.difficulty == 3]
    config = SessionConfig(num_questions=len(hard) + 3, topics=["autograd"], seed=2, mode=Mode.INTERVIEW)
    session, prompt = engine.start(user_id=user, config=config)
    while not engine._repo.get_session(session.id, user).state["held_notes"]:
        prompt = engine.answer(session_id=session.id, user_id=user, text=bank_map[prompt.question_id].reference_answer,
                               code=None).prompt
    ended = engine.finish(session_id=session.id, user_id=user)
    assert any("Your answers put you at difficulty 3" in n for n in ended.notes), ended.notes
    state = engine._repo.get_session(session.id, user).state
    assert state["held_notes"] == [] and any("Your answers put you at difficulty 3" in n for n in state["notes"])


def test_the_prompt_words_do_not_repeat_its_number_or_kind(engine, user, bank):
    """Every screen titles a prompt "Question 2 of 5" or "follow-up" from its fields; the words said it again
    ("Question 2 of 5. Question 2 of 5. What is..." on the terminal, "Follow-up: Follow-up: ..." in the report)."""
    bank_map = by_id(bank)
    config = SessionConfig(num_questions=2, topics=["autograd"], seed=1)
    _, prompts, _ = run_session(engine, user, config, lambda p: "It tracks operations.")
    main = [p for p in prompts if p.kind is PromptKind.QUESTION]
    assert main[1].text == bank_map[main[1].question_id].question
    probes = {f.prompt for q in bank for f in q.follow_ups}
    follow_ups = [p for p in prompts if p.kind is PromptKind.FOLLOW_UP]
    assert follow_ups and all(p.text in probes for p in follow_ups), follow_ups


def test_an_adaptive_level_that_runs_out_says_so_and_one_that_never_was_says_that(engine, user, bank):
    """A strong candidate's level rises to 3; once the topic's hardest questions are used up, the easier ones
    that come are explained (the session once fell silently to difficulty 1)."""
    bank_map = by_id(bank)
    hard = [q for q in bank if q.topic.value == "autograd" and q.difficulty == 3]
    config = SessionConfig(num_questions=len(hard) + 3, topics=["autograd"], seed=2)
    session, _, _ = run_session(engine, user, config, lambda p: bank_map[p.question_id].reference_answer)
    notes = engine._repo.get_session(session.id, user).state["notes"]
    assert any("Your answers put you at difficulty 3, but no question at that level that you have not seen is left"
               in n for n in notes), notes
    levels = {t: {q.difficulty for q in bank if q.topic.value == t} for t in sorted({q.topic.value for q in bank})}
    lacking = [(t, min({1, 2, 3} - held)) for t, held in levels.items() if {1, 2, 3} - held]
    if lacking:  # a topic whose questions cover only some levels (none in this bank: every level has two or more)
        topic, level = lacking[0]
        session, _ = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=[topic], difficulty=level))
        assert any(f"These topics have no question at difficulty {level}" in n for n in session.state["notes"])


@pytest.mark.parametrize(
    ("raw", "follow_up", "kept", "raw_before", "hints_on_question", "hints_on_turn", "late_after_s", "score"),
    [
        (4.0, False, 0.0, None, 1, 1, None, 3.5),
        (4.0, False, 0.0, None, 0, 0, 60, 2.0),
        # A follow-up adds its gain over the raw score before it, not over the (penalised) score kept.
        (3.0, True, 1.0, 2.0, 0, 0, None, 2.0),
        (3.0, True, 1.0, 2.0, 1, 0, 60, 1.5),
        (1.5, True, 1.0, 2.0, 0, 0, 60, 0.5),  # a loss counts whole, late or not
        # An older session stored no raw score: the score kept stands in; this turn's hint is charged.
        (3.0, True, 2.5, None, 1, 1, None, 2.5),
    ],
)
def test_each_penalty_is_charged_once_along_a_question(
    raw, follow_up, kept, raw_before, hints_on_question, hints_on_turn, late_after_s, score
):
    from app.interview.penalties import charge_answer

    charged = charge_answer(raw, follow_up=follow_up, kept=kept, raw_before=raw_before, earlier_notes=[],
                            hints_on_question=hints_on_question, hints_on_turn=hints_on_turn,
                            late_after_s=late_after_s)
    assert charged.score == pytest.approx(score)
    assert bool(late_after_s) == any("limit" in n for n in charged.notes)
    # A turn's notes name its own hints; the question's restate all its hints (the earlier ones were charged before).
    assert bool(hints_on_turn) == any("hint(s) used" in n for n in charged.notes)
    assert bool(hints_on_question) == any("hint(s) used" in n for n in charged.question_notes)


def test_a_given_up_follow_up_keeps_the_score_less_only_its_own_hints():
    from app.interview.penalties import charge_give_up

    kept = charge_give_up(3.0, earlier_notes=["x"], hints_on_turn=0)
    assert (kept.score, kept.notes, kept.question_notes) == (3.0, [], ["x"])
    given_up = charge_give_up(3.0, earlier_notes=["x"], hints_on_turn=2)
    assert given_up.score == 2.0 and given_up.notes == ["2 hint(s) used on the follow-up: -1.0 points"]
    assert given_up.question_notes == ["x", *given_up.notes]


def test_sessions_started_together_never_share_a_question(engine, user):
    """A double-click on Start, or an integrator opening sessions in parallel: each new question is chosen
    with the others' already taken, one session at a time per user."""
    barrier = threading.Barrier(4)
    firsts: list[str] = []

    def start() -> None:
        barrier.wait()
        _, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["tensors"], seed=7))
        firsts.append(prompt.question_id)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(firsts) == 4 and len(set(firsts)) == 4, firsts


def test_a_report_stays_as_asked_when_the_pack_is_edited_later(engine, repo, user, bank):
    """The question's text and rubric in a report are those the candidate was asked and judged by, stored when
    asked: an edited pack changes the next sessions, not the reports of earlier ones."""
    from app.reports import build_report, render

    session, prompts, _ = run_session(engine, user, SessionConfig(num_questions=2, topics=["autograd"], seed=3),
                                      lambda prompt: "Autograd records the operations in a graph.")
    asked = by_id(bank)
    before = build_report(session=repo.get_session(session.id, user), turns=repo.turns(session.id), bank=asked)
    edited = dict(asked)
    for prompt in prompts:
        entry = asked[prompt.question_id]
        rubric = [p.model_copy(update={"description": f"Edited later: point {p.id} now asks something else."})
                  for p in entry.rubric[1:]]
        edited[entry.id] = entry.model_copy(update={"question": "Edited later: a different question entirely?",
                                                    "rubric": rubric})
    after = build_report(session=repo.get_session(session.id, user), turns=repo.turns(session.id), bank=edited)
    assert after == before
    assert render(after, "markdown")[0] == render(before, "markdown")[0]
    first = asked[prompts[0].question_id]
    assert before.questions[0].question == first.question
    missed = {p.point_id for p in before.questions[0].missed}
    assert missed and missed <= {p.id for p in first.rubric}


def test_an_answer_after_the_pack_is_edited_is_judged_against_the_question_asked(repo, user, bank, ingested_store,
                                                                                  scorer, engine):
    """A restart with an edited pack while a session is open: the answer is scored on the rubric the candidate was
    asked (the one its report lists), not on the pack as it is now."""
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["autograd"], seed=3))
    asked = by_id(bank)[prompt.question_id]
    rubric = [p.model_copy(update={"id": f"edited-{p.id}", "description": f"Edited later: {p.id} asks otherwise."})
              for p in asked.rubric]
    edited = asked.model_copy(update={"rubric": rubric, "follow_ups": [], "question": "Edited later: what else?"})
    restarted = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), scorer=AnswerScorer(
        evaluator=scorer), bank={**by_id(bank), asked.id: edited})
    assert restarted.current_prompt(session_id=session.id, user_id=user).text == prompt.text
    restarted.answer(session_id=session.id, user_id=user, text=asked.reference_answer, code=None)
    judged = repo.turns(session.id)[0].evaluation
    assert [p["point_id"] for p in judged["points"]] == [p.id for p in asked.rubric]
    assert judged["score"] >= 3.5  # the model answer of the question asked, judged by its own rubric


def test_a_turn_stored_with_the_older_short_copy_is_judged_by_its_text_and_rubric(bank):
    """Turns stored before whole entries were kept have the question's text, reference and rubric only: those
    parts as asked, the rest (phrasings of an unchanged point, wrong claims, code) from the bank."""
    from app.interview.asked import as_asked
    from app.interview.models import AskedQuestion

    entry = by_id(bank)["zero-grad"]
    short = AskedQuestion.of(entry).model_dump(mode="json")
    short["rubric"][0]["description"] = "Stated when asked: a point the pack has reworded since."
    now = entry.model_copy(update={"question": "Edited later: what else?", "rubric": entry.rubric[1:]})
    judged = as_asked(short, now)
    assert judged.question == entry.question and [p.id for p in judged.rubric] == [p.id for p in entry.rubric]
    assert judged.rubric[0].evidence == ["Stated when asked: a point the pack has reworded since."]
    assert judged.rubric[1] == entry.rubric[1] and judged.misconceptions == entry.misconceptions
    assert as_asked(short, None) is None and as_asked(None, entry) is entry


def test_a_start_raced_by_more_sessions_than_any_fixed_number_of_tries_still_gets_its_question(
    repo, user, ingested_store, bank, scorer
):
    """Another process gives the user a question between this start's choice and its insert, twelve times over:
    each refusal is a race lost to a session that did get its question, so the start chooses again until it is
    recorded, never a 409, and still repeats none of theirs."""
    def engine_on(store_repo):
        return InterviewEngine(repo=store_repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                               scorer=AnswerScorer(evaluator=scorer))

    other, config = engine_on(repo), SessionConfig(num_questions=1, seed=5)
    theirs: list[str] = []

    class RacedRepo:
        races = 12

        def __getattr__(self, name):
            return getattr(repo, name)

        def open_session(self, *args, **kwargs):  # a start's first question is stored with its session
            if kwargs.get("user_asked") is not None and self.races:
                self.races -= 1
                theirs.append(other.start(user_id=user, config=config)[1].question_id)
            return repo.open_session(*args, **kwargs)

    raced = RacedRepo()
    _, prompt = engine_on(raced).start(user_id=user, config=config)
    assert raced.races == 0 and len(theirs) == len(set(theirs)) == 12
    assert prompt.question_id not in theirs


RACING_STARTER = """
import sys, time
from pathlib import Path
from app.interview.engine import InterviewEngine
from app.interview.models import SessionConfig
from app.interview.phrasing import Phraser
from app.interview.scoring import AnswerScorer
from app.interview.selection import QuestionSelector
from app.store import open_repository
from evaluators.rubric import RubricScorer
from knowledge.embeddings import HashingEmbedder
from knowledge.loader import bank_index
from knowledge.vectorstore import SearchHit

url, gate, me, starters = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
bank = bank_index()


class BankCatalog:  # the pool straight from the bank: no Chroma shared between processes
    def catalog(self, filters):
        return [SearchHit(id=q.id, question=q.question, topic=q.topic.value, difficulty=q.difficulty,
                          framework=q.framework.value, kind=q.kind.value, score=0.0)
                for q in bank.values() if q.topic.value in filters["topic"]]


class MeetingPhraser(Phraser):
    \"\"\"Words the first question only once every starter has chosen its own: each has read the history
    before any records a question, the moment two API workers can meet at.\"\"\"

    met = False

    def question(self, question, *, number, total):
        if not self.met:
            (gate / me).touch()
            deadline = time.monotonic() + 600  # only a starter that crashed keeps the others this long
            while len(list(gate.iterdir())) < starters:
                assert time.monotonic() < deadline, "the other starters never chose"
                time.sleep(0.02)
            self.met = True
        return super().question(question, number=number, total=total)


repo = open_repository(url)
engine = InterviewEngine(repo=repo, selector=QuestionSelector(BankCatalog()), bank=bank,
                         scorer=AnswerScorer(evaluator=RubricScorer(HashingEmbedder())), phraser=MeetingPhraser())
user = repo.get_or_create_user("dana").id
_, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["tensors"], seed=7))
print(prompt.question_id, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_sessions_started_together_in_separate_processes_never_share_a_question(backend, request, tmp_path):
    """Two API workers (or the CLI beside the API) starting sessions for one user at once: every starter has
    chosen before any records its question, and still each first question differs."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        url = request.getfixturevalue("postgres_server").create_database()
    open_repository(url)  # migrated once, before the starters
    gate, starters = tmp_path / "gate", 4
    gate.mkdir()
    with ThreadPoolExecutor(max_workers=starters) as together:
        done = list(together.map(lambda n: run_bounded(
            [sys.executable, "-c", RACING_STARTER, url, str(gate), str(n), str(starters)], cwd=REPO, text=True),
            range(starters)))
    assert [d.returncode for d in done] == [0] * starters, [d.stderr[-2000:] for d in done]
    firsts = [d.stdout.strip() for d in done]
    assert len(set(firsts)) == starters, firsts


def test_weak_topics_of_earlier_sessions_come_back_in_part_and_say_why(engine, repo, user, bank):
    """Review is spread: a weak topic from an earlier session takes at most 40% of the next one (the
    topics done well still come up), and the session says why it came back; a weak answer in this
    session does not turn the rest of it into review."""
    bank_map = by_id(bank)
    topics = ["autograd", "training-loop", "tensors", "modules"]
    weak = "training-loop"

    def answer(p):  # strong everywhere but the weak topic
        return "I am not sure, something with loops." if p.topic == weak else bank_map[p.question_id].reference_answer

    first, prompts, _ = run_session(engine, user, SessionConfig(num_questions=5, topics=topics, seed=3), answer)
    assert sum(p.topic == weak for p in prompts if p.kind is PromptKind.QUESTION) <= 2  # no review in session 1
    assert not any("comes back for review" in n for n in repo.get_session(first.id, user).state["notes"])
    if not any(p.topic == weak for p in prompts):  # the draw left the weak topic out: make it weak by hand
        run_session(engine, user, SessionConfig(num_questions=1, topics=[weak], seed=3), answer)
    second, prompts, _ = run_session(engine, user, SessionConfig(num_questions=5, topics=topics, seed=4), answer)
    asked = [p.topic for p in prompts if p.kind is PromptKind.QUESTION]
    assert asked[:2] == [weak, weak] and asked.count(weak) == 2, asked
    assert any(f"{weak} comes back for review" in n for n in repo.get_session(second.id, user).state["notes"])


def test_an_unfinished_interview_hides_its_scores_from_review_but_not_its_questions(engine, repo, user):
    """A reviewer answered an interview-mode session's first question badly and, without ending it, started a
    practice session on the topic: its notes said "deployment comes back for review: your latest answers on it
    averaged 0.7 / 5" while that interview's report was still withheld. Its scores stay out of other sessions until
    it ends; its questions are still not asked again; once it ends its answers count as any others."""
    topic, review = "deployment", "deployment comes back for review"
    config = SessionConfig(num_questions=3, topics=[topic], seed=1)
    interview, first = engine.start(user_id=user, config=config.model_copy(update={"mode": Mode.INTERVIEW}))
    engine.answer(session_id=interview.id, user_id=user, text="You deploy it somehow on a server, I think.", code=None)
    assert repo.question_scores(user)[0].score < 2  # weak: a completed session's would bring the topic back

    practice, prompt = engine.start(user_id=user, config=config.model_copy(update={"num_questions": 1}))
    assert not any(review in n for n in repo.get_session(practice.id, user).state["notes"])
    assert prompt.question_id != first.question_id  # the interview's question is still not asked again
    engine.finish(session_id=practice.id, user_id=user)

    engine.finish(session_id=interview.id, user_id=user)
    later, _ = engine.start(user_id=user, config=config)
    assert any(review in n for n in repo.get_session(later.id, user).state["notes"])


def test_an_adaptive_session_starts_where_the_last_answers_left_off(engine, user, bank):
    bank_map = by_id(bank)
    config = SessionConfig(num_questions=3, topics=["autograd", "tensors", "modules"], seed=5)
    assert engine.start(user_id=user, config=config)[0].state["target_difficulty"] == 2  # no history
    run_session(engine, user, config, lambda p: bank_map[p.question_id].reference_answer)
    session, _ = engine.start(user_id=user, config=config)
    assert session.state["target_difficulty"] == 3


def test_a_weak_topic_met_after_the_review_share_is_used_is_not_called_review():
    """A re-check saw 3-4 "comes back for review" notes in a 6-question session capped at 2 review questions:
    a weak topic drawn for spread once the share is used is no review."""
    from app.interview.models import SessionState
    from app.interview.selection import History, why_chosen
    from knowledge.vectorstore import SearchHit

    history = History(weak_topics={"autograd": 1.0})
    hit = SearchHit(id="x", question="q", topic="autograd", difficulty=2, framework="pytorch", kind="concept",
                    score=1.0)
    config = SessionConfig(num_questions=5)
    assert any("comes back for review" in n for n in why_chosen(
        hit, config=config, state=SessionState(asked_topics=["autograd"]), history=history, pool=[hit]))
    assert not any("comes back for review" in n for n in why_chosen(
        hit, config=config, state=SessionState(asked_topics=["autograd", "autograd"]), history=history, pool=[hit]))


def test_an_adaptive_level_is_called_the_one_the_answers_reached_and_the_starting_one_goes_unsaid():
    """An adaptive session told a candidate who never chose a level "These topics have no question at difficulty 1,
    so the questions are at other levels" (review s49)."""
    from app.interview.models import SessionState
    from app.interview.selection import History, why_chosen
    from knowledge.vectorstore import SearchHit

    hit = SearchHit(id="x", question="q", topic="autograd", difficulty=3, framework="pytorch", kind="concept",
                    score=1.0)
    adaptive = SessionConfig(num_questions=3)
    assert why_chosen(hit, config=adaptive, state=SessionState(), history=History(), pool=[hit]) == []
    weak = SessionState(topic_levels={"autograd": 1}, question_scores={"q0": 1.0})
    assert why_chosen(hit, config=adaptive, state=weak, history=History(), pool=[hit]) == [
        "Your answers put you at difficulty 1, but these topics have no question at that level, so this one is at "
        "difficulty 3."]
    chosen = SessionConfig(num_questions=3, difficulty=1)
    assert why_chosen(hit, config=chosen, state=SessionState(), history=History(), pool=[hit]) == [
        "These topics have no question at difficulty 1, so the questions are at other levels."]


def test_the_starting_level_no_answer_moved_is_not_said_to_be_where_the_answers_put_the_candidate():
    """A two-question pack, both at difficulty 1: the first came at 1 with no note, and after a middling answer the
    second said "Your answers put you at difficulty 2", the level the session started at, which no answer set
    (review s56). The note says it is the starting level the answers left alone; a level an answer did move, or
    one read from earlier sessions, is still put down to the answers."""
    from app.interview.models import Mode, SessionState
    from app.interview.selection import History, held_until_the_end, why_chosen
    from knowledge.vectorstore import SearchHit

    first, second = (SearchHit(id=i, question="q", topic="autograd", difficulty=1, framework="pytorch",
                               kind="concept", score=1.0) for i in ("a", "b"))
    middling = SessionState(target_difficulty=2, topic_levels={"autograd": 2}, asked=["a"], question_scores={"a": 3.0},
                            question_number=1)
    said = ("Difficulty 2 is where a session starts and your answers so far have left you there, but these topics "
            "have no question at that level, so this one is at difficulty 1.")
    practice = SessionConfig(num_questions=2)
    assert why_chosen(second, config=practice, state=middling, history=History(), pool=[first, second]) == [said]
    interview = SessionConfig(num_questions=2, mode=Mode.INTERVIEW)  # the answers' level waits for the end there
    assert held_until_the_end(second, config=interview, state=middling, history=History(),
                              pool=[first, second]) == [f"Question 2: {said.replace('this one is', 'it is')}"]
    earlier = History(latest_scores=[3.0], standing={"autograd": 3.0})
    assert why_chosen(second, config=practice, state=middling, history=earlier, pool=[first, second]) == [
        "Your answers put you at difficulty 2, but these topics have no question at that level, so this one is at "
        "difficulty 1."]


def test_a_question_chosen_though_seen_before_is_said_to_be_a_repeat():
    """A re-check started 12 sessions of one user at once on autograd's 10 questions: two repeated a question
    and neither said so (the note was decided by the count of new questions read before the others chose)."""
    from datetime import UTC, datetime

    from app.interview.models import SessionState
    from app.interview.selection import History, why_chosen
    from knowledge.vectorstore import SearchHit

    hit = SearchHit(id="x", question="q", topic="autograd", difficulty=2, framework="pytorch", kind="concept",
                    score=1.0)
    config, state = SessionConfig(num_questions=1), SessionState()
    seen = History(seen={"x": datetime(2026, 1, 1, tzinfo=UTC)})
    assert any("asked every question in these topics before" in n
               for n in why_chosen(hit, config=config, state=state, history=seen, pool=[hit]))
    assert not any("asked every question" in n
                   for n in why_chosen(hit, config=config, state=state, history=History(), pool=[hit]))


def test_a_topic_not_yet_asked_starts_from_the_users_latest_answers_on_it():
    from app.interview.models import SessionState
    from app.interview.selection import History, level_for

    history = History.from_scores({}, [("autograd", 4.8)] * 3 + [("tensors", 0.5)] * 3)
    state, adaptive = SessionState(target_difficulty=2, topic_levels={"modules": 3}), SessionConfig()
    levels = {t: level_for(t, config=adaptive, state=state, history=history)
              for t in ("autograd", "tensors", "modules", "distributed")}
    assert levels == {"autograd": 3, "tensors": 1, "modules": 3, "distributed": 2}
    assert level_for("autograd", config=SessionConfig(difficulty=1), state=state, history=history) == 1


NO_CLAMP_DISTANCES = """import torch


def pairwise_distances(x, y):
    squared = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2 * x @ y.T
    return squared.sqrt()
"""


def start_at(engine, user, question, **config):
    """A session whose first question is `question` (the seed that draws it first)."""
    for seed in range(200):
        session, prompt = engine.start(user_id=user, config=SessionConfig(
            num_questions=1, topics=[question.topic.value], seed=seed, **config))
        if prompt.question_id == question.id:
            return session
        engine.finish(session_id=session.id, user_id=user)
    raise AssertionError(f"no seed draws {question.id} first")


SHARED_BEST_STATE = '''import math
import torch


class EarlyStopping:
    def __init__(self, patience: int, min_delta: float = 0.0):
        self.patience = patience
        self.min_delta = min_delta
        self.best_loss = math.inf
        self.counter = 0
        self.best_state = None

    def step(self, val_loss: float, model: torch.nn.Module) -> bool:
        if val_loss < self.best_loss:
            self.best_loss = val_loss
            self.counter = 0
            self.best_state = model.state_dict()
        else:
            self.counter += 1
        return self.counter > self.patience
'''

# The fix: the best state kept as a copy of the weights, not a reference to them.
CLONED_BEST_STATE = SHARED_BEST_STATE.replace(
    "model.state_dict()", "{k: v.detach().clone() for k, v in model.state_dict().items()}")


def test_a_wrong_line_of_code_replaced_by_a_fix_is_not_charged_after_it(engine, repo, user, bank):
    """A reviewer's early-stopping code kept `self.best_state = model.state_dict()` (a reference, not a copy), charged
    as a misconception; the fix sent on the follow-up cloned the state and passed every check, yet the old line was
    still quoted as a wrong claim, and the report listed it under "Misconceptions to unlearn". Code sent replaces the
    code before it: the claim read only in the replaced code is no longer charged, and the report says it was
    corrected, here and on a later follow-up answered in words."""
    from app.reports import build_report
    from tests.code_fixtures import ScriptedRunner

    class CopyChecked:  # the best-state check fails while the state is kept by reference
        def check(self, spec, code, question_id):
            return ScriptedRunner(*(["best-state-is-a-copy"] if ".clone()" not in code else [])).check(
                spec, code, question_id)

    engine._scorer = AnswerScorer(evaluator=engine._scorer._evaluator, code_runner=CopyChecked())
    task = by_id(bank)["early-stopping"]
    session = start_at(engine, user, task, difficulty=task.difficulty)
    first = engine.answer(session_id=session.id, user_id=user, text="Here is my helper.", code=SHARED_BEST_STATE)
    assert [m["quote"] for m in first.evaluation["misconceptions"]] == ["self.best_state = model.state_dict()"]
    assert first.prompt is not None and first.prompt.kind is PromptKind.FOLLOW_UP
    fixed = engine.answer(session_id=session.id, user_id=user, code=CLONED_BEST_STATE,
                          text="Fixed: I now store a cloned copy of the state dict.")
    assert fixed.code_result["status"] == "passed"
    assert fixed.evaluation["misconceptions"] == []
    assert fixed.prompt is not None  # a follow-up answered in words reads on without the replaced code
    words = engine.answer(session_id=session.id, user_id=user, code=None,
                          text="The best weights are restored once training stops.")
    assert words.evaluation["misconceptions"] == []
    if words.prompt is not None:
        engine.finish(session_id=session.id, user_id=user)
    report = build_report(session=repo.get_session(session.id, user), turns=repo.turns(session.id), bank=by_id(bank))
    (entry,) = report.questions
    assert report.misconceptions == [] and entry.misconceptions == []
    assert any("then corrected it on a follow-up" in note for note in entry.scoring_notes)


def test_a_question_on_screen_in_an_interview_is_not_asked_in_another_session(engine, user, bank):
    """An interview runs a task's hidden checks only through it, where the report counts the runs, and shows no model
    answer until it is over. A practice session that drew the same task (seed 13 of the first tries over HTTP) ran
    its checks uncounted, and its report showed the model answer while the interview went on. Nor does an interview
    take a question on screen in another session."""
    task = by_id(bank)["pairwise-distances"]
    interview = start_at(engine, user, task, mode="interview")
    for seed in range(30):
        session, prompt = engine.start(user_id=user, config=SessionConfig(
            num_questions=1, topics=[task.topic.value], seed=seed))
        assert prompt.question_id != task.id, seed
        engine.finish(session_id=session.id, user_id=user)
    engine.finish(session_id=interview.id, user_id=user)
    practice = start_at(engine, user, task)
    for seed in range(30):
        session, prompt = engine.start(user_id=user, config=SessionConfig(
            num_questions=1, topics=[task.topic.value], seed=seed, mode="interview"))
        assert prompt.question_id != task.id, seed
        engine.finish(session_id=session.id, user_id=user)
    engine.finish(session_id=practice.id, user_id=user)


def test_a_follow_up_says_the_code_failed_in_a_way_only_when_the_run_showed_it(repo, ingested_store, bank, scorer):
    """pairwise-distances answered with its starter (NotImplementedError in every check) was asked "Your distances
    occasionally come out as NaN for duplicate points": a bug its code does not have. That probe is asked after a
    run whose duplicate-points check judged a value wrong while others passed; else the neutral one about the
    check."""
    from evaluators.code.runner import CodeRunner

    task = by_id(bank)["pairwise-distances"]
    nan_probe = next(f.prompt for f in task.follow_ups if f.point == "numerical-care")
    with CodeRunner(workers=1, timeout_s=20.0) as runner:
        engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                                 scorer=AnswerScorer(evaluator=scorer, code_runner=runner))
        asked = {}
        for name, code in (("starter", task.code.starter), ("no-clamp", NO_CLAMP_DISTANCES)):
            user = repo.get_or_create_user(name).id
            session = start_at(engine, user, task)
            asked[name] = engine.answer(session_id=session.id, user_id=user, text=None, code=code).prompt.text
    assert asked["starter"] == ("Your code failed one of my checks: rows of y that duplicate rows of x give a "
                                "distance near 0, with no NaN or negative values. What in your code causes that, and "
                                "how would you fix it?")
    assert asked["no-clamp"] == nan_probe  # its run did return NaN there, and passed the other checks


def test_a_follow_up_after_code_that_never_ran_says_so_and_why(repo, ingested_store, bank, scorer):
    """A custom-layer answer whose code failed to load (the review's: no import lines, NameError before any check)
    was asked "Your code failed one of my checks: ...parameters()..." though no check ran. The follow-up says the
    code did not run, quoting the error."""
    from evaluators.code.runner import CodeRunner

    task = by_id(bank)["custom-layer"]
    broken = task.code.solution.replace("(nn.Module)", "(nn.Modle)")  # fails on load, whatever the starter imports
    with CodeRunner(workers=1, timeout_s=20.0) as runner:
        engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                                 scorer=AnswerScorer(evaluator=scorer, code_runner=runner))
        user = repo.get_or_create_user("typo").id
        session = start_at(engine, user, task)
        outcome = engine.answer(session_id=session.id, user_id=user, code=broken,
                                text="Weights wrapped in nn.Parameter so they register.")
    assert outcome.prompt.kind == PromptKind.FOLLOW_UP
    assert outcome.prompt.text.startswith("My checks could not run your code: it stopped as it loaded, with \u201c"
                                          "AttributeError: module 'torch.nn' has no attribute 'Modle'")
    assert "failed one of my checks" not in outcome.prompt.text


def test_a_hint_before_any_run_states_no_failure_of_the_code(engine, user, bank):
    """The first hint on custom-layer, before any code was sent, was the probe "Your layer runs, but its weights never
    change during training...": a failure of code the candidate had not written. It names the point instead."""
    task = by_id(bank)["custom-layer"]
    session = start_at(engine, user, task)
    hinted = engine.hint(session_id=session.id, user_id=user)
    assert hinted.message.startswith("A complete answer also has a point that starts \u201cLearnable tensors are "
                                     "wrapped \u2026\u201d.")


def test_a_hint_names_its_point_in_words_not_by_its_id(bank):
    """A hint on a follow-up read "A complete answer also says something about purpose." (review s49): the point's
    id, where words were meant."""
    from app.interview.followups import hint_for

    question = by_id(bank)["gradient-accumulation"]
    hint = hint_for(question, evaluation=None, hints_used=0, target="purpose")
    assert hint == ("A complete answer also has a point that starts \u201cGradient accumulation simulates a "
                    "\u2026\u201d.")
    described = next(p.description for p in question.rubric if p.id == "purpose")
    assert described.rstrip(".") not in hint


def test_an_evaluate_without_eval_mode_is_not_told_its_validation_uses_more_memory(repo, ingested_store, bank, scorer):
    """training-loop-from-scratch's modes and no_grad were one check, presumed by the memory probe and the modes
    probe alike: an evaluate under no_grad that forgot model.eval() failed it and was asked "Your validation pass
    uses far more memory than you expect", a fault of code without no_grad. Each is now a check of its own."""
    from evaluators.code.runner import CodeRunner

    task = by_id(bank)["training-loop-from-scratch"]
    memory_probe = next(f.prompt for f in task.follow_ups if f.point == "no-grad-eval")
    no_eval_mode = task.code.solution.replace("    model.eval()\n", "")
    no_no_grad = task.code.solution.replace("    with torch.no_grad():\n        return", "    if True:\n        return")
    assert no_eval_mode != task.code.solution != no_no_grad
    with CodeRunner(workers=1, timeout_s=20.0, seed=3) as runner:
        engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                                 scorer=AnswerScorer(evaluator=scorer, code_runner=runner))
        asked = {}
        for name, code in (("no-eval-mode", no_eval_mode), ("no-no-grad", no_no_grad)):
            user = repo.get_or_create_user(name).id
            session = start_at(engine, user, task)
            asked[name] = engine.answer(session_id=session.id, user_id=user, text=None, code=code).prompt.text
    assert asked["no-eval-mode"] != memory_probe
    assert asked["no-no-grad"] == memory_probe  # its run did build a graph in evaluate


def test_an_answer_scored_while_another_process_ends_the_session_records_nothing(
    tmp_path, repo, ingested_store, bank, scorer, user
):
    """Two servers on one database: the candidate ends the interview at one while the other scores their answer.
    The answer used to be stored on the ended session anyway, its state putting back the prompt the end had closed
    (the "Ended early" note gone) and a follow-up or next question added to a completed session."""
    other = InterviewEngine(repo=open_repository(f"sqlite:///{tmp_path / 'interviews.db'}"),
                            selector=QuestionSelector(ingested_store), bank=by_id(bank),
                            scorer=AnswerScorer(evaluator=scorer))

    class EndedMeanwhile(AnswerScorer):
        def score(self, question, **kwargs):
            other.finish(session_id=session.id, user_id=user)
            return super().score(question, **kwargs)

    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=EndedMeanwhile(evaluator=scorer))
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=2))
    with pytest.raises(ConflictError, match="ended while this answer was scored"):
        engine.answer(session_id=session.id, user_id=user, text="a view shares storage", code=None, turn=0)
    stored = repo.get_session(session.id, user)
    assert stored.status == "completed" and stored.state["current_turn_id"] is None
    assert any("Ended early" in note for note in stored.state["notes"])
    assert [t.answered for t in repo.turns(session.id)] == [False]  # no answer, and no turn after it


def test_an_end_that_read_the_session_before_another_process_stored_an_answer_records_nothing(
    tmp_path, repo, ingested_store, bank, scorer, user
):
    """The other order: one process reads the prompt as open to end the session, another stores the answer to it
    and asks on, then the end is saved. It used to be: the session completed with the answer's score dropped from
    its state, "question 1 was shown but not answered" noted beside that answer, and the follow-up left open."""
    engine = InterviewEngine(repo=repo, selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer))

    class AnsweredMeanwhile:
        def __init__(self, repo):
            self._repo = repo

        def __getattr__(self, name):
            return getattr(self._repo, name)

        def save_state(self, session_id, **kwargs):
            answer = by_id(bank)[prompt.question_id].reference_answer
            engine.answer(session_id=session_id, user_id=user, text=answer[:40], code=None, turn=0)
            return self._repo.save_state(session_id, **kwargs)

    ending = InterviewEngine(repo=AnsweredMeanwhile(open_repository(f"sqlite:///{tmp_path / 'interviews.db'}")),
                             selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer))
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=2))
    with pytest.raises(ConflictError, match="answered meanwhile"):
        ending.finish(session_id=session.id, user_id=user, turn=0)
    stored = repo.get_session(session.id, user)
    assert stored.status == "active" and prompt.question_id in stored.state["question_scores"]
    assert not any("Ended early" in note for note in stored.state["notes"])
    assert engine.current_prompt(session_id=session.id, user_id=user).turn == 1


def test_a_next_prompt_worded_while_another_process_ends_the_session_is_not_added(
    tmp_path, repo, ingested_store, bank, scorer, user
):
    """An answer is stored, then its follow-up or the next question is chosen and worded (seconds with an LLM) and
    added. Another process ends the session meanwhile once the step has run past its resume_after_s (it takes the
    step for one a crash cut short): the prompt was added to the completed session anyway, as its current one, and
    the end's 'Ended early' was dropped from its state."""
    ending = InterviewEngine(repo=open_repository(f"sqlite:///{tmp_path / 'interviews.db'}"),
                             selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer), resume_after_s=0.0)  # the step ran past it

    class EndedMeanwhile:
        def __init__(self, repo):
            self._repo = repo

        def __getattr__(self, name):
            return getattr(self._repo, name)

        def add_turn(self, session_id, **turn):
            ending.finish(session_id=session_id, user_id=user)
            return self._repo.add_turn(session_id, **turn)

    engine = InterviewEngine(repo=EndedMeanwhile(repo), selector=QuestionSelector(ingested_store), bank=by_id(bank),
                             scorer=AnswerScorer(evaluator=scorer))
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=2))
    answer = by_id(bank)[prompt.question_id].reference_answer
    with pytest.raises(ConflictError, match="ended meanwhile"):
        engine.answer(session_id=session.id, user_id=user, text=answer[:40], code=None, turn=0)
    stored = repo.get_session(session.id, user)
    assert stored.status == "completed" and stored.state["current_turn_id"] is None
    assert any("Ended early, after question 1" in note for note in stored.state["notes"])
    assert [t.answered for t in repo.turns(session.id)] == [True]  # the answer stands; nothing asked after it


def test_a_runner_given_as_a_function_is_started_at_the_first_code_answer_and_only_once(scorer, bank):
    """The terminal hands the scorer a function: its sandbox pool took 7 s of a one-question run's 21 s and
    most sessions send no code. A words answer starts nothing; a code answer starts it once; a sandbox that
    cannot start (None) reads the code as text, as a server without one does."""
    started = []

    class PassingRunner:
        def check(self, spec, code, question_id):
            return {"status": "passed", "score": 1.0, "passed_checks": 4, "total_checks": 4, "checks": []}

    def start(runner):
        def factory():
            started.append(runner)
            return runner
        return factory

    question = by_id(bank)["relu-autograd-function"]
    answer_scorer = AnswerScorer(evaluator=scorer, code_runner=start(PassingRunner()))
    answer_scorer.score(question, text="It clamps negatives to zero.", code=None, earlier=[])
    assert started == []
    for _ in range(2):
        assert answer_scorer.score(question, text="", code=question.code.solution, earlier=[]).score == 5.0
    assert len(started) == 1
    none = AnswerScorer(evaluator=scorer, code_runner=start(None)).score(
        question, text="", code=question.code.solution, earlier=[])
    assert none.message == "code checks are unavailable on this server; your code was read as text only"


def test_an_interview_kept_from_questions_on_screen_elsewhere_names_those_sessions(engine, user, bank):
    """Practice sessions never expire: ten left open on autograd, each showing one of its questions, refused an
    interview on it with "no question in these topics can be asked now; widen the selection" (wrong cause, wrong
    advice). The refusal names the sessions to finish or end; one ended lets the interview start."""
    topic = "distributed"
    count = sum(q.topic.value == topic for q in bank)
    practice = [engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=[topic]))[0]
                for _ in range(count)]
    with pytest.raises(ConflictError) as refused:
        engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=[topic], mode="interview"))
    assert "on screen in your other open sessions" in str(refused.value)
    assert all(s.id in str(refused.value) for s in practice)
    assert "widen the selection" in str(refused.value)  # still true, but no longer the only advice
    engine.finish(session_id=practice[0].id, user_id=user)
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=[topic],
                                                                       mode="interview"))
    assert prompt is not None


def test_an_interview_ended_by_questions_on_screen_elsewhere_says_so(engine, user, bank):
    """An interview whose next questions are all on screen in practice sessions opened since ended after its first
    question with no word of why ("completed", no note) though it was to ask two."""
    topic = "distributed"
    count = sum(q.topic.value == topic for q in bank)
    interview, first = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=[topic],
                                                                        mode="interview"))
    practice = [engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=[topic]))[0]
                for _ in range(count - 1)]
    outcome = engine.answer(session_id=interview.id, user_id=user, text="no idea", code=None)
    while outcome.prompt is not None and outcome.prompt.kind == PromptKind.FOLLOW_UP:
        outcome = engine.answer(session_id=interview.id, user_id=user, text="no idea", code=None)
    assert outcome.status == "completed"
    said = " ".join(outcome.notes)
    assert "Ended after question 1 of 2" in said and "on screen in your other open sessions" in said, outcome.notes
    assert all(s.id in said for s in practice)
