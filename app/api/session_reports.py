"""A session's report, as JSON, Markdown, HTML or PDF: chosen by `format`, else by the Accept header."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request, Response
from pydantic import BeforeValidator

from app.api.deps import BankDep, RepoDep, UserDep, owned_session
from app.api.head import headers_only
from app.api.problems import problem_responses
from app.errors import echoed
from app.reports import Report, build_report, content_disposition, media_type, render
from app.reports.ready import require_report_ready

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=problem_responses(401, 422))

REPORT_TYPES = {
    "json": "application/json",
    "markdown": "text/markdown",
    "html": "text/html",
    "pdf": "application/pdf",
}
# What integrators guess beside the names above: `md`, and any case (`PDF`); both were a 422. The schema lists `md`;
# JSON Schema has no case-blind enum, so the description says it.
FORMAT_ALIASES = {"md": "markdown"}
ReportFormat = Annotated[
    Literal["json", "markdown", "md", "html", "pdf"] | None,
    BeforeValidator(lambda value: value.lower() if isinstance(value, str) else value),
    Query(description="Overrides the Accept header; `md` is `markdown`, and case is ignored (`PDF`)"),
]
# The JSON form's schema is the Report model's (`model` in the route's responses); the others are text or bytes.
REPORT_CONTENT: dict[str, Any] = {
    "text/markdown": {"schema": {"type": "string"}},
    "text/html": {"schema": {"type": "string"}},
    "application/pdf": {"schema": {"type": "string", "format": "binary"}},
}
# A weight, RFC 9110 12.4.2: 0 to 1 with at most three decimals; also ".2" for 0.2, as the JDK's HttpURLConnection
# sends by default ("text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"): refused, every Java client got a 400.
QVALUE = re.compile(r"0?\.[0-9]{1,3}|0|1(\.0{0,3})?|0\.")


@router.get(
    "/{session_id}/report",
    response_class=Response,
    responses={
        200: {"description": "The report", "model": Report, "content": REPORT_CONTENT},
        **problem_responses(400, 404, 406, 409),
    },
)
def report(
    session_id: str,
    request: Request,
    user: UserDep,
    repo: RepoDep,
    bank: BankDep,
    format: ReportFormat = None,
) -> Response:
    """The session's report as JSON, Markdown, HTML or PDF (by `format`, else by Accept; an Accept weight that is
    not 0 to 1 with at most three decimals is a 400)."""
    fmt = FORMAT_ALIASES.get(format, format) if format else negotiate(request.headers.get("accept", ""))
    session = owned_session(repo, session_id, user.id)
    require_report_ready(session)
    # Chosen by the Accept header: a cache keeps one copy per Accept, not the PDF for a JSON client.
    headers = {"Vary": "Accept", "Content-Disposition": content_disposition(session.id, fmt)}
    if headers_only(request):  # a HEAD: the report is not built (a PDF takes 0.15-1 s), so no Content-Length
        reply = Response(media_type=media_type(fmt), headers=headers)
        del reply.headers["content-length"]  # "0" would say the report is empty
        return reply
    body, media = render(build_report(session=session, turns=repo.turns(session_id), bank=bank), fmt)
    return Response(content=body, media_type=media, headers=headers)


def negotiate(accept: str) -> str:
    """The report format the Accept header weighs highest (RFC 9110 12.5.1): each format weighed by the most
    specific range that covers it, a tie going to the range listed first, then to JSON, Markdown, HTML, PDF in
    that order; JSON when the header is empty."""
    ranges = _media_ranges(accept)
    if not ranges:
        return "json"
    weighed = []
    for order, (fmt, media) in enumerate(REPORT_TYPES.items()):
        specificity = {media: 2, f"{media.split('/')[0]}/*": 1, "*/*": 0}
        covering = [(specificity[r], -position, q) for r, q, position in ranges if r in specificity]
        if covering:
            # `application/pdf;q=0, */*` refuses the PDF, whatever `*/*` takes.
            _, before, q = max(covering)
            if q > 0:
                weighed.append((-q, -before, order, fmt))
    if not weighed:
        raise HTTPException(406, f"cannot produce {echoed(accept)}; accepted: {', '.join(REPORT_TYPES.values())}")
    return min(weighed)[-1]


def _media_ranges(accept: str) -> list[tuple[str, float, int]]:
    """(media range, weight, position) of each entry of an Accept header; empty entries are skipped, as the list
    syntax allows them (RFC 9110 5.6.1). A weight that is not one is a 400: read as any value, it would choose
    the format the client did not mean."""
    ranges = []
    for position, item in enumerate(accept.split(",")):
        media, *params = (part.strip() for part in item.split(";"))
        if not media:
            continue
        weight = "1"
        for name, _, value in (param.partition("=") for param in params):
            if name.strip().lower() == "q":
                weight = value.strip()
        if not QVALUE.fullmatch(weight):
            raise HTTPException(400, f"the Accept header's entry {echoed(item.strip())} has the weight "
                                     f"{echoed(weight)}: a weight is q=0 to q=1 with at most three decimals "
                                     "(RFC 9110 12.4.2); or choose the report's form with ?format=")
        # A bare "*" (the JDK's default again) is read as the "*/*" it means.
        ranges.append(("*/*" if media == "*" else media.lower(), float(weight), position))
    return ranges
