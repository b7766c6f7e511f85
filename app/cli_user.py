"""Whom the terminal acts as: the one `--user` (or INTERVIEWER_USER) of `interview`, `sessions`, `report` and `keys`.

Only typer and app.config (which `interviewer` loads anyway) at import: `interviewer --help` must not load the store
(SQLAlchemy) for an option it does not use.
"""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from app.config import LOCAL_USER  # the terminal's user without --user, the one a keyless local server acts as
from app.errors import BadOptionError, UserFacingError


def user_name(value: str) -> str:
    """--user as the store names it. A user who exists is named as stored, even one kept from before the naming rule
    ("my laptop"), whose sessions and keys would otherwise be out of the terminal's reach; a new name is held to the
    rule the store creates users by (app.store.accounts), refused as a usage error (exit 2): a name no admin route
    could reach. The store is opened only for a name the rule refuses, and imported here, not at start."""
    from app.store.accounts import valid_user_name

    try:
        return valid_user_name(value)
    except UserFacingError as exc:
        refused = exc
    stored = _stored_user(value) if value.strip() else None
    if stored is not None:
        return stored
    raise BadOptionError(f"--user (or INTERVIEWER_USER): {refused}") from None


def _stored_user(name: str) -> str | None:
    """The stored name of the user `name` names, if there is one (reading creates none)."""
    from app.config import get_settings
    from app.services import repository_for

    settings = get_settings()
    if not settings.database_url and not settings.sqlite_path.exists():
        return None  # a fresh data directory holds no user yet, and asking must not create its database
    try:
        user = repository_for(settings).user_named(name)
    except UserFacingError:  # a database that is down: the name's own error is the one to tell
        return None
    return None if user is None else str(user.name)


# With API keys on, a candidate's sessions belong to their key's user: the terminal acts as that user to list, resume
# and report them and to keep one no-repeat history and one level, and `keys` makes and lists that user's keys.
UserOption = Annotated[str, typer.Option(
    "--user", envvar="INTERVIEWER_USER", callback=user_name, show_envvar=True,
    help="Whom to act as: your API key's user (made by `keys create --user`), whose sessions, history and keys these "
         "are; by default `local`, the user of a server with authentication off.")]


def as_user(user: str) -> str:
    """The --user to add to a command we suggest, when it is not the default; quoted for the shell when a name kept
    from before the naming rule needs it ("my laptop")."""
    return "" if user == LOCAL_USER else f" --user {shlex.quote(user)}"
