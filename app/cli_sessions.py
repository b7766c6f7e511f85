"""`interviewer sessions` and `interviewer report`: the terminal's own sessions, which one to resume, and reports."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Column, Table

from app.cli_output import console, emit_json, err
from app.cli_user import UserOption, as_user
from app.config import LOCAL_USER
from app.errors import ConflictError, NotFoundError, UserFacingError, no_session

# Report formats by name, and as a file's extension names them (`--output report.pdf`).
FORMAT_NAMES = {"md": "markdown", "markdown": "markdown", "html": "html", "htm": "html", "pdf": "pdf", "json": "json"}


def resume_command(session_id: str, user: str = LOCAL_USER) -> str:
    return f"interviewer interview --resume {session_id}{as_user(user)}"


SHORT_ID = 4  # the fewest characters read as the start of an id, as git reads a short commit id
SHOWN_ID = 8  # as the app shows a session's id and names its report files


def full_session_id(repo: Any, user_id: int, given: str) -> str:
    """The session id `given` names: itself, or the one of the user's session ids that starts with it (the app
    shows ids by their first 8 characters, and names report files by them). Several is one line naming them; none
    is `given`, for the caller's "no session" line."""
    if repo.get_session(given, user_id) is not None:
        return given
    if len(given) < SHORT_ID:
        raise UserFacingError(f"{no_session(given)}; name a session by its id or its first {SHOWN_ID} characters")
    # Ids are lower-case hex; SQLite's LIKE ignores case and PostgreSQL's does not, so both read the start alike.
    found = repo.session_ids_starting(given.lower(), user_id, limit=4)
    if len(found) > 1:
        some = f"{len(found)}" if len(found) < 4 else "more than 3"
        raise UserFacingError(f"{given!r} starts {some} session ids ({', '.join(found[:3])}); give more of the id")
    return found[0] if found else given


def session_to_resume(repo: Any, user_id: int, given: str | None, user: str = LOCAL_USER) -> Any:
    """The session `given` names, or the user's latest one still going; a UserFacingError saying why there is none
    to resume."""
    also = as_user(user)
    if not given:
        latest = repo.list_sessions(user_id, status="active", limit=1)
        if not latest:
            raise UserFacingError(f"no paused session to resume{_of(user)}: start one with "
                                  f"`interviewer interview{also}`, or list {_whose(user)} with "
                                  f"`interviewer sessions{also}`")
        return latest[0]
    given = full_session_id(repo, user_id, given)
    session = repo.get_session(given, user_id)
    if session is None:
        raise UserFacingError(f"{no_session(given)}; list {_whose(user)} with `interviewer sessions{also}`")
    if session.status == "completed":
        raise UserFacingError(f"session {given} is completed; see its report with `interviewer report {given}{also}`")
    return session


def unfinished_note(repo: Any, user_id: int, user: str = LOCAL_USER) -> str | None:
    """Said when a new session starts while others wait: each `:quit` left one more, with no word of them."""
    waiting = repo.list_sessions(user_id, status="active")
    if not waiting:
        return None
    return (f"You have {len(waiting)} unfinished session(s): `interviewer interview --resume{as_user(user)}` continues "
            f"the latest ({waiting[0].id}), `interviewer sessions{as_user(user)}` lists them.")


def _of(user: str) -> str:
    return "" if user == LOCAL_USER else f" for user {user!r}"


def _whose(user: str) -> str:
    return "yours" if user == LOCAL_USER else f"those of user {user!r}"


def stored_report(repo: Any, session_id: str, user_id: int, settings: Any, user: str = LOCAL_USER) -> Any:
    """The session's report as the API builds it; a ConflictError for an interview-mode one still going (its scores
    are kept until it ends: app/reports/ready.py, the API's rule)."""
    from app.reports import build_report
    from app.reports.ready import require_report_ready
    from knowledge.loader import bank_index

    session = repo.get_session(session_id, user_id)
    if session is None:
        raise _not_theirs(session_id, user)
    require_report_ready(session, how_to_go_on=f"continue it with `{resume_command(session_id, user)}`")
    return build_report(session=session, turns=repo.turns(session_id), bank=bank_index(settings.bank_dir))


def _not_theirs(session_id: str, user: str) -> NotFoundError:
    """The API's words for a session not found, and whom the terminal acted as: another user's session is refused
    as one that does not exist, and --user is how to name its owner."""
    return NotFoundError(f"{no_session(session_id)}; this looked among the sessions of user {user!r} "
                         "(--user or INTERVIEWER_USER names another)")


def print_report(out: Console, repo: Any, session_id: str, user_id: int, settings: Any,
                 user: str = LOCAL_USER) -> None:
    """The report at the end of a terminal session, or why there is none yet."""
    try:
        report = stored_report(repo, session_id, user_id, settings, user)
    except ConflictError:
        from app.reports.ready import REPORT_WAITS

        out.print(f"{REPORT_WAITS[0].upper()}{REPORT_WAITS[1:]}.")
        return
    out.print(terminal_report(report))


