"""Who is calling: API tokens the server issued, and the principal each one speaks for.

Over HTTP the actor and roles of a decision come from the caller's token, never from what the
request claims (a CLI on the database's own machine trusts its user instead; see the README).
A token is `hitl_<id>_<secret>`: the id names it in listings and revocations, and only the
SHA-256 of the whole token is stored, so a stolen database yields no usable token. Tokens are
long random strings, so a plain hash (no salt, no slow KDF) is enough and lookup is one index
probe.

Example:
    >>> from hitl_graphs import Runner
    >>> with Runner.open(":memory:", workflows=[]) as runner:
    ...     issued = runner.tokens.create("ana", roles=["finance"])
    ...     who = runner.tokens.authenticate(issued.token)
    ...     (who.actor, who.roles), runner.tokens.authenticate(issued.token + "x")
    (('ana', ('finance',)), None)
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from hitl_graphs.errors import ConfigError
from hitl_graphs.storage.base import TokenRow, TokenStore

PREFIX = "hitl_"
_NAME = re.compile(r"[^\s].{0,199}", re.S)
_ROLE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class Principal(BaseModel):
    """The actor and roles a request speaks for, from its token."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    roles: tuple[str, ...] = ()
    token_id: str


class TokenInfo(BaseModel):
    """A token as `hitl token list` shows it (never the secret)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    actor: str
    roles: tuple[str, ...]
    created_at: datetime
    revoked_at: datetime | None = None


class IssuedToken(BaseModel):
    """A token just created: `token` is shown this once and never stored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    actor: str
    roles: tuple[str, ...]
    token: str


def digest(token: str) -> str:
    """What the store keeps of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def _info(row: TokenRow) -> TokenInfo:
    revoked = datetime.fromtimestamp(row.revoked_at, UTC) if row.revoked_at is not None else None
    return TokenInfo(id=row.id, actor=row.actor, roles=row.roles, created_at=datetime.fromtimestamp(row.created_at, UTC),
                     revoked_at=revoked)


class Tokens:
    """Issue, list, revoke and check API tokens (`runner.tokens`)."""

    def __init__(self, store: TokenStore) -> None:
        self._store = store

    def create(self, actor: str, *, roles: Sequence[str] = ()) -> IssuedToken:
        """A new token for `actor` holding `roles`; its secret is in the result only.

        Raises:
            ConfigError: an empty actor, or a role that is not a plain word.
        """
        if not isinstance(actor, str) or not _NAME.fullmatch(actor.strip() or " "):
            raise ConfigError(f"a token needs an actor name (1 to 200 characters), got {actor!r}")
        for role in roles:
            if not isinstance(role, str) or not _ROLE.fullmatch(role):
                raise ConfigError(f"role {role!r} is not a plain word (letters, digits, _ . : -, at most 64)")
        token_id = secrets.token_hex(4)
        token = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        row = self._store.add(token_id, digest(token), actor.strip(), tuple(dict.fromkeys(roles)))
        return IssuedToken(id=row.id, actor=row.actor, roles=row.roles, token=token)

    def list(self) -> list[TokenInfo]:
        """Every token, oldest first, revoked ones with when."""
        return [_info(r) for r in self._store.listing()]

    def revoke(self, token_id: str) -> TokenInfo:
        """Revoke a token; requests carrying it are refused from now on.

        Raises:
            ConfigError: no token with that id.
        """
        row = self._store.revoke(token_id)
        if row is None:
            raise ConfigError(f"no token with id {token_id!r}; `hitl token list` shows them")
        return _info(row)

    def authenticate(self, token: str) -> Principal | None:
        """The principal a presented token speaks for; None if it is unknown or revoked."""
        if not token.startswith(PREFIX) or len(token) > 200:
            return None
        return self.authenticate_digest(digest(token))

    def authenticate_digest(self, token_digest: str) -> Principal | None:
        """The principal of the token with this `digest`; None if it is unknown or revoked. (A web
        session keeps the digest, not the token, and checks it on every request.)"""
        return _principal(self._store.find(token_digest))

    async def aauthenticate(self, token: str) -> Principal | None:
        """`authenticate` for an event loop (the server checks a token on every request)."""
        if not token.startswith(PREFIX) or len(token) > 200:
            return None
        return await self.aauthenticate_digest(digest(token))

    async def aauthenticate_digest(self, token_digest: str) -> Principal | None:
        """`authenticate_digest` for an event loop."""
        return _principal(await self._store.afind(token_digest))


def _principal(row: TokenRow | None) -> Principal | None:
    return Principal(actor=row.actor, roles=row.roles, token_id=row.id) if row is not None else None
