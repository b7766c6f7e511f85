"""The interview page: the chat so far, the current question, the answer box and the actions."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import streamlit as st

from ui import drafts, resume, state, widgets, wrapping
from ui.client import ApiClient, ApiError
from ui.editor import await_last_edit, code_editor, latest_code

ACTIONS = (("hint", "💡 Hint"), ("repeat", "🔁 Repeat"), ("skip", "⏭ Skip"), ("dont-know", "🤷 I don't know"))


def render(api: ApiClient) -> None:
    st.header("Interview")
    sid = st.session_state.get("sid")
    if not sid:
        latest = resume.latest_active(api)
        if latest is None:
            st.info("No interview in progress: start one on the Start page.")
        resume.offer_to_continue(api, latest, where="interview")
        if st.button("Start a new interview" if latest else "Go to Start"):
            state.goto("Start")
        return
    mode = st.session_state.get("mode", "practice")
    st.caption(f"{mode.title()} mode · session {sid[:8]}")
    prompt = st.session_state.get("prompt")
    with st.container():  # one element however long the chat: what comes after it keeps its place (_code_panel)
        for entry in st.session_state.get("chat", []):
            _show_entry(entry)
        _show_set_aside(sid, prompt)
    if st.session_state.get("status") == "completed":
        st.success("The interview is complete. Your report is ready.")
        if st.button("See my report", type="primary"):
            st.session_state["report_sid"] = sid
            state.goto("Report")
        return
    if prompt is None:
        st.warning("The API sent no current question for this session.")
        return
    _progress(prompt)
    _answer_form(api, sid, prompt)


def _show_entry(entry: dict[str, Any]) -> None:
    with st.chat_message(entry["role"]):
        if entry["type"] == "prompt":
            widgets.show_prompt(entry["prompt"])
        elif entry["type"] == "answer":
            widgets.show_answer(entry)
        elif entry["type"] == "feedback":
            widgets.show_feedback(entry.get("evaluation"), entry.get("code_result"))
        else:
            st.info(widgets.literal(entry["text"]))


def _progress(prompt: dict[str, Any]) -> None:
    number, total = prompt["number"], prompt["total"]
    st.progress(min(1.0, (number - 1) / total), text=f"Question {number} of {total}")
    if prompt.get("time_limit_s"):
        _timer(prompt["time_limit_s"], _asked_at(prompt))


def _asked_at(prompt: dict[str, Any]) -> float:
    """When the API asked it (its limit runs from then, also across a reload or a resumed session)."""
    try:
        return datetime.fromisoformat(prompt["asked_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return time.time()


@st.fragment(run_every=1.0)
def _timer(limit_s: int, asked_at: float) -> None:
    left = int(limit_s - (time.time() - asked_at))
    if left > 0:
        st.markdown(f"⏱ **Time left on this question: {left // 60}:{left % 60:02d}**")
    else:
        st.warning(f"⏱ Time is up ({limit_s} s): an answer given now scores half.")


def _answer_form(api: ApiClient, sid: str, prompt: dict[str, Any]) -> None:
    # Widgets are keyed by the prompt's turn, so a draft stays with its prompt.
    turn = prompt["turn"]
    code = None
    if prompt.get("code_contract"):
        code = _code_panel(prompt, sid)
    key = state.answer_key(sid, turn)
    text = st.text_area("Your answer", key=state.kept(key), height=160,
                        placeholder="Explain your answer as you would to an interviewer.")
    state.keep(key, text)
    state.mark_shown(key)
    drafts.watch_typing()
    drafts.save(api, sid=sid, prompt=prompt, text=text, code=code)
    columns = st.columns([2, 1, 1, 1, 1.4])
    columns[0].button("Submit answer", type="primary", width="stretch", key=f"submit-{sid}-{turn}",
                      on_click=_queue, args=(sid, turn, "answer"))
    for column, (action, label) in zip(columns[1:], ACTIONS, strict=True):
        column.button(label, width="stretch", key=f"{action}-{sid}-{turn}", on_click=_queue, args=(sid, turn, action))
    with st.popover("⏹ End the interview"):
        st.caption("End now: your report covers what you have answered, and this question is not scored.")
        st.button("End now", key=f"finish-{sid}-{turn}", on_click=_queue, args=(sid, turn, "finish"))
    if code is not None:
        wrapping.editor_lines_by_width()
    _send_queued(api, sid, prompt, text=text, code=code)


def keep_what_was_typed(api: ApiClient) -> None:
    """On a run that draws another page: keep what the open prompt's boxes hold and save it as the draft. A box sends
    its text when it loses the focus, so a click on another page straight after typing brings the text in this very
    run, and Streamlit drops the state of the boxes it does not draw: the text was lost."""
    sid, prompt = st.session_state.get("sid"), st.session_state.get("prompt")
    if not sid or not prompt or st.session_state.get("status") == "completed":
        return
    key = state.answer_key(sid, prompt["turn"])
    if key not in st.session_state:  # the boxes were not on the page drawn last: nothing new came from them
        return
    text = str(st.session_state[key] or "")
    state.keep(key, text)
    code = None
    if prompt.get("code_contract"):
        code = latest_code(state.code_key(sid, prompt["question_id"]), prompt.get("starter_code") or "")
    drafts.save(api, sid=sid, prompt=prompt, text=text, code=code)


def _queue(sid: str, turn: int, action: str) -> None:
    """A button's click, kept until it is sent. A button is True in one run only, and Streamlit stops that run
    at its next element when a newer rerun request comes in (the code editor sends the last keystrokes 200 ms
    after they are typed, so just after a quick click): read from the button, the click was lost."""
    st.session_state["queued"] = {"sid": sid, "turn": turn, "action": action}


def _send_queued(api: ApiClient, sid: str, prompt: dict[str, Any], *, text: str, code: str | None) -> None:
    """Send the click queued for this prompt, with the answer and code as they are now. Each action names the
    prompt's turn: a double click is refused by the API, and a click queued for a prompt since moved past
    (a second click after the page moved on) is dropped here."""
    queued = st.session_state.get("queued")
    if not queued:
        return
    turn, action = prompt["turn"], queued["action"]
    if (queued["sid"], queued["turn"]) != (sid, turn):
        st.session_state.pop("queued")
        return
    if code is not None and action in ("check", "answer"):
        await_last_edit(state.code_key(sid, prompt["question_id"]))
    if action == "check":
        _run_checks(api, sid, prompt, code or "")
    elif action == "answer":
        body = {"text": text, "turn": turn}
        # The editor keeps the code for the whole question: code already sent is not sent again with a follow-up's
        # answer, which re-ran it for nothing and hid a fix written in a fence in the words.
        unsent = (prompt.get("starter_code") or "", state.last_code_sent(prompt["question_id"]) or "")
        if code is not None and code.strip() not in {c.strip() for c in unsent}:
            body["code"] = code
        with st.spinner("Scoring your answer…"):
            _act(api, sid, "answers", body=body, action="answer")
    else:
        _act(api, sid, f"{action}?turn={turn}", action=action.replace("-", "_"))


def _code_panel(prompt: dict[str, Any], sid: str) -> str:
    # One panel, so one editor, for the whole question, its follow-ups included: a new editor lost the caret's place
    # and the undo history. It stays in place because the chat above is a single element: React keeps a keyed block
    # across runs but, when elements come before it, may move it down by taking it out of the page and putting it
    # back; that reloads the editor's iframe, and Streamlit 1.67 listens to the iframe's first window only
    # (ComponentRegistry), so the reloaded editor never got its contents (a blank box after an answer that drew a
    # follow-up).
    with st.container(border=True, key=f"task-panel-{prompt['question_id']}"):
        st.markdown("**Code task: the contract**")
        widgets.show_contract(prompt["code_contract"])
        code = code_editor(
            key=state.code_key(sid, prompt["question_id"]),
            starter=prompt.get("starter_code") or "",
            plain=bool(st.session_state.get("plain_editor")),
        )
        st.button("▶ Run checks", key=f"check-{sid}-{prompt['turn']}", on_click=_queue,
                  args=(sid, prompt["turn"], "check"))
        result = st.session_state.get("check_result")
        if result and "error" in result:
            st.error(widgets.literal(result["error"]))
        elif result:
            widgets.show_code_result(result)
            if result.get("runs"):
                st.caption(f"Run {result['runs']} of this task's hidden checks: your report shows how many you used.")
    return code


def _run_checks(api: ApiClient, sid: str, prompt: dict[str, Any], code: str) -> None:
    # Run for this session: the API counts the runs on the question and the report shows the count.
    with st.spinner("Running the hidden checks in the sandbox…"):
        st.session_state.pop("queued")  # no element from here to the request: the run cannot be stopped between
        try:
            result = api.post("/v1/code/check", {"question_id": prompt["question_id"], "code": code, "session_id": sid})
        except ApiError as exc:
            result = {"error": str(exc)}
        st.session_state["check_result"] = result
    st.rerun()


def _caught_up(api: ApiClient, sid: str, *, why: str = "") -> bool:
    """After a 409 (the session moved on in another tab, or a request that timed out here was recorded
    there), show the session as the API has it, saying why. False if it cannot be fetched, or if it has not
    moved (a refusal such as "no more hints for this question" is itself the news, and the chat stays)."""
    try:
        detail = api.get(f"/v1/sessions/{sid}")
    except ApiError:
        return False
    here = st.session_state.get("prompt") or {}
    there = detail.get("prompt")
    if detail["status"] == st.session_state.get("status") and (there is None or there["turn"] == here.get("turn")):
        return False
    if not why:  # a received answer was sent: nothing to keep aside
        _set_aside(sid, here)
    state.resume_session(detail)
    st.session_state["chat"].append({"role": "assistant", "type": "message", "text": why or CAUGHT_UP})
    return True


def _set_aside(sid: str, prompt: dict[str, Any]) -> None:
    """Keep what was typed for a prompt the session has moved past: it was never sent, and the answer box
    of the new prompt starts empty, so without this the candidate's text would vanish without a word."""
    text = str(st.session_state.get(state.answer_key(sid, prompt.get("turn", -1))) or "").strip()
    code = None
    if prompt.get("code_contract"):
        code = st.session_state.get(f"{state.code_key(sid, prompt['question_id'])}:code")
        if not code or code.strip() == (prompt.get("starter_code") or "").strip():
            code = None
    if text or code:
        which = f"question {prompt.get('number')} of {prompt.get('total')}"
        if prompt.get("kind") == "follow_up":
            which = f"the follow-up on {which}"
        st.session_state["set_aside"] = {"sid": sid, "which": which, "text": text, "code": code}


