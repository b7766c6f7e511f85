"""Progress across sessions, and the report endpoint's content negotiation."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import jsonschema
import pytest

from app.api import deps
from app.config import Settings
from app.main import create_app
from tests.api_fixtures import PASSING_MARK, alice, api, assert_problem, scorer  # noqa: F401


def finish(client, bank, *, good: bool, **config):
    reference = {q.id: q.reference_answer for q in bank}
    created = client.post("/v1/sessions", json={"num_questions": 2, "topics": ["tensors"], **config}).json()
    prompt = created["prompt"]
    while prompt is not None:
        text = reference[prompt["question_id"]] if good else "No idea, something about tensors maybe."
        body = {"text": text, "turn": prompt["turn"]}
        prompt = client.post(f"/v1/sessions/{created['id']}/answers", json=body).json()["prompt"]
    return created["id"]


def test_progress_tracks_topics_over_sessions(alice, bank):
    empty = alice.get("/v1/me/progress").json()
    assert empty == {"sessions": 0, "completed_sessions": 0, "answers": 0, "topics": [], "weak_topics": []}
    first = finish(alice, bank, good=False, seed=1)
    second = finish(alice, bank, good=True, seed=2)
    alice.post("/v1/sessions", json={"topics": ["autograd"]})  # active, unanswered
    progress = alice.get("/v1/me/progress").json()
    assert progress["sessions"] == 3 and progress["completed_sessions"] == 2 and progress["answers"] == 4
    (tensors,) = progress["topics"]
    assert tensors["topic"] == "tensors" and [h["session_id"] for h in tensors["history"]] == [first, second]
    assert tensors["history"][1]["mean_score"] > tensors["history"][0]["mean_score"]


def test_report_formats_by_query_and_accept(alice, bank):
    sid = finish(alice, bank, good=True, seed=4)
    as_json = alice.get(f"/v1/sessions/{sid}/report")
    assert as_json.status_code == 200 and as_json.headers["content-type"].startswith("application/json")
    assert isinstance(as_json.json(), dict) and as_json.headers["vary"] == "Accept"  # for caches between
    markdown = alice.get(f"/v1/sessions/{sid}/report", headers={"Accept": "text/markdown"})
    assert markdown.headers["content-type"].startswith("text/markdown") and markdown.text.strip()
    html = alice.get(
        f"/v1/sessions/{sid}/report", params={"format": "html"}, headers={"Accept": "application/pdf"}
    )
    assert html.headers["content-type"].startswith("text/html") and "<" in html.text
    pdf = alice.get(f"/v1/sessions/{sid}/report", headers={"Accept": "text/plain;q=0.5, application/pdf"})
    assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    assert_problem(alice.get(f"/v1/sessions/{sid}/report", headers={"Accept": "image/png"}), 406)
    text = alice.get(f"/v1/sessions/{sid}/report", headers={"Accept": "text/*"})  # Markdown is text
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/markdown")
    assert_problem(alice.get(f"/v1/sessions/{sid}/report", params={"format": "docx"}), 422)
    # A saved report has a name (a downloaded PDF had none); HTML and JSON open where they are read.
    name = f"interview-report-{sid[:8]}"
    assert [r.headers["content-disposition"] for r in (as_json, markdown, html, pdf)] == [
        f'inline; filename="{name}.json"', f'attachment; filename="{name}.md"', f'inline; filename="{name}.html"',
        f'attachment; filename="{name}.pdf"']


def test_a_report_format_may_be_md_and_in_any_case(alice, bank):
    """`?format=md` and `?format=PDF` were a 422: integrators guess them, and the server knew what they meant."""
    sid = finish(alice, bank, good=True, seed=4)
    for fmt, media, saved in [("md", "text/markdown", ".md"), ("PDF", "application/pdf", ".pdf"),
                              ("Markdown", "text/markdown", ".md"), ("JSON", "application/json", ".json")]:
        reply = alice.get(f"/v1/sessions/{sid}/report", params={"format": fmt})
        assert reply.status_code == 200, (fmt, reply.text)
        assert reply.headers["content-type"].startswith(media) and reply.headers["content-disposition"].endswith(
            f'{saved}"')
    detail = assert_problem(alice.get(f"/v1/sessions/{sid}/report", params={"format": "docx"}), 422)["detail"]
    assert "'md'" in detail and "'pdf'" in detail


def test_accept_weights_are_read_as_rfc_9110_writes_them(alice, bank):
    """A weight that is not one (q=abc, q=2) dropped its entry or ranked it above q=1, a `Q=` was not read as a
    weight, an empty list entry was taken as "anything", and a wildcard outranked a range that refused a format."""
    sid = finish(alice, bank, good=True, seed=4)

    def chosen(accept: str) -> str:
        reply = alice.get(f"/v1/sessions/{sid}/report", headers={"Accept": accept})
        assert reply.status_code == 200, reply.text
        return reply.headers["content-type"].split(";")[0]

    for weight in ("abc", "2", "0.5555", ".5555", "-1", "nan"):
        detail = assert_problem(alice.get(f"/v1/sessions/{sid}/report",
                                          headers={"Accept": f"application/pdf;q={weight}, */*"}), 400)["detail"]
        assert f"'application/pdf;q={weight}'" in detail and "q=0 to q=1" in detail, detail
    assert chosen("application/pdf;q=1.000, text/html;q=0.999") == "application/pdf"
    assert chosen("text/html;Q=0.1, application/pdf;q=0.8") == "application/pdf"
    assert chosen("*/*;q=0.1, application/json;q=0") == "text/markdown"  # JSON refused; the rest taken
    assert_problem(alice.get(f"/v1/sessions/{sid}/report", headers={"Accept": "image/png,"}), 406)
    assert chosen(" , ") == "application/json"  # no entry at all: as no header
    # The JDK's default header, a bare "*" and weights without their leading 0: it was a 400 for every Java client.
    assert chosen("text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2") == "text/html"
    assert chosen("*; q=.2, application/pdf;q=.1") == "application/json"
    # ?format= is the client's own choice: a malformed Accept beside it is not read.
    assert alice.get(f"/v1/sessions/{sid}/report", params={"format": "md"}, headers={"Accept": "*/*;q=x"}).is_success


def test_the_documented_report_formats_are_those_taken(tmp_path):
    report = create_app(Settings(data_dir=tmp_path)).openapi()["paths"]["/v1/sessions/{session_id}/report"]["get"]
    (param,) = [p for p in report["parameters"] if p["name"] == "format"]
    (choices, _none) = param["schema"]["anyOf"]
    assert choices["enum"] == ["json", "markdown", "md", "html", "pdf"] and "case is ignored" in param["description"]


def test_a_report_answers_head_with_the_headers_of_its_download_without_making_it(api, alice, bank):
    """A link checker's HEAD on a report's URL was a 405, then made the whole report (a PDF: 0.15-1 s) to send none
    of it. It gets GET's status and headers, without the body and so without Content-Length (RFC 9110 9.3.2)."""
    sid = finish(alice, bank, good=True, seed=4)
    turns_read = []
    repo = api.app.dependency_overrides[deps.get_repo]()

    class Watched:  # the report is built from the session's turns: a HEAD must not read them
        def turns(self, session_id):
            turns_read.append(session_id)
            return repo.turns(session_id)

        def __getattr__(self, name):
            return getattr(repo, name)

    api.app.dependency_overrides[deps.get_repo] = Watched
    for fmt in ("markdown", "pdf"):
        head = alice.head(f"/v1/sessions/{sid}/report", params={"format": fmt})
        assert (head.status_code, head.content, turns_read) == (200, b"", [])
        got = alice.get(f"/v1/sessions/{sid}/report", params={"format": fmt})
        assert turns_read.pop() == sid  # the watch sees what GET reads
        for name in ("content-type", "content-disposition", "vary"):
            assert head.headers[name] == got.headers[name], name
        assert "content-length" not in head.headers and int(got.headers["content-length"]) > 0
    assert alice.head(f"/v1/sessions/{sid}/report", headers={"Accept": "image/png"}).status_code == 406
    assert alice.head("/v1/sessions/nope/report").status_code == 404


