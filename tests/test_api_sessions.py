"""Session routes with the real engine, bank, store and scorer behind dependency overrides."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

from app.store.models import CodeResult, Evaluation, InterviewSession, new_session_id
from tests.api_fixtures import PASSING_MARK, alice, api, assert_problem, build_api, scorer  # noqa: F401

CONFIG = {"topics": ["autograd", "tensors"], "num_questions": 2, "seed": 3}


def start(client, **config):
    response = client.post("/v1/sessions", json={**CONFIG, **config})
    assert response.status_code == 201, response.text
    return response.json()


def test_practice_session_scores_each_answer_and_completes(alice, bank):
    reference = {q.id: q.reference_answer for q in bank}
    created = start(alice)
    assert set(created) >= {"id", "status", "config", "prompt"} and created["status"] == "active"
    prompt = created["prompt"]
    assert {"kind", "question_id", "text", "topic", "difficulty"} <= set(prompt) and prompt[
        "kind"
    ] == "question"
    outcomes = []
    while prompt is not None:
        body = {"text": reference[prompt["question_id"]], "turn": prompt["turn"]}
        outcome = alice.post(f"/v1/sessions/{created['id']}/answers", json=body).json()
        outcomes.append(outcome)
        prompt = outcome.get("prompt")
    assert outcomes[-1]["status"] == "completed" and outcomes[-1]["prompt"] is None
    for outcome in outcomes:
        assert 0 <= outcome["evaluation"]["score"] <= 5 and outcome["evaluation"]["points"]
        assert {"point_id", "verdict"} <= set(outcome["evaluation"]["points"][0])
    assert max(o["evaluation"]["score"] for o in outcomes) >= 3.5
    detail = alice.get(f"/v1/sessions/{created['id']}").json()
    assert detail["status"] == "completed" and detail["prompt"] is None
    assert len(detail["transcript"]) == len(outcomes) and detail["transcript"][0]["evaluation"]["score"] >= 0
    listed = alice.get("/v1/sessions").json()
    assert [s["id"] for s in listed] == [created["id"]] and listed[0]["status"] == "completed"
    assert listed[0]["answered"] == 2
    fresh = start(alice)
    assert next(s for s in alice.get("/v1/sessions").json() if s["id"] == fresh["id"])["answered"] == 0


def test_practice_withholds_the_model_answer_until_the_follow_ups_on_its_question_are_done(alice, bank):
    """custom-loss's model answer explained why log(1 - sigmoid(200)) is -inf, shown beside the follow-up asking
    just that (review s49): while a follow-up on the question waits, neither the answer's reply nor the session's
    transcript carries the model answer; the reply that closes the question does."""
    reference = {q.id: q.reference_answer for q in bank}
    created = start(alice, topics=["autograd"], num_questions=1, seed=5)
    prompt = created["prompt"]
    first_sentence = reference[prompt["question_id"]].split(". ")[0] + "."
    outcome = alice.post(f"/v1/sessions/{created['id']}/answers", json={"text": first_sentence, "turn": 0}).json()
    assert outcome["prompt"]["kind"] == "follow_up" and outcome["evaluation"]["points"]
    assert outcome["evaluation"]["model_answer"] is None
    shown = alice.get(f"/v1/sessions/{created['id']}").json()["transcript"][0]["evaluation"]
    assert shown["points"] and shown["model_answer"] is None
    while outcome["prompt"] is not None:
        body = {"text": first_sentence, "turn": outcome["prompt"]["turn"]}
        outcome = alice.post(f"/v1/sessions/{created['id']}/answers", json=body).json()
    assert outcome["evaluation"]["model_answer"] == reference[prompt["question_id"]]
    transcript = alice.get(f"/v1/sessions/{created['id']}").json()["transcript"]
    assert all(t["evaluation"]["model_answer"] for t in transcript)


def test_interview_mode_keeps_feedback_for_the_end(alice):
    created = start(alice, mode="interview", num_questions=1)
    outcome = alice.post(
        f"/v1/sessions/{created['id']}/answers", json={"text": "It tracks gradients.", "turn": 0}
    ).json()
    if outcome["status"] == "active":  # a follow-up: still no feedback, and no report yet
        assert outcome["evaluation"] is None
        assert alice.get(f"/v1/sessions/{created['id']}").json()["transcript"][0]["evaluation"] is None
        assert_problem(alice.get(f"/v1/sessions/{created['id']}/report"), 409)
        outcome = alice.post(f"/v1/sessions/{created['id']}/skip", params={"turn": outcome["prompt"]["turn"]}).json()
    assert outcome["status"] == "completed" and outcome["evaluation"] is None
    transcript = alice.get(f"/v1/sessions/{created['id']}").json()["transcript"]
    assert transcript[0]["evaluation"] is not None  # revealed once completed


def test_another_users_session_is_not_found(api, alice):
    created = start(alice)
    bob = api.as_user("bob")
    said = f"no session {created['id']!r} (it does not exist or belongs to someone else)"  # one wording everywhere
    for method, path in [
        ("get", ""),
        ("post", "/hint"),
        ("post", "/skip"),
        ("post", "/repeat"),
        ("post", "/dont-know"),
        ("get", "/report"),
    ]:
        turn = {"turn": 0} if path in ("/hint", "/skip", "/dont-know") else {}  # only where the route takes it
        response = api.client.request(method, f"/v1/sessions/{created['id']}{path}", params=turn, headers=bob)
        assert assert_problem(response, 404)["detail"] == said, path
    response = api.client.post(f"/v1/sessions/{created['id']}/answers", json={"text": "x", "turn": 0}, headers=bob)
    assert assert_problem(response, 404)["detail"] == said
    response = api.client.put(f"/v1/sessions/{created['id']}/draft", json={"turn": 0, "text": "x"}, headers=bob)
    assert assert_problem(response, 404)["detail"] == said
    response = api.client.post("/v1/code/check", headers=bob,
                               json={"question_id": "stable-log-softmax", "code": "x = 1", "session_id": created["id"]})
    assert assert_problem(response, 404)["detail"] == said
    assert api.client.get("/v1/sessions", headers=bob).json() == []


def test_hint_repeat_skip_and_dont_know(alice):
    created = start(alice, num_questions=3)
    sid, first = created["id"], created["prompt"]
    hint = alice.post(f"/v1/sessions/{sid}/hint", params={"turn": 0}).json()
    assert (
        hint["status"] == "active"
        and hint["message"]
        and hint["prompt"]["question_id"] == first["question_id"]
    )
    (hint_text,) = hint["prompt"]["hints"]
    assert hint["message"].startswith(hint_text)
    assert alice.post(f"/v1/sessions/{sid}/repeat").json()["prompt"] == {**first, "hints": [hint_text]}
    assert alice.get(f"/v1/sessions/{sid}").json()["prompt"]["hints"] == [hint_text]  # a reloaded page shows it
    skipped = alice.post(f"/v1/sessions/{sid}/skip", params={"turn": 0}).json()
    assert skipped["evaluation"]["score"] == 0 and skipped["prompt"]["question_id"] != first["question_id"]
    unknown = alice.post(f"/v1/sessions/{sid}/dont-know", params={"turn": skipped["prompt"]["turn"]}).json()
    assert unknown["evaluation"]["score"] == 0 and unknown["evaluation"]["model_answer"]
    shown = alice.get(f"/v1/sessions/{sid}").json()["transcript"][0]
    assert shown["hints_used"] == 1 and shown["hints"] == [hint_text]


def test_a_retried_action_on_an_answered_prompt_is_409_and_records_nothing(alice):
    created = start(alice, num_questions=3)
    sid, first = created["id"], created["prompt"]
    assert first["turn"] == 0 and first["asked_at"]
    moved = alice.post(f"/v1/sessions/{sid}/skip", params={"turn": 0}).json()
    assert moved["prompt"]["turn"] == 1
    for path, body in (("skip", None), ("hint", None), ("answers", {"text": "a retried answer", "turn": 0})):
        refused = assert_problem(alice.post(f"/v1/sessions/{sid}/{path}", params=None if body else {"turn": 0},
                                            json=body), 409)
        assert "turn 0 is not the current prompt (turn 1 is)" in refused["detail"]
    transcript = alice.get(f"/v1/sessions/{sid}").json()["transcript"]
    assert len(transcript) == 2 and transcript[1]["action"] is None and transcript[1]["hints_used"] == 0
    ahead = assert_problem(alice.post(f"/v1/sessions/{sid}/skip", params={"turn": 5}), 409)["detail"]
    assert "turn 5 is not the current prompt (turn 1 is): it has not been asked" in ahead
    assert_problem(alice.post(f"/v1/sessions/{sid}/skip", params={"turn": -1}), 422)
    assert_problem(alice.post(f"/v1/sessions/{sid}/answers", json={"text": "x", "turn": -1}), 422)


def test_an_action_that_would_act_twice_on_a_retry_needs_the_prompts_turn(alice):
    # Without `turn`, three parallel answers (or a client's retry after a timeout) were all taken: the second and
    # third became answers to follow-ups the candidate never saw, and the session jumped a question.
    created = start(alice, num_questions=3)
    sid = created["id"]
    for path, body in (("answers", {"text": "Gradients accumulate, so clear them each step."}), ("skip", None),
                       ("hint", None), ("dont-know", None)):
        refused = assert_problem(alice.post(f"/v1/sessions/{sid}/{path}", json=body), 422)
        assert "turn" in refused["detail"], path
    detail = alice.get(f"/v1/sessions/{sid}").json()
    assert detail["prompt"] == created["prompt"] and detail["transcript"][0]["action"] is None  # nothing recorded
    assert alice.post(f"/v1/sessions/{sid}/repeat").json()["prompt"]["turn"] == 0  # reading again needs none


def test_finished_session_refuses_more_answers(alice):
    created = start(alice, num_questions=1)
    outcome = alice.post(f"/v1/sessions/{created['id']}/skip", params={"turn": 0}).json()
    assert outcome["status"] == "completed"
    body = assert_problem(alice.post(f"/v1/sessions/{created['id']}/answers", json={"text": "late", "turn": 0}), 409)
    assert "completed" in body["detail"]


def test_answer_limits_and_validation(tmp_path, ingested_store, bank, scorer):
    api = build_api(
        tmp_path, store=ingested_store, bank=bank, scorer=scorer, max_answer_chars=50, max_code_chars=80
    )
    client = api.client
    client.headers.update(api.as_user("alice"))
    sid = start(client)["id"]
    assert (
        "50"
        in assert_problem(client.post(f"/v1/sessions/{sid}/answers", json={"text": "a" * 51, "turn": 0}), 413)["detail"]
    )
    assert_problem(client.post(f"/v1/sessions/{sid}/answers", json={"code": "b" * 81, "turn": 0}), 413)
    assert_problem(client.post(f"/v1/sessions/{sid}/answers", json={"text": "  ", "turn": 0}), 400)
    assert_problem(client.post(f"/v1/sessions/{sid}/answers", json={"txt": "typo", "turn": 0}), 422)
    assert_problem(
        client.post(
            f"/v1/sessions/{sid}/answers", content=b"{not json", headers={"content-type": "application/json"}
        ),
        422,
    )
    huge = b'{"text": "' + b"x" * (2 << 20) + b'"}'
    assert_problem(
        client.post(
            f"/v1/sessions/{sid}/answers", content=huge, headers={"content-type": "application/json"}
        ),
        413,
    )


@pytest.mark.parametrize(
    "config",
    [
        {"difficulty": 7},
        {"topics": ["astrology"]},
        {"mode": "exam"},
        {"num_questions": 0},
        {"colour": "blue"},
        {"time_limit_s": 5},
    ],
)
def test_bad_config_is_422_naming_the_field(alice, config):
    body = assert_problem(alice.post("/v1/sessions", json=config), 422)
    assert next(iter(config)) in body["detail"] and body["errors"]


@pytest.mark.parametrize("config", [
    {"difficulty": 1.0}, {"difficulty": 3.0}, {"difficulty": 1.5}, {"difficulty": "2"}, {"difficulty": True},
    {"difficulty": None}, {"num_questions": 2.0}, {"num_questions": "2"}, {"num_questions": True},
    {"time_limit_s": 60.0}, {"time_limit_s": "60"}, {"seed": 7.0}, {"seed": "7"}, {"seed": False},
])
def test_a_whole_number_of_the_config_must_be_a_json_integer(alice, config):
    """`difficulty: 1.0` started a session at level 1 (pydantic's Literal compares 1.0 == 1), where the schema
    means an integer level: a client's float arithmetic, or a level typed in a form as "2", is told so by name."""
    (field, value), = config.items()
    body = assert_problem(alice.post("/v1/sessions", json={**CONFIG, **config}), 422)
    assert body["detail"].startswith(f"invalid {field}: ") and body["errors"][0]["loc"] == ["body", field]
    if field == "difficulty":
        assert body["detail"].endswith(f"; {json.dumps(value)} is " + {float: "a decimal number", str: "a string",
                                        bool: "a boolean", type(None): "no level"}[type(value)])


def test_the_documented_levels_still_start_sessions_and_are_documented_as_integers(api, alice):
    for level in (1, 2, 3, "adaptive"):
        assert start(alice, difficulty=level)["config"]["difficulty"] == level
    schema = api.app.openapi()["components"]["schemas"]["SessionConfigIn"]["properties"]
    assert schema["difficulty"]["anyOf"] == [{"type": "integer", "enum": [1, 2, 3]},
                                             {"type": "string", "enum": ["adaptive"]}]  # was an enum of no type
    assert [schema[f]["anyOf"][0]["type"] if "anyOf" in schema[f] else schema[f]["type"]
            for f in ("num_questions", "time_limit_s", "seed")] == ["integer"] * 3
    assert schema["seed"]["anyOf"][0]["maximum"] == float(2**63 - 1)  # the engine's bound, documented here too


@pytest.mark.parametrize("value", ["1.0", "1_0", "+1", " 1", "1e1", "true"])
def test_a_whole_number_in_the_query_is_digits(api, alice, value):
    """`?limit=1_0` answered a page of 10 and `?turn=0.0` took the hint for turn 0: pydantic reads a query string
    as Python reads a literal. Digits only, in every integer query parameter; the schema says `integer`."""
    sid = start(alice)["id"]
    for method, path, name in (("GET", "/v1/sessions", "limit"), ("POST", f"/v1/sessions/{sid}/hint", "turn"),
                               ("POST", f"/v1/sessions/{sid}/repeat", "turn")):
        body = assert_problem(alice.request(method, path, params={name: value}), 422)
        assert body["detail"].startswith(f"invalid query.{name}: should be a whole number written in digits")
    assert alice.get("/v1/sessions", params={"limit": "1"}).status_code == 200
    assert alice.post(f"/v1/sessions/{sid}/repeat", params={"turn": "0"}).status_code == 200
    hint = api.app.openapi()["paths"]["/v1/sessions/{session_id}/hint"]["post"]["parameters"]
    assert [p["schema"]["type"] for p in hint if p["name"] == "turn"] == ["integer"]


@pytest.mark.parametrize("seed", [2**63, -(2**63) - 1, "9" * 4000])
def test_a_seed_beyond_64_bits_is_422_saying_the_bound_and_not_echoing_it(alice, seed):
    """A 4000-digit seed was stored and echoed in every reply to the session (201)."""
    refused = alice.post("/v1/sessions", content=f'{{"seed": {seed}}}', headers={"content-type": "application/json"})
    body = assert_problem(refused, 422)
    assert "seed" in body["detail"] and "922337203685477580" in body["detail"] and "9" * 30 not in refused.text
    assert alice.post("/v1/sessions", json={"seed": 2**63 - 1}).json()["config"]["seed"] == 2**63 - 1


def test_a_topic_named_twice_is_kept_once_in_the_order_given(alice):
    """An integrator building the list from checkboxes or a merge may repeat a name; the filter is the same."""
    created = alice.post("/v1/sessions", json={"topics": ["tensors", "autograd", "tensors"],
                                               "frameworks": ["pytorch", "pytorch"]}).json()
    assert created["config"]["topics"] == ["tensors", "autograd"]
    assert created["config"]["frameworks"] == ["pytorch"]


def test_empty_config_and_no_body_use_defaults(alice):
    assert alice.post("/v1/sessions").json()["config"]["num_questions"] == 5
    assert alice.post("/v1/sessions", json={}).json()["config"]["mode"] == "practice"


def test_code_answer_runs_the_checks(api, alice, bank):
    pairs = {(q.topic.value, q.difficulty) for q in bank if q.code}
    topic, difficulty = next(
        p for p in sorted(pairs) if all(q.code for q in bank if (q.topic.value, q.difficulty) == p)
    )
    created = start(alice, topics=[topic], difficulty=difficulty, num_questions=1)
    assert created["prompt"]["code_contract"] and created["prompt"]["starter_code"]
    outcome = alice.post(
        f"/v1/sessions/{created['id']}/answers", json={"code": f"x = 1  {PASSING_MARK}", "turn": 0}
    ).json()
    assert outcome["code_result"]["status"] == "passed" and outcome["code_result"]["score"] == 1.0
    assert api.runner.calls == [created["prompt"]["question_id"]]
    # Every check passed: the checked points' whole weight, beside what the question asks for in words (none said).
    question = next(q for q in bank if q.id == created["prompt"]["question_id"])
    checked = {point for check in question.code.checks for point in check.points}
    shown = sum(p.weight for p in question.rubric if p.id in checked)
    asked = sum(p.weight for p in question.rubric if p.asked_in_words)
    assert outcome["evaluation"]["code_score"] == pytest.approx(5 * shown / (shown + asked), abs=0.06)


def test_keys_are_required_and_checked(api):
    assert_problem(api.client.get("/v1/sessions"), 401)
    response = api.client.get("/v1/sessions", headers={"Authorization": "Bearer iv_not-a-key"})
    assert assert_problem(response, 401) and response.headers["www-authenticate"] == "Bearer"
    assert api.repo.revoke_api_key(api.repo.get_or_create_user("alice").id, "test")
    assert_problem(api.client.get("/v1/sessions", headers=api.as_user("alice")), 401)
    assert api.client.get("/v1/sessions", headers=api.as_user("bob")).status_code == 200
    token = {"Authorization": api.as_user("bob")["Authorization"].replace("Bearer", "Token")}
    assert "uses the 'Token' scheme" in assert_problem(api.client.get("/v1/sessions", headers=token), 401)["detail"]


def test_a_key_sent_the_wrong_way_is_told_how_to_send_it_and_never_echoed(api):
    """The key alone in Authorization came back whole in the 401, as "uses the 'iv_...' scheme"; X-API-Key and
    the README's `Bearer <key>` copied with its brackets were told only "missing" or "invalid or revoked"."""
    key = api.keys["bob"]
    said = {name: assert_problem(api.client.get("/v1/sessions", headers=headers), 401)["detail"] for name, headers in [
        ("alone", {"Authorization": key}), ("x-api-key", {"X-API-Key": key}),
        ("brackets", {"Authorization": f"Bearer <{key}>"}), ("quoted", {"Authorization": f'Bearer "{key}"'})]}
    assert not [name for name, detail in said.items() if key in detail]
    assert said["alone"].startswith("the Authorization header holds one word and no scheme (the key alone?)")
    assert said["x-api-key"].startswith("this server does not read X-API-Key; send `Authorization: Bearer <key>`")
    assert said["brackets"] == said["quoted"] == ("invalid API key: send the key itself, without quotes or angle "
                                                  "brackets")


def test_auth_disabled_acts_as_the_local_user(tmp_path, ingested_store, bank, scorer):
    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer, auth_disabled=True)
    sid = start(api.client)["id"]
    local = api.repo.get_or_create_user("local")
    assert api.repo.get_session(sid, local.id) is not None
    assert [s["id"] for s in api.client.get("/v1/sessions").json()] == [sid]


