"""The service's own database: tokens, analysts and allowances, requests (with their releases)
and the audit log.

Analysts and their allowances live here: the configuration file's are added when the service
starts (:meth:`Store.seed_analysts`; an allowance the owner changed at run time is kept, and the
service's log says where the file differs); the owner adds analysts and sets allowances while the
service runs (:meth:`Store.add_analyst`, :meth:`Store.set_allowance`), each change in one
transaction with its audit line naming the owner who made it.

One SQLite file in the service's state folder (WAL journal, ``synchronous=FULL``), opened per
transaction so that threads and processes share it safely; every write runs in ``BEGIN IMMEDIATE``.

Requests and allowances
-----------------------
A request's life: ``reserved`` → ``released`` (or ``aborted`` when it is refused before the
ledger charge; ``failed`` when the library raised after it; ``charged`` is a state of older
databases, treated like ``reserved``). :meth:`Store.reserve`
checks the analyst's allowance and inserts the ``reserved`` row in **one** ``BEGIN IMMEDIATE``
transaction: the check "ε of the composition of this analyst's reserved, charged and released
events plus the new one <= allowance" and the insert are one atomic step across every thread and
process of the service, so concurrent requests cannot overspend an allowance. The composition is
kept as a composed state in memory (:class:`_SpendStates`), so a reservation composes one event
whatever the analyst's history; the state is checked against the counted rows in the same
transaction and rebuilt from them when they changed. A reservation that
is not charged is released again (``aborted``) and stops counting.

The release is stored with :meth:`Store.finish` right after the draw, before the response is
sent, in a synced commit. A server killed between the ledger charge and :meth:`finish` leaves a
``reserved`` row whose charge is in the ledger: the service completes it when it starts again
(:meth:`dpinfer.service.core.Service.recover`). Durability: the service database is in WAL mode;
the reservation commits without an fsync (``synchronous=NORMAL``: it survives the process being
killed, and the synced :meth:`finish` writes it to disk before any answer leaves), the release
with one. Only a power loss between the ledger's commit and :meth:`finish` can leave a charge
without its request row: counted against the budget, nothing released (the safe side).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InvalidDataError
from ..privacy.accountants import get_accountant
from ..privacy.event_conversion import event_from_dict
from ..privacy.events import PrivacyEvent, compose

T = TypeVar("T")

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY, principal TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('owner', 'analyst')),
    hash TEXT NOT NULL, created REAL NOT NULL, expires REAL NOT NULL, revoked REAL,
    note TEXT NOT NULL DEFAULT ''
)""",
    """CREATE TABLE IF NOT EXISTS requests (
    id TEXT PRIMARY KEY, analyst TEXT NOT NULL, dataset TEXT NOT NULL, kind TEXT NOT NULL,
    params TEXT NOT NULL, event TEXT NOT NULL, epsilon REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('reserved', 'charged', 'released', 'aborted', 'failed')),
    created REAL NOT NULL, updated REAL NOT NULL, charge_id INTEGER, result TEXT, error TEXT,
    recovered INTEGER NOT NULL DEFAULT 0
)""",
    "CREATE INDEX IF NOT EXISTS requests_analyst ON requests(analyst, dataset)",
    """CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
)""",
    """CREATE TABLE IF NOT EXISTS analysts (
    name TEXT PRIMARY KEY, created REAL NOT NULL, added_by TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS allowances (
    analyst TEXT NOT NULL, dataset TEXT NOT NULL, epsilon REAL NOT NULL CHECK (epsilon >= 0),
    updated REAL NOT NULL, changed_by TEXT NOT NULL, PRIMARY KEY (analyst, dataset)
)""",
    """CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY, analyst TEXT NOT NULL, created REAL NOT NULL, shapes TEXT NOT NULL,
    size INTEGER NOT NULL
)""",
)
#: Statuses whose events count against an allowance.
COUNTED = ("reserved", "charged", "released", "failed")


class AllowanceExceeded(Exception):
    """A request refused because it would overspend the analyst's allowance (nothing reserved)."""

    def __init__(self, message: str, spent: float, allowance: float) -> None:
        super().__init__(message)
        self.spent, self.allowance = spent, allowance


def analyst_spend(events: list[PrivacyEvent], accountant: str, delta: float) -> float:
    """ε of the composition of ``events`` under the data set's accountant at its δ."""
    if not events:
        return 0.0
    return float(get_accountant(accountant).epsilon(compose(*events), delta))


_COUNTED_SQL = f"analyst = ? AND dataset = ? AND status IN ({','.join('?' * len(COUNTED))})"


