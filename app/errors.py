"""Errors the edges (CLI, API) show to people as one clear line, never a traceback."""

from __future__ import annotations


class UserFacingError(Exception):
    """A problem the user can fix; the message says how."""


class BadOptionError(UserFacingError):
    """A command-line option's or argument's value refused by a rule of the domain (a user name, a task id that is
    no code task): one line like any error here, with the exit code of a usage error (2), not click's usage block."""

    exit_code = 2


class NotFoundError(UserFacingError):
    """The named resource does not exist (or belongs to someone else)."""


def echoed(value: object, limit: int = 80) -> str:
    """A client's id quoted back in an error, cut short: a 5,000-character id was echoed whole in its 404."""
    text = str(value)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def no_session(session_id: object) -> NotFoundError:
    """One wording wherever a session id finds nothing: a client cannot tell "not yours" from "not there"."""
    return NotFoundError(f"no session {echoed(session_id)} (it does not exist or belongs to someone else)")


class ConflictError(UserFacingError):
    """The request is valid but not in the resource's current state."""


class ChoiceOutdatedError(ConflictError):
    """A question was chosen for a user who has been asked another since (in another session, maybe in another
    process): the choice did not see that one and may repeat it. Choosing again resolves it."""


def domain_errors() -> tuple[type[BaseException], ...]:
    """Every error type whose message is meant for the user."""
    from pydantic import ValidationError

    from knowledge.errors import BankError, SearchError

    found: list[type[BaseException]] = [UserFacingError, BankError, SearchError, ValidationError]
    try:
        from ingest.documents import DocumentError

        found.append(DocumentError)
    except ImportError:
        pass
    try:
        from evaluators.code.errors import RunnerError

        found.append(RunnerError)
    except ImportError:
        pass
    return tuple(found)


def one_line(exc: BaseException) -> str:
    """A message on one line; pydantic's multi-line reports are shortened to their first error."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        return f"invalid {where}: {first['msg'].removeprefix('Value error, ')}"
    return " ".join(str(exc).split())
