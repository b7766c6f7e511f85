"""Dependencies: the per-process components on app.state, the caller, and request limits.

Every component is reached through a function here, so tests swap any of them with
`app.dependency_overrides[get_engine] = ...` without building the real thing.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, get_args, get_origin

from fastapi import Depends, HTTPException, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.api.ratelimit import InFlightLimit, SlidingWindowLimiter, SlotsUnavailable
from app.config import LOCAL_USER, Settings
from app.errors import echoed, no_session
from app.store.records import UserRecord
from app.text_input import not_text
from knowledge.schema import Question
from knowledge.vectorstore import QuestionStore

log = logging.getLogger(__name__)
bearer = HTTPBearer(
    auto_error=False,
    description="An API key from `interviewer keys create --name NAME`, "
    "sent as `Authorization: Bearer <key>`.",
)


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_repo(request: Request) -> Any:
    return request.app.state.repo


def get_store(request: Request) -> QuestionStore:
    return _after_indexing(request, "store")


def get_bank(request: Request) -> dict[str, Question]:
    return request.app.state.bank


def get_engine(request: Request) -> Any:
    return _after_indexing(request, "engine")


def _after_indexing(request: Request, name: str) -> Any:
    """A component that searches the question index, once the warm-up has brought the index in line with the bank
    (a fresh data directory is indexed then): a search meanwhile would pick from part of the bank. Waits a while,
    then a 503 with Retry-After (StillWarming). A probe never waits: GET /readyz says the index is not ready."""
    warmup = getattr(request.app.state, "warmup", None)
    if warmup is not None and request.url.path not in PROBES:
        warmup.part("questions").wait()
    return getattr(request.app.state, name)


def get_evaluator(request: Request) -> Any:
    return request.app.state.evaluator


def get_runner(request: Request) -> Any | None:
    """The sandboxed code runner, or None when the sandbox cannot run on this machine. While it still starts, its
    warm-up Part: a route waits for it (app.warmup.settle) only when it is about to run code, so an answer in words
    is never held up by the sandbox."""
    if hasattr(request.app.state, "runner"):  # given by a test or an embedding program
        return request.app.state.runner
    warmup = getattr(request.app.state, "warmup", None)
    if warmup is None:
        return None
    sandbox = warmup.part("sandbox")
    return sandbox.value if sandbox.ready else sandbox


def get_code_limiter(request: Request) -> SlidingWindowLimiter:
    return request.app.state.code_limiter


def get_grading_limit(request: Request) -> InFlightLimit:
    return request.app.state.grading_limit


SettingsDep = Annotated[Settings, Depends(get_settings)]
RepoDep = Annotated[Any, Depends(get_repo)]
StoreDep = Annotated[QuestionStore, Depends(get_store)]
BankDep = Annotated[dict[str, Question], Depends(get_bank)]
EngineDep = Annotated[Any, Depends(get_engine)]
EvaluatorDep = Annotated[Any, Depends(get_evaluator)]
RunnerDep = Annotated[Any | None, Depends(get_runner)]
LimiterDep = Annotated[SlidingWindowLimiter, Depends(get_code_limiter)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def owned_session(repo: Any, session_id: str, user_id: int) -> Any:
    """The user's session of that id; 404 for another user's, as for none."""
    session = repo.get_session(session_id, user_id)
    if session is None:
        raise no_session(session_id)
    return session


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


def current_user(
    request: Request, settings: SettingsDep, repo: RepoDep, credentials: Credentials
) -> UserRecord:
    """The key's owner; with auth disabled, the single local user."""
    if settings.auth_disabled:
        _require_loopback_peer(request)
        cached = getattr(request.app.state, "local_user", None)
        if cached is None:
            cached = request.app.state.local_user = repo.get_or_create_user(LOCAL_USER)
        refuse_unknown_query(request)
        return cached
    if credentials is None:
        raise _unauthorized(_why_no_key(request))
    user = repo.user_for_key(credentials.credentials)
    if user is None:
        if credentials.credentials[:1] in ('"', "'", "<"):  # the README's `Bearer <key>` copied with its brackets
            raise _unauthorized("invalid API key: send the key itself, without quotes or angle brackets")
        raise _unauthorized("invalid or revoked API key; create a new one with `interviewer keys create`")
    refuse_unknown_query(request)
    return user


