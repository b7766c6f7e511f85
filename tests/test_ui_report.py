"""The Streamlit report page, from a report built by app/reports and served as the API serves it (JSON)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

from streamlit.testing.v1 import AppTest

from app.reports import build_report, render
from app.reports import wording as w
from knowledge.loader import bank_index
from tests.html_tables import topic_tables
from tests.test_reports import CODE, CODE_TEXT, MAIN_ANSWER, evaluation, point, session, session_turns, turn


def _page(report_json: str) -> None:
    import httpx
    import streamlit as st

    from ui import report_page
    from ui.client import ApiClient

    def reply(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("format") == "json":
            return httpx.Response(200, text=report_json, headers={"content-type": "application/json"})
        return httpx.Response(200, content=b"a report file")

    st.session_state["report_sid"] = "s1"
    report_page.render(ApiClient("http://api.test", transport=httpx.MockTransport(reply)))


def _shown(page: AppTest) -> str:
    """Every text on the page, as a reader sees it (Markdown's backslash escapes read), one element a line."""
    elements = [*(m for m in page.markdown if 'class="topic-table"' not in m.value), *page.caption, *page.info,
                *page.warning, *page.error, *page.expander, *page.subheader]
    said = "\n".join(str(getattr(e, "label", None) or e.value) for e in elements)
    tables = "\n".join(" | ".join(row.values()) for table in topic_tables(page) for row in table)
    return re.sub(r"\\([\\`*_\[\]<>#|!$~=+.)-])", r"\1", f"{said}\n{tables}")


def test_the_report_page_lists_each_point_once_under_its_question_as_the_files_do() -> None:
    """The page listed each gap under Gaps and again under Focus on, a partly stated point among the gaps, and each
    covered point and its quote as a strength; the downloaded reports list each point once, under its question."""
    bank = bank_index()
    scores = {"autograd-basics": 3.8, "relu-autograd-function": 2.5, "save-and-load-models": 0.0}
    turns = session_turns()
    code = turns[2].evaluation or {}
    apply_usage = bank["relu-autograd-function"].rubric[3].description
    partly = point("apply-usage", "partial", "with static methods", desc=apply_usage)
    turns[2] = dataclasses.replace(turns[2], evaluation={**code, "points": [*code["points"], partly]})
    report = build_report(session=session(scores), turns=turns, bank=bank)
    assert [p.point_id for p in report.questions[1].partial] == ["apply-usage"]
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    text = _shown(page)
    subheaders = [h.value for h in page.subheader]
    assert "Gaps" not in subheaders and {"Per topic", "Questions", "Strengths", "Study plan"} <= set(subheaders)
    for described in (p.description for q in report.questions for p in [*q.covered, *q.partial, *q.missed]):
        assert text.count(described) == 1, described
    assert text.count("Autograd records every operation on tensors that require grad") == 1  # its quote
    said = "\u2014 you said \u201cwith static methods\u201d"
    assert f"\U0001f7e1 {apply_usage} {said}" in text  # under Partly stated, with its sentence
    assert "autograd | 2 | 3.1 / 5 | 5 missed, 1 partly stated (Q1, Q2)" in text
    assert "deployment | 1 | 0.0 / 5 | 5 missed (Q3)" in text
    assert "3 of 6 points covered." in text
    assert "Code checks: 1/2 passed (failed)." in text
    assert "- Q2 (autograd): The gradient of ReLU is one everywhere." in text  # named in its section
    assert text.count("The gradient passes everywhere.") == 1 and text.count("It is zero where the input") == 1
    assert "Work on: the 5 missed points listed under Q3 above." in text
    assert "Work on: the 1 failed check, 1 misconception, 2 missed points and 1 partly stated point listed under Q2 " \
           "above." in text


def _feedback() -> None:
    from ui.widgets import show_feedback

    points = [{"point_id": pid, "description": f"The answer states {pid}.", "verdict": verdict, "evidence": evidence}
              for pid, verdict, evidence in (("graph", "covered", "it records a graph"),
                                             ("chain", "partial", "it goes backwards"), ("leaves", "missed", None))]
    show_feedback({"score": 2.5, "points": points, "misconceptions": []}, None)


def test_practice_feedback_lists_a_partly_stated_point_under_its_own_heading() -> None:
    """A partial point was listed under "Points covered", beside the covered ones."""
    page = AppTest.from_function(_feedback).run()
    said = [m.value for m in page.markdown]
    assert said.index("**Covered**") < said.index("**Partly stated**") < said.index("**Missed**")
    partly = said.index("**Partly stated**")
    assert "graph" in said[partly - 1] and "chain" in said[partly + 1]


def test_practice_feedback_titles_the_points_as_the_report_page_and_the_files_do() -> None:
    """Practice feedback said "Points covered" and "Points missed" where the report page and the files say "Covered"
    and "Missed"."""
    said = [m.value for m in AppTest.from_function(_feedback).run().markdown]
    titles = [line for line in said if line.startswith("**")]
    assert titles == [f"**{w.COVERED}**", f"**{w.PARTLY}**", f"**{w.MISSED}**"]


def _code_quoted_feedback() -> None:
    from ui.widgets import show_feedback

    quoted = {"point_id": "caveats", "description": "The answer states caveats.", "verdict": "partial",
              "evidence": "optimizer.step()", "from_code": True}
    show_feedback({"score": 2.5, "points": [quoted], "misconceptions": []}, None)


def test_a_point_quoted_from_the_code_says_so_in_practice_feedback_and_on_the_report_page() -> None:
    """A line of the code was quoted back as the candidate's words (review s49: "you said “optimizer.step()”")."""
    feedback = "\n".join(m.value for m in AppTest.from_function(_code_quoted_feedback).run().markdown)
    assert "Your code has: \u201coptimizer.step()\u201d" in feedback.replace("\\", "")
    quoted = {**point("save-for-backward", "partial", "ctx.save_for_backward(x)"), "from_code": True}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code="ctx.save_for_backward(x)",
                  evaluation=evaluation(2.0, [quoted]))]
    report = build_report(session=session({"relu-autograd-function": 2.0}), turns=turns, bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    text = _shown(page)
    assert "your code has \u201cctx.save_for_backward(x)\u201d" in text and "you said" not in text


def _code_quoted_wrong_claim() -> None:
    from ui.widgets import show_feedback

    wrong = {"claim": "backward should return the ReLU of grad_output.", "correction": "Mask by the input.",
             "quote": "return grad_output.clamp(min=0)", "from_code": True}
    show_feedback({"score": 2.5, "points": [], "misconceptions": [wrong]}, None)


def test_a_wrong_claim_quoted_from_the_code_says_so_in_practice_feedback_and_on_the_report_page() -> None:
    """A misconception stated by a line of the code read "You said: “return grad_output.clamp(min=0)”"."""
    said = "\n".join(e.value for e in AppTest.from_function(_code_quoted_wrong_claim).run().error)
    assert "Your code has: \u201creturn grad_output.clamp(min=0)\u201d" in said.replace("\\", "")
    assert "You said" not in said
    wrong = {"claim": "backward should return the ReLU of grad_output.", "correction": "Mask by the input.",
             "quote": "return grad_output.clamp(min=0)", "from_code": True}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code="return grad_output.clamp(min=0)",
                  evaluation=evaluation(2.0, [], misconceptions=[wrong]))]
    report = build_report(session=session({"relu-autograd-function": 2.0}), turns=turns, bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    shown = "\n".join(e.value for e in page.error)
    assert "Your code has: \u201creturn grad_output.clamp(min=0)\u201d" in shown.replace("\\", "")
    assert "You said" not in shown


def _missed_though_said() -> None:
    from ui.widgets import show_feedback

    missed = {"point_id": "mask", "description": "The answer states mask.", "verdict": "missed", "checks": ["grad"],
              "evidence": "failed hidden check grad: wrong", "words": "Multiply by the mask of x > 0."}
    show_feedback({"score": 1.0, "points": [missed], "misconceptions": []}, None)


def test_a_point_a_failed_check_missed_shows_the_words_that_stated_it_in_feedback_and_on_the_report_page() -> None:
    said = "said in words, not yet shown by your code: \u201cMultiply by the mask of x > 0.\u201d"
    feedback = "\n".join(m.value for m in AppTest.from_function(_missed_though_said).run().markdown)
    assert said in feedback.replace("\\", "")
    missed = {**point("gradient-mask", "missed", "failed hidden check gradcheck-float64: wrong"),
              "checks": ["gradcheck-float64"], "words": "Multiply by the mask of x > 0."}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_text="Multiply by the mask of x > 0.",
                  evaluation=evaluation(1.0, [missed]))]
    report = build_report(session=session({"relu-autograd-function": 1.0}), turns=turns, bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert said in _shown(page)


def _missed_by_a_multi_line_check() -> None:
    from ui.widgets import show_feedback

    points = [{"point_id": pid, "description": f"The answer states {pid}.", "verdict": "missed", "checks": ["g"],
               "evidence": "failed hidden check g: Tensor-likes are not close!\n\nMismatched elements: 2 / 2"}
              for pid in ("mask", "save")]
    show_feedback({"score": 1.0, "points": points, "misconceptions": []}, None)


def test_a_stored_multi_line_check_message_keeps_the_missed_points_one_list() -> None:
    """A check message's blank line ended the practice feedback's list of missed points midway (review s49)."""
    missed = next(m.value for m in AppTest.from_function(_missed_by_a_multi_line_check).run().markdown
                  if "mask" in m.value)
    assert [line[:3] for line in missed.split("\n")] == ["- \u274c", "- \u274c"], missed


def _follow_up_skipped() -> None:
    from ui.widgets import show_feedback

    show_feedback({"score": 2.0, "follow_up": "skip", "model_answer": "Compute log(pt) from the logits."}, None)


def test_a_follow_up_given_up_shows_the_model_answer_withheld_while_it_was_pending() -> None:
    """The model answer waits while a follow-up on its question is pending, so the follow-up's own reply is where
    it is shown; a follow-up skipped showed only the score that stands."""
    page = AppTest.from_function(_follow_up_skipped).run()
    assert [e.label for e in page.expander] == ["Model answer"]
    assert "Compute log(pt) from the logits." in [m.value for m in page.markdown]


def test_a_session_with_nothing_answered_says_so_on_the_page_as_the_files_do() -> None:
    """The page told a candidate who answered nothing "Nothing to revise: well done." and listed every point of the
    question they were shown as missed; the files say nothing was answered and list nothing."""
    unanswered = turn(1, "autograd-basics", "autograd", action=None, answered_at=None)
    report = build_report(session=session({}), turns=[unanswered], bank=bank_index())
    assert report.empty
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    text = _shown(page)
    assert "Nothing was answered in this session, so there is nothing to score yet." in text
    assert "well done" not in text and "Missed" not in text and "Strengths" not in text


def test_a_strong_code_tasks_strength_counts_the_points_its_run_showed_as_the_files_do() -> None:
    """The files say "1 of 5 points covered (1 shown by the hidden checks your code passed)"; the page left the
    run out."""
    shown = {**point("gradient-mask", "covered", "passed hidden checks gradient-values, gradcheck-float64"),
             "checks": ["gradient-values", "gradcheck-float64"]}
    turns = [turn(1, "relu-autograd-function", "autograd", answer_code="x = 1", evaluation=evaluation(4.0, [shown]),
                  code_result={"status": "passed", "checks": []})]
    report = build_report(session=session({"relu-autograd-function": 4.0}), turns=turns, bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    assert "1 of 5 points covered (1 shown by the hidden checks your code passed)" in _shown(page)


def _ended_on_an_unanswered_question():
    """A report of a session ended while its fourth question was on screen, and its page."""
    turns = [*session_turns()[:3], turn(4, "save-and-load-models", "deployment", action=None, answered_at=None)]
    report = build_report(session=session({"autograd-basics": 3.8, "relu-autograd-function": 2.5}), turns=turns,
                          bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    return report, page


def test_a_question_shown_when_the_session_ended_lists_no_missed_point_on_the_page_as_the_files_do() -> None:
    """The page listed every point of the question on screen when the session ended under "Missed"."""
    report, page = _ended_on_an_unanswered_question()
    bank = bank_index()
    text = _shown(page)
    assert "Not answered: the session ended here, so it is not scored and its points were not judged." in text
    assert not any(p.description in text for p in bank["save-and-load-models"].rubric)


def test_the_page_names_a_question_not_scored_in_the_files_words() -> None:
    """The page's shared score widget said "unscored" where the downloaded files say "not scored"."""
    report, page = _ended_on_an_unanswered_question()
    label = next(e.label for e in page.expander if e.label.startswith("Q3"))
    assert label.startswith(f"Q3 \u00b7 {w.score_text(None)} \u00b7 ")
    assert f"score {w.score_text(None)}" in render(report, "markdown")[0].decode()
    assert "unscored" not in _shown(page)


def test_a_follow_up_on_screen_when_the_session_ended_is_said_not_answered_on_the_page_as_the_files_do() -> None:
    """The page said "1 follow-up(s)" of a follow-up the session ended on, and nothing of it going unanswered."""
    main, follow_up = session_turns()[:2]
    turns = [main, dataclasses.replace(follow_up, action=None, answered_at=None, answer_text=None, evaluation=None)]
    report = build_report(session=session({"autograd-basics": 2.0}), turns=turns, bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    text = _shown(page)
    assert w.FOLLOW_UP_NOT_ANSWERED in text and w.NOT_ANSWERED not in text
    assert all(flag in text for flag in w.status_flags(report.questions[0]))  # "1 follow-up(s)", "1 hint(s) used"
    assert "Q1 \u00b7 2.0 / 5 \u00b7 " in text


def test_the_question_on_screen_in_a_session_still_going_is_not_said_to_be_where_it_ended_on_the_page() -> None:
    """The page said "Not answered: the session ended here" of the question on screen, in a practice session read
    midway."""
    turns = [*session_turns()[:3], turn(4, "save-and-load-models", "deployment", action=None, answered_at=None)]
    report = build_report(session=session({"autograd-basics": 3.8, "relu-autograd-function": 2.5}, status="active"),
                          turns=turns, bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    text = _shown(page)
    assert w.ON_SCREEN in text and w.NOT_ANSWERED not in text


def _mixed_session() -> list:
    """Nine questions: partly stated only at 3.8, a code task in words at 4.7, a good answer, code that passed, code
    that failed, a wrong answer, a skip, a code task in words at 1.2, and one on screen when the session ended."""
    bank = bank_index()
    desc = {(q.id, p.id): p.description for q in bank.values() for p in q.rubric}

    def said(qid: str, pid: str, verdict: str, quote: str) -> dict:
        return point(pid, verdict, quote, desc=desc[(qid, pid)])

    shown = {**said("pairwise-distances", "reduce-and-sqrt", "covered", "passed hidden checks values-float32"),
             "checks": ["values-float32"]}
    failed = [{"name": "mean-loss-values", "passed": False, "message": "wrong loss for gamma=2"},
              {"name": "gradients", "passed": True, "message": None}]
    skip = {**evaluation(0.0, []), "evaluator": "none", "gate": "skip"}
    return [
        turn(1, "autograd-basics", "autograd", answer_text=MAIN_ANSWER, evaluation=evaluation(3.8, [
            said("autograd-basics", "records-graph", "partial", "Autograd records every operation")])),
        turn(2, "relu-autograd-function", "autograd", answer_text=CODE_TEXT, evaluation=evaluation(4.7, [said(
            "relu-autograd-function", "subclass-static-methods", "covered", "I subclass torch.autograd.Function")])),
        turn(3, "save-and-load-models", "deployment", answer_text="Save the state_dict, not the whole model.",
             evaluation=evaluation(4.5, [said("save-and-load-models", "save-state-dict", "covered",
                                              "Save the state_dict")])),
        turn(4, "pairwise-distances", "tensors", answer_code="def f(x, y):\n    return torch.cdist(x, y)",
             evaluation=evaluation(5.0, [shown]), code_result={"status": "passed", "passed_checks": 2,
                                                                 "total_checks": 2, "checks": []}),
        turn(5, "custom-loss", "training-loop", answer_code=CODE, evaluation=evaluation(1.0, []),
             code_result={"status": "failed", "passed_checks": 1, "total_checks": 2, "checks": failed}),
        turn(6, "dropout", "regularisation", answer_text="It makes the GPU faster.", evaluation=evaluation(0.9, [])),
        turn(7, "overfitting", "regularisation", action="skip", evaluation=skip),
        turn(8, "custom-layer", "modules", answer_text="A layer has weights.", evaluation=evaluation(1.2, [])),
        turn(9, "batch-normalization", "regularisation", action=None, answered_at=None),
    ]


def test_the_page_says_what_the_files_say_of_each_question_strength_and_study_item() -> None:
    """The page wrote its study plan's "Work on" its own way ("Work on: 1 failed check, 2 missed points, listed
    under ..." where the files say "Work on: the 1 failed check and 2 missed points listed under ..."), had no word
    on why a question at the bar is studied, and no "not answered" for a question on screen when the session
    ended: every sentence the files build from the report's wording is on the page, word for word."""
    bank = bank_index()
    scores = {"autograd-basics": 3.8, "relu-autograd-function": 4.7, "save-and-load-models": 4.5,
              "pairwise-distances": 5.0, "custom-loss": 1.0, "dropout": 0.9, "overfitting": 0.0, "custom-layer": 1.2}
    report = build_report(session=session(scores), turns=_mixed_session(), bank=bank)
    assert [i.reason for i in report.study_plan] == ["low_score"] * 4 + ["nothing_in_full", "checks_not_run"]
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    text = _shown(page)
    files = render(report, "markdown")[0].decode().replace("\\", "")
    sentences = [w.NOT_ANSWERED, *(w.strength_text(s) for s in report.strengths),
                 *filter(None, (w.code_text(q) for q in report.questions)),
                 *filter(None, (said for i in report.study_plan for said in (
                     w.study_reason_text(report.question(i.number)), w.work_on_text(report.question(i.number)))))]
    # How each question ended ("skipped", "1 follow-up(s)"), which the page left out or wrote its own way.
    sentences += [flag for q in report.questions for flag in w.status_flags(q)]
    assert len(sentences) == 1 + 2 + 4 + 9 + 2
    for sentence in sentences:
        assert sentence in files and sentence in text, sentence
    nothing_strong = build_report(session=session({"dropout": 0.9}), turns=_mixed_session()[5:6], bank=bank)
    page = AppTest.from_function(_page, args=(render(nothing_strong, "json")[0].decode(),), default_timeout=30).run()
    assert w.NO_STRENGTHS in _shown(page)
    all_strong = build_report(session=session({"save-and-load-models": 4.5}), turns=_mixed_session()[2:3], bank=bank)
    page = AppTest.from_function(_page, args=(render(all_strong, "json")[0].decode(),), default_timeout=30).run()
    assert w.NO_STUDY in _shown(page)


def test_points_a_full_code_score_did_not_need_are_not_missed_on_the_page_as_in_the_files() -> None:
    """Review s50: a 5.0 / 5 code answer listed "Missed: Calls the function through MyReLU.apply ..." (words never
    take from a code score); the page lists those points as the files do, not needed for the score."""
    from tests.test_reports import _full_run_with_unneeded_points

    report = _full_run_with_unneeded_points(bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    text = _shown(page)
    assert "Missed" not in text and f"**{w.WORTH_SAYING}**\n\n- 💬 Calls the function through MyReLU.apply" in text


def _full_code_feedback() -> None:
    from ui.widgets import show_feedback

    unneeded = {"point_id": "gradcheck", "description": "Verifies the gradient numerically.", "weight": 1.0,
                "verdict": "missed", "credit": 0.0, "evidence": None, "beyond_score": True}
    show_feedback({"score": 5.0, "points": [unneeded], "feedback": "", "code_score": 5.0}, None)


def test_the_feedback_of_a_full_code_score_lists_what_the_words_missed_as_not_needed() -> None:
    page = AppTest.from_function(_full_code_feedback).run()
    shown = "\n".join(m.value for m in page.markdown)
    assert "Points missed" not in shown
    assert "**Not needed for the score, worth saying in an interview**\n\n- 💬 Verifies the gradient numerically." \
        in shown


def _follow_up_not_known_after_a_hint() -> None:
    from ui.widgets import show_feedback

    hint = "1 hint(s) used on the follow-up: -0.5 points"
    show_feedback({"score": 2.8, "follow_up": "dont_know", "penalties": [hint],
                   "question_penalties": ["answered after the 30s limit: score halved", hint]}, None)


def test_a_follow_up_given_up_after_a_hint_says_the_score_stands_less_the_hint() -> None:
    """Review s50: "the score of your earlier answer on this question stands" beside a score 0.5 lower; and the notes
    shown are the follow-up's own, not the earlier answer's lateness."""
    page = AppTest.from_function(_follow_up_not_known_after_a_hint).run()
    assert [i.value for i in page.info] == ["Follow-up not known: the score of your earlier answer on this question "
                                            "stands, less the hint(s) taken on this follow-up. Score: 2.8 / 5."]
    assert [c.value for c in page.caption] == ["1 hint(s) used on the follow-up: -0.5 points"]


def test_code_fixed_on_a_follow_up_names_what_its_first_run_failed_on_the_page_as_in_the_files() -> None:
    from tests.test_reports import _fixed_on_a_follow_up

    report = _fixed_on_a_follow_up(bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    said = w.code_text(report.questions[0])
    assert said and "First run failed: gradient-values (backward produced no gradient for x)." in said
    assert said in [c.value for c in page.caption]


def test_the_page_lists_what_a_questions_score_was_charged_as_the_files_do() -> None:
    """The files list "Penalty: code fixed on a follow-up: ..." under the question; the page said nothing of it."""
    from tests.test_reports import _fixed_on_a_follow_up

    report = _fixed_on_a_follow_up(bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    assert "Penalty: code fixed on a follow-up: what the new run added is halved" in _shown(page)


def test_the_page_says_what_the_files_say_of_a_study_item_whose_penalties_cost_its_points() -> None:
    """Review s51: a question under the bar with every point covered (its code fixed on a follow-up) had no word in
    its study item; the page says what the files say: the penalty, and the checks the first run failed."""
    from tests.test_reports import FIX_PENALTY, _log_softmax_fixed_on_a_follow_up

    report = build_report(session=session({"stable-log-softmax": 2.8}),
                          turns=_log_softmax_fixed_on_a_follow_up(penalties=[FIX_PENALTY]), bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    text, files = _shown(page), render(report, "markdown")[0].decode().replace("\\", "")
    said = [w.study_reason_text(report.question(1)), w.work_on_text(report.question(1))]
    assert all(said) and all(sentence in files and sentence in text for sentence in said), (said, text)


def test_the_two_charts_side_by_side_are_as_tall_with_one_topic() -> None:
    """With one topic the per-topic bar chart was 20 px tall beside the per-question chart's 300 px: a blank."""
    import json

    turns = [turn(1, "autograd-basics", "autograd", evaluation=evaluation(3.0, [point("graph", "covered", "a graph")]))]
    report = build_report(session=session({"autograd-basics": 3.0}), turns=turns, bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    specs = [json.loads(chart.proto.spec) for chart in page.get("vega_lite_chart")]
    assert len(specs) == 2 and specs[0].get("height") == specs[1].get("height") is not None, specs


def _nodes(node: Any) -> Iterator[Any]:
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _nodes(child)


def test_the_topic_chart_asks_for_whole_names_drawn_as_text() -> None:
    """Streamlit's chart theme cuts an axis label at 100 px ("performance-me…"): the topic axis lifts the limit and
    keeps every name, and the charts are SVG, so the names are text (tests/e2e/test_browser_report.py reads them)."""
    report = build_report(session=session({"autograd-basics": 3.8, "relu-autograd-function": 2.5}),
                          turns=session_turns()[:2], bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    specs = [json.loads(e.proto.spec) for e in _nodes(page._tree) if getattr(e, "type", "") == "vega_lite_chart"]
    assert len(specs) == 2
    assert specs[0]["encoding"]["y"]["field"] == "topic"
    assert specs[0]["encoding"]["y"].get("axis") == {"labelLimit": 0, "labelOverlap": False}
    assert all(spec.get("usermeta") == {"embedOptions": {"renderer": "svg"}} for spec in specs)


def test_the_report_page_says_which_evaluator_scored_each_question_when_an_llm_judge_was_asked() -> None:
    """The files and the terminal say beside each score whether the LLM judge gave it or its offline fallback did, and
    why the judge failed; the page said neither, so a judged score and a fallback one read alike."""
    from tests.test_reports import _judged_turns

    scores = {"autograd-basics": 3.0, "requires-grad": 1.0, "save-and-load-models": 0.0}
    report = build_report(session=session(scores), turns=_judged_turns(), bank=bank_index())
    page = AppTest.from_function(_page, args=(render(report, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception, page.exception
    captions = [c.value.replace("\\", "") for c in page.caption]
    assert "autograd · difficulty 2 · scored by llm judge (qwen2.5-7b)" in captions
    fallback = "scored by offline rubric scorer (LLM judge failed: timeout after 20 s)"
    assert f"autograd · difficulty 2 · {fallback}" in captions
    assert _shown(page).count("scored by") == 2  # the skip was scored by no evaluator

    offline = build_report(session=session(scores), turns=session_turns(), bank=bank_index())
    assert not offline.llm_judged and offline.questions[0].scored_by == "offline rubric scorer"
    page = AppTest.from_function(_page, args=(render(offline, "json")[0].decode(),), default_timeout=30).run()
    assert not page.exception and "scored by" not in _shown(page)  # one source for every score: nothing to tell apart
