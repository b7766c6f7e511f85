"""The Streamlit pages against a real API: `interviewer serve` in a subprocess, auth on, real runner.

Each test acts as its own user (an API key per test) so sessions and progress do not leak between
tests; the app reads the key from INTERVIEWER_API_KEY like a user's shell would provide it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from knowledge.loader import bank_index
from tests.conftest import REPO
from tests.test_api_server import free_port, running_server

USERS = ("starter", "flow", "historian", "reader", "switcher", "hinter", "drafter", "ender", "reloader", "numberer",
         "behind", "quick", "restorer", "resender", "leaver", "chooser", "waiter")
# The bank's own reference solution: a correct answer the hidden checks must accept.
RELU = bank_index()["relu-autograd-function"].code.solution


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    with running_server(tmp_path_factory.mktemp("ui-api") / "data", "ui", USERS) as running:
        yield running


def app_for(monkeypatch: pytest.MonkeyPatch, url: str, key: str | None = None) -> AppTest:
    monkeypatch.setenv("INTERVIEWER_API_URL", url)
    if key:
        monkeypatch.setenv("INTERVIEWER_API_KEY", key)
    return AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=60)


def app_at(monkeypatch: pytest.MonkeyPatch, url: str, key: str, address: str | dict[str, str]) -> AppTest:
    """The app opened (or reloaded) at ?session=ADDRESS, the address a page in progress keeps, or at the
    query string a page left in its address."""
    at = app_for(monkeypatch, url, key)
    at.query_params.update(address if isinstance(address, dict) else {"session": address})
    at.run()
    return at


def new_session_page(
    monkeypatch: pytest.MonkeyPatch, server: tuple[str, dict[str, str]], who: str, **config: object
) -> tuple[AppTest, dict, dict[str, str]]:
    """A session `who` opened through the API, its page in the app, and `who`'s auth header."""
    url, keys = server
    auth = {"Authorization": f"Bearer {keys[who]}"}
    created = httpx.post(f"{url}/v1/sessions", json=config, headers=auth).json()
    return app_at(monkeypatch, url, keys[who], created["id"]), created, auth


def reload(monkeypatch: pytest.MonkeyPatch, url: str, key: str, at: AppTest) -> AppTest:
    """F5: a new browser session, opened at the address the page had."""
    return app_at(monkeypatch, url, key, dict(at.query_params))


