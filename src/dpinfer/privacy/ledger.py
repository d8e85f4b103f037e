"""The budget ledger: never lets a data set's budget be overspent, on one host or many.

Backends
--------
``Ledger("budget.db")`` keeps the ledger in one SQLite file (safe across the processes of one
host); ``Ledger("postgresql://user@host/dbname")`` keeps it in a PostgreSQL database shared by
many hosts (optional extra ``postgres``; connection settings from the URL, libpq's environment
and ``~/.pgpass``). Both have the same API, the same tables and the same guarantees
(:mod:`dpinfer.privacy.ledger_store`, :mod:`~dpinfer.privacy.ledger_sqlite`,
:mod:`~dpinfer.privacy.ledger_postgres`); a password never appears in a message, a listing or
``repr`` (:attr:`Ledger.location` is the target with it redacted).

Concurrency and crashes
-----------------------
A charge is one write transaction that excludes every other charge of the data set (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: a row lock on the data set), so the check "history + new event
<= budget" and the insert of the new charge are one atomic step. The history's composition is kept
in the ledger (:mod:`dpinfer.privacy.ledger_state`) and updated in that same transaction, so a
charge composes only its own event: it costs the same at the 10 000th release as at the first
(``benchmarks/ledger_charge_cost.py``); :meth:`Ledger.recompute` (``dpinfer budget check``)
recomposes everything as a check. The charge is committed *before*
the caller's release code runs. If that code raises, the charge stays (the noise may already have
been drawn) and is marked ``failed``; if the process dies, it stays as ``charged``. Both count
against the budget: the ledger errs on the side of privacy. A client or server that dies before
the commit leaves no charge, and nothing was released.

Opening and creating
--------------------
``Ledger(target)`` opens an *existing* ledger and never creates one: a mistyped path raises
:class:`LedgerNotFoundError` instead of silently starting a fresh, empty budget. A ledger is
created only on purpose: :meth:`Ledger.create`, ``Ledger(target, create=True)`` or
``dpinfer budget init``; none of them overwrites a file or database schema that is not a ledger.
Ledgers written by older versions open as they are and gain the newer columns on first open; the
schema version is recorded, and a ledger of a newer version is refused.

Budgets bound to data
---------------------
A data set may be registered with a fingerprint of its data (:mod:`dpinfer.privacy.fingerprint`),
and a charge may carry the fingerprint of the data it releases (``charge(..., fingerprint=...)``,
or every charge of ``ledger.for_data(data)``; the releasing commands ``dpinfer release | dpvi |
abcdp`` pass the SHA-256 of the file they read). Across *all* data sets of the ledger, inside the
charge's own transaction (so two processes cannot both slip through):

* a charge to a data set bound to another fingerprint is refused (these are not its data);
* a charge of data whose fingerprint is bound to, or was already charged to, another data set is
  refused (the same data cannot spend a second budget);
* a registration with a fingerprint that is bound to, or was charged to, any data set is refused.

Each charge records its fingerprint. A charge without one (a Python release that did not say
which data it read) is checked against nothing: binding protects what it is told about.

Accountants
-----------
One default, :data:`DEFAULT_ACCOUNTANT` (``"pld"``), in Python and on the command line, at
``delta=1e-6`` (:data:`DEFAULT_DELTA`); ``accountant="pure"`` defaults to ``delta=0``. Budgets
that cannot work are refused when they are registered, not at their first charge (when they can
no longer be changed): the pure accountant with ``delta > 0`` and the PLD/RDP accountants with
``delta = 0`` (:func:`check_budget_accountant`).

A charge for a release whose noise came from a deterministic test RNG is stored with
``insecure=True`` and shown as such by :meth:`Ledger.history` and ``dpinfer budget history``.

Who charged, and who may change a budget
----------------------------------------
Every charge records who made it and why: ``authenticated_as`` is the identity the ledger
authenticated (the OS user of the process on SQLite, the database role that logged in on
PostgreSQL; a caller cannot choose it), ``charged_by`` an application identity the caller may
pass (e.g. the analyst a service acts for; by default the authenticated identity), and
``purpose`` free text (``charge(..., charged_by=..., purpose=...)``, ``ReleaseContext(...,
purpose=..., charged_by=...)``, ``--purpose`` on the releasing commands).

A budget is created (:meth:`Ledger.register`), raised (:meth:`Ledger.raise_budget`) and retired
(:meth:`Ledger.retire`; a retired budget refuses every charge) by its owner only; it is never
lowered below what was spent, and a retired budget stays retired. Every change is an append-only,
timestamped entry of :meth:`Ledger.budget_history`, written by a trigger inside the database.
On PostgreSQL the owner is the role owning the ledger's schema, and analysts hold no table
writes (:mod:`dpinfer.privacy.ledger_postgres` says exactly what they hold and what the charge
function can and cannot check). On SQLite the file's permissions protect the budget: whoever can
write the file is its owner in effect (:mod:`dpinfer.privacy.ledger_sqlite`).
"""

from __future__ import annotations

