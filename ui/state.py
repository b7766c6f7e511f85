"""What the app remembers per browser tab: the page, the session in progress and its chat log.

Only presentation state lives here; the API owns the session itself (questions, scores, transcript).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

PAGES = ("Start", "Interview", "Report", "History")


def goto(page: str) -> None:
    """Switch page on the next run (the sidebar radio cannot be changed once drawn in this run)."""
    st.session_state["_goto"] = page
    st.rerun()


def apply_pending_page() -> None:
    """Call before the navigation widget is drawn."""
    if "_goto" in st.session_state:
        st.session_state["nav"] = st.session_state.pop("_goto")


def show_page(page: str) -> None:
    """Call once a run, with the page it draws: a page drawn after another is a new visit of it (see `kept`)."""
    if st.session_state.get("_page_drawn") != page:
        st.session_state["_page_drawn"] = page
        st.session_state["_visit"] = st.session_state.get("_visit", 0) + 1


def kept(key: str) -> str:
    """A box's key, its text put back in it when the box is not yet drawn on this visit of its page. Another page took
    the box off the browser's page, and a box drawn anew shows only a value the app sets: the app's own copy of its
    text, or `keep`'s copy when Streamlit dropped that (as it does once another page's run ends). A run of the other
    page cut short by the click back leaves the app's copy in place, so nothing was set, and the box came back empty
    (6 times in 9 with the click straight after typing)."""
    if not shown_on_this_visit(key):
        text = st.session_state.get(key, st.session_state.get(f"{key}:kept"))
        if text is not None:
            st.session_state[key] = text
    return key


def keep(key: str, value: Any) -> None:
    st.session_state[f"{key}:kept"] = value


def shown_on_this_visit(key: str) -> bool:
    """Whether the box under `key` was drawn on this visit of its page (mark_shown), so the browser shows its text."""
    return st.session_state.get(f"{key}:visit") == st.session_state.get("_visit")


def mark_shown(key: str) -> None:
    """Call once the box under `key` is drawn."""
    st.session_state[f"{key}:visit"] = st.session_state.get("_visit")


def answer_key(sid: str, turn: int) -> str:
    """The answer box's key: one per prompt, so a draft stays with its prompt."""
    return f"answer-{sid}-{turn}"


def code_key(sid: str, question_id: str) -> str:
    """The code box's key (ui.editor styles the boxes by its 'code-' start)."""
    return f"code-{sid}-{question_id}"


DRAFT_SAVED = "draft_saved"  # (sid, turn, text, code) as the API last kept it (ui.drafts)


def begin_session(created: dict[str, Any]) -> None:
    """Remember a session the API just created (POST /v1/sessions) and its first prompt; the Report page
    follows it from now on, not a past session opened from History."""
    st.session_state.pop("report_sid", None)
    st.query_params["session"] = created["id"]  # a reload finds it again (ui.address)
    st.session_state.update(
        sid=created["id"],
        status=created["status"],
        mode=created["config"]["mode"],
        chat=[],
        prompt=None,
    )
    show_prompt(created.get("prompt"))


def resume_session(detail: dict[str, Any]) -> None:
    """Rebuild the chat from a stored session (GET /v1/sessions/{id}) to continue or review it."""
    begin_session({**detail, "prompt": None})
    chat: list[dict[str, Any]] = st.session_state["chat"]
    open_prompt = detail.get("prompt")
    number, shown_open = 0, False
    for turn in detail["transcript"]:
        # The transcript has no "question k of n": k counts the main questions so far (a follow-up keeps its
        # question's k), as the API numbers its prompts.
        number += turn["kind"] == "question"
        prompt = {**turn, "text": turn["prompt"], "number": number or None, "total": detail["config"]["num_questions"]}
        if open_prompt and turn.get("position") == open_prompt["turn"]:
            prompt, shown_open = open_prompt, True  # the API's own: its number, code task and time limit
        chat.append({"role": "assistant", "type": "prompt", "prompt": prompt})
        chat += _hints_taken(turn, detail.get("hint_cost"))
        if turn.get("action"):
            chat.append(_user_entry(turn["action"], turn.get("answer_text"), turn.get("answer_code")))
        if turn.get("evaluation"):
            chat.append(
                {"role": "assistant", "type": "feedback", "evaluation": turn["evaluation"],
                 "code_result": turn.get("code_result")}
            )
    if detail.get("status") == "completed":  # why it ended ("Ended early ..."), which no prompt carried
        told = {note for turn in detail["transcript"] for note in turn.get("notes") or []}
        chat += [{"role": "assistant", "type": "message", "text": note}
                 for note in detail.get("notes") or [] if note not in told]
    if shown_open:  # in its place, before the hints taken on it, not again after them
        st.session_state["prompt"] = open_prompt
        st.session_state.pop("check_result", None)
    else:
        show_prompt(open_prompt)
    _restore_draft(detail)