def click(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> str:
    """The elements' text as a reader sees it: Markdown's backslash escapes (ui.widgets.literal) read."""
    return re.sub(r"\\([\\`*_\[\]<>#|!$~=+.)-])", r"\1", "\n".join(str(e.value) for e in elements))


def start_session(at: AppTest, *, topics: list[str], difficulty: int, questions: int, seed: str) -> None:
    at.multiselect(key="topics").set_value(topics)
    at.select_slider(key="difficulty").set_value(difficulty)
    at.number_input(key="num_questions").set_value(questions)
    at.text_input(key="seed").set_value(seed)
    click(at, "Start interview")


def code_task_in_the_plain_box(monkeypatch: pytest.MonkeyPatch, url: str, key: str, questions: int) -> AppTest:
    """A new session on the autograd code task, with the plain code box (the Ace component does not render in
    AppTest); each caller is a user of its own, who has seen no question, so the first one is the code task."""
    at = app_for(monkeypatch, url, key)
    at.run()
    at.sidebar.checkbox(key="plain_editor").check().run()
    start_session(at, topics=["autograd"], difficulty=3, questions=questions, seed="1")
    return at


def test_start_page_offers_the_bank_and_says_which_interviewer(server, monkeypatch):
    url, keys = server
    at = app_for(monkeypatch, url, keys["starter"])
    at.run()
    assert not at.exception and not at.error
    assert "Offline interviewer in use" in texts(at.info)
    assert "autograd" in at.multiselect(key="topics").options
    assert "pytorch" in at.multiselect(key="frameworks").options
    at.text_input(key="seed").set_value("seven")
    click(at, "Start interview")
    assert "seed is a whole number" in texts(at.error)


def test_practice_session_with_a_code_task_then_the_report(server, monkeypatch):
    url, keys = server
    at = code_task_in_the_plain_box(monkeypatch, url, keys["flow"], questions=2)
    assert at.session_state["nav"] == "Interview"
    assert "Question 1 of 2" in at.get("progress")[0].proto.text
    assert "relu" in texts(at.markdown).lower() and "MyReLU" in texts(at.markdown)  # question and contract
    code_box = at.text_area[0]
    assert code_box.label == "Your code" and "raise NotImplementedError" in code_box.value

    click(at, "Submit answer")  # nothing written yet: the API's 400 detail is shown
    assert "an answer needs text or code" in texts(at.error)

    at.text_area[0].set_value(RELU)
    click(at, "▶ Run checks")
    assert "Code checks: all checks passed (4/4 checks)" in texts(at.success)

    at.text_area[1].set_value("forward saves x; backward multiplies grad_output by the mask x > 0; call MyReLU.apply")
    click(at, "Submit answer")
    assert any("/ 5" in m.value for m in at.metric)  # practice mode: the rubric feedback right away
    assert "**Covered**" in texts(at.markdown) and "ctx.save_for_backward(x)" in texts(at.markdown)

    click(at, "💡 Hint")
    assert "hints cost" in texts(at.info)
    click(at, "🔁 Repeat")
    click(at, "⏭ Skip")
    while at.session_state["status"] == "active":
        click(at, "🤷 I don't know")
    assert "The interview is complete" in texts(at.success)

    click(at, "See my report")
    assert at.session_state["nav"] == "Report" and not at.error
    assert [m.label for m in at.metric][:2] == ["Overall score", "Questions answered"]
    headings = texts(at.subheader)
    for heading in ("Score per topic", "Score per question", "Per topic", "Questions", "Strengths", "Study plan",
                    "Download"):
        assert heading in headings
    assert len(at.get("vega_lite_chart")) == 2
    assert len(at.get("download_button")) == 3


def test_code_already_sent_is_not_sent_again_with_a_follow_ups_answer(server, monkeypatch):
    """The editor keeps the code for the whole question, and every follow-up's answer re-sent it: a sandbox run
    for nothing each time, and a fix written in a fence in the words was never read (the code field won)."""
    url, keys = server
    at = code_task_in_the_plain_box(monkeypatch, url, keys["resender"], questions=2)
    buggy = RELU.replace("grad_output * (x > 0).to(grad_output.dtype)", "grad_output")  # a check fails: a follow-up
    assert buggy != RELU
    at.text_area[0].set_value(buggy)
    at.text_area[1].set_value("It subclasses autograd.Function.")
    click(at, "Submit answer")
    assert at.session_state["prompt"]["kind"] == "follow_up"
    at.text_area[1].set_value("backward multiplies grad_output by the mask x > 0")
    click(at, "Submit answer")
    sent = [e for e in at.session_state["chat"] if e["role"] == "user"]
    assert [e["code"] for e in sent] == [buggy, None]


def test_history_lists_sessions_and_practises_weak_topics(server, monkeypatch):
    url, keys = server
    auth = {"Authorization": f"Bearer {keys['historian']}"}
    created = httpx.post(f"{url}/v1/sessions", json={"topics": ["tensors"], "num_questions": 1}, headers=auth)
    httpx.post(f"{url}/v1/sessions/{created.json()['id']}/skip", params={"turn": 0}, headers=auth).raise_for_status()
    at = app_for(monkeypatch, url, keys["historian"])
    at.session_state["nav"] = "History"
    at.run()
    assert not at.exception and not at.error
    assert "`tensors`" in texts(at.markdown)  # a skipped question makes tensors a weak topic
    assert len(at.get("vega_lite_chart")) == 1
    assert any(b.label == "Report" for b in at.button)

    click(at, "🎯 Practise my weak topics")
    assert at.session_state["nav"] == "Interview"
    assert "topic: tensors" in texts(at.caption)
    question = at.session_state["prompt"]["text"]

    at = app_for(monkeypatch, url, keys["historian"])  # a new tab: resumed from the API's transcript
    at.session_state["nav"] = "History"
    at.run()
    click(at, "Continue")
    assert at.session_state["nav"] == "Interview" and question in texts(at.markdown)


def test_interview_mode_with_a_timer_hides_feedback(server, monkeypatch):
    url, keys = server
    at = app_for(monkeypatch, url, keys["starter"])
    at.run()
    at.radio(key="mode_choice").set_value("interview")
    at.checkbox(key="timed").check()
    at.number_input(key="seconds").set_value(60)
    start_session(at, topics=["training-loop"], difficulty=1, questions=1, seed="3")
    assert re.search(r"Time left on this question: (0:5\d|1:00)", texts(at.markdown))
    at.text_area[-1].set_value("zero_grad clears the gradients that accumulate in .grad")
    click(at, "Submit answer")
    assert not at.metric  # interview mode: no score until the report
    assert "Answer recorded" in texts(at.info) or "The interview is complete" in texts(at.success)


def report_of_a_new_session(server, monkeypatch, mode: str) -> AppTest:
    """The report page opened on a session just created through the API, nothing answered."""
    url, keys = server
    auth = {"Authorization": f"Bearer {keys['reader']}"}
    created = httpx.post(f"{url}/v1/sessions", json={"mode": mode, "num_questions": 2}, headers=auth).json()
    at = app_for(monkeypatch, url, keys["reader"])
    at.session_state["nav"] = "Report"
    at.session_state["report_sid"] = created["id"]
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_report_of_an_interview_in_progress_says_when_it_is_ready(server, monkeypatch):
    """An interview-mode session shows its report once completed, as it should: the page said so in red, as an error."""
    at, created, _ = new_session_page(monkeypatch, server, "reader", mode="interview", num_questions=2)
    at.sidebar.radio(key="nav").set_value("Report").run()
    assert not at.exception and not at.error, at.error
    assert "its report, with every score and the feedback, is ready once the session is completed" in texts(at.info)
    click(at, "Back to the interview")
    assert at.session_state["nav"] == "Interview" and f"session {created['id'][:8]}" in texts(at.caption)

    opened_from_history = report_of_a_new_session(server, monkeypatch, "interview")  # not the one on screen
    assert "ready once the session is completed" in texts(opened_from_history.info)
    assert not opened_from_history.error and not any(b.label == "Back to the interview"
                                                     for b in opened_from_history.button)


def test_report_of_a_session_with_nothing_answered_yet(server, monkeypatch):
    """Opened from History before any answer: nothing is scored, and the page says so."""
    at = report_of_a_new_session(server, monkeypatch, "practice")
    assert next(m for m in at.metric if m.label == "Overall score").value == "not scored"


def test_missing_api_key_shows_the_401_detail(server, monkeypatch):
    url, _ = server
    at = app_for(monkeypatch, url)
    at.session_state["nav"] = "History"
    at.run()
    assert not at.exception
    assert "missing API key" in texts(at.error)


def test_api_down_is_an_error_not_a_traceback(monkeypatch):
    url = f"http://127.0.0.1:{free_port()}"
    at = app_for(monkeypatch, url)
    at.run()
    assert not at.exception
    assert f"cannot reach the API at {url}" in texts(at.error)


@pytest.mark.parametrize("seed", ["²", "--5"])
def test_a_seed_that_is_not_a_whole_number_is_an_error_on_the_page(server, monkeypatch, seed):
    url, keys = server
    at = app_for(monkeypatch, url, keys["starter"])
    at.run()
    start_session(at, topics=["tensors"], difficulty=1, questions=1, seed=seed)
    assert "The seed is a whole number" in texts(at.error) and at.session_state["nav"] == "Start"


def test_the_report_follows_the_session_and_its_downloads_follow_the_report(server, monkeypatch):
    """Downloads fetched mid-session are fetched again once the session moved on, and starting a new
    session points the Report page at it rather than at a past session opened from History."""
    at = report_of_a_new_session(server, monkeypatch, "practice")
    sid = at.session_state["report_sid"]
    url, keys = server
    auth = {"Authorization": f"Bearer {keys['reader']}"}
    for _ in range(2):
        turn = httpx.get(f"{url}/v1/sessions/{sid}", headers=auth).json()["prompt"]["turn"]
        httpx.post(f"{url}/v1/sessions/{sid}/skip", params={"turn": turn}, headers=auth).raise_for_status()
    at.run()
    fetched = {version for (s, fmt, version) in at.session_state["report_files"] if s == sid and fmt == "markdown"}
    assert len(fetched) == 2  # before and after the skips
    at.session_state["nav"] = "Start"
    at.run()
    start_session(at, topics=["tensors"], difficulty=1, questions=1, seed="4")
    assert "report_sid" not in at.session_state and at.session_state["sid"] != sid


def test_a_prompt_answered_elsewhere_brings_the_page_up_to_date(server, monkeypatch):
    url, keys = server
    at = app_for(monkeypatch, url, keys["flow"])
    at.run()
    start_session(at, topics=["tensors"], difficulty=1, questions=2, seed="9")
    sid = at.session_state["sid"]
    auth = {"Authorization": f"Bearer {keys['flow']}"}
    assert httpx.post(f"{url}/v1/sessions/{sid}/skip?turn=0", headers=auth).status_code == 200  # another tab
    at.text_area[-1].set_value("a draft for the first question")
    click(at, "⏭ Skip")
    assert "This session moved on elsewhere" in texts(at.info) and "turn 0" not in texts(at.info)
    assert at.session_state["prompt"]["turn"] == 1  # the prompt the other tab moved to, not skipped again
    assert at.text_area[-1].value == ""  # the new prompt's box starts empty, and nothing was sent
    transcript = httpx.get(f"{url}/v1/sessions/{sid}", headers=auth).json()["transcript"]
    assert len(transcript) == 2 and transcript[1]["action"] is None
    # The draft is not lost without a word: it is shown, and one click puts it in the new box.
    assert "Not sent: the session moved on before this tab sent what you wrote for question 1 of 2" in texts(at.warning)
    assert [c.value for c in at.code] == ["a draft for the first question"]
    click(at, "Put my text in the answer box")
    assert at.text_area[-1].value == "a draft for the first question" and not at.warning


def test_code_written_in_a_tab_left_behind_is_kept_too(server, monkeypatch):
    url, keys = server
    at = code_task_in_the_plain_box(monkeypatch, url, keys["behind"], questions=2)
    next(t for t in at.text_area if t.label == "Your code").set_value("def mine():\n    return 42\n")
    sid = at.session_state["sid"]
    auth = {"Authorization": f"Bearer {keys['behind']}"}
    assert httpx.post(f"{url}/v1/sessions/{sid}/skip?turn=0", headers=auth).status_code == 200  # another tab
    click(at, "Submit answer")
    assert "Not sent" in texts(at.warning) and [c.value for c in at.code] == ["def mine():\n    return 42"]
    assert not any(b.label == "Put my text in the answer box" for b in at.button)  # no text was written
    click(at, "Dismiss")
    assert not at.warning and not at.code


def interrupt_the_next_spinner(monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer rerun request stops the run in progress at its next element, and the new run no longer has
    the click. The code editor sends what was typed last 200 ms after the keystroke: a click within that
    time gets its run stopped so, before it sends anything. The run is stopped here at the first spinner."""
    real = st.spinner
    stopped: list[bool] = []

    def spinner(*args, **kwargs):
        if not stopped:
            stopped.append(True)
            st.rerun()
        return real(*args, **kwargs)

    monkeypatch.setattr(st, "spinner", spinner)


def test_a_click_whose_run_is_stopped_by_a_newer_one_is_still_acted_on(server, monkeypatch):
    url, keys = server
    at, created, auth = new_session_page(monkeypatch, server, "quick", topics=["tensors"], num_questions=2)
    next(t for t in at.text_area if t.label == "Your answer").set_value("shape, size(), ndim and numel()")
    interrupt_the_next_spinner(monkeypatch)
    click(at, "Submit answer")
    turn = httpx.get(f"{url}/v1/sessions/{created['id']}", headers=auth).json()["transcript"][0]
    assert turn["action"] == "answer" and turn["answer_text"] == "shape, size(), ndim and numel()"
    assert "shape, size(), ndim and numel()" in texts(at.markdown)  # and the chat shows it


def test_a_reload_finds_the_session_in_progress_again(server, monkeypatch):
    url, keys = server
    at, created, auth = new_session_page(monkeypatch, server, "reader", num_questions=2)
    assert not at.exception and at.session_state["nav"] == "Interview"
    assert at.session_state["sid"] == created["id"] and at.session_state["prompt"]["turn"] == 0


def test_a_reload_stays_on_the_page_and_the_report_shown(server, monkeypatch):
    """F5 on History or on the report of a past session opens that page again, not the interview."""
    url, keys = server
    auth = {"Authorization": f"Bearer {keys['reloader']}"}
    past = httpx.post(f"{url}/v1/sessions", json={"num_questions": 1}, headers=auth).json()
    httpx.post(f"{url}/v1/sessions/{past['id']}/skip", params={"turn": 0}, headers=auth).raise_for_status()
    current = httpx.post(f"{url}/v1/sessions", json={"num_questions": 2}, headers=auth).json()
    at = app_at(monkeypatch, url, keys["reloader"], current["id"])
    at.sidebar.radio(key="nav").set_value("History").run()
    at = reload(monkeypatch, url, keys["reloader"], at)
    assert not at.exception and at.session_state["nav"] == "History", dict(at.query_params)
    assert at.session_state["sid"] == current["id"]  # the session in progress is still found

    next(b for b in at.button if b.key == f"report-{past['id']}").click().run()
    at = reload(monkeypatch, url, keys["reloader"], at)
    assert not at.exception and at.session_state["nav"] == "Report"
    assert f"Session {past['id'][:8]}" in texts(at.caption)  # the past session's report, not the current one

    at.sidebar.radio(key="nav").set_value("Interview").run()
    at = reload(monkeypatch, url, keys["reloader"], at)
    assert at.session_state["nav"] == "Interview" and "report_sid" not in at.session_state


def test_a_reload_numbers_the_questions_as_the_live_page_did(server, monkeypatch):
    """Each prompt's "question k of n", a follow-up's too, and the progress bar come back after F5."""
    url, keys = server
    at, created, auth = new_session_page(monkeypatch, server, "numberer", topics=["training-loop"], num_questions=2,
                                         seed=1)
    next(t for t in at.text_area if t.label == "Your answer").set_value("It resets a thing before the next pass.")
    click(at, "Submit answer")
    assert at.session_state["prompt"]["kind"] == "follow_up"
    click(at, "⏭ Skip")
    live = [c.value for c in at.caption if c.value.startswith("topic:")]
    assert [c.split(" · ", 2)[2] for c in live] == ["question 1 of 2", "question 1 of 2 · follow-up", "question 2 of 2"]

    again = reload(monkeypatch, url, keys["numberer"], at)
    assert [c.value for c in again.caption if c.value.startswith("topic:")] == live
    assert "Question 2 of 2" in again.get("progress")[0].proto.text


def test_history_offers_no_report_for_an_interview_in_progress(server, monkeypatch):
    url, keys = server
    auth = {"Authorization": f"Bearer {keys['historian']}"}
    interview = httpx.post(f"{url}/v1/sessions", json={"mode": "interview", "num_questions": 2}, headers=auth).json()
    at = app_for(monkeypatch, url, keys["historian"])
    at.session_state["nav"] = "History"
    at.run()
    keys_shown = {b.key for b in at.button}
    assert f"continue-{interview['id']}" in keys_shown and f"report-{interview['id']}" not in keys_shown
    assert "questions done" in texts(at.markdown)



def test_code_typed_in_the_plain_box_survives_switching_to_the_editor_and_back(server, monkeypatch):
    """The click that leaves the plain box is also what commits its text: both arrive in one rerun."""
    url, keys = server
    at = code_task_in_the_plain_box(monkeypatch, url, keys["switcher"], questions=1)
    box = next(t for t in at.text_area if t.label == "Your code")
    box.set_value("def mine():\n    return 42\n")
    at.sidebar.checkbox(key="plain_editor").uncheck().run()  # one rerun: the new text and the switch
    assert not at.exception
    at.sidebar.checkbox(key="plain_editor").check().run()
    assert next(t for t in at.text_area if t.label == "Your code").value == "def mine():\n    return 42\n"


def test_a_refused_hint_is_an_error_and_the_hints_given_stay(server, monkeypatch):
    url, keys = server
    # A topic without code tasks: a code task answered in words alone may draw no follow-up (its probes ask about
    # the candidate's code), and the follow-up is what this test skips.
    at, created, auth = new_session_page(monkeypatch, server, "hinter", topics=["performance-memory"],
                                         num_questions=2, seed=1)
    for _ in range(3):  # two hints per question, then "no more hints"
        click(at, "💡 Hint")
    assert "no more hints for this question" in texts(at.error)
    assert "moved on elsewhere" not in texts(at.info) and texts(at.info).count("hints cost") == 2

    # A reload: the hints are shown again, each under the ask for it (review s55: only "2 hint(s) taken here" was),
    # with what each cost, as the live reply said it.
    detail = httpx.get(f"{url}/v1/sessions/{created['id']}", headers=auth).json()
    given, cost = detail["prompt"]["hints"], detail["hint_cost"]
    again = app_at(monkeypatch, url, keys["hinter"], created["id"])
    assert len(given) == 2 and all(f"{hint} (hints cost {cost:g} points each on this question)" in texts(again.info)
                                   for hint in given), (given, texts(again.info))
    assert texts(again.markdown).count("Could I have a hint?") == 2 and "hint(s) taken here" not in texts(again.info)

    body = {"text": "It resets a thing before the next pass.", "turn": 0}
    follow_up = httpx.post(f"{url}/v1/sessions/{created['id']}/answers", json=body, headers=auth).json()["prompt"]
    assert follow_up["kind"] == "follow_up"
    again = app_at(monkeypatch, url, keys["hinter"], created["id"])
    click(again, "⏭ Skip")
    assert "Follow-up skipped: the score of your earlier answer on this question stands." in texts(again.info)


def _write(at, code: str, answer: str) -> None:
    """Type code and an answer into the plain boxes, unsent, and let the app run."""
    next(t for t in at.text_area if t.label == "Your code").set_value(code)
    next(t for t in at.text_area if t.label == "Your answer").set_value(answer)
    at.run()


def test_a_draft_and_plain_box_code_survive_a_visit_to_another_page(server, monkeypatch):
    url, keys = server
    at = code_task_in_the_plain_box(monkeypatch, url, keys["drafter"], questions=1)
    _write(at, "def mine():\n    return 42\n", "my draft answer")
    at.session_state["report_sid"] = "an-old-session"  # opened from History meanwhile
    at.sidebar.radio(key="nav").set_value("History").run()
    at.sidebar.radio(key="nav").set_value("Interview").run()
    assert not at.exception and "report_sid" not in at.session_state  # the Report page follows the interview
    assert next(t for t in at.text_area if t.label == "Your answer").value == "my draft answer"
    assert next(t for t in at.text_area if t.label == "Your code").value == "def mine():\n    return 42\n"


def test_what_was_typed_just_before_leaving_the_page_is_kept(server, monkeypatch):
    """A box sends its text when it loses the focus: a click on another page straight after typing brought the text
    in the run that drew that page, where Streamlit dropped the state of the boxes it did not draw; it was lost."""
    url, keys = server
    at = code_task_in_the_plain_box(monkeypatch, url, keys["leaver"], questions=1)
    next(t for t in at.text_area if t.label == "Your code").set_value("def mine():\n    return 42\n")
    next(t for t in at.text_area if t.label == "Your answer").set_value("typed just before leaving")
    at.sidebar.radio(key="nav").set_value("History").run()  # one run: the texts and the click
    assert not at.exception, at.exception
    auth = {"Authorization": f"Bearer {keys['leaver']}"}
    draft = httpx.get(f"{url}/v1/sessions/{at.session_state['sid']}", headers=auth).json()["draft"]
    assert draft and (draft["text"], draft["code"]) == ("typed just before leaving", "def mine():\n    return 42\n")
    at.sidebar.radio(key="nav").set_value("Interview").run()
    assert next(t for t in at.text_area if t.label == "Your answer").value == "typed just before leaving"
    assert next(t for t in at.text_area if t.label == "Your code").value == "def mine():\n    return 42\n"


def test_a_draft_is_back_after_a_reload_and_gone_once_sent(server, monkeypatch):
    """The draft lived only in the browser session: a reload (a closed tab, a crash) opened empty boxes."""
    url, keys = server
    at = code_task_in_the_plain_box(monkeypatch, url, keys["restorer"], questions=2)
    _write(at, "def mine():\n    return 42\n", "my unsent answer")
    again = reload(monkeypatch, url, keys["restorer"], at)
    again.sidebar.checkbox(key="plain_editor").check().run()
    assert next(t for t in again.text_area if t.label == "Your answer").value == "my unsent answer"
    assert next(t for t in again.text_area if t.label == "Your code").value == "def mine():\n    return 42\n"
    click(again, "Submit answer")
    after = reload(monkeypatch, url, keys["restorer"], again)
    after.sidebar.checkbox(key="plain_editor").check().run()
    assert "my unsent answer" in texts(after.markdown)  # in the chat, as the answer sent
    assert all(t.value in ("", None) for t in after.text_area if t.label == "Your answer")


def test_the_plain_code_box_chosen_is_still_chosen_after_a_reload_and_in_a_bookmark(server, monkeypatch):
    """Review s54: a reload brought back the page and the draft but not "Plain code box" ticked in the sidebar, so the
    code task showed the editor again: a user who needs the plain box (a screen reader, much pasting) had to find it
    again after each reload."""
    url, keys = server
    fresh = app_for(monkeypatch, url, keys["chooser"])
    fresh.run()  # a first visit: the editor, as before, and nothing about it in the address
    assert fresh.sidebar.checkbox(key="plain_editor").value is False and "editor" not in fresh.query_params
    at = code_task_in_the_plain_box(monkeypatch, url, keys["chooser"], questions=1)
    _write(at, "def mine():\n    return 42\n", "")
    again = reload(monkeypatch, url, keys["chooser"], at)
    assert not again.exception, again.exception
    assert again.sidebar.checkbox(key="plain_editor").value is True
    assert next(t for t in again.text_area if t.label == "Your code").value == "def mine():\n    return 42\n"

    bookmark = app_at(monkeypatch, url, keys["chooser"], {"page": "history", "editor": "plain"})
    assert bookmark.sidebar.checkbox(key="plain_editor").value is True

    again.sidebar.checkbox(key="plain_editor").uncheck().run()  # back to the editor: the address forgets the box
    assert "editor" not in again.query_params
    assert reload(monkeypatch, url, keys["chooser"], again).sidebar.checkbox(key="plain_editor").value is False


@pytest.mark.parametrize("address", ["{sid}/", "{sid}\n", "../me/progress", "nope"])
def test_a_mangled_session_address_opens_the_start_page(server, monkeypatch, address):
    url, keys = server
    auth = {"Authorization": f"Bearer {keys['reader']}"}
    created = httpx.post(f"{url}/v1/sessions", json={"num_questions": 1}, headers=auth).json()
    at = app_at(monkeypatch, url, keys["reader"], address.format(sid=created["id"]))
    assert not at.exception and not at.error and at.session_state["nav"] == "Start"
    # Said, not dropped without a word (review s55), and gone from the address.
    assert "was found for this API key" in texts(at.warning) and "session" not in at.query_params


def test_the_session_in_the_address_waits_for_an_api_that_is_down(server, monkeypatch):
    """Review s55: with the API down, ?session= said "No interview in progress" (and "No report yet") and was dropped
    from the address, so a reload once the API was back did not open the session again."""
    url, keys = server
    auth = {"Authorization": f"Bearer {keys['waiter']}"}
    created = httpx.post(f"{url}/v1/sessions", json={"num_questions": 2}, headers=auth).json()
    down = f"http://127.0.0.1:{free_port()}"
    at = app_at(monkeypatch, down, keys["waiter"], {"session": created["id"], "page": "interview"})
    assert not at.exception, at.exception
    assert f"cannot reach the API at {down}" in texts(at.error) and "reload the page then" in texts(at.error)
    assert "No interview in progress" not in texts(at.info)
    assert at.query_params.get("session") == created["id"]
    at.sidebar.radio(key="nav").set_value("Report").run()
    assert "No report yet" not in texts(at.info) and f"cannot reach the API at {down}" in texts(at.error)
    assert at.query_params.get("session") == created["id"]

    again = reload(monkeypatch, url, keys["waiter"], at)  # the API is back
    assert not again.exception and not again.error, texts(again.error)
    assert again.session_state["sid"] == created["id"] and again.session_state["nav"] == "Report"
    still_down = app_at(monkeypatch, down, keys["waiter"], {"session": created["id"], "page": "interview"})
    monkeypatch.setenv("INTERVIEWER_API_URL", url)
    still_down.run()  # and without a reload, on the next click
    assert still_down.session_state["sid"] == created["id"] and not still_down.error



def test_an_interview_ended_early_is_complete_with_its_report(server, monkeypatch):
    url, keys = server
    at = app_for(monkeypatch, url, keys["ender"])
    at.run()
    at.radio(key="mode_choice").set_value("interview")
    start_session(at, topics=["training-loop"], difficulty=1, questions=3, seed="2")
    click(at, "End now")
    assert "The interview is complete" in texts(at.success) and "The interview has ended" in texts(at.info)
    assert "Ended early: question 1 of 3 was shown but not answered" in texts(at.info)  # before any report
    click(at, "See my report")  # an interview-mode report, ready although 2 of the 3 questions never came
    assert not at.error, texts(at.error)
    page = texts(at.markdown) + texts(at.info) + texts(at.caption)
    assert "Ended early" in page, page