import json
import math
import os
import socket
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    LedgerConnectionError,
    LedgerFileError,
    LedgerNotFoundError,
    LedgerStatusWarning,
    PrivacyWarning,
    UnknownDatasetError,
)
from . import ledger_state
from .accountants import get_accountant
from .admission import admit
from .event_conversion import describe, event_from_dict, event_to_dict
from .events import PrivacyEvent, compose
from .fingerprint import as_fingerprint
from .ledger_open import open_store
from .ledger_store import (
    BudgetChangeError,
    BudgetOwnerError,
    BudgetRetiredError,
    DataBindingError,
    Tx,
    is_database_url,
    now,
)
from .validation import check_delta, check_epsilon, check_relation

__all__ = [
    "DEFAULT_ACCOUNTANT", "DEFAULT_DELTA", "Budget", "BudgetChangeError", "BudgetOwnerError",
    "BudgetRetiredError", "Charge", "DataBindingError", "Ledger", "LedgerConnectionError",
    "LedgerFileError", "LedgerNotFoundError", "check_budget_accountant",
]

#: The accountant of a budget registered without one (Python and ``dpinfer budget init``): it
#: accounts every release dpinfer makes (Laplace, geometric, sparse vector, Gaussian, DP-SGD).
DEFAULT_ACCOUNTANT = "pld"
#: The δ of a budget registered without one under an accountant that needs δ > 0.
DEFAULT_DELTA = 1e-6
# Accountants that certify composed releases only at δ > 0 (at δ = 0 two Laplace releases already
# compose to ε = inf under the PLD accountant's pessimistic discretisation).
_NEEDS_DELTA = frozenset({"pld", "rdp"})

# Relative slack for floating-point noise in "spent <= budget" (e.g. 0.1 + 0.2 vs 0.3).
_TOLERANCE = 1e-9
# A recorded spend below the replayed one by more than this (relative) is under-stated.
_RECOMPUTE_SLACK = 1e-9


def _full_slack(budget: Budget, charges: int) -> float:
    """How far the accountant's full recomposition may exceed the fold's spend: the PLD fold and
    the full recomposition both round every leaf's losses up on grids of at least Δ = 1e-4, in
    different groupings (the accountant composes repeated events by self-composition, and
    coarsens for the whole history at once), so their ε may differ by up to Δ per charge; the
    other folds are exact up to floating point."""
    if budget.accountant == "pld":
        return 1e-4 * max(charges, 1) + 1e-9
    return 1e-9 * max(budget.epsilon, 1.0)


# Which machine recorded a charge (with its pid), for ledgers shared by many hosts.
_HOST = socket.gethostname()


def check_budget_accountant(accountant: str, delta: float | None) -> tuple[str, float]:
    """``(accountant, delta)`` of a budget to register, or a refusal saying what to do.

    ``delta=None`` is 0 for the pure accountant and :data:`DEFAULT_DELTA` otherwise. Refused: the
    pure accountant with ``delta > 0`` (it spends no δ on Gaussian or DP-SGD releases, which it
    cannot account: such a budget fails at its first such charge, when it can no longer be
    changed) and the PLD/RDP accountants with ``delta = 0`` (composed releases get ε = inf).
    """
    name = get_accountant(accountant).name
    if delta is None:
        delta = 0.0 if name == "pure" else DEFAULT_DELTA
    delta = check_delta(delta, "budget delta")
    if name == "pure" and delta > 0:
        raise InvalidPrivacyParameterError(
            f"a budget with delta={delta:g} on the 'pure' accountant cannot work: that accountant adds "
            "up the epsilons of pure-DP releases (Laplace, geometric, sparse vector) and cannot "
            "account Gaussian or DP-SGD releases, so the budget would fail at their first charge, "
            "when it can no longer be changed. Register it with accountant 'pld' (the default; "
            "accounts every dpinfer release at this delta), or with delta 0 for pure-DP releases only."
        )
    if name in _NEEDS_DELTA and delta == 0:
        raise InvalidPrivacyParameterError(
            f"a budget with delta 0 on the {name!r} accountant cannot work: composed releases (even two "
            "Laplace releases) have epsilon = inf at delta = 0 under it. Pass delta > 0 (e.g. 1e-6, "
            "well below 1/n), or accountant 'pure' with delta 0 for pure-DP releases only."
        )
    return name, delta


@dataclass(frozen=True)
class Budget:
    """A data set's registered budget."""

    dataset: str
    epsilon: float
    delta: float
    accountant: str
    neighbouring: str
    fingerprint: str | None = None
    #: who registered it (OS user or database role); None for budgets registered before owners
    owner: str | None = None
    #: retired by its owner: refuses every charge
    retired: bool = False


_BUDGET_COLUMNS = "name, epsilon, delta, accountant, neighbouring, fingerprint, owner, retired"


def _text(value: Any, name: str, limit: int = 1000) -> str:
    """A free-text field of the ledger (purpose, reason, identity): a string, at most ``limit``
    characters, no control characters but newlines."""
    if not isinstance(value, str):
        raise InvalidPrivacyParameterError(f"{name} must be a string, got {type(value).__name__}.")
    if len(value) > limit or any(ord(c) < 32 and c not in "\n\t" for c in value):
        raise InvalidPrivacyParameterError(
            f"{name} must be at most {limit} characters of text (no control characters)."
        )
    return value


