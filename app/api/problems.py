"""Every error leaves the API in one shape: RFC 9457 problem details (application/problem+json)."""

from __future__ import annotations

import logging
import re
import sys
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.exc import DataError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.api.deps import PROBES
from app.api.head import headers_only
from app.api.text_json import TextJSONResponse
from app.errors import ConflictError, NotFoundError, UserFacingError, domain_errors, echoed, one_line
from app.store.accounts import ACCOUNT_NAME, ACCOUNT_NAME_RULE
from app.warmup import StillWarming
from evaluators.base import EvaluatorStopped

log = logging.getLogger(__name__)
PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "https://github.com/torch-interviewer/problems/"


class Problem(BaseModel):
    """RFC 9457 problem details; `errors` lists the fields at fault on validation errors."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(examples=[TYPE_BASE + "not-found"])
    title: str = Field(examples=["Not Found"])
    status: int = Field(ge=400, le=599, examples=[404])
    detail: str = Field(examples=["no session 'b9f1c2' (it does not exist or belongs to someone else)"])
    errors: list[dict[str, Any]] | None = None


def problem(status: int, detail: str, *, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    """A problem+json response; `type` is derived from the status so clients can switch on it."""
    phrase = HTTPStatus(status).phrase
    body = {
        "type": TYPE_BASE + phrase.lower().replace(" ", "-").replace("'", ""),
        "title": phrase,
        "status": status,
        "detail": detail,
        **extra,
    }
    return TextJSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def status_for(exc: BaseException) -> int:
    """The HTTP status a domain error means; the one place this mapping lives."""
    from evaluators.code.errors import SandboxUnavailable
    from knowledge.errors import BankError

    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, SandboxUnavailable | BankError):
        return 503  # the server, not the client, must be fixed
    if isinstance(exc, ValidationError):
        return 422
    return 400


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).description
    if exc.status_code == 404 and detail == "Not Found":
        detail = "no such endpoint; see /docs for the API"
    elif exc.status_code == 400 and detail == "There was an error parsing the body":
        # FastAPI's words for a body it could not decode, which say nothing to change; the cause says what to.
        detail = _unreadable_body(exc.__cause__)
    elif exc.status_code == 405 and detail == "Method Not Allowed":
        # Starlette's Allow names the methods of the first route of the path only ("POST" for /v1/sessions, whose GET
        # is another route): the header and the detail list them all.
        allowed = ", ".join(_allowed_methods(request))
        headers = {**dict(exc.headers or {}), "Allow": allowed}
        # A HEAD reaches the routes as a GET (app/api/head.py): the reply names the method the client sent, not
        # "does not accept 'GET'" on a route whose GET is as refused as its HEAD.
        sent = "HEAD" if headers_only(request) else request.method
        return problem(405, f"this endpoint does not accept {echoed(sent)}; it takes: {allowed}", headers=headers)
    return problem(exc.status_code, detail, headers=dict(exc.headers or {}))


def _allowed_methods(request: Request) -> list[str]:
    """The methods some route of the request's path takes (asked only of a 405)."""
    def taken(method: str) -> bool:
        return any(route.matches({**request.scope, "method": method})[0] == Match.FULL
                   for route in request.app.router.routes)

    # HEAD wherever GET is taken: app/api/head.py answers it, outside the routes.
    return [method for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
            if taken("GET" if method == "HEAD" else method)]


def _unreadable_body(cause: BaseException | None) -> str:
    """Why a JSON body could not be read, as what to change: "send UTF-8" was the answer to every cause, also to
    a body in UTF-8 that nests too deeply for the parser or holds an integer of more digits than Python reads."""
    if isinstance(cause, RecursionError):
        return "the request body nests arrays or objects too deeply to read; send a flatter JSON document"
    if isinstance(cause, ValueError) and not isinstance(cause, UnicodeError) and "digits" in str(cause):
        return (f"the request body holds a number of more than {sys.get_int_max_str_digits()} digits, which is "
                "read as no number; send a shorter one")
    return "the request body could not be read: send JSON encoded as UTF-8"


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # Only where and what: echoing `input` back could return a whole oversized body.
    errors = [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "msg": _message(e),
            "type": str(e.get("type", "")),
        }
        for e in exc.errors()
    ]
    first = _headline(errors) if errors else {"loc": [], "msg": "invalid request"}
    if first.get("type") == "json_invalid":  # its location is a character offset, not a field
        return problem(422, f"the request body is not valid JSON (at character {first['loc'][-1]})", errors=errors)
    where = ".".join(p for p in first["loc"] if p != "body" and not _TYPE_BRANCH.match(p)) or "request"
    if first["loc"][:1] == ["query"] and first.get("type") == "missing":  # hint, skip: a turn in a body is not read
        name = first["loc"][-1]
        return problem(422, f"missing query parameter {name!r}: send it in the URL (?{name}=...)", errors=errors)
    if first.get("type") == "extra_forbidden":
        return problem(422, f"unknown field '{where}'; see /docs for this endpoint's fields", errors=errors)
    return problem(422, f"invalid {where}: {first['msg']}", errors=errors)


