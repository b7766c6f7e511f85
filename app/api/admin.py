"""Accounts for integrators: create a candidate with a key, rotate and revoke keys, over HTTP.

Guarded by INTERVIEWER_ADMIN_KEY (see deps.require_admin). A key's plaintext is in the reply that makes it
and nowhere else: the store keeps its hash, as for keys made with `interviewer keys create`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Response
from pydantic import BaseModel, BeforeValidator, Field, StrictBool

from app.api.deps import RepoDep, require_admin
from app.api.problems import problem_responses
from app.api.schemas import RequestModel
from app.errors import NotFoundError, echoed
from app.store.accounts import ACCOUNT_NAME, composed
from app.store.records import ApiKeyRecord, UserRecord

router = APIRouter(prefix="/v1/admin", tags=["admin"], dependencies=[Depends(require_admin)],
                   responses=problem_responses(401, 404, 422))

# New names travel in the key routes' paths (app.store.accounts.ACCOUNT_NAME). A name in a path is looked up as
# sent: users and keys named before that rule (the CLI allowed "my laptop") are reached URL-encoded.
USER_NAME = Field(min_length=1, max_length=200, pattern=ACCOUNT_NAME, examples=["learner-4711"],
                  description="Your own id for the candidate (an LMS user id, an email): unique on this server")
KEY_NAME = Field(default="default", min_length=1, max_length=100, pattern=ACCOUNT_NAME,
                 description="A label for the key, unique among the user's keys")
UserName = Annotated[str, Path(min_length=1, max_length=200)]
# Composed before the pattern is checked: "Jose" and a combining acute was refused, where "José" is accepted.
Composed = BeforeValidator(lambda name: composed(name) if isinstance(name, str) else name)


class NewUser(RequestModel):
    name: Annotated[str, Composed] = USER_NAME
    key_name: Annotated[str, Composed] = KEY_NAME


class NewKey(RequestModel):
    # Unnamed, a key takes the first free "key-N": a rotation by the README's bare POST must not collide with the
    # user's first key, "default", which keeps its name once revoked.
    name: Annotated[str | None, Composed] = Field(default=None, min_length=1, max_length=100, pattern=ACCOUNT_NAME,
                             description="A label for the key, unique among the user's keys; omitted: key-2, key-3")
    # Strict: "no", "off" or 0 were guessed to mean false (and "yes" true); a key's rotation is not done on a guess.
    revoke_others: StrictBool = Field(default=True, description="Revoke the user's other active keys in the same "
                                      "step (a rotation); false adds a key beside them. A JSON boolean")


class UserOut(BaseModel):
    id: int
    name: str
    created_at: datetime


class KeyOut(BaseModel):
    name: str
    prefix: str = Field(description="The key's first characters, to tell keys apart; not the key")
    created_at: datetime
    revoked_at: datetime | None = None


class IssuedKey(BaseModel):
    user: UserOut
    key: KeyOut
    api_key: str = Field(description="The key itself, for `Authorization: Bearer <key>`: shown in this reply "
                         "only (the server keeps its hash), so store it now", examples=["iv_..."])


@router.post("/users", status_code=201, response_model=IssuedKey, responses=problem_responses(400, 409, 413, 415))
def create_user(body: NewUser, repo: RepoDep) -> IssuedKey:
    """A new candidate account with its first API key; 409 when the name is taken."""
    user = repo.create_user(body.name)
    plaintext, key = repo.create_api_key(user.id, body.key_name)
    return _issued(user, key, plaintext)


@router.get("/users/{name}/keys", response_model=list[KeyOut])
def list_keys(name: UserName, repo: RepoDep) -> list[KeyOut]:
    """The user's keys, revoked ones included, oldest first; never the keys themselves."""
    return [_key_out(key) for key in repo.list_api_keys(_user(repo, name).id)]


@router.post("/users/{name}/keys", status_code=201, response_model=IssuedKey,
             responses=problem_responses(400, 409, 413, 415))
def issue_key(name: UserName, repo: RepoDep, body: Annotated[NewKey | None, Body()] = None) -> IssuedKey:
    """A new key for the user, by default replacing the active ones (rotation); 409 when a given name is taken.
    The body may be left out."""
    user = _user(repo, name)
    body = body or NewKey()
    key_name = body.name or _free_key_name({key.name for key in repo.list_api_keys(user.id)})
    plaintext, key = repo.create_api_key(user.id, key_name, replacing=body.revoke_others)
    return _issued(user, key, plaintext)


def _free_key_name(taken: set[str]) -> str:
    return next(f"key-{n}" for n in range(2, len(taken) + 3) if f"key-{n}" not in taken)


@router.delete("/users/{name}/keys/{key_name}", status_code=204, response_class=Response)
def revoke_key(name: UserName, key_name: Annotated[str, Path(min_length=1, max_length=100)], repo: RepoDep) -> Response:
    """Revoke the key at once: requests with it get 401 from then on. The user's history stays."""
    if not repo.revoke_api_key(_user(repo, name).id, key_name):
        raise NotFoundError(f"user {echoed(name)} has no active key named {echoed(key_name)}")
    return Response(status_code=204)


def _user(repo: RepoDep, name: str) -> UserRecord:
    user = repo.user_named(name)
    if user is None:
        raise NotFoundError(f"no user named {echoed(name)}; create one with POST /v1/admin/users")
    return user


def _key_out(key: ApiKeyRecord) -> KeyOut:
    return KeyOut(name=key.name, prefix=key.prefix, created_at=key.created_at, revoked_at=key.revoked_at)


def _issued(user: UserRecord, key: ApiKeyRecord, plaintext: str) -> IssuedKey:
    return IssuedKey(user=UserOut(id=user.id, name=user.name, created_at=user.created_at), key=_key_out(key),
                     api_key=plaintext)
