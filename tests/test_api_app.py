"""Cross-cutting behaviour: one error shape everywhere, probes, OpenAPI document, CORS."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import contextlib
from typing import Annotated

import pytest
from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient

from app.api import deps, problems
from app.config import Settings
from app.main import create_app
from tests.api_fixtures import HeldScorer, alice, api, assert_problem, build_api, scorer  # noqa: F401


def test_unknown_routes_and_methods_are_problems(api):
    assert "/docs" in assert_problem(api.client.get("/v2/nothing"), 404)["detail"]
    refused = assert_problem(api.client.delete("/v1/sessions"), 405)  # it said "that method; see /docs"
    assert refused["detail"] == "this endpoint does not accept 'DELETE'; it takes: GET, HEAD, POST"
    assert api.client.delete("/v1/sessions").headers["allow"] == "GET, HEAD, POST"  # was "POST": GET is another route
    assert_problem(api.client.put("/healthz"), 405)


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("HEAD", "/v1/grade", "POST"),
    ("GET", "/v1/grade", "POST"),
    ("PUT", "/v1/grade/batch", "POST"),
    ("HEAD", "/v1/sessions/s1/hint", "POST"),
    ("GET", "/v1/sessions/s1/answers", "POST"),
    ("PATCH", "/v1/sessions/s1/draft", "PUT"),
    ("HEAD", "/v1/sessions/s1/draft", "PUT"),
    ("DELETE", "/v1/sessions", "GET, HEAD, POST"),
    ("POST", "/v1/sessions/s1/report", "GET, HEAD"),
    ("OPTIONS", "/v1/code/check", "POST"),
    ("TRACE", "/healthz", "GET, HEAD"),
    ("GET", "/v1/admin/users", "POST"),
    ("PUT", "/v1/admin/users/bob/keys", "GET, HEAD, POST"),
])
def test_every_refused_method_is_a_405_naming_the_methods_taken_and_the_one_sent(api, method, path, allowed):
    """A HEAD on a POST route reached the routes as the GET it is answered as (app/api/head.py), and its 405 said
    "this endpoint does not accept 'GET'": the client sent no GET. A HEAD reply has no body, so its Content-Length
    (the length of the body a GET of the same words would carry) is what tells which words it holds."""
    reply = api.client.request(method, path, headers=api.as_user("alice"))
    assert (reply.status_code, reply.headers["allow"]) == (405, allowed)
    assert reply.headers["content-type"].startswith("application/problem+json")
    said = problems.problem(405, f"this endpoint does not accept '{method}'; it takes: {allowed}").body
    if method == "HEAD":
        assert reply.content == b"" and reply.headers["content-length"] == str(len(said))
    else:
        assert reply.content == said


def test_a_body_that_is_not_json_is_said_to_be_so(alice):
    reply = alice.post("/v1/grade", content=b'{"answer": "x",', headers={"Content-Type": "application/json"})
    assert assert_problem(reply, 422)["detail"].startswith("the request body is not valid JSON (at character")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_sent_as_another_media_type_is_a_415_naming_json(alice, content_type):
    """curl -d sends a form; a JSON body under it was a 422 about "a valid dictionary"."""
    headers = {"Content-Type": content_type} if content_type else {}
    reply = alice.post("/v1/grade", content=b'{"question_id": "zero-grad", "answer": "x"}', headers=headers)
    assert "application/json" in assert_problem(reply, 415)["detail"]
    assert alice.post("/v1/sessions").status_code == 201  # no body: nothing to refuse
    fine = alice.post("/v1/grade", content=b'{"question_id": "zero-grad", "answer": "It clears .grad."}',
                      headers={"Content-Type": "application/json; charset=utf-8"})
    assert fine.status_code == 200


def test_a_compressed_body_is_a_415_saying_so(alice):
    """A gzipped body was told "the request body could not be read: send JSON encoded as UTF-8"."""
    import gzip

    body = gzip.compress(b'{"question_id": "zero-grad", "answer": "x"}')
    reply = alice.post("/v1/grade", content=body, headers={"Content-Type": "application/json",
                                                            "Content-Encoding": "gzip"})
    assert assert_problem(reply, 415)["detail"] == ("this server does not take compressed bodies (Content-Encoding: "
                                                    "gzip); send the JSON uncompressed")


def test_an_unknown_field_is_named(alice):
    reply = alice.post("/v1/sessions", json={"level": "senior"})
    assert assert_problem(reply, 422)["detail"].startswith("unknown field 'level'")


@pytest.mark.parametrize(("path", "params", "named"), [
    ("/v1/questions", {"limit": -1}, "parameter 'limit'"),  # /v1/sessions' paging, ignored here: page 1 came back
    ("/v1/questions", {"offset": 10**20, "per_page": 5}, "parameter 'offset'"),
    ("/v1/sessions", {"page": 2, "per_page": 5}, "parameters 'page', 'per_page'"),  # /v1/questions' paging
    ("/v1/me/progress", {"since": "2026-01-01"}, "parameter 'since'"),
])
def test_an_unknown_query_parameter_is_named_as_an_unknown_field_is(alice, path, params, named):
    """Every route refuses a query parameter it does not take, and says which it takes: one that was
    ignored answered another question than the one asked (the first page, for ?limit=-1)."""
    detail = assert_problem(alice.get(path, params=params), 422)["detail"]
    assert detail.startswith(f"unknown query {named};") and "this endpoint takes:" in detail
    assert alice.get("/v1/questions", params={"page": 2, "per_page": 5}).json()["page"] == 2  # paging as before
    assert alice.get("/v1/sessions", params={"limit": 5}).status_code == 200


@pytest.mark.parametrize(("path", "query"), [
    ("/v1/sessions", "limit=1&limit=50"), ("/v1/questions", "page=1&page=2&per_page=5"),
    ("/v1/sessions/abc/report", "format=pdf&format=json"),
])
def test_a_query_parameter_given_twice_is_refused_not_read_as_its_last_value(alice, path, query):
    """`?limit=1&limit=50` answered 50 sessions without a word: the server read the last of the two."""
    name = query.split("=")[0]
    detail = assert_problem(alice.get(f"{path}?{query}"), 422)["detail"]
    assert detail == f"query parameter {name!r} is given 2 times; it takes one value"


def test_a_list_valued_query_parameter_may_be_repeated(tmp_path):
    app = create_app(Settings(data_dir=tmp_path, auth_disabled=True))
    extra = APIRouter()

    @extra.get("/tags")
    async def tags(tag: Annotated[list[str] | None, Query()] = None, size: int = 1) -> list[str]:
        return tag or []

    app.include_router(extra)
    client = TestClient(app)
    assert client.get("/tags?tag=a&tag=b").json() == ["a", "b"]
    assert client.get("/tags?size=1&size=2").status_code == 422


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer iv_not-a-key"}])
@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/sessions"), ("GET", "/v1/sessions/abc/report"), ("POST", "/v1/sessions/abc/hint"),
    ("POST", "/v1/grade"),  # its grading slot is not taken either
])
def test_a_caller_without_a_good_key_is_told_about_the_key_before_the_query(api, method, path, headers):
    """A request with no key and an unknown parameter got a 422 listing the route's parameters, as if only the
    query were wrong (review s50): the key comes first, as the route's own parameters' checks already did."""
    reply = api.client.request(method, path, params={"foo": "1"}, headers=headers)
    assert "key" in assert_problem(reply, 401)["detail"]


def test_with_a_good_key_an_unknown_parameter_is_still_named(api):
    alice = api.as_user("alice")
    for path in ("/v1/sessions", "/v1/me/progress"):
        assert "unknown query parameter 'foo'" in assert_problem(api.client.get(path, params={"foo": 1}, headers=alice),
                                                                 422)["detail"]
    assert assert_problem(api.client.post("/v1/grade", params={"foo": 1}, json={}, headers=alice), 422)["detail"] \
        .startswith("unknown query parameter 'foo'")  # before the body's own errors, as it was
    admin = {"Authorization": "Bearer " + "a" * 32}
    assert assert_problem(api.client.get("/v1/admin/users/x/keys", params={"foo": 1}, headers=admin), 404)  # off


def test_the_documented_code_answer_is_one_its_task_takes(bank):
    """The schema's example answer to pairwise-distances called torch.cdist, which that task refuses."""
    import torch

    from app.api.sessions import AnswerIn
    from evaluators.code.forbidden import find_forbidden

    (example,) = AnswerIn.model_fields["code"].examples or []
    task = next(q for q in bank if q.id == "pairwise-distances").code
    assert find_forbidden(example, task.forbidden) is None
    namespace: dict = {}
    exec(example, namespace)  # our own text; it did not import torch either (a NameError)
    x, y = torch.randn(5, 3, dtype=torch.float64), torch.randn(7, 3, dtype=torch.float64)
    assert torch.allclose(namespace["pairwise_distances"](x, y), torch.cdist(x, y))


