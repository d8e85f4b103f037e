"""Runs that resume: every long run recorded in one store, checkpointed as it goes.

A :class:`RunStore` (``RunStore("runs.db")``, or ``RunStore("postgresql://host/db")`` shared by
many hosts) keeps, per run: its kind (``"smc-abc"``, ``"sppe"``, ...), the model description,
the settings, the seed, the observed release and the privacy report of that release, its status
(``running`` / ``interrupted`` / ``finished``), wall and CPU times summed over every session
that worked on it, and its latest checkpoint (the state after the last completed step: an SMC-ABC
population, an SPPE/SPLE round). A method given ``runs=`` checkpoints there; given ``resume=RUN_ID``
it continues from the checkpoint, and because every step draws its randomness from the run's
seed and the step index only, the result is the one an uninterrupted run would have given.

Checkpoints are written in one transaction with the run's counters, so a process killed at any
moment leaves either the previous or the new checkpoint, never half of one. Only public state is
stored (simulations, particles, network weights, seeds); never privacy noise or its randomness.
``dpinfer runs list | show`` reads a store.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from datetime import datetime, timezone
from typing import Any

from ..errors import RunStoreError
from .runstate import decode_state, encode_state
from .runstore_db import Database

_LIST_COLUMNS = (
    "id", "kind", "status", "created", "updated", "host", "pid", "steps", "wall_s", "cpu_s", "note"
)
_JSON_COLUMNS = ("model", "settings", "observed", "privacy")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _cpu() -> float:
    """CPU seconds of this process and its finished children (worker processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


class RunStore:
    """Runs and their checkpoints in a SQLite file or a PostgreSQL database (created on first use).

    Parameters
    ----------
    target
        A file path, or ``postgresql://user@host:port/dbname`` (settings the URL leaves out come
        from libpq's environment and ``~/.pgpass``).
    """

    def __init__(self, target: str | os.PathLike[str] = "runs.db", timeout: float = 60.0) -> None:
        self._db = Database(target, timeout)
        #: where the store lives, as it may be shown (a URL's password redacted)
        self.location = self._db.location

    def __repr__(self) -> str:
        return f"RunStore({self.location!r})"

    # -- records -----------------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first (without settings or checkpoints)."""
        rows = self._db.transaction(
            lambda cur: cur.rows(f"SELECT {', '.join(_LIST_COLUMNS)} FROM runs ORDER BY created, id")
        )
        return [dict(zip(_LIST_COLUMNS, r, strict=True)) for r in rows]

    def run(self, run_id: str) -> dict[str, Any]:
        """The full record of ``run_id`` (settings, model, privacy report, times, last step)."""
        columns = _LIST_COLUMNS + _JSON_COLUMNS + ("seed",)
        rows = self._db.transaction(
            lambda cur: cur.rows(f"SELECT {', '.join(columns)} FROM runs WHERE id = ?", (run_id,))
        )
        if not rows:
            known = [r["id"] for r in self.runs()][-10:]
            raise RunStoreError(
                f"no run {run_id!r} in run store {self.location} (latest: {known}); "
                "`dpinfer runs list --runs STORE` lists them."
            )
        record = dict(zip(columns, rows[0], strict=True))
        for key in _JSON_COLUMNS:
            record[key] = None if record[key] is None else json.loads(record[key])
        return record

    # -- one run -----------------------------------------------------------------------------
    def start(
        self,
        kind: str,
        *,
        model: dict[str, Any],
        settings: dict[str, Any],
        seed: str,
        observed: Any = None,
        privacy: dict[str, Any] | None = None,
    ) -> Run:
        """Record a new run of ``kind`` (status ``running``); the :class:`Run` to checkpoint it."""
        run_id = f"{kind}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
        values = (run_id, kind, "running", _now(), _now(), socket.gethostname(), os.getpid(),
                  _json(model), _json(settings), seed, _json(observed), _json(privacy))
        self._db.transaction(lambda cur: cur.rows(
            "INSERT INTO runs (id, kind, status, created, updated, host, pid, model, settings, seed,"
            " observed, privacy) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values
        ))
        return Run(self, run_id, 0.0, 0.0)

    def resume(self, run_id: str, kind: str, *, model: dict[str, Any], settings: dict[str, Any],
               observed: Any = None, ignore: tuple[str, ...] = ()) -> Run:
        """Continue ``run_id``: it must be a ``kind`` run, unfinished, with the same model, settings
        (apart from the keys in ``ignore``, e.g. the backend) and observed release."""
        record = self.run(run_id)
        if record["kind"] != kind:
            raise RunStoreError(
                f"run {run_id!r} is a {record['kind']} run, not {kind}; it cannot be resumed here."
            )
        if record["status"] == "finished":
            raise RunStoreError(f"run {run_id!r} already finished; `dpinfer runs show {run_id}` shows it.")
        stored = {part: record[part] for part in ("model", "settings", "observed")}
        differ = _differences({"model": model, "settings": settings, "observed": observed}, stored, ignore)
        if differ:
            raise RunStoreError(
                f"run {run_id!r} was started with other inputs ({', '.join(differ)} differ); resume it "
                "with the same model, observed release and settings, or start a new run."
            )
        self._db.transaction(lambda cur: cur.rows(
            "UPDATE runs SET status = 'running', updated = ?, host = ?, pid = ? WHERE id = ?",
            (_now(), socket.gethostname(), os.getpid(), run_id),
        ))
        return Run(self, run_id, float(record["wall_s"]), float(record["cpu_s"]))

    def seed_of(self, run_id: str) -> str | None:
        """The seed recorded for ``run_id`` (its ``SeedSequence`` entropy, as a string)."""
        return self.run(run_id)["seed"]


def _differences(wanted: dict[str, Any], stored: dict[str, Any], ignore: tuple[str, ...]) -> list[str]:
    """Names of the inputs (``settings.seed_entropy``...) that differ between two records."""
    out = []
    for part, value in wanted.items():
        a, b = json.loads(_json(value)), stored[part]
        if isinstance(a, dict) and isinstance(b, dict):
            keys = sorted((set(a) | set(b)) - set(ignore))
            out += [f"{part}.{k}" for k in keys if a.get(k) != b.get(k)]
        elif a != b:
            out.append(part)
    return out


class Run:
    """One run being worked on: checkpoints, the latest state, the end (times accumulate)."""

    def __init__(self, store: RunStore, run_id: str, wall: float, cpu: float) -> None:
        self.store, self.id = store, run_id
        self._wall0, self._cpu0 = wall, cpu
        self._t0, self._c0 = time.perf_counter(), _cpu()

    def _times(self) -> tuple[float, float]:
        return self._wall0 + time.perf_counter() - self._t0, self._cpu0 + _cpu() - self._c0

    def latest(self) -> tuple[int, dict[str, Any]] | None:
        """``(step, state)`` of the latest checkpoint, or None before the first."""
        rows = self.store._db.transaction(lambda cur: cur.rows(
            "SELECT step, state FROM run_checkpoints WHERE run_id = ? ORDER BY step DESC LIMIT 1", (self.id,)
        ))
        return None if not rows else (int(rows[0][0]), decode_state(self.store._db.blob(rows[0][1])))

    def checkpoint(self, step: int, state: dict[str, Any]) -> None:
        """Store ``state`` after step ``step`` (replacing earlier checkpoints), atomically."""
        data = encode_state(state)
        wall, cpu = self._times()

        def write(cur: Any) -> None:
            cur.rows("DELETE FROM run_checkpoints WHERE run_id = ?", (self.id,))
            cur.rows("INSERT INTO run_checkpoints (run_id, step, created, state) VALUES (?, ?, ?, ?)",
                     (self.id, int(step), _now(), data))
            cur.rows("UPDATE runs SET steps = ?, wall_s = ?, cpu_s = ?, updated = ? WHERE id = ?",
                     (int(step), wall, cpu, _now(), self.id))

        self.store._db.transaction(write)

    def end(self, status: str, note: str = "", steps: int | None = None) -> None:
        """Mark the run ``finished`` or ``interrupted`` (with a note) and record its times;
        ``steps``: the completed steps of a finished run (else the checkpoint's step stays).

        Marking an interruption is best effort: if the store itself is what failed, the run stays
        ``running`` there (and resumes all the same) rather than hiding the original error.
        """
        wall, cpu = self._times()
        if status == "interrupted":
            try:
                self._mark(status, note, wall, cpu, steps)
            except RunStoreError:
                pass
            return
        self._mark(status, note, wall, cpu, steps)

    def _mark(self, status: str, note: str, wall: float, cpu: float, steps: int | None) -> None:
        self.store._db.transaction(lambda cur: cur.rows(
            "UPDATE runs SET status = ?, note = ?, wall_s = ?, cpu_s = ?, updated = ?"
            + (", steps = ?" if steps is not None else "") + " WHERE id = ?",
            (status, note, wall, cpu, _now(), *(() if steps is None else (int(steps),)), self.id),
        ))


def as_run_store(runs: Any) -> RunStore:
    """``runs`` as a :class:`RunStore` (a path or URL is opened, created on first use)."""
    return runs if isinstance(runs, RunStore) else RunStore(runs)


__all__ = ["Run", "RunStore", "as_run_store"]
