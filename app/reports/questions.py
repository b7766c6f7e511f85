"""One report entry per main question, assembled from the question's turns (itself plus follow-ups)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from app.interview.models import AskedQuestion
from app.interview.penalties import question_penalties
from app.interview.scoring import handed_lines, words_of
from app.reports.model import (
    CoveredPoint,
    Exchange,
    FailedCheck,
    MisconceptionNote,
    MissedPoint,
    QuestionEntry,
)
from app.reports.quotes import answer_texts
from app.reports.replies import reply_action
from app.store.records import TurnRecord
from evaluators.base import LLM_JUDGE
from evaluators.feedback import score_note_in
from evaluators.quotes import normalise, quote_in
from evaluators.run_points import failure_said
from knowledge.schema import Question

_RANK = {"partial": 1, "covered": 2}
# How the interviewer opened the question (app/interview/phrasing.py), left out where neither a stored copy nor
# the bank has the entry and the asked wording stands in for its text.
_LEAD = re.compile(r"^(?:Let's start\.|Question \d+ of \d+\.)\s+")


def group_by_question(turns: Sequence[TurnRecord]) -> list[tuple[str, list[TurnRecord]]]:
    """Turns grouped per question id, questions in the order they were first asked."""
    groups: dict[str, list[TurnRecord]] = {}
    for turn in sorted(turns, key=lambda t: t.position):
        groups.setdefault(turn.question_id, []).append(turn)
    return list(groups.items())


def _answered(turns: Sequence[TurnRecord]) -> list[TurnRecord]:
    return [t for t in turns if t.answered and t.evaluation is not None]


def question_entry(
    *, number: int, question_id: str, turns: list[TurnRecord], bank: Mapping[str, Question],
    stored_score: float | None = None, reveal: bool = False, code_runs: int = 0,
) -> QuestionEntry:
    """The final state of one question: the last answer's score, evidence gathered over all answers, the
    transcript, and (`reveal`: the session is over) the model answer."""
    in_bank = bank.get(question_id)
    question = _as_asked(turns[0], in_bank)
    answered = _answered(turns)
    final = answered[-1] if answered else None
    evaluation: dict[str, Any] = (final.evaluation or {}) if final else {}
    texts = answer_texts(answered)
    stated = _stated_points(answered, texts, given=_code_part(turns[0], in_bank, "starter"))
    score = evaluation.get("score", stored_score) if final else None
    replies = [reply_action(t) for t in turns]  # an "I don't know" typed as the answer is one
    reply = {t.id: r for t, r in zip(turns, replies, strict=True)}
    gate = evaluation.get("gate")
    if final is not None and reply[final.id] == "dont_know" and gate in ("non-answer", "empty"):
        gate = "dont_know"  # as the button's (a session stored before the engine recorded a typed one as such)
    # The code task as asked (the turn's copy), so earlier answers are split as the engine split them (words_of).
    code = turns[0].bank_entry.get("code") if turns[0].bank_entry else in_bank.code if in_bank else None
    wrong, corrected = _misconceptions(number, question_id, turns[0].topic, answered, texts, code)
    not_stated = _missed_points(question, answered, stated, wrong=[m.quote for m in wrong]) if answered else []
    # Points the final evaluation says the code's full run made unneeded for the score (words never take from it).
    unneeded = {p["point_id"] for p in evaluation.get("points") or [] if p.get("beyond_score")}
    return QuestionEntry(
        number=number,
        question_id=question_id,
        question=question.question if question else _LEAD.sub("", turns[0].prompt),
        topic=turns[0].topic,
        difficulty=turns[0].difficulty,
        score=round(float(score), 2) if score is not None else None,
        # How the question itself ended: giving up on a follow-up leaves an answered question answered.
        answered=any(reply[t.id] == "answer" for t in answered),
        skipped=replies[0] == "skip",
        dont_know=replies[0] == "dont_know",
        follow_ups=sum(t.kind == "follow_up" for t in turns),
        # Ended on: in a session still going (a practice report read midway), the follow-up is the prompt on screen.
        follow_up_unanswered=reveal and turns[-1].kind == "follow_up" and turns[-1].action is None,
        on_screen=not reveal and turns[-1].action is None,
        hints_used=sum(t.hints_used for t in turns),
        hints=[hint for t in turns for hint in t.hints],
        gate=gate,
        covered=[p for p in stated if p.verdict == "covered"],
        partial=[p for p in stated if p.verdict == "partial"],
        # A question shown and never answered (the session ended there) had no point judged: none is missed.
        missed=[p for p in not_stated if p.point_id not in unneeded],
        worth_saying=[p for p in not_stated if p.point_id in unneeded],
        misconceptions=wrong,
        penalties=question_penalties(evaluation),
        # The final answer's score read lower than its verdicts explain: why, as its feedback said (score_note).
        scoring_notes=list(dict.fromkeys([*(str(n) for t in answered for n in (t.evaluation or {}).get("notes") or []),
                                          *map(_corrected_note, corrected),
                                          *filter(None, [_score_note(evaluation)])])),
        scored_by=scored_by(evaluation),
        feedback=evaluation.get("feedback"),
        transcript=[Exchange(kind="follow_up" if t.kind == "follow_up" else "question", prompt=t.prompt,
                             action=reply[t.id], answer=t.answer_text, code=t.answer_code) for t in turns],
        model_answer=question.reference_answer if reveal and question else None,
        code_runs=code_runs,
        contract=_code_part(turns[0], in_bank, "contract"),
        **_code_fields(answered),
    )


def _score_note(evaluation: dict[str, Any]) -> str | None:
    """The final answer's score note (evaluators/feedback.score_note), if its points were all covered: a session
    graded before stop 56 stored "No point is missing" beside a point only partly stated, which is not so."""
    if any(p.get("verdict") != "covered" and not p.get("beyond_score") for p in evaluation.get("points") or []):
        return None
    return score_note_in(str(evaluation.get("feedback") or ""))


_FALLBACK = re.compile(r"\(fallback from " + re.escape(LLM_JUDGE))
_JUDGE_FAILED = re.compile(r"^LLM judge failed: (.*); offline score used$")
_EVALUATOR_NAMES = {"offline-rubric": "offline rubric scorer"}


def tried_llm(evaluation: Mapping[str, Any]) -> bool:
    """The LLM judge scored the answer, or was asked to and its offline fallback did (evaluators/judge.py)."""
    return LLM_JUDGE in str(evaluation.get("evaluator") or "")


def scored_by(evaluation: Mapping[str, Any]) -> str | None:
    """Which evaluator gave a stored evaluation its score, in a few words: the judge's model, or the offline scorer and,
    when it stood in for a judge that failed, why (from the judge's own note)."""
    name = str(evaluation.get("evaluator") or "")
    if name in ("", "none"):  # a skip, "I don't know" or an empty answer: no evaluator read it
        return None
    if name.startswith(f"{LLM_JUDGE}:"):
        return f"llm judge ({name.removeprefix(f'{LLM_JUDGE}:')})"
    if fallback := _FALLBACK.search(name):
        offline = name[:fallback.start()].strip()
        why = next((m.group(1) for n in evaluation.get("notes") or [] if (m := _JUDGE_FAILED.match(str(n)))), None)
        return f"{_EVALUATOR_NAMES.get(offline, offline)} (LLM judge failed{f': {why}' if why else ''})"
    return _EVALUATOR_NAMES.get(name, name)


def _as_asked(first: TurnRecord, in_bank: Question | None) -> AskedQuestion | None:
    """The question as it was asked, stored with its first turn; the bank's entry as it stands now for turns
    stored before that copy was kept (None when the bank no longer has it either)."""
    if first.bank_entry:
        return AskedQuestion.model_validate(first.bank_entry)
    return AskedQuestion.of(in_bank) if in_bank else None


def _code_part(first: TurnRecord, in_bank: Question | None, part: Literal["contract", "starter"]) -> str | None:
    """A code task's contract or starter code as it was asked (the turn's copy holds the whole entry), else as the
    bank has it."""
    if first.bank_entry:
        return (first.bank_entry.get("code") or {}).get(part)
    return getattr(in_bank.code, part) if in_bank and in_bank.code else None


def _stated_points(answered: list[TurnRecord], texts: list[str], *, given: str | None = None) -> list[CoveredPoint]:
    """Best verdict per point across all answers, kept only when its quote is in the candidate's words.

    A quote that is a whole line of the task's starter code (`given`) is not: the candidate was handed it. The
    signature "def step(self, val_loss: float, model) -> bool:" was quoted as partly stating "monitors a validation
    metric in eval mode", from the starter sent back unchanged as well as from code that passed every check.

    Follow-ups exist to draw out missed points, so a point stated in any answer to the question
    counts, even if the final evaluation (say, of a terse follow-up) did not repeat it. A point shown by a run
    counts only from the latest run: code resubmitted is the code the candidate ends with, and its failed check
    is listed under the question (an earlier run's "passed hidden check X" beside "Failed check X" read as both).
    """
    runs = [i for i, turn in enumerate(answered) if turn.code_result]
    latest_run = runs[-1] if runs else 0
    best: dict[str, CoveredPoint] = {}
    handed = handed_lines(given)  # the rubric no longer reads them (scoring.without_handed); stored sessions did
    for i, turn in enumerate(answered):
        for point in (turn.evaluation or {}).get("points") or []:
            verdict, quote = point.get("verdict"), point.get("evidence")
            by_run = bool(point.get("checks"))  # the run's evidence (the checks passed), not the candidate's words
            if verdict not in _RANK or not (by_run or quote_in(quote or "", texts)) or (by_run and i < latest_run):
                continue
            if not by_run and (quote or "").strip() in handed:
                continue
            held = best.get(point["point_id"])
            if held is None or _RANK[verdict] >= _RANK[held.verdict]:
                best[point["point_id"]] = CoveredPoint(point_id=point["point_id"], description=point["description"],
                                                       verdict=verdict, quote=quote, by_run=by_run,
                                                       from_code=bool(point.get("from_code")))
    return list(best.values())


def _missed_points(
    question: AskedQuestion | None, answered: list[TurnRecord], stated: list[CoveredPoint], *, wrong: list[str],
) -> list[MissedPoint]:
    """Every rubric point not stated, in full or in part; the rubric asked by is the source, so a skip lists
    them all. A point a failed check missed keeps the sentence that stated it in words (the latest one), when a
    follow-up answered after the latest run said it and the question quotes it as no wrong claim: sessions stored
    before that rule (evaluators/run_points.py) carried the words sent with the failing code too."""
    if question is not None:
        rubric = [(p.id, p.description) for p in question.rubric]
    else:  # neither a stored copy nor the bank has the question: fall back to what the evaluations listed
        seen: dict[str, str] = {}
        for turn in answered:
            for point in (turn.evaluation or {}).get("points") or []:
                seen.setdefault(point["point_id"], point["description"])
        rubric = list(seen.items())
    said = {p.point_id for p in stated}
    runs = [i for i, turn in enumerate(answered) if turn.code_result]
    after_run = [turn.answer_text or "" for turn in answered[runs[-1] + 1 if runs else 0:]]
    in_words = {point["point_id"]: point["words"] for turn in answered
                for point in (turn.evaluation or {}).get("points") or []
                if point.get("words") and quote_in(point["words"], after_run) and not any(
                    quote_in(point["words"], [quote]) or quote_in(quote, [point["words"]]) for quote in wrong)}
    return [MissedPoint(point_id=pid, description=desc, words=in_words.get(pid)) for pid, desc in rubric
            if pid not in said]


def _misconceptions(
    number: int, question_id: str, topic: str, answered: list[TurnRecord], texts: list[str], code: Any = None,
) -> tuple[list[MisconceptionNote], list[MisconceptionNote]]:
    """The wrong claims quoted from the answers: those that stand, and those a later answer corrected. The latest
    evaluation read every answer to the question; a claim it no longer charges was corrected when it could have
    charged it again: the offline scorer finds every claim it still reads in the answers (it reads the correction
    stated on a follow-up), while the LLM judge lists only what it finds, so a claim it leaves out counts as corrected
    only where it judged that claim and found it corrected (`cleared`). A judge that merely left it out corrected
    nothing: the report had the claim corrected on a follow-up that never mentioned it."""
    notes: dict[tuple[str, str], MisconceptionNote] = {}
    latest = (answered[-1].evaluation or {}) if answered else {}
    charged = {normalise(m["claim"]) for m in latest.get("misconceptions") or []}
    cleared = {normalise(claim) for claim in latest.get("cleared") or []}
    judged_by_llm = str(latest.get("evaluator") or "").startswith(LLM_JUDGE)
    for turn in answered:
        for item in (turn.evaluation or {}).get("misconceptions") or []:
            quote = item.get("quote")
            if not quote_in(quote or "", texts):
                continue  # never tell a candidate they said something they did not
            key = (normalise(item["claim"]), normalise(quote))
            notes.setdefault(key, MisconceptionNote(
                number=number, question_id=question_id, topic=topic, claim=item["claim"],
                correction=item["correction"], quote=quote, from_code=bool(item.get("from_code")),
            ))
    read = _read_last(answered, code)
    standing = {key for key, note in notes.items() if key[0] in charged
                or (judged_by_llm and key[0] not in cleared and quote_in(note.quote, read))}
    return ([n for key, n in notes.items() if key in standing],
            [n for key, n in notes.items() if key not in standing])


def _read_last(answered: list[TurnRecord], code: Any) -> list[str]:
    """What the question's latest evaluation read: the answers, but of those before the latest code sent only their
    words, since code sent replaces the code before it, split as the engine split them (`words_of`, given the code
    task `code`). A claim quoted from replaced code was not left out by a judge that could have charged it again: the
    code was fixed."""
    last = max((i for i, turn in enumerate(answered) if (turn.answer_code or "").strip()), default=0)
    return words_of([turn.answer_text or "" for turn in answered[:last]], code) + answer_texts(answered[last:])


def _corrected_note(note: MisconceptionNote) -> str:
    said = "Your code had" if note.from_code else "You said"
    return f"{said} \u201c{note.quote}\u201d, then corrected it on a follow-up, so it is not counted as a wrong claim."


def _code_fields(answered: list[TurnRecord]) -> dict[str, Any]:
    """The latest code run for the question, if any answer carried code."""
    runs = [t.code_result for t in answered if t.code_result]
    if not runs:
        return {}
    run = runs[-1]
    checks = run.get("checks") or []
    return {
        "code_status": run.get("status"),
        "code_checks_passed": run.get("passed_checks", sum(bool(c.get("passed")) for c in checks)),
        "code_checks_total": run.get("total_checks", len(checks)),
        "failed_checks": _failed(run),
        # Code resubmitted on a follow-up: what its first run failed, which the latest run's counts no longer show.
        "first_run_failed": _failed(runs[0]) if len(runs) > 1 else [],
    }


def _failed(run: Mapping[str, Any]) -> list[FailedCheck]:
    return [FailedCheck(name=str(c.get("name", "?")), message=failure_said(c) or None)
            for c in run.get("checks") or [] if not c.get("passed")]
