"""Users and their API keys; only a key's hash and display prefix are ever stored."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import unicodedata

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.errors import ConflictError, NotFoundError, UserFacingError
from app.lookalike import disguised_letters, skeleton
from app.store.base import RepositoryBase
from app.store.models import ApiKey, User, utcnow
from app.store.records import ApiKeyRecord, UserRecord, api_key_record, user_record

KEY_PREFIX = "iv_"
KEY_DISPLAY_CHARS = 8
# User and key names travel in the admin routes' paths (/v1/admin/users/{name}/keys/{key_name}): letters, digits
# and _ . @ + - only, not starting with a dot, so no slash, space, control or invisible character to escape or
# mistake, and no "." or ".." that a path resolves. New ones are held to it however they are made (the CLI made
# "my laptop", which no admin route could name).
ACCOUNT_NAME = r"^[\w@+-][\w.@+-]*$"
ACCOUNT_NAME_RULE = "may hold only letters, digits and _ . @ + - and not start with a dot (it travels in URLs)"


def composed(name: str) -> str:
    """A name with its accents composed (NFC): "Jose" and a combining acute, as some keyboards and macOS file names
    send it, is "José", one letter that the name rules accept and that every lookup finds however it was typed."""
    return unicodedata.normalize("NFC", name)


def _spellings(name: str) -> list[str]:
    """The name as sent, and composed: names kept before they were composed on the way in are found as stored."""
    return list(dict.fromkeys([name, composed(name)]))


def hash_key(plaintext: str) -> str:
    """The stored form of an API key. Keys carry 256 random bits, so a fast hash is enough."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