def terminal_report(report: Any) -> Markdown:
    """The Markdown report, its contracts reflowed as the in-session panel shows them: the bank breaks its prose
    near 95 characters, and a terminal wrapping those lines again at its own width left a line of a word or two
    after each (the Markdown file keeps them: its code blocks are not wrapped). A model answer needs nothing: its
    prose is Markdown paragraphs there, which the terminal wraps, and its code a fenced block."""
    from app.reports import render
    from app.reports.wording import reflowed

    def each_paragraph_a_line(text: str | None) -> str | None:
        return reflowed(text) if text else text

    # The model answer's prose is already Markdown paragraphs there (the terminal wraps them), its code a fence.
    questions = [entry.model_copy(update={"contract": each_paragraph_a_line(entry.contract)})
                 for entry in report.questions]
    body, _ = render(report.model_copy(update={"questions": questions}), "markdown")
    return Markdown(body.decode("utf-8"))


def _terminal_user(repo: Any, name: str = LOCAL_USER) -> int | None:
    """The id of the user the terminal acts as: by default `local`, the user an auth-disabled server acts as too
    (so the app's History lists the terminal's sessions and the terminal resumes the app's), else --user, an API
    key's user; None before their first session (reading creates none)."""
    user = repo.user_named(name)
    return None if user is None else int(user.id)


def sessions(
    active: Annotated[bool, typer.Option("--active", help="Only the sessions still going (to resume).")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="How many, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (as GET /v1/sessions).")] = False,
    user: UserOption = LOCAL_USER,
) -> None:
    """Your terminal sessions, newest first: which to resume (`interview --resume ID`) or report on."""
    from app.api.schemas import session_summary
    from app.config import get_settings
    from app.services import repository_for

    repo = repository_for(get_settings())
    user_id = _terminal_user(repo, user)
    rows = [] if user_id is None else repo.list_sessions(user_id, status="active" if active else None, limit=limit)
    summaries = [session_summary(s) for s in rows]
    if as_json:
        emit_json([s.model_dump(mode="json") for s in summaries])
        return
    if not summaries:
        err.print(f"No sessions{' still going' if active else ''} for user {user!r}: start one with "
                  f"`interviewer interview{as_user(user)}`.", soft_wrap=True)
        return
    # Ids as the app shows them, by their start, which `report` and `--resume` take: whole, a table of 32-character
    # ids was cut with "…" at 80 columns, and a cut id names nothing (`--json` gives them whole).
    table = Table(Column("session", no_wrap=True), "started (UTC)", "mode", "done", "status", box=None)
    for s in summaries:
        table.add_row(s.id[:SHOWN_ID], s.created_at.strftime("%Y-%m-%d %H:%M"), s.mode,
                      f"{s.answered} of {s.num_questions}", s.status)
    out = console()
    out.print(table)
    if any(s.status == "active" for s in summaries):
        out.print(f"Resume one with `interviewer interview --resume SESSION{as_user(user)}`; report on one with "
                  f"`interviewer report SESSION{as_user(user)}`.", style="dim")


def report(
    session_id: Annotated[str, typer.Argument(
        help="The session's id or its start, as the app shows it (`interviewer sessions` lists them).")],
    fmt: Annotated[str | None, typer.Option(
        "--format", help="md, html, pdf or json; by default, as --output's extension says, else shown here.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="The file to write it to.")] = None,
    user: UserOption = LOCAL_USER,
) -> None:
    """A session's report, shown here or written in a format (as GET /v1/sessions/{id}/report renders it)."""
    from app.config import get_settings
    from app.reports import render
    from app.services import repository_for

    chosen = _format(fmt, output)
    settings = get_settings()
    repo = repository_for(settings)
    user_id = _terminal_user(repo, user)
    if user_id is None:
        raise _not_theirs(session_id, user)
    session_id = full_session_id(repo, user_id, session_id)
    built = stored_report(repo, session_id, user_id, settings, user)
    if chosen is None:
        console().print(terminal_report(built))
        return
    if output is None and chosen == "pdf" and sys.stdout.isatty():
        raise UserFacingError("a PDF is binary: write it to a file with --output FILE")
    body, _ = render(built, chosen)
    if output is None:
        sys.stdout.buffer.write(body)
        return
    try:
        output.write_bytes(body)
    except OSError as exc:
        raise UserFacingError(f"--output {output} cannot be written ({exc.strerror})") from None
    err.print(f"Report written to {output}.")


def _format(given: str | None, output: Path | None) -> str | None:
    """The format asked for, else the one --output's extension names; None to show the report here."""
    if given is not None:
        if given.lower() not in FORMAT_NAMES:
            raise UserFacingError(f"--format {given!r} is not one of md, html, pdf, json")
        return FORMAT_NAMES[given.lower()]
    if output is None:
        return None
    by_extension = FORMAT_NAMES.get(output.suffix.lower().lstrip("."))
    if by_extension is None:
        raise UserFacingError(f"--output {output.name} names no format by its extension: add --format md, html, pdf "
                              "or json")
    return by_extension


def register(app: typer.Typer) -> None:
    app.command()(sessions)
    app.command()(report)
