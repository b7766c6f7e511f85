"""Answer drafts over the API: kept for the open prompt, returned with the session, gone once it is answered."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

from tests.api_fixtures import alice, api, assert_problem, build_api, scorer  # noqa: F401
from tests.test_api_sessions import start

CODE = "def f(x):\n    return x  # not finished"


def test_a_draft_comes_back_with_the_session_until_its_answer_is_sent(alice):
    created = start(alice)
    sid, turn = created["id"], created["prompt"]["turn"]
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"] is None
    saved = alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": "Gradients accumulate", "code": CODE})
    assert saved.status_code == 200, saved.text
    draft = alice.get(f"/v1/sessions/{sid}").json()["draft"]
    assert (draft["turn"], draft["text"], draft["code"]) == (turn, "Gradients accumulate", CODE)
    alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": "Gradients accumulate in .grad"})
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"]["text"] == "Gradients accumulate in .grad"
    alice.post(f"/v1/sessions/{sid}/hint?turn={turn}")  # the same prompt: the draft stays
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"]["text"] == "Gradients accumulate in .grad"

    outcome = alice.post(f"/v1/sessions/{sid}/answers", json={"text": "Gradients accumulate in .grad", "turn": turn})
    assert outcome.status_code == 200, outcome.text
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"] is None
    # The prompt answered is closed: a late save from the page (its last keystrokes) is refused, not kept.
    late = assert_problem(alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": "late"}), 409)
    assert "moved on" in late["detail"] or "no prompt" in late["detail"]
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"] is None


def test_a_draft_for_a_turn_not_yet_asked_says_so(alice):
    """A re-check's draft for turn 5 of a session on turn 0 was told "this session moved on from turn 5 to turn 0"."""
    created = start(alice)
    sid, turn = created["id"], created["prompt"]["turn"]
    ahead = assert_problem(alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn + 5, "text": "x"}), 409)
    assert f"has not asked turn {turn + 5}: its open prompt is turn {turn}" in ahead["detail"]
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"] is None


def test_a_draft_is_its_writers_own(api, alice):
    created = start(alice)
    sid, turn = created["id"], created["prompt"]["turn"]
    alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": "mine"})
    bob = api.as_user("bob")
    assert_problem(api.client.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": "his"}, headers=bob), 404)
    assert_problem(api.client.get(f"/v1/sessions/{sid}", headers=bob), 404)
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"]["text"] == "mine"
    assert_problem(alice.put("/v1/sessions/nope/draft", json={"turn": 0, "text": "x"}), 404)


def test_bad_drafts_are_4xx_and_change_nothing(api, alice):
    created = start(alice)
    sid, turn = created["id"], created["prompt"]["turn"]
    alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": "kept"})
    too_long = "x" * (api.app.state.settings.max_answer_chars + 1)
    assert "limit" in assert_problem(alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": too_long}),
                                     413)["detail"]
    assert_problem(alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn + 1, "text": "ahead"}), 409)
    assert_problem(alice.put(f"/v1/sessions/{sid}/draft", json={"text": "no turn"}), 422)
    assert_problem(alice.put(f"/v1/sessions/{sid}/draft", json={"turn": True, "text": "a bool"}), 422)
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"]["text"] == "kept"
    alice.post(f"/v1/sessions/{sid}/finish?turn={turn}")
    assert_problem(alice.put(f"/v1/sessions/{sid}/draft", json={"turn": turn, "text": "after the end"}), 409)
    assert alice.get(f"/v1/sessions/{sid}").json()["draft"] is None
