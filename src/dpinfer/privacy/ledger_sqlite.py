"""The ledger in one SQLite file: schema, connections, creation and migration of older files.

Every write runs inside ``BEGIN IMMEDIATE``: SQLite's reserved lock serialises writers across the
processes of one host, so "read the history, check the budget, insert the charge" is one atomic
step, and a failed step is rolled back; reads run in one deferred transaction (one snapshot).
``synchronous=FULL`` and the rollback journal keep the file consistent if a process is killed
mid-write. SQLite's locks are not to be trusted on a network file system: share a budget between
hosts through PostgreSQL (:mod:`dpinfer.privacy.ledger_postgres`).

A file written by an older version is brought up to the current schema in place on first open
(``ALTER TABLE ... ADD COLUMN`` for each column of :data:`_ADDED_COLUMNS` it lacks, the
fingerprint indexes, the ``ledger_meta`` table with :data:`~dpinfer.privacy.ledger_store.SCHEMA_VERSION`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..errors import LedgerConnectionError, LedgerFileError, LedgerNotFoundError
from .ledger_store import HOW_TO_CREATE, SCHEMA_VERSION, check_version

T = TypeVar("T")

_FINGERPRINT_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS datasets_fingerprint ON datasets(fingerprint)"
_CHARGE_FINGERPRINT_INDEX = "CREATE INDEX IF NOT EXISTS charges_fingerprint ON charges(fingerprint)"
_INDEXES = {"datasets_fingerprint": _FINGERPRINT_INDEX, "charges_fingerprint": _CHARGE_FINGERPRINT_INDEX}
_META = "CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_SET_VERSION = "INSERT OR REPLACE INTO ledger_meta (key, value) VALUES ('schema_version', ?)"

# The current schema, one statement each (run inside one transaction when a ledger is created).
_SCHEMA: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    accountant TEXT NOT NULL,
    neighbouring TEXT NOT NULL,
    created TEXT NOT NULL,
    fingerprint TEXT
)""",
    """CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    event TEXT NOT NULL,
    label TEXT NOT NULL,
    epsilon_spent REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'released', 'failed')),
    created TEXT NOT NULL,
    pid INTEGER NOT NULL,
    insecure INTEGER NOT NULL DEFAULT 0,
    host TEXT,
    fingerprint TEXT
)""",
    _FINGERPRINT_INDEX,
    _CHARGE_FINGERPRINT_INDEX,
    _META,
)
_TABLES = frozenset({"datasets", "charges"})

# Columns added after the first release of the ledger format: (table, column, declaration).
# A ledger file without one of them gains it with ALTER TABLE ... ADD COLUMN when opened.
_ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("datasets", "fingerprint", "TEXT"),
    ("charges", "insecure", "INTEGER NOT NULL DEFAULT 0"),
    ("charges", "host", "TEXT"),
    ("charges", "fingerprint", "TEXT"),
)


def _table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@contextmanager
def immediate(conn: sqlite3.Connection, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Connection]:
    """One ``BEGIN <mode>`` transaction: committed if the body returns, else rolled back."""
    conn.execute(f"BEGIN {mode}")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class _SQLiteTx:
    """:class:`~dpinfer.privacy.ledger_store.Tx` over one SQLite connection."""

    lock_row = ""  # BEGIN IMMEDIATE already excludes every other writer

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, tuple(params)).fetchall()

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        rowid = self._conn.execute(sql, tuple(params)).lastrowid
        if rowid is None:  # pragma: no cover - an INSERT always sets it
            raise RuntimeError("the ledger insert returned no row id.")
        return int(rowid)

    def lock_datasets(self) -> None:
        """Nothing to do: the write transaction holds SQLite's reserved lock."""

    def lock_fingerprint(self, fingerprint: str) -> None:
        """Nothing to do: the write transaction holds SQLite's reserved lock."""


