"""The run store's two databases: a SQLite file (default) or PostgreSQL (the ledger's URL scheme).

Both hold the same three tables (``runs``, ``run_checkpoints``, ``run_meta``), created on first
use (a run store, unlike a ledger, guards no budget: creating one by accident costs nothing).
:meth:`Database.transaction` runs a function on a cursor-like object with ``?`` placeholders in
one transaction. In PostgreSQL the tables live in the schema ``dpinfer_runs`` (never mixed with
the ledger's ``dpinfer``); connection settings come from the URL, libpq's environment and
``~/.pgpass``, and no password reaches a message (:func:`~dpinfer.privacy.ledger_store.redact`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import RunStoreError
from ..privacy.ledger_store import is_database_url, redact

T = TypeVar("T")

SCHEMA_VERSION = 1
PG_SCHEMA = "dpinfer_runs"

_DDL = (
    """CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    host TEXT,
    pid INTEGER,
    model TEXT NOT NULL,
    settings TEXT NOT NULL,
    seed TEXT,
    observed TEXT,
    privacy TEXT,
    wall_s {real} NOT NULL DEFAULT 0,
    cpu_s {real} NOT NULL DEFAULT 0,
    steps INTEGER NOT NULL DEFAULT 0,
    note TEXT NOT NULL DEFAULT ''
)""",
    """CREATE TABLE IF NOT EXISTS run_checkpoints (
    run_id TEXT NOT NULL REFERENCES runs(id),
    step INTEGER NOT NULL,
    created TEXT NOT NULL,
    state {blob} NOT NULL,
    PRIMARY KEY (run_id, step)
)""",
    "CREATE TABLE IF NOT EXISTS run_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


class _Cursor:
    def __init__(self, execute: Callable[[str, tuple[Any, ...]], Any], placeholder: str) -> None:
        self._execute, self._ph = execute, placeholder

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._execute(sql.replace("?", self._ph), tuple(params))
        return cur.fetchall() if cur.description is not None else []


class Database:
    """Where a run store lives (see the module docstring)."""

    def __init__(self, target: str | os.PathLike[str], timeout: float = 60.0) -> None:
        self.timeout = float(timeout)
        self.postgres = is_database_url(target)
        self.location = redact(target)
        self._target = str(target) if self.postgres else Path(target)
        if self.postgres:
            try:
                import psycopg
            except ImportError:
                raise RunStoreError(
                    f"the PostgreSQL run store {self.location} needs psycopg 3: pip install "
                    "'dpinfer[postgres]'."
                ) from None
            self._pg = psycopg
            from psycopg.conninfo import conninfo_to_dict

            params: dict[str, Any] = dict(conninfo_to_dict(str(target)))
            self._secret = str(params.get("password") or "") or None
            params["options"] = f"{params.get('options', '')} -c search_path={PG_SCHEMA}".strip()
            self._params = params
        else:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        self.transaction(self._create)

    def _create(self, cur: _Cursor) -> None:
        if self.postgres:
            cur.rows("SELECT pg_advisory_xact_lock(?)", (0x6470696E72756E,))
            cur.rows(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")
        types = {"real": "REAL", "blob": "BLOB"}
        if self.postgres:
            types = {"real": "DOUBLE PRECISION", "blob": "BYTEA"}
        for statement in _DDL:
            cur.rows(statement.format(**types))
        found = cur.rows("SELECT value FROM run_meta WHERE key = 'schema_version'")
        if not found:
            cur.rows("INSERT INTO run_meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(found[0][0]) > SCHEMA_VERSION:
            raise RunStoreError(
                f"run store {self.location} has schema version {found[0][0]}, newer than this dpinfer "
                f"knows ({SCHEMA_VERSION}); upgrade dpinfer."
            )

    def transaction(self, body: Callable[[_Cursor], T]) -> T:
        """Run ``body`` in one transaction (committed if it returns, rolled back if it raises)."""
        return self._pg_transaction(body) if self.postgres else self._sqlite_transaction(body)

    def _sqlite_transaction(self, body: Callable[[_Cursor], T]) -> T:
        try:
            conn = sqlite3.connect(self._target, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise RunStoreError(f"cannot open run store {self.location}: {exc}.") from None
        try:
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = body(_Cursor(conn.execute, "?"))
                conn.execute("COMMIT")
                return result
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"run store {self.location}: {exc}.") from None
        finally:
            conn.close()

    def _pg_transaction(self, body: Callable[[_Cursor], T]) -> T:
        try:
            conn = self._pg.connect(**self._params)
        except self._pg.Error as exc:
            raise RunStoreError(
                f"cannot connect to run store {self.location}: {redact(exc, self._secret)}"
            ) from None
        try:
            result = body(_Cursor(conn.execute, "%s"))
            conn.commit()
            return result
        except self._pg.Error as exc:
            raise RunStoreError(f"run store {self.location}: {redact(exc, self._secret)}") from None
        finally:
            conn.close()

    def blob(self, data: Any) -> bytes:
        """A stored blob as bytes (PostgreSQL returns memoryview)."""
        return bytes(data)
