"""Ad-hoc grading and code checks: bank ids, own references, the runner, limits and rate limits."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import json
import time

import pytest

from app.grading import MATCH_THRESHOLD
from tests.api_fixtures import PASSING_MARK, alice, api, assert_problem, build_api, scorer  # noqa: F401


def test_grade_against_a_bank_entry(alice, bank):
    entry = next(q for q in bank if q.id == "zero-grad")
    strong = alice.post("/v1/grade", json={"question_id": entry.id, "answer": entry.reference_answer}).json()
    weak = alice.post(
        "/v1/grade", json={"question_id": entry.id, "answer": "It makes training faster."}
    ).json()
    assert strong["score"] > weak["score"] and strong["question_id"] == entry.id
    assert {p["point_id"] for p in strong["points"]} == {p.id for p in entry.rubric}
    assert strong["gate"] is None and strong["notes"] == []
    unknown = alice.post("/v1/grade", json={"question_id": entry.id, "answer": "I dont know"}).json()
    assert (unknown["score"], unknown["gate"]) == (0, "non-answer")  # a zero that was never read is said so


def test_a_right_concise_answer_under_four_is_told_in_its_grade_what_the_score_also_reads(alice):
    """The reviewer's POST /v1/grade (stop 55): every point covered, 3.8, and nothing said where the rest went."""
    from tests.test_rubric_scorer import REQUIRES_GRAD_CONCISE

    graded = alice.post("/v1/grade", json={"question_id": "requires-grad", "answer": REQUIRES_GRAD_CONCISE}).json()
    assert graded["score"] < 4.0 and all(p["verdict"] != "missed" for p in graded["points"])
    assert graded["feedback"].splitlines()[-1].startswith(
        "No point is missing, but the score also weighs how much of the full model answer's content you give (you "
        "used 33% of its content words)")


def test_a_wrong_answer_to_an_own_reference_is_not_told_no_point_is_missing(alice):
    """The reviewer's ad-hoc grade (stop 56): "Lyon" for "Paris" is partly there, not complete."""
    body = {"question": "What is the capital of France?", "reference_answer": "Paris", "answer": "Lyon"}
    graded = alice.post("/v1/grade", json=body).json()
    assert graded["score"] < 4.0 and [p["verdict"] for p in graded["points"]] == ["partial"]
    assert "Partly there" in graded["feedback"] and "No point is missing" not in graded["feedback"]


def test_grade_against_an_own_reference_and_by_matching(alice):
    body = {
        "question": "What does model.eval() change?",
        "reference_answer": "It switches dropout off. Batch normalisation then uses its running statistics.",
        "answer": "Dropout is switched off and batch normalisation uses the running statistics.",
    }
    graded = alice.post("/v1/grade", json=body).json()
    off = alice.post("/v1/grade", json={**body, "answer": "It saves the model to disk."}).json()
    assert graded["score"] > off["score"] and graded["points"] and graded["question_id"] is None
    matched = alice.post(
        "/v1/grade",
        json={"question": "What does optimizer.zero_grad() do in PyTorch?", "answer": "It resets gradients."},
    ).json()
    assert matched["matched_id"] == "zero-grad" and MATCH_THRESHOLD <= matched["match_confidence"] <= 1
    not_in_bank = alice.post("/v1/grade", json={"question": "How does beam search decode?", "answer": "Greedily."})
    assert not_in_bank.status_code == 422 and "closely enough" in not_in_bank.json()["detail"]


def test_grade_against_several_acceptable_references_takes_the_best(alice):
    """Any one of them is a full answer, so the answer is graded against each and the best grade counts."""
    question = "Why did the bulb stay off?"
    references = ["The switch was open, so no current could flow.", "The bulb was not connected to the battery."]
    answer = "Because the bulb wasn't connected to the battery at all."
    alone = [alice.post("/v1/grade", json={"question": question, "reference_answer": r, "answer": answer}).json()
             for r in references]
    assert alone[1]["score"] > alone[0]["score"]  # the second reference is the one this answer gives
    both = alice.post("/v1/grade", json={"question": question, "reference_answer": references, "answer": answer})
    assert both.status_code == 200 and both.json() == alone[1]
    batch = alice.post("/v1/grade/batch", json={"items": [
        {"question": question, "reference_answer": references[::-1], "answer": answer},
        {"question": question, "reference_answer": [references[0], "x" * 20_001], "answer": answer},
    ]}).json()["results"]
    assert batch[0]["result"] == alone[1]
    assert "reference_answer is 20001 characters" in batch[1]["error"]