class SQLiteStore:
    """The ledger file at ``path`` (see the module docstring).

    Parameters
    ----------
    path
        The database file.
    timeout
        Seconds to wait for another process's lock before giving up.
    """

    backend = "sqlite"

    def __init__(self, path: str | os.PathLike[str], timeout: float) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self.location = str(self.path)
        self._uri = self.path.absolute().as_uri()

    @classmethod
    def open(cls, path: str | os.PathLike[str], timeout: float, *, create: bool) -> SQLiteStore:
        """The ledger at ``path``, created first if ``create``; migrated to the current schema."""
        store = cls(path, timeout)
        if create:
            store.create()
        elif not store.path.exists():
            raise LedgerNotFoundError(f"no ledger at {store.path}; {HOW_TO_CREATE}.")
        elif store.path.is_dir():
            raise LedgerFileError(f"{store.path} is a folder, not a ledger file.")
        elif store.kind() != "ledger":
            raise LedgerFileError(
                f"{store.path} is not a dpinfer ledger (no datasets/charges tables); pass the path "
                f"of an existing ledger, or {HOW_TO_CREATE} at a new path."
            )
        store.migrate()
        return store

    @contextmanager
    def connect(self, create: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode with ``synchronous=FULL``; never creates a file unless
        ``create``."""
        # mode=rw: opening never creates a file, even if the ledger is removed under our feet
        mode = "rwc" if create else "rw"
        try:
            conn = sqlite3.connect(
                f"{self._uri}?mode={mode}", timeout=self.timeout, isolation_level=None, uri=True
            )
        except sqlite3.OperationalError as exc:
            if not self.path.exists():
                raise LedgerNotFoundError(f"no ledger at {self.path}; {HOW_TO_CREATE}.") from None
            raise LedgerFileError(f"cannot open ledger {self.path}: {exc}.") from None
        try:
            conn.execute("PRAGMA synchronous=FULL")
            yield conn
        finally:
            conn.close()

    def transaction(self, body: Callable[[_SQLiteTx], T], *, write: bool, what: str) -> T:
        """Run ``body`` in ``BEGIN IMMEDIATE`` (write) or ``BEGIN DEFERRED`` (read)."""
        try:
            with self.connect() as conn, immediate(conn, "IMMEDIATE" if write else "DEFERRED"):
                return body(_SQLiteTx(conn))
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            raise LedgerConnectionError(
                f"{what}: ledger {self.path} stayed locked by another process for more than "
                f"{self.timeout:g} s ({exc}); nothing was recorded. Try again, or pass a longer timeout."
            ) from None

    def integrity_check(self) -> bool:
        """SQLite's own integrity check of the file."""
        with self.connect() as conn:
            return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def kind(self) -> str:
        """``"ledger"``, ``"empty"`` (a database without tables, or an empty file) or ``"other"``."""
        if not self.path.is_file():
            return "other"
        try:
            with self.connect() as conn:
                names = _table_names(conn)
        except (sqlite3.DatabaseError, LedgerFileError):
            return "other"
        if _TABLES <= names:
            return "ledger"
        return "other" if names else "empty"

    def create(self) -> None:
        """Create the schema (and missing parent folders); a ledger already there is kept as it is.

        Raises
        ------
        LedgerFileError
            The file exists and is not a ledger (it is left untouched).
        """
        if self.path.exists():
            kind = self.kind()
            if kind == "ledger":
                return
            if kind == "other":
                raise LedgerFileError(
                    f"{self.path} exists and is not a dpinfer ledger; refusing to overwrite it. "
                    "Choose another path for the ledger."
                )
        elif not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.connect(create=True) as conn, immediate(conn):
            names = _table_names(conn)
            if names and not _TABLES <= names:  # someone else wrote something else meanwhile
                raise LedgerFileError(f"{self.path} is not a dpinfer ledger; refusing to overwrite it.")
            if not names:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(_SET_VERSION, (str(SCHEMA_VERSION),))

    @staticmethod
    def _state(conn: sqlite3.Connection) -> tuple[list[tuple[str, str, str]], list[str], int | None]:
        """Columns of :data:`_ADDED_COLUMNS` the file lacks, the fingerprint indexes it lacks, and
        the recorded schema version (None: before versions were recorded)."""
        columns = {
            table: {r[1] for r in conn.execute(f"PRAGMA table_info({table})")} for table in _TABLES
        }
        missing = [c for c in _ADDED_COLUMNS if c[1] not in columns[c[0]]]
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        version = None
        if "ledger_meta" in _table_names(conn):
            row = conn.execute("SELECT value FROM ledger_meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else None
        return missing, [sql for name, sql in _INDEXES.items() if name not in present], version

    def migrate(self) -> None:
        """Bring a ledger written by an older version up to the current schema (in place); refuse
        one written by a newer version."""
        with self.connect() as conn:
            missing, indexes, version = self._state(conn)
            check_version(version, self.location)
            if not missing and not indexes and version == SCHEMA_VERSION:
                return
            with immediate(conn):
                missing, indexes, version = self._state(conn)  # another process may have done it
                check_version(version, self.location)
                for table, column, declaration in missing:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                for statement in indexes:
                    conn.execute(statement)
                conn.execute(_META)
                conn.execute(_SET_VERSION, (str(SCHEMA_VERSION),))
