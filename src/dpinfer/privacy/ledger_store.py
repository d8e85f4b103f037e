"""Where a ledger lives: one small interface over a SQLite file and a PostgreSQL database.

:class:`~dpinfer.privacy.ledger.Ledger` speaks to its storage only through :class:`Store`: one
call, :meth:`Store.transaction`, runs a function against a :class:`Tx` inside one atomic
transaction (a *write* transaction serialises with every other writer of the same data set; a
read sees one consistent snapshot). The ledger picks the backend from the target:

* a path (``"budget.db"``): :class:`~dpinfer.privacy.ledger_sqlite.SQLiteStore`, one file, safe
  across the processes of one host;
* a URL ``postgresql://user@host:port/dbname`` (or ``postgres://``):
  :class:`~dpinfer.privacy.ledger_postgres.PostgresStore`, one budget shared by many hosts.
  Settings missing from the URL come from libpq's environment (``PGHOST``, ``PGUSER``,
  ``PGPASSWORD``...) and ``~/.pgpass``.

Both hold the same tables (``datasets``, ``charges``, ``budget_events``, ``budget_state``,
``ledger_meta``) at schema version :data:`SCHEMA_VERSION`, with the same integrity rules enforced by
triggers inside the database (not only by this library): a budget is never deleted, never lowered
below what was spent, a retired budget stays retired, and the charges and the budget's history are
append-only (a charge's ``status`` may move once from ``charged`` to ``released`` or ``failed``).
Every change of a budget row is written to ``budget_events`` by a trigger, so even a change made
with raw SQL appears in ``dpinfer budget history``. Passwords never leave this layer:
:func:`redact` is what every message, listing and ``repr`` shows of a target.
"""

from __future__ import annotations

import getpass
import os
import pwd
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol, TypeVar

from ..errors import BudgetExceededError, InvalidPrivacyParameterError, LedgerFileError, LedgerNotFoundError

__all__ = [
    "HOW_TO_CREATE", "SCHEMA_VERSION", "BudgetChangeError", "BudgetOwnerError", "BudgetRetiredError",
    "DataBindingError",
    "LedgerFileError", "LedgerNotFoundError", "Store", "Tx", "check_version", "is_database_url",
    "now", "os_user", "redact",
]

#: Version of the ledger schema this dpinfer writes: 1 = the first file format, 2 = data
#: fingerprints and insecure flags, 3 = the ``ledger_meta`` table holding this number and the
#: ``host`` of each charge, 4 = the ``fingerprint`` of the data each charge released (a budget is
#: bound to its data across every data set of the ledger). A ledger of a newer version is
#: refused, never rewritten. 5 = who charged (``charged_by``, ``authenticated_as``) and why
#: (``purpose``), budget owners, retired budgets, the append-only ``budget_events`` history, the
#: ``budget_state`` of incremental composition and the triggers that guard them (PostgreSQL: the
#: ``SECURITY DEFINER`` functions through which analysts charge).
SCHEMA_VERSION = 5

HOW_TO_CREATE = (
    "create one with `dpinfer budget init --ledger PATH_OR_URL --dataset NAME --epsilon E` or "
    "Ledger.create(path_or_url) (or Ledger(path_or_url, create=True))"
)

T = TypeVar("T")

_URL_SCHEMES = ("postgresql://", "postgres://")
# user:password@ in a URL; password=... as a URL query parameter or a conninfo keyword
_URL_PASSWORD = re.compile(r"(://[^/@:?#]*):[^@/?#]*@")
_KEY_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|[^&\s]*)", re.IGNORECASE)


class DataBindingError(InvalidPrivacyParameterError):
    """A registration or charge refused because the data's fingerprint is bound to another
    budget, or the data set is bound to other data (nothing was registered, charged or released)."""


class BudgetOwnerError(InvalidPrivacyParameterError):
    """Only the budget's owner may create, raise or retire a budget (or write the ledger's tables
    directly); nothing was changed."""


class BudgetRetiredError(BudgetExceededError):
    """A charge to a budget its owner retired (a retired budget refuses every charge); nothing was
    charged or released."""


class BudgetChangeError(InvalidPrivacyParameterError):
    """A change the ledger's integrity rules refuse: lowering a budget below what was spent,
    raising a retired budget, editing or deleting a charge or the budget history; nothing was
    changed."""