def test_batch_grades_at_the_standard_of_the_callers_examples(alice):
    """A lenient grader's examples raise the question's scores; the score without them is kept beside."""
    question = {"question": "Why call optimizer.zero_grad() every step?",
                "reference_answer": "Backward adds new gradients to the stored ones, so they must be cleared first."}
    item = {**question, "answer": "So the gradients do not pile up."}
    plain = alice.post("/v1/grade/batch", json={"items": [item]}).json()["results"][0]["result"]
    examples = [{**question, "answer": a, "grade": 5}
                for a in ("They accumulate otherwise.", "To reset the grads.", "Old gradients would add up.")]
    taught = alice.post("/v1/grade/batch", json={"items": [item], "examples": examples}).json()["results"][0]["result"]
    assert taught["score_without_examples"] == plain["score"] < taught["score"] and taught["examples_used"] == 3
    unknown = [*examples, {"question_id": "nope", "answer": "x", "grade": 1}]
    body = assert_problem(alice.post("/v1/grade/batch", json={"items": [item], "examples": unknown}), 400)
    assert body["detail"].startswith("examples[3]: unknown question_id")
    over = [{**examples[0], "grade": 6, "grade_max": 5}]
    assert "above grade_max" in assert_problem(
        alice.post("/v1/grade/batch", json={"items": [item], "examples": over}), 422)["detail"]
    for odd in ({"grade": True}, {"grade": 1, "grade_max": float("inf")}):  # `true` is no grade, nor infinity a scale
        body = json.dumps({"items": [item], "examples": [{**examples[0], **odd}]})  # Infinity, as JavaScript sends
        refused = alice.post("/v1/grade/batch", content=body, headers={"content-type": "application/json"})
        assert "examples.0" in assert_problem(refused, 422)["detail"]


def test_a_callers_own_question_id_beside_a_reference_is_a_label(alice):
    """An LMS sends its own item ids: beside a reference answer the id is not looked up in the bank, it is
    echoed back and pairs items with the examples of the same id."""
    own = {"question": "Why call optimizer.zero_grad() every step?",
           "reference_answer": "Backward adds new gradients to the stored ones, so they must be cleared first."}
    item = {**own, "question_id": "LMS-item-17", "answer": "So the gradients do not pile up."}
    alone = alice.post("/v1/grade", json=item)
    assert alone.status_code == 200, alone.text
    unlabelled = alice.post("/v1/grade", json={**own, "answer": item["answer"]}).json()
    assert alone.json()["question_id"] == "LMS-item-17" and alone.json()["score"] == unlabelled["score"]
    # Examples of the same id, given in other words, set its standard.
    examples = [{"question_id": "LMS-item-17", "question": "Why zero the gradients?", "answer": a, "grade": 5,
                 "reference_answer": own["reference_answer"]} for a in ("They accumulate otherwise.", "To reset them.")]
    taught = alice.post("/v1/grade/batch", json={"items": [item], "examples": examples}).json()["results"][0]
    assert taught["result"]["question_id"] == "LMS-item-17" and taught["result"]["examples_used"] == 2
    # Without a reference the id must still name a bank entry.
    assert_problem(alice.post("/v1/grade", json={"question_id": "LMS-item-17", "answer": "x"}), 404)


