"""Reports built from hand-made session records: scores, quoted evidence, study plan and renderers."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import pytest

from app.reports import FORMATS, Report, build_report, render
from app.reports import wording as w
from app.reports.wording import NOTHING_ANSWERED, overview_lines, status_flags
from app.store.records import SessionRecord, TurnRecord
from evaluators.quotes import normalise
from knowledge.loader import bank_index

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
HEADINGS = ["Interview report", "Overall", "Per topic", "Questions", "Strengths", "Misconceptions to unlearn",
            "Study plan"]

MAIN_ANSWER = ("Autograd records every operation on tensors that require grad into a graph. "
               "Calling backward walks it in reverse applying the chain rule.")
FOLLOW_UP_ANSWER = "Gradients accumulate in the .grad of leaf tensors, so you zero them each step."
CODE_TEXT = ("I subclass torch.autograd.Function <script>alert('x')</script> with static methods. "
             "The gradient passes everywhere.")
CODE = ("class MyReLU(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n        return x.clamp(min=0)\n")


def point(pid: str, verdict: str, evidence: str | None, desc: str | None = None) -> dict[str, Any]:
    credit = {"covered": 1.0, "partial": 0.5, "missed": 0.0}[verdict]
    return {"point_id": pid, "description": desc or f"The answer states {pid}.", "weight": 1.0,
            "verdict": verdict, "credit": credit, "evidence": evidence}


def evaluation(score: float, points: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"score": score, "points": points, "misconceptions": [], "feedback": "ok",
            "model_answer": "...", "evaluator": "offline-rubric", "gate": None, **extra}


def turn(position: int, question_id: str, topic: str, **fields: Any) -> TurnRecord:
    asked = T0 + timedelta(minutes=position)
    base: dict[str, Any] = {
        "id": position, "session_id": "s1", "position": position, "question_id": question_id,
        "topic": topic, "difficulty": 2, "kind": "question", "prompt": f"prompt for {question_id}",
        "target_point": None, "action": "answer", "answer_text": None, "answer_code": None,
        "hints_used": 0, "created_at": asked, "answered_at": asked + timedelta(seconds=30),
        "evaluation": None, "code_result": None,
    }
    return TurnRecord(**{**base, **fields})


def session(scores: dict[str, float], status: str = "completed") -> SessionRecord:
    return SessionRecord(
        id="s1", user_id=7, config={"mode": "interview", "num_questions": 3},
        state={"question_scores": scores, "notes": ["LLM judge failed once; offline score used"]},
        status=status, created_at=T0, updated_at=T0 + timedelta(minutes=20),
    )


def session_turns() -> list[TurnRecord]:
    """Three questions: one with a follow-up, one code answer with a misconception, one skipped."""
    main_eval = evaluation(2.0, [
        point("records-graph", "covered", "Autograd records every operation on tensors that require grad"),
        point("reverse-chain-rule", "partial", "walks it in reverse applying the chain rule"),
        point("grad-accumulates-leaves", "missed", None),
    ])
    # The follow-up's evaluation carries the earlier evidence forward, as the evaluators do.
    follow_eval = evaluation(3.8, [
        point("records-graph", "covered", "Autograd records every operation on tensors that require grad"),
        point("reverse-chain-rule", "covered", "backward walks it in reverse applying the chain rule"),
        point("grad-accumulates-leaves", "covered", "Gradients accumulate in the .grad of leaf tensors"),
        point("graph-freed", "covered", "the graph is freed after backward"),  # not in any answer: dropped
    ], penalties=["1 hint(s) used: -0.5 points"])
    code_eval = evaluation(2.5, [
        point("subclass-static-methods", "covered",
              "I subclass torch.autograd.Function <script>alert('x')</script> with static methods"),
        point("save-for-backward", "covered", "ctx.save_for_backward(x)"),
        point("gradient-mask", "missed", None),
    ], misconceptions=[{"claim": "The gradient of ReLU is one everywhere.",
                        "correction": "It is zero where the input was negative.",
                        "quote": "The gradient passes everywhere."}], code_score=2.0, rubric_score=4.0)
    checks = [{"name": "forward-values", "passed": True, "message": None},
              {"name": "backward-mask", "passed": False, "message": "gradient is not zero for x < 0"}]
    skip_eval = {**evaluation(0.0, []), "evaluator": "none", "gate": "skip"}
    return [
        turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, evaluation=main_eval),
        turn(2, "autograd-basics", "autograd", kind="follow_up", answer_text=FOLLOW_UP_ANSWER,
             hints_used=1, evaluation=follow_eval),
        turn(3, "relu-autograd-function", "autograd", difficulty=3, answer_text=CODE_TEXT, answer_code=CODE,
             evaluation=code_eval, code_result={"status": "failed", "passed_checks": 1, "total_checks": 2,
                                                "score": 0.5, "checks": checks}),
        turn(4, "save-and-load-models", "deployment", difficulty=1, action="skip", evaluation=skip_eval),
    ]


@pytest.fixture(scope="module")
def bank():
    return bank_index()


@pytest.fixture(scope="module")
def report(bank) -> Report:
    scores = {"autograd-basics": 3.8, "relu-autograd-function": 2.5, "save-and-load-models": 0.0}
    return build_report(session=session(scores), turns=session_turns(), bank=bank)


def test_final_score_is_the_last_answered_turn(report: Report) -> None:
    first = report.questions[0]
    assert (first.question_id, first.score) == ("autograd-basics", 3.8)
    assert (first.follow_ups, first.hints_used) == (1, 1)
    assert {p.point_id for p in first.covered if p.verdict == "covered"} == {
        "records-graph", "reverse-chain-rule", "grad-accumulates-leaves"}
    assert "grad-accumulates-leaves" not in {p.point_id for p in first.missed}
    assert first.penalties == ["1 hint(s) used: -0.5 points"]


def test_overall_and_per_topic_means(report: Report) -> None:
    assert report.overall_score == pytest.approx(round((3.8 + 2.5 + 0.0) / 3, 2))
    assert {t.topic: (t.score, t.questions) for t in report.topics} == {
        "autograd": (pytest.approx(3.15), 2), "deployment": (0.0, 1)}
    assert report.questions_answered == 2 and report.mode == "interview"  # the skip scores 0 but is no answer
    assert "over 3 of 3 question(s): 2 answered, 1 skipped or not known (scored 0)" in overview_lines(report)[-1]


def test_a_session_ended_early_counts_its_questions_out_of_those_planned(bank) -> None:
    """Ended after 3 of 4 questions, the report said "over 3 of 3 question(s) answered", as if that was all."""
    planned = session({"autograd-basics": 3.8, "relu-autograd-function": 2.5, "save-and-load-models": 0.0})
    planned = dataclasses.replace(planned, config={**planned.config, "num_questions": 4})
    ended = build_report(session=planned, turns=session_turns(), bank=bank)
    said = "over 3 of 4 planned question(s) (3 asked): 2 answered, 1 skipped or not known (scored 0)."
    assert overview_lines(ended)[-1].endswith(said)
    for fmt in ("markdown", "html"):  # every format says it (the PDF prints these same lines)
        assert said in unescape(render(ended, fmt)[0].decode())


def test_a_follow_up_given_up_leaves_its_question_answered_and_all_skipped_is_a_full_report(bank) -> None:
    answered = evaluation(3.1, [point("records-graph", "covered", "Autograd records every operation")])
    kept = {**answered, "follow_up": "skip"}  # the engine keeps the earlier score when a follow-up is skipped
    turns = [turn(1, "autograd-basics", "autograd", answer_text="Autograd records every operation.",
                  evaluation=answered),
             turn(2, "autograd-basics", "autograd", kind="follow_up", action="skip", evaluation=kept)]
    entry = build_report(session=session({"autograd-basics": 3.1}), turns=turns, bank=bank).questions[0]
    assert entry.answered and not entry.skipped and "skipped" not in status_flags(entry)
    skip_eval = {**evaluation(0.0, []), "evaluator": "none", "gate": "skip"}
    skipped = [turn(i, qid, "autograd", action="skip", evaluation=skip_eval)
               for i, qid in enumerate(["autograd-basics", "relu-autograd-function"], start=1)]
    nothing = build_report(session=session({}), turns=skipped, bank=bank)
    assert nothing.questions_answered == 0 and not nothing.empty and nothing.overall_score == 0.0
    assert overview_lines(nothing)[-1].endswith("over 2 of 3 planned question(s) (2 asked): 0 answered, 2 skipped or "
                                                "not known (scored 0).")  # its session planned 3
    # Every format tells the same story as the JSON: both questions, and what to study for them.
    assert [i.question_id for i in nothing.study_plan] == ["autograd-basics", "relu-autograd-function"]
    for fmt in ("markdown", "html"):
        body = render(nothing, fmt)[0].decode()
        assert NOTHING_ANSWERED not in body and "Study plan" in body and body.count("skipped") >= 2
        assert all(bank[i].question.split()[0] in body for i in ("autograd-basics", "relu-autograd-function"))


def test_every_covered_point_quotes_the_candidates_stored_answer(report: Report) -> None:
    answers = normalise(" ".join([MAIN_ANSWER, FOLLOW_UP_ANSWER, CODE_TEXT, CODE]))
    covered = [p for q in report.questions for p in q.covered]
    assert covered
    for point in covered:
        assert point.quote and normalise(point.quote) in answers
    # A claimed point whose "evidence" the candidate never wrote earns no credit.
    assert "graph-freed" not in {p.point_id for p in covered}
    assert [(s.number, s.covered, s.points) for s in report.strengths] == [(1, 3, 6)]  # graph-freed counts missed


def test_strengths_name_the_questions_answered_well_without_repeating_their_points(report: Report, bank) -> None:
    """Strengths repeated each covered point and its quote, which its question lists under Covered: a reader read
    the same sentence twice. They name the questions answered well (the study plan's complement) instead."""
    quote = "\u201cAutograd records every operation on tensors that require grad\u201d"
    question = bank["autograd-basics"].question
    for fmt, text in _document_texts(report).items():
        start = text.index(w.STRENGTHS)
        strengths = text[start:text.index(w.MISCONCEPTIONS, start)].replace("**", "")
        assert f"Q1. {question} (autograd, 3.8 / 5): 3 of 6 points covered." in strengths, fmt
        assert quote not in strengths and text.count(quote) == 1, fmt
        assert "relu" not in strengths.lower(), fmt  # 2.5 / 5: in the study plan, not a strength


def test_a_wrong_claim_is_quoted_and_corrected_once_under_its_question_and_named_in_its_section(report) -> None:
    """The quote and the correction of a wrong claim were printed under its question and again, whole, under
    Misconceptions to unlearn."""
    for fmt, text in _document_texts(report).items():
        start = text.index(w.MISCONCEPTIONS)
        section = text[start:text.index(w.STUDY_PLAN, start)]
        assert "Q2 (autograd): The gradient of ReLU is one everywhere." in section, fmt
        quoted = "You said \u201cThe gradient passes everywhere.\u201d"
        correction = "It is zero where the input was negative."
        assert text.count(quoted) == 1 and text.count(correction) == 1, fmt
        assert quoted not in section and correction not in section, fmt


@pytest.mark.parametrize("corrected", [True, False])
def test_a_wrong_claim_corrected_on_a_follow_up_is_not_charged_in_the_report(bank, corrected) -> None:
    """dropout answered "I use a high p in nn.Dropout so that most of the activations survive each pass.", then on
    the follow-up "p is the probability of zeroing an element, so p=0.2 drops about 20% of activations.": the
    follow-up's evaluation, which read both answers, no longer charged the claim, and the report still listed it
    (under the question, under Misconceptions to unlearn and in the study plan). A claim the latest evaluation
    still charges stays."""
    said = "I use a high p in nn.Dropout so that most of the activations survive each pass."
    wrong = [{"claim": "The p argument of nn.Dropout is the probability of keeping a unit.", "quote": said,
              "correction": "In PyTorch p is the probability of zeroing an element."}]
    first = evaluation(0.3, [point("random-zeroing", "missed", None)], misconceptions=wrong)
    later = evaluation(2.0, [point("random-zeroing", "missed", None)], misconceptions=[] if corrected else wrong)
    turns = [turn(1, "dropout", "regularisation", answer_text=said, evaluation=first),
             turn(2, "dropout", "regularisation", kind="follow_up", evaluation=later,
                  answer_text="Sorry, p is the probability of zeroing an element, so p=0.2 drops about 20%.")]
    built = build_report(session=session({"dropout": 2.0}), turns=turns, bank=bank)
    note = f"You said \u201c{said}\u201d, then corrected it on a follow-up, so it is not counted as a wrong claim."
    assert (built.misconceptions == [], built.question(1).misconceptions == []) == (corrected, corrected)
    assert (note in built.question(1).scoring_notes) is corrected
    study = " ".join(map(str, built.study_plan))
    assert ("keeping a unit" in study) is not corrected


@pytest.mark.parametrize(("latest", "corrected"), [
    ({"evaluator": "llm-judge:fake"}, False),
    ({"evaluator": "llm-judge:fake", "cleared": ["The p argument of nn.Dropout is the probability of keeping a unit."]},
     True),
    ({"evaluator": "offline-rubric (fallback from llm-judge:fake)"}, True),
])
def test_a_wrong_claim_the_llm_judge_leaves_out_on_a_follow_up_is_not_called_corrected(bank, latest, corrected) -> None:
    """The LLM judge lists only the claims it finds: on the follow-up it left out the claim the first answer made,
    and the report said it was "corrected on a follow-up" that never mentioned it. Corrected only where the latest
    evaluation judged the claim and cleared it (the judge's `cleared`), or was the offline scorer's, which finds
    every claim it still reads in the answers."""
    said = "I use a high p in nn.Dropout so that most of the activations survive each pass."
    wrong = [{"claim": "The p argument of nn.Dropout is the probability of keeping a unit.", "quote": said,
              "correction": "In PyTorch p is the probability of zeroing an element."}]
    first = evaluation(0.3, [point("random-zeroing", "missed", None)], misconceptions=wrong, evaluator="llm-judge:fake")
    later = evaluation(2.0, [point("random-zeroing", "missed", None)], **latest)
    turns = [turn(1, "dropout", "regularisation", answer_text=said, evaluation=first),
             turn(2, "dropout", "regularisation", kind="follow_up", evaluation=later,
                  answer_text="It also helps against overfitting.")]
    built = build_report(session=session({"dropout": 2.0}), turns=turns, bank=bank)
    assert (built.question(1).misconceptions == []) is corrected
    assert any("then corrected it on a follow-up" in n for n in built.question(1).scoring_notes) is corrected


@pytest.mark.parametrize("evaluator", ["offline-rubric", "llm-judge:fake"])
def test_a_wrong_line_of_code_a_later_answer_replaced_is_called_corrected(bank, evaluator) -> None:
    """early-stopping's code kept `self.best_state = model.state_dict()`; the fix sent on the follow-up cloned it.
    The follow-up's evaluation reads the replaced code no more, so it neither charges nor clears the claim: the LLM
    judge's silence there is no sign it left the claim standing, and the report says it was corrected."""
    line = "self.best_state = model.state_dict()"
    wrong = [{"claim": "Storing model.state_dict() in a variable keeps a snapshot of the weights.", "quote": line,
              "correction": "The state_dict holds references; clone it.", "from_code": True}]
    first = evaluation(0.1, [], misconceptions=wrong, evaluator=evaluator)
    later = evaluation(4.0, [], evaluator=evaluator)
    fix = "def step(model):\n    self.best_state = {k: v.clone() for k, v in model.state_dict().items()}\n"
    turns = [turn(1, "early-stopping", "regularisation", answer_text="Here is my helper.",
                  answer_code=f"def step(model):\n    {line}\n", evaluation=first),
             turn(2, "early-stopping", "regularisation", kind="follow_up", evaluation=later,
                  answer_text="Fixed: I now store a cloned copy.", answer_code=fix)]
    built = build_report(session=session({"early-stopping": 4.0}), turns=turns, bank=bank)
    assert built.misconceptions == [] and built.question(1).misconceptions == []
    assert f"Your code had \u201c{line}\u201d, then corrected it on a follow-up, so it is not counted as a wrong " \
           "claim." in built.question(1).scoring_notes


def test_an_i_dont_know_typed_as_the_answer_is_labelled_as_the_buttons_in_every_format(bank) -> None:
    """Sessions stored before the engine recorded a typed "I don't know" as the button's kept it as an answer (gated
    as a non-answer, scored 0): the transcript said "Your answer", the question counted as answered and was flagged
    "not scored on merit: non-answer". Read back, it is the button's "I don't know", as a new session stores it."""
    non_answer = evaluation(0.0, [point("random-zeroing", "missed", None)], gate="non-answer")
    first = evaluation(1.5, [point("random-zeroing", "partial", "Dropout zeroes some activations")])
    turns = [turn(1, "dropout", "regularisation", answer_text="I don't know, sorry.", evaluation=non_answer),
             turn(2, "autograd-basics", "autograd", answer_text="Dropout zeroes some activations.", evaluation=first),
             turn(3, "autograd-basics", "autograd", kind="follow_up", answer_text="No idea.", evaluation=first),
             turn(4, "save-and-load-models", "deployment", action="dont_know", evaluation=evaluation(0.0, [],
                                                                                                    gate="dont_know"))]
    built = build_report(session=session({"dropout": 0.0, "autograd-basics": 1.5, "save-and-load-models": 0.0}),
                         turns=turns, bank=bank)
    typed, followed, button = built.questions
    assert (typed.dont_know, typed.answered, typed.gate) == (button.dont_know, button.answered, button.gate)
    assert [e.action for e in [*typed.transcript, *followed.transcript]] == ["dont_know", "answer", "dont_know"]
    assert followed.answered and not followed.dont_know  # giving up on its follow-up leaves the question answered
    assert w.status_flags(typed) == w.status_flags(button) == ["answered \"I don't know\""]
    assert built.questions_answered == 1
    labels = [w.reply_label(e) for q in built.questions for e in q.transcript]  # as markdown, HTML and PDF say it
    assert labels == ["Answered \"I don't know\"", "Your answer", "Answered \"I don't know\"",
                      "Answered \"I don't know\""]
    for fmt in ("markdown", "html"):
        body = unescape(render(built, fmt)[0].decode())
        assert (body.count("Answered \"I don't know\""), body.count("Your answer")) == (3, 1), fmt
    [q1, _, _] = json.loads(render(built, "json")[0])["questions"]
    assert [e["action"] for e in q1["transcript"]] == ["dont_know"] and q1["dont_know"] and not q1["answered"]


def test_each_rubric_point_is_in_one_list_of_its_question_in_the_json(bank) -> None:
    """A partial point was in both `covered` and `missed` of the JSON: a client counting either list counted it."""
    rubric = [p.id for p in bank["autograd-basics"].rubric]
    turns = [turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, evaluation=evaluation(2.0, [
        point("records-graph", "covered", "Autograd records every operation on tensors that require grad"),
        point("reverse-chain-rule", "partial", "walks it in reverse applying the chain rule")]))]
    built = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank)
    [question] = json.loads(render(built, "json")[0])["questions"]
    lists = {name: [(p["point_id"], p["verdict"]) for p in question[name]] for name in ("covered", "partial", "missed")}
    assert lists == {"covered": [("records-graph", "covered")], "partial": [("reverse-chain-rule", "partial")],
                     "missed": [(pid, "missed") for pid in rubric[2:]]}
    assert question["partial"][0]["quote"] == "walks it in reverse applying the chain rule"
    [topic] = json.loads(render(built, "json")[0])["topics"]
    assert (topic["missed"], topic["partial"], topic["gaps_in"]) == (4, 1, [1])


