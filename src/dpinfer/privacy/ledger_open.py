"""Opening a ledger's storage: a PostgreSQL URL or a SQLite path (see :mod:`.ledger_store`)."""

from __future__ import annotations

import os

from .ledger_store import Store, is_database_url


def open_store(target: str | os.PathLike[str], timeout: float, *, create: bool) -> Store:
    """The storage at ``target`` (a PostgreSQL URL or a SQLite path): created first if ``create``
    (an existing ledger is kept as it is), else it must already be a ledger."""
    if is_database_url(target):
        from .ledger_postgres import PostgresStore

        return PostgresStore.open(str(target), timeout, create=create)
    from .ledger_sqlite import SQLiteStore

    return SQLiteStore.open(target, timeout, create=create)