def _hints_taken(turn: dict[str, Any], cost: float | None = None) -> list[dict[str, Any]]:
    """The hints taken on a turn as the live page showed them: the ask, then the hint with what it costs (`cost`, the
    session's `hint_cost`; a server before it was sent only says that hints cost points). A turn stored before the
    hints' texts were kept has only their count (hints_used), so those are only counted."""
    texts = list(turn.get("hints") or [])
    each = "points" if cost is None else f"{cost:g} points each"
    entries: list[dict[str, Any]] = []
    for text in texts:
        entries += [_user_entry("hint", None, None),
                    {"role": "assistant", "type": "message", "text": f"{text} (hints cost {each} on this question)"}]
    untold = (turn.get("hints_used") or 0) - len(texts)
    if untold > 0:
        costs = "costs points" if cost is None else f"costs {cost:g} points"
        entries.append({"role": "assistant", "type": "message",
                        "text": f"{untold} hint(s) taken here (each {costs} on this question)."})
    return entries


def _restore_draft(detail: dict[str, Any]) -> None:
    """Put the draft the API kept for the open prompt back in its boxes: written before a reload, a closed tab or
    a crash of the app, it was never sent."""
    draft, prompt = detail.get("draft"), detail.get("prompt")
    if not draft or not prompt or draft["turn"] != prompt["turn"]:
        return
    sid, turn = detail["id"], prompt["turn"]
    if draft.get("text"):
        st.session_state.pop(answer_key(sid, turn), None)  # the box's text left from before is older (kept)
        keep(answer_key(sid, turn), draft["text"])
    if draft.get("code") and prompt.get("code_contract"):
        st.session_state[f"{code_key(sid, prompt['question_id'])}:code"] = draft["code"]
    st.session_state[DRAFT_SAVED] = (sid, turn, draft.get("text") or "", draft.get("code"))


def show_prompt(prompt: dict[str, Any] | None) -> None:
    """Append a prompt to the chat unless it is the one already showing (hint and repeat return it)."""
    current = st.session_state.get("prompt")
    same = current is not None and prompt is not None and _identity(current) == _identity(prompt)
    st.session_state["prompt"] = prompt
    if prompt is None or same:
        return
    st.session_state["chat"].append({"role": "assistant", "type": "prompt", "prompt": prompt})
    st.session_state.pop("check_result", None)


def record_action(action: str, *, text: str | None = None, code: str | None = None) -> None:
    st.session_state["chat"].append(_user_entry(action, text, code))


def apply_outcome(outcome: dict[str, Any]) -> None:
    """Fold a TurnOut (answer, hint, skip, repeat, dont-know) into the chat and the current prompt."""
    chat: list[dict[str, Any]] = st.session_state["chat"]
    if outcome.get("evaluation") or outcome.get("code_result"):
        chat.append(
            {"role": "assistant", "type": "feedback", "evaluation": outcome.get("evaluation"),
             "code_result": outcome.get("code_result")}
        )
    if outcome.get("message"):
        chat.append({"role": "assistant", "type": "message", "text": outcome["message"]})
    for note in outcome.get("notes") or []:  # the session is over ("Ended early ..."): no next prompt to carry it
        chat.append({"role": "assistant", "type": "message", "text": note})
    st.session_state["status"] = outcome["status"]
    if outcome["status"] == "completed":
        st.session_state["prompt"] = None
        return
    if outcome.get("prompt") and _identity(outcome["prompt"]) == _identity(st.session_state.get("prompt")):
        if not outcome.get("message"):  # "repeat": ask the same thing again, visibly
            chat.append({"role": "assistant", "type": "prompt", "prompt": outcome["prompt"]})
    show_prompt(outcome.get("prompt"))


def _identity(prompt: dict[str, Any] | None) -> int | None:
    """Which turn the prompt is: hint and repeat return the same one, every new prompt is a new turn."""
    return None if prompt is None else prompt["turn"]


ACTION_WORDS = {
    "skip": "Skip this question.",
    "dont_know": "I don't know.",
    "dont-know": "I don't know.",
    "hint": "Could I have a hint?",
    "repeat": "Could you repeat the question?",
    "finish": "Let's end the interview here.",
}


def last_code_sent(question_id: str) -> str | None:
    """The code last sent with an answer to this question, as the chat shows it (rebuilt from the API after a
    reload)."""
    sent, asked = None, None
    for entry in st.session_state.get("chat", []):
        if entry["type"] == "prompt":
            asked = entry["prompt"].get("question_id")
        elif entry["role"] == "user" and entry.get("code") and asked == question_id:
            sent = entry["code"]
    return sent


def _user_entry(action: str, text: str | None, code: str | None) -> dict[str, Any]:
    if action == "answer":
        return {"role": "user", "type": "answer", "text": text or "", "code": code}
    return {"role": "user", "type": "answer", "text": ACTION_WORDS.get(action, action), "code": None}