def test_a_probe_and_a_cache_buster_are_not_refused_for_their_query_parameters(alice):
    """A monitor adding a cache-buster to /healthz got a 422 and marked a healthy server down (review s50)."""
    assert alice.get("/healthz", params={"nocache": "1"}).status_code == 200
    assert alice.get("/readyz", params={"t": "123"}).status_code in (200, 503)
    assert alice.get("/v1/sessions", params={"limit": 1, "_": "1732800000"}).status_code == 200
    assert alice.get("/v1/questions", params={"limit": 1, "_": "1"}).status_code == 422  # the route's own check stays


@pytest.mark.parametrize("path, body", [
    ("/v1/grade", '{"question_id": "zero-grad", "answer": "x \\ud83d"}'),
    ("/v1/grade", '{"question": "Why \\udc00?", "reference_answer": "Because.", "answer": "x"}'),
    ("/v1/grade", '{"question": "Why?", "reference_answer": ["Because.", "For \\ud800"], "answer": "x"}'),
    ("/v1/grade/batch", '{"items": [{"question_id": "zero-grad", "answer": "fine"},'
                        ' {"question_id": "zero-grad", "answer": "cut \\ud83d"}]}'),
    ("/v1/code/check", '{"question_id": "pairwise-distances", "code": "x = \'\\ud83d\'"}'),
])
def test_half_a_surrogate_pair_is_a_422_naming_the_field(alice, path, body):
    """A JavaScript client cutting a string inside an emoji sends a lone surrogate: not text, so not a 500
    from the tokenizer, the serialiser or the database."""
    reply = alice.post(path, content=body.encode(), headers={"Content-Type": "application/json"})
    detail = assert_problem(reply, 422)["detail"]
    assert "half of a UTF-16 surrogate pair" in detail and any(f in detail for f in ("answer", "question", "code"))


