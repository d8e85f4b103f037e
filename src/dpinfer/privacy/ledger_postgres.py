"""The ledger in a PostgreSQL database: one budget shared by many hosts (psycopg 3).

Install with ``pip install 'dpinfer[postgres]'``. ``Ledger("postgresql://user@host:port/dbname")``
connects with libpq: whatever the URL leaves out (host, port, user, password, sslmode...) comes
from the standard environment (``PGHOST``, ``PGUSER``, ``PGPASSWORD``, ``PGSERVICE``...) and
``~/.pgpass``. The tables live in their own schema, ``dpinfer``, created by ``dpinfer budget init``.

Concurrency
-----------
A charge is one transaction that first locks the data set's row (``SELECT ... FOR UPDATE``), then
reads the recorded history, composes it with the new event under the budget's accountant and
inserts the charge only if the total stays within the budget. The row lock serialises the charges
of one data set across every connection and host; as the transaction runs at READ COMMITTED, the
history read *after* the lock is granted includes every charge committed before it. A
transaction aborted by a serialisation failure or a deadlock is retried from the start (with a
random back-off); a transaction that waits longer than the ledger's ``timeout`` for the lock is
refused (``lock_timeout``), and a client that stalls inside a transaction loses it
(``idle_in_transaction_session_timeout``), so a frozen process cannot block a budget forever.

Crashes
-------
If the client dies or the server stops before ``COMMIT``, the server rolls the transaction back:
the charge is absent and, since the caller's release runs only after the commit, nothing was
released. If the connection is lost during ``COMMIT`` itself, the outcome is unknown to the
client: :class:`~dpinfer.errors.LedgerConnectionError` says so (the charge is then either fully
recorded or absent; ``dpinfer budget history`` tells which). No message ever contains the password.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import LedgerConnectionError, LedgerFileError, LedgerNotFoundError
from .ledger_store import HOW_TO_CREATE, SCHEMA_VERSION, check_version, redact

T = TypeVar("T")

SCHEMA = "dpinfer"
_RETRIES = 50
# advisory-lock key serialising concurrent `budget init`s of one database (any fixed 64-bit int)
_CREATE_LOCK = 0x6470696E666572

_DDL: tuple[str, ...] = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    """CREATE TABLE datasets (
    name TEXT PRIMARY KEY,
    epsilon DOUBLE PRECISION NOT NULL,
    delta DOUBLE PRECISION NOT NULL,
    accountant TEXT NOT NULL,
    neighbouring TEXT NOT NULL,
    created TEXT NOT NULL,
    fingerprint TEXT UNIQUE
)""",
    """CREATE TABLE charges (
    id BIGSERIAL PRIMARY KEY,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    event TEXT NOT NULL,
    label TEXT NOT NULL,
    epsilon_spent DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'released', 'failed')),
    created TEXT NOT NULL,
    pid INTEGER NOT NULL,
    insecure INTEGER NOT NULL DEFAULT 0,
    host TEXT,
    fingerprint TEXT
)""",
    "CREATE INDEX charges_dataset ON charges (dataset, id)",
    "CREATE INDEX charges_fingerprint ON charges (fingerprint)",
    "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
_TABLES = ("datasets", "charges", "ledger_meta")
# Bringing a ledger of an older schema version up to SCHEMA_VERSION (each statement idempotent).
_MIGRATION: tuple[str, ...] = (
    "ALTER TABLE charges ADD COLUMN IF NOT EXISTS fingerprint TEXT",  # version 4
    "CREATE INDEX IF NOT EXISTS charges_fingerprint ON charges (fingerprint)",
)


def _fingerprint_key(fingerprint: str) -> int:
    """The advisory-lock key of a fingerprint: its first 60 bits (a collision only serialises two
    unrelated charges a little more)."""
    return int(fingerprint[:15], 16)


class _PostgresTx:
    """:class:`~dpinfer.privacy.ledger_store.Tx` over one psycopg connection."""

    lock_row = " FOR UPDATE"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(sql.replace("?", "%s"), tuple(params))
        return cur.fetchall() if cur.description is not None else []

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        return int(self._conn.execute(sql.replace("?", "%s") + " RETURNING id", tuple(params)).fetchone()[0])

    def lock_datasets(self) -> None:
        """Registrations wait for each other (charges, which lock single rows, do not wait)."""
        self._conn.execute("LOCK TABLE datasets IN SHARE ROW EXCLUSIVE MODE")

    def lock_fingerprint(self, fingerprint: str) -> None:
        """Registrations and charges of the same data wait for each other (a transaction-scoped
        advisory lock keyed by the fingerprint, released at commit or rollback)."""
        self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_fingerprint_key(fingerprint),))


class PostgresStore:
    """The ledger in the PostgreSQL database named by ``url`` (see the module docstring).

    Parameters
    ----------
    url
        ``postgresql://[user[:password]@][host][:port][/dbname][?param=value...]``.
    timeout
        Seconds a charge may wait for another client's lock on the same data set.
    """

    backend = "postgresql"

    def __init__(self, url: str, timeout: float) -> None:
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise LedgerConnectionError(
                f"the PostgreSQL ledger {redact(url)} needs psycopg 3: pip install 'dpinfer[postgres]'."
            ) from None
        self._psycopg = psycopg
        try:
            params: dict[str, Any] = dict(conninfo_to_dict(url))
        except psycopg.Error as exc:
            raise LedgerFileError(f"cannot read the ledger URL {redact(url)}: {redact(exc)}") from None
        self._secret = str(params["password"]) if params.get("password") else None
        self.timeout = float(timeout)
        ms = max(int(self.timeout * 1000), 1)
        idle_ms = max(ms, 60_000)
        settings = (
            f"-c search_path={SCHEMA} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={idle_ms}"
        )
        params["options"] = f"{params.get('options', '')} {settings}".strip()
        params.setdefault("application_name", "dpinfer-ledger")
        self._params = params
        where = params.get("host") or "(libpq default host)"
        self.location = redact(
            f"postgresql://{params.get('user', '')}{'@' if params.get('user') else ''}{where}"
            f"{':' + str(params['port']) if params.get('port') else ''}/{params.get('dbname', '')}"
        )

    def _scrub(self, exc: BaseException) -> str:
        return " ".join(redact(exc, self._secret).split())

    def _connect(self, what: str) -> Any:
        try:
            return self._psycopg.connect(**self._params)
        except self._psycopg.Error as exc:
            raise LedgerConnectionError(
                f"{what}: cannot connect to ledger {self.location}: {self._scrub(exc)}. Nothing was "
                "recorded or released. Check the URL, PG* environment variables and ~/.pgpass."
            ) from None

    @classmethod
    def open(cls, url: str, timeout: float, *, create: bool) -> PostgresStore:
        """The ledger in the database ``url``; its schema created first if ``create``."""
        store = cls(url, timeout)
        if create:
            store.create()
        kind, version = store.kind()
        if kind == "empty":
            raise LedgerNotFoundError(f"no ledger in database {store.location}; {HOW_TO_CREATE}.")
        if kind == "denied":
            raise LedgerConnectionError(
                f"the user of {store.location} may not use the ledger's schema {SCHEMA!r}; its owner can "
                f"grant it: GRANT USAGE ON SCHEMA {SCHEMA} TO <user>; GRANT SELECT, INSERT, UPDATE ON ALL "
                f"TABLES IN SCHEMA {SCHEMA} TO <user>; GRANT USAGE ON ALL SEQUENCES IN SCHEMA {SCHEMA} "
                "TO <user>;"
            )
        if kind == "other":
            raise LedgerFileError(
                f"database {store.location} has a schema {SCHEMA!r} that is not a complete dpinfer "
                "ledger; it was left untouched. Use another database for the ledger."
            )
        check_version(version, store.location)
        if version is None or version < SCHEMA_VERSION:
            store.migrate()
        return store

    def migrate(self) -> None:
        """Bring a ledger of an older schema version up to :data:`SCHEMA_VERSION` (in place, once,
        under the creation lock); the ledger's owner must do it (it alters the tables)."""

        def upgrade(tx: _PostgresTx) -> None:
            tx.rows("SELECT pg_advisory_xact_lock(?)", (_CREATE_LOCK,))
            row = tx.rows("SELECT value FROM ledger_meta WHERE key = 'schema_version'")
            if row and int(row[0][0]) >= SCHEMA_VERSION:
                return  # another client did it meanwhile
            for statement in _MIGRATION:
                tx.rows(statement)
            tx.rows(
                "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) "
                "DO UPDATE SET value = EXCLUDED.value",
                (str(SCHEMA_VERSION),),
            )

        try:
            self.transaction(upgrade, write=True, what="upgrading the ledger's schema")
        except LedgerFileError as exc:
            raise LedgerFileError(
                f"ledger {self.location} has an older schema and must be upgraded to version "
                f"{SCHEMA_VERSION} by its owner (the database user who ran `dpinfer budget init`): "
                f"open it once as that user, e.g. `dpinfer budget show --ledger URL` ({exc})"
            ) from None

    def kind(self) -> tuple[str, int | None]:
        """``("ledger", version)``, ``("empty", None)`` (no ``dpinfer`` schema), ``("denied", None)``
        (the user may not use it) or ``("other", None)``."""

        def look(tx: _PostgresTx) -> tuple[str, int | None]:
            found = tx.rows(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = ? AND c.relkind = 'r'",
                (SCHEMA,),
            )
            schema = tx.rows("SELECT 1 FROM pg_namespace WHERE nspname = ?", (SCHEMA,))
            names = {r[0] for r in found}
            if not schema:
                return "empty", None
            if not tx.rows("SELECT has_schema_privilege(?, 'USAGE')", (SCHEMA,))[0][0]:
                return "denied", None
            if not set(_TABLES) <= names:
                return "other", None
            row = tx.rows("SELECT value FROM ledger_meta WHERE key = 'schema_version'")
            return "ledger", int(row[0][0]) if row else None

        return self.transaction(look, write=False, what="opening the ledger")

    def create(self) -> None:
        """Create the ``dpinfer`` schema and its tables; a ledger already there is kept as it is."""

        def make(tx: _PostgresTx) -> None:
            tx.rows("SELECT pg_advisory_xact_lock(?)", (_CREATE_LOCK,))
            if tx.rows("SELECT 1 FROM pg_namespace WHERE nspname = ?", (SCHEMA,)):
                return  # a ledger (or something else, refused by open) is already there
            for statement in _DDL:
                tx.rows(statement)
            tx.rows(
                "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

        self.transaction(make, write=True, what="creating the ledger")

    def transaction(self, body: Callable[[_PostgresTx], T], *, write: bool, what: str) -> T:
        """Run ``body`` in one transaction (READ COMMITTED for writes, REPEATABLE READ READ ONLY
        for reads); retried on serialisation failures and deadlocks."""
        errors = self._psycopg.errors
        for attempt in range(_RETRIES):
            conn = self._connect(what)
            committing = False
            try:
                if not write:
                    conn.isolation_level = self._psycopg.IsolationLevel.REPEATABLE_READ
                    conn.read_only = True
                result = body(_PostgresTx(conn))
                committing = True
                conn.commit()
                return result
            except (errors.SerializationFailure, errors.DeadlockDetected):
                _rollback(conn)
                if attempt == _RETRIES - 1:
                    raise LedgerConnectionError(
                        f"{what}: ledger {self.location} stayed too contended ({_RETRIES} serialisation "
                        "retries); nothing was recorded or released. Try again."
                    ) from None
                time.sleep(random.uniform(0.001, 0.005) * min(attempt + 1, 20))
            except errors.LockNotAvailable:
                _rollback(conn)
                raise LedgerConnectionError(
                    f"{what}: waited more than {self.timeout:g} s for another client's lock in ledger "
                    f"{self.location}; nothing was recorded or released. Try again, or pass a longer "
                    "timeout."
                ) from None
            except self._psycopg.OperationalError as exc:
                outcome = (
                    "the connection was lost while committing: the charge is either fully recorded or "
                    "absent (see `dpinfer budget history`)"
                    if committing
                    else "nothing was recorded (the transaction was rolled back)"
                )
                raise LedgerConnectionError(
                    f"{what}: lost the connection to ledger {self.location} ({self._scrub(exc)}); "
                    f"{outcome}. Nothing was released."
                ) from None
            except self._psycopg.Error as exc:
                _rollback(conn)
                raise LedgerFileError(
                    f"{what}: ledger {self.location} refused the operation ({self._scrub(exc)}); "
                    "nothing was recorded or released. Is it a dpinfer ledger of this version?"
                ) from None
            except BaseException:
                _rollback(conn)
                raise
            finally:
                conn.close()
        raise AssertionError("unreachable")  # pragma: no cover

    def integrity_check(self) -> bool:
        """All tables present, the schema version known, and no charge of an unknown data set."""

        def check(tx: _PostgresTx) -> bool:
            orphans = tx.rows(
                "SELECT count(*) FROM charges c LEFT JOIN datasets d ON d.name = c.dataset "
                "WHERE d.name IS NULL"
            )
            return orphans[0][0] == 0

        kind, version = self.kind()
        return kind == "ledger" and version == SCHEMA_VERSION and self.transaction(
            check, write=False, what="checking the ledger"
        )


def _rollback(conn: Any) -> None:
    try:
        conn.rollback()
    except Exception:  # noqa: BLE001 - the connection is closed next anyway
        pass
