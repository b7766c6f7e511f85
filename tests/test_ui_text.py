"""What the Streamlit pages pass to st.markdown: answers and bank texts shown as written (rendered here
with markdown-it, a CommonMark renderer like the one Streamlit's front end uses)."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

from ui.widgets import bank_markdown, literal

MARKDOWN = MarkdownIt("commonmark").enable(["strikethrough", "table"])
TYPED = ("A map-style Dataset implements __len__ and __getitem__(idx); flatten C*H*W; see x[0](y);\n"
         "# not a heading\ncosts $5 and ~~$10~~ | a | b |\n<b>not bold</b> \\n stays\n---\nnot a heading either\n"
         "===\n- not a list\n1. nor this\n  2) nor this")


def text_of(rendered: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


def test_literal_text_keeps_every_character_and_line():
    rendered = MARKDOWN.render(literal(TYPED))
    assert not re.search(r"<(strong|em|a|h1|h2|hr|s|table|b|ul|ol)\b", rendered), rendered
    assert [line.strip() for line in text_of(rendered).splitlines()] == [line.strip() for line in TYPED.splitlines()]


def test_a_model_answer_keeps_its_code_and_loses_accidental_emphasis():
    answer = ("Implement `__init__(self)` and __len__; the flattened size is C*H*W.\n\n"
              "- a list item\n\n```python\nsize = c * h * w  # __dunder__\n```\n")
    rendered = MARKDOWN.render(bank_markdown(answer))
    assert "<code>__init__(self)</code>" in rendered and "<li>a list item</li>" in rendered
    assert "size = c * h * w  # __dunder__" in html.unescape(rendered)  # the block, untouched
    assert not re.search(r"<(strong|em)\b", rendered), rendered
    assert "__len__" in text_of(rendered) and "C*H*W" in text_of(rendered)


def test_literal_keeps_indentation_entities_and_colon_words_as_typed():
    indent = "\u00a0" * 4  # non-breaking: kept where leading spaces are dropped
    assert literal("def f():\n    return 1\n\tpass") == f"def f():  \n{indent}return 1  \n{indent}pass"
    assert literal("&lt; &amp;") == "\\&lt; \\&amp;"  # shown as typed, not as "<" and "&"
    assert literal(":100: :smile:") == ":\u200b100: :\u200bsmile:"  # not turned into emoji



def test_the_client_follows_the_next_page_links_to_every_item():
    import httpx

    from ui.client import ApiClient

    pages = {None: ([1, 2], '</v1/sessions?limit=2&cursor=b>; rel="next"'), "b": ([3], None)}
    seen = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.url.params))
        items, link = pages[request.url.params.get("cursor")]
        return httpx.Response(200, json=items, headers={"Link": link} if link else {})

    api = ApiClient("http://api.test", transport=httpx.MockTransport(reply))
    assert api.get_every_page("/v1/sessions", limit=2) == [1, 2, 3]
    assert seen == [{"limit": "2"}, {"limit": "2", "cursor": "b"}]


def test_the_draft_script_has_nothing_that_st_html_sanitises_away() -> None:
    """DOMPurify, which st.html runs its body through, drops a script whose text holds "<" before a letter, "/" or
    "!" (as markup hidden in text): a comment naming "answer-<session>" silently stopped the drafts being sent."""
    from ui.drafts import COMMIT_WHILE_TYPING

    body = COMMIT_WHILE_TYPING.removeprefix("<script>").removesuffix("</script>")
    assert "<script>" not in body and not re.search(r"<[/\w!]", body)


def test_a_failed_checks_torch_report_is_one_line_on_the_page(monkeypatch):
    """show_code_result printed torch's comparison report whole under "↳" (a line each for the mismatched
    elements, the greatest differences and their indices); the feedback, the CLI and the report say it on one line."""
    import ui.widgets as widgets
    from app.api.schemas import code_result_out

    report = ("Tensor-likes are not close!\n\nMismatched elements: 10 / 30 (33.3%)\nGreatest absolute difference: 1.23 "
              "at index (0, 1) (up to 1e-05 allowed)\nGreatest relative difference: 0.5 at index (2, 0) (up to 1.3e-06 "
              "allowed)")
    run = {"question_id": "q", "status": "failed", "passed_checks": 1, "total_checks": 2, "score": 0.5, "checks": [
        {"name": "values", "description": "logits match the reference", "weight": 1.0, "passed": False,
         "message": report, "failure": "wrong"},
        {"name": "shape", "description": "shape (3, 5)", "weight": 1.0, "passed": True, "message": None}]}
    reply = code_result_out(run)
    assert reply is not None and reply.checks[0].message == report  # the whole report stays in the reply
    shown: list[str] = []
    monkeypatch.setattr(widgets.st, "markdown", shown.append)
    monkeypatch.setattr(widgets.st, "warning", lambda *_: None)
    widgets.show_code_result(reply.model_dump(mode="json"))
    why = shown[0].split("↳ ", 1)[1]
    assert "\n" not in why and "Greatest" not in why, why
    assert text_of(MARKDOWN.render(why)).strip() == "not met (10 of 30 values differ)"
    assert "↳" not in shown[1]


def test_the_client_waits_for_an_action_as_long_as_the_api_says_a_step_may_take():
    """With `make run-llm` an answer took 143 s and the client gave up at 60 s on every one (review s56)."""
    import httpx

    from ui import client
    from ui.client import ApiClient

    waited: dict[str, float | None] = {}

    def reply(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/readyz":
            return httpx.Response(200, json={"status": "ready", "step_within_s": 570.0})
        waited[request.url.path] = request.extensions["timeout"]["read"]
        return httpx.Response(200, json={"status": "active"})

    getattr(client, "_STEP_S", {}).pop("http://slow.test", None)  # learned once per address
    api = ApiClient("http://slow.test", transport=httpx.MockTransport(reply))
    api.post("/v1/sessions/s1/answers", {"text": "an answer", "turn": 0})
    assert waited["/v1/sessions/s1/answers"] >= 570.0
