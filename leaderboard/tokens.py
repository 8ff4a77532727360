"""Bearer tokens: created and revoked by the server's operator, sent by submitters.

A token is ``cbt_`` followed by 43 URL-safe characters (256 random bits). Only its SHA-256
is stored, so a leaked database does not leak tokens.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import select

from colbench.errors import ConfigError
from colbench.leaderboard._db import Database, Token, utcnow

PREFIX = "cbt_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
_TOKEN = re.compile(r"^cbt_[A-Za-z0-9_-]{20,100}$")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    id: int
    name: str
    created_at: str
    revoked_at: str | None


def _info(row: Token) -> TokenInfo:
    return TokenInfo(id=row.id, name=row.name, created_at=row.created_at.isoformat() + "Z",
                     revoked_at=row.revoked_at.isoformat() + "Z" if row.revoked_at else None)


def create_token(db: Database, name: str) -> tuple[TokenInfo, str]:
    """A new token for ``name`` (a submitter, team or CI job): ``(info, secret)``. The secret
    is returned once and never stored."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"token name {name!r} must be 1-100 characters of letters, digits "
                          "and _ . @ -, starting with a letter or digit")
    secret = PREFIX + secrets.token_urlsafe(32)
    with db.write() as session:
        if session.scalar(select(Token).where(Token.name == name)) is not None:
            raise ConfigError(f"a token named {name!r} already exists (revoke it, or pick "
                              "another name)")
        row = Token(name=name, token_hash=hash_token(secret), created_at=utcnow())
        session.add(row)
        session.flush()
        info = _info(row)
    return info, secret


def revoke_token(db: Database, name: str) -> TokenInfo:
    """Revoke the token called ``name``; its submissions stay. Revoking twice is an error."""
    with db.write() as session:
        row = session.scalar(select(Token).where(Token.name == name))
        if row is None:
            known = ", ".join(session.scalars(select(Token.name).order_by(Token.name))) or "none"
            raise ConfigError(f"no token named {name!r} (tokens: {known})")
        if row.revoked_at is not None:
            raise ConfigError(f"token {name!r} was already revoked on "
                              f"{row.revoked_at.isoformat(timespec='seconds')}Z")
        row.revoked_at = utcnow()
        session.flush()
        return _info(row)


def list_tokens(db: Database) -> list[TokenInfo]:
    with db.read() as session:
        return [_info(row) for row in session.scalars(select(Token).order_by(Token.id))]


class AuthError(Exception):
    """Why a request's token was refused; ``status`` is 401 or 403."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def authenticate(db: Database, header: str | None) -> Token:
    """The live token named by an ``Authorization: Bearer ...`` header, else AuthError."""
    if not header or not header.strip():
        raise AuthError(401, "missing bearer token: send the header 'Authorization: Bearer "
                             "<token>' with a token from the server's operator")
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise AuthError(401, f"the Authorization header must use the Bearer scheme, not "
                             f"{scheme[:20]!r}")
    value = value.strip()
    if not _TOKEN.match(value):
        raise AuthError(401, "malformed bearer token: a colbench leaderboard token starts "
                             "with 'cbt_'")
    with db.read() as session:
        row = session.scalar(select(Token).where(Token.token_hash == hash_token(value)))
    if row is None:
        raise AuthError(401, "unknown bearer token: this server issued no such token")
    if row.revoked_at is not None:
        raise AuthError(403, f"this token ({row.name!r}) was revoked on "
                             f"{row.revoked_at.isoformat(timespec='seconds')}Z; ask the "
                             "server's operator for a new one")
    return row


def sent_by_owner(db: Database, header: str | None, token_id: int) -> bool:
    """Whether an ``Authorization`` header names the live token ``token_id``: what a
    submitter's own view needs (a missing, unknown, revoked or other token is just no).

    Parameters
    ----------
    db:
        The leaderboard's database.
    header:
        The request's ``Authorization`` header, if any.
    token_id:
        The id of the token that owns the thing asked about.
    """
    if not header:
        return False
    try:
        return authenticate(db, header).id == token_id
    except AuthError:
        return False
