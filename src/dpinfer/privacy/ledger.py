"""The budget ledger: one SQLite file that never lets a data set's budget be overspent.

Concurrency and crashes
-----------------------
A charge runs inside ``BEGIN IMMEDIATE``: SQLite's reserved lock serialises writers across
processes, so the check "history + new event <= budget" and the insert of the new charge are one
atomic step. The charge is committed *before* the caller's release code runs. If that code raises,
the charge stays (the noise may already have been drawn) and is marked ``failed``; if the process
dies, it stays as ``charged``. Both count against the budget: the ledger errs on the side of
privacy. SQLite's rollback journal keeps the file consistent if a process is killed mid-write.

Opening and creating
--------------------
``Ledger(path)`` opens an *existing* ledger and never creates a file: a mistyped path raises
:class:`LedgerNotFoundError` instead of silently starting a fresh, empty budget. A ledger is
created only on purpose: :meth:`Ledger.create`, ``Ledger(path, create=True)`` or
``dpinfer budget init``; none of them overwrites a file that is not a ledger. Ledger files written
by older versions open as they are and gain the newer columns on first open.

Fingerprints
------------
A data set may be registered with a fingerprint of its data (:func:`data_fingerprint` for arrays,
:func:`file_fingerprint` for files, or any hex digest). The same fingerprint cannot be registered
under a second name, so the same data cannot get a second budget by being registered again under
a new name by accident. A fingerprint is a hash of exact values (arrays) or exact bytes (files):
reordered records, one changed value or a reformatted file give a different fingerprint, so it
catches accidental re-registration, not an adversary.

Insecure randomness
-------------------
A charge made for a release whose noise came from a deterministic test RNG is stored with
``insecure=True`` and shown as such by :meth:`Ledger.history` and ``dpinfer budget history``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import (
    BudgetExceededError,
    InvalidDataError,
    InvalidPrivacyParameterError,
    NeighbouringRelationError,
    PrivacyError,
    UnknownDatasetError,
)
from .accountants import get_accountant
from .event_conversion import describe, event_from_dict, event_to_dict
from .events import PrivacyEvent, compose
from .validation import check_delta, check_epsilon, check_relation

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

_HOW_TO_CREATE = (
    "create one with `dpinfer budget init --ledger PATH --dataset NAME --epsilon E` or "
    "Ledger.create(path) (or Ledger(path, create=True))"
)

# Relative slack for floating-point noise in "spent <= budget" (e.g. 0.1 + 0.2 vs 0.3).
_TOLERANCE = 1e-9


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class LedgerNotFoundError(PrivacyError, FileNotFoundError):
    """There is no ledger file at the path given; nothing was created."""

    def __str__(self) -> str:  # FileNotFoundError formats (errno, strerror); keep the message.
        return str(self.args[0]) if self.args else ""


class LedgerFileError(PrivacyError, ValueError):
    """The file at the path given exists but is not a dpinfer ledger; it was left untouched."""


_FINGERPRINT_TAG = b"dpinfer-data-fingerprint-v1\0"
_HEX = re.compile(r"[0-9a-fA-F]{16,}")


def data_fingerprint(data: Any) -> str:
    """A SHA-256 hex digest of an array's values, shape and (normalised) dtype.

    The array is made C-contiguous and little-endian; booleans, integers of magnitude up to
    2**53 and floats are hashed as float64 (so the same numbers held as ``int`` or ``float`` give
    the same fingerprint), larger integers as int64/uint64. ``-0.0`` is hashed as ``0.0`` and
    every NaN as the same NaN. Any other change (one value, the order of the records, the shape)
    gives a different fingerprint: it identifies exact data, it does not detect near-copies.
    Pure: nothing is stored or charged.

    Raises
    ------
    InvalidDataError
        If ``data`` is not numeric (strings, objects, complex numbers).
    """
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind in "iu" and arr.size and not (-(2**53) <= int(arr.min()) and int(arr.max()) <= 2**53):
        norm = np.ascontiguousarray(arr, dtype=np.dtype("<u8" if kind == "u" else "<i8"))
    elif kind in "biuf":
        norm = np.ascontiguousarray(arr, dtype=np.dtype("<f8")) + 0.0  # -0.0 -> 0.0
        norm[np.isnan(norm)] = np.nan
    else:
        raise InvalidDataError(
            f"cannot fingerprint data of dtype {arr.dtype}: pass a numeric array (or a hex digest "
            "string computed elsewhere)."
        )
    h = hashlib.sha256(_FINGERPRINT_TAG)
    h.update(f"{norm.dtype.str}{norm.shape}".encode())
    h.update(norm.tobytes())
    return h.hexdigest()


def file_fingerprint(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of a file's bytes (what ``sha256sum`` prints).

    This is what ``dpinfer budget init --data FILE`` registers and what ``dpinfer dpvi`` /
    ``dpinfer abcdp`` compare against: the same records in a reformatted file (other number
    formatting, column order, line endings) are a different fingerprint.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _as_fingerprint(fingerprint: Any) -> str | None:
    """A registered fingerprint from what :meth:`Ledger.register` accepts."""
    if fingerprint is None:
        return None
    if isinstance(fingerprint, str):
        fp = fingerprint.strip()
        if not _HEX.fullmatch(fp):
            raise InvalidPrivacyParameterError(
                f"a fingerprint string must be a hex digest of at least 16 digits, got {fingerprint!r}"
                "; pass the data itself to have it hashed."
            )
        return fp.lower()
    if isinstance(fingerprint, (bytes, bytearray, memoryview)):
        return hashlib.sha256(bytes(fingerprint)).hexdigest()  # as file_fingerprint of those bytes
    return data_fingerprint(fingerprint)


@dataclass(frozen=True)
class Budget:
    """A data set's registered budget."""

    dataset: str
    epsilon: float
    delta: float
    accountant: str
    neighbouring: str
    fingerprint: str | None = None