def test_progress_scores_a_question_as_its_report_does_and_hides_an_interview_in_progress(alice, bank):
    reference = {q.id: q.reference_answer for q in bank}
    created = alice.post("/v1/sessions", json={"num_questions": 1, "topics": ["training-loop"], "seed": 1}).json()
    sid = created["id"]
    first = alice.post(f"/v1/sessions/{sid}/answers", json={"text": "It resets a thing before the next pass.",
                                                        "turn": 0}).json()
    assert first["prompt"]["kind"] == "follow_up"  # a weak first answer, then the whole reference to the follow-ups
    prompt = first["prompt"]
    while prompt is not None:
        # The reference's code runs as a fix on a code task's follow-up; the fake runner passes it as the sandbox would.
        body = {"text": reference[prompt["question_id"]].replace("```python\n", f"```python\n{PASSING_MARK}\n"),
                "turn": prompt["turn"]}
        prompt = alice.post(f"/v1/sessions/{sid}/answers", json=body).json()["prompt"]
    overall = alice.get(f"/v1/sessions/{sid}/report").json()["overall_score"]
    (topic,) = alice.get("/v1/me/progress").json()["topics"]
    assert topic["mean_score"] == pytest.approx(overall, abs=0.01)
    assert topic["mean_score"] > first["evaluation"]["score"] + 1
    interview = alice.post("/v1/sessions", json={"mode": "interview", "topics": ["tensors"], "num_questions": 2}).json()
    alice.post(f"/v1/sessions/{interview['id']}/answers", json={"text": "Tensors are arrays on a device.", "turn": 0})
    progress = alice.get("/v1/me/progress").json()  # no score of an interview before its report
    assert [t["topic"] for t in progress["topics"]] == ["training-loop"] and progress["answers"] == 1