def test_examples_that_set_no_standard_are_said_so_by_index(alice):
    """An example is never dropped without a word: one that pairs with no item (a typo in its question_id, an
    id left off) or is a non-answer is listed in `examples` with why; the others are counted as used."""
    own = {"question": "Why call optimizer.zero_grad() every step?",
           "reference_answer": "Backward adds new gradients to the stored ones, so they must be cleared first."}
    item = {**own, "question_id": "LMS-item-17", "answer": "So the gradients do not pile up."}
    examples = [{**own, "question_id": "LMS-item-17", "answer": "They accumulate otherwise.", "grade": 5},
                {**own, "question_id": "LMS-item-71", "answer": "Old gradients would add up.", "grade": 5},
                {**own, "answer": "To reset the grads.", "grade": 5},
                {**own, "question_id": "LMS-item-17", "answer": "No idea", "grade": 2}]
    reply = alice.post("/v1/grade/batch", json={"items": [item], "examples": examples})
    assert reply.status_code == 200, reply.text
    assert reply.json()["results"][0]["result"]["examples_used"] == 1
    used = reply.json()["examples"]
    assert [(e["index"], e["used"]) for e in used] == [(0, True), (1, False), (2, False), (3, False)]
    assert used[0]["note"] is None
    assert used[1]["note"] == "no graded answer has question_id 'LMS-item-71'; one asks the same question with " \
        "question_id 'LMS-item-17': give the example that id"
    assert used[2]["note"].startswith("no graded answer asks this question without a question_id; one asks the "
                                      "same question with question_id 'LMS-item-17'")
    assert "non-answer" in used[3]["note"]
    typo = {**examples[1], "question": "Why zero the gradients?"}  # not the same text: the id is the clue
    said = alice.post("/v1/grade/batch", json={"items": [item], "examples": [typo]}).json()["examples"][0]
    assert said == {"index": 0, "used": False,
                    "note": "no graded answer has question_id 'LMS-item-71' (did you mean 'LMS-item-17'?)"}
    assert alice.post("/v1/grade/batch", json={"items": [item]}).json()["examples"] == []


@pytest.mark.parametrize(("too_long", "why"), [
    ({"answer": "x" * 20_001}, "answer is 20001 characters; the limit is 20000"),
    ({"question": "Why? " * 4_001}, "question is 20005 characters; the limit is 20000"),
])
def test_an_example_of_an_item_that_failed_says_why_it_was_not_used(alice, too_long, why):
    """The example of a question whose only item failed read "no graded answer has question_id 'model-eval' (did
    you mean 'model-eval-2'?)": a typo hint for an id that was right (review s50)."""
    own = {"question": "What does model.eval() change?", "reference_answer": "Dropout off, running batch-norm stats."}
    items = [{**own, "question_id": "model-eval", "answer": "Dropout is off.", **too_long},
             {"question": "Why zero_grad?", "reference_answer": "They add up.", "question_id": "model-eval-2",
              "answer": "To reset them."}]
    example = {**own, "question_id": "model-eval", "answer": "Dropout is off.", "grade": 4}
    reply = alice.post("/v1/grade/batch", json={"items": items, "examples": [example]}).json()
    assert reply["results"][0]["error"] == why and reply["results"][1]["result"]
    assert reply["examples"] == [{"index": 0, "used": False, "note": f"no answer to its question could be graded "
                                  f"(items[0]: {why}), so it set no standard; fix that answer and send it again"}]


def test_a_bank_question_asked_by_its_text_pairs_with_examples_that_give_its_id(alice, bank):
    """The README pairs examples by question_id or by question text; a bank question matched from its text is the
    same question as its bank id, so either way round the example sets the item's standard (it was graded apart,
    and the example said to be of no graded answer while the item's reply named that very id)."""
    entry = next(q for q in bank if q.id == "zero-grad")
    by_id = {"question_id": entry.id, "answer": "It resets the gradients."}
    by_text = {"question": entry.question, "answer": "It resets the gradients."}
    for item, example in ((by_text, {**by_id, "grade": 5}), (by_id, {**by_text, "grade": 5})):
        reply = alice.post("/v1/grade/batch", json={"items": [item], "examples": [example]}).json()
        assert reply["examples"] == [{"index": 0, "used": True, "note": None}]
        assert reply["results"][0]["result"]["examples_used"] == 1