def test_the_jsons_gaps_list_only_topics_with_a_point_not_yet_covered(bank) -> None:
    """A topic whose questions covered every point was listed in `gaps` with no points: a client listing the
    topics to work on listed a strong one."""
    every = [point(p.id, "covered", MAIN_ANSWER) for p in bank["autograd-basics"].rubric]
    turns = [turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, evaluation=evaluation(4.8, every)),
             turn(2, "save-and-load-models", "deployment", difficulty=1, action="skip",
                  evaluation={**evaluation(0.0, []), "evaluator": "none", "gate": "skip"})]
    built = build_report(session=session({"autograd-basics": 4.8, "save-and-load-models": 0.0}), turns=turns,
                         bank=bank)
    gaps = json.loads(render(built, "json")[0])["gaps"]
    assert [g["topic"] for g in gaps] == ["deployment"] and all(g["points"] for g in gaps)


def test_question_details_code_skip_and_misconceptions(report: Report) -> None:
    code, skipped = report.questions[1], report.questions[2]
    assert (code.code_checks_passed, code.code_checks_total, code.code_status) == (1, 2, "failed")
    assert [c.name for c in code.failed_checks] == ["backward-mask"]
    assert skipped.skipped and skipped.score == 0.0 and not skipped.covered
    assert len(skipped.missed) == 5  # every rubric point of the bank entry
    [wrong] = report.misconceptions
    assert wrong.quote in CODE_TEXT and wrong.correction.startswith("It is zero")
    assert [g.topic for g in report.gaps] == ["deployment", "autograd"]  # weakest topic first


def test_a_study_items_focus_names_its_wrong_claim_as_its_work_on_line_counts_it(report: Report) -> None:
    """Its "Work on" line counted "1 misconception" while the JSON's focus, the item's list of what to work on, left
    the wrong claim out (review s51, reading the reports)."""
    code_item = report.study_plan[1]
    note = report.question(code_item.number).misconceptions[0]
    assert f"{note.correction} (wrong claim: {note.claim})" in code_item.focus
    assert "1 misconception" in (w.work_on_text(report.question(code_item.number)) or "")


def test_study_plan_is_weakest_first_and_links_existing_bank_entries(report: Report, bank) -> None:
    weakest_first = ["save-and-load-models", "relu-autograd-function"]  # 0.0, then 2.5; 3.8 is not weak
    assert [item.question_id for item in report.study_plan] == weakest_first
    for item in report.study_plan:
        assert item.next
        for link in item.next:
            assert link.id in bank and link.question == bank[link.id].question
    code_item = report.study_plan[1]  # a code task: what its hidden checks found comes first
    assert code_item.focus[0] == "gradient is not zero for x < 0 (failed check backward-mask)"
    first_links = [link.id for link in report.study_plan[0].next]
    curated = [r for r in bank["save-and-load-models"].related if bank[r].framework in ("pytorch", "general")]
    assert first_links == curated[: len(first_links)] and "tf-model-saving" in bank["save-and-load-models"].related


def test_study_plan_never_sends_to_this_sessions_questions_or_to_another_framework(bank) -> None:
    # Both weak, each in the other's curated `related`: each was once recommended as the other's "next".
    weak = evaluation(1.0, [point("x", "missed", None)])
    turns = [turn(1, "device-types-multi-gpu", "distributed", answer_text="Use DataParallel.", evaluation=weak),
             turn(2, "cuda-and-pytorch", "distributed", answer_text="It is a GPU.", evaluation=weak),
             turn(3, "tensorboard-visualization", "debugging", answer_text="Logs.", evaluation=weak)]
    scores = {"device-types-multi-gpu": 1.0, "cuda-and-pytorch": 1.0, "tensorboard-visualization": 1.0}
    plan = build_report(session=session(scores), turns=turns, bank=bank).study_plan
    assert len(plan) == 3 and all(item.next for item in plan)
    for item in plan:
        for link in item.next:
            assert link.id not in scores and bank[link.id].framework in ("pytorch", "general"), (item, link)