def os_user() -> str:
    """The operating-system user this process runs as: the account of its effective uid (not the
    ``USER``/``LOGNAME`` variables, which any process may set), else :func:`getpass.getuser`,
    else ``uid:N``."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        pass
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # pragma: no cover - no passwd entry and no variables
        return f"uid:{os.geteuid()}"


def now() -> str:
    """The current UTC time, ISO 8601 to the second (the ``created`` columns)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def is_database_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL database (``postgresql://...``) rather than a file."""
    return isinstance(target, str) and target.lower().startswith(_URL_SCHEMES)


def redact(target: object, secret: str | None = None) -> str:
    """``target`` as it may be shown: a URL's password (``user:PASSWORD@``, ``password=...``)
    replaced by ``***``; ``secret`` too wherever it occurs (e.g. in a driver's message)."""
    text = os.fspath(target) if isinstance(target, os.PathLike) else str(target)
    if secret:
        text = text.replace(secret, "***")
    text = _URL_PASSWORD.sub(r"\1:***@", text)
    return _KEY_PASSWORD.sub(r"\1***", text)


class Tx(Protocol):
    """One open transaction. SQL uses ``?`` placeholders on every backend."""

    #: appended to the ``SELECT`` of a data set's row in a charge: ``" FOR UPDATE"`` where the
    #: backend locks rows (PostgreSQL), ``""`` where the transaction already excludes other writers
    lock_row: str

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql``; its result rows (empty for statements without any)."""

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT`` into a table with an ``id`` key; the new row's id."""

    def lock_datasets(self) -> None:
        """Exclude concurrent registrations until the transaction ends."""

    def lock_fingerprint(self, fingerprint: str) -> None:
        """Exclude every other registration or charge of data with this fingerprint until the
        transaction ends (so "is this fingerprint bound elsewhere?" and the insert are atomic)."""

    def lock_budget(self, dataset: str) -> None:
        """Exclude every other charge or budget change of ``dataset`` until the transaction ends
        (SQLite: already done by ``BEGIN IMMEDIATE``; PostgreSQL: the row lock, taken by a
        ``SECURITY DEFINER`` function so that analysts without ``UPDATE`` rights can take it)."""

    def user(self) -> str:
        """The authenticated identity of this transaction: the OS user (SQLite) or the database
        role that logged in (``session_user``, PostgreSQL)."""

    def is_owner(self, owner: str | None) -> bool:
        """Whether this identity may change a budget registered by ``owner`` (SQLite: the OS
        user is ``owner``, or the budget predates owners; PostgreSQL: the role is a member of the
        role owning the ledger's schema)."""

    def record_charge(self, charge: dict[str, Any]) -> int:
        """Insert the charge (keys: the ``charges`` columns, plus ``previous``: the id of the data
        set's last charge the caller composed with, and ``state``/``spent``: the composed state
        after it, or ``state=None``) and store the state, atomically; the new charge's id."""

    def set_status(self, charge_id: int, status: str) -> None:
        """Mark a committed charge ``released`` or ``failed``."""


class Store(Protocol):
    """A ledger's storage (see the module docstring)."""

    backend: str  #: ``"sqlite"`` or ``"postgresql"``
    location: str  #: where it lives, as shown to people (never with a password)

    def transaction(self, body: Callable[[Tx], T], *, write: bool, what: str) -> T:
        """Run ``body`` in one transaction, committed if it returns and rolled back if it raises.

        ``what`` (e.g. ``"charging 'd'"``) names the operation in connection errors. A write
        transaction that loses a serialisation race is retried from the start; a lost connection
        raises :class:`~dpinfer.errors.LedgerConnectionError` saying whether anything was
        committed.
        """

    def integrity_check(self) -> bool:
        """Whether the storage is consistent (tables present, no orphan charges)."""


def check_version(version: int | None, location: str) -> None:
    """Refuse a ledger written by a newer dpinfer (its schema may mean something we do not know)."""
    if version is not None and version > SCHEMA_VERSION:
        raise LedgerFileError(
            f"ledger {location} has schema version {version}, newer than this dpinfer knows "
            f"({SCHEMA_VERSION}); upgrade dpinfer to use it (it was left untouched)."
        )