def test_the_json_report_has_a_real_schema_that_its_body_meets(api, alice, bank):
    """The JSON report was documented only as {"type": "object"}: an integrator could generate no client type."""
    sid = finish(alice, bank, good=True, seed=5)
    body = alice.get(f"/v1/sessions/{sid}/report").json()
    document = api.app.openapi()
    schema = document["paths"]["/v1/sessions/{session_id}/report"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    report = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    assert set(report["properties"]) == set(body) and {"overall_score", "questions", "study_plan"} <= set(
        report["required"])
    validator = jsonschema.Draft202012Validator({**schema, "components": document["components"]})
    assert not list(validator.iter_errors(body))  # what is sent is what is documented


def test_one_rule_withholds_a_report_in_the_api_and_the_terminal_with_the_same_words(api, alice, monkeypatch):
    """The interview-mode report gate was written twice, in the report route and in the terminal's stored_report,
    each with its own message; the transcript and progress routes had copies of its test too. One rule now
    (app/reports/ready.py): changed there, it changes everywhere."""
    from app import cli_sessions
    from app.errors import ConflictError
    from app.reports import ready

    alice_id = api.repo.user_named("alice").id
    interview = alice.post("/v1/sessions", json={"mode": "interview", "topics": ["tensors"], "num_questions": 2}).json()
    sid = interview["id"]
    assert assert_problem(alice.get(f"/v1/sessions/{sid}/report"), 409)["detail"] == ready.REPORT_WAITS
    with pytest.raises(ConflictError) as said:
        cli_sessions.stored_report(api.repo, sid, alice_id, settings=None)
    assert str(said.value) == f"{ready.REPORT_WAITS}: continue it with `interviewer interview --resume {sid}`"

    practice = alice.post("/v1/sessions", json={"topics": ["tensors"], "num_questions": 2}).json()["id"]
    alice.post(f"/v1/sessions/{practice}/answers", json={"text": "Tensors are arrays on a device.", "turn": 0})
    assert alice.get(f"/v1/sessions/{practice}/report").status_code == 200  # a practice session's, at any time
    monkeypatch.setattr(ready, "scores_withheld", lambda session: True)  # the rule, changed in its one place
    assert assert_problem(alice.get(f"/v1/sessions/{practice}/report"), 409)["detail"] == ready.REPORT_WAITS
    with pytest.raises(ConflictError):
        cli_sessions.stored_report(api.repo, practice, alice_id, settings=None)
    assert alice.get(f"/v1/sessions/{practice}").json()["transcript"][0]["evaluation"] is None
    assert alice.get("/v1/me/progress").json()["answers"] == 0