def test_markdown_has_every_heading_and_escapes_markup(report: Report) -> None:
    body, media = render(report, "markdown")
    text = body.decode()
    assert media.startswith("text/markdown")
    assert text.startswith("# Interview report\n")
    for heading in HEADINGS[1:]:
        assert f"\n## {heading}\n" in text
    # The answers are quoted as written only inside code fences, where no viewer reads them as markup.
    outside = re.sub(r"(?ms)^(`{3,})\w*\n.*?^\1$", "", text)
    assert "<script>" not in outside and "<script>" in text and "Transcript:" in outside


def _code_task_report_saying(odd: str, bank, fmt: str) -> str:
    """A code task's report whose answer, code and failed check's message all carry `odd`."""
    checks = [{"name": "backward-mask", "passed": False, "message": f"ValueError: {odd}"}]
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text=f"words {odd}",
                  answer_code=f"x = 1\r\n# {odd}\r\ny = 2\r\n",
                  evaluation=evaluation(1.0, [point("gradient-mask", "missed", None)]),
                  code_result={"status": "failed", "passed_checks": 0, "total_checks": 1, "score": 0.0,
                               "checks": checks})]
    return render(build_report(session=session({"relu-autograd-function": 1.0}), turns=turns, bank=bank),
                  fmt)[0].decode()


def test_markdown_carries_no_control_characters_a_terminal_would_run(bank) -> None:
    """The Markdown report is read in terminals too (`interviewer report --format md`, `cat`): an escape sequence in
    an answer, in code or in the error a submission raised cleared the screen there and drew "Score 5 / 5" over the
    report, and a lone carriage return wrote over a line. Each is shown as U+FFFD; line ends typed as CRLF stay."""
    escape = "\x1b[2J\x1b[HScore 5 / 5\rhidden"
    text = _code_task_report_saying(escape, bank, "markdown")
    assert not re.search("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f]", text)
    assert "\ufffd\\[2J\ufffd\\[HScore 5 / 5 hidden" in text  # a Failed check's line: one line, brackets escaped
    assert "x = 1\n# \ufffd[2J\ufffd[HScore 5 / 5\ufffdhidden\ny = 2\n" in text  # the code, as a fenced block


def test_html_carries_no_control_characters_in_its_text_or_pre_blocks(bank) -> None:
    """The HTML report put an answer's and its code's control characters (an escape sequence, a bell, NUL, a lone
    carriage return) raw into its <pre> blocks and paragraphs, where the Markdown report shows each as U+FFFD. Now
    both do, by the same rule; line ends typed as CRLF stay line ends."""
    odd = "\x1b[31mred\x1b[0m bell\x07 nul\x00 del\x7f csi\x9b over\rwritten"
    page = _code_task_report_saying(odd, bank, "html")
    assert not re.search("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f]", page)
    shown = "\ufffd[31mred\ufffd[0m bell\ufffd nul\ufffd del\ufffd csi\ufffd over\ufffdwritten"
    assert f"<pre>x = 1\n# {shown}\ny = 2\n</pre>" in page  # the code, as written but for its controls
    assert f"<pre>words {shown}</pre>" in page  # the answer
    said = shown.replace("\ufffdwritten", " written")  # the report says a check's message on one line
    assert f"Failed check backward-mask: ValueError: {said}</p>" in page


def test_html_escapes_answers_and_embeds_charts_inline(report: Report) -> None:
    body, media = render(report, "html")
    page = body.decode()
    assert media.startswith("text/html")
    assert "<script" not in page and "&lt;script&gt;" in page
    # Each chart twice: a wide drawing and a narrow one for phones (CSS shows one of them).
    assert page.count("<svg") == 4 and page.count('class="narrow"') == 2
    assert "Score per topic" in page and "Score per question" in page
    assert not re.search(r"(?:src|href)\s*=|url\(|<link|https?://", page)
    for heading in HEADINGS:
        assert heading in page


def test_pdf_has_pages_headings_and_charts(report: Report) -> None:
    pypdf = pytest.importorskip("pypdf")
    body, media = render(report, "pdf")
    assert media == "application/pdf" and body.startswith(b"%PDF")
    reader = pypdf.PdfReader(io.BytesIO(body))
    assert len(reader.pages) >= 1
    text = " ".join((page.extract_text() or "") for page in reader.pages)
    for heading in HEADINGS:
        assert heading in text
    assert "Score per topic" in text  # the chart's own title, drawn on the page
    assert "Note: LLM judge failed once; offline score used" in " ".join(text.split())


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_the_sessions_notes_are_in_every_format(report: Report, fmt: str) -> None:
    assert "Note: LLM judge failed once; offline score used" in render(report, fmt)[0].decode()


def _pdf_quoting(bank, said: str, pypdf):
    """The PDF of a one-answer session that said `said` (credited with it), and its text, whitespace folded."""
    turns = [turn(1, "autograd-basics", "autograd", answer_text=said,
                  evaluation=evaluation(3.0, [point("records-graph", "covered", said)]))]
    built = build_report(session=session({"autograd-basics": 3.0}), turns=turns, bank=bank)
    reader = pypdf.PdfReader(io.BytesIO(render(built, "pdf")[0]))
    return reader, " ".join(" ".join((page.extract_text() or "").split()) for page in reader.pages)


def test_pdf_keeps_greek_maths_and_cyrillic_in_quotes(bank) -> None:
    """Answers quote σ, ∂, ‖w‖² and other scripts; Helvetica printed some as black boxes."""
    pypdf = pytest.importorskip("pypdf")
    from app.reports.pdf_fonts import DEJAVU
    if not (DEJAVU / "DejaVuSans.ttf").is_file():
        pytest.skip("fonts-dejavu-core is not installed (make test installs it)")
    said = "The sigmoid σ(x) squashes; ∂L/∂w ≤ ε at a minimum and λ‖w‖² is the penalty → Привет"
    reader, text = _pdf_quoting(bank, said, pypdf)
    assert text.count(said) == 2  # under the question and in its transcript


def test_json_round_trips(report: Report) -> None:
    body, media = render(report, "json")
    assert media == "application/json"
    assert Report.model_validate_json(body) == report


def test_unknown_format_lists_the_formats(report: Report) -> None:
    with pytest.raises(ValueError) as info:
        render(report, "docx")
    for fmt in FORMATS:
        assert fmt in str(info.value)


@pytest.mark.parametrize("fmt", ["json", "markdown", "html", "pdf"])
def test_empty_session_says_nothing_was_answered(bank, fmt: str) -> None:
    unanswered = turn(1, "autograd-basics", "autograd", action=None, answered_at=None)
    for turns in ([], [unanswered]):
        report = build_report(session=session({}, status="active"), turns=turns, bank=bank)
        assert report.empty and report.overall_score is None and not report.strengths
        body, _ = render(report, fmt)
        if fmt in ("markdown", "html"):
            assert "Nothing was answered" in body.decode()
        if fmt == "pdf":
            assert body.startswith(b"%PDF")


def test_markdown_shows_the_candidates_words_as_written_in_a_gfm_viewer() -> None:
    from markdown_it import MarkdownIt

    from app.reports.markdown_doc import md

    said = "~~old docs~~ https://evil.example/x &copy; &lt;b&gt; see www.x.com or a@b.com, x*y"
    page = MarkdownIt("commonmark").enable(["strikethrough", "table"]).render(md(said))
    assert "<del>" not in page and "<s>" not in page and "&amp;copy;" in page and "&amp;lt;b&amp;gt;" in page
    # No bare address is left for a GitHub-style viewer to turn into a link.
    assert not re.search(r"https?://|www\.|\w@\w", md(said))
    assert page.replace("&amp;", "&").removeprefix("<p>").removesuffix("</p>\n") == said


@pytest.mark.parametrize("width", [520, 340])  # the charts' WIDTH, and NARROW_WIDTH for phones
@pytest.mark.parametrize("labels", [
    ["regularisation", "performance-memory", "tensorflow-core", "frameworks", "autograd", "tensors",
     "training-loop", "data-loading", "architectures", "transfer-learning"],
    [f"Q{n}" for n in range(1, 31)],
])
def test_chart_labels_and_values_do_not_run_into_each_other(labels: list[str], width: int) -> None:
    from app.reports.charts import CHAR_W, BarChart, Text, layout

    shapes = layout(BarChart("Scores", labels, [0.0] * len(labels)), width)
    texts = [s for s in shapes if isinstance(s, Text) and s.size == 9 and not s.text.isdigit()]
    rows: dict[float, list[tuple[float, float]]] = {}
    for text in texts:  # centred texts: their extents on each row must not overlap
        half = len(text.text) * CHAR_W / 2
        rows.setdefault(text.y, []).append((text.x - half, text.x + half))
    for spans in rows.values():
        spans.sort()
        assert all(left[1] <= right[0] for left, right in zip(spans, spans[1:], strict=False)), spans
    assert sum(t.text in labels or t.text.endswith("\u2026") for t in texts) == len(labels)


def test_a_question_the_bank_no_longer_has_is_named_by_its_words_without_the_interviewers_lead(bank) -> None:
    gone = [turn(1, "retired-entry", "autograd", prompt="Question 2 of 3. What does detach() return?",
                 answer_text="A tensor sharing storage.", evaluation=evaluation(2.0, []))]
    entry = build_report(session=session({"retired-entry": 2.0}), turns=gone, bank=bank).questions[0]
    assert entry.question == "What does detach() return?"


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_a_fallback_or_a_dropped_verdict_of_the_llm_judge_shows_under_its_question(bank, fmt: str) -> None:
    """The README promises every fallback is visible: the evaluation's notes reach every report format."""
    why = "LLM judge failed: timeout after 20 s; offline score used"
    graded = evaluation(2.0, [point("records-graph", "covered", "Autograd records every operation")],
                        notes=[why], evaluator="offline-rubric (fallback from llm-judge:m)")
    turns = [turn(1, "autograd-basics", "autograd", answer_text="Autograd records every operation.",
                  evaluation=graded)]
    report = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank)
    assert report.questions[0].scoring_notes == [why]
    assert why in render(report, fmt)[0].decode()


def test_the_hints_given_are_quoted_in_every_format_and_older_turns_keep_their_count(bank) -> None:
    pypdf = pytest.importorskip("pypdf")
    hint = "Think about what backward does with the graph."
    turns = [turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, hints_used=1, hints=(hint,),
                  evaluation=evaluation(3.0, [point("records-graph", "covered", "Autograd records every operation")])),
             turn(2, "requires-grad", "autograd", answer_text="It tracks gradients.", hints_used=1,  # stored before
                  evaluation=evaluation(1.0, [point("tracks", "covered", "It tracks gradients")]))]
    built = build_report(session=session({"autograd-basics": 3.0, "requires-grad": 1.0}), turns=turns, bank=bank)
    assert [q.hints for q in built.questions] == [[hint], []]
    assert [q.hints_used for q in built.questions] == [1, 1]
    pdf = pypdf.PdfReader(io.BytesIO(render(built, "pdf")[0]))
    texts = {"pdf": " ".join(" ".join((page.extract_text() or "").split()) for page in pdf.pages),
             **{fmt: render(built, fmt)[0].decode() for fmt in ("markdown", "html", "json")}}
    for fmt, text in texts.items():
        assert text.count(hint) == 1, fmt
    for fmt in ("markdown", "html", "pdf"):
        assert f"Hint given: {hint}" in texts[fmt] and texts[fmt].count("1 hint(s) used") == 2, fmt