def test_a_lone_surrogate_in_an_answer_is_refused_before_anything_runs(alice):
    created = alice.post("/v1/sessions", json={"topics": ["tensors"], "num_questions": 1}).json()
    reply = alice.post(f"/v1/sessions/{created['id']}/answers", content=b'{"text": "Views \\ud83d share", "turn": 0}',
                       headers={"Content-Type": "application/json"})
    assert assert_problem(reply, 422)["detail"].startswith("invalid text: holds half of a UTF-16 surrogate pair")
    assert alice.get(f"/v1/sessions/{created['id']}").json()["transcript"][0]["action"] is None


def test_the_documented_examples_name_questions_the_bank_has(tmp_path, bank):
    schema = create_app(Settings(data_dir=tmp_path)).openapi()
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "question_id" and isinstance(value, str):
                    found.append(value)  # inside an example body
                elif key == "question_id" and isinstance(value, dict):
                    found.extend(value.get("examples", []))  # a field's own examples
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    found.extend(schema["components"]["schemas"]["QuestionSummary"]["properties"]["id"]["examples"])
    assert len(found) >= 4 and set(found) <= {q.id for q in bank}


def test_unexpected_errors_are_a_generic_500_problem(api, alice):
    def broken() -> None:
        raise RuntimeError("secret path /etc/something")

    api.app.dependency_overrides[deps.get_engine] = broken
    client = TestClient(api.app, raise_server_exceptions=False, headers=api.as_user("alice"))
    body = assert_problem(client.post("/v1/sessions", json={}), 500)
    assert "secret" not in body["detail"]


