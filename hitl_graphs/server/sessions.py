"""Browser sessions of the web inbox: a random id in an HttpOnly, SameSite=Strict cookie, and a
CSRF token per session.

Why a server-side session and not the token in a cookie: the cookie holds a random id that means
nothing outside this process, so a leaked cookie (a log, a proxy, a shared machine) does not leak
an API token that works against `/api` for as long as it lives, and a logout really ends it (the
id is forgotten; a signed cookie would stay valid until it expires). The session keeps the
SHA-256 of the pasted token, never the token, and every request checks that digest against the
token store again, so revoking the token (`hitl token revoke`) ends its sessions at once, and the
actor and roles always come from the token, never from a form.

Sessions live in the serving process's memory: a restart of `hitl serve` logs everyone out (they
paste their token again); `hitl serve` is one process, so no session store is shared.

CSRF: every form that changes something carries the session's `csrf` value in a hidden field,
compared in constant time (the synchronizer-token pattern); SameSite=Strict is the second wall.
The login form, before any session exists, pairs a random value in a short-lived cookie with the
same value in the form (double submit), so another site cannot log a browser in as someone else.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field

SESSION_COOKIE = "hitl_session"
LOGIN_COOKIE = "hitl_login"
LIFETIME = 12 * 3600
"""Seconds a session lives from its login (the cookie's Max-Age too)."""
MAX_SESSIONS = 10_000
"""Beyond this many live sessions the oldest is forgotten (memory stays bounded)."""


@dataclass(slots=True)
class Session:
    """One logged-in browser: which token it speaks for (by digest) and its CSRF value."""

    id: str
    token_digest: str
    csrf: str
    created: float = field(default_factory=time.time)

    def expired(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) - self.created > LIFETIME


def same(given: str | None, expected: str) -> bool:
    """A constant-time comparison of a submitted secret with the expected one."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class Sessions:
    """The live sessions of one server process."""

    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}

    def open(self, token_digest: str) -> Session:
        """A new session for the token with this digest (a fresh id at every login: no fixation)."""
        self._drop_expired()
        while len(self._by_id) >= MAX_SESSIONS:
            self._by_id.pop(next(iter(self._by_id)))
        session = Session(id=secrets.token_urlsafe(32), token_digest=token_digest, csrf=secrets.token_urlsafe(32))
        self._by_id[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id, or None (unknown, or past its lifetime)."""
        session = self._by_id.get(session_id) if session_id else None
        if session is not None and session.expired():
            self.close(session.id)
            return None
        return session

    def close(self, session_id: str) -> None:
        self._by_id.pop(session_id, None)

    def _drop_expired(self) -> None:
        now = time.time()
        for sid in [s.id for s in self._by_id.values() if s.expired(now)]:
            del self._by_id[sid]