@dataclass(frozen=True)
class Charge:
    """A committed charge (yielded by :meth:`Ledger.charge`)."""

    id: int
    dataset: str
    event: PrivacyEvent
    epsilon_spent: float
    label: str
    insecure: bool = False


class Ledger:
    """A privacy-budget ledger stored in one SQLite file.

    Parameters
    ----------
    path
        The database file. It must already be a ledger unless ``create`` is true.
    timeout
        Seconds to wait for another process's lock before giving up.
    create
        Create the ledger (and missing parent folders) if there is no file at ``path``; an
        existing ledger is opened as it is. A file that is not a ledger is never overwritten.

    Raises
    ------
    LedgerNotFoundError
        No file at ``path`` and ``create`` is false (nothing is created).
    LedgerFileError
        ``path`` exists but is not a ledger (left untouched).
    """

    def __init__(
        self, path: str | os.PathLike[str], timeout: float = 120.0, *, create: bool = False
    ) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self._uri = self.path.absolute().as_uri()
        if create:
            self._create()
        elif not self.path.exists():
            raise LedgerNotFoundError(f"no ledger at {self.path}; {_HOW_TO_CREATE}.")
        elif self.path.is_dir():
            raise LedgerFileError(f"{self.path} is a folder, not a ledger file.")
        elif self._kind() != "ledger":
            raise LedgerFileError(
                f"{self.path} is not a dpinfer ledger (no datasets/charges tables); pass the path "
                f"of an existing ledger, or {_HOW_TO_CREATE} at a new path."
            )
        self._migrate()

    @classmethod
    def create(cls, path: str | os.PathLike[str], timeout: float = 120.0) -> Ledger:
        """Create a ledger at ``path``, or open the ledger already there.

        Refuses (:class:`LedgerFileError`) to touch a file at ``path`` that is not a ledger.
        """
        return cls(path, timeout, create=True)

    @contextmanager
    def _connect(self, create: bool = False) -> Iterator[sqlite3.Connection]:
        # mode=rw: opening never creates a file, even if the ledger is removed under our feet
        mode = "rwc" if create else "rw"
        try:
            conn = sqlite3.connect(
                f"{self._uri}?mode={mode}", timeout=self.timeout, isolation_level=None, uri=True
            )
        except sqlite3.OperationalError as exc:
            if not self.path.exists():
                raise LedgerNotFoundError(f"no ledger at {self.path}; {_HOW_TO_CREATE}.") from None
            raise LedgerFileError(f"cannot open ledger {self.path}: {exc}.") from None
        try:
            conn.execute("PRAGMA synchronous=FULL")
            yield conn
        finally:
            conn.close()

    def _kind(self) -> str:
        """``"ledger"``, ``"empty"`` (a database without tables, or an empty file) or ``"other"``."""
        if not self.path.is_file():
            return "other"
        try:
            with self._connect() as conn:
                names = {
                    r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                }
        except (sqlite3.DatabaseError, LedgerFileError):
            return "other"
        if _TABLES <= names:
            return "ledger"
        return "other" if names else "empty"

    def _create(self) -> None:
        if self.path.exists():
            kind = self._kind()
            if kind == "ledger":
                return
            if kind == "other":
                raise LedgerFileError(
                    f"{self.path} exists and is not a dpinfer ledger; refusing to overwrite it. "
                    "Choose another path for the ledger."
                )
        elif not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect(create=True) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                names = {
                    r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                }
                if names and not _TABLES <= names:  # someone else wrote something else meanwhile
                    raise LedgerFileError(
                        f"{self.path} is not a dpinfer ledger; refusing to overwrite it."
                    )
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

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

    def _migrate(self) -> None:
        """Bring a ledger written by an older version up to the current schema (in place)."""
        with self._connect() as conn:
            missing, no_index = self._missing(conn)
            if not missing and not no_index:
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                missing, no_index = self._missing(conn)  # another process may have done it
                for table, column, declaration in missing:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                if no_index:
                    conn.execute(_FINGERPRINT_INDEX)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # -- budgets -----------------------------------------------------------------------------
    def register(
        self,
        dataset: str,
        epsilon: float,
        delta: float = 0.0,
        accountant: str = "pure",
        neighbouring: str = "replace-one",
        *,
        fingerprint: Any = None,
    ) -> Budget:
        """Register ``dataset`` with a total budget (ε, δ) interpreted by ``accountant``.

        ``fingerprint`` binds the budget to the data: a hex digest string (e.g. from
        :func:`file_fingerprint`), raw ``bytes`` (hashed like a file's bytes) or array-like data
        (hashed by :func:`data_fingerprint`). A fingerprint already registered under another name
        is refused: the same data cannot get a second budget. Without one, nothing is checked.
        """
        if not isinstance(dataset, str) or not dataset.strip():
            raise InvalidPrivacyParameterError("dataset must be a non-empty name.")
        budget = Budget(
            dataset,
            check_epsilon(epsilon, "budget epsilon"),
            check_delta(delta, "budget delta"),
            get_accountant(accountant).name,
            check_relation(neighbouring),
            _as_fingerprint(fingerprint),
        )
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (dataset,)).fetchone():
                    raise InvalidPrivacyParameterError(
                        f"dataset {dataset!r} is already registered in {self.path}; budgets cannot "
                        "be reset or raised. Use a new dataset name only for genuinely new data."
                    )
                if budget.fingerprint is not None:
                    row = conn.execute(
                        "SELECT name FROM datasets WHERE fingerprint = ?", (budget.fingerprint,)
                    ).fetchone()
                    if row is not None:
                        raise InvalidPrivacyParameterError(
                            f"these data (fingerprint {budget.fingerprint[:16]}...) are already "
                            f"registered as dataset {row[0]!r} in {self.path}: the same data cannot "
                            f"get a second budget. Charge releases of these data to {row[0]!r}."
                        )
                conn.execute(
                    "INSERT INTO datasets (name, epsilon, delta, accountant, neighbouring, created,"
                    " fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        dataset,
                        budget.epsilon,
                        budget.delta,
                        budget.accountant,
                        budget.neighbouring,
                        _now(),
                        budget.fingerprint,
                    ),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return budget

    def datasets(self) -> list[str]:
        """Names of all registered data sets."""
        with self._connect() as conn:
            return [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]

    def budget(self, dataset: str) -> Budget:
        """The registered budget of ``dataset``."""
        with self._connect() as conn:
            return self._budget(conn, dataset)

    def _budget(self, conn: sqlite3.Connection, dataset: str) -> Budget:
        row = conn.execute(
            "SELECT name, epsilon, delta, accountant, neighbouring, fingerprint FROM datasets "
            "WHERE name = ?",
            (dataset,),
        ).fetchone()
        if row is None:
            known = [r[0] for r in conn.execute("SELECT name FROM datasets")]
            raise UnknownDatasetError(
                f"dataset {dataset!r} is not registered in ledger {self.path} (known: {known}). "
                "Register it first: `dpinfer budget init --ledger PATH --dataset NAME --epsilon E`."
            )
        return Budget(*row)

    def _events(self, conn: sqlite3.Connection, dataset: str) -> list[PrivacyEvent]:
        rows = conn.execute("SELECT event FROM charges WHERE dataset = ? ORDER BY id", (dataset,)).fetchall()
        return [event_from_dict(json.loads(r[0])) for r in rows]

    # -- charging ----------------------------------------------------------------------------
    @contextmanager
    def charge(
        self, dataset: str, event: PrivacyEvent, label: str = "", *, insecure: bool = False
    ) -> Iterator[Charge]:
        """Charge ``event`` to ``dataset``, then run the body (the release).

        The composed history plus ``event`` must stay within the budget under the data set's
        accountant, else :class:`BudgetExceededError` is raised and nothing is recorded. The
        charge is committed before the body runs; if the body raises, it is kept and marked
        ``failed``. ``insecure=True`` records that the release's noise comes from a deterministic
        test RNG (pass ``rng.deterministic``); it is charged all the same.
        """
        if not isinstance(event, PrivacyEvent):
            raise InvalidPrivacyParameterError(
                f"ledger.charge takes a PrivacyEvent, got {type(event).__name__}."
            )
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                budget = self._budget(conn, dataset)
                if event.neighbouring != budget.neighbouring:
                    raise NeighbouringRelationError(
                        f"dataset {dataset!r} is budgeted under {budget.neighbouring!r} but the "
                        f"event is {event.neighbouring!r}; convert it explicitly (e.g. "
                        "dpinfer.privacy.to_replace_one(event))."
                    )
                accountant = get_accountant(budget.accountant)
                accountant.check_supported(event)
                history = self._events(conn, dataset)
                total = compose(*history, event)
                spent = accountant.epsilon(total, budget.delta)
                if not math.isfinite(spent) or spent > budget.epsilon * (1 + _TOLERANCE):
                    before = accountant.epsilon(compose(*history), budget.delta)
                    raise BudgetExceededError(
                        f"charging {describe(event)} to {dataset!r} would bring its spend to "
                        f"epsilon={spent:.6g} (accountant '{budget.accountant}', delta="
                        f"{budget.delta:g}) over the budget epsilon={budget.epsilon:g}; "
                        f"already spent {before:.6g}. Nothing was charged or released. Use a "
                        "smaller epsilon for this release or stop querying this data set."
                    )
                cur = conn.execute(
                    "INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid,"
                    " insecure) VALUES (?, ?, ?, ?, 'charged', ?, ?, ?)",
                    (
                        dataset,
                        json.dumps(event_to_dict(event)),
                        label,
                        spent,
                        _now(),
                        os.getpid(),
                        int(bool(insecure)),
                    ),
                )
                charge_id = int(cur.lastrowid)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        charge = Charge(charge_id, dataset, event, spent, label, bool(insecure))
        try:
            yield charge
        except BaseException:
            self._set_status(charge_id, "failed")
            raise
        self._set_status(charge_id, "released")

    def _set_status(self, charge_id: int, status: str) -> None:
        for attempt in range(5):
            try:
                with self._connect() as conn:
                    conn.execute("UPDATE charges SET status = ? WHERE id = ?", (status, charge_id))
                return
            except sqlite3.OperationalError:  # pragma: no cover - lock contention
                if attempt == 4:
                    raise
                time.sleep(0.2)

    # -- queries -----------------------------------------------------------------------------
    def spent(self, dataset: str) -> float:
        """ε spent so far (all charges, including failed ones) at the budget's δ."""
        with self._connect() as conn:
            budget = self._budget(conn, dataset)
            events = self._events(conn, dataset)
        if not events:
            return 0.0
        return get_accountant(budget.accountant).epsilon(compose(*events), budget.delta)

    def remaining(self, dataset: str) -> float:
        """Budget ε minus ε spent (at the budget's δ); never negative."""
        budget = self.budget(dataset)
        return max(budget.epsilon - self.spent(dataset), 0.0)

    def history(self, dataset: str) -> list[dict[str, Any]]:
        """All charges of ``dataset`` in order, as dictionaries (``insecure``: the release's
        noise came from a deterministic test RNG)."""
        with self._connect() as conn:
            self._budget(conn, dataset)
            rows = conn.execute(
                "SELECT id, event, label, epsilon_spent, status, created, pid, insecure FROM "
                "charges WHERE dataset = ? ORDER BY id",
                (dataset,),
            ).fetchall()
        return [
            {
                "id": r[0],
                "event": json.loads(r[1]),
                "label": r[2],
                "epsilon_spent_after": r[3],
                "status": r[4],
                "created": r[5],
                "pid": r[6],
                "insecure": bool(r[7]),
            }
            for r in rows
        ]

    def integrity_check(self) -> bool:
        """SQLite's own integrity check of the file."""
        with self._connect() as conn:
            return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"