def test_a_database_outage_is_a_503_to_retry(api, alice):
    from sqlalchemy.exc import OperationalError

    def down(*args, **kwargs):
        raise OperationalError("SELECT 1", {}, Exception("connection refused"))

    api.repo.list_sessions = down  # what a PostgreSQL restart looks like to a request
    client = TestClient(api.app, raise_server_exceptions=False, headers=api.as_user("alice"))
    reply = client.get("/v1/sessions")
    body = assert_problem(reply, 503)
    assert body["detail"] == "the database is not reachable right now; try again shortly"
    assert reply.headers["retry-after"] == "5" and "refused" not in reply.text


def test_probes(api):
    assert api.client.get("/healthz").json() == {"status": "ok"}
    ready = api.client.get("/readyz").json()
    assert ready["status"] == "ready" and set(ready["checks"]) == {"database", "chroma", "runner"}
    assert ready["step_within_s"] == 60.0  # offline: the engine's own bound on a step


def test_readyz_reports_how_long_a_step_may_take_with_the_configured_model(tmp_path, ingested_store, bank, scorer):
    """The web app reads it to wait for an answer judged by a slow local model (143 s; it gave up at 60 s)."""
    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer, llm_base_url="http://127.0.0.1:9/v1",
                    llm_model="m", llm_timeout_s=180, llm_max_retries=0)
    body = api.client.get("/readyz").json()
    assert body["step_within_s"] == 3 * 180 + 30  # judge, follow-up and feedback wording at the timeout, and slack


def test_readyz_says_when_the_model_server_is_down_or_refuses_the_key(tmp_path, ingested_store, bank, scorer):
    """It said ready, "interviewer": "llm" with the model server dead; answers then fell back one by one (review
    s56). The API stays ready (it works offline), and the model's state says what to fix."""
    from tests.fake_openai import FakeOpenAI

    dead = build_api(tmp_path / "dead", store=ingested_store, bank=bank, scorer=scorer,
                     llm_base_url="http://127.0.0.1:18949/v1", llm_model="m")
    body = dead.client.get("/readyz").json()
    assert body["model"]["ok"] is False and "unreachable" in body["model"]["detail"]
    with FakeOpenAI(models=["fake-chat"]) as server:
        up = build_api(tmp_path / "up", store=ingested_store, bank=bank, scorer=scorer,
                       llm_base_url=server.base_url, llm_model="fake-chat")
        assert up.client.get("/readyz").json()["model"] == {"ok": True, "detail": "reachable"}
        other = build_api(tmp_path / "other", store=ingested_store, bank=bank, scorer=scorer,
                          llm_base_url=server.base_url, llm_model="not-served")
        assert "INTERVIEWER_LLM_MODEL" in other.client.get("/readyz").json()["model"]["detail"]
    assert "model" not in {k for k, v in build_api(tmp_path / "off", store=ingested_store, bank=bank,
                                                        scorer=scorer).client.get("/readyz").json().items() if v}


def test_probes_and_every_get_route_answer_head_as_get_without_a_body(api):
    """Monitors and link checkers send HEAD: /healthz and /readyz answered it 405 (review s50)."""
    for path in ("/healthz", "/readyz"):
        got, head = api.client.get(path), api.client.head(path)
        assert (head.status_code, head.content) == (got.status_code, b"")
        assert head.headers["content-length"] == got.headers["content-length"] != "0"
    alice = api.as_user("alice")
    assert api.client.head("/v1/sessions", headers=alice).status_code == 200
    assert api.client.head("/v1/sessions").status_code == 401  # as GET: the key first
    assert api.client.head("/v1/grade", headers=alice).status_code == 405  # a POST route stays one
    assert "HEAD" in api.client.post("/healthz").headers["allow"]


