"""The ledger's SQLite file: schema, connections, creation and migration of older files.

:class:`LedgerFile` knows nothing of budgets or charges; :class:`~dpinfer.privacy.ledger.Ledger`
uses it to open a file that is already a ledger, to create one on purpose, and to bring a file
written by an older version up to the current schema in place (``ALTER TABLE ... ADD COLUMN``
for each column of :data:`_ADDED_COLUMNS` it lacks). Every write runs inside ``BEGIN IMMEDIATE``
(:func:`immediate`): SQLite's reserved lock serialises writers across processes, and a failed
step is rolled back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from ..errors import PrivacyError

_FINGERPRINT_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS datasets_fingerprint ON datasets(fingerprint)"

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
    insecure INTEGER NOT NULL DEFAULT 0
)""",
    _FINGERPRINT_INDEX,
)
_TABLES = frozenset({"datasets", "charges"})

# Columns added after the first release of the ledger format: (table, column, declaration).
# A ledger file without one of them gains it with ALTER TABLE ... ADD COLUMN when opened.
_ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("datasets", "fingerprint", "TEXT"),
    ("charges", "insecure", "INTEGER NOT NULL DEFAULT 0"),
)

HOW_TO_CREATE = (
    "create one with `dpinfer budget init --ledger PATH --dataset NAME --epsilon E` or "
    "Ledger.create(path) (or Ledger(path, create=True))"
)


class LedgerNotFoundError(PrivacyError, FileNotFoundError):
    """There is no ledger file at the path given; nothing was created."""

    def __str__(self) -> str:  # FileNotFoundError formats (errno, strerror); keep the message.
        return str(self.args[0]) if self.args else ""


class LedgerFileError(PrivacyError, ValueError):
    """The file at the path given exists but is not a dpinfer ledger; it was left untouched."""


def now() -> str:
    """The current UTC time, ISO 8601 to the second (the ``created`` columns)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction: committed if the body returns, else rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


class LedgerFile:
    """The SQLite file at ``path``: connections, what the file is, creation, migration.

    Parameters
    ----------
    path
        The database file.
    timeout
        Seconds to wait for another process's lock before giving up.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._uri = path.absolute().as_uri()

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
            for statement in _SCHEMA:
                conn.execute(statement)

    @staticmethod
    def _missing(conn: sqlite3.Connection) -> tuple[list[tuple[str, str, str]], bool]:
        """Columns of :data:`_ADDED_COLUMNS` the file lacks, and whether the fingerprint index is."""
        columns = {
            table: {r[1] for r in conn.execute(f"PRAGMA table_info({table})")} for table in _TABLES
        }
        missing = [c for c in _ADDED_COLUMNS if c[1] not in columns[c[0]]]
        index = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'datasets_fingerprint'"
        ).fetchone()
        return missing, index is None

    def migrate(self) -> None:
        """Bring a ledger written by an older version up to the current schema (in place)."""
        with self.connect() as conn:
            missing, no_index = self._missing(conn)
            if not missing and not no_index:
                return
            with immediate(conn):
                missing, no_index = self._missing(conn)  # another process may have done it
                for table, column, declaration in missing:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                if no_index:
                    conn.execute(_FINGERPRINT_INDEX)
