"""The FastAPI application factory: `uvicorn --factory app.main:create_app` or `interviewer serve`."""

from __future__ import annotations

from app.api.startup import stop_ends_the_import, stops_heard, unless_stopped

# Uvicorn imports this module before it starts the app, and takes a SIGTERM or SIGINT meanwhile as a request to stop
# once the app has started: a worker told to stop went on importing these (seconds of CPU) and building its
# components first. Within this block the stop ends the process at once, however uvicorn was started.
with stop_ends_the_import():
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager
    from typing import Any

    from fastapi import Depends, FastAPI, HTTPException
    from fastapi.middleware.cors import CORSMiddleware
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from app.api import (
        admin,
        code,
        deps,
        drafts,
        grading,
        health,
        problems,
        progress,
        questions,
        session_reports,
        sessions,
    )
    from app.api.head import HeadAsGet
    from app.api.ratelimit import InFlightLimit, SlidingWindowLimiter
    from app.api.slow_routes import SlowRouteLimit
    from app.api.text_json import TextJSONResponse
    from app.config import Settings, get_settings
    from app.said_once import drop_said

COMPONENTS = ("repo", "store", "bank", "evaluator", "runner", "engine")


def build_components(settings: Settings) -> dict[str, Any]:
    """The long-lived parts, built once per process: database, bank, store, scorer, engine, and the warm-up that
    builds the slow ones (the question index, the embeddings, the code sandbox) once the server listens."""
    from app.services import (
        code_runner_for,
        embedder_for,
        engine_for,
        evaluator_for,
        repository_for,
        store_for,
        sync_index,
        warm_scoring,
    )
    from app.warmup import Part, Warmup, settle
    from knowledge.embeddings import MiniLMEmbedder
    from knowledge.loader import bank_index

    repo = repository_for(settings)
    store = store_for(settings)
    evaluator = evaluator_for(settings)  # one scorer, one cache, for sessions and /v1/grade alike
    embedder = embedder_for(settings)
    if isinstance(embedder, MiniLMEmbedder):  # requests overlap here (see knowledge/embeddings.py)
        if settings.server_embedding == "runners":
            embedder.serve_concurrent_callers()
        else:
            embedder.use_own_threads()
    bank = bank_index(settings.bank_dir)
    # The sandbox last: only a code answer needs it, and its workers (torch each) would slow the first question.
    sandbox = Part("sandbox", lambda: code_runner_for(settings), doing="the code sandbox is still starting",
                   close=lambda runner: runner.close())
    # The engine asks for the runner at the first code answer; the routes have waited for it by then.
    engine = engine_for(settings, repo=repo, store=store, runner=lambda: settle(sandbox), evaluator=evaluator)
    warmup = Warmup([
        Part("questions", lambda: sync_index(store, settings),
             doing="the question bank is still being indexed (first start on this data directory)"),
        Part("embeddings", lambda: warm_scoring(evaluator, bank, engine)),
        sandbox,
    ]).start()
    return {
        "repo": repo,
        "store": store,
        "bank": bank,
        "evaluator": evaluator,
        "engine": engine,
        "warmup": warmup,
        "warm_up": warmup.done,  # set once every part has ended (GET /readyz, tests)
    }


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Components already on app.state (set by a test or an embedding program) are kept as given.
    built: dict[str, Any] = {}
    mine: list[str] = []  # what this start set on app.state, taken off at its end so that a restart builds it anew
    if not all(hasattr(app.state, name) for name in COMPONENTS):
        # Told to stop meanwhile: nothing is built, and uvicorn stops the server without serving.
        built = await unless_stopped(lambda: build_components(app.state.settings)) or {}
        for name, value in built.items():
            if not hasattr(app.state, name):
                setattr(app.state, name, value)
                mine.append(name)
    # A stop gives up the model calls under way (judging answers 503, a wording takes the template): uvicorn waits for
    # every request before it stops.
    warmup = built.get("warmup")

    def stopping() -> None:
        _give_up(app.state)
        if warmup is not None:  # nothing more is built, and requests waiting for a part are let go
            warmup.stop(close=False)  # the sandbox is closed once the requests using it have ended (below)

    try:
        with stops_heard(stopping):
            yield
    finally:
        if warmup is not None:
            warmup.stop()  # closes the sandbox's workers, now or as soon as they are started
        # A stopped warm-up kept on app.state was what a second start (a test client entered again) served: /readyz
        # waited for its sandbox for ever, and a code answer got a 503.
        for name in mine:
            delattr(app.state, name)


def _give_up(state: Any) -> None:
    """Tell the evaluator and the engine (its phrasing) to give up their work: the server is stopping."""
    for name in ("evaluator", "engine"):
        if callable(stop := getattr(getattr(state, name, None), "stop", None)):
            stop()