def test_the_transcript_keeps_every_prompt_and_reply_and_the_model_answer_comes_when_the_session_is_over(bank) -> None:
    fence = "Here is a tricky one:\n````\n# not a heading\n````\nand <b>bold</b>"
    turns = [turn(1, "autograd-basics", "autograd", prompt="Question 1 of 1. How does autograd work?",
                  answer_text=fence, evaluation=evaluation(2.0, [point("records-graph", "missed", None)])),
             turn(2, "autograd-basics", "autograd", kind="follow_up", prompt="Follow-up: what is stored?",
                  action="dont_know", answer_text="I don't know", evaluation=evaluation(2.0, []))]
    done = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank)
    [entry] = done.questions
    assert [(e.kind, e.prompt, e.action, e.answer) for e in entry.transcript] == [
        ("question", "Question 1 of 1. How does autograd work?", "answer", fence),
        ("follow_up", "Follow-up: what is stored?", "dont_know", "I don't know")]
    assert entry.model_answer == bank["autograd-basics"].reference_answer
    markdown = render(done, "markdown")[0].decode()
    assert "`````text\n" + fence + "\n`````" in markdown  # a longer fence: the answer's own cannot close it
    html = render(done, "html")[0].decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    assert "Answered &quot;I don&#x27;t know&quot;" in html
    active = build_report(session=session({"autograd-basics": 2.0}, status="active"), turns=turns, bank=bank)
    assert active.questions[0].model_answer is None  # an interview in progress shows no answer
    for fmt in ("markdown", "html"):
        assert "Model answer" not in render(active, fmt)[0].decode()


def test_the_printed_transcript_quotes_the_start_of_a_long_answer_and_says_where_the_rest_is(bank) -> None:
    pypdf = pytest.importorskip("pypdf")
    code = "y = 1\n" * 8_000  # 48,000 characters: the API takes 50,000 of code an answer
    turns = [turn(1, "autograd-basics", "autograd", answer_text="Short words.", answer_code=code,
                  evaluation=evaluation(2.0, [point("records-graph", "missed", None)]))]
    built = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank)
    reader = pypdf.PdfReader(io.BytesIO(render(built, "pdf")[0]))
    text = " ".join(page.extract_text() or "" for page in reader.pages)
    assert len(reader.pages) <= 6 and "Short words." in text  # set in full: 116 pages
    assert "47,521 more characters: the Markdown and HTML reports have it all" in text  # 80 lines kept
    assert code in render(built, "markdown")[0].decode()


def _document_texts(built: Report) -> dict[str, str]:
    """The Markdown, the HTML page's text and the PDF's text, each with its whitespace folded."""
    pypdf = pytest.importorskip("pypdf")
    pdf = pypdf.PdfReader(io.BytesIO(render(built, "pdf")[0]))
    html = render(built, "html")[0].decode().replace("<q>", "\u201c").replace("</q>", "\u201d")  # as a browser shows it
    html = unescape(re.sub(r"<[^>]+>", " ", html))
    texts = {"markdown": render(built, "markdown")[0].decode().replace("\\", ""), "html": html,
             "pdf": " ".join(page.extract_text() or "" for page in pdf.pages)}
    return {fmt: " ".join(text.split()) for fmt, text in texts.items()}


def test_a_partly_stated_point_is_listed_once_with_its_sentence_and_never_as_missed(bank) -> None:
    """A partial verdict, even at a credit near 0, is the graders' "stated" more often than not: it shows
    once, as partly stated with the sentence that earned it, not also under Covered and Missed."""
    rubric = {p.id: p.description for p in bank["autograd-basics"].rubric}
    partial = {**point("reverse-chain-rule", "partial", "walks it in reverse applying the chain rule",
                       desc=rubric["reverse-chain-rule"]), "credit": 0.016}
    turns = [turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, evaluation=evaluation(2.0, [
        point("records-graph", "covered", "Autograd records every operation on tensors that require grad",
              desc=rubric["records-graph"]), partial]))]
    built = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank)
    for fmt, text in _document_texts(built).items():
        question = text[text.index("Q1."):text.index("Transcript", text.index("Q1."))]
        assert question.count(rubric["reverse-chain-rule"]) == 1, fmt
        partly, missed = question.index("Partly stated"), question.index("Missed")
        assert partly < question.index(rubric["reverse-chain-rule"]) < missed, fmt
        said = "\u2014 you said \u201cwalks it in reverse applying the chain rule\u201d"  # not "node.: \u201c..."
        assert f"{rubric['reverse-chain-rule']} {said}" in question[partly:missed], fmt
        assert "partial" not in question and "partly)" not in question and "0.016" not in question, fmt


def test_a_stored_quote_is_checked_by_the_judges_rule_before_a_report_says_you_said_it(bank) -> None:
    """The report had a looser copy of the judge's quote check: an elision skipping a "never", or a word cut out of
    another ("ever" in "never"), was repeated back as the candidate's words; stored evaluations outlive the
    evaluators that checked them."""
    answer = "Autograd never frees the graph before backward ends, and it records every operation."
    stored = evaluation(2.0, [point("graph-freed", "covered", "Autograd ... frees the graph"),
                              point("reverse-chain-rule", "partial", "ever frees"),
                              point("records-graph", "covered", "it records every operation")])
    turns = [turn(1, "autograd-basics", "autograd", answer_text=answer, evaluation=stored)]
    entry = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank).questions[0]
    assert [p.point_id for p in [*entry.covered, *entry.partial]] == ["records-graph"]


def test_each_gap_is_read_once_the_topic_table_counts_them_and_the_plan_points_to_them(report: Report, bank) -> None:
    """A gap was listed three times (under its question, under Gaps, under Work on)."""
    skipped = [p.description for p in bank["save-and-load-models"].rubric]  # all 5 missed, weakest question
    texts = _document_texts(report)
    for fmt, text in texts.items():
        assert all(text.count(description) == 1 for description in skipped), fmt
        table = re.sub(r"[|\s]+", " ", text)
        assert "autograd 2 3.1 / 5 6 missed (Q1, Q2) deployment 1 0.0 / 5 5 missed (Q3)" in table, fmt
        assert "Work on: the 5 missed points listed under Q3 above." in text, fmt
        # A code task's failed check comes first; each is named under its question only.
        assert "Work on: the 1 failed check, 1 misconception and 3 missed points listed under Q2 above." in text, fmt
        assert text.count("gradient is not zero for x < 0") == 1, fmt


