"""Question bank routes: browse, search, filter, paginate; nothing secret leaves the server."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import pytest

from knowledge.lexical import tokenize
from tests.api_fixtures import alice, api, assert_problem, build_api, scorer  # noqa: F401


def test_browse_is_paginated_and_complete(alice, bank):
    first = alice.get("/v1/questions", params={"per_page": 50}).json()
    assert first["total"] == len(bank) and len(first["items"]) == 50 and first["page"] == 1
    seen = [
        q["id"]
        for page in (1, 2, 3)
        for q in alice.get("/v1/questions", params={"per_page": 50, "page": page}).json()["items"]
    ]
    assert sorted(seen) == sorted(q.id for q in bank)
    assert alice.get("/v1/questions", params={"page": 99}).json()["items"] == []


def test_filters_and_search(alice, bank):
    code = alice.get("/v1/questions", params={"kind": "code", "per_page": 100}).json()
    assert code["total"] == sum(q.code is not None for q in bank) and all(
        q["kind"] == "code" for q in code["items"]
    )
    hard = alice.get("/v1/questions", params={"topic": "autograd", "difficulty": 3}).json()["items"]
    assert hard and all(q["topic"] == "autograd" and q["difficulty"] == 3 for q in hard)
    hits = alice.get(
        "/v1/questions", params={"q": "why call zero_grad before backward", "per_page": 3}
    ).json()
    assert hits["items"][0]["id"] == "zero-grad" and hits["items"][0]["score"] is not None
    tf = alice.get("/v1/questions", params={"q": "saving a model", "framework": "tensorflow"}).json()["items"]
    assert tf and all(q["framework"] == "tensorflow" for q in tf)


def test_bad_filters_are_422(alice):
    for params in (
        {"topic": "astrology"},
        {"difficulty": 4},
        {"kind": "essay"},
        {"per_page": 0},
        {"page": -1},
    ):
        assert_problem(alice.get("/v1/questions", params=params), 422)


@pytest.mark.parametrize("params", [{"per_page": "1_0"}, {"per_page": "5.0"}, {"page": "1.0"}, {"difficulty": "2.0"},
                                    {"difficulty": "+2"}])
def test_a_page_size_page_or_level_in_the_query_is_digits(alice, params):
    """`?per_page=1_0` answered ten questions, `?difficulty=2.0` level 2: a query's integers are read as digits
    only, a 422 naming the parameter otherwise."""
    (name, _), = params.items()
    body = assert_problem(alice.get("/v1/questions", params=params), 422)
    assert body["detail"].startswith(f"invalid query.{name}: should be a whole number written in digits")
    assert alice.get("/v1/questions", params={name: "2"}).status_code == 200


def test_detail_hides_answers_rubrics_and_checks(alice, bank):
    concept = next(q for q in bank if q.code is None)
    body = alice.get(f"/v1/questions/{concept.id}").json()
    assert body["question"] == concept.question and body["code"] is None
    code = next(q for q in bank if q.code is not None)
    body = alice.get(f"/v1/questions/{code.id}").json()
    assert body["code"] == {"contract": code.code.contract, "starter": code.code.starter}
    text = str(body)
    assert code.reference_answer[:40] not in text and code.code.solution[:40] not in text
    assert not {"reference_answer", "rubric", "checks", "solution", "misconceptions", "follow_ups"} & set(
        body
    )
    assert_problem(alice.get("/v1/questions/no-such-question"), 404)


def test_a_task_that_forbids_built_ins_says_what_else_it_refuses(alice, bank):
    """`import operator` (for functools.reduce) scored 0 with no word of it in the contract."""
    forbidding = next(q for q in bank if q.code and q.code.forbidden)
    plain = next(q for q in bank if q.code and not q.code.forbidden)
    shown = alice.get(f"/v1/questions/{forbidding.id}").json()["code"]["contract"]
    assert shown.startswith(forbidding.code.contract.rstrip()) and "`operator`" in shown and "`eval`" in shown
    assert alice.get(f"/v1/questions/{plain.id}").json()["code"]["contract"] == plain.code.contract


def test_a_search_says_how_many_questions_match_apart_from_how_many_it_ranks(alice, bank):
    """A search's `total` counted the ranked list, which is the whole bank: 110 "results" for any word."""
    nothing = alice.get("/v1/questions", params={"q": "qwertyuiop"}).json()
    assert nothing["matched"] == 0 and nothing["total"] == len(bank)
    zero_grad = alice.get("/v1/questions", params={"q": "zero_grad"}).json()
    mentions = [q.id for q in bank if {"zero", "grad"} & set(tokenize(q.lexical_text()))]
    assert zero_grad["matched"] == len(mentions) and 0 < len(mentions) < zero_grad["total"]
    assert alice.get("/v1/questions").json()["matched"] is None  # browsing matches nothing: it lists


def test_a_search_of_a_pack_larger_than_two_hundred_counts_every_question(tmp_path, alice, bank, scorer):
    """`total` and `matched` were counted on a ranked list cut at 200: a pack of 330 questions searched said 200."""
    from knowledge.embeddings import HashingEmbedder
    from knowledge.vectorstore import open_store

    many = [q.model_copy(update={"id": f"{q.id}-{n}"}) for n in range(3) for q in bank]
    store = open_store(data_dir=str(tmp_path / "many"), embedder=HashingEmbedder())
    store.upsert(many)
    (tmp_path / "large").mkdir()
    large = build_api(tmp_path / "large", store=store, bank=many, scorer=scorer)
    search = {"q": "zero_grad", "per_page": 100, "page": 4}
    found = large.client.get("/v1/questions", params=search, headers=large.as_user("alice")).json()
    in_bank = alice.get("/v1/questions", params={"q": "zero_grad"}).json()
    assert found["total"] == len(many) > 300 and len(found["items"]) == min(100, len(many) - 300)
    assert found["matched"] == 3 * in_bank["matched"] > 0


@pytest.mark.parametrize("path, params", [("/v1/questions", {"q": "\x00"}), ("/v1/questions", {"q": "zero\x00grad"}),
                                          ("/v1/sessions", {"cursor": "\x00"})])
def test_a_nul_in_the_query_is_refused_as_in_a_body(alice, path, params):
    """Review s55: `GET /v1/questions?q=%00` was searched for (200), where a NUL in a request body is a 422."""
    (name, value), = params.items()
    body = assert_problem(alice.get(path, params=params), 422)
    at = value.index("\x00")
    said = f"holds a NUL character (\\u0000) at character {at}, which is not text"
    assert body["detail"] == f"invalid query.{name}: {said}"
    assert alice.get(path, params={name: value.replace("\x00", " ")}).status_code != 422  # the text without it
