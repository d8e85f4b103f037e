"""API tokens: random, stored hashed with Argon2id, shown once, revocable, expiring.

A token reads ``dpi_<id>_<secret>``: ``id`` (12 hex digits) is public and names the token in
listings and the audit log; ``secret`` (``secrets.token_urlsafe(32)``, 256 bits) is stored only
as an Argon2id hash (argon2-cffi; RFC 9106 parameters at OWASP's minimum for Argon2id, 19 MiB,
t = 2). The full token is returned once, by :meth:`Tokens.create`, and never again.

Every request looks the token's row up (so a revocation or an expiry takes effect at once, also
when made by another process) and verifies the secret. Argon2 is deliberately slow (tens of ms),
so a verified secret is remembered in memory as an HMAC under a per-process random key: the
plaintext is never kept, and the cache is checked after the row, never instead of it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from .store import Store

ROLES = ("owner", "analyst")
TOKEN = re.compile(r"^dpi_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
_HASHER = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)


@dataclass(frozen=True)
class Principal:
    """Who made a request: the token's holder and role."""

    name: str
    role: str
    token_id: str


class AuthError(Exception):
    """A refused token (401); the message says why without echoing the token."""


class Tokens:
    """Token management on a :class:`~dpinfer.service.store.Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._key = secrets.token_bytes(32)
        self._verified: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def create(self, principal: str, role: str, *, days: float, note: str = "") -> tuple[str, str, float]:
        """A new token for ``principal``: ``(token, id, expires)``; the token is shown only here."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}.")
        if not days > 0:
            raise ValueError("a token's lifetime must be positive.")
        tid = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        now = time.time()
        expires = now + float(days) * 86400.0
        digest = _HASHER.hash(secret)
        self.store.tx(
            lambda c: c.execute(
                "INSERT INTO tokens (id, principal, role, hash, created, expires, note)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (tid, principal, role, digest, now, expires, note),
            )
        )
        return f"dpi_{tid}_{secret}", tid, expires

    def revoke(self, tid: str) -> bool:
        """Revoke token ``tid``; False if there is no such token."""

        def body(c: sqlite3.Connection) -> int:
            cur = c.execute(
                "UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL",
                (time.time(), tid),
            )
            return int(cur.rowcount)

        done = self.store.tx(body)
        with self._lock:
            self._verified.pop(tid, None)
        return bool(done) or bool(self.store.rows("SELECT 1 FROM tokens WHERE id = ?", (tid,)))

    def listing(self) -> list[dict[str, Any]]:
        """Every token's public facts (never its hash)."""
        rows = self.store.rows(
            "SELECT id, principal, role, created, expires, revoked, note FROM tokens ORDER BY created"
        )
        keys = ("id", "principal", "role", "created", "expires", "revoked", "note")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def active(self, tid: str) -> Principal | None:
        """The principal of token ``tid`` if it is neither revoked nor expired (no secret checked:
        for sessions opened by a verified token)."""
        rows = self.store.rows("SELECT principal, role, expires, revoked FROM tokens WHERE id = ?", (tid,))
        if not rows or rows[0][3] is not None or rows[0][2] <= time.time():
            return None
        return Principal(rows[0][0], rows[0][1], tid)

    def authenticate(self, header: str | None) -> Principal:
        """The principal of an ``Authorization: Bearer <token>`` header, or :class:`AuthError`."""
        if not header:
            raise AuthError("no token: send the header 'Authorization: Bearer <token>'.")
        scheme, _, token = header.partition(" ")
        m = TOKEN.match(token.strip()) if scheme.lower() == "bearer" else None
        if m is None:
            raise AuthError("the token is malformed or not a bearer token.")
        tid, secret = m.group(1), m.group(2)
        rows = self.store.rows(
            "SELECT principal, role, hash, expires, revoked FROM tokens WHERE id = ?", (tid,)
        )
        if not rows:
            raise AuthError("the token is not valid.")
        principal, role, digest, expires, revoked = rows[0]
        mac = hmac.new(self._key, secret.encode(), hashlib.sha256).digest()
        with self._lock:
            known = self._verified.get(tid)
        if known is None or not hmac.compare_digest(known, mac):
            try:
                _HASHER.verify(digest, secret)
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                raise AuthError("the token is not valid.") from None
            with self._lock:
                self._verified[tid] = mac
        if revoked is not None:
            raise AuthError("the token has been revoked.")
        if expires <= time.time():
            raise AuthError("the token has expired.")
        return Principal(principal, role, tid)


class RateLimiter:
    """A token bucket per token id: ``rate`` requests per second, bursts of ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = float(rate), float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            level, last = self._buckets.get(key, (self.burst, now))
            level = min(self.burst, level + (now - last) * self.rate)
            if level < 1.0:
                self._buckets[key] = (level, now)
                return False
            self._buckets[key] = (level - 1.0, now)
            return True


__all__ = ["ROLES", "AuthError", "Principal", "RateLimiter", "Tokens"]