@dataclass(frozen=True)
class Charge:
    """A committed charge (yielded by :meth:`Ledger.charge`)."""

    id: int
    dataset: str
    event: PrivacyEvent
    epsilon_spent: float
    label: str
    insecure: bool = False
    charged_by: str | None = None
    purpose: str = ""


class Ledger:
    """A privacy-budget ledger in a SQLite file or a PostgreSQL database.

    Parameters
    ----------
    path
        The database file, or a URL ``postgresql://user@host:port/dbname`` (settings the URL
        leaves out come from libpq's environment and ``~/.pgpass``). It must already be a ledger
        unless ``create`` is true.
    timeout
        Seconds to wait for another process's lock before giving up.
    create
        Create the ledger (and missing parent folders of a file) if there is none at ``path``; an
        existing ledger is opened as it is. A file or schema that is not a ledger is never
        overwritten.

    Raises
    ------
    LedgerNotFoundError
        No ledger at ``path`` and ``create`` is false (nothing is created).
    LedgerFileError
        ``path`` exists but is not a ledger, or one of a newer schema version (left untouched).
    LedgerConnectionError
        The database cannot be reached (or psycopg is not installed).
    """

    def __init__(
        self, path: str | os.PathLike[str], timeout: float = 120.0, *, create: bool = False
    ) -> None:
        self.timeout = float(timeout)
        self._store = open_store(path, self.timeout, create=create)
        #: the SQLite file (``None`` for a database ledger)
        self.path: Path | None = None if is_database_url(path) else Path(path)
        #: where the ledger lives, as it may be shown (a URL's password redacted)
        self.location: str = self._store.location
        #: ``"sqlite"`` or ``"postgresql"``
        self.backend: str = self._store.backend

    @classmethod
    def create(cls, path: str | os.PathLike[str], timeout: float = 120.0) -> Ledger:
        """Create a ledger at ``path`` (file or URL), or open the ledger already there.

        Refuses (:class:`LedgerFileError`) to touch a file at ``path`` that is not a ledger.
        """
        return cls(path, timeout, create=True)

    # -- budgets -----------------------------------------------------------------------------
    def register(
        self,
        dataset: str,
        epsilon: float,
        delta: float | None = None,
        accountant: str = DEFAULT_ACCOUNTANT,
        neighbouring: str = "replace-one",
        *,
        fingerprint: Any = None,
        reason: str = "",
        registered_by: str | None = None,
    ) -> Budget:
        """Register ``dataset`` with a total budget (ε, δ) interpreted by ``accountant``.

        The identity registering it (OS user, or database role on PostgreSQL) becomes the
        budget's owner, the only one who may later :meth:`raise_budget` or :meth:`retire` it; the
        registration is the first entry of :meth:`budget_history` (with ``reason``, and
        ``registered_by``, an application identity recorded next to the authenticated one).

        ``delta=None`` is :data:`DEFAULT_DELTA` (1e-6) under the default ``"pld"`` accountant and
        0 under ``"pure"``; combinations that cannot work are refused here
        (:func:`check_budget_accountant`), not at the first charge.

        ``fingerprint`` binds the budget to the data: a hex digest string (e.g. from
        :func:`~dpinfer.privacy.fingerprint.file_fingerprint`), raw ``bytes`` (hashed like a
        file's bytes) or array-like data (hashed by
        :func:`~dpinfer.privacy.fingerprint.data_fingerprint`). A fingerprint already bound to,
        or already charged to, a data set of this ledger is refused (:class:`DataBindingError`):
        the same data cannot get a second budget. Without one, the budget is unbound.
        """
        if not isinstance(dataset, str) or not dataset.strip():
            raise InvalidPrivacyParameterError("dataset must be a non-empty name.")
        name, delta = check_budget_accountant(accountant, delta)
        budget = Budget(
            dataset,
            check_epsilon(epsilon, "budget epsilon"),
            delta,
            name,
            check_relation(neighbouring),
            as_fingerprint(fingerprint),
        )
        reason = _text(reason, "reason")
        if registered_by is not None:
            registered_by = _text(registered_by, "registered_by", 200)

        def insert(tx: Tx) -> Budget:
            tx.lock_datasets()
            if tx.rows("SELECT 1 FROM datasets WHERE name = ?", (dataset,)):
                raise InvalidPrivacyParameterError(
                    f"dataset {dataset!r} is already registered in {self.location}; budgets cannot "
                    "be reset or raised. Use a new dataset name only for genuinely new data."
                )
            fp = budget.fingerprint
            if fp is not None:
                tx.lock_fingerprint(fp)
                bound = tx.rows("SELECT name FROM datasets WHERE fingerprint = ?", (fp,))
                charged = tx.rows("SELECT DISTINCT dataset FROM charges WHERE fingerprint = ?", (fp,))
                holder = bound[0][0] if bound else charged[0][0] if charged else None
                if holder is not None:
                    how = "registered" if bound else "already charged (as an unbound data set)"
                    raise DataBindingError(
                        f"these data (fingerprint {fp[:16]}...) are {how} as dataset {holder!r} in "
                        f"{self.location}: the same data cannot get a second budget. Charge releases "
                        f"of these data to {holder!r}. Nothing was registered."
                    )
            owner = tx.user()
            sqlite = self.backend == "sqlite"  # PostgreSQL's trigger records session_user itself
            tx.rows(
                "INSERT INTO datasets (name, epsilon, delta, accountant, neighbouring, created,"
                " fingerprint, owner, retired, change_reason, changed_by" + (", changed_as" if sqlite else "")
                + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?" + (", ?" if sqlite else "") + ")",
                (dataset, budget.epsilon, budget.delta, budget.accountant, budget.neighbouring, now(), fp,
                 owner, reason, registered_by or (owner if sqlite else None)) + ((owner,) if sqlite else ()),
            )
            return replace(budget, owner=owner)

        return self._store.transaction(insert, write=True, what=f"registering {dataset!r}")

    # -- owner-only changes of a budget ------------------------------------------------------
    def _change(self, dataset: str, what: str, body: Any) -> Budget:
        def change(tx: Tx) -> Budget:
            tx.lock_budget(dataset)
            budget = self._budget(tx, dataset)
            if not tx.is_owner(budget.owner):
                raise BudgetOwnerError(
                    f"{what} {dataset!r} in {self.location}: only its owner ({budget.owner}) may change a "
                    f"budget, not {tx.user()}. Nothing was changed."
                )
            if budget.retired:
                raise BudgetChangeError(
                    f"{what} {dataset!r} in {self.location}: the budget is retired and stays retired. "
                    "Nothing was changed."
                )
            body(tx, budget)
            return self._budget(tx, dataset)

        return self._store.transaction(change, write=True, what=f"{what} {dataset!r}")

    def _set_budget_row(self, tx: Tx, dataset: str, column: str, value: Any, reason: str,
                        by: str | None) -> None:
        if self.backend == "sqlite":
            me = tx.user()
            tx.rows(
                f"UPDATE datasets SET {column} = ?, change_reason = ?, changed_by = ?, changed_as = ? "
                "WHERE name = ?",
                (value, reason, by or me, me, dataset),
            )
        else:  # the trigger records session_user and clears the reason after logging it
            tx.rows(
                f"UPDATE datasets SET {column} = ?, change_reason = ?, changed_by = ? WHERE name = ?",
                (value, reason, by, dataset),
            )

    def raise_budget(
        self, dataset: str, *, epsilon: float, reason: str, changed_by: str | None = None
    ) -> Budget:
        """Raise ``dataset``'s total ε to ``epsilon`` (its owner only; ``reason`` is required and
        recorded in :meth:`budget_history`, with the owner's identity and ``changed_by``).

        Raises
        ------
        BudgetOwnerError
            Not the budget's owner (PostgreSQL: not a member of the schema's owner role).
        BudgetChangeError
            ``epsilon`` is not above the current budget, or the budget is retired.
        """
        epsilon = check_epsilon(epsilon, "budget epsilon")
        reason = self._reason(reason)
        if changed_by is not None:
            changed_by = _text(changed_by, "changed_by", 200)

        def body(tx: Tx, budget: Budget) -> None:
            spent = self._last_spent(tx, dataset)
            if epsilon <= budget.epsilon:
                raise BudgetChangeError(
                    f"raising {dataset!r}: the new budget epsilon={epsilon:g} is not above the current "
                    f"{budget.epsilon:g} (spent {spent:.6g}); a budget is only ever raised (never "
                    "lowered below what was spent). Nothing was changed."
                )
            self._set_budget_row(tx, dataset, "epsilon", epsilon, reason, changed_by)

        return self._change(dataset, "raising", body)

    def retire(self, dataset: str, *, reason: str, changed_by: str | None = None) -> Budget:
        """Retire ``dataset``'s budget (its owner only): every later charge is refused
        (:class:`BudgetRetiredError`); recorded in :meth:`budget_history`. Irreversible."""
        reason = self._reason(reason)
        if changed_by is not None:
            changed_by = _text(changed_by, "changed_by", 200)
        return self._change(
            dataset, "retiring",
            lambda tx, budget: self._set_budget_row(tx, dataset, "retired", 1, reason, changed_by),
        )

    @staticmethod
    def _reason(reason: Any) -> str:
        reason = _text(reason, "reason")
        if not reason.strip():
            raise InvalidPrivacyParameterError(
                "a budget change needs a reason (it is kept in the budget history)."
            )
        return reason

    @staticmethod
    def _last_spent(tx: Tx, dataset: str) -> float:
        """The spend recorded by the data set's last charge (0 without charges)."""
        rows = tx.rows(
            "SELECT epsilon_spent FROM charges WHERE dataset = ? ORDER BY id DESC LIMIT 1", (dataset,)
        )
        return float(rows[0][0]) if rows else 0.0

    def budget_history(self, dataset: str) -> list[dict[str, Any]]:
        """Every change of ``dataset``'s budget, oldest first: ``action`` (``register``, ``raise``,
        ``retire``; ``lower`` only for a raw-SQL change above the spend), ``epsilon`` after and
        ``previous`` before, ``reason``, ``by`` (the application identity given, else the
        authenticated one), ``authenticated_as`` (OS user / database role), ``created`` (UTC).
        Written by a trigger inside the database and append-only (updates and deletes refused)."""

        def read(tx: Tx) -> list[tuple[Any, ...]]:
            self._budget(tx, dataset)
            return tx.rows(
                "SELECT id, action, epsilon, previous, reason, by_user, authenticated_as, created "
                "FROM budget_events WHERE dataset = ? ORDER BY id",
                (dataset,),
            )

        keys = ("id", "action", "epsilon", "previous", "reason", "by", "authenticated_as", "created")
        return [dict(zip(keys, r, strict=True)) for r in self._read(read)]

    def grant(self, analyst: str) -> None:
        """PostgreSQL: let the role ``analyst`` charge this ledger and read it, and nothing more
        (:data:`~dpinfer.privacy.ledger_postgres.ANALYST_GRANTS`: ``SELECT`` on the tables,
        ``EXECUTE`` on the charge functions, every other privilege on the tables revoked). Run by
        the ledger's owner. A SQLite ledger has no roles: its file's permissions decide."""
        if not isinstance(analyst, str) or not analyst.strip():
            raise InvalidPrivacyParameterError("grant needs the analyst's database role name.")
        grant = getattr(self._store, "grant", None)
        if grant is None:
            raise InvalidPrivacyParameterError(
                f"{self.location} is a SQLite ledger: it has no roles to grant. Whoever can write the "
                "file is its owner in effect; keep it writable by the data owner only."
            )
        grant(analyst)

    # -- data bound to budgets ---------------------------------------------------------------
    def for_data(self, data: Any) -> Ledger:
        """This ledger, with every charge made through it carrying the fingerprint of ``data``.

        ``data``: what :meth:`register` takes as ``fingerprint`` (a hex digest, raw bytes, an
        array). Pass the returned ledger to a release (``ledger=ledger.for_data(X)``): its charge
        is refused, atomically, if ``X`` is bound to another data set or the data set to other
        data (module docstring). Nothing is read or written here.
        """
        fingerprint = as_fingerprint(data)
        if fingerprint is None:
            raise InvalidPrivacyParameterError("for_data needs the data (or their fingerprint), got None.")
        bound = object.__new__(Ledger)
        bound.__dict__.update(self.__dict__)
        bound.__dict__["_data_fingerprint"] = fingerprint
        return bound

    def acting(self, *, purpose: str = "", charged_by: str | None = None) -> Ledger:
        """This ledger, with every charge made through it recording ``purpose`` and the
        application identity ``charged_by`` (unless the charge passes its own). Nothing is read
        or written here."""
        bound = object.__new__(Ledger)
        bound.__dict__.update(self.__dict__)
        bound.__dict__["_purpose"] = _text(purpose, "purpose")
        bound.__dict__["_charged_by"] = None if charged_by is None else _text(charged_by, "charged_by", 200)
        return bound

    @property
    def data_fingerprint(self) -> str | None:
        """The fingerprint every charge through this ledger carries (:meth:`for_data`), or None."""
        return self.__dict__.get("_data_fingerprint")

    def check_data(self, dataset: str, data: Any) -> None:
        """Refuse (:class:`DataBindingError`) now what a charge of ``data`` to ``dataset`` would
        refuse: a command checks before it reads or fits anything. Read-only; the charge itself
        checks again, atomically."""
        fingerprint = as_fingerprint(data)
        if fingerprint is None:
            raise InvalidPrivacyParameterError("check_data needs the data (or their fingerprint), got None.")

        def look(tx: Tx) -> None:
            problem = self._binding_problem(tx, self._budget(tx, dataset), fingerprint)
            if problem:
                raise DataBindingError(problem + " Nothing was charged or released.")

        self._read(look)

    def _binding_problem(self, tx: Tx, budget: Budget, fingerprint: str) -> str | None:
        """Why data with ``fingerprint`` may not be charged to ``budget``'s data set, or None."""
        dataset = budget.dataset
        if budget.fingerprint is not None and budget.fingerprint != fingerprint:
            return (
                f"the data released (fingerprint {fingerprint[:16]}...) are not the data registered as "
                f"{dataset!r} in {self.location} (registered {budget.fingerprint[:16]}...). A file's "
                "fingerprint covers its records (dpinfer.privacy.fingerprint): other records are other data."
            )
        bound = tx.rows(
            "SELECT name FROM datasets WHERE fingerprint = ? AND name <> ?", (fingerprint, dataset)
        )
        if bound:
            return (
                f"these data (fingerprint {fingerprint[:16]}...) are registered as dataset "
                f"{bound[0][0]!r} in {self.location}, not {dataset!r}: the same data cannot spend a "
                f"second budget. Charge this release to {bound[0][0]!r}."
            )
        charged = tx.rows(
            "SELECT DISTINCT dataset FROM charges WHERE fingerprint = ? AND dataset <> ?",
            (fingerprint, dataset),
        )
        if charged:
            return (
                f"these data (fingerprint {fingerprint[:16]}...) were already charged to dataset "
                f"{charged[0][0]!r} in {self.location}, not {dataset!r}: the same data cannot spend a "
                f"second budget. Charge this release to {charged[0][0]!r}."
            )
        return None

    def datasets(self) -> list[str]:
        """Names of all registered data sets."""
        return self._read(lambda tx: [r[0] for r in tx.rows("SELECT name FROM datasets ORDER BY name")])

    def budget(self, dataset: str) -> Budget:
        """The registered budget of ``dataset``."""
        return self._read(lambda tx: self._budget(tx, dataset))

    def _read(self, body: Any) -> Any:
        return self._store.transaction(body, write=False, what="reading the ledger")

    def _budget(self, tx: Tx, dataset: str, lock: bool = False) -> Budget:
        if lock:
            tx.lock_budget(dataset)
        rows = tx.rows(f"SELECT {_BUDGET_COLUMNS} FROM datasets WHERE name = ?", (dataset,))
        if not rows:
            known = [r[0] for r in tx.rows("SELECT name FROM datasets ORDER BY name")]
            raise UnknownDatasetError(
                f"dataset {dataset!r} is not registered in ledger {self.location} (known: {known}). "
                "Register it first: `dpinfer budget init --ledger PATH --dataset NAME --epsilon E`."
            )
        r = rows[0]
        return Budget(r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]))

    def _composed(
        self, tx: Tx, budget: Budget
    ) -> tuple[ledger_state.ComposedState | None, int | None, float]:
        """``(state, last charge id, spend it recorded)`` of ``budget``'s data set: the stored
        composed state if it includes the last charge, else one rebuilt from the recorded events
        (a ledger of an earlier version, or one charged by a client that stored none); the state
        is None for an accountant that is not a fold (:mod:`~dpinfer.privacy.ledger_state`)."""
        dataset = budget.dataset
        last = tx.rows(
            "SELECT id, epsilon_spent FROM charges WHERE dataset = ? ORDER BY id DESC LIMIT 1", (dataset,)
        )
        previous, recorded = (int(last[0][0]), float(last[0][1])) if last else (None, 0.0)
        stored = tx.rows(
            "SELECT last_charge, accountant, state FROM budget_state WHERE dataset = ?", (dataset,)
        )
        if (
            stored and stored[0][2] is not None and stored[0][1] == budget.accountant
            and previous is not None and int(stored[0][0]) == previous
        ):
            try:
                found = ledger_state.loads(stored[0][2])
                if found.kind == budget.accountant:
                    return found, previous, recorded
            except ValueError:
                pass  # not a state this version reads: rebuilt below
        state = ledger_state.empty(budget.accountant)
        if state is None or previous is None:  # not a fold, or nothing charged yet
            return state, previous, recorded
        return ledger_state.build(budget.accountant, self._events(tx, dataset)), previous, recorded

    @staticmethod
    def _events(tx: Tx, dataset: str) -> list[PrivacyEvent]:
        rows = tx.rows("SELECT event FROM charges WHERE dataset = ? ORDER BY id", (dataset,))
        return [event_from_dict(json.loads(r[0])) for r in rows]

    # -- charging ----------------------------------------------------------------------------
    @contextmanager
    def charge(
        self,
        dataset: str,
        event: PrivacyEvent,
        label: str = "",
        *,
        insecure: bool = False,
        fingerprint: Any = None,
        charged_by: str | None = None,
        purpose: str = "",
    ) -> Iterator[Charge]:
        """Charge ``event`` to ``dataset``, then run the body (the release).

        The composed history plus ``event`` must stay within the budget under the data set's
        accountant, else :class:`BudgetExceededError` is raised and nothing is recorded. The
        charge is committed before the body runs; if the body raises, it is kept and marked
        ``failed``. ``insecure=True`` records that the release's noise comes from a deterministic
        test RNG (pass ``rng.deterministic``); it is charged all the same. If the ledger cannot be
        reached or the connection is lost before the commit, :class:`LedgerConnectionError` is
        raised, nothing is recorded and the body does not run.

        ``fingerprint`` (default: this ledger's :attr:`data_fingerprint`, see :meth:`for_data`)
        names the data released; a charge of data bound to another budget, or to a data set bound
        to other data, is refused in the same transaction (:class:`DataBindingError`, module
        docstring), and the fingerprint is recorded with the charge.

        The charge records the identity the ledger authenticated (OS user / database role), and
        ``charged_by`` (an application identity, e.g. the analyst a service acts for; default:
        the authenticated identity, or this ledger's :meth:`acting` identity) and ``purpose``
        (default: this ledger's :meth:`acting` purpose). A retired budget refuses every charge
        (:class:`BudgetRetiredError`).
        """
        if not isinstance(event, PrivacyEvent):
            raise InvalidPrivacyParameterError(
                f"ledger.charge takes a PrivacyEvent, got {type(event).__name__}."
            )
        fp = as_fingerprint(fingerprint) if fingerprint is not None else self.data_fingerprint
        purpose = _text(purpose, "purpose") or self.__dict__.get("_purpose", "")
        if charged_by is not None:
            charged_by = _text(charged_by, "charged_by", 200)
        else:
            charged_by = self.__dict__.get("_charged_by")

        def charge(tx: Tx) -> tuple[int, float]:
            return self._record(tx, dataset, event, fp, label, insecure, charged_by, purpose)

        charge_id, spent = self._store.transaction(charge, write=True, what=f"charging {dataset!r}")
        charged = Charge(charge_id, dataset, event, spent, label, bool(insecure), charged_by, purpose)
        try:
            yield charged
        except BaseException:
            self._set_status(charge_id, "failed")
            raise
        self._set_status(charge_id, "released")

    def _record(
        self, tx: Tx, dataset: str, event: PrivacyEvent, fp: str | None, label: str, insecure: bool,
        charged_by: str | None, purpose: str,
    ) -> tuple[int, float]:
        """Inside the charge transaction: check the budget, the data binding and the relation,
        compose ``event`` into the stored state, refuse an overspend, record the charge; its id
        and the spend it brings the data set to (:meth:`charge`)."""
        if fp is not None:
            tx.lock_fingerprint(fp)  # before the row lock: registrations take it after theirs
        budget = self._budget(tx, dataset, lock=True)  # excludes every other charge of dataset
        if budget.retired:
            raise BudgetRetiredError(
                f"the budget of {dataset!r} in {self.location} was retired by its owner: it refuses "
                "every charge. Nothing was charged or released."
            )
        if fp is not None:
            problem = self._binding_problem(tx, budget, fp)
            if problem:
                raise DataBindingError(problem + " Nothing was charged or released.")
        # the event in the budget's relation, or a refusal, before anything is charged
        admitted = admit(event, accountant=budget.accountant, neighbouring=budget.neighbouring,
                         dataset=dataset)
        record = json.dumps(event_to_dict(admitted))
        accountant = get_accountant(budget.accountant)
        # the composed state and the last charge it includes, read before composing (the
        # PostgreSQL charge function refuses the insert if another charge came in between)
        state, previous, recorded = self._composed(tx, budget)
        if state is not None:  # constant cost: compose this one event into the state
            new_state: ledger_state.ComposedState | None = state.add(admitted)
            assert new_state is not None
            spent = new_state.epsilon(budget.delta)
        else:  # an accountant that is not a fold (advanced): recompose the history
            new_state = None
            history = self._events(tx, dataset)
            spent = accountant.epsilon(compose(*history, admitted), budget.delta)
        # a charge never lowers the recorded spend (a ledger migrated from full recomposition
        # may round differently by a hair): the larger, pessimistic value counts
        spent = max(spent, recorded)
        if not math.isfinite(spent) or spent > budget.epsilon * (1 + _TOLERANCE):
            raise BudgetExceededError(
                f"charging {describe(admitted)} to {dataset!r} would bring its spend to "
                f"epsilon={spent:.6g} (accountant '{budget.accountant}', delta="
                f"{budget.delta:g}) over the budget epsilon={budget.epsilon:g}; "
                f"already spent {recorded:.6g}. Nothing was charged or released. Use a "
                "smaller epsilon for this release or stop querying this data set."
            )
        charge_id = tx.record_charge(
            {
                "dataset": dataset, "event": record, "label": label, "epsilon_spent": spent,
                "created": now(), "pid": os.getpid(), "insecure": int(bool(insecure)), "host": _HOST,
                "fingerprint": fp, "charged_by": charged_by, "purpose": purpose,
                "previous": previous, "accountant": budget.accountant,
                "state": None if new_state is None else ledger_state.dumps(new_state),
            }
        )
        return charge_id, spent


    def _set_status(self, charge_id: int, status: str) -> None:
        """Mark a committed charge; if the ledger is unreachable it stays ``charged`` (it counts
        all the same) and a :class:`LedgerStatusWarning` says so."""
        try:
            self._store.transaction(
                lambda tx: tx.set_status(charge_id, status),
                write=True,
                what=f"marking charge #{charge_id} {status}",
            )
        except LedgerConnectionError:
            warnings.warn(
                f"charge #{charge_id} is recorded in {self.location}, but the ledger became unreachable "
                f"before it could be marked {status!r}; it stays 'charged' and counts against the budget "
                "all the same.",
                LedgerStatusWarning,
                stacklevel=4,
            )

    # -- queries -----------------------------------------------------------------------------
    def spent(self, dataset: str) -> float:
        """ε spent so far (all charges, including failed ones) at the budget's δ: the spend the
        last charge recorded, i.e. its composition with every earlier one, which is what the next
        charge is checked against (:meth:`recompute` recomposes the events independently)."""

        def read(tx: Tx) -> float:
            self._budget(tx, dataset)
            return self._last_spent(tx, dataset)

        return float(self._read(read))

    def remaining(self, dataset: str) -> float:
        """Budget ε minus ε spent (at the budget's δ); never negative."""
        budget = self.budget(dataset)
        return max(budget.epsilon - self.spent(dataset), 0.0)

    def history(self, dataset: str) -> list[dict[str, Any]]:
        """All charges of ``dataset`` in order, as dictionaries (``insecure``: the release's
        noise came from a deterministic test RNG; ``host`` and ``pid``: where it was charged;
        ``authenticated_as``: the OS user or database role that charged it; ``charged_by``: the
        application identity given with it (else the authenticated one); ``purpose``;
        ``fingerprint``: of the data released, None if the release did not say). Charges made
        before schema version 5 have no identity (None)."""

        def read(tx: Tx) -> list[tuple[Any, ...]]:
            self._budget(tx, dataset)
            return tx.rows(
                "SELECT id, event, label, epsilon_spent, status, created, pid, insecure, host, "
                "fingerprint, charged_by, authenticated_as, purpose FROM charges WHERE dataset = ? "
                "ORDER BY id",
                (dataset,),
            )

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
                "host": r[8],
                "fingerprint": r[9],
                "charged_by": r[10],
                "authenticated_as": r[11],
                "purpose": r[12],
            }
            for r in self._read(read)
        ]

    def recompute(self, dataset: str, *, full: bool = True) -> dict[str, Any]:
        """Recompose every charge of ``dataset`` from its recorded event and compare with what
        each charge recorded (``dpinfer budget check``).

        The events are replayed through the same fold the charges use
        (:mod:`~dpinfer.privacy.ledger_state`), giving the spend after each charge; with ``full``,
        the whole history is also recomposed at once by the accountant
        (``accountant.epsilon(compose(*events), delta)``), the check of the fold itself.

        Returns a dictionary: ``charges``; ``recorded`` (the spend the last charge recorded);
        ``recomputed`` (the replayed spend after the last charge); ``full`` (the accountant's
        full recomposition, or None); ``stored`` (the spend of the stored state, or None);
        ``understated``: one entry (``id``, ``authenticated_as``, ``charged_by``, ``recorded``,
        ``recomputed``) per charge whose recorded spend is below the replayed spend up to it -- a
        charge made by a caller that under-stated its ε (e.g. an analyst calling the PostgreSQL
        charge function by hand) or by a broken client; ``ok``: there is none, and the full
        recomposition does not exceed the recorded spend by more than the discretisation allows
        (``full_gap``: full minus recorded).
        """
        budget, rows = self._read(
            lambda tx: (
                self._budget(tx, dataset),
                tx.rows(
                    "SELECT id, event, epsilon_spent, authenticated_as, charged_by FROM charges "
                    "WHERE dataset = ? ORDER BY id",
                    (dataset,),
                ),
            )
        )
        accountant = get_accountant(budget.accountant)
        events: list[PrivacyEvent] = []
        understated = []
        spent = 0.0
        state = ledger_state.empty(accountant)
        for charge_id, record, recorded, who, by in rows:
            event = event_from_dict(json.loads(record))
            events.append(event)
            if state is not None:
                state = state.add(event)
                spent = state.epsilon(budget.delta)
            else:
                spent = accountant.epsilon(compose(*events), budget.delta)
            if float(recorded) < spent - _RECOMPUTE_SLACK * max(spent, 1.0):
                understated.append(
                    {"id": charge_id, "authenticated_as": who, "charged_by": by,
                     "recorded": float(recorded), "recomputed": spent}
                )
        whole = accountant.epsilon(compose(*events), budget.delta) if full and events else None
        recorded_last = float(rows[-1][2]) if rows else 0.0
        stored = self._read(
            lambda tx: tx.rows("SELECT spent FROM budget_state WHERE dataset = ?", (dataset,))
        )
        gap = None if whole is None else whole - recorded_last
        return {
            "dataset": dataset,
            "accountant": budget.accountant,
            "charges": len(rows),
            "recorded": recorded_last,
            "recomputed": spent,
            "full": whole,
            "full_gap": gap,
            "stored": float(stored[0][0]) if stored else None,
            "understated": understated,
            "ok": not understated and (gap is None or gap <= _full_slack(budget, len(rows))),
        }

    def integrity_check(self) -> bool:
        """The backend's consistency check (SQLite: ``PRAGMA integrity_check``; PostgreSQL:
        schema complete and no charge of an unknown data set)."""
        return self._store.integrity_check()

    def __reduce__(self) -> Any:
        """A ledger is charged by the client only: it cannot be sent to workers (nor its password)."""
        raise TypeError(
            f"a Ledger ({self.location}) cannot be pickled: charge releases on the client before "
            "sending work to a cluster; another process that must charge opens Ledger(path_or_url) itself."
        )

    def __repr__(self) -> str:
        return f"Ledger({self.location!r})"


def charge_or_warn(
    ledger: Ledger | None,
    dataset: str | None,
    event: PrivacyEvent,
    *,
    label: str,
    insecure: bool,
    what: str = "release",
    stacklevel: int = 3,
    purpose: str = "",
    charged_by: str | None = None,
) -> AbstractContextManager[Any]:
    """The context a release runs in: :meth:`Ledger.charge` before the body, or, without a ledger,
    a :class:`~dpinfer.errors.PrivacyWarning` that the release ``what label`` is unaccounted (its
    report must then say ``accounted: false``) and no charge.

    ``stacklevel`` is passed to :func:`warnings.warn` (3: the caller of the releasing function).
    """
    if ledger is None:
        warnings.warn(
            f"{what} {label!r} made WITHOUT a ledger: it is not accounted against any budget (its "
            "report says accounted: false). Pass context=ReleaseContext(ledger=..., dataset=...) to "
            "charge it.",
            PrivacyWarning,
            stacklevel=stacklevel,
        )
        return nullcontext()
    if not dataset:
        raise InvalidPrivacyParameterError("a ledger charge needs the dataset name.")
    return ledger.charge(
        dataset, event, label=label, insecure=insecure, purpose=purpose, charged_by=charged_by
    )
