"""The ledger in one SQLite file: schema, connections, creation and migration of older files.

Every write runs inside ``BEGIN IMMEDIATE``: SQLite's reserved lock serialises writers across the
processes of one host, so "read the history, check the budget, insert the charge" is one atomic
step, and a failed step is rolled back; reads run in one deferred transaction (one snapshot).
The file is in write-ahead-log mode (``journal_mode=WAL``) with ``synchronous=FULL``: a commit
appends the transaction's pages to ``<ledger>-wal`` and syncs that one file before it returns, so
every committed charge survives a killed process or a power loss, and an interrupted write is never
seen (the log is replayed or discarded whole on the next open). The rollback journal this replaces
gave the same guarantees with three syncs per commit (journal, database, journal removal). With the
kept connection of :meth:`SQLiteStore._kept`, a charge on 10 to 100 releases took 3.4-3.5 ms
(median) against 4.4-6.5 ms for the rollback journal and a connection per transaction, the earlier
code measured in the same run on a quiet 2-core machine
(``benchmarks/results/ledger_charge_cost.json``, ``before_full_recomposition_sqlite_pld``). The
``-wal`` and ``-shm`` files beside the ledger are part of it (SQLite creates them with the ledger's
permissions): copy or back up a ledger with ``sqlite3 <ledger> ".backup <copy>"`` or while no
process has it open, never the main file alone. A file made by an older version is switched to WAL
on its first open by this one. SQLite's locks (and its WAL index, shared memory) are not to be
trusted on a network file system: share a budget between hosts through PostgreSQL
(:mod:`dpinfer.privacy.ledger_postgres`).

A file written by an older version is brought up to the current schema in place on first open
(``ALTER TABLE ... ADD COLUMN`` for each column of :data:`_ADDED_COLUMNS` it lacks, the
indexes, tables and triggers of :data:`_GUARDS`, the ``ledger_meta`` table with
:data:`~dpinfer.privacy.ledger_store.SCHEMA_VERSION`; budgets registered before version 5 get a
``register`` entry in their history dated at their registration, with no owner).

What protects a SQLite budget
-----------------------------
The triggers of :data:`_GUARDS` refuse, inside SQLite itself, what no dpinfer version should do
(deleting a budget, lowering it below what was spent, un-retiring it, editing or deleting a
charge or a history entry) and write every budget change to ``budget_events``. They are not a
security boundary: whoever can write the file can drop them, so an analyst with write access to
the ledger file is its owner in effect. The budget is protected by the file's permissions: keep
it writable by the data owner only, and give analysts releases through the owner's service
(issue #38) rather than the file. The OS user recorded with each charge and budget change is the
account of the process's effective uid.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..errors import LedgerConnectionError, LedgerFileError, LedgerNotFoundError
from .ledger_store import (
    HOW_TO_CREATE,
    SCHEMA_VERSION,
    BudgetChangeError,
    check_version,
    os_user,
)

T = TypeVar("T")

_FINGERPRINT_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS datasets_fingerprint ON datasets(fingerprint)"
_CHARGE_FINGERPRINT_INDEX = "CREATE INDEX IF NOT EXISTS charges_fingerprint ON charges(fingerprint)"
_CHARGE_DATASET_INDEX = "CREATE INDEX IF NOT EXISTS charges_dataset ON charges(dataset, id)"
_INDEXES = {
    "datasets_fingerprint": _FINGERPRINT_INDEX,
    "charges_fingerprint": _CHARGE_FINGERPRINT_INDEX,
    "charges_dataset": _CHARGE_DATASET_INDEX,
}
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

_UTC_NOW = "strftime('%Y-%m-%dT%H:%M:%S+00:00', 'now')"  # the format of ledger_store.now()
_LAST_SPENT = "(SELECT epsilon_spent FROM charges WHERE dataset = NEW.name ORDER BY id DESC LIMIT 1)"


def _refuse(name: str, when: str, message: str) -> str:
    return f"CREATE TRIGGER IF NOT EXISTS {name} {when} BEGIN SELECT RAISE(ABORT, 'dpinfer: {message}'); END"


# Tables, indexes and triggers of schema version 5 (each statement idempotent): the budget's
# history and composed state, and the integrity rules (module docstring).
_GUARDS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS budget_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL,
    action TEXT NOT NULL,
    epsilon REAL NOT NULL,
    previous REAL,
    reason TEXT NOT NULL DEFAULT '',
    by_user TEXT,
    authenticated_as TEXT,
    created TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS budget_state (
    dataset TEXT PRIMARY KEY REFERENCES datasets(name),
    accountant TEXT NOT NULL,
    last_charge INTEGER NOT NULL,
    spent REAL NOT NULL,
    state BLOB,
    updated TEXT NOT NULL
)""",
    _CHARGE_DATASET_INDEX,
    _refuse("budget_events_no_update", "BEFORE UPDATE ON budget_events", "the budget history is append-only"),
    _refuse("budget_events_no_delete", "BEFORE DELETE ON budget_events", "the budget history is append-only"),
    _refuse("charges_no_delete", "BEFORE DELETE ON charges", "charges are never deleted"),
    _refuse(
        "charges_fixed",
        "BEFORE UPDATE ON charges WHEN OLD.status <> 'charged' OR NEW.status NOT IN ('released', 'failed') "
        "OR NEW.id IS NOT OLD.id OR NEW.dataset IS NOT OLD.dataset OR NEW.event IS NOT OLD.event "
        "OR NEW.label IS NOT OLD.label OR NEW.epsilon_spent IS NOT OLD.epsilon_spent "
        "OR NEW.created IS NOT OLD.created OR NEW.fingerprint IS NOT OLD.fingerprint "
        "OR NEW.charged_by IS NOT OLD.charged_by OR NEW.authenticated_as IS NOT OLD.authenticated_as "
        "OR NEW.purpose IS NOT OLD.purpose OR NEW.insecure IS NOT OLD.insecure",
        "a charge is never edited (only its status moves once from charged to released or failed)",
    ),
    _refuse("datasets_no_delete", "BEFORE DELETE ON datasets", "a budget is never deleted (retire it)"),
    _refuse(
        "datasets_fixed",
        "BEFORE UPDATE ON datasets WHEN NEW.name IS NOT OLD.name OR NEW.delta IS NOT OLD.delta "
        "OR NEW.accountant IS NOT OLD.accountant OR NEW.neighbouring IS NOT OLD.neighbouring "
        "OR NEW.fingerprint IS NOT OLD.fingerprint OR NEW.created IS NOT OLD.created "
        "OR NEW.owner IS NOT OLD.owner",
        "only a budget''s epsilon and retirement may change",
    ),
    _refuse(
        "datasets_stay_retired", "BEFORE UPDATE ON datasets WHEN OLD.retired <> 0 AND NEW.retired = 0",
        "a retired budget stays retired",
    ),
    _refuse(
        "datasets_not_below_spent",
        f"BEFORE UPDATE ON datasets WHEN NEW.epsilon < coalesce({_LAST_SPENT}, 0)",
        "a budget is never lowered below what was spent",
    ),
    "CREATE TRIGGER IF NOT EXISTS datasets_registered AFTER INSERT ON datasets BEGIN "
    "INSERT INTO budget_events (dataset, action, epsilon, previous, reason, by_user, authenticated_as,"
    f" created) VALUES (NEW.name, 'register', NEW.epsilon, NULL, NEW.change_reason, NEW.changed_by,"
    f" NEW.owner, {_UTC_NOW}); END",
    "CREATE TRIGGER IF NOT EXISTS datasets_changed AFTER UPDATE ON datasets WHEN NEW.epsilon IS NOT "
    "OLD.epsilon OR NEW.retired IS NOT OLD.retired BEGIN "
    "INSERT INTO budget_events (dataset, action, epsilon, previous, reason, by_user, authenticated_as,"
    " created) VALUES (NEW.name, CASE WHEN NEW.retired IS NOT OLD.retired THEN 'retire' "
    "WHEN NEW.epsilon > OLD.epsilon THEN 'raise' ELSE 'lower' END, NEW.epsilon, OLD.epsilon, "
    f"NEW.change_reason, NEW.changed_by, NEW.changed_as, {_UTC_NOW}); END",
)
# Budgets registered before version 5 get a 'register' entry dated at their registration.
_BACKFILL_HISTORY = (
    "INSERT INTO budget_events (dataset, action, epsilon, previous, reason, by_user, authenticated_as,"
    " created) SELECT name, 'register', epsilon, NULL, 'registered before budget history was kept"
    " (schema < 5)', NULL, NULL, created FROM datasets d"
    " WHERE NOT EXISTS (SELECT 1 FROM budget_events e WHERE e.dataset = d.name)"
)