def test_a_get_route_added_to_the_app_later_answers_head_too(api):
    """HEAD was added to the routes of the app's own routers when it was made, by changing FastAPI's copies of
    them: a GET route added afterwards (an embedding program's) answered HEAD 405."""
    @api.app.get("/extra/{name}")
    def extra(name: str) -> dict[str, str]:
        return {"name": name}

    @api.app.get("/extra-stream")
    def extra_stream() -> StreamingResponse:
        return StreamingResponse(iter([b"one,", b"two"]), media_type="text/csv", headers={"X-Rows": "2"})

    got, head = api.client.get("/extra/x"), api.client.head("/extra/x")
    assert (head.status_code, head.content, head.headers["content-length"]) == (200, b"", got.headers["content-length"])
    head = api.client.head("/extra-stream")
    assert (head.status_code, head.content, head.headers["x-rows"]) == (200, b"", "2")
    assert api.client.delete("/extra/x").headers["allow"] == "GET, HEAD"


def test_head_is_not_documented_as_a_second_operation_of_each_get(tmp_path, recwarn):
    schema = create_app(Settings(data_dir=tmp_path)).openapi()
    assert not [path for path, operations in schema["paths"].items() if "head" in operations]
    assert "get" in schema["paths"]["/healthz"]
    assert not [w for w in recwarn if "Operation ID" in str(w.message)]


def test_readyz_names_what_is_not_ready(tmp_path, ingested_store, bank, scorer):
    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer, with_runner=False)

    class EmptyStore:
        def count(self) -> int:
            return 0

    api.app.dependency_overrides[deps.get_store] = EmptyStore
    body = assert_problem(api.client.get("/readyz"), 503)
    assert not body["checks"]["chroma"]["ok"] and "ingest" in body["checks"]["chroma"]["detail"]
    assert not body["checks"]["runner"]["ok"] and body["checks"]["database"]["ok"]


def test_readyz_is_503_until_the_start_up_warm_up_ends(api):
    """Ready means the first candidate is served at full speed: indexing and warm-up come first."""
    import threading

    api.app.state.warm_up = threading.Event()
    body = assert_problem(api.client.get("/readyz"), 503)
    assert body["checks"]["warm_up"] == {"ok": False, "detail": "running"} and body["checks"]["chroma"]["ok"]
    api.app.state.warm_up.set()
    ready = api.client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["warm_up"] == "done"