# A pattern's rule in words: "String should match pattern '^[\\w@+-][\\w.@+-]*$'" is no message for an integrator.
_PATTERN_RULES = {ACCOUNT_NAME: ACCOUNT_NAME_RULE}

def _message(error: Any) -> str:
    """A validation error's message; a pattern's rule in words where it has them."""
    pattern = (error.get("ctx") or {}).get("pattern")
    rule = _PATTERN_RULES.get(pattern) if isinstance(pattern, str) else None
    return rule or str(error.get("msg", "")).removeprefix("Value error, ")


# A field that takes one of several types (a string, or a list of strings) fails once per type, each
# failure's location tagged with its type: "reference_answer.str", "reference_answer.list[str].0".
_TYPE_BRANCH = re.compile(r"^(str|int|float|bool|list\[.*\]|dict\[.*\])$")


def _headline(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The failure `detail` names. Of a field's failures per type, the one of the type the client sent:
    the one that is not "not of this type" (an empty list: "should have at least 1 item"), else the
    deepest ("reference_answer.0: should be a valid string"), not the first ("should be a valid string"
    said of a list)."""
    field = errors[0]["loc"][:2]
    same = [e for e in errors if e["loc"][:2] == field]
    return max(same, key=lambda e: (not e["type"].endswith("_type"), len(e["loc"])))


async def _domain_error(_request: Request, exc: Exception) -> JSONResponse:
    return problem(status_for(exc), one_line(exc))


async def _database_unavailable(_request: Request, exc: Exception) -> JSONResponse:
    # The connection failed or the database is locked: the server's state, and worth retrying.
    log.warning("database unavailable: %s", " ".join(str(getattr(exc, "orig", exc)).split())[:200])
    return problem(503, "the database is not reachable right now; try again shortly", headers={"Retry-After": "5"})


async def _stopping(_request: Request, _exc: Exception) -> JSONResponse:
    # The server was told to stop while it graded: nothing of the request is kept, and it can be sent again as is.
    return problem(503, "the server is stopping, so this request was given up unfinished and nothing of it was kept; "
                        "send it again once the server is back")


async def _still_warming(_request: Request, exc: Exception) -> JSONResponse:
    # A part the request needs is still being built after start-up (app/warmup.py): the client comes back shortly.
    assert isinstance(exc, StillWarming)
    return problem(503, str(exc), headers={"Retry-After": str(exc.retry_after_s)}, waiting_for=[exc.part])


async def _unstorable(_request: Request, exc: Exception) -> JSONResponse:
    # A value of the request the database refuses (PostgreSQL: a NUL in a path, a text past its column).
    log.warning("database refused a value: %s", " ".join(str(getattr(exc, "orig", exc)).split())[:200])
    return problem(400, "the request holds a value the database cannot store (a NUL character, or one too long)")


async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
    # The traceback goes to the log, never to the client (it may name paths or settings).
    log.exception("unhandled error: %s", type(exc).__name__)
    return problem(500, "the server failed on this request; the error was logged")


def install(app: FastAPI) -> None:
    """Route every error type through the problem shape."""
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    for error_type in domain_errors():
        if issubclass(error_type, Exception):
            app.add_exception_handler(error_type, _domain_error)
    app.add_exception_handler(UserFacingError, _domain_error)
    app.add_exception_handler(EvaluatorStopped, _stopping)
    app.add_exception_handler(StillWarming, _still_warming)
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(DataError, _unstorable)
    app.add_exception_handler(Exception, _unexpected)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route can return (rewritten to problem+json)."""
    return {status: {"model": Problem, "description": HTTPStatus(status).phrase} for status in statuses}


UNAVAILABLE = ("Service Unavailable: the server is still starting (the question index), is stopping, or cannot reach "
               "its database; nothing of the request was kept, and Retry-After, where sent, says when to send it again")


UNKNOWN_QUERY = ("Unprocessable Content: a query parameter this route does not take, or one given twice where it "
                 "takes one value; the message names them")


def use_problem_media_type(schema: dict[str, Any]) -> dict[str, Any]:
    """Document every 4xx/5xx body as application/problem+json, FastAPI's own 422 included."""
    problem_ref = {"$ref": "#/components/schemas/Problem"}
    for name, path in schema.get("paths", {}).items():
        for operation in path.values():
            if "requestBody" in operation:  # app.main refuses a body that is not JSON, and any may be too large
                for status in (413, 415):
                    operation["responses"].setdefault(str(status), {"description": HTTPStatus(status).phrase})
            if name.startswith("/v1/"):  # any route: a server still indexing, stopping, or without its database
                operation["responses"].setdefault("503", {"description": UNAVAILABLE})
            if name not in PROBES:  # the app-wide check of the query (deps.known_query_only), which spares probes
                operation["responses"].setdefault("422", {"description": UNKNOWN_QUERY})
            for status, response in operation.get("responses", {}).items():
                if status.isdigit() and int(status) >= 400:
                    response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": problem_ref}}
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Problem", Problem.model_json_schema(ref_template="#/components/schemas/{model}"))
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    return schema