def test_the_topic_chart_prints_every_topic_name_whole(bank) -> None:
    """The PDF and the HTML cut "performance-memory" to "performance-mem…" under its column. Here all the bank's
    topics at once, each name measured in the PDF's own face."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    from app.reports.charts import CHAR_W, WIDTH, Text, layout, report_charts, to_svg
    from app.reports.pdf_doc import FACE

    first_of_topic: dict[str, str] = {}
    for question in bank.values():
        first_of_topic.setdefault(str(question.topic.value), question.id)
    topics = list(first_of_topic)
    assert len(topics) == 15 and "performance-memory" in topics
    turns = [turn(n, qid, topic, answer_text="Some words.", evaluation=evaluation(2.0, []))
             for n, (topic, qid) in enumerate(first_of_topic.items(), start=1)]
    built = build_report(session=session(dict.fromkeys(first_of_topic.values(), 2.0)), turns=turns, bank=bank)
    chart = report_charts(built)[0]
    labels = [s for s in layout(chart) if isinstance(s, Text) and s.text in topics]
    assert sorted(s.text for s in labels) == sorted(topics)
    for label in labels:  # each within the drawing, on a row of its own, as wide as the PDF sets it
        assert 0 <= label.x - len(label.text) * CHAR_W and label.x <= WIDTH
        assert 0 <= label.x - stringWidth(label.text, FACE[""], label.size), label
    assert len({s.y for s in labels}) == len(topics)
    svg = to_svg(chart)
    assert [topic for topic in topics if f">{topic}</text>" not in svg] == []
    pypdf = pytest.importorskip("pypdf")
    first_page = pypdf.PdfReader(io.BytesIO(render(built, "pdf")[0])).pages[0].extract_text()
    assert [topic for topic in topics if topic not in first_page] == [] and "\u2026" not in first_page


def test_pdf_sets_chinese_japanese_and_korean_in_a_face_that_has_them(bank) -> None:
    """An answer in Chinese printed as boxes: DejaVu Sans has no CJK glyphs."""
    pypdf = pytest.importorskip("pypdf")
    from app.reports.pdf_fonts import CJK, DEJAVU
    if not (CJK.is_file() and (DEJAVU / "DejaVuSans.ttf").is_file()):
        pytest.skip("fonts-wqy-microhei or fonts-dejavu-core is not installed (make test installs them)")
    said = "梯度累积：在多个小批次上调用 backward，勾配の蓄積、기울기 누적 x*y < z"
    reader, text = _pdf_quoting(bank, said, pypdf)
    assert text.count(said) == 2  # under the question (a paragraph) and in the transcript (as written)
    faces = {str(font["/BaseFont"]) for page in reader.pages
             for font in page["/Resources"]["/Font"].values() for font in [font.get_object()]}
    assert any("WenQuanYi" in face for face in faces), faces
    from app.reports.pdf_fonts import wrapped
    long_line = "梯度" * 60 + " and then some words"
    lines = wrapped(long_line, 95, "DejaVuSansMono").split("\n")
    assert "".join(lines) == long_line and len(lines) == 3 and all(len(line) <= 57 for line in lines)


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_a_point_the_code_showed_by_its_checks_is_covered_and_praised_with_the_run_as_evidence(bank, fmt) -> None:
    """A point judged from the run carries the checks it passed, not a quote: it was dropped from the covered
    points and listed as a gap, since no answer holds the words "passed hidden checks ..."."""
    shown = {**point("gradient-mask", "covered", "passed hidden checks gradient-values, gradcheck-float64"),
             "checks": ["gradient-values", "gradcheck-float64"]}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=evaluation(4.0, [shown]),
                  code_result={"status": "passed", "checks": []})]
    state = session({"relu-autograd-function": 4.0})
    state = dataclasses.replace(state, state={**state.state, "code_runs": {"relu-autograd-function": 3}})
    report = build_report(session=state, turns=turns, bank=bank)
    entry = report.questions[0]
    assert [p.point_id for p in entry.covered] == ["gradient-mask"] and entry.covered[0].by_run
    assert "gradient-mask" not in {p.point_id for p in entry.missed}
    assert [(s.covered, s.by_run) for s in report.strengths] == [(1, 1)]
    body = render(report, fmt)[0].decode()
    assert "your code passed hidden checks gradient-values, gradcheck-float64" in body
    assert "1 of 5 points covered (1 shown by the hidden checks your code passed)." in body
    assert "Hidden checks run 3 times with Run checks." in body


@pytest.mark.parametrize("fmt", ["markdown", "html", "pdf"])
def test_a_point_quoted_from_the_code_says_so_and_not_you_said(bank, fmt) -> None:
    """A word point credited on a line of the code read "— you said “optimizer.step()”" (review s49)."""
    line = "ctx.save_for_backward(x)"
    quoted = {**point("save-for-backward", "partial", line), "from_code": True}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text="I keep x.", answer_code=CODE,
                  evaluation=evaluation(2.0, [quoted]), code_result={"status": "failed", "checks": []})]
    report = build_report(session=session({"relu-autograd-function": 2.0}), turns=turns, bank=bank)
    assert report.questions[0].partial[0].from_code
    text = _document_texts(report)[fmt]
    assert "your code has" in text and "you said" not in text


@pytest.mark.parametrize("fmt", ["markdown", "html", "pdf"])
def test_a_wrong_claim_quoted_from_the_code_says_so_and_not_you_said(bank, fmt) -> None:
    """A misconception stated by a line of the code read "You said “return grad_output.clamp(min=0)”"."""
    line = "return grad_output.clamp(min=0)"
    wrong = {"claim": "backward should return the ReLU of grad_output.", "correction": "Mask by the input.",
             "quote": line, "from_code": True}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text="My ReLU.", answer_code=CODE + f"    {line}\n",
                  evaluation=evaluation(2.0, [], misconceptions=[wrong]),
                  code_result={"status": "failed", "checks": []})]
    report = build_report(session=session({"relu-autograd-function": 2.0}), turns=turns, bank=bank)
    assert report.questions[0].misconceptions[0].from_code
    text = _document_texts(report)[fmt]
    assert "Your code has" in text and "You said" not in text


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_a_point_a_failed_check_missed_says_the_words_that_stated_it(bank, fmt) -> None:
    """A follow-up answered right in words ("Use F.logsigmoid") left the run-judged point missed, without a word that
    the answer was read (review s49)."""
    said = "Use F.logsigmoid instead."
    missed = {**point("gradient-mask", "missed", "failed hidden check gradcheck-float64: wrong"),
              "checks": ["gradcheck-float64"], "words": said}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=evaluation(1.0, [])),
             turn(2, "relu-autograd-function", "autograd", kind="follow_up", answer_text=said,
                  evaluation=evaluation(1.0, [missed]))]
    report = build_report(session=session({"relu-autograd-function": 1.0}), turns=turns, bank=bank)
    assert {p.point_id: p.words for p in report.questions[0].missed}["gradient-mask"] == said
    body = render(report, fmt)[0].decode().replace("\\", "")
    assert re.search(f"said in words, not yet shown by your code: (\u201c|<q>){re.escape(said)}", body)


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_words_sent_with_the_failing_code_are_not_said_beside_the_failed_check_of_a_stored_session(bank, fmt) -> None:
    """Sessions stored before review s51 carry, beside the failed check, the sentence sent with the failing code
    ("I use the unbiased variance ...", which the check proves wrong): the report shows it only from a follow-up
    answered after the run, and never a sentence the question quotes as a wrong claim."""
    said = "I use the unbiased variance and put eps inside the square root."
    missed = {**point("biased-variance-eps", "missed", "failed hidden check biased-variance-and-eps: wrong"),
              "checks": ["biased-variance-and-eps"], "words": said}
    run = {"status": "failed", "checks": [{"name": "biased-variance-and-eps", "passed": False, "message": "wrong"}]}
    wrong = {"claim": "c", "correction": "r", "quote": said}
    cases = {  # (the turns, the words the report shows)
        "with the code": ([turn(1, "layer-norm-from-scratch", "modules", answer_text=said, answer_code=CODE,
                                evaluation=evaluation(3.7, [missed]), code_result=run)], None),
        "on a follow-up": ([turn(1, "layer-norm-from-scratch", "modules", answer_text="Mine.", answer_code=CODE,
                                 evaluation=evaluation(3.7, []), code_result=run),
                            turn(2, "layer-norm-from-scratch", "modules", kind="follow_up", answer_text=said,
                                 evaluation=evaluation(3.7, [missed]))], said),
    }
    cases["quoted as wrong"] = ([*cases["on a follow-up"][0][:1], dataclasses.replace(
        cases["on a follow-up"][0][1], evaluation=evaluation(3.7, [missed], misconceptions=[wrong]))], None)
    for turns, shown in cases.values():
        report = build_report(session=session({"layer-norm-from-scratch": 3.7}), turns=turns, bank=bank)
        assert {p.point_id: p.words for p in report.questions[0].missed}["biased-variance-eps"] == shown
        body = render(report, fmt)[0].decode()
        assert ("said in words, not yet shown by your code" in body) is (shown is not None)


FIX_PENALTY = "code fixed on a follow-up: what the new run added is halved"


def _log_softmax_fixed_on_a_follow_up(*, penalties: list[str]) -> list[TurnRecord]:
    """stable-log-softmax as review s51 answered it: naive code failing its 5 checks, fixed on the follow-up (every
    check passed, every point covered), then the overflow explained on a second follow-up."""
    checks = ["values-last-dim", "large-logits", "other-dims", "masked-entries", "gradients"]
    failed = {"status": "failed", "checks": [{"name": c, "passed": False, "message": f"{c} wrong"} for c in checks]}
    passed = {"status": "passed", "checks": [{"name": c, "passed": True} for c in checks]}
    said = "With float32, exp(1000) overflows to inf, so the sum is inf and log gives inf."
    by_run = [{**point(pid, "covered", "passed hidden checks"), "checks": ["large-logits"]}
              for pid in ("max-subtraction", "log-sum-exp-form", "keepdim-any-dim", "gradient-correct")]
    last = evaluation(2.8, [*by_run, point("overflow-problem", "covered", said)], question_penalties=penalties)
    return [turn(1, "stable-log-softmax", "autograd", answer_text="Subtract the max.", answer_code=CODE,
                 evaluation=evaluation(0.6, []), code_result=failed),
            turn(2, "stable-log-softmax", "autograd", kind="follow_up", answer_text="Shift invariance.",
                 answer_code=CODE + "# fixed\n", evaluation=evaluation(2.8, by_run, question_penalties=penalties),
                 code_result=passed),
            turn(3, "stable-log-softmax", "autograd", kind="follow_up", answer_text=said, evaluation=last)]


@pytest.mark.parametrize("fmt", ["markdown", "html", "pdf"])
def test_a_question_under_the_bar_with_every_point_covered_says_its_penalties_cost_the_points(bank, fmt) -> None:
    """Review s51: stable-log-softmax scored 2.8 / 5 with all 5 points covered (its code fixed on a follow-up, the
    fix's gain halved); its study item read reason low_score, an empty focus and no "Work on" line. It now names the
    penalty as what cost the points, and the checks the first run failed as what to work on."""
    built = build_report(session=session({"stable-log-softmax": 2.8}), turns=_log_softmax_fixed_on_a_follow_up(
        penalties=[FIX_PENALTY]), bank=bank)
    entry = built.question(1)
    assert (len(entry.covered), entry.missed, entry.partial, entry.failed_checks) == (5, [], [], [])
    item = built.study_plan[0]
    assert item.reason == "penalties" and FIX_PENALTY in item.focus
    assert "large-logits wrong (failed check large-logits on the first run)" in item.focus
    text = _document_texts(built)[fmt]
    assert f"No point is missing now: its penalties brought the score to 2.8 / 5 ({FIX_PENALTY})." in text
    assert "Work on: the 5 checks your first run failed listed under Q1 above." in text


def test_a_question_under_the_bar_with_every_point_covered_and_no_penalty_says_why_it_is_studied(bank) -> None:
    """With no penalty and nothing missed (the score also weighs the answer as a whole), the item says so rather
    than standing with nothing to work on."""
    turns = [turn(1, "dropout", "regularisation", answer_text="It drops units.",
                  evaluation=evaluation(2.5, [point(p.id, "covered", "It drops units.")
                                              for p in bank["dropout"].rubric]))]
    built = build_report(session=session({"dropout": 2.5}), turns=turns, bank=bank)
    assert [(i.reason, i.focus) for i in built.study_plan] == [("low_score", [])]
    assert "No point is missing, yet it scored 2.5 / 5: the score also weighs how closely the answer as a whole " \
           "states the model answer." in _document_texts(built)["markdown"]


def test_a_failed_check_is_told_in_its_own_words_not_torchs_comparison_report(bank) -> None:
    """"Failed check gradient-values: Tensor-likes are not close! Mismatched elements: 14 / 30 (46.7%) Greatest
    absolute difference: ..." under the question and in the study plan's focus (review s49)."""
    report_text = ("Tensor-likes are not close!\n\nMismatched elements: 14 / 30 (46.7%)\nGreatest absolute "
                   "difference: 1.33 at index (1, 5) (up to 1e-05 allowed)")
    checks = [{"name": "gradient-values", "passed": False, "message": report_text,
               "description": "x.grad matches the true ReLU gradient"}]
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=evaluation(1.0, []),
                  code_result={"status": "failed", "checks": checks})]
    report = build_report(session=session({"relu-autograd-function": 1.0}), turns=turns, bank=bank)
    said = "not met: x.grad matches the true ReLU gradient (14 of 30 values differ)"
    assert [c.message for c in report.questions[0].failed_checks] == [said]
    assert report.study_plan[0].focus[0] == f"{said} (failed check gradient-values)"
    assert "Greatest" not in render(report, "markdown")[0].decode()


def test_a_point_an_earlier_run_showed_but_the_latest_run_failed_is_not_praised(bank) -> None:
    """A re-check resubmitted worse code on a follow-up: the report listed "Subclasses ... — your code passed hidden
    checks is-autograd-function" as covered and a strength, beside "Failed check is-autograd-function"."""
    shown = {**point("subclass-static-methods", "covered", "passed hidden check is-autograd-function"),
             "checks": ["is-autograd-function"]}
    lost = {**point("subclass-static-methods", "missed", "failed hidden check is-autograd-function"),
            "checks": ["is-autograd-function"]}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=evaluation(1.2, [shown]),
                  code_result={"status": "failed", "checks": [{"name": "is-autograd-function", "passed": True}]}),
             turn(2, "relu-autograd-function", "autograd", kind="follow_up", answer_code=CODE,
                  evaluation=evaluation(1.0, [lost]),
                  code_result={"status": "failed", "checks": [{"name": "is-autograd-function", "passed": False}]})]
    report = build_report(session=session({"relu-autograd-function": 1.0}), turns=turns, bank=bank)
    entry = report.questions[0]
    assert "subclass-static-methods" not in {p.point_id for p in entry.covered}
    assert "subclass-static-methods" in {p.point_id for p in entry.missed}
    assert not report.strengths
    assert [c.name for c in entry.failed_checks] == ["is-autograd-function"]


def test_the_model_answer_prints_its_code_without_fence_lines(bank) -> None:
    """A preformatted model answer printed "```python" as text; the Markdown's own fence around the code is one."""
    reference = bank["relu-autograd-function"].reference_answer
    assert "```python" in reference
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text="Some words.", evaluation=evaluation(1.0, []))]
    done = build_report(session=session({"relu-autograd-function": 1.0}), turns=turns, bank=bank)
    code_line = next(line for line in reference.splitlines() if "def backward" in line)
    html = render(done, "html")[0].decode()
    answer = html[html.index("Model answer"):]
    assert "```" not in answer and code_line.strip() in answer
    markdown = render(done, "markdown")[0].decode()
    answer = markdown[markdown.index("Model answer"):]
    assert answer.count("```python\n") == 1 and f"\n{code_line}\n" in answer


def _model_answer_report(bank: dict[str, Any], question_id: str = "relu-autograd-function") -> Report:
    turns = [turn(1, question_id, "autograd", answer_text="Some words.", evaluation=evaluation(1.0, []))]
    return build_report(session=session({question_id: 1.0}), turns=turns, bank=bank)


def _prose_and_code(bank: dict[str, Any]) -> tuple[str, list[str]]:
    """relu-autograd-function's model answer: its first paragraph of prose, as one line, and its solution's lines."""
    reference = bank["relu-autograd-function"].reference_answer
    prose = " ".join(reference.split("```")[0].split("\n\n")[0].split())
    return prose, bank["relu-autograd-function"].code.solution.strip().splitlines()


def test_a_code_tasks_model_answer_is_prose_then_a_code_block_in_markdown_and_html(bank) -> None:
    """The model answer (prose, then the solution in a python fence) was one preformatted block in every report:
    the Markdown put the prose in the code's `text` fence, the HTML in the code's <pre>. Prose is paragraphs now,
    and the code a block of its own with its lines and indentation."""
    prose, code = _prose_and_code(bank)
    done = _model_answer_report(bank)
    markdown = render(done, "markdown")[0].decode()
    answer = markdown[markdown.index("Model answer"):].split("\n## ")[0]
    fence = answer.index("```python\n")
    assert prose in answer.replace("\\", "") and answer.index(prose.split()[0]) < fence
    assert "```text" not in answer and answer[fence:].split("\n")[1:len(code) + 2] == [*code, "```"]
    html = render(done, "html")[0].decode()
    answer = html[html.index("Model answer"):html.index("</details>", html.index("Model answer"))]
    assert re.search(r"<p>Subclass torch\.autograd\.Function [^<]*</p>", answer), answer[:400]
    block = re.search(r"<pre><code>(.*?)</code></pre>", answer, re.S)
    assert block is not None and unescape(block[1]).splitlines() == code
    assert "Subclass" not in "".join(re.findall(r"<pre>.*?</pre>", answer, re.S))