def test_openapi_documents_every_endpoint_and_problem_bodies(tmp_path):
    schema = create_app(Settings(data_dir=tmp_path)).openapi()
    paths = schema["paths"]
    for path in [
        "/v1/sessions",
        "/v1/sessions/{session_id}",
        "/v1/sessions/{session_id}/answers",
        "/v1/sessions/{session_id}/hint",
        "/v1/sessions/{session_id}/skip",
        "/v1/sessions/{session_id}/repeat",
        "/v1/sessions/{session_id}/dont-know",
        "/v1/sessions/{session_id}/report",
        "/v1/sessions/{session_id}/draft",
        "/v1/questions",
        "/v1/questions/{question_id}",
        "/v1/grade",
        "/v1/grade/batch",
        "/v1/code/check",
        "/v1/me/progress",
        "/healthz",
        "/readyz",
    ]:
        assert path in paths, path
    error = paths["/v1/sessions"]["post"]["responses"]["422"]["content"]
    assert list(error) == ["application/problem+json"]
    assert paths["/v1/sessions"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    assert "HTTPBearer" in schema["components"]["securitySchemes"]


def test_every_v1_route_documents_the_503_a_warming_or_stopping_server_answers(tmp_path):
    """A route that searches the question index waits for it while serve warms up, then answers 503 with Retry-After
    (app/api/deps.py); only the session create and answer routes said so, so a client generated from the document
    (and the fuzzer's status check) met an undocumented 503 on hint, skip, questions and the rest."""
    paths = create_app(Settings(data_dir=tmp_path)).openapi()["paths"]
    undocumented = [f"{method.upper()} {path}" for path, item in paths.items() if path.startswith("/v1/")
                    for method, operation in item.items() if "503" not in operation["responses"]]
    assert not undocumented, undocumented
    hint = paths["/v1/sessions/{session_id}/hint"]["post"]["responses"]["503"]
    assert list(hint["content"]) == ["application/problem+json"] and "starting" in hint["description"]


def test_every_route_documents_the_422_an_unknown_query_parameter_gets(tmp_path):
    """Review s54: GET /v1/me/progress?topic=zzz answers 422 (the app-wide query check), which its document left out
    (200, 401, 503 only), so a client generated from it did not model the error."""
    app = create_app(Settings(data_dir=tmp_path, auth_disabled=True))
    paths = app.openapi()["paths"]
    undocumented = [f"{method.upper()} {path}" for path, item in paths.items() if path not in ("/healthz", "/readyz")
                    for method, operation in item.items() if "422" not in operation["responses"]]
    assert not undocumented, undocumented
    # Review2 s54: the probes were said to answer it, which they never do (a monitor's cache-buster is no error).
    assert all("422" not in paths[probe]["get"]["responses"] for probe in ("/healthz", "/readyz"))
    client = TestClient(app)
    assert client.get("/healthz", params={"x": "1"}).status_code == 200
    progress = paths["/v1/me/progress"]["get"]["responses"]["422"]
    assert list(progress["content"]) == ["application/problem+json"] and "query parameter" in progress["description"]


def test_cors_is_off_unless_configured(tmp_path):
    preflight = {"Origin": "https://ui.example", "Access-Control-Request-Method": "POST"}
    closed = TestClient(create_app(Settings(data_dir=tmp_path)))
    assert "access-control-allow-origin" not in closed.options("/v1/sessions", headers=preflight).headers
    open_ = TestClient(create_app(Settings(data_dir=tmp_path, cors_origins=["https://ui.example"])))
    response = open_.options("/v1/sessions", headers=preflight)
    assert response.headers["access-control-allow-origin"] == "https://ui.example"
    # A browser front end keeps its candidate's draft with PUT; the admin DELETE stays server to server.
    put = open_.options("/v1/sessions/x/draft", headers={**preflight, "Access-Control-Request-Method": "PUT"})
    delete = open_.options("/v1/admin/users/u/keys/k", headers={**preflight, "Access-Control-Request-Method": "DELETE"})
    assert put.status_code == 200 and delete.status_code == 400


def test_a_nul_character_is_a_422_before_anything_is_stored(alice):
    created = alice.post("/v1/sessions", json={"topics": ["tensors"], "num_questions": 1}).json()
    reply = alice.post(f"/v1/sessions/{created['id']}/answers", json={"text": "Views \u0000 share storage", "turn": 0})
    assert assert_problem(reply, 422)["detail"].startswith("invalid text: holds a NUL character")


def test_health_answers_while_every_thread_of_the_pool_is_busy(tmp_path):
    """Sync routes share one pool of threads: 45 grades held on a slow model took all of it and /healthz waited
    38 s behind them."""
    import threading

    import anyio
    import anyio.to_thread
    import httpx

    app = create_app(Settings(data_dir=tmp_path / "data"))
    release = threading.Event()

    async def probe() -> httpx.Response:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = 2  # this event loop's pool, kept small
        async with anyio.create_task_group() as busy:
            for _ in range(2):
                busy.start_soon(anyio.to_thread.run_sync, release.wait)
            await anyio.wait_all_tasks_blocked()
            try:
                with anyio.fail_after(5):
                    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
                        return await c.get("/healthz")
            finally:
                release.set()

    assert anyio.run(probe).json() == {"status": "ok"}


def test_grades_held_on_a_slow_model_leave_threads_for_the_rest_of_the_api(tmp_path, ingested_store, bank, scorer):
    """45 grades held on a slow model took all 40 threads of the pool, and GET /v1/questions waited 35 s."""
    import threading
    from functools import partial

    import anyio
    import anyio.to_thread
    import httpx

    release = threading.Event()
    held = HeldScorer(scorer, release)
    # One user's four grades at once: their own cap is out of the way here (it has a test of its own).
    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=held, grading_in_flight=4)
    api.app.dependency_overrides[deps.get_evaluator] = lambda: held

    async def probe() -> httpx.Response:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 4  # this event loop's pool, kept small
        transport = httpx.ASGITransport(app=api.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=api.as_user("alice")) as c:
            async with anyio.create_task_group() as grades:
                for i in range(4):
                    grades.start_soon(partial(c.post, "/v1/grade", json={"question_id": "zero-grad",
                                                                          "answer": f"grads add up {i}"}))
                try:
                    with anyio.fail_after(10):
                        while held.held < 3:
                            await anyio.sleep(0.01)
                        listed = await c.get("/v1/questions", params={"per_page": 1})
                finally:
                    release.set()
        return listed

    assert anyio.run(probe).status_code == 200


