"""How API results look on the page: prompts, rubric feedback, code-check results."""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

# A question's points, one list each, titled as the report page and the downloaded files title them (app/reports/
# wording.py, which the front end may not import): practice feedback said "Points covered" where they say "Covered".
POINT_LISTS = {"covered": ("Covered", "✅"), "partial": ("Partly stated", "🟡"), "missed": ("Missed", "❌"),
               # a code task whose run alone earned full marks: the points its words missed cost nothing
               "worth_saying": ("Not needed for the score, worth saying in an interview", "💬")}
STATUS_WORDS = {
    "passed": "all checks passed",
    "failed": "some checks failed",
    "error": "the code raised an error",
    "timed_out": "the code timed out",
    "resource_limit": "the code hit a resource limit",
}


# What Markdown reads as markup. Answers and the bank's own texts are full of it by accident: Streamlit
# showed "__len__" as a bold "len", "C*H*W" with an italic H and "x[0](y)" as a link.
_MARKUP = re.compile(r"([\\`*_\[\]<>#|!$~&])")  # "&" too: "&lt;" shows as typed, not as "<"
_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)  # fenced blocks and inline code spans
# What a line's start makes of it: "---" or "===" under a line makes that line a heading, and "- ", "+ ",
# "1. " start a list.
_LINE_START = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")
# Streamlit turns ":100:" or ":smile:" into an emoji; a zero-width space after the first colon keeps the words.
_SHORTCODE = re.compile(r"(?<![\w:]):(?=[\w+-]+:)")  # not inside "127.0.0.1:8000:" or "a::b:"
_INDENT = re.compile(r"^[ \t]+")


def literal(text: str) -> str:
    """Text for st.markdown shown as it was typed: markup escaped, line breaks and indentation kept."""
    return "  \n".join(_line(line) for line in str(text).split("\n"))


def _line(line: str) -> str:
    line = _LINE_START.sub(_escape_start, _MARKUP.sub(r"\\\1", _SHORTCODE.sub(":\u200b", line)))
    # Leading spaces would be dropped (pasted Python lost its indentation): non-breaking ones stay.
    return _INDENT.sub(lambda m: m.group(0).expandtabs(4).replace(" ", "\u00a0"), line)


def _escape_start(found: re.Match[str]) -> str:
    lead, mark = found.group(1), found.group(2)
    return f"{lead}\\{mark}" if not mark.isdigit() else f"{lead}{mark}\\"


def bank_markdown(text: str) -> str:
    """A model answer or code contract, written in Markdown (code spans and blocks, lists): its code
    stays code, and outside it the characters of emphasis, links and maths are escaped (the prose holds
    __init__ and C*H*W, never meant as emphasis)."""
    return "".join(part if _CODE.fullmatch(part) else re.sub(r"([\\*_\[\]$~])", r"\\\1", part)
                   for part in _CODE.split(text))


# A contract whose task forbids built-ins ends with what else the sandbox refuses (evaluators/code/forbidden.py,
# contract_with_refusals, which this front end may not import): 41 module names and 7 built-ins as code spans, 14 lines
# (350 px) at 390 px between the contract and the editor. It is folded away below the contract; a contract worded
# otherwise shows whole.
REFUSALS = "\n\nSo that the forbidden calls cannot be reached without naming them"


def show_contract(contract: str) -> None:
    """A code task's contract, what the sandbox also refuses folded away under it."""
    stated, found, refusals = contract.partition(REFUSALS)
    st.markdown(bank_markdown(stated))
    if found:
        with st.expander("Modules and built-ins this task also refuses"):
            st.markdown(bank_markdown(found.strip() + refusals))


def shown_score(score: float) -> float:
    """A 0-5 score to one decimal, as every page (and app/reports) shows it: one rounding for all."""
    return round(score, 1)


def score_text(score: float | None) -> str:
    """A 0-5 score as shown, or "not scored" where nothing was answered yet, in the words of the downloaded files
    (app/reports/wording.py, which this front end may not import)."""
    return "not scored" if score is None else f"{shown_score(score):.1f} / 5"


def prompt_caption(prompt: dict[str, Any]) -> str:
    parts = [f"topic: {prompt['topic']}", f"difficulty {prompt['difficulty']}"]
    if prompt.get("number"):
        parts.append(f"question {prompt['number']} of {prompt['total']}")
    if prompt.get("kind") == "follow_up":
        parts.append("follow-up")
    return " · ".join(parts)


def show_prompt(prompt: dict[str, Any]) -> None:
    st.markdown(literal(prompt["text"]))
    st.caption(prompt_caption(prompt))
    for note in prompt.get("notes") or []:  # why this question: fewer than asked for, another level, review
        st.info(literal(note))


def show_answer(entry: dict[str, Any]) -> None:
    if entry.get("text"):
        st.markdown(literal(entry["text"]))
    if entry.get("code"):
        with st.expander("Code submitted"):
            st.code(entry["code"], language="python")


