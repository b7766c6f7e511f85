"""One entry point for every output format: `render(report, fmt)` gives the body and its media type."""

from __future__ import annotations

from collections.abc import Callable

from app.reports.html_doc import render_html
from app.reports.markdown_doc import render_markdown
from app.reports.model import Report
from app.text_input import as_text_throughout


def _json(report: Report) -> bytes:
    return report.model_dump_json(indent=2).encode()


def _pdf(report: Report) -> bytes:
    # Imported on use: reportlab is only needed by whoever asks for a PDF.
    from app.reports.pdf_doc import render_pdf

    return render_pdf(report)


RENDERERS: dict[str, tuple[Callable[[Report], bytes], str]] = {
    "json": (_json, "application/json"),
    "markdown": (lambda r: render_markdown(r).encode(), "text/markdown; charset=utf-8"),
    "html": (lambda r: render_html(r).encode(), "text/html; charset=utf-8"),
    "pdf": (_pdf, "application/pdf"),
}
FORMATS = tuple(RENDERERS)
# How a browser or `curl -OJ` keeps each format: HTML and JSON are read where they open (inline), Markdown and PDF
# are files to keep (attachment); either way under a name (the UI's download buttons use the same one).
SAVED_AS = {"json": ("json", "inline"), "markdown": ("md", "attachment"), "html": ("html", "inline"),
            "pdf": ("pdf", "attachment")}


def render(report: Report, fmt: str) -> tuple[bytes, str]:
    """The report in `fmt` (json, markdown, html or pdf) and the media type to serve it with."""
    renderer, media = _renderer(fmt)
    return renderer(_as_text(report)), media


def _as_text(report: Report) -> Report:
    """The report with half a surrogate pair (and NUL) in any of its text shown as U+FFFD. A session stored before
    input was checked can hold one in a check's message or a submission's output, and UTF-8 cannot encode it: every
    format of its report, the API's and the CLI's, failed. Here, once for every format; the stored row is kept."""
    return Report.model_validate(as_text_throughout(report.model_dump()))


def media_type(fmt: str) -> str:
    """The media type a report in `fmt` is served with."""
    return _renderer(fmt)[1]


def _renderer(fmt: str) -> tuple[Callable[[Report], bytes], str]:
    try:
        return RENDERERS[fmt.lower()]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; choose one of: {', '.join(FORMATS)}") from None


def content_disposition(session_id: str, fmt: str) -> str:
    """The Content-Disposition of a session's report in `fmt`: whether to show or save it, and its file name."""
    extension, disposition = SAVED_AS[fmt.lower()]
    return f'{disposition}; filename="interview-report-{session_id[:8]}.{extension}"'