def _why_no_key(request: Request) -> str:
    """What a request without a Bearer key sent instead, and what to send."""
    send = "send `Authorization: Bearer <key>`"
    scheme, _, rest = request.headers.get("authorization", "").strip().partition(" ")
    if scheme and not rest.strip() and scheme.lower() != "bearer":
        # One word is a key without its scheme: never echoed back as a "scheme" (it was, whole, in the 401).
        return f"the Authorization header holds one word and no scheme (the key alone?); {send}"
    if scheme and scheme.lower() != "bearer":  # "Token KEY", "Basic ...": the key may be right, not the scheme
        return f"the Authorization header uses the {echoed(scheme, 20)} scheme; {send}"
    if "x-api-key" in request.headers:
        return f"this server does not read X-API-Key; {send}"
    return f"missing API key: {send} (create one with `interviewer keys create --name NAME`)"


def _require_loopback_peer(request: Request) -> None:
    # `serve` refuses a public bind with auth off; this catches a server started some other way.
    # Peers without an IP (unix sockets, the in-process test client) are local by construction.
    host = request.client.host if request.client else None
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return
    if not address.is_loopback:
        raise HTTPException(
            403, "authentication is disabled on this server, so it only serves loopback clients"
        )


UserDep = Annotated[UserRecord, Depends(current_user)]


def require_admin(request: Request, settings: SettingsDep, credentials: Credentials) -> None:
    """The admin routes answer only INTERVIEWER_ADMIN_KEY; without one set they are not there at all."""
    admin_key = settings.admin_key.get_secret_value()
    if not admin_key:
        raise HTTPException(404, "the admin routes are off on this server: set INTERVIEWER_ADMIN_KEY to turn them on")
    if credentials is None:
        raise _unauthorized("send the server's admin key as `Authorization: Bearer <INTERVIEWER_ADMIN_KEY>`")
    # Compared in constant time, so the response time says nothing about how much of a guess matched.
    if not hmac.compare_digest(credentials.credentials.encode(), admin_key.encode()):
        raise _unauthorized("that is not the server's admin key (a candidate's API key is no admin key)")
    refuse_unknown_query(request)


def require_size(value: str | None, limit: int, what: str) -> None:
    """413 for an over-long field, with the limit, so the client knows what to cut."""
    if value is not None and len(value) > limit:
        raise HTTPException(413, f"{what} is {len(value)} characters; the limit is {limit}")


def _busy(what: str, limit: InFlightLimit, advice: str) -> HTTPException:
    """429 for a user who has as many runs going as allowed: the caller retries once one has finished."""
    return HTTPException(429, f"{limit.in_flight} {what} of yours are still running; {advice}",
                         headers={"Retry-After": "2"})


@contextmanager
def _counting() -> Iterator[None]:
    """A limits folder that cannot be written said as the server's fault (503, logged with its path)."""
    try:
        yield
    except SlotsUnavailable as exc:
        log.error("per-user run limits cannot be kept: %s (make the data directory writable)", exc)
        raise HTTPException(503, "the server cannot count your running requests: its data directory cannot be "
                                 "written; tell the server's operator (the cause is in its log)") from None


def grading_slot(user: UserDep, limit: Annotated[InFlightLimit, Depends(get_grading_limit)]) -> Iterator[None]:
    """Holds one of the user's grading runs for the request (INTERVIEWER_GRADING_IN_FLIGHT); 429 past them."""
    with _counting():
        started = limit.start(user.id)
    if not started:
        raise _busy("grading request(s)", limit, "send this one when they finish (a POST /v1/grade/batch grades "
                    "up to 100 answers in one request)")
    try:
        yield
    finally:
        limit.finish(user.id)