def _show_set_aside(sid: str, prompt: dict[str, Any] | None) -> None:
    """The draft _set_aside kept, until the candidate puts it in the answer box or dismisses it."""
    draft = st.session_state.get("set_aside")
    if not draft or draft["sid"] != sid:
        return
    st.warning(f"Not sent: the session moved on before this tab sent what you wrote for {draft['which']}. "
               "It is kept here for you to copy or reuse.")
    if draft["text"]:
        st.code(draft["text"], language=None, wrap_lines=True)
    if draft["code"]:
        st.code(draft["code"], language="python")
    left, right = st.columns(2)
    if prompt is not None and draft["text"]:
        left.button("Put my text in the answer box", on_click=_reuse_draft, args=(sid, prompt["turn"]))
    right.button("Dismiss", on_click=st.session_state.pop, args=("set_aside", None))


def _reuse_draft(sid: str, turn: int) -> None:
    """Append the kept text to the current answer box (a callback: the box may not be changed once drawn)."""
    key = state.kept(state.answer_key(sid, turn))
    draft = st.session_state.pop("set_aside")
    st.session_state[key] = "\n\n".join(t for t in (str(st.session_state.get(key) or ""), draft["text"]) if t)
    state.keep(key, st.session_state[key])


RECEIVED = ("Your answer had been received already (an earlier attempt, still being scored when this page "
            "stopped waiting): here is the session with its feedback.")
CAUGHT_UP = ("This session moved on elsewhere (in another tab, or by a request this page gave up waiting for), "
             "so nothing was sent: here it is as it stands now.")


def _act(api: ApiClient, sid: str, path: str, *, action: str, body: dict[str, Any] | None = None) -> None:
    st.session_state.pop("queued")  # no element from here to the request: the run cannot be stopped between
    try:
        outcome = api.post(f"/v1/sessions/{sid}/{path}", body)
    except ApiError as exc:
        # A retried answer the API had already received is not "moved on elsewhere": its feedback is shown now.
        received = RECEIVED if action == "answer" and "was received already" in str(exc) else ""
        if exc.status == 409 and _caught_up(api, sid, why=received):
            st.rerun()
        st.error(widgets.literal(str(exc)))
        return
    if action == "answer" and body is not None:
        state.record_action("answer", text=body.get("text"), code=body.get("code"))
    else:
        state.record_action(action)
    if action == "answer" and st.session_state.get("mode") == "interview" and outcome["status"] == "active":
        outcome = {**outcome, "message": outcome.get("message") or "Answer recorded; feedback comes in the report."}
    state.apply_outcome(outcome)
    st.rerun()