def test_a_model_answers_inline_code_is_set_as_code_not_shown_as_backticks(bank) -> None:
    """gru-cell-from-scratch's prose names `weight_ih`: the Markdown showed \\`weight\\_ih\\` (escaped, so a viewer
    printed the backticks) and the HTML the backticks themselves."""
    done = _model_answer_report(bank, "gru-cell-from-scratch")
    markdown = render(done, "markdown")[0].decode()
    answer = markdown[markdown.index("Model answer"):].split("\n## ")[0]
    assert "`weight_ih` (3H, I)" in answer and "\\`" not in answer
    html = render(done, "html")[0].decode()
    answer = html[html.index("Model answer"):html.index("</details>", html.index("Model answer"))]
    prose = "".join(re.findall(r"<p>.*?</p>", answer, re.S))
    assert "<code>weight_ih</code> (3H, I)" in prose and "`" not in prose


def test_a_code_tasks_model_answer_sets_prose_in_the_body_face_and_code_in_mono_in_the_pdf(bank) -> None:
    """In the PDF the prose was set in the 8-point mono block with the code, as if it were code."""
    pypdf = pytest.importorskip("pypdf")
    prose, code = _prose_and_code(bank)
    pdf = pypdf.PdfReader(io.BytesIO(render(_model_answer_report(bank), "pdf")[0]))
    runs: list[tuple[str, str]] = []
    for page in pdf.pages:
        page.extract_text(visitor_text=lambda text, _cm, _tm, font, _size: runs.append(
            (text, str((font or {}).get("/BaseFont", "")))))
    after = runs[next(n for n, (text, _) in enumerate(runs) if "Model answer" in text):]

    def face(words: str) -> str:
        return next(font for text, font in after if words in text)

    assert "Mono" not in face("Subclass torch.autograd.Function") and "Courier" not in face("Subclass")
    assert "Mono" in face("class MyReLU(torch.autograd.Function):") or "Courier" in face("class MyReLU")
    text = "\n".join(page.extract_text() for page in pdf.pages)
    shown = {line.strip() for line in text[text.index("Model answer"):].splitlines()}
    assert all(line.strip() in shown for line in code if line.strip()), shown  # each code line on a line of its own


def test_the_model_answer_prose_is_one_line_a_paragraph_for_the_page_to_wrap(bank) -> None:
    """The bank breaks its prose near 95 characters; a page wrapping those lines again (the PDF at 95, a narrow
    browser) left one-word lines between them. The page wraps a paragraph; code keeps its lines."""
    pypdf = pytest.importorskip("pypdf")
    reference = bank["resnet-block"].reference_answer
    prose = reference.split("\n\n")[0]
    assert "```" not in prose and max(len(line) for line in prose.splitlines()) > 95  # wider than the PDF's lines
    turns = [turn(1, "resnet-block", "architectures", answer_text="Some words.", evaluation=evaluation(1.0, []))]
    done = build_report(session=session({"resnet-block": 1.0}), turns=turns, bank=bank)
    html = unescape(render(done, "html")[0].decode())
    assert " ".join(prose.split("\n")) in html.replace("<code>", "`").replace("</code>", "`")  # inline code as code
    code_line = next(line for line in reference.splitlines() if line.startswith("    "))
    assert "\n" + code_line + "\n" in html  # indentation and line kept
    text = "\n".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(render(done, "pdf")[0])).pages)
    answer = text[text.index("Model answer"):].splitlines()[1:]
    last_word = prose.split()[-1]
    lines = answer[:next(n for n, line in enumerate(answer) if last_word in line)]
    assert lines and all(len(line.split()) > 2 for line in lines), lines  # no stray words between full lines


def test_a_pdf_list_title_goes_to_the_next_page_with_its_first_item() -> None:
    """The title's keep-with-next did nothing: reportlab keeps a flowable with the next one only when that one is
    not a container, and the items were a ListFlowable, so a real report still left "Missed" at a page's foot."""
    pypdf = pytest.importorskip("pypdf")
    from reportlab.platypus import SimpleDocTemplate, Spacer

    from app.reports.pdf_doc import _titled

    buffer = io.BytesIO()
    doc = SimpleDocTemplate(buffer)
    room = 25  # points left on the first page: the title's line fits there, its first item does not
    doc.build([Spacer(1, doc.height - 12 - room), *_titled("Missed", ["The first point.", "The second point."])])
    first, second = (page.extract_text() for page in pypdf.PdfReader(io.BytesIO(buffer.getvalue())).pages)
    assert "Missed" not in first and "Missed" in second and "The first point." in second


@pytest.mark.parametrize("fmt", ["markdown", "html", "pdf"])
def test_a_code_task_answered_in_words_only_says_its_hidden_checks_did_not_run(bank, fmt) -> None:
    """A code task answered without code showed its score and points with no word about its checks: the session
    said "no code was sent, so no hidden check ran", the report a reader downloads did not."""
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text=CODE_TEXT, evaluation=evaluation(1.4, [])),
             turn(2, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, evaluation=evaluation(3.0, []))]
    built = build_report(session=session({"relu-autograd-function": 1.4, "autograd-basics": 3.0}), turns=turns,
                         bank=bank)
    text = _document_texts(built)[fmt]
    assert text.count("No code was sent, so the hidden checks did not run: the answer was read as words only.") == 1
    assert text.index("Q1.") < text.index("No code was sent") < text.index("Q2.")
    ran = build_report(session=session({"relu-autograd-function": 4.0}), bank=bank, turns=[
        turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=evaluation(4.0, []),
             code_result={"status": "passed", "passed_checks": 4, "total_checks": 4, "checks": []})])
    assert "No code was sent" not in _document_texts(ran)[fmt]


def test_a_code_tasks_transcript_holds_the_contract_its_prompt_points_to(bank) -> None:
    """The prompt asks for a solution "to the contract below", and no report had the contract: a reader of a shared
    report could not tell what the code was asked to do. It is the contract as asked (the turn's stored copy)."""
    asked = bank["relu-autograd-function"].model_dump(mode="json")
    asked["code"]["contract"] = "Define MyReLU as this session asked it, with a forward and a hand-written backward."
    prompt = "Write your own ReLU. Write your solution to the contract below; hidden checks will run it."
    turns = [turn(1, "relu-autograd-function", "autograd", prompt=prompt, bank_entry=asked, answer_code=CODE,
                  evaluation=evaluation(2.0, []), code_result={"status": "failed", "passed_checks": 1,
                                                               "total_checks": 2, "checks": []})]
    built = build_report(session=session({"relu-autograd-function": 2.0}), turns=turns, bank=bank)
    for fmt, text in _document_texts(built).items():
        order = [text.index(prompt), text.index("Contract:"), text.index(asked["code"]["contract"]),
                 text.index("Your answer")]
        assert order == sorted(order), fmt
    assert bank["relu-autograd-function"].code.contract not in _document_texts(built)["markdown"]


def test_a_question_shown_when_the_session_ended_is_not_answered_and_none_of_its_points_is_missed(bank) -> None:
    """Ended while question 2 was on screen, the report listed its 5 points under "Missed", as if answered wrongly
    (and the JSON counted them among the missed ones); it is not scored, so none of its points was judged."""
    turns = [*session_turns()[:3],
             turn(4, "save-and-load-models", "deployment", difficulty=1, action=None, answered_at=None)]
    built = build_report(session=session({"autograd-basics": 3.8, "relu-autograd-function": 2.5}), turns=turns,
                         bank=bank)
    shown = built.questions[2]
    assert shown.score is None and (shown.covered, shown.partial, shown.missed) == ([], [], [])
    assert w.NOT_ANSWERED in status_flags(shown)
    # Scored out of the questions answered; the one shown counts in no mean, topic or plan.
    assert built.overall_score == pytest.approx(3.15) and [t.topic for t in built.topics] == ["autograd"]
    assert all(item.number != 3 for item in built.study_plan) and all(g.topic != "deployment" for g in built.gaps)
    said = "over 2 of 3 question(s): 2 answered, 1 shown but not answered (not scored)."
    assert overview_lines(built)[-1].endswith(said)
    planned = session({"autograd-basics": 3.8, "relu-autograd-function": 2.5})
    planned = dataclasses.replace(planned, config={**planned.config, "num_questions": 5})
    assert overview_lines(build_report(session=planned, turns=turns, bank=bank))[-1].endswith(
        "over 2 of 5 planned question(s) (3 asked): 2 answered, 1 shown but not answered (not scored).")
    unjudged = [p.description for p in bank["save-and-load-models"].rubric]
    for fmt, text in _document_texts(built).items():
        question = text[text.index("Q3."):text.index("Transcript", text.index("Q3."))]
        assert "Missed" not in question and w.NOT_ANSWERED in question, fmt
        assert not any(d in text for d in unjudged) and said in text, fmt


def test_a_follow_up_on_screen_when_the_session_ended_is_said_not_answered_and_costs_nothing(bank) -> None:
    """Ended while a follow-up waited, the report said "1 follow-up(s)" and only its transcript showed no reply: no
    flag said it was not answered, as one does for a main question. It is said under its question in every format;
    the earlier answer's score stands, and nothing is counted as answered wrongly or shown and not answered."""
    main, follow_up = session_turns()[:2]
    turns = [main, dataclasses.replace(follow_up, action=None, answered_at=None, answer_text=None, evaluation=None)]
    built = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank)
    entry = built.questions[0]
    assert entry.follow_up_unanswered and entry.answered and entry.score == built.overall_score == 2.0
    assert w.FOLLOW_UP_NOT_ANSWERED in status_flags(entry) and w.NOT_ANSWERED not in status_flags(entry)
    assert "not answered" not in overview_lines(built)[-1]
    for fmt, text in _document_texts(built).items():
        assert w.FOLLOW_UP_NOT_ANSWERED in text[:text.index("Transcript")], fmt
    answered = build_report(session=session({"autograd-basics": 3.8}), turns=session_turns()[:2], bank=bank)
    assert not answered.questions[0].follow_up_unanswered
    # Read midway through a practice session, the follow-up is the prompt on screen: not one the session ended on.
    on_screen = build_report(session=session({"autograd-basics": 2.0}, status="active"), turns=turns, bank=bank)
    assert not on_screen.questions[0].follow_up_unanswered
    assert all(w.FOLLOW_UP_NOT_ANSWERED not in text for text in _document_texts(answered).values())


def test_a_prompt_on_screen_in_a_session_still_going_is_not_said_to_be_where_it_ended(bank) -> None:
    """Read midway through a practice session, the report said of the question on screen "Not answered: the session
    ended here", and its transcript "No reply: the session ended here": the session had not ended."""
    shown = [*session_turns()[:3], turn(4, "save-and-load-models", "deployment", difficulty=1, action=None,
                                        answered_at=None)]
    scores = {"autograd-basics": 3.8, "relu-autograd-function": 2.5}
    going = build_report(session=session(scores, status="active"), turns=shown, bank=bank)
    entry = going.questions[2]
    assert entry.on_screen and w.ON_SCREEN in status_flags(entry) and w.NOT_ANSWERED not in status_flags(entry)
    for fmt, text in _document_texts(going).items():
        assert w.ON_SCREEN in text and "No reply yet: the session is still going" in text, fmt
        assert "the session ended here" not in text, fmt
    main, follow_up = session_turns()[:2]
    waiting = [main, dataclasses.replace(follow_up, action=None, answered_at=None, answer_text=None, evaluation=None)]
    flags = status_flags(build_report(session=session({"autograd-basics": 2.0}, status="active"), turns=waiting,
                                      bank=bank).questions[0])
    assert w.FOLLOW_UP_ON_SCREEN in flags and w.FOLLOW_UP_NOT_ANSWERED not in flags
    ended = build_report(session=session(scores), turns=shown, bank=bank).questions[2]
    assert not ended.on_screen and w.NOT_ANSWERED in status_flags(ended) and w.ON_SCREEN not in status_flags(ended)