def test_a_body_sent_slowly_holds_no_slot_of_the_slow_routes(tmp_path, ingested_store, bank, scorer):
    """A slot was taken before the body was read (or the key checked): 30 connections sending a POST /v1/grade
    body a byte at a time, with no key, kept every other grade and session action waiting for good."""
    import anyio
    import anyio.to_thread
    import httpx

    api = build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer)
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/grade", "raw_path": b"/v1/grade", "root_path": "", "query_string": b"",
             "headers": [(b"content-type", b"application/json"), (b"content-length", b"1000")],
             "client": ("127.0.0.1", 1), "server": ("t", 80)}

    async def probe() -> httpx.Response:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 4  # 3 slots for the slow routes
        gone = anyio.Event()
        parts = iter([{"type": "http.request", "body": b"{", "more_body": True}])

        async def trickle() -> dict:
            part = next(parts, None)
            if part is not None:
                return part
            await gone.wait()  # the rest of the body never comes; then the client leaves
            return {"type": "http.disconnect"}

        async def ignore(message: dict) -> None:
            pass

        async def slow_client() -> None:
            with contextlib.suppress(Exception):
                await api.app(dict(scope), trickle, ignore)

        async with anyio.create_task_group() as slow:
            for _ in range(3):
                parts = iter([{"type": "http.request", "body": b"{", "more_body": True}])
                slow.start_soon(slow_client)
                await anyio.wait_all_tasks_blocked()
            try:
                with anyio.fail_after(10):
                    transport = httpx.ASGITransport(app=api.app)
                    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                        return await c.post("/v1/grade", json={"question_id": "zero-grad", "answer": "grads add up"},
                                            headers=api.as_user("alice"))
            finally:
                gone.set()

    assert anyio.run(probe).status_code == 200


def test_a_chunked_body_past_the_cap_is_still_a_413_on_the_slow_routes(api):
    def chunks():
        for _ in range(40):
            yield b" " * (1 << 20)

    reply = api.client.post("/v1/grade", content=chunks(), headers={**api.as_user("alice"),
                                                                    "Content-Type": "application/json"})
    assert_problem(reply, 413)


def test_a_body_that_is_not_utf8_says_what_to_send_and_a_long_id_is_not_echoed_whole(alice):
    created = alice.post("/v1/sessions", json={"topics": ["tensors"], "num_questions": 1}).json()
    reply = alice.post(f"/v1/sessions/{created['id']}/answers", content=b'{"text": "caf\xe9", "turn": 0}',
                       headers={"Content-Type": "application/json"})
    assert assert_problem(reply, 400)["detail"] == "the request body could not be read: send JSON encoded as UTF-8"
    long_id = "x" * 5000
    detail = assert_problem(alice.get(f"/v1/sessions/{long_id}"), 404)["detail"]
    assert len(detail) < 200 and "(5000 characters)" in detail
    detail = assert_problem(alice.get(f"/v1/questions/{long_id}"), 404)["detail"]
    assert len(detail) < 200


@pytest.mark.parametrize(("body", "said"), [
    ('{"answer": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests arrays or objects too deeply"),
    ('{"question_id": "zero-grad", "answer": "x", "turn": ' + "9" * 5000 + "}", "a number of more than 4300 digits"),
])
def test_a_utf8_body_json_cannot_read_is_not_told_to_send_utf8(alice, body, said):
    """Both were "the request body could not be read: send JSON encoded as UTF-8", to a body that was UTF-8."""
    detail = assert_problem(alice.post("/v1/grade", content=body, headers={"Content-Type": "application/json"}),
                            400)["detail"]
    assert said in detail and "UTF-8" not in detail


def test_empty_code_to_check_is_a_400(alice, bank):
    task = next(q for q in bank if q.code)
    reply = alice.post("/v1/code/check", json={"question_id": task.id, "code": "  \n"})
    assert assert_problem(reply, 400)["detail"] == "code is empty: send the code to check"