class _SpendStates:
    """The composed state (:mod:`dpinfer.privacy.ledger_state`: PLD, RDP or pure) of each
    analyst's counted events on each data set, kept in memory so that a reservation composes one
    event, not the analyst's whole history.

    A state is keyed by ``(count, max rowid)`` of the counted rows it composes: a new reservation
    raises the max rowid (rows are never deleted), an abort lowers the count, so any change of
    the counted set — by any thread or process, or a commit that failed — makes the key differ and
    the state is rebuilt from the rows (the full composition). An accountant that is not a fold
    (``advanced``) recomposes every time."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, str, str, float], tuple[tuple[int, int], Any]] = {}
        self._lock = threading.Lock()

    def state(
        self, c: sqlite3.Connection, analyst: str, dataset: str, accountant: str, delta: float
    ) -> tuple[tuple[int, int], Any, list[PrivacyEvent] | None]:
        """``(key, state, events)``: the state of the counted rows now (None: not a fold, and
        ``events`` the history to recompose)."""
        from ..privacy import ledger_state

        count, top = c.execute(
            f"SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM requests WHERE {_COUNTED_SQL}",
            (analyst, dataset, *COUNTED),
        ).fetchone()
        key = (int(count), int(top))
        name = (analyst, dataset, accountant, float(delta))
        with self._lock:
            cached = self._states.get(name)
        if cached is not None and cached[0] == key:
            return key, cached[1], None
        rows = c.execute(
            f"SELECT event FROM requests WHERE {_COUNTED_SQL} ORDER BY created", (analyst, dataset, *COUNTED)
        ).fetchall()
        events = [event_from_dict(json.loads(r[0])) for r in rows]
        state = ledger_state.build(accountant, events)
        if state is None:
            return key, None, events
        self.remember(name, key, state)
        return key, state, None

    def remember(self, name: tuple[str, str, str, float], key: tuple[int, int], state: Any) -> None:
        with self._lock:
            self._states[name] = (key, state)


class Store:
    """The service database at ``path`` (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._spend = _SpendStates()
        conn = self._conn()
        conn.execute("PRAGMA journal_mode=WAL")
        for stmt in SCHEMA:
            conn.execute(stmt)

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (kept open: closing the last connection of a WAL database
        checkpoints it, an fsync per transaction)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=True)
            self._local.conn = conn
        return conn

    def tx(self, body: Callable[[sqlite3.Connection], T], *, write: bool = True, durable: bool = True) -> T:
        """Run ``body(conn)`` in one transaction (``BEGIN IMMEDIATE`` for writes).

        ``durable=False`` commits without waiting for the disk (``synchronous=NORMAL`` in WAL
        mode: safe when the process is killed, may lose the last commits if the machine loses
        power); used for the reservation (module docstring)."""
        conn = self._conn()
        conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            out = body(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return out

    def rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.tx(lambda c: c.execute(sql, args).fetchall(), write=False)

    # -- audit -----------------------------------------------------------------------------------
    def audit(self, actor: str, action: str, detail: str = "") -> None:
        self.tx(
            lambda c: c.execute(
                "INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)",
                (time.time(), actor, action, detail),
            )
        )

    def audit_log(self, limit: int = 200) -> list[dict[str, Any]]:
        rows = self.rows("SELECT id, at, actor, action, detail FROM audit ORDER BY id DESC LIMIT ?", (limit,))
        return [dict(zip(("id", "at", "actor", "action", "detail"), r, strict=True)) for r in rows]

    # -- analysts and allowances -----------------------------------------------------------------
    def seed_analysts(self, analysts: dict[str, dict[str, float]]) -> list[tuple[str, str, float, float]]:
        """Add the configuration file's analysts and allowances that the state does not hold yet;
        an allowance the owner set at run time is kept. Returns ``(analyst, data set, kept, in the
        file)`` for each allowance where the two differ."""

        def body(c: sqlite3.Connection) -> list[tuple[str, str, float, float]]:
            now, differ = time.time(), []
            for name, allow in analysts.items():
                c.execute(
                    "INSERT OR IGNORE INTO analysts (name, created, added_by) VALUES (?, ?, ?)",
                    (name, now, "configuration file"),
                )
                for ds, eps in allow.items():
                    row = c.execute(
                        "SELECT epsilon FROM allowances WHERE analyst = ? AND dataset = ?", (name, ds)
                    ).fetchone()
                    if row is None:
                        c.execute(
                            "INSERT INTO allowances (analyst, dataset, epsilon, updated, changed_by)"
                            " VALUES (?, ?, ?, ?, ?)",
                            (name, ds, float(eps), now, "configuration file"),
                        )
                    elif float(row[0]) != float(eps):
                        differ.append((name, ds, float(row[0]), float(eps)))
            return differ

        return self.tx(body)

    def analysts(self) -> dict[str, dict[str, float]]:
        """Every analyst with their allowance per data set."""
        out: dict[str, dict[str, float]] = {
            r[0]: {} for r in self.rows("SELECT name FROM analysts ORDER BY name")
        }
        for name, ds, eps in self.rows("SELECT analyst, dataset, epsilon FROM allowances ORDER BY dataset"):
            out.setdefault(name, {})[ds] = float(eps)
        return out

    def allowance(self, analyst: str, dataset: str) -> float:
        """The analyst's allowance on ``dataset`` (0 if none)."""
        rows = self.rows(
            "SELECT epsilon FROM allowances WHERE analyst = ? AND dataset = ?", (analyst, dataset)
        )
        return float(rows[0][0]) if rows else 0.0

    def add_analyst(self, name: str, allowances: dict[str, float], *, by: str) -> bool:
        """Add an analyst with their allowances (and the audit line), in one transaction; False
        if the analyst exists already (nothing changed)."""

        def body(c: sqlite3.Connection) -> bool:
            now = time.time()
            cur = c.execute(
                "INSERT OR IGNORE INTO analysts (name, created, added_by) VALUES (?, ?, ?)", (name, now, by)
            )
            if cur.rowcount == 0:
                return False
            for ds, eps in allowances.items():
                c.execute(
                    "INSERT INTO allowances (analyst, dataset, epsilon, updated, changed_by)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (name, ds, float(eps), now, by),
                )
            detail = ", ".join(f"{ds}: epsilon={eps:g}" for ds, eps in allowances.items()) or "no allowances"
            c.execute(
                "INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)",
                (now, by, "add analyst", f"{name} ({detail})"),
            )
            return True

        return self.tx(body)

    def set_allowance(self, analyst: str, dataset: str, epsilon: float, *, by: str) -> float | None:
        """Set an analyst's allowance on ``dataset`` (and the audit line, with the old value), in
        one transaction; returns the old allowance (None: there was none)."""

        def body(c: sqlite3.Connection) -> float | None:
            now = time.time()
            row = c.execute(
                "SELECT epsilon FROM allowances WHERE analyst = ? AND dataset = ?", (analyst, dataset)
            ).fetchone()
            c.execute(
                "INSERT INTO allowances (analyst, dataset, epsilon, updated, changed_by)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (analyst, dataset) DO UPDATE SET"
                " epsilon = excluded.epsilon,"
                " updated = excluded.updated, changed_by = excluded.changed_by",
                (analyst, dataset, float(epsilon), now, by),
            )
            old = None if row is None else float(row[0])
            c.execute(
                "INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)",
                (
                    now,
                    by,
                    "set allowance",
                    f"{analyst} on {dataset}: epsilon={epsilon:g}"
                    + ("" if old is None else f" (was {old:g})"),
                ),
            )
            return old

        return self.tx(body)

    # -- requests --------------------------------------------------------------------------------
    def reserve(
        self,
        *,
        rid: str,
        analyst: str,
        dataset: str,
        kind: str,
        params: dict[str, Any],
        event: dict[str, Any],
        epsilon: float,
        allowance: float,
        accountant: str,
        delta: float,
    ) -> float:
        """Check the allowance and insert the ``reserved`` row, atomically (module docstring).

        Returns the analyst's spend on ``dataset`` after this request. Raises
        :class:`AllowanceExceeded` (nothing inserted).
        """
        new = event_from_dict(event)

        def body(c: sqlite3.Connection) -> float:
            key, state, history = self._spend.state(c, analyst, dataset, accountant, delta)
            if state is not None:
                before_state, state = state, state.add(new)
                after = float(state.epsilon(delta))
            else:
                assert history is not None
                after = analyst_spend([*history, new], accountant, delta)
            if not after <= allowance * (1 + 1e-9):
                before = (
                    float(before_state.epsilon(delta))
                    if history is None
                    else analyst_spend(history, accountant, delta)
                )
                raise AllowanceExceeded(
                    f"this release would bring your spend on {dataset!r} to epsilon={after:.6g} over your "
                    f"allowance {allowance:g} (already spent {before:.6g}). Nothing was charged.",
                    before,
                    allowance,
                )
            now = time.time()
            c.execute(
                "INSERT INTO requests (id, analyst, dataset, kind, params, event, epsilon, status, created,"
                " updated) VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?)",
                (
                    rid,
                    analyst,
                    dataset,
                    kind,
                    json.dumps(params),
                    json.dumps(event),
                    float(epsilon),
                    now,
                    now,
                ),
            )
            if state is not None:  # keyed by the counted rows with this one (module docstring)
                top = c.execute("SELECT rowid FROM requests WHERE id = ?", (rid,)).fetchone()[0]
                self._spend.remember(
                    (analyst, dataset, accountant, float(delta)), (key[0] + 1, int(top)), state
                )
            return after

        return self.tx(body, durable=False)

    def set_status(
        self, rid: str, status: str, *, charge_id: int | None = None, error: str | None = None
    ) -> None:
        def body(c: sqlite3.Connection) -> None:
            c.execute(
                "UPDATE requests SET status = ?, updated = ?, charge_id = COALESCE(?, charge_id),"
                " error = COALESCE(?, error) WHERE id = ?",
                (status, time.time(), charge_id, error, rid),
            )

        self.tx(body)

    def finish(
        self,
        rid: str,
        result: dict[str, Any],
        *,
        charge_id: int | None,
        recovered: bool = False,
        audit: tuple[str, str, str] | None = None,
    ) -> None:
        """Store the release, mark the request ``released`` and write its audit line (one transaction)."""
        text = json.dumps(result)
        now = time.time()

        def body(c: sqlite3.Connection) -> None:
            c.execute(
                "UPDATE requests SET status = 'released', result = ?, updated = ?, recovered = ?,"
                " charge_id = COALESCE(?, charge_id) WHERE id = ?",
                (text, now, int(recovered), charge_id, rid),
            )
            if audit is not None:
                c.execute("INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)", (now, *audit))

        # synced before the answer is sent (and with it the reservation's commit before it)
        self.tx(body)

    _COLS = (
        "id",
        "analyst",
        "dataset",
        "kind",
        "params",
        "event",
        "epsilon",
        "status",
        "created",
        "updated",
        "charge_id",
        "result",
        "error",
        "recovered",
    )

    def _row(self, r: tuple[Any, ...]) -> dict[str, Any]:
        d = dict(zip(self._COLS, r, strict=True))
        d["params"] = json.loads(d["params"])
        d["event"] = json.loads(d["event"])
        d["result"] = None if d["result"] is None else json.loads(d["result"])
        d["recovered"] = bool(d["recovered"])
        return d

    def request(self, rid: str) -> dict[str, Any] | None:
        rows = self.rows(f"SELECT {', '.join(self._COLS)} FROM requests WHERE id = ?", (rid,))
        return self._row(rows[0]) if rows else None

    def requests(
        self, analyst: str | None = None, statuses: tuple[str, ...] | None = None
    ) -> list[dict[str, Any]]:
        sql = f"SELECT {', '.join(self._COLS)} FROM requests"
        where, args = [], []
        if analyst is not None:
            where.append("analyst = ?")
            args.append(analyst)
        if statuses is not None:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            args.extend(statuses)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._row(r) for r in self.rows(sql + " ORDER BY created", tuple(args))]

    def spend(self, analyst: str, dataset: str, accountant: str, delta: float) -> float:
        """ε of the analyst's counted events on ``dataset`` (the composition the reservations check)."""

        def body(c: sqlite3.Connection) -> float:
            _, state, history = self._spend.state(c, analyst, dataset, accountant, delta)
            if state is not None:
                return float(state.epsilon(delta))
            assert history is not None
            return analyst_spend(history, accountant, delta)

        return self.tx(body, write=False)

    # -- uploads ---------------------------------------------------------------------------------
    def add_upload(self, uid: str, analyst: str, shapes: dict[str, Any], size: int) -> None:
        self.tx(
            lambda c: c.execute(
                "INSERT INTO uploads (id, analyst, created, shapes, size) VALUES (?, ?, ?, ?, ?)",
                (uid, analyst, time.time(), json.dumps(shapes), int(size)),
            )
        )

    def upload(self, uid: str, analyst: str) -> dict[str, Any]:
        rows = self.rows(
            "SELECT id, created, shapes, size FROM uploads WHERE id = ? AND analyst = ?", (uid, analyst)
        )
        if not rows:
            raise InvalidDataError(f"no upload {uid!r} of yours.")
        return {"id": rows[0][0], "created": rows[0][1], "shapes": json.loads(rows[0][2]), "size": rows[0][3]}


__all__ = ["COUNTED", "AllowanceExceeded", "Store", "analyst_spend"]