def show_feedback(evaluation: dict[str, Any] | None, code_result: dict[str, Any] | None) -> None:
    """The rubric verdict: score, points covered with the quoted evidence, missed, misconceptions."""
    if evaluation is None:
        if code_result:
            show_code_result(code_result)
        return
    if evaluation.get("follow_up"):  # a follow-up skipped or not known: the earlier answer's score stands
        # Less the hints taken on the follow-up, the one charge a give-up has (its `penalties` say which).
        cost = ", less the hint(s) taken on this follow-up" if evaluation.get("penalties") else ""
        st.info(f"{FOLLOW_UP_GIVEN_UP[evaluation['follow_up']]}{cost}. Score: {score_text(evaluation['score'])}.")
        for note in evaluation.get("penalties") or []:
            st.caption(literal(note))
        _model_answer(evaluation)  # withheld while the follow-up was pending: the question closes here
        return
    if evaluation.get("gate") in ("skip", "dont_know"):
        st.info(literal(evaluation.get("feedback") or "Scored 0."))
    st.metric("Score", score_text(evaluation["score"]))
    points = evaluation.get("points", [])
    missed = [p for p in points if p["verdict"] == "missed" and not p.get("beyond_score")]
    # A partial point under its own heading, as the reports list it: it was among the points covered.
    for verdict in ("covered", "partial"):
        if stated := [p for p in points if p["verdict"] == verdict]:
            title, icon = POINT_LISTS[verdict]
            st.markdown(f"**{title}**")
            for point in stated:
                line = f"{icon} {literal(point['description'])}"
                if point.get("checks"):  # shown by the code's run, not quoted from the answer
                    line += f"  \n{literal(point['evidence'])}"
                elif point.get("evidence"):  # a line of the code is not quoted as the candidate's words
                    line += f"  \n{'Your code has: ' if point.get('from_code') else '> '}“{literal(point['evidence'])}”"
                st.markdown(line)
    if missed:
        st.markdown(f"**{POINT_LISTS['missed'][0]}**")
        # One line each: a stored check message's line breaks (torch's report) ended the list midway.
        st.markdown("\n".join(f"- {POINT_LISTS['missed'][1]} {literal(p['description'])}"
                               + (f" ({literal(' '.join(p['evidence'].split()))})" if p.get("checks") else "")
                               + _in_words(p) for p in missed))
    if unneeded := [p for p in points if p.get("beyond_score")]:  # the code score was full without them
        title, icon = POINT_LISTS["worth_saying"]
        st.markdown(f"**{title}**\n\n" + "\n".join(f"- {icon} {literal(p['description'])}" for p in unneeded))
    for wrong in evaluation.get("misconceptions", []):
        lead = "Your code has" if wrong.get("from_code") else "You said"
        st.error(f"**Misconception:** {literal(wrong['claim'])}  \n{lead}: “{literal(wrong['quote'])}”  \n"
                 f"{literal(wrong['correction'])}")
    for note in [*evaluation.get("notes", []), *(evaluation.get("penalties") or [])]:
        st.caption(literal(note))
    if code_result:
        show_code_result(code_result)
    _model_answer(evaluation)


def _in_words(point: dict[str, Any]) -> str:
    """A point a failed check missed, though the words state it: said, so the words are known to have been read."""
    return f"  \n  said in words, not yet shown by your code: “{literal(point['words'])}”" if point.get("words") else ""


def _model_answer(evaluation: dict[str, Any]) -> None:
    if evaluation.get("model_answer"):
        with st.expander("Model answer"):
            st.markdown(bank_markdown(evaluation["model_answer"]))


FOLLOW_UP_GIVEN_UP = {
    "skip": "Follow-up skipped: the score of your earlier answer on this question stands",
    "dont_know": "Follow-up not known: the score of your earlier answer on this question stands",
}


def show_code_result(result: dict[str, Any]) -> None:
    """Per-check results from the sandboxed runner."""
    summary = STATUS_WORDS.get(result["status"], result["status"])
    counts = ""
    if result.get("total_checks"):
        counts = f" ({result['passed_checks']}/{result['total_checks']} checks)"
    box = st.success if result["status"] == "passed" else st.warning
    box(f"Code checks: {summary}{counts}")
    for check in result.get("checks", []):
        icon = "✅" if check["passed"] else "❌"
        line = f"{icon} `{check['name']}`: {literal(check['description'])}"
        # One line, as the feedback says it: the API's `said` cuts torch's comparison report to what differs.
        why = check.get("said") or check.get("message")
        if why:
            line += f"  \n  ↳ {literal(' '.join(str(why).split()))}"
        st.markdown(line)
    if result.get("stdout"):
        with st.expander("Output"):
            st.code(result["stdout"])

