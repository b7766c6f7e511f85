"""Run checks during a session: counted on the question and shown in the report; a task on screen in an interview
is not run on the side, where its runs would go uncounted."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

from app.api import deps
from tests.api_fixtures import PASSING_MARK, alice, api, assert_problem, scorer  # noqa: F401


def _code_task_session(client, bank, mode):
    pairs = {(q.topic.value, q.difficulty) for q in bank if q.code}
    topic, difficulty = next(p for p in sorted(pairs)
                             if all(q.code for q in bank if (q.topic.value, q.difficulty) == p))
    reply = client.post("/v1/sessions", json={"topics": [topic], "difficulty": difficulty, "num_questions": 1,
                                              "mode": mode})
    assert reply.status_code == 201, reply.text
    return reply.json()


def test_runs_in_an_interview_are_counted_and_reported(api, alice, bank):
    created = _code_task_session(alice, bank, "interview")
    sid, qid = created["id"], created["prompt"]["question_id"]
    side = alice.post("/v1/code/check", json={"question_id": qid, "code": "x = 1"})
    assert "is being asked in your interview" in assert_problem(side, 409)["detail"]
    for expected in (1, 2):
        run = alice.post("/v1/code/check", json={"question_id": qid, "code": "x = 1", "session_id": sid}).json()
        assert run["status"] == "failed" and run["runs"] == expected
    other = next(q.id for q in bank if q.code and q.id != qid)
    wrong = alice.post("/v1/code/check", json={"question_id": other, "code": "x = 1", "session_id": sid})
    assert "is not the one on screen" in assert_problem(wrong, 409)["detail"]
    assert api.runner.calls == [qid, qid]
    alice.post(f"/v1/sessions/{sid}/answers", json={"code": f"x = 1  {PASSING_MARK}", "turn": 0})
    alice.post(f"/v1/sessions/{sid}/finish")
    report = alice.get(f"/v1/sessions/{sid}/report", headers={"Accept": "text/markdown"}).text
    assert "Hidden checks run 2 times with Run checks." in report


def test_a_practice_task_may_still_be_run_on_the_side(api, alice, bank):
    created = _code_task_session(alice, bank, "practice")
    reply = alice.post("/v1/code/check", json={"question_id": created["prompt"]["question_id"], "code": "x = 1"})
    assert reply.status_code == 200 and reply.json()["runs"] is None


def test_run_checks_in_a_session_runs_the_task_as_the_session_asked_it(api, alice, bank):
    """The answer is judged by the task's copy stored when asked; Run checks read the pack as it is now, so after a
    pack edit mid-session it ran (and scored by) checks the answer would not be judged by."""
    created = _code_task_session(alice, bank, "interview")
    sid, qid = created["id"], created["prompt"]["question_id"]
    bank_now = api.app.dependency_overrides[deps.get_bank]()  # the dict the routes read, edited in place
    asked = bank_now[qid]
    assert asked.code is not None
    extra = asked.code.checks[0].model_copy(update={"name": "added-by-an-edit"})
    edited = asked.model_copy(update={"code": asked.code.model_copy(update={"checks": [*asked.code.checks, extra]})})
    bank_now[qid] = edited
    run = alice.post("/v1/code/check", json={"question_id": qid, "code": "x = 1", "session_id": sid}).json()
    assert [c["name"] for c in run["checks"]] == [c.name for c in asked.code.checks]

