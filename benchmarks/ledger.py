"""The privacy ledger on its two backends: the cost of a charge, and many processes racing.

Measured in one run, side by side, on a SQLite file (``synchronous=FULL``) and on a PostgreSQL
server started here from the installed binaries (tests/pg_server.py, ``fsync=on``, TCP on
127.0.0.1, one connection per transaction):

* overhead of one charge (``with ledger.charge(...): pass``: the charge transaction plus the
  status update), wall milliseconds, median and mean over ``--charges`` sequential charges;
* a race: ``--procs`` processes charge ε = 0.01 each against a budget ε = 1 until refused:
  charges attempted and accepted, spend vs budget (must be exactly 100 accepted, spend 1.0).

Usage: ``python benchmarks/ledger.py [--charges 200] [--procs 16]``; writes
benchmarks/results/ledger.json. Without PostgreSQL binaries or psycopg only SQLite is measured.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dpinfer.errors import BudgetExceededError
from dpinfer.privacy import LaplaceEvent, Ledger

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pg_server import PGServer, why_unavailable  # noqa: E402

FORK = mp.get_context("fork")


def overhead(target: str, n: int) -> dict[str, float]:
    ledger = Ledger.create(target)
    ledger.register("bench", epsilon=1e6)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with ledger.charge("bench", LaplaceEvent(1e-3)):
            pass
        times.append((time.perf_counter() - t0) * 1e3)
    return {"charges": n, "median_ms": statistics.median(times), "mean_ms": statistics.fmean(times)}


def _racer(target, barrier, results):
    ledger = Ledger(target)
    attempted = accepted = 0
    barrier.wait()
    while True:
        attempted += 1
        try:
            with ledger.charge("race", LaplaceEvent(0.01)):
                accepted += 1
        except BudgetExceededError:
            break
    results.put((attempted, accepted))


def race(target: str, procs: int) -> dict[str, float]:
    ledger = Ledger.create(target)
    ledger.register("race", epsilon=1.0)
    barrier, results = FORK.Barrier(procs), FORK.Queue()
    workers = [FORK.Process(target=_racer, args=(target, barrier, results)) for _ in range(procs)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    counts = [results.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    hist = ledger.history("race")
    return {
        "processes": procs,
        "attempted": sum(c[0] for c in counts),
        "accepted": sum(c[1] for c in counts),
        "rows": len(hist),
        "spent": ledger.spent("race"),
        "sum_of_rows": sum(h["event"]["epsilon"] for h in hist),
        "budget": 1.0,
        "wall_s": time.perf_counter() - t0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--charges", type=int, default=200)
    ap.add_argument("--procs", type=int, default=16)
    args = ap.parse_args()
    out: dict[str, object] = {"machine": platform.platform(), "python": platform.python_version()}
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = {
            "overhead": overhead(f"{tmp}/o.db", args.charges),
            "race": race(f"{tmp}/r.db", args.procs),
        }
    reason = why_unavailable()
    if reason:
        out["postgresql"] = {"skipped": reason}
    else:
        server = PGServer(fsync=True).init()
        try:
            out["postgresql"] = {
                "server": "local, fsync=on, TCP 127.0.0.1",
                "overhead": overhead(server.new_database(), args.charges),
                "race": race(server.new_database(), args.procs),
            }
        finally:
            server.close()
    print(json.dumps(out, indent=2))
    path = Path(__file__).parent / "results" / "ledger.json"
    path.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