def test_an_integer_question_id_is_read_as_its_digits_as_the_grade_command_reads_it(alice):
    """LMS item ids are often numbers: 17 is the label '17' (it pairs with examples labelled "17"), and a
    bank lookup of 17 is of '17'. A value that is no id is refused by name."""
    own = {"question": "Why call optimizer.zero_grad() every step?",
           "reference_answer": "Backward adds new gradients to the stored ones, so they must be cleared first."}
    item = {**own, "question_id": 17, "answer": "So the gradients do not pile up."}
    graded = alice.post("/v1/grade", json=item)
    assert graded.status_code == 200, graded.text
    assert graded.json()["question_id"] == "17"
    examples = [{**own, "question_id": "17", "answer": a, "grade": 5} for a in ("They accumulate.", "To reset them.")]
    taught = alice.post("/v1/grade/batch", json={"items": [item], "examples": examples}).json()["results"][0]
    assert taught["result"]["question_id"] == "17" and taught["result"]["examples_used"] == 2
    assert assert_problem(alice.post("/v1/grade", json={"question_id": 17, "answer": "x"}), 404)["detail"] \
        == "no question '17'; list them with GET /v1/questions"
    for odd, kind in [(17.5, "a number with a decimal point"), (True, "true or false"), ([17], "an array")]:
        assert assert_problem(alice.post("/v1/grade", json={**item, "question_id": odd}), 422)["detail"] == \
            f"invalid question_id: must be a string or an integer (an id such as 17 is read as '17'), not {kind}"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"question_id": "no-such-id", "answer": "x"}, 404),
        ({"answer": "no question at all"}, 422),
        ({"question": "Why?", "reference_answer": "   ", "answer": "x"}, 422),
        ({"question": "Why?", "reference_answer": ["Air scatters blue light.", "  "], "answer": "x"}, 422),
        ({"question": "Why?", "reference_answer": ["a reference", "x" * 20_001], "answer": "x"}, 413),
        ({"question_id": "zero-grad"}, 422),
        ({"question_id": "zero-grad", "answer": "x" * 20_001}, 413),
    ],
)
def test_grade_client_mistakes(alice, body, status):
    assert_problem(alice.post("/v1/grade", json=body), status)


@pytest.mark.parametrize(("references", "said"), [
    ([], "invalid reference_answer: List should have at least 1 item"),
    (["a reference"] * 11, "invalid reference_answer: List should have at most 10 items"),
    (["a reference", 3], "invalid reference_answer.1: Input should be a valid string"),
    (7, "invalid reference_answer: Input should be a valid string"),
    (["a reference", " "], "reference_answer[1] is empty"),
    ("...", "reference_answer has no words to grade against"),  # it was "is empty"
    (["a reference", "-"], "reference_answer[1] has no words to grade against"),
])
def test_a_bad_reference_list_is_named_for_what_was_sent(alice, references, said):
    """The field takes a string or a list; a list's failure is told as a list's, not as "not a string"."""
    body = {"question": "Why?", "reference_answer": references, "answer": "x"}
    assert assert_problem(alice.post("/v1/grade", json=body), 422)["detail"].startswith(said)


@pytest.mark.parametrize(("question", "said"), [(None, "missing field 'question'"), ("  ", "'question' is empty")])
def test_a_missing_and_a_blank_question_are_told_apart(alice, question, said):
    body = {"question": question, "reference_answer": "Air scatters blue light more.", "answer": "Scattering."}
    reply = alice.post("/v1/grade", json=body)
    assert reply.status_code == 422 and said in reply.json()["detail"]


@pytest.mark.parametrize(("fields", "said"), [
    ({}, "missing field 'question_id' or 'question': give a bank question's id, or the question's text"),
    ({"question_id": "zero-grad", "reference_answer": "Gradients add up."},
     "leave reference_answer out to grade against the bank's question of that id"),
    ({"question_id": "LMS-17", "reference_answer": "Gradients add up."},
     "a reference_answer of your own is graded with the question's text, and question_id is then only your label"),
])
def test_a_line_without_a_question_is_told_which_fields_would_grade_it(alice, fields, said):
    """Review s51: an item with only an answer, and one with a question_id and a reference of its own, were both
    told "missing field 'question' (a string)": nothing said that a bank id alone grades, or why the text is needed."""
    reply = alice.post("/v1/grade", json={"answer": "They add up.", **fields})
    assert reply.status_code == 422 and said in reply.json()["detail"], reply.text