def test_the_terminal_and_an_auth_off_server_are_one_candidate(tmp_path, ingested_store, bank, scorer):
    """The app on an auth-off server and the terminal act as the same user (`local`, README): a session started in
    one is listed, resumed and reported in the other. A guard of that contract (two constants say `local`)."""
    from app import cli_sessions
    from app.api import deps
    from app.interview.models import SessionConfig

    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer, auth_disabled=True)
    from_app = start(api.client, mode="interview", num_questions=1)["id"]
    terminal = cli_sessions._terminal_user(api.repo)
    assert terminal is not None and cli_sessions.session_to_resume(api.repo, terminal, None).id == from_app
    assert [s.id for s in api.repo.list_sessions(terminal)] == [from_app]
    engine = api.app.dependency_overrides[deps.get_engine]()
    from_terminal = engine.start(user_id=terminal, config=SessionConfig(num_questions=1))[0].id  # as `interview` does
    assert {s["id"] for s in api.client.get("/v1/sessions").json()} == {from_app, from_terminal}


def test_an_interview_can_be_finished_early_without_drawing_or_scoring_more(alice, bank):
    """An interview-mode session ended after one answer: its report is ready, the question on screen is not
    scored (no zero dragging the mean down) and no further question is drawn to be skipped through."""
    reference = {q.id: q.reference_answer for q in bank}
    created = start(alice, mode="interview", num_questions=3)
    sid, prompt = created["id"], created["prompt"]
    while prompt["number"] == 1:  # the first question and any follow-up on it
        outcome = alice.post(f"/v1/sessions/{sid}/answers",
                             json={"text": reference[prompt["question_id"]], "turn": prompt["turn"]}).json()
        prompt = outcome["prompt"]
    assert_problem(alice.post(f"/v1/sessions/{sid}/finish", params={"turn": prompt["turn"] - 1}), 409)
    ended = alice.post(f"/v1/sessions/{sid}/finish", params={"turn": prompt["turn"]})
    assert ended.status_code == 200 and ended.json()["status"] == "completed" and ended.json()["prompt"] is None
    # Said in the reply too (no next prompt carries it): a client that ends the session and shows no report
    # never told the candidate the question on screen went unscored.
    assert ended.json()["notes"] == ["Ended early: question 2 of 3 was shown but not answered, so it is not scored."]
    report = alice.get(f"/v1/sessions/{sid}/report").json()
    assert [q["score"] is None for q in report["questions"]] == [False, True]  # none drawn after it
    assert report["overall_score"] == report["questions"][0]["score"] and report["questions_answered"] == 1
    assert any("Ended early" in note for note in report["notes"])
    assert_problem(alice.post(f"/v1/sessions/{sid}/finish"), 409)  # once only
    assert_problem(alice.post(f"/v1/sessions/{sid}/answers", json={"text": "more", "turn": prompt["turn"]}), 409)


