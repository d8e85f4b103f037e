"""The budget ledger: one SQLite file that never lets a data set's budget be overspent.

Concurrency and crashes
-----------------------
A charge runs inside ``BEGIN IMMEDIATE``: SQLite's reserved lock serialises writers across
processes, so the check "history + new event <= budget" and the insert of the new charge are one
atomic step. The charge is committed *before* the caller's release code runs. If that code raises,
the charge stays (the noise may already have been drawn) and is marked ``failed``; if the process
dies, it stays as ``charged``. Both count against the budget: the ledger errs on the side of
privacy. SQLite's rollback journal keeps the file consistent if a process is killed mid-write.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .accountants import get_accountant
from .errors import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    NeighbouringRelationError,
    UnknownDatasetError,
)
from .events import (
    PrivacyEvent,
    compose,
    describe,
    event_from_dict,
    event_to_dict,
)
from .validation import check_delta, check_epsilon, check_relation

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    accountant TEXT NOT NULL,
    neighbouring TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    event TEXT NOT NULL,
    label TEXT NOT NULL,
    epsilon_spent REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'released', 'failed')),
    created TEXT NOT NULL,
    pid INTEGER NOT NULL
);
"""

# Relative slack for floating-point noise in "spent <= budget" (e.g. 0.1 + 0.2 vs 0.3).
_TOLERANCE = 1e-9


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Budget:
    """A data set's registered budget."""

    dataset: str
    epsilon: float
    delta: float
    accountant: str
    neighbouring: str


@dataclass(frozen=True)
class Charge:
    """A committed charge (yielded by :meth:`Ledger.charge`)."""

    id: int
    dataset: str
    event: PrivacyEvent
    epsilon_spent: float
    label: str


class Ledger:
    """A privacy-budget ledger stored in one SQLite file.

    Parameters
    ----------
    path
        The database file; created (with its tables) if missing.
    timeout
        Seconds to wait for another process's lock before giving up.
    """

    def __init__(self, path: str | os.PathLike[str], timeout: float = 120.0) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            yield conn
        finally:
            conn.close()

    # -- budgets -----------------------------------------------------------------------------
    def register(
        self,
        dataset: str,
        epsilon: float,
        delta: float = 0.0,
        accountant: str = "pure",
        neighbouring: str = "replace-one",
    ) -> Budget:
        """Register ``dataset`` with a total budget (ε, δ) interpreted by ``accountant``."""
        if not isinstance(dataset, str) or not dataset.strip():
            raise InvalidPrivacyParameterError("dataset must be a non-empty name.")
        budget = Budget(
            dataset,
            check_epsilon(epsilon, "budget epsilon"),
            check_delta(delta, "budget delta"),
            get_accountant(accountant).name,
            check_relation(neighbouring),
        )
        with self._connect() as conn:
            try:
                conn.execute(
                    "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        dataset,
                        budget.epsilon,
                        budget.delta,
                        budget.accountant,
                        neighbouring,
                        _now(),
                    ),
                )
            except sqlite3.IntegrityError:
                raise InvalidPrivacyParameterError(
                    f"dataset {dataset!r} is already registered in {self.path}; budgets cannot be "
                    "reset or raised. Use a new dataset name only for genuinely new data."
                ) from None
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
            "SELECT name, epsilon, delta, accountant, neighbouring FROM datasets WHERE name = ?",
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
    def charge(self, dataset: str, event: PrivacyEvent, label: str = "") -> Iterator[Charge]:
        """Charge ``event`` to ``dataset``, then run the body (the release).

        The composed history plus ``event`` must stay within the budget under the data set's
        accountant, else :class:`BudgetExceededError` is raised and nothing is recorded. The
        charge is committed before the body runs; if the body raises, it is kept and marked
        ``failed``.
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
                    "INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid)"
                    " VALUES (?, ?, ?, ?, 'charged', ?, ?)",
                    (dataset, json.dumps(event_to_dict(event)), label, spent, _now(), os.getpid()),
                )
                charge_id = int(cur.lastrowid)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        charge = Charge(charge_id, dataset, event, spent, label)
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
        """All charges of ``dataset`` in order, as dictionaries."""
        with self._connect() as conn:
            self._budget(conn, dataset)
            rows = conn.execute(
                "SELECT id, event, label, epsilon_spent, status, created, pid FROM charges "
                "WHERE dataset = ? ORDER BY id",
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
            }
            for r in rows
        ]

    def integrity_check(self) -> bool:
        """SQLite's own integrity check of the file."""
        with self._connect() as conn:
            return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"