def test_grade_batch_grades_each_item_in_order_and_reports_bad_ones(alice, bank):
    entry = next(q for q in bank if q.id == "zero-grad")
    items = [
        {"question_id": entry.id, "answer": entry.reference_answer},
        {"question_id": "no-such-id", "answer": "x"},
        {"question": "What does model.eval() change?", "reference_answer": "It switches dropout off.",
         "answer": "Dropout is switched off."},
        {"question_id": entry.id, "answer": "x" * 20_001},
        {"question_id": entry.id, "answer": "It makes training faster."},
    ]
    reply = alice.post("/v1/grade/batch", json={"items": items})
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert "unknown question_id 'no-such-id'" in results[1]["error"] and results[1]["result"] is None
    assert "answer is 20001 characters; the limit is 20000" in results[3]["error"]
    for i in (0, 2, 4):  # the same grade as alone
        alone = alice.post("/v1/grade", json=items[i]).json()
        assert results[i]["error"] is None and results[i]["result"] == alone
    assert results[0]["result"]["score"] > results[4]["result"]["score"]


@pytest.mark.parametrize("items", [[], [{"question_id": "zero-grad", "answer": "x"}] * 101, [{"answer": 3}]])
def test_grade_batch_rejects_a_malformed_request_whole(alice, items):
    assert_problem(alice.post("/v1/grade/batch", json={"items": items}), 422)


def code_question(bank):
    return next(q for q in bank if q.code is not None)


def test_code_check_returns_the_runner_result(api, alice, bank):
    question = code_question(bank)
    passed = alice.post("/v1/code/check", json={"question_id": question.id, "code": PASSING_MARK}).json()
    assert passed["status"] == "passed" and passed["score"] == 1.0
    assert passed["passed_checks"] == passed["total_checks"] == len(question.code.checks)
    failed = alice.post("/v1/code/check", json={"question_id": question.id, "code": "pass"}).json()
    assert failed["status"] == "failed" and failed["checks"][0]["message"]


def test_code_check_mistakes(alice, bank):
    concept = next(q for q in bank if q.code is None)
    assert_problem(alice.post("/v1/code/check", json={"question_id": "nope", "code": "x"}), 404)
    assert (
        "not a code task"
        in assert_problem(alice.post("/v1/code/check", json={"question_id": concept.id, "code": "x"}), 400)[
            "detail"
        ]
    )
    assert_problem(alice.post("/v1/code/check", json={"question_id": concept.id}), 422)
    big = "x" * 50_001
    assert_problem(
        alice.post("/v1/code/check", json={"question_id": code_question(bank).id, "code": big}), 413
    )


def test_code_checks_are_rate_limited_per_user(api, alice, bank):
    body = {"question_id": code_question(bank).id, "code": PASSING_MARK}
    assert all(alice.post("/v1/code/check", json=body).status_code == 200 for _ in range(5))  # limit is 5/min
    limited = alice.post("/v1/code/check", json=body)
    assert_problem(limited, 429)
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert api.client.post("/v1/code/check", json=body, headers=api.as_user("bob")).status_code == 200


def test_one_users_checks_run_one_at_a_time_and_others_are_not_held_up(api, alice, bank):
    """Each check can hold a sandbox worker for its time limit: one user's second check while the first
    runs is a 429 (it would take the pool from everyone else), another user's runs, and once the first
    is done the user's next runs."""
    import threading

    from tests.api_fixtures import SLOW_MARK

    body = {"question_id": code_question(bank).id, "code": PASSING_MARK}
    first: list[int] = []
    slow = threading.Thread(target=lambda: first.append(
        alice.post("/v1/code/check", json={**body, "code": PASSING_MARK + SLOW_MARK}).status_code))
    slow.start()
    deadline = time.monotonic() + 10
    while not api.runner.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    refused = assert_problem(alice.post("/v1/code/check", json=body), 429)
    assert "still running" in refused["detail"]
    assert api.client.post("/v1/code/check", json=body, headers=api.as_user("bob")).status_code == 200
    slow.join(10)
    assert first == [200] and alice.post("/v1/code/check", json=body).status_code == 200


