"""The interview engine: one session's turns, persisted after every step so a restart loses nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from app.errors import ConflictError, UserFacingError, no_session
from app.interview import feedback
from app.interview.asking import Asker
from app.interview.fenced import code_from_words
from app.interview.followups import choose_follow_up, hint_for
from app.interview.keyed_locks import KeyedLocks
from app.interview.models import Prompt, PromptKind, SessionConfig, SessionState, TurnOutcome
from app.interview.penalties import HINT_COST
from app.interview.phrasing import Phraser
from app.interview.scoring import AnswerScorer, ScoredAnswer, with_code, words_of
from app.interview.selection import QuestionSelector, next_difficulty, session_size
from app.interview.turns import SessionTurns, elapsed_s
from app.llm_breaker import llm_step
from app.store.models import ACTION_DONE, new_session_id
from evaluators.text import is_non_answer
from knowledge.schema import Question

# Actions on one session run one at a time in this process: a double-click or a client's retry would otherwise
# interleave, and both could add the next turn. Each session has its own lock (kept only while a request holds or
# waits for it), so one session's model call never holds up another's; across processes the repository refuses a
# second next turn (add_turn's `position`) and a second answer to one turn. Reading the session (a reload, a page
# polling) does not wait for a step under way: it shows what that step has committed so far.
# An answered turn with no next turn after it is a step still running (here or in another process: the
# LLM phrasing the next question, say) until this long has passed; then it is a step a crash cut short,
# and the next request finishes it. Longer than any offline step; with an LLM, services.resume_after_s
# lengthens it to cover the step's calls at the configured timeout.
RESUME_AFTER_S = 60.0


class InterviewEngine:
    def __init__(
        self,
        *,
        repo: Any,
        selector: QuestionSelector,
        bank: dict[str, Question],
        scorer: AnswerScorer,
        phraser: Phraser | None = None,
        resume_after_s: float = RESUME_AFTER_S,
    ) -> None:
        self._repo = SessionTurns(repo)
        self._resume_after_s = resume_after_s
        self._selector = selector
        self._bank = bank
        self._scorer = scorer
        self._phraser = phraser or Phraser()
        self._asking = Asker(turns=self._repo, selector=selector, bank=bank, phraser=self._phraser)
        self._session_locks = KeyedLocks()

    @contextmanager
    def _one_at_a_time(self, session_id: str) -> Iterator[None]:
        """One action on the session at a time; the action is one LLM step (after a call of it gets no reply,
        its other calls fall back offline at once rather than each waiting out the timeout)."""
        with self._session_locks.lock(session_id), llm_step():
            yield

    # --- lifecycle ---------------------------------------------------------------------------
    def stop(self) -> None:
        """The process is stopping: a model call under way is given up (see Phraser.stop and Evaluator.stop)."""
        self._phraser.stop()
        self._scorer.stop()

    def warm(self) -> None:
        """Precompute what turns would otherwise compute on first use (related entries per point)."""
        self._selector.warm(self._bank)

    def start(self, *, user_id: int, config: SessionConfig) -> tuple[Any, Prompt | None]:
        """Create a session and ask its first question."""
        with llm_step():
            return self._start(user_id=user_id, config=config)

    def _start(self, *, user_id: int, config: SessionConfig) -> tuple[Any, Prompt | None]:
        pool = self._selector.pool(config, self._bank)  # fails before creating anything if nothing matches
        history = self._asking.history(user_id)
        start = history.starting_difficulty if config.difficulty == "adaptive" else int(config.difficulty)
        state = SessionState(target_difficulty=start)
        size, notes = session_size(pool, history, config.num_questions)
        state.note(*notes)
        config = config.model_copy(update={"num_questions": size})
        # Named now, stored only with its first question (the choice is seeded by the name): a start that fails or
        # is killed before that question is asked, while an LLM words it say, leaves no session behind.
        session_id = new_session_id()
        prompt = self._asking.next_question(session_id, user_id, config, state, opening=True)
        return self._repo.get_session(session_id, user_id), prompt

    def current_prompt(self, *, session_id: str, user_id: int) -> Prompt | None:
        lock = self._session_locks.lock(session_id)
        if not lock.acquire(blocking=False):  # a step is under way here, maybe waiting on a model for minutes
            return self._committed_prompt(session_id, user_id)
        try:
            with llm_step():  # it may finish a step a crash cut short, which can call the model
                return self._current_prompt(session_id, user_id)
        finally:
            lock.release()

    def _committed_prompt(self, session_id: str, user_id: int) -> Prompt | None:
        """The prompt as stored, read without the session's lock and writing nothing: the open turn while its
        answer is still being scored (nothing of it is committed yet), None once the answer is stored and the
        next prompt is still being asked (as a reader in another process sees it)."""
        self._repo.forget()
        session = self._repo.get_session(session_id, user_id)
        if session is None:
            raise no_session(session_id)
        state = SessionState.model_validate(session.state)
        if session.status == "completed" or state.current_turn_id is None:
            return None
        turn = self._repo.turn(session_id, state.current_turn_id)
        if turn.answered:
            return None
        try:
            return self._asking.prompt_for(turn, SessionConfig.model_validate(session.config), state)
        except ConflictError:  # its question left the bank: the step under way says so
            return None

    def _current_prompt(self, session_id: str, user_id: int) -> Prompt | None:
        session, config, state = self._load(session_id, user_id)
        if session.status == "completed" or state.current_turn_id is None:
            return None
        try:
            session, config, state = self._active(session_id, user_id)  # completes an interrupted step
        except ConflictError:
            return None
        return self._asking.prompt_for(self._repo.turn(session_id, state.current_turn_id), config, state)

    # --- candidate actions -------------------------------------------------------------------
    # `turn`, when given, is the prompt's `turn` the candidate acted on: a retried or doubled request whose
    # prompt was already answered is refused (409) rather than applied to a prompt they never saw.
    # `before_code_run` is called once the answer is known to be for the current prompt and that prompt is a
    # code task with code to run, before the sandbox runs it (the API counts it against a rate limit there, so
    # a stale or refused answer costs nothing and a race with skip cannot dodge the limit).
    def answer(
        self, *, session_id: str, user_id: int, text: str | None, code: str | None, turn: int | None = None,
        before_code_run: Callable[[], None] | None = None,
    ) -> TurnOutcome:
        if not (text or "").strip() and not (code or "").strip():
            raise UserFacingError("an answer needs text or code (or use skip / I don't know)")
        with self._one_at_a_time(session_id):
            return self._answer(session_id, user_id, text=text, code=code, expected=turn,
                                before_code_run=before_code_run)

    def _already_received(self, session_id: str, position: int, text: str | None, code: str | None) -> str | None:
        """Why a retried answer (a client that gave up waiting, a resubmit after a reload) is refused, when the
        turn holds this same answer: it was received, so say so rather than "answered already"."""
        sent = [(text or "").strip(), (code or "").strip()]
        turns = self._repo.turns(session_id)
        for stored in turns:
            if stored.position != position or stored.action != "answer":
                continue
            if not any(s and s in {(stored.answer_text or "").strip(), (stored.answer_code or "").strip()}
                       for s in sent):
                return None
            current = turns[-1].position == position
            return (f"your answer to turn {position} was received already and "
                    + ("is still being scored; fetch the session in a moment for its feedback" if current else
                       "has been scored; fetch the session for its feedback")
                    + " (nothing new was recorded)")
        return None

    def _answer(
        self, session_id: str, user_id: int, *, text: str | None, code: str | None, expected: int | None,
        before_code_run: Callable[[], None] | None = None,
    ) -> TurnOutcome:
        try:
            session, config, state = self._active(session_id, user_id, expected=expected)
        except ConflictError:  # refused before anything of this attempt was stored: a resend of a stored answer?
            if expected is not None and (why := self._already_received(session_id, expected, text, code)):
                raise ConflictError(why) from None
            raise
        question = self._asking.asked(session_id, state.current_question_id)
        turn = self._repo.turn(session_id, state.current_turn_id)
        if not (code or "").strip() and is_non_answer(text or ""):
            # "I don't know" typed does what the button does: the model answer is shown and the report counts it
            # as not known, not answered; on a follow-up the earlier score stands and the interview moves on,
            # rather than probing another point the candidate just said they lack.
            return self._give_up(session_id, user_id, action="dont_know", text=text)
        text, code, moved = code_from_words(question.code, text, code, follow_up=turn.kind == PromptKind.FOLLOW_UP) \
            if question.code is not None else (text, code, None)
        if before_code_run is not None and question.code is not None and (code or "").strip():
            before_code_run()
        if question.code is not None and (code or "").strip():  # new code replaces the old: see words_of
            state.answers_so_far = words_of(state.answers_so_far, question.code)
        scored = self._scorer.score(
            question, text=text or "", code=code, earlier=state.answers_so_far,
            earlier_code=self._repo.last_code_result(session_id, question.id),
        )
        if moved:
            scored = dataclasses.replace(scored, message=" ".join(filter(None, [moved, scored.message])))
        scored = feedback.charged(scored, state=state, config=config, turn=turn, turns=self._repo)
        scored = feedback.with_related(self._selector, question, scored)
        scored = feedback.spoken(self._phraser, question, scored, state, config)
        # Read again with the next answer as the rubric read it here (code in a fence, so it reads as code).
        state.answers_so_far.append(with_code(text or "", (code or "").strip() or None).strip())
        state.question_scores[question.id] = scored.score
        # The answer, its evaluation and the state that records it commit together, unless another process
        # gave a hint on this turn while it was scored (its penalty is not in this score): then a 409.
        self._repo.record_answer(
            turn.id, action="answer", answer_text=text, answer_code=code, hints_seen=turn.hints_used,
            evaluation=scored.evaluation, code_result=scored.code_result, state=state.model_dump(mode="json"),
        )
        return self._after_answer(session_id, user_id, config, state, question, scored)

    def dont_know(self, *, session_id: str, user_id: int, turn: int | None = None) -> TurnOutcome:
        """Scored 0; in practice mode the model answer is shown."""
        with self._one_at_a_time(session_id):
            return self._give_up(session_id, user_id, action="dont_know", expected=turn)

    def skip(self, *, session_id: str, user_id: int, turn: int | None = None) -> TurnOutcome:
        with self._one_at_a_time(session_id):
            return self._give_up(session_id, user_id, action="skip", expected=turn)

    def hint(self, *, session_id: str, user_id: int, turn: int | None = None) -> TurnOutcome:
        with self._one_at_a_time(session_id):
            return self._hint(session_id, user_id, expected=turn)

    def _hint(self, session_id: str, user_id: int, *, expected: int | None) -> TurnOutcome:
        session, config, state = self._active(session_id, user_id, expected=expected)
        question = self._asking.asked(session_id, state.current_question_id)
        turn = self._repo.turn(session_id, state.current_turn_id)
        used = self._repo.hints_on_question(session_id, question.id)
        last = self._repo.last_evaluation(session_id, question.id)
        target = turn.target_point if turn.kind == PromptKind.FOLLOW_UP else None
        text = hint_for(question, evaluation=last, hints_used=used, target=target, hints_on_turn=turn.hints_used,
                        run=self._repo.code_shown(session_id, question.id))
        if text is None:
            raise ConflictError("no more hints for this question")
        self._repo.add_hint(turn.id, seen=turn.hints_used, text=text)
        message = f"{text} (hints cost {HINT_COST} points each on this question)"
        with_hint = self._repo.turn(session_id, turn.id)  # the prompt shows this hint among its own
        prompt = self._asking.prompt_for(with_hint, config, state)
        return TurnOutcome(status="active", prompt=prompt, message=message)

    def repeat(self, *, session_id: str, user_id: int, turn: int | None = None) -> TurnOutcome:
        with self._one_at_a_time(session_id):
            session, config, state = self._active(session_id, user_id, expected=turn)
            current = self._repo.turn(session_id, state.current_turn_id)
            return TurnOutcome(status="active", prompt=self._asking.prompt_for(current, config, state))

    def finish(self, *, session_id: str, user_id: int, turn: int | None = None) -> TurnOutcome:
        """End the session now: its report covers what was answered; the prompt on screen stays unscored (no zero)."""
        with self._one_at_a_time(session_id):
            session, config, state = self._active(session_id, user_id, expected=turn, ending=True)
            current = self._repo.turn(session_id, state.current_turn_id)
            if current.answered:
                state.note(f"Ended early, after question {state.question_number} of {config.num_questions}.")
            elif current.kind == PromptKind.FOLLOW_UP:
                state.note(f"Ended early, at a follow-up on question {state.question_number} of "
                           f"{config.num_questions}, which was not answered.")
            else:
                state.note(f"Ended early: question {state.question_number} of {config.num_questions} was "
                           "shown but not answered, so it is not scored.")
            state.current_turn_id = state.current_question_id = None
            state.release_held_notes()
            self._repo.save_state(session_id, state=state.model_dump(mode="json"), status="completed",
                                  open_turn=None if current.answered else current.id)  # unless answered meanwhile
            return TurnOutcome(status="completed", notes=state.new_notes,
                               message="The interview has ended; its report covers what you answered.")

    # --- transitions -------------------------------------------------------------------------
    def _give_up(
        self, session_id: str, user_id: int, *, action: str, text: str | None = None, expected: int | None = None
    ) -> TurnOutcome:
        session, config, state = self._active(session_id, user_id, expected=expected)
        question = self._asking.asked(session_id, state.current_question_id)
        turn = self._repo.turn(session_id, state.current_turn_id)
        scored = self._scorer.zero(question, reason=action)
        follow_up = turn.kind == PromptKind.FOLLOW_UP
        earlier = self._repo.last_evaluation_dict(session_id, question.id) if follow_up else None
        if earlier is not None:  # giving up on a follow-up keeps what the earlier answers earned
            scored = feedback.follow_up_given_up(earlier, action=action, hints_on_turn=turn.hints_used)
        state.question_scores[question.id] = scored.score
        self._repo.record_answer(
            turn.id, action=action, answer_text=text, evaluation=scored.evaluation, hints_seen=turn.hints_used,
            state=state.model_dump(mode="json"),
        )
        return self._move_on(session_id, user_id, config, state, scored)

    def _move_on(
        self, session_id: str, user_id: int, config: SessionConfig, state: SessionState, scored: ScoredAnswer
    ) -> TurnOutcome:
        state.target_difficulty = next_difficulty(state.target_difficulty, scored.score)
        if state.asked_topics:  # the question just scored: its topic's own level moves too
            topic = state.asked_topics[-1]
            state.topic_levels[topic] = next_difficulty(state.topic_levels.get(topic, state.target_difficulty),
                                                        scored.score)
        return feedback.outcome(config, scored, self._asking.next_question(session_id, user_id, config, state), state)

    def _after_answer(
        self, session_id: str, user_id: int, config: SessionConfig, state: SessionState,
        question: Question, scored: ScoredAnswer,
    ) -> TurnOutcome:
        follow_up = None
        if scored.rubric is not None:
            follow_up = choose_follow_up(question, scored.rubric, score=scored.score, asked=state.follow_ups_asked,
                                         probed=state.probed_points, code_asked=state.code_asked,
                                         hinted=self._repo.hints_given(session_id, question.id),
                                         run=self._repo.code_shown(session_id, question.id))
        if follow_up is not None:
            related = [r["question"] for r in scored.evaluation.get("related", [])]
            prompt = self._asking.follow_up(session_id, config, state, question, follow_up, related)
            return feedback.outcome(config, scored, prompt, state)
        return self._move_on(session_id, user_id, config, state, scored)

    # --- helpers -----------------------------------------------------------------------------
    def _load(self, session_id: str, user_id: int) -> tuple[Any, SessionConfig, SessionState]:
        self._repo.forget()  # each call starts from what is stored (another process may have written)
        session = self._repo.get_session(session_id, user_id)
        if session is None:
            raise no_session(session_id)
        state = SessionState.model_validate(session.state)
        if session.status != "completed" and state.current_turn_id is None and state.current_question_id:
            turns = self._repo.turns(session_id)
            if turns and not turns[-1].answered and turns[-1].question_id == state.current_question_id:
                state.current_turn_id = turns[-1].id  # adopt the turn a crashed step had just added
                self._repo.save_state(session_id, state=state.model_dump(mode="json"))
        return session, SessionConfig.model_validate(session.config), state

    def _active(
        self, session_id: str, user_id: int, *, expected: int | None = None, ending: bool = False
    ) -> tuple[Any, SessionConfig, SessionState]:
        """The session, if it takes an action now. `ending`: to finish it, which needs neither its current
        question in the bank nor a step a crash cut short to be completed first."""
        session, config, state = self._load(session_id, user_id)
        if not ending and session.status != "completed" and state.current_question_id is not None:
            self._asking.asked(session_id, state.current_question_id)  # a question with no copy that left the bank: 409
        if session.status != "completed" and state.current_turn_id is not None:
            turn = self._repo.turn(session_id, state.current_turn_id)
            if turn.answered and elapsed_s(turn.answered_at) < self._resume_after_s:
                raise ConflictError(f"the answer to turn {turn.position} is still being handled; try again in a "
                                    "moment")
            if turn.answered and not ending:  # the process died after the answer committed: finish that step now
                self._resume_after(session_id, user_id, config, state, turn)
                session, config, state = self._load(session_id, user_id)
        if session.status == "completed" or state.current_turn_id is None:
            raise ConflictError("this session is completed; start a new one or fetch its report")
        current = self._repo.turn(session_id, state.current_turn_id).position
        if expected is not None and expected != current:
            # What happened to it, read from the turn: a skip that won a race was called an answer to the others.
            done = next((t.action for t in self._repo.turns(session_id) if t.position == expected), None)
            why = f"it was {ACTION_DONE.get(done or '', 'answered')} already" if expected < current \
                else "it has not been asked"
            raise ConflictError(f"turn {expected} is not the current prompt (turn {current} is): {why}, so nothing "
                                "was recorded; fetch the session for the current prompt")
        return session, config, state

    def _resume_after(
        self, session_id: str, user_id: int, config: SessionConfig, state: SessionState, turn: Any
    ) -> None:
        from evaluators.base import Evaluation

        stored = turn.evaluation or {"score": 0.0}
        rubric = Evaluation.model_validate(stored["rubric"]) if stored.get("rubric") else None
        scored = ScoredAnswer(score=float(stored["score"]), evaluation=stored, rubric=rubric)
        if turn.action == "answer":
            question = self._asking.asked(session_id, turn.question_id)
            self._after_answer(session_id, user_id, config, state, question, scored)
        else:
            self._move_on(session_id, user_id, config, state, scored)