class AccountRepository(RepositoryBase):
    """Users and API keys."""

    def get_or_create_user(self, name: str) -> UserRecord:
        """The user called `name`, created on first use; a ConflictError when the name is drawn as another user's."""
        if not name.strip():
            raise UserFacingError("a user name cannot be empty")
        query = select(User).where(User.name.in_(_spellings(name)))
        name = composed(name)
        _fits(name, "a user name", User.name.type.length)
        try:
            with self._writing() as session:
                row = session.scalars(query).first()
                if row is None:
                    _path_safe(name, "a user name")
                    row = _new_user(session, name)
                return user_record(row)
        except IntegrityError:
            # The same user created by another process between our read and insert (theirs stands), or a name
            # drawn alike, stored before or at the same time.
            with self._reading() as session:
                row = session.scalars(query.limit(1)).first()
            if row is None:
                raise self._conflict(name) from None
            return user_record(row)

    def create_user(self, name: str) -> UserRecord:
        """A new user called `name`; a ConflictError when the name is taken (it is someone's history) or drawn as
        a user's, also when another request takes it between our read and our insert."""
        name = valid_user_name(name)
        try:
            with self._writing() as session:
                return user_record(_new_user(session, name))
        except IntegrityError:
            raise self._conflict(name) from None

    def _conflict(self, name: str) -> ConflictError:
        """What refused a new user `name`, read after its insert failed: the name itself, or one drawn as it
        ("leɑrner" with a Latin alpha beside "learner", "admın" with a dotless i beside "admin"): a second account
        nobody could tell from the first. Turkish or any other name is welcome while no account is drawn the same;
        accents count ("José" beside "Jose" is fine)."""
        with self._reading() as session:
            if session.scalar(select(User.id).where(User.name == name)) is not None:
                return ConflictError(f"a user named {name!r} exists already")
            twin = session.scalar(select(User.name).where(User.name_skeleton == skeleton(name)))
        return ConflictError(f"a user name {name!r} reads as the existing user {twin!r}; choose one that reads "
                             "differently")

    def user_named(self, name: str) -> UserRecord | None:
        with self._reading() as session:
            row = session.scalars(select(User).where(User.name.in_(_spellings(name)))).first()
            return None if row is None else user_record(row)

    def create_api_key(self, user_id: int, name: str, *, replacing: bool = False) -> tuple[str, ApiKeyRecord]:
        """A new key for the user: the plaintext is returned here once and never stored. `replacing` revokes
        the user's other active keys in the same commit (a rotation: never two keys live, never none)."""
        name = composed(name)
        _fits(name, "a key name", ApiKey.name.type.length)
        _path_safe(name, "a key name")
        plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
        with self._writing() as session:
            # The user's row locked (PostgreSQL; SQLite's BEGIN IMMEDIATE serialises writers anyway): two
            # rotations at once each revoked only the keys that were live when it began, and both new keys
            # stayed live. FOR NO KEY UPDATE, as a question's choice takes it.
            owner = session.get(User, user_id, with_for_update={"key_share": True})
            if owner is None:
                raise NotFoundError(f"no user with id {user_id}")
            taken = select(ApiKey.id).where(ApiKey.user_id == user_id, ApiKey.name == name)
            if session.scalar(taken) is not None:  # said the same way to the CLI and to an integrator's admin call
                raise ConflictError(f"user {owner.name!r} already has a key named {name!r} (a revoked key keeps its "
                                    "name); choose another name")
            if replacing:
                session.execute(update(ApiKey).where(ApiKey.user_id == user_id, ApiKey.revoked_at.is_(None))
                                .values(revoked_at=utcnow()))
            row = ApiKey(
                user_id=user_id,
                name=name,
                key_hash=hash_key(plaintext),
                prefix=plaintext[:KEY_DISPLAY_CHARS],
            )
            session.add(row)
            session.flush()
            return plaintext, api_key_record(row)

    def user_for_key(self, plaintext: str) -> UserRecord | None:
        """The owner of an active key, or None for an unknown or revoked one."""
        digest = hash_key(plaintext)
        # Narrow by the non-secret display prefix, then compare hashes in constant time so the
        # response time says nothing about how much of a guessed key matched.
        query = (
            select(ApiKey.key_hash, ApiKey.revoked_at, User)
            .join(User, User.id == ApiKey.user_id)
            .where(ApiKey.prefix == plaintext[:KEY_DISPLAY_CHARS])
        )
        with self._reading() as session:
            for key_hash, revoked_at, user in session.execute(query):
                if hmac.compare_digest(key_hash, digest) and revoked_at is None:
                    return user_record(user)
        return None

    def list_api_keys(self, user_id: int) -> list[ApiKeyRecord]:
        """The user's keys, revoked ones included, oldest first."""
        query = select(ApiKey).where(ApiKey.user_id == user_id).order_by(ApiKey.created_at, ApiKey.id)
        with self._reading() as session:
            return [api_key_record(row) for row in session.scalars(query)]

    def revoke_api_key(self, user_id: int, name: str) -> bool:
        """Revoke the user's active key `name`; False when there is no such active key."""
        with self._writing() as session:
            result = session.execute(
                update(ApiKey)
                .where(ApiKey.user_id == user_id, ApiKey.name.in_(_spellings(name)), ApiKey.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            return bool(getattr(result, "rowcount", 0))


def valid_user_name(name: str) -> str:
    """`name` composed as a new user is stored under it, or a UserFacingError naming the rule it breaks: the rule
    `keys create --user` holds a new user to, and the terminal's `--user` every name (a name it would create)."""
    if not name.strip():
        raise UserFacingError("a user name cannot be empty")
    name = composed(name)
    _fits(name, "a user name", User.name.type.length)
    _path_safe(name, "a user name")
    return name


def _path_safe(name: str, what: str) -> None:
    if not re.fullmatch(ACCOUNT_NAME, name):
        raise UserFacingError(f"{what} {ACCOUNT_NAME_RULE}: {name!r} does not")
    # A name that reads as another is a second account nobody can tell from the first (an integrator passing
    # people's input through): fullwidth "ＬＥＡＲＮＥＲ" or "lеarner-1" with a Cyrillic "е" beside "learner-1".
    if unicodedata.normalize("NFKC", name) != name:
        raise UserFacingError(f"{what} must be written in plain characters: {name!r} reads as "
                              f"{unicodedata.normalize('NFKC', name)!r}")
    if disguised := disguised_letters(name):
        raise UserFacingError(f"{what} mixes Latin letters with look-alikes from another script "
                              f"({', '.join(repr(c) for c in disguised)}): {name!r}")


def _new_user(session: Session, name: str) -> User:
    """The user row, inserted now: its unique name and skeleton are checked by the database, in this statement, so
    two processes cannot both store a name or two names drawn alike."""
    row = User(name=name, name_skeleton=skeleton(name))
    session.add(row)
    session.flush()
    return row


def _fits(value: str, what: str, length: int | None) -> None:
    """Said up front: PostgreSQL refuses a longer value with a driver error (SQLite would store it)."""
    if length is not None and len(value) > length:
        raise UserFacingError(f"{what} is {len(value)} characters; at most {length}")