@contextmanager
def code_check_slot(user: UserRecord, limiter: SlidingWindowLimiter) -> Iterator[Callable[[], None]]:
    """A function that takes one sandbox run for the user, called once the run is certain: 429 while as many
    of the user's runs as allowed are still going, or past the rate, with the seconds to wait. The run is let
    go on leaving."""
    taken = False

    def take() -> None:
        nonlocal taken
        with _counting():
            if not limiter.start(user.id):
                raise _busy("code check(s)", limiter, "send this one when they finish")
            taken = True  # let go on leaving, whatever follows
            wait = limiter.acquire(user.id)
        if wait is not None:
            raise HTTPException(
                429,
                f"too many code checks: the limit is {limiter.limit} per {limiter.window_s:g} s; "
                f"retry in {math.ceil(wait)} s",
                headers={"Retry-After": str(math.ceil(wait))},
            )

    try:
        yield take
    finally:
        if taken:
            limiter.finish(user.id)


# Monitors and load balancers add their own parameters to a probe (a cache-buster): a 422 there would mark a
# healthy server down. "_" is the cache-buster browsers' HTTP libraries add (jQuery's `cache: false`).
PROBES = frozenset({"/healthz", "/readyz"})
_CACHE_BUSTERS = frozenset({"_"})


async def known_query_only(request: Request) -> None:
    """Refuse query parameters the route does not take, as unknown body fields are (422 naming them): an
    ignored `?limit=-1` or `?offset=20` gives the first page back as if it were what was asked for. Applied
    to every route in one place (app/main.py). A route that needs a key is checked by its key's check, once
    the key is good: a caller without one is told that (401), not the route's parameters. Async, so it runs
    on the event loop: a sync dependency takes a worker thread, and /healthz must answer while every thread
    is busy."""
    route = request.scope.get("route")
    if isinstance(route, APIRoute) and route.path not in PROBES and not _needs_key(route):
        refuse_unknown_query(request)


def refuse_unknown_query(request: Request) -> None:
    """422 naming the query parameters the request's route does not take, and listing those it does; and one
    given twice where it takes one value (`?limit=1&limit=50` answered with the last, without a word)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = _query_names(route)
    if unknown := sorted(set(request.query_params) - set(known) - _CACHE_BUSTERS):
        taken = ", ".join(sorted(known)) or "none"
        names = ", ".join(echoed(name) for name in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        # `?turn=3` on POST .../answers, as hint and skip take it: "takes: none" alone sent the caller looking.
        in_body = [name for name in unknown if name in _body_fields(route)]
        where = f"; {', '.join(map(repr, in_body))} goes in the JSON body here" if in_body else ""
        raise HTTPException(422, f"unknown query parameter{'s' if len(unknown) > 1 else ''} {names}; "
                                 f"this endpoint takes: {taken} (see /docs){where}")
    for name, takes_many in sorted(known.items()):
        if not takes_many and len(values := request.query_params.getlist(name)) > 1:
            raise HTTPException(422, f"query parameter {name!r} is given {len(values)} times; it takes one value")
        # What a body's text may not hold (a NUL: app/text_input.py) a query's may not either: `?q=%00` was searched
        # for (200) where the same text in a body is a 422 (review s55). Percent-decoding makes bytes that are not
        # UTF-8 U+FFFD, so no lone surrogate gets this far.
        for value in request.query_params.getlist(name):
            if why := not_text(value):
                raise HTTPException(422, f"invalid query.{name}: {why}")


def _needs_key(route: APIRoute) -> bool:
    return any(dependant.call in (current_user, require_admin) for dependant in _dependants(route.dependant))


def _dependants(dependant: Dependant) -> Iterator[Dependant]:
    yield dependant
    for sub in dependant.dependencies:
        yield from _dependants(sub)


def _query_names(route: APIRoute) -> dict[str, bool]:
    """The query parameters a route takes, its dependencies' included, each with whether it takes a list of
    values (a walk of a few objects a request)."""
    return {param.alias: _is_list(param.field_info.annotation)
            for dependant in _dependants(route.dependant) for param in dependant.query_params}


def _body_fields(route: APIRoute) -> set[str]:
    """The fields of the JSON body a route reads (its model's)."""
    models = [param.field_info.annotation for param in route.dependant.body_params]
    return {name for model in models for name in getattr(model, "model_fields", {})}


def _is_list(annotation: Any) -> bool:
    return any(get_origin(part) in (list, set, tuple, frozenset) for part in (annotation, *get_args(annotation)))