class BodySizeLimit:
    """413 for request bodies past a byte cap, before anything parses them.

    Field limits (characters of an answer or of code) are checked in the routes with exact
    messages; this outer cap only stops a client from making the server buffer a huge body.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, *, batches: dict[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.batches = batches or {}  # path -> its own cap: a batch of answers holds many of them

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.batches.get(scope["path"], self.max_bytes)
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"")
        sends_body = declared not in (b"", b"0") or b"transfer-encoding" in headers
        if sends_body and (unsupported := _unsupported_body(headers, scope["method"])):
            await problems.problem(415, unsupported)(scope, receive, send)
            return
        if declared.isdigit() and int(declared) > cap:
            await problems.problem(413, self._detail(scope["path"], cap))(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > cap:
                raise HTTPException(413, self._detail(scope["path"], cap))
            return message

        await self.app(scope, counted, send)

    def _detail(self, path: str, cap: int) -> str:
        advice = "send fewer items per request" if path in self.batches else "shorten the answer or code"
        return f"the request body is larger than {cap} bytes; {advice}"


def _unsupported_body(headers: dict[bytes, bytes], method: str) -> str | None:
    """Why a body is not one this API reads (a 415), or None."""
    media = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if method in ("POST", "PUT", "PATCH") and not _json_media(media):
        # Every body this API reads is JSON: a form post (curl -d) or text/plain is told so, not given a 422
        # about "a valid dictionary".
        return (f"send the body as JSON with Content-Type: application/json (it came as "
                f"{media.decode('latin-1') or 'no content type'})")
    encoding = headers.get(b"content-encoding", b"identity").strip().lower()
    if encoding != b"identity":  # a gzipped body was told "send JSON encoded as UTF-8", which it was
        return (f"this server does not take compressed bodies (Content-Encoding: {encoding.decode('latin-1')[:20]}); "
                "send the JSON uncompressed")
    return None


def _json_media(media: bytes) -> bool:
    return media == b"application/json" or media.startswith(b"application/") and media.endswith(b"+json")


def create_app(settings: Settings | None = None) -> FastAPI:
    """A configured application; components are built at startup unless already on app.state."""
    settings = settings or get_settings()
    drop_said("knowledge.loader")  # a worker of `serve --workers N`: the bank's warning was said once, by `serve`
    app = FastAPI(
        title="PyTorch mock interviewer",
        version="1.0.0",
        description="Practice PyTorch and deep-learning interviews: sessions with follow-ups, rubric "
        "scoring, sandboxed code checks and reports. Authenticate with `Authorization: Bearer <key>`.",
        lifespan=lifespan,
        dependencies=[Depends(deps.known_query_only)],
        # Not FastAPI's own encoder: text stored before input was checked must not fail a read (app/api/text_json).
        default_response_class=TextJSONResponse,
    )
    app.state.settings = settings
    slots = settings.data_dir / "run-slots"  # shared by the server's workers: see app/api/ratelimit.py
    app.state.code_limiter = SlidingWindowLimiter(settings.code_checks_per_minute, window_s=60.0, slots_dir=slots,
                                                  name="code-check", in_flight=settings.code_checks_in_flight)
    app.state.grading_limit = InFlightLimit(settings.grading_in_flight, slots_dir=slots, name="grading")
    problems.install(app)
    for module in (sessions, session_reports, drafts, questions, grading, code, progress, health, admin):
        app.include_router(module.router)
    # JSON escapes can take up to 12 bytes per character (surrogate pairs), hence the factor. A grading
    # batch holds up to MAX_BATCH items and as many examples, each answer in the limit: at 4 bytes per
    # character (any UTF-8 text), a full batch of full-length answers fits.
    app.add_middleware(SlowRouteLimit)  # innermost: a request refused for its size takes no slot
    app.add_middleware(
        BodySizeLimit, max_bytes=max(1 << 20, 12 * (settings.max_answer_chars + settings.max_code_chars)),
        batches={"/v1/grade/batch": 2 * grading.MAX_BATCH * 4 * settings.max_answer_chars + (1 << 20)},
    )
    app.add_middleware(HeadAsGet)  # outside the routing it stands in for: see app/api/head.py
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            # PUT for a browser front end keeping its candidate's draft (PUT /v1/sessions/{id}/draft). No DELETE,
            # on purpose: the one DELETE is an admin route, called server to server (the admin key must never be in
            # a browser's page), so no browser origin is let send it.
            allow_methods=["GET", "POST", "PUT"],
            allow_headers=["Authorization", "Content-Type", "Accept"],
            expose_headers=["Retry-After", "Link"],  # Link: the next page of GET /v1/sessions
        )
    _document_problems(app)
    return app


def _document_problems(app: FastAPI) -> None:
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = problems.use_problem_media_type(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