def _at_the_bar_not_strong(bank) -> Report:
    """Q1 scored 3.8 with every point partly stated and none in full; Q2, a code task, scored 4.7 on words alone (no
    code sent, so its checks never ran); Q3 scored 4.5 with points stated in full."""
    rubric = {p.id: p.description for p in bank["autograd-basics"].rubric}
    relu = {p.id: p.description for p in bank["relu-autograd-function"].rubric}
    first = bank["save-and-load-models"].rubric[0]
    partly = evaluation(3.8, [point(pid, "partial", said, desc=rubric[pid]) for pid, said in (
        ("records-graph", "Autograd records every operation"), ("reverse-chain-rule", "walks it in reverse"))])
    words = evaluation(4.7, [point("subclass-static-methods", "covered", "I subclass torch.autograd.Function",
                                   desc=relu["subclass-static-methods"])])
    saved = evaluation(4.5, [point(first.id, "covered", "save the state_dict", desc=first.description)])
    turns = [turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, evaluation=partly),
             turn(2, "relu-autograd-function", "autograd", answer_text=CODE_TEXT, evaluation=words),
             turn(3, "save-and-load-models", "deployment", answer_text="I save the state_dict and load it back.",
                  evaluation=saved)]
    scores = {"autograd-basics": 3.8, "relu-autograd-function": 4.7, "save-and-load-models": 4.5}
    return build_report(session=session(scores), turns=turns, bank=bank)


def test_a_question_at_the_bar_with_no_point_in_full_or_a_code_task_never_run_is_studied_not_praised(bank) -> None:
    """A question scored 3.8 with its points only partly stated was in neither Strengths nor the study plan (its gaps
    showed only in the topic table); a code task scored 4.7 on words alone, its checks never run, was a strength.
    Every scored question is now one or the other, and the plan says why these two are in it."""
    built = _at_the_bar_not_strong(bank)
    assert [s.number for s in built.strengths] == [3]
    assert [(i.number, i.reason) for i in built.study_plan] == [(1, "nothing_in_full"), (2, "checks_not_run")]
    assert built.study_plan[1].focus[0] == "the code: its hidden checks never ran"
    partly = "It scored 3.8 / 5, but no point was stated in full."
    unrun = ("No code was sent, so its hidden checks never ran and 4.7 / 5 is for your words alone: write the code "
             "to the contract and run them.")
    assert [w.study_reason_text(built.question(n)) for n in (1, 2, 3)] == [partly, unrun, None]
    for fmt, text in _document_texts(built).items():
        strengths = text[text.rindex(w.STRENGTHS):text.rindex(w.MISCONCEPTIONS)]
        plan = text[text.rindex(w.STUDY_PLAN):]
        assert "Q3." in strengths and "Q1." not in strengths and "Q2." not in strengths, fmt
        assert plan.index("Q1.") < plan.index(partly) < plan.index("Q2.") < plan.index(unrun), fmt
        assert "Work on: the 4 missed points and 2 partly stated points listed under Q1 above." in plan, fmt
    assert json.loads(render(built, "json")[0])["study_plan"][0]["reason"] == "nothing_in_full"


def test_code_sent_to_a_server_without_a_runner_is_not_said_to_be_missing(bank) -> None:
    """A code task whose code was read as text (no code runner on the server) was reported as "No code was sent"."""
    words = evaluation(4.2, [point("subclass-static-methods", "covered", "class MyReLU(torch.autograd.Function):")])
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=words)]
    built = build_report(session=session({"relu-autograd-function": 4.2}), turns=turns, bank=bank)
    entry = built.questions[0]
    assert w.code_text(entry) == w.NOT_RUN and w.NO_CODE not in w.detail_lines(entry)
    assert not built.strengths and built.study_plan[0].reason == "checks_not_run"
    assert w.study_reason_text(entry) == ("Your code did not run (code checks were unavailable), so 4.2 / 5 is for "
                                          "how it reads: run it against the hidden checks.")


def test_a_line_of_the_starter_code_is_not_quoted_as_the_candidates_words(bank) -> None:
    """The starter sent back unchanged (every check failed) was told "you said 'def step(self, val_loss: float,
    model: torch.nn.Module) -> bool:'" as partly stating that the helper monitors a validation metric in eval mode:
    that line is the task's own. A line the candidate wrote themselves still counts."""
    task = bank["early-stopping"]
    assert task.code is not None
    rubric = {p.id: p.description for p in task.rubric}
    signature = "def step(self, val_loss: float, model: torch.nn.Module) -> bool:"
    own = "if val_loss < self.best_loss - self.min_delta:"
    said = evaluation(0.0, [point("monitor-validation", "partial", signature, desc=rubric["monitor-validation"]),
                            point("min-delta", "partial", own, desc=rubric["min-delta"])])
    code = task.code.starter.replace("        raise NotImplementedError", f"        {own}\n            return False")
    turns = [turn(1, "early-stopping", "regularisation", answer_code=code, evaluation=said,
                  code_result={"status": "failed", "passed_checks": 0, "total_checks": 3, "checks": []})]
    built = build_report(session=session({"early-stopping": 0.0}), turns=turns, bank=bank)
    entry = built.questions[0]
    assert [p.point_id for p in entry.partial] == ["min-delta"]
    assert "monitor-validation" in {p.point_id for p in entry.missed}
    for fmt, text in _document_texts(built).items():
        assert signature not in text[:text.index("Transcript")] and own in text, fmt


def _full_run_with_unneeded_points(bank) -> Report:
    """relu-autograd-function: every hidden check passed (5.0), the words said nothing of apply or gradcheck."""
    relu = {p.id: p.description for p in bank["relu-autograd-function"].rubric}
    shown = [{**point(pid, "covered", "passed hidden checks", desc=relu[pid]), "checks": ["gradient-values"]}
             for pid in ("subclass-static-methods", "save-for-backward", "gradient-mask")]
    unneeded = [{**point(pid, "missed", None, desc=relu[pid]), "beyond_score": True} for pid in ("apply-usage",
                                                                                                  "gradcheck")]
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text="Backward masks the gradient.",
                  answer_code=CODE, evaluation=evaluation(5.0, [*shown, *unneeded], code_score=5.0),
                  code_result={"status": "passed", "passed_checks": 4, "total_checks": 4, "checks": []})]
    return build_report(session=session({"relu-autograd-function": 5.0}), turns=turns, bank=bank)


@pytest.mark.parametrize("fmt", ["markdown", "html", "pdf"])
def test_points_a_full_code_score_did_not_need_are_not_listed_as_missed(bank, fmt) -> None:
    """Review s50: a code answer whose hidden checks all passed scored 5.0 / 5, was listed among the strengths, and
    had "Missed: Calls the function through MyReLU.apply ..." under it: words never take from a code score, so
    those points cost nothing. They are listed once, as not needed for the score, and counted as no gap."""
    report = _full_run_with_unneeded_points(bank)
    entry = report.questions[0]
    assert not entry.missed and [p.point_id for p in entry.worth_saying] == ["apply-usage", "gradcheck"]
    assert report.topics[0].missed == 0 and not report.gaps
    assert [(s.covered, s.points) for s in report.strengths] == [(3, 5)]
    text = _document_texts(report)[fmt]
    assert "Missed" not in text
    assert re.search(f"{w.WORTH_SAYING}:? \\W? ?Calls the function through MyReLU.apply", text)


def test_a_questions_penalties_are_all_it_was_charged_though_its_last_turn_was_charged_none(bank) -> None:
    """A follow-up answered in time keeps only its own notes (none), so the report lists the question's: the first
    answer's lateness (review s50: the follow-up showed that note as its own)."""
    late = "answered after the 30s limit: score halved"
    turns = [turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER,
                  evaluation=evaluation(1.0, [], penalties=[late], question_penalties=[late])),
             turn(2, "autograd-basics", "autograd", kind="follow_up", answer_text=FOLLOW_UP_ANSWER,
                  evaluation=evaluation(1.2, [], penalties=[], question_penalties=[late]))]
    report = build_report(session=session({"autograd-basics": 1.2}), turns=turns, bank=bank)
    assert report.questions[0].penalties == [late]
    assert f"Penalty: {late}" in render(report, "markdown")[0].decode()


def _fixed_on_a_follow_up(bank) -> Report:
    failed = [{"name": "forward-values", "passed": True},
              {"name": "gradient-values", "passed": False, "message": "backward produced no gradient for x"}]
    passed = [{**check, "passed": True, "message": None} for check in failed]
    fix = FIX_PENALTY
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=evaluation(1.5, []),
                  code_result={"status": "failed", "passed_checks": 1, "total_checks": 2, "checks": failed}),
             turn(2, "relu-autograd-function", "autograd", kind="follow_up", answer_code=CODE + "# fixed",
                  evaluation=evaluation(3.2, [], penalties=[fix], question_penalties=[fix]),
                  code_result={"status": "passed", "passed_checks": 2, "total_checks": 2, "checks": passed})]
    return build_report(session=session({"relu-autograd-function": 3.2}), turns=turns, bank=bank)


@pytest.mark.parametrize("fmt", ["markdown", "html", "pdf"])
def test_code_fixed_on_a_follow_up_names_what_its_first_run_failed(bank, fmt) -> None:
    """Review s50: "Code checks: 2/2 passed" and "code fixed on a follow-up: ... halved", and no word of what the first
    run had failed but the code in the transcript."""
    entry = _fixed_on_a_follow_up(bank).questions[0]
    assert not entry.failed_checks
    assert [(c.name, c.message) for c in entry.first_run_failed] == [
        ("gradient-values", "backward produced no gradient for x")]
    said = "Code checks: 2/2 passed (passed). First run failed: gradient-values (backward produced no gradient for x)."
    assert said in _document_texts(_fixed_on_a_follow_up(bank))[fmt]


def test_the_starters_not_implemented_error_is_said_once_in_the_study_focus(bank) -> None:
    """Starter code sent unchanged fails every check at its `raise NotImplementedError`; the study focus said
    "NotImplementedError: (line 6: raise NotImplementedError) (failed check ...)" once per check."""
    stopped = "NotImplementedError: (line 6: raise NotImplementedError)"
    names = ["forward-values", "gradient-values", "gradient-mask"]
    checks = [{"name": n, "passed": False, "message": stopped, "failure": "raised", "description": n} for n in names]
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code=CODE, evaluation=evaluation(0.0, []),
                  code_result={"status": "failed", "checks": checks})]
    report = build_report(session=session({"relu-autograd-function": 0.0}), turns=turns, bank=bank)
    focus = report.study_plan[0].focus
    assert focus[0] == ("stopped at NotImplementedError (line 6): the starter's body is not written yet "
                        "(failed checks forward-values, gradient-values, gradient-mask)")
    assert not any("NotImplementedError" in item for item in focus[1:])


def test_reflowed_keeps_a_line_after_a_finished_list_item_its_own():
    """A contract's closing line, flush after its list ("- x: (B, input_size).\nDo not use nn.GRUCell, ..."), was joined
    to the last item in the HTML, PDF and terminal reports, as if it were one of its conditions. A flush line after
    an item that breaks off mid-sentence still goes on with it, as Markdown reads it."""
    assert w.reflowed("- a item\n  continued.\nDo not use X.").split("\n") == ["- a item continued.", "Do not use X."]
    assert w.reflowed("- `self.fc = nn.Linear(32, n)`\nParameter-free layers may be calls.").split("\n") == [
        "- `self.fc = nn.Linear(32, n)`", "Parameter-free layers may be calls."]
    assert w.reflowed("4. Serve it with a provider (CPU,\nCUDA, TensorRT). Then test it.\nMore.").split("\n") == [
        "4. Serve it with a provider (CPU, CUDA, TensorRT). Then test it.", "More."]
    gru = bank_index()["gru-cell-from-scratch"].code.contract
    assert w.reflowed(gru).split("\n")[-1].startswith("Do not use nn.GRUCell")