def test_a_users_runs_at_once_are_counted_across_the_servers_workers(api, bank):
    """Each API worker counted the runs at once in its own memory: with two workers, 4 code checks sent at once
    under INTERVIEWER_CODE_CHECKS_IN_FLIGHT=1 ran 2. A second worker (another app on the same data directory) now
    refuses the user's check while the first runs one, runs another user's, and runs the user's once it is done."""
    import threading

    from fastapi.testclient import TestClient

    from app.config import Settings
    from app.main import create_app
    from tests.api_fixtures import SLOW_MARK

    started, release = threading.Event(), threading.Event()
    check = api.runner.check

    def held(task, source, question_id=""):  # the first worker's run goes on until released
        if SLOW_MARK in source:
            started.set()
            assert release.wait(10)
        return check(task, source, question_id)

    api.runner.check = held
    worker = create_app(Settings(data_dir=api.app.state.settings.data_dir, code_checks_per_minute=5))
    worker.dependency_overrides.update(api.app.dependency_overrides)  # the same database, bank and sandbox
    other = TestClient(worker)
    body = {"question_id": code_question(bank).id, "code": PASSING_MARK}
    first: list[int] = []
    running = threading.Thread(target=lambda: first.append(api.client.post(
        "/v1/code/check", json={**body, "code": PASSING_MARK + SLOW_MARK}, headers=api.as_user("alice")).status_code))
    running.start()
    try:
        assert started.wait(10)
        refused = assert_problem(other.post("/v1/code/check", json=body, headers=api.as_user("alice")), 429)
        assert "1 code check(s) of yours are still running" in refused["detail"]
        assert other.post("/v1/code/check", json=body, headers=api.as_user("bob")).status_code == 200
    finally:
        release.set()
        running.join(10)
    assert first == [200]
    assert other.post("/v1/code/check", json=body, headers=api.as_user("alice")).status_code == 200


def test_without_a_sandbox_code_checks_are_503(tmp_path, ingested_store, bank, scorer):
    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer, with_runner=False)
    body = {"question_id": code_question(bank).id, "code": PASSING_MARK}
    assert_problem(api.client.post("/v1/code/check", json=body, headers=api.as_user("alice")), 503)


def test_code_in_an_answer_counts_as_a_check_only_where_it_runs(api, alice, bank):
    body = {"question_id": code_question(bank).id, "code": PASSING_MARK}
    assert all(alice.post("/v1/code/check", json=body).status_code == 200 for _ in range(5))  # the limit used up
    # a topic with no code task, so the one question asked is a concept question whatever the draw
    topic = next(t for t in sorted({q.topic for q in bank}) if all(q.code is None for q in bank if q.topic == t))
    concept = alice.post("/v1/sessions", json={"topics": [topic.value], "num_questions": 1}).json()
    assert concept["prompt"]["code_contract"] is None
    reply = alice.post(f"/v1/sessions/{concept['id']}/answers", json={"text": "Views share storage.", "code": "x = 1",
                                                                         "turn": 0})
    assert reply.status_code == 200, reply.text  # a concept question runs no code
    assert_problem(alice.post("/v1/sessions/nope/answers", json={"code": "x = 1", "turn": 0}), 404)


def test_an_answer_refused_as_stale_takes_no_code_check(alice, bank):
    task = code_question(bank)
    for seed in range(40):  # a session whose first prompt is a code task
        session = alice.post("/v1/sessions", json={"topics": [task.topic.value], "num_questions": 2, "seed": seed})
        if session.json()["prompt"]["code_contract"]:
            break
    sid = session.json()["id"]
    body = {"question_id": task.id, "code": PASSING_MARK}
    assert all(alice.post("/v1/code/check", json=body).status_code == 200 for _ in range(5))  # the limit used up
    for _ in range(3):  # a retry of an answer to another turn is refused for that, and costs no check
        stale = alice.post(f"/v1/sessions/{sid}/answers", json={"code": PASSING_MARK, "turn": 1})
        assert "not the current prompt" in assert_problem(stale, 409)["detail"]
    assert_problem(alice.post(f"/v1/sessions/{sid}/answers", json={"code": PASSING_MARK, "turn": 0}), 429)
    assert alice.get(f"/v1/sessions/{sid}").json()["transcript"][0]["action"] is None  # nothing recorded


def test_a_full_batch_of_long_answers_is_within_the_batch_routes_body_cap(alice):
    item = {"question_id": "zero-grad", "answer": "Gradients accumulate. " * 680}  # ~15,000 characters
    body = {"items": [item] * 100, "unknown": True}  # refused by validation, after the body was read whole
    assert "unknown field 'unknown'" in assert_problem(alice.post("/v1/grade/batch", json=body), 422)["detail"]
    too_big = {"items": [{**item, "answer": "x" * 20_000}] * 100, "examples": [{**item, "grade": 1}] * 100,
               "pad": "y" * 20_000_000}
    assert "send fewer items" in assert_problem(alice.post("/v1/grade/batch", json=too_big), 413)["detail"]