def test_sessions_come_a_page_at_a_time_with_the_next_page_in_link(api, alice):
    """GET /v1/sessions returned every session a user ever had in one reply."""
    user = api.repo.get_or_create_user("alice")
    made = [api.repo.open_session(user.id, session_id=new_session_id(), config={"num_questions": 1},
                                  question_id="zero-grad", topic="training-loop", difficulty=1, kind="question",
                                  prompt="Why zero_grad?").session_id for _ in range(52)]
    # Sessions started in the same instant: a page boundary among them must neither repeat nor lose one.
    with api.repo._writing() as db:
        db.execute(update(InterviewSession).where(InterviewSession.id.in_(made[10:20]))
                   .values(created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    first = alice.get("/v1/sessions")
    assert first.status_code == 200 and len(first.json()) == 50 and "next" in first.links  # the default page
    seen, url, pages = [], "/v1/sessions?limit=3", 0
    while url:
        response = alice.get(url)
        assert response.status_code == 200 and len(response.json()) <= 3
        seen += [s["id"] for s in response.json()]
        url, pages = response.links.get("next", {}).get("url"), pages + 1
    assert sorted(seen) == sorted(made) and pages == 18
    assert seen == [s["id"] for s in alice.get("/v1/sessions", params={"limit": 200}).json()]  # newest first
    assert "link" not in alice.get("/v1/sessions", params={"limit": 52}).headers  # the last page says so


def test_the_session_to_continue_is_the_newest_active_one_past_any_page_of_completed_ones(api, alice):
    """A client finding the session to resume read pages of every session: `status=active` lists only those
    still going, and its next page keeps the filter."""
    user = api.repo.get_or_create_user("alice")

    def opened() -> str:
        return str(api.repo.open_session(user.id, session_id=new_session_id(), config={"num_questions": 1},
                                         question_id="zero-grad", topic="training-loop", difficulty=1,
                                         kind="question", prompt="Why zero_grad?").session_id)

    older, latest = opened(), opened()
    for _ in range(3):  # completed since: the newest sessions are not the ones to continue
        api.repo.save_state(opened(), state={}, status="completed")
    first = alice.get("/v1/sessions", params={"status": "active", "limit": 1})
    assert first.status_code == 200 and [s["id"] for s in first.json()] == [latest]
    following = alice.get(first.links["next"]["url"]).json()
    assert [s["id"] for s in following] == [older]
    assert len(alice.get("/v1/sessions", params={"status": "completed"}).json()) == 3
    assert_problem(alice.get("/v1/sessions", params={"status": "paused"}), 422)


@pytest.mark.parametrize(("params", "status"), [
    ({"limit": 0}, 422), ({"limit": 201}, 422), ({"limit": "all"}, 422),
    ({"cursor": "not-a-cursor"}, 400), ({"cursor": "MjAyNi0wMS0wMQ"}, 400),  # "2026-01-01": no session id
    # Stamps with no UTC time: "0001-01-01T00:00:00+23:59|x" and "9999-12-31T23:59:59-23:59|x" (were 500s)
    ({"cursor": "MDAwMS0wMS0wMVQwMDowMDowMCsyMzo1OXx4"}, 400),
    ({"cursor": "OTk5OS0xMi0zMVQyMzo1OTo1OS0yMzo1OXx4"}, 400),
])
def test_a_bad_page_request_is_a_4xx_saying_why(alice, params, status):
    body = assert_problem(alice.get("/v1/sessions", params=params), status)
    assert ("limit" in body["detail"]) if "limit" in params else ("cursor" in body["detail"])


def test_a_cursor_the_server_did_not_give_is_a_400_not_a_page(api, alice):
    """A well-formed cursor made up by a client was taken at its word: naming a session of no one, or another user's,
    or a time of its choosing, it answered 200 with a page the server never gave (here the first one again)."""
    alice_id, bob_id = (api.repo.get_or_create_user(name).id for name in ("alice", "bob"))
    made = {user: [api.repo.open_session(user, session_id=new_session_id(), config={"num_questions": 1},
                                         question_id="zero-grad", topic="training-loop", difficulty=1,
                                         kind="question", prompt="Why zero_grad?").session_id for _ in range(3)]
            for user in (alice_id, bob_id)}
    with api.repo._writing() as db:  # apart in time, so a page after any of them is not the first page
        for ids in made.values():
            for day, session_id in enumerate(ids, start=1):
                db.execute(update(InterviewSession).where(InterviewSession.id == session_id)
                           .values(created_at=datetime(2026, 1, day, tzinfo=UTC)))
    given = alice.get("/v1/sessions", params={"limit": 1}).links["next"]["url"]
    assert [s["id"] for s in alice.get(given).json()] == [made[alice_id][1]]  # the server's own cursor works

    def cursor(stamp: str, session_id: str) -> str:
        return base64.urlsafe_b64encode(f"{stamp}|{session_id}".encode()).decode().rstrip("=")

    for made_up in (cursor("2030-01-01T00:00:00+00:00", "no-such-session"),
                    cursor("2026-01-03T00:00:00+00:00", made[bob_id][2]),  # bob's, at its own time
                    cursor("2026-01-03T00:00:00.000001+00:00", made[alice_id][2])):  # alice's, a time it was not
        detail = assert_problem(alice.get("/v1/sessions", params={"cursor": made_up}), 400)["detail"]
        assert "is not one this server gave out" in detail
    # The same session's time written another way is the same cursor.
    same = alice.get("/v1/sessions", params={"cursor": cursor("2026-01-03T01:00:00+01:00", made[alice_id][2])})
    assert [s["id"] for s in same.json()] == made[alice_id][1::-1]


def test_the_session_notes_come_with_the_question_they_arise_on_and_with_the_session(alice, bank):
    """"Only 2 question(s) in these topics..." reached the candidate only in the final report."""
    size = sum(q.topic.value == "distributed" for q in bank)
    created = start(alice, topics=["distributed"], num_questions=size + 1)
    said = (f"Only {size} question(s) in these topics are in the bank, so the interview has {size} rather than "
            f"{size + 1}.")
    assert said in created["notes"] and created["prompt"]["notes"] == created["notes"]
    detail = alice.get(f"/v1/sessions/{created['id']}").json()
    assert detail["notes"] == created["notes"]
    # Fetched again (a reload of the app) the prompt still says it, and the transcript keeps it with its turn: a
    # reload showed the question on screen without the note that explained it ("told already").
    assert detail["prompt"]["notes"] == created["notes"] and detail["transcript"][0]["notes"] == created["notes"]
    moved = alice.post(f"/v1/sessions/{created['id']}/answers", json={"text": "I am not sure.", "turn": 0}).json()
    detail = alice.get(f"/v1/sessions/{created['id']}").json()
    assert detail["transcript"][0]["notes"] == created["notes"]
    assert detail["prompt"]["notes"] == moved["prompt"]["notes"] and not set(moved["prompt"]["notes"]) & set(said)


def test_a_start_that_fails_before_its_first_question_is_asked_leaves_no_session(api, alice, bank, scorer):
    """The session was stored before its first question was chosen and worded: a start failing there answered an
    error and left an active session with no prompt in the caller's history, one no action could ever answer."""
    from app.api import deps
    from app.interview.engine import InterviewEngine
    from app.interview.phrasing import Phraser
    from app.interview.scoring import AnswerScorer
    from app.interview.selection import QuestionSelector

    class BrokenWording(Phraser):
        def question(self, question, *, number, total):
            raise RuntimeError("the wording step broke")

    store = api.app.dependency_overrides[deps.get_store]()
    api.app.dependency_overrides[deps.get_engine] = lambda: InterviewEngine(
        repo=api.repo, selector=QuestionSelector(store), bank={q.id: q for q in bank},
        scorer=AnswerScorer(evaluator=scorer), phraser=BrokenWording())
    client = type(alice)(api.app, raise_server_exceptions=False, headers=dict(alice.headers))
    assert_problem(client.post("/v1/sessions", json=CONFIG), 500)
    assert client.get("/v1/sessions").json() == []


def test_a_follow_up_given_up_after_a_hint_says_the_hint_cost_points(alice, bank):
    """Review s50: after an answer, a follow-up answered, a hint on the next follow-up and "I don't know", the reply
    said "the score of your earlier answer stands" beside a score 0.5 lower; only `penalties` told the hint's cost.
    The turn's own charges are in `penalties`, the question's in all in `question_penalties`."""
    reference = {q.id: q.reference_answer for q in bank}
    created = start(alice, topics=["autograd"], num_questions=1, seed=5)
    sid, prompt = created["id"], created["prompt"]
    said = reference[prompt["question_id"]].split(". ")[0] + "."
    first = alice.post(f"/v1/sessions/{sid}/answers", json={"text": said, "turn": prompt["turn"]}).json()
    assert first["prompt"]["kind"] == "follow_up"
    second = alice.post(f"/v1/sessions/{sid}/answers", json={"text": said, "turn": first["prompt"]["turn"]}).json()
    assert second["prompt"] is not None and second["prompt"]["kind"] == "follow_up"
    kept = second["evaluation"]["score"]
    alice.post(f"/v1/sessions/{sid}/hint", params={"turn": second["prompt"]["turn"]}).raise_for_status()
    unknown = alice.post(f"/v1/sessions/{sid}/dont-know", params={"turn": second["prompt"]["turn"]}).json()
    evaluation = unknown["evaluation"]
    assert evaluation["score"] == round(kept - 0.5, 1)
    assert evaluation["feedback"].startswith("Follow-up not known; the score of your earlier answer stands, less 0.5 "
                                             "points for the 1 hint(s) taken on this follow-up.")
    assert evaluation["penalties"] == ["1 hint(s) used on the follow-up: -0.5 points"]
    assert evaluation["question_penalties"] == ["1 hint(s) used on the follow-up: -0.5 points"]


def test_a_turn_sent_where_the_route_does_not_read_it_is_told_where_it_goes(alice):
    """`?turn=0` on /answers was "unknown query parameter 'turn'; this endpoint takes: none", and a turn in the
    body of /hint "invalid query.turn: Field required": both leave the caller to guess where it goes."""
    sid = alice.post("/v1/sessions", json={"topics": ["tensors"], "num_questions": 1}).json()["id"]
    answered = alice.post(f"/v1/sessions/{sid}/answers", params={"turn": 0}, json={"text": "x"})
    assert assert_problem(answered, 422)["detail"] == ("unknown query parameter 'turn'; this endpoint takes: none "
                                                       "(see /docs); 'turn' goes in the JSON body here")
    hinted = alice.post(f"/v1/sessions/{sid}/hint", json={"turn": 0})
    assert assert_problem(hinted, 422)["detail"] == "missing query parameter 'turn': send it in the URL (?turn=...)"
    assert alice.get(f"/v1/sessions/{sid}").json()["prompt"]["turn"] == 0  # nothing was recorded


def test_an_i_dont_know_typed_as_the_answer_is_in_the_transcript_as_the_buttons(api, alice):
    """A session stored before the engine recorded a typed "I don't know" as the button's keeps it as an answer:
    the transcript the app resumes from said "answer". Read back it is "dont_know", the words kept."""
    from app.store.models import Turn

    sid = start(alice)["id"]
    typed = alice.post(f"/v1/sessions/{sid}/answers", json={"text": "I don't know, sorry.", "turn": 0}).json()
    assert typed["evaluation"]["gate"] == "dont_know"
    with api.repo._writing() as db:  # as the engine stored it before 07b656b
        db.execute(update(Turn).where(Turn.session_id == sid, Turn.position == 0).values(action="answer"))
    [shown, _] = alice.get(f"/v1/sessions/{sid}").json()["transcript"]
    assert (shown["action"], shown["answer_text"]) == ("dont_know", "I don't know, sorry.")


def test_a_seed_draws_the_same_questions_for_the_same_history_and_says_so(api, alice):
    """Three identical starts with seed 3 gave alice three first questions, each new to her (no repeats): the seed
    fixes the draw for a history, not for ever. bob, with the same history each time, gets the same three, and the
    schema, like the CLI's --seed, says the history counts (it read "reproducible")."""
    config = {"topics": ["training-loop"], "difficulty": 1, "seed": 3, "num_questions": 2}
    firsts = {}
    for name in ("alice", "bob"):
        firsts[name] = [api.client.post("/v1/sessions", json=config, headers=api.as_user(name)).json()["prompt"]
                        ["question_id"] for _ in range(3)]
    assert firsts["alice"] == firsts["bob"] and len(set(firsts["alice"])) == 3, firsts
    said = " ".join(api.app.openapi()["components"]["schemas"]["SessionConfigIn"]["properties"]["seed"]["description"]
                    .split())
    assert "same history" in said and "no repeats" in said, said


def test_a_session_stored_with_half_a_surrogate_pair_is_read_with_a_replacement_character(api, alice, bank):
    """Before input was checked, a check's message or a submission's output could carry half a UTF-16 surrogate pair
    into a session's payloads (JSON-escaped there, so the store kept it). Every read of that session failed to
    encode it: its page and transcript (the app's History too) and its report in every format were a 500. Now each
    shows U+FFFD; the stored row is left as it is."""
    pairs = {(q.topic.value, q.difficulty) for q in bank if q.code}
    topic, difficulty = next(
        p for p in sorted(pairs) if all(q.code for q in bank if (q.topic.value, q.difficulty) == p)
    )
    sid = start(alice, topics=[topic], difficulty=difficulty, num_questions=1)["id"]
    alice.post(f"/v1/sessions/{sid}/answers", json={"code": "x = 1", "text": "It sums.", "turn": 0}).raise_for_status()
    alice.post(f"/v1/sessions/{sid}/finish").raise_for_status()
    with api.repo._writing() as db:  # as an older server wrote it
        code = db.scalars(select(CodeResult)).one()
        code.payload = {**code.payload, "stdout": "out \udfff", "checks": [
            {**check, "message": "half \ud800 pair"} for check in code.payload["checks"]]}
        scored = db.scalars(select(Evaluation)).one()
        scored.payload = {**scored.payload, "feedback": "said \ud83d here"}
    detail = alice.get(f"/v1/sessions/{sid}")
    assert detail.status_code == 200, detail.text
    shown = detail.json()["transcript"][0]
    assert shown["code_result"]["checks"][0]["message"] == "half \ufffd pair"
    assert shown["evaluation"]["feedback"].startswith("said \ufffd here")
    for fmt in ("json", "markdown", "html", "pdf"):
        report = alice.get(f"/v1/sessions/{sid}/report", params={"format": fmt})
        assert report.status_code == 200, (fmt, report.text)
        if fmt != "pdf":
            assert "half \ufffd pair" in report.content.decode("utf-8"), fmt


def test_a_session_says_what_each_hint_costs_for_a_screen_that_shows_its_hints_again(api, alice):
    """The hint's reply says its cost ("hints cost 0.5 points each"); the transcript a reloaded screen reads kept the
    hints' texts but no figure, so the app could only say that hints "cost points"."""
    created = start(alice, topics=["autograd"], num_questions=1)
    given = alice.post(f"/v1/sessions/{created['id']}/hint", params={"turn": 0}).json()
    detail = alice.get(f"/v1/sessions/{created['id']}").json()
    assert detail["hint_cost"] == 0.5 and f"hints cost {detail['hint_cost']} points each" in given["message"]
    schema = api.app.openapi()["components"]["schemas"]["SessionDetail"]["properties"]["hint_cost"]
    assert schema["type"] == "number" and "each hint costs" in schema["description"]
