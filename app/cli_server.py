"""`interviewer serve` and `interviewer keys create|list|revoke`."""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
from typing import Annotated, Any

import typer

from app.cli_output import console
from app.cli_user import UserOption, as_user
from app.config import LOCAL_USER
from app.errors import BadOptionError, NotFoundError, UserFacingError

# A key opens its user's account: `keys create --user` makes the user on first use (as `interview --user` does).
keys_app = typer.Typer(help="API keys: create (shown once), list, revoke.", no_args_is_help=True)


def is_loopback(host: str) -> bool:
    """True when every address `host` resolves to is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def serve(
    host: Annotated[
        str, typer.Option(help="Address to bind; keep 127.0.0.1 unless API keys are on.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Worker processes.")] = 1,
) -> None:
    """Run the HTTP API with uvicorn."""
    import uvicorn

    from app.config import get_settings

    settings = get_settings()
    if settings.auth_disabled and not is_loopback(host):
        raise UserFacingError(
            f"refusing to bind {host} with INTERVIEWER_AUTH_DISABLED=true: anyone who can reach it would act "
            "as you. Bind 127.0.0.1, or turn authentication on and create keys with `interviewer keys create`"
        )
    from app.cli_output import open_bank_search
    from app.services import repository_for, store_for

    # Here rather than in each worker: a Chroma server or a database that is down is one line before anything
    # starts. One worker indexes a fresh or changed bank itself once it listens (GET /readyz says so meanwhile);
    # several are given an index in line with the bank first, so that they never index it at the same time.
    repository_for(settings)
    from app.said_once import handed_to_workers, noting
    from knowledge.loader import cached_bank

    with noting("knowledge.loader") as said:  # a pack's warning, said here once, not again by each worker
        cached_bank(settings.bank_dir)  # a broken pack is one line here, not a start-up traceback (parsed once: kept)
    # Closed before serving: the app opens its own (each worker its own).
    if workers > 1:
        open_bank_search(settings).close()
    else:
        with store_for(settings) as store:
            store.count()
    # One worker is this process, whose bank stays parsed: only separate workers parse it (and would warn) again.
    with handed_to_workers(said if workers > 1 else []):
        uvicorn.run(
            "app.main:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            proxy_headers=False,
            server_header=False,
        )


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option("--name", help="A label for the key, unique per user.")],
    user: UserOption = LOCAL_USER,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"name", "key"}.')] = False,
) -> None:
    """Create a key and print it once; only its hash is stored."""
    if not name.strip():
        raise BadOptionError("--name cannot be empty")  # a usage error: exit 2
    repo = _repo()
    plaintext, record = repo.create_api_key(repo.get_or_create_user(user).id, name)
    if as_json:
        sys.stdout.write(json.dumps({"name": record.name, "key": plaintext}) + "\n")
        return
    sys.stdout.write(plaintext + "\n")
    console(stderr=True).print(
        f"Key {record.name!r} for user {user!r}. It is shown only this once; send it as "
        "`Authorization: Bearer <key>`."
    )


@keys_app.command("list")
def keys_list(
    user: UserOption = LOCAL_USER,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The user's keys (name, prefix, created, revoked); never the keys themselves."""
    repo = _repo()
    rows = [
        {
            "name": k.name,
            "prefix": k.prefix,
            "created_at": k.created_at.isoformat(),
            "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
        }
        for k in _keys_of(repo, user)
    ]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    out = console()
    if not rows:
        out.print(f"No keys for user {user!r}; create one with `interviewer keys create --name NAME{as_user(user)}`.",
                  soft_wrap=True)
    for row in rows:
        state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
        out.print(f"{row['name']}  {row['prefix']}…  created {row['created_at']}  {state}")


@keys_app.command("revoke")
def keys_revoke(
    name: Annotated[str, typer.Option("--name", help="The key's name.")],
    user: UserOption = LOCAL_USER,
) -> None:
    """Revoke a key at once; requests with it get 401 from then on."""
    repo = _repo()
    owner = repo.user_named(user)  # reading or revoking creates no user (a mistyped --user made one)
    if owner is None or not repo.revoke_api_key(owner.id, name):
        raise NotFoundError(f"user {user!r} has no active key named {name!r} "
                            f"(see `interviewer keys list{as_user(user)}`)")
    console(stderr=True).print(f"Revoked key {name!r} of user {user!r}.")


def _keys_of(repo: Any, user: str) -> list[Any]:
    """The user's keys; none for a user not stored yet, who is not made by looking (a mistyped --user was)."""
    owner = repo.user_named(user)
    return [] if owner is None else list(repo.list_api_keys(owner.id))


def _repo() -> Any:
    from app.config import get_settings
    from app.services import repository_for

    return repository_for(get_settings())


def register(app: typer.Typer) -> None:
    """Attach `serve` and the `keys` group to the root command."""
    app.command()(serve)
    app.add_typer(keys_app, name="keys")