def test_grading_a_code_task_says_its_checks_were_not_run(alice, bank):
    """Code sent to /v1/grade is read as words (the checks run in /v1/code/check or a session): said, not silent."""
    task = code_question(bank)
    graded = alice.post("/v1/grade", json={"question_id": task.id, "answer": task.code.solution}).json()
    assert any("hidden checks were not run" in n for n in graded["notes"])
    concept = next(q for q in bank if q.code is None)
    plain = alice.post("/v1/grade", json={"question_id": concept.id, "answer": concept.reference_answer}).json()
    assert not any("hidden checks" in n for n in plain["notes"])


def test_a_question_an_interview_is_asking_is_not_graded_on_the_side_until_it_is_over(alice, bank):
    """Grading it showed every rubric point while the interview, which shows none, was still asking it."""
    created = alice.post("/v1/sessions", json={"mode": "interview", "num_questions": 1}).json()
    asked = created["prompt"]["question_id"]
    question = next(q for q in bank if q.id == asked).question
    by_id = alice.post("/v1/grade", json={"question_id": asked, "answer": "Some answer."})
    assert asked in assert_problem(by_id, 409)["detail"]
    by_text = alice.post("/v1/grade", json={"question": question, "answer": "Some answer."})
    assert_problem(by_text, 409)  # its text matches it in the bank just as well
    batch = alice.post("/v1/grade/batch", json={"items": [
        {"question_id": asked, "answer": "Some answer."}, {"question_id": "zero-grad", "answer": "Some answer."},
        {"question_id": asked, "question": "Mine", "reference_answer": "My own reference.", "answer": "Mine."},
    ]}).json()["results"]
    assert "interview" in batch[0]["error"] and (asked == "zero-grad" or batch[1]["result"]) and batch[2]["result"]
    alice.post(f"/v1/sessions/{created['id']}/finish").raise_for_status()
    assert alice.post("/v1/grade", json={"question_id": asked, "answer": "Some answer."}).status_code == 200


def test_one_users_grading_holds_at_most_its_share_and_others_are_graded_meanwhile(tmp_path, ingested_store, bank,
                                                                                   scorer):
    """Grading holds a thread of the slow routes for as long as the model takes: one key's three batches held on a
    slow model took all three slots of a 4-thread pool, and another user's grade waited behind them. Past its
    INTERVIEWER_GRADING_IN_FLIGHT the user gets a 429 with Retry-After; the other user is graded at once."""
    import threading
    from functools import partial

    import anyio
    import anyio.to_thread
    import httpx

    from app.api import deps
    from tests.api_fixtures import HeldScorer

    release = threading.Event()
    held = HeldScorer(scorer, release, marker="held on a slow model")
    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=held)  # the default cap: 2 at once
    api.app.dependency_overrides[deps.get_evaluator] = lambda: held
    batch = {"items": [{"question_id": "zero-grad", "answer": "Gradients add up: held on a slow model."}]}
    replies: list[httpx.Response] = []

    async def probe() -> httpx.Response:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 4  # 3 slots for the slow routes
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api.app), base_url="http://t") as c:
            post = partial(c.post, "/v1/grade/batch", json=batch, headers=api.as_user("alice"))

            async def alices() -> None:
                replies.append(await post())

            async with anyio.create_task_group() as grading:
                for _ in range(3):
                    grading.start_soon(alices)
                try:
                    with anyio.fail_after(10):
                        while held.held < 2 or not replies:
                            await anyio.sleep(0.01)
                        return await c.post("/v1/grade", headers=api.as_user("bob"), json={
                            "question_id": "zero-grad", "answer": "It resets the gradients."})
                finally:
                    release.set()

    other = anyio.run(probe)
    assert other.status_code == 200 and other.json()["question_id"] == "zero-grad"
    refused, *graded = replies
    body = assert_problem(refused, 429)
    assert "2 grading request(s) of yours are still running" in body["detail"]
    assert int(refused.headers["Retry-After"]) > 0
    assert [r.status_code for r in graded] == [200, 200]
    again = api.client.post("/v1/grade/batch", json=batch, headers=api.as_user("alice"))  # theirs are done: let go
    assert again.status_code == 200