# Columns added after the first release of the ledger format: (table, column, declaration).
# A ledger file without one of them gains it with ALTER TABLE ... ADD COLUMN when opened.
_ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("datasets", "fingerprint", "TEXT"),
    ("charges", "insecure", "INTEGER NOT NULL DEFAULT 0"),
    ("charges", "host", "TEXT"),
    ("charges", "fingerprint", "TEXT"),
    ("datasets", "owner", "TEXT"),
    ("datasets", "retired", "INTEGER NOT NULL DEFAULT 0"),
    ("datasets", "change_reason", "TEXT NOT NULL DEFAULT ''"),
    ("datasets", "changed_by", "TEXT"),
    ("datasets", "changed_as", "TEXT"),
    ("charges", "charged_by", "TEXT"),
    ("charges", "authenticated_as", "TEXT"),
    ("charges", "purpose", "TEXT NOT NULL DEFAULT ''"),
)


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to write-ahead logging (persistent; see the module docstring). A file
    another process is reading may refuse the switch for now: it is retried on the next open, and
    the ledger is as safe meanwhile (rollback journal, ``synchronous=FULL``)."""
    try:
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError:
        pass


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

    def lock_budget(self, dataset: str) -> None:
        """Nothing to do: the write transaction holds SQLite's reserved lock."""

    def user(self) -> str:
        return os_user()

    def is_owner(self, owner: str | None) -> bool:
        return owner is None or owner == os_user()

    def record_charge(self, charge: dict[str, Any]) -> int:
        charge_id = self.insert(
            "INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid, insecure,"
            " host, fingerprint, charged_by, authenticated_as, purpose) VALUES (?, ?, ?, ?, 'charged',"
            " ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                charge["dataset"], charge["event"], charge["label"], charge["epsilon_spent"],
                charge["created"], charge["pid"], charge["insecure"], charge["host"],
                charge["fingerprint"], charge["charged_by"] or os_user(), os_user(), charge["purpose"],
            ),
        )
        if charge.get("state") is not None:
            self.rows(
                "INSERT OR REPLACE INTO budget_state (dataset, accountant, last_charge, spent, state,"
                " updated) VALUES (?, ?, ?, ?, ?, ?)",
                (charge["dataset"], charge["accountant"], charge_id, charge["epsilon_spent"],
                 charge["state"], charge["created"]),
            )
        return charge_id

    def set_status(self, charge_id: int, status: str) -> None:
        self.rows("UPDATE charges SET status = ? WHERE id = ? AND status = 'charged'", (status, charge_id))


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
        self._local = threading.local()

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
        conn = self._open(create)
        try:
            yield conn
        finally:
            conn.close()

    def _open(self, create: bool = False) -> sqlite3.Connection:
        """A new autocommit connection with ``synchronous=FULL``; never creates a file unless
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
        except BaseException:
            conn.close()
            raise
        return conn

    def _kept(self) -> sqlite3.Connection:
        """This thread's open connection to the ledger file, opened on first use.

        Transactions reuse it: closing the last connection to a WAL file checkpoints the log into
        the database and syncs it, which would cost a charge more than its own commit. It is
        dropped and reopened when the process forked, when the path now names another file (or
        none: :class:`LedgerNotFoundError`), and after any error other than a refusal.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise LedgerNotFoundError(f"no ledger at {self.path}; {HOW_TO_CREATE}.") from None
        key = (os.getpid(), st.st_dev, st.st_ino)
        kept = getattr(self._local, "conn", None)
        if kept is not None and kept[0] == key:
            return kept[1]
        self._drop()
        conn = self._open()
        self._local.conn = (key, conn)
        return conn

    def _drop(self) -> None:
        kept = getattr(self._local, "conn", None)
        self._local.conn = None
        if kept is not None and kept[0][0] == os.getpid():  # a forked parent's connection is not closed
            try:
                kept[1].close()
            except sqlite3.Error:
                pass

    def transaction(self, body: Callable[[_SQLiteTx], T], *, write: bool, what: str) -> T:
        """Run ``body`` in ``BEGIN IMMEDIATE`` (write) or ``BEGIN DEFERRED`` (read), on this
        thread's kept connection (:meth:`_kept`)."""
        conn = self._kept()
        try:
            with immediate(conn, "IMMEDIATE" if write else "DEFERRED"):
                return body(_SQLiteTx(conn))
        except BaseException as exc:
            if not (isinstance(exc, sqlite3.IntegrityError) and "dpinfer:" in str(exc)) and not (
                isinstance(exc, Exception) and not isinstance(exc, sqlite3.Error)
            ):
                self._drop()  # a connection in an unknown state is not reused
            self._refusal(exc, what)
            raise

    def _refusal(self, exc: BaseException, what: str) -> None:
        """Raise the ledger's own error for a refusal by a trigger or a lock that stayed held."""
        if isinstance(exc, sqlite3.IntegrityError):
            if "dpinfer:" not in str(exc):
                return
            raise BudgetChangeError(
                f"{what}: ledger {self.path} refused it ({exc}); nothing was changed."
            ) from None
        if isinstance(exc, sqlite3.OperationalError):
            if "locked" not in str(exc) and "busy" not in str(exc):
                return
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
                for table, column, declaration in _ADDED_COLUMNS:
                    if column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                for statement in _GUARDS:
                    conn.execute(statement)
                conn.execute(_SET_VERSION, (str(SCHEMA_VERSION),))
        self._use_wal()

    def _use_wal(self) -> None:
        with self.connect() as conn:
            _use_wal(conn)

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
                _use_wal(conn)
                return
            with immediate(conn):
                missing, indexes, version = self._state(conn)  # another process may have done it
                check_version(version, self.location)
                for table, column, declaration in missing:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                for statement in indexes:
                    conn.execute(statement)
                conn.execute(_META)
                for statement in _GUARDS:
                    conn.execute(statement)
                conn.execute(_BACKFILL_HISTORY)
                conn.execute(_SET_VERSION, (str(SCHEMA_VERSION),))
        self._use_wal()
