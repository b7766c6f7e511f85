"""What the interviewer asks: the next question chosen, worded and recorded as the session's next turn, a follow-up
recorded the same way, and the prompt a stored turn shows the candidate."""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from app.errors import ConflictError
from app.interview.choice import until_recorded
from app.interview.followups import SHOW_IN_CODE
from app.interview.keyed_locks import KeyedLocks
from app.interview.models import Mode, Prompt, PromptKind, SessionConfig, SessionState, scores_withheld
from app.interview.phrasing import Phraser
from app.interview.selection import History, QuestionSelector, held_until_the_end, level_for, why_chosen
from app.interview.turns import SessionTurns, aware
from evaluators.code.forbidden import contract_with_refusals
from knowledge.schema import FollowUp, Question


class Asker:
    """Chooses and words what a session asks next and records it as a turn. The engine decides when to ask;
    this decides what, and stores it so that a restart finds the session exactly where it was."""

    def __init__(
        self, *, turns: SessionTurns, selector: QuestionSelector, bank: dict[str, Question], phraser: Phraser
    ) -> None:
        self._turns = turns
        self._selector = selector
        self._bank = bank
        self._phraser = phraser
        self._user_locks = KeyedLocks()  # one per user: another user never waits while a model words a question

    def next_question(
        self, session_id: str, user_id: int, config: SessionConfig, state: SessionState, *, opening: bool = False
    ) -> Prompt | None:
        """Choose and ask the next question; None once the session has asked all it will (then it is completed).
        One user's sessions must not both take one unseen question: in this process they choose one at a time;
        across processes the store records a question only if the user was asked none since the choice read their
        history, and otherwise it is chosen again (`choice.until_recorded`). The store's lock is held for that
        check and the insert alone, not while an LLM words the question. `opening`: the session's first question,
        stored with the session itself (Repository.open_session)."""
        tried: list[SessionState] = []

        def attempt(asked: int) -> Prompt | None:  # each try on a copy: one not recorded leaves nothing
            tried.append(state.model_copy(deep=True))
            return self._choose_and_ask(session_id, user_id, config, tried[-1], asked, opening=opening)

        with self._user_locks.lock(user_id):
            prompt = until_recorded(attempt, lambda: self._turns.questions_asked(user_id))  # asked: read first
        if prompt is None:  # completed: what the last try noted (why it ended) is told with the outcome
            state.note(*tried[-1].new_notes)
        return prompt

    def _choose_and_ask(
        self, session_id: str, user_id: int, config: SessionConfig, state: SessionState, asked: int, *,
        opening: bool,
    ) -> Prompt | None:
        hit, history = None, self.history(user_id, besides=session_id)
        # The rule: a question on screen in one of the user's open sessions is not drawn by another when either of
        # the two is an interview (its hidden checks and model answer must not be reachable beside it). Practice
        # sessions never expire, so this can leave nothing to ask: then the candidate is told so, with the sessions
        # to finish or end, never "widen the selection", nor an interview cut short without a word.
        on_screen = self._turns.questions_on_screen(user_id, interviews_only=config.mode is not Mode.INTERVIEW)
        on_screen.pop(state.current_question_id or "", None)  # this session's own, already in state.asked
        history.withheld = set(on_screen)
        if state.question_number < config.num_questions:
            rng = random.Random(f"{config.seed if config.seed is not None else session_id}:{state.question_number}")
            hit = self._selector.choose(config=config, state=state, history=history, rng=rng, known=self._bank)
            held = self._held_elsewhere(config, state, on_screen, session_id) if hit is None else None
            if held and opening:
                raise ConflictError(f"every question in these topics is on screen in {held}, and an interview shares "
                                    "no question with another open session: finish or end those, or widen the "
                                    "selection, and start again")
            if held:
                state.note(f"Ended after question {state.question_number} of {config.num_questions}: every question "
                           f"left in these topics is on screen in {held}, and an interview shares no question with "
                           "another open session.")
        if hit is None and opening:  # nothing stored yet: there is no session to complete
            raise ConflictError("no question in these topics can be asked now; widen the selection and start again")
        if hit is None:
            state.current_turn_id = state.current_question_id = None
            state.release_held_notes()
            self._turns.save_state(session_id, state=state.model_dump(mode="json"), status="completed")
            return None
        question = self._bank[hit.id]
        pool = self._selector.pool(config, self._bank)
        state.note(*why_chosen(hit, config=config, state=state, history=history, pool=pool))
        state.held_notes += held_until_the_end(hit, config=config, state=state, history=history, pool=pool)
        state.question_number += 1
        phrased = self._phraser.question(question, number=state.question_number, total=config.num_questions)
        state.note_wording(f"Q{state.question_number}", phrased.note)
        state.topic_levels.setdefault(hit.topic, level_for(hit.topic, config=config, state=state, history=history))
        state.asked.append(question.id)
        state.asked_topics.append(question.topic.value)
        state.current_question_id = question.id
        state.follow_ups_asked, state.probed_points, state.answers_so_far, state.raw_so_far = 0, [], [], None
        state.code_asked = False
        opens = {"user_id": user_id, "config": config.model_dump(mode="json")} if opening else None
        turn = self._add_turn(session_id, state, question, PromptKind.QUESTION, phrased.text, None, user_asked=asked,
                              opens=opens)
        return self.prompt_for(turn, config, state)

    def _held_elsewhere(
        self, config: SessionConfig, state: SessionState, on_screen: dict[str, list[str]], session_id: str
    ) -> str | None:
        """When the session has nothing left to ask only because its questions are on screen in other sessions:
        those sessions, as the candidate reads them ("your other open sessions (ids ...)"); else None."""
        left = {h.id for h in self._selector.pool(config, self._bank) if h.id not in state.asked}
        ids = sorted({sid for qid, sids in on_screen.items() if qid in left for sid in sids} - {session_id})
        if not ids:
            return None
        kind = "open interviews" if config.mode is not Mode.INTERVIEW else "other open sessions"
        return f"your {kind} (ids {', '.join(ids)})"

    def follow_up(
        self, session_id: str, config: SessionConfig, state: SessionState, question: Question, follow_up: FollowUp,
        related: list[str],
    ) -> Prompt:
        """Ask the follow-up on the question's missed point; `related` (bank questions near it) informs an LLM."""
        phrased = self._phraser.follow_up(question, follow_up.prompt, related)
        state.note_wording(f"Q{state.question_number} follow-up", phrased.note)
        state.follow_ups_asked += 1
        if follow_up.prompt == SHOW_IN_CODE:
            state.code_asked = True
        else:
            state.probed_points.append(follow_up.point)
        turn = self._add_turn(session_id, state, question, PromptKind.FOLLOW_UP, phrased.text, follow_up.point)
        return self.prompt_for(turn, config, state)

    def _add_turn(
        self, session_id: str, state: SessionState, question: Question, kind: PromptKind, text: str,
        target_point: str | None, *, user_asked: int | None = None, opens: dict[str, Any] | None = None,
    ) -> Any:
        """The new turn and the state that leads to it (naming it as current) commit together. The turn
        goes right after the one just answered, or nowhere (another process moved the session on). `opens`
        (the user and config): the first turn, stored with the session itself."""
        follows = state.current_turn_id
        position = 0 if follows is None else self._turns.turn(session_id, follows).position + 1
        if state.new_notes:
            state.turn_notes[position] = state.new_notes
        store = self._turns.add_turn if opens is None else partial(self._turns.open_session, **opens)
        turn = store(
            session_id=session_id, question_id=question.id, topic=question.topic.value,
            difficulty=question.difficulty, kind=kind.value, prompt=text, target_point=target_point,
            state=state.model_dump(mode="json"), position=position, user_asked=user_asked,
            bank_entry=question.model_dump(mode="json") if kind is PromptKind.QUESTION else None,  # judged by this copy
        )
        state.current_turn_id = turn.id
        return turn

    def prompt_for(self, turn: Any, config: SessionConfig, state: SessionState) -> Prompt:
        """The prompt a stored turn shows, with the notes told with it."""
        question = self.asked(turn.session_id, turn.question_id)
        return Prompt(
            turn=turn.position, kind=PromptKind(turn.kind), question_id=question.id, text=turn.prompt,
            topic=question.topic.value, difficulty=question.difficulty, number=state.question_number,
            total=config.num_questions, notes=state.turn_notes.get(turn.position, []),
            code_contract=contract_with_refusals(question.code) if question.code else None,
            starter_code=question.code.starter if question.code else None,
            time_limit_s=config.time_limit_s, asked_at=aware(turn.created_at), hints=list(turn.hints),
        )

    def asked(self, session_id: str, question_id: str | None) -> Question:
        """The question as the session asked it, which its answers are judged against (not the pack as it is now)."""
        if (question := self._turns.asked(session_id, question_id or "", self._bank)) is None:
            raise ConflictError(f"this session's current question {question_id!r} is no longer in the question bank; "
                                "finish it (its report covers what was answered) or start a new session")
        return question

    def history(self, user_id: int, *, besides: str | None = None) -> History:
        """What the user was asked, and how they did in sessions other than `besides` (this one's answers are
        its own business: one weak answer must not turn the rest of it into review). An interview-mode session
        still going lends its questions (never asked again) but not its scores: they are hidden until it ends, and
        a note "deployment comes back for review: your latest answers on it averaged 0.7 / 5" in another session,
        or a starting level read from them, told them (a review a reviewer saw while that report was a 409)."""
        hidden = {s.id for s in self._turns.list_sessions(user_id) if s.id == besides or scores_withheld(s)}
        scores = [(row.topic, row.score) for row in self._turns.question_scores(user_id)
                  if row.session_id not in hidden]
        return History.from_scores(self._turns.seen_questions(user_id), scores)
