"""Whom the terminal acts as: the one `--user` (or INTERVIEWER_USER) of `interview`, `sessions`, `report` and `keys`.

Only typer at import: `interviewer --help` must not load the store (SQLAlchemy) for an option it does not use.
"""

from __future__ import annotations

from typing import Annotated

import typer

from app.errors import BadOptionError, UserFacingError

# The user an auth-disabled server acts as (app.api.deps.LOCAL_USER, kept apart so that this module imports no
# API), so the terminal's history and the local app's are one.
DEFAULT_USER = "local"


def user_name(value: str) -> str:
    """--user held to the rule `keys create --user` holds a new user to (app.store.accounts), as a usage error (exit
    2): a name no key could be made for would be a terminal-only user. The store is imported here, not at start."""
    from app.store.accounts import valid_user_name

    try:
        return valid_user_name(value)
    except UserFacingError as exc:
        raise BadOptionError(f"--user (or INTERVIEWER_USER): {exc}") from None


# With API keys on, a candidate's sessions belong to their key's user: the terminal acts as that user to list, resume
# and report them and to keep one no-repeat history and one level, and `keys` makes and lists that user's keys.
UserOption = Annotated[str, typer.Option(
    "--user", envvar="INTERVIEWER_USER", callback=user_name, show_envvar=True,
    help="Whom to act as: your API key's user (made by `keys create --user`), whose sessions, history and keys these "
         "are; by default `local`, the user of a server with authentication off.")]


def as_user(user: str) -> str:
    """The --user to add to a command we suggest, when it is not the default."""
    return "" if user == DEFAULT_USER else f" --user {user}"
