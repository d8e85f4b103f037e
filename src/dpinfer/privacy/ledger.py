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
by older versions open as they are and gain the newer columns on first open
(:mod:`dpinfer.privacy.ledger_store` holds the file's schema and its migration).

Fingerprints
------------
A data set may be registered with a fingerprint of its data (:mod:`dpinfer.privacy.fingerprint`).
The same fingerprint cannot be registered under a second name, so the same data cannot get a
second budget by being registered again under a new name by accident.

Insecure randomness
-------------------
A charge made for a release whose noise came from a deterministic test RNG is stored with
``insecure=True`` and shown as such by :meth:`Ledger.history` and ``dpinfer budget history``.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    NeighbouringRelationError,
    PrivacyWarning,
    UnknownDatasetError,
)
from .accountants import get_accountant
from .deprecation import moved_names
from .event_conversion import describe, event_from_dict, event_to_dict
from .events import PrivacyEvent, compose
from .fingerprint import as_fingerprint
from .ledger_store import HOW_TO_CREATE, LedgerFile, LedgerFileError, LedgerNotFoundError, immediate, now
from .validation import check_delta, check_epsilon, check_relation

__all__ = ["Budget", "Charge", "Ledger", "LedgerFileError", "LedgerNotFoundError"]

#: Fingerprint functions that moved to :mod:`dpinfer.privacy.fingerprint` (aliases for one release).
__getattr__ = moved_names(
    __name__, dict.fromkeys(("data_fingerprint", "file_fingerprint"), "dpinfer.privacy.fingerprint")
)

# Relative slack for floating-point noise in "spent <= budget" (e.g. 0.1 + 0.2 vs 0.3).
_TOLERANCE = 1e-9


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
        self._file = LedgerFile(self.path, self.timeout)
        if create:
            self._file.create()
        elif not self.path.exists():
            raise LedgerNotFoundError(f"no ledger at {self.path}; {HOW_TO_CREATE}.")
        elif self.path.is_dir():
            raise LedgerFileError(f"{self.path} is a folder, not a ledger file.")
        elif self._file.kind() != "ledger":
            raise LedgerFileError(
                f"{self.path} is not a dpinfer ledger (no datasets/charges tables); pass the path "
                f"of an existing ledger, or {HOW_TO_CREATE} at a new path."
            )
        self._file.migrate()

    @classmethod
    def create(cls, path: str | os.PathLike[str], timeout: float = 120.0) -> Ledger:
        """Create a ledger at ``path``, or open the ledger already there.

        Refuses (:class:`LedgerFileError`) to touch a file at ``path`` that is not a ledger.
        """
        return cls(path, timeout, create=True)

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
            as_fingerprint(fingerprint),
        )
        with self._file.connect() as conn, immediate(conn):
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
                    now(),
                    budget.fingerprint,
                ),
            )
        return budget

    def datasets(self) -> list[str]:
        """Names of all registered data sets."""
        with self._file.connect() as conn:
            return [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]

    def budget(self, dataset: str) -> Budget:
        """The registered budget of ``dataset``."""
        with self._file.connect() as conn:
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
        with self._file.connect() as conn, immediate(conn):
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
                    now(),
                    os.getpid(),
                    int(bool(insecure)),
                ),
            )
            charge_id = int(cur.lastrowid)
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
                with self._file.connect() as conn:
                    conn.execute("UPDATE charges SET status = ? WHERE id = ?", (status, charge_id))
                return
            except sqlite3.OperationalError:  # pragma: no cover - lock contention
                if attempt == 4:
                    raise
                time.sleep(0.2)

    # -- queries -----------------------------------------------------------------------------
    def spent(self, dataset: str) -> float:
        """ε spent so far (all charges, including failed ones) at the budget's δ."""
        with self._file.connect() as conn:
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
        with self._file.connect() as conn:
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
        with self._file.connect() as conn:
            return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"


def charge_or_warn(
    ledger: Ledger | None,
    dataset: str | None,
    event: PrivacyEvent,
    *,
    label: str,
    insecure: bool,
    what: str = "release",
    stacklevel: int = 3,
) -> AbstractContextManager[Any]:
    """The context a release runs in: :meth:`Ledger.charge` before the body, or, without a ledger,
    a :class:`~dpinfer.errors.PrivacyWarning` that the release ``what label`` is unaccounted (its
    report must then say ``accounted: false``) and no charge.

    ``stacklevel`` is passed to :func:`warnings.warn` (3: the caller of the releasing function).
    """
    if ledger is None:
        warnings.warn(
            f"{what} {label!r} made WITHOUT a ledger: it is not accounted against any budget (its "
            "report says accounted: false). Pass ledger=... and dataset=... to charge it.",
            PrivacyWarning,
            stacklevel=stacklevel,
        )
        return nullcontext()
    if not dataset:
        raise InvalidPrivacyParameterError("a ledger charge needs the dataset name.")
    return ledger.charge(dataset, event, label=label, insecure=insecure)