def test_reflowed_joins_a_list_items_own_lines_and_keeps_code_nested_items_and_tables():
    """A list item's next lines, indented under its text, were kept as lines: a page or terminal narrower than
    the bank's lines wrapped each again, leaving "give finite," alone before "accurate results"."""
    contract = ("Define `f(x)`.\n"
                "- It must give finite,\n  accurate results for large\n  logits.\n"
                "1. First step,\n   then more.\n"
                "   - a nested item\n     going on.\n"
                "```python\ndef f(x):\n    return x\n```\n"
                "- Before the code:\n\n    indented = code\n"
                "| a | b |\n  | c | d |")
    assert w.reflowed(contract).split("\n") == [
        "Define `f(x)`.",
        "- It must give finite, accurate results for large logits.",
        "1. First step, then more.",
        "   - a nested item going on.",
        "def f(x):", "    return x",
        "- Before the code:", "", "    indented = code",
        "| a | b |", "  | c | d |",
    ]


def _judged_turns() -> list[TurnRecord]:
    """Three questions of an LLM session: one the judge scored, one its offline fallback scored, one skipped."""
    judged = evaluation(3.0, [point("records-graph", "covered", "Autograd records every operation")],
                        evaluator="llm-judge:qwen2.5-7b")
    why = "LLM judge failed: timeout after 20 s; offline score used"
    fallback = evaluation(1.0, [point("tracks", "covered", "It tracks gradients")], notes=[why],
                          evaluator="offline-rubric (fallback from llm-judge:qwen2.5-7b)")
    return [turn(1, "autograd-basics", "autograd", answer_text="Autograd records every operation.", evaluation=judged),
            turn(2, "requires-grad", "autograd", answer_text="It tracks gradients.", evaluation=fallback),
            turn(3, "save-and-load-models", "deployment", action="skip",
                 evaluation={**evaluation(0.0, []), "evaluator": "none", "gate": "skip"})]


def test_each_question_says_beside_its_score_which_evaluator_scored_it_when_an_llm_judge_was_asked(bank) -> None:
    """A score the LLM judge gave and one its offline fallback gave read the same before: only the API's evaluation
    said which. Every format now says it beside the score, with why the judge failed."""
    from rich.console import Console

    from app.cli_sessions import terminal_report

    scores = {"autograd-basics": 3.0, "requires-grad": 1.0, "save-and-load-models": 0.0}
    built = build_report(session=session(scores), turns=_judged_turns(), bank=bank)
    said = ["llm judge (qwen2.5-7b)", "offline rubric scorer (LLM judge failed: timeout after 20 s)", None]
    assert [q["scored_by"] for q in json.loads(render(built, "json")[0])["questions"]] == said
    console = Console(file=io.StringIO(), width=200)
    console.print(terminal_report(built))
    texts = {**_document_texts(built), "terminal": " ".join(console.file.getvalue().split())}
    for fmt, text in texts.items():
        assert "3.0 / 5 \u00b7 scored by llm judge (qwen2.5-7b)" in text, fmt  # the HTML badge has no "score"
        assert "1.0 / 5 \u00b7 scored by offline rubric scorer (LLM judge failed: timeout after 20 s)" in text, fmt
        assert text.count("scored by") == 2, fmt  # the skip was scored by no evaluator


def test_an_offline_session_keeps_its_scores_unlabelled_and_the_json_still_names_its_scorer(report: Report) -> None:
    """With no LLM judge in the session every score has one source: saying so under each question is clutter."""
    assert [q.scored_by for q in report.questions] == ["offline rubric scorer", "offline rubric scorer", None]
    assert not report.llm_judged
    for fmt in ("markdown", "html"):
        assert "scored by" not in render(report, fmt)[0].decode()


def test_a_session_stored_before_evaluations_named_their_evaluator_still_renders(bank) -> None:
    old = {k: v for k, v in evaluation(2.0, [point("records-graph", "covered", "Autograd records")]).items()
           if k != "evaluator"}
    turns = [turn(1, "autograd-basics", "autograd", answer_text="Autograd records.", evaluation=old)]
    built = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank)
    assert built.questions[0].scored_by is None and not built.llm_judged
    for fmt in FORMATS:
        assert render(built, fmt)[0]


def test_what_a_code_question_asks_for_in_words_is_missed_in_the_report_when_unsaid(bank, embedder) -> None:
    """Review s54: resnet-block ("..., explain why skip connections help, and describe how you would take the
    trained model to an inference endpoint") answered "Here is my solution." with the reference code: 5.0 / 5, among
    the strengths, "Not yet covered: none", and the two points the question asks for "Not needed for the score". Now
    they are missed: the question is to study and its topic has them left to cover."""
    from app.interview.scoring import AnswerScorer
    from evaluators.rubric import RubricScorer
    from tests.code_fixtures import ScriptedRunner

    task = bank["resnet-block"]
    scored = AnswerScorer(evaluator=RubricScorer(embedder), code_runner=ScriptedRunner()).score(
        task, text="Here is my solution.", code=task.code.solution, earlier=[])
    turns = [turn(1, "resnet-block", "architectures", answer_text="Here is my solution.",
                  answer_code=task.code.solution, evaluation=scored.evaluation, code_result=scored.code_result)]
    built = build_report(session=session({"resnet-block": scored.score}), turns=turns, bank=bank)
    entry = built.questions[0]
    assert entry.score is not None and entry.score < 3.5
    assert {p.point_id for p in entry.missed} == {"why-skip-helps", "serving"} and not entry.worth_saying
    assert built.topics[0].missed == 2 and [g.topic for g in built.gaps] == ["architectures"]
    assert not built.strengths and [s.question_id for s in built.study_plan] == ["resnet-block"]
    for fmt, text in _document_texts(built).items():
        assert w.WORTH_SAYING not in text, fmt
        assert "Skip connections give gradients a direct path" in text[text.index("Missed"):], fmt


def test_the_html_report_fits_a_phone_screen(report: Report) -> None:
    """Review s55, at 390 px: the "Per topic" table was 420 px wide with its last column cut off, "3.1 / 5" broke
    over two lines, and the charts, shrunk to fit, had axis labels ~6 px high. Measured in chromium after the fix
    (a 390 px page): the table fits its 358 px column, a badge is one line, a chart label is 10 px high (was 7)."""
    from app.reports.html_doc import CSS

    page = render(report, "html")[0].decode()
    css = re.sub(r"\s+", "", CSS)

    def rule(selector: str, within: str = css) -> str:
        found = re.search(r"(?:^|[}])" + re.escape(selector) + r"\{([^}]*)\}", within)
        assert found, f"no CSS rule for {selector}"
        return found.group(1)

    assert "white-space:nowrap" in rule(".score")  # "3.1 / 5" is one unit
    table = page[page.index("Per topic</h2>"):]
    assert table.removeprefix("Per topic</h2>").startswith('<div class="table-box"><table>')
    assert "overflow-x:auto" in rule(".table-box")  # wider than the page, it scrolls in its box, never off screen
    column = 390 - 2 * 16  # a 390 px screen less the body's padding (1rem each side)
    phone = re.search(r"@media\(max-width:(\d+)rem\)\{((?:[^{}]*\{[^}]*\})*)\}", css)
    assert phone and 390 <= int(phone.group(1)) * 16, "no narrow layout at 390 px"
    assert "display:none" in rule(".chartssvg.wide", phone.group(2))
    assert "display:block" in rule(".chartssvg.narrow", phone.group(2))
    narrow = re.findall(r'<svg viewBox="0 0 ([\d.]+) [\d.]+" width="[\d.]+" height="[\d.]+" class="narrow"(.*?)</svg>',
                        page, re.S)
    assert len(narrow) == 2  # one for each chart
    for width, drawing in narrow:
        # Drawn at its own size in the column (not shrunk), so a label's font-size is its height in pixels.
        assert float(width) <= column
        sizes = [float(size) for size in re.findall(r'font-size="([\d.]+)"', drawing)]
        assert sizes and min(sizes) >= 9
        xs = [float(x) for x in re.findall(r' x[12]?="(-?[\d.]+)"', drawing)]
        assert xs and 0 <= min(xs) and max(xs) <= float(width)  # nothing drawn outside its box


def test_the_final_answers_score_note_is_a_scoring_note_under_its_question(bank) -> None:
    """An answer missing no point that scored under 4 says why in its feedback (evaluators/feedback.score_note); the
    report, which lists points rather than the feedback, says it under the question. An earlier answer's note is
    left out: the final answer's score is the question's."""
    note = ("No point is missing, but the score also weighs how much of the full model answer's content you give "
            "(you used 33% of its content words), so see the model answer for what more it says.")
    first = evaluation(3.8, [point("a", "covered", "x")], feedback=f"Right: a (you said: \"x\")\n{note}")
    turns = [turn(1, "autograd-basics", "autograd", answer_text="x", evaluation=first)]
    built = build_report(session=session({"autograd-basics": 3.8}), turns=turns, bank=bank)
    assert note in built.question(1).scoring_notes
    assert f"Scoring: {note}" in render(built, "markdown")[0].decode()
    later = evaluation(4.4, [point("a", "covered", "x")], feedback="Right: a (you said: \"x\")")
    turns.append(turn(2, "autograd-basics", "autograd", kind="follow_up", answer_text="y", evaluation=later))
    built = build_report(session=session({"autograd-basics": 4.4}), turns=turns, bank=bank)
    assert note not in built.question(1).scoring_notes


def test_a_stored_no_point_is_missing_beside_a_partial_point_is_not_a_scoring_note(bank) -> None:
    """A session graded before stop 56 stored the note beside a point only partly stated ("Lyon" for "Paris"); the
    report lists that point as partly stated and does not repeat the note's claim that none is missing."""
    note = ("No point is missing, but the score also weighs how much of the full model answer's content you give "
            "(you used 0% of its content words), so see the model answer for what more it says.")
    stored = evaluation(2.2, [point("a", "partial", "Lyon")], feedback=f'Partly there: a (you said: "Lyon")\n{note}')
    turns = [turn(1, "autograd-basics", "autograd", answer_text="Lyon", evaluation=stored)]
    built = build_report(session=session({"autograd-basics": 2.2}), turns=turns, bank=bank)
    assert built.question(1).scoring_notes == []
    assert "No point is missing" not in render(built, "markdown")[0].decode()


def test_earlier_answers_are_split_as_the_engine_split_them_for_the_judge(bank) -> None:
    """The engine reads earlier answers to a code task, once new code is sent, with the contract's names
    (scoring.words_of): a block showing them in use (`y = MyReLU.apply(x)`) stays in the words the judge reads. The
    report split them without the names, took that block for replaced code, and called a claim quoted from it
    "corrected on a follow-up" though the judge read it and did not clear it."""
    said = "y = MyReLU.apply(x)  # the gradient flows to negative inputs too"
    answer = (f"My first try:\n```python\nclass MyReLU(torch.autograd.Function):\n    pass\n```\nand in use:\n"
              f"```python\n{said}\n```\n")
    wrong = [{"claim": "ReLU passes gradient to negative inputs.", "quote": said,
              "correction": "ReLU's gradient is zero for negative inputs."}]
    first = evaluation(0.3, [], misconceptions=wrong, evaluator="llm-judge:fake")
    later = evaluation(3.0, [], evaluator="llm-judge:fake")
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text=answer, evaluation=first),
             turn(2, "relu-autograd-function", "autograd", kind="follow_up", evaluation=later,
                  answer_text="Here is the fix.", answer_code=CODE)]
    built = build_report(session=session({"relu-autograd-function": 3.0}), turns=turns, bank=bank)
    assert [m.quote for m in built.question(1).misconceptions] == [said]
    assert not any("then corrected it on a follow-up" in n for n in built.question(1).scoring_notes)
