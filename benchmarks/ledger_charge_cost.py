"""The cost of one charge as a ledger grows: 10, 100, 1000 and 10 000 distinct releases.

Each charge composes its event into the budget's stored composed state
(:mod:`dpinfer.privacy.ledger_state`) instead of recomposing every earlier event. Measured on a
SQLite file (``synchronous=FULL``) and a PostgreSQL server started here from the installed
binaries (tests/pg_server.py, ``fsync=on``, TCP on 127.0.0.1, one connection per transaction),
under the ``pld`` and ``rdp`` accountants, with distinct releases: alternately a Laplace release
at ε ~ U(0.002, 0.004) and a Gaussian release with noise multiplier ~ U(200, 400) (fixed seed),
charged one after another to a budget ε = 10, δ = 1e-6.

The first ``--real-max`` (1000) charges are made one by one; for the later points the ledger is
prefilled in one transaction up to n-10 (each row as a charge writes it, its spend from the same
fold, and the state after the last one), then charges n-9..n are made for real.

At each point n: wall milliseconds of ``with ledger.charge(...): pass`` (the charge transaction
and the status update), median and max over charges n-9..n; ``compose_ms_per_charge``: what the
charge computes (read the stored state, compose the next event, its ε, serialise), median of 5;
``fixed_overhead_pure``: the same charge on a ``pure`` budget, i.e. the durable transactions
alone, measured in the same run; the spend the n-th charge recorded
(incremental); the size of the stored state; and, where affordable, the accountant's full
recomposition of the n events (``accountant.epsilon(compose(*events), delta)``, what every charge
computed before) with its time, and their difference (PLD: both round every leaf's losses up on
the grid Δ = 1e-4 in different groupings, so they may differ by up to Δ per charge).

``--before SRC``: also measure the cost of a charge with the code at SRC (e.g. an export of the
main branch's ``src``) at 10, 50 and 100 events on SQLite, for the before/after table.

Usage: ``python benchmarks/ledger_charge_cost.py [--max 10000] [--full-max 10000] [--real-max 1000]
[--before SRC] [--backends sqlite,postgresql] [--accountants pld,rdp]``;
writes benchmarks/results/ledger_charge_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pg_server import PGServer, why_unavailable  # noqa: E402

POINTS = (10, 100, 1000, 10_000)
BUDGET, DELTA = 10.0, 1e-6


def releases(n: int, seed: int = 35) -> list:
    from dpinfer.privacy import GaussianEvent, LaplaceEvent

    rng = np.random.default_rng(seed)
    return [
        LaplaceEvent(float(rng.uniform(0.002, 0.004))) if i % 2 == 0
        else GaussianEvent(float(rng.uniform(200.0, 400.0)))
        for i in range(n)
    ]


def _compose_ms(state_bytes: bytes, event, accountant: str, repeat: int = 5) -> float:
    """Median ms of what a charge computes: read the stored state, compose one event, its ε, write."""
    from dpinfer.privacy import ledger_state as ls

    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        state = ls.loads(state_bytes).add(event)
        state.epsilon(DELTA)
        ls.dumps(state)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _prefill(ledger, accountant: str, events: list, start: int) -> None:
    """Write charges ``start+1..start+len(events)`` in one transaction, each row exactly as a
    charge writes it (its spend from the same fold), and the state after the last one."""
    import json as _json
    import os

    from dpinfer.privacy import ledger_state as ls
    from dpinfer.privacy.event_conversion import event_to_dict
    from dpinfer.privacy.ledger_store import now

    def fill(tx):
        state = ls.loads(tx.rows("SELECT state FROM budget_state WHERE dataset = 'bench'")[0][0])
        last = 0
        for event in events:
            state = state.add(event)
            last = tx.insert(
                "INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid, insecure,"
                " host, charged_by, authenticated_as, purpose) VALUES ('bench', ?, 'prefill', ?, 'released',"
                " ?, ?, 0, 'bench', 'bench', 'bench', 'prefill')",
                (_json.dumps(event_to_dict(event)), state.epsilon(DELTA), now(), os.getpid()),
            )
        tx.rows(
            "UPDATE budget_state SET last_charge = ?, spent = ?, state = ? WHERE dataset = 'bench'",
            (last, state.epsilon(DELTA), ls.dumps(state)),
        )

    ledger._store.transaction(fill, write=True, what="prefilling the benchmark ledger")


_FULL: dict[tuple[str, int], tuple[float, float]] = {}


def grow(target: str, accountant: str, n_max: int, full_max: int, real_max: int) -> list[dict]:
    """Charge the releases one by one up to ``real_max``, then prefill up to 10 below each later
    point and charge the last 10 for real."""
    from dpinfer.privacy import Ledger, compose, get_accountant
    from dpinfer.privacy import ledger_state as ls

    ledger = Ledger.create(target)
    ledger.register("bench", BUDGET, DELTA, accountant=accountant)
    acc = get_accountant(accountant)
    events = releases(n_max + 1)
    times: list[float] = []
    rows = []
    k = 0
    while k < n_max:
        nxt = next(p for p in POINTS if p > k) if any(p > k for p in POINTS) else n_max
        if k >= real_max and nxt - 10 > k:
            _prefill(ledger, accountant, events[k:nxt - 10], k)
            k = nxt - 10
            times.clear()
        event = events[k]
        t0 = time.perf_counter()
        with ledger.charge("bench", event) as charged:
            pass
        times.append((time.perf_counter() - t0) * 1e3)
        k += 1
        if k not in POINTS:
            continue
        window = times[-10:]
        stored = ledger._read(
            lambda tx: tx.rows("SELECT state FROM budget_state WHERE dataset = 'bench'")
        )[0][0]
        state = ls.loads(stored)
        row = {
            "charges": k,
            "ms_per_charge_median": statistics.median(window),
            "ms_per_charge_max": max(window),
            "compose_ms_per_charge": _compose_ms(bytes(stored), events[k], accountant),
            "epsilon_incremental": charged.epsilon_spent,
            "state_bytes": len(bytes(stored)),
            "state_points": state.points,
            "state_grid": state.vdi if accountant == "pld" else None,
        }
        if k <= full_max:
            if (accountant, k) not in _FULL:  # the same events on every backend: recomposed once
                t0 = time.perf_counter()
                _FULL[accountant, k] = (acc.epsilon(compose(*events[:k]), DELTA), time.perf_counter() - t0)
            full, row["full_recomposition_s"] = _FULL[accountant, k]
            row["epsilon_full"] = full
            row["incremental_minus_full"] = charged.epsilon_spent - full
        print(json.dumps({"accountant": accountant, **row}), flush=True)
        rows.append(row)
    return rows


def fixed_overhead(target: str, n: int = 50) -> dict[str, float]:
    """The same charge transaction on a 'pure' budget (one Laplace release at a time): the cost
    of the durable transactions alone, on the same machine at the same time."""
    from dpinfer.privacy import LaplaceEvent, Ledger

    ledger = Ledger.create(target)
    ledger.register("overhead", 1e6, accountant="pure")
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with ledger.charge("overhead", LaplaceEvent(1e-3)):
            pass
        times.append((time.perf_counter() - t0) * 1e3)
    return {"charges": n, "median_ms": statistics.median(times), "mean_ms": statistics.fmean(times)}


BEFORE = r"""
import json, sys, time, statistics, tempfile, os
sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])
from ledger_charge_cost import releases
from dpinfer.privacy import Ledger
points = (10, 50, 100)
path = os.path.join(tempfile.mkdtemp(), "before.db")
ledger = Ledger.create(path)
ledger.register("bench", 10.0, 1e-6, accountant="pld")
times, out = [], []
for k, event in enumerate(releases(max(points)), start=1):
    t0 = time.perf_counter()
    with ledger.charge("bench", event):
        pass
    times.append((time.perf_counter() - t0) * 1e3)
    if k in points:
        out.append({"charges": k, "ms_per_charge_median": statistics.median(times[-5:]),
                    "epsilon": ledger.spent("bench")})
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
print(json.dumps(out))
"""


def before(src: str) -> list[dict]:
    """The charge cost with the code at ``src`` (full recomposition at every charge)."""
    done = subprocess.run(
        [sys.executable, "-c", BEFORE, src, str(Path(__file__).parent)],
        capture_output=True, text=True, check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max", type=int, default=10_000, help="charges per run")
    parser.add_argument("--full-max", type=int, default=10_000, help="largest n recomposed in full")
    parser.add_argument(
        "--real-max", type=int, default=1000,
        help="charges made one by one; beyond, each point's first n-10 are prefilled in bulk",
    )
    parser.add_argument("--before", help="the src folder of the code to measure the 'before' cost with")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--accountants", default="pld,rdp")
    args = parser.parse_args()
    out: dict = {
        "benchmark": "ledger_charge_cost",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "budget": {"epsilon": BUDGET, "delta": DELTA},
        "releases": "alternately Laplace eps~U(0.002,0.004) and Gaussian multiplier~U(200,400), seed 35",
        "runs": {},
    }
    if args.before:
        out["before_full_recomposition_sqlite_pld"] = before(args.before)
    backends = args.backends.split(",")
    server = None
    if "postgresql" in backends:
        reason = why_unavailable()
        if reason:
            out["postgresql"] = f"not measured: {reason}"
            backends.remove("postgresql")
        else:
            server = PGServer(fsync=True).init()
    try:
        for backend in backends:
            for accountant in args.accountants.split(","):
                if backend == "sqlite":
                    target = str(Path(tempfile.mkdtemp()) / "ledger.db")
                else:
                    assert server is not None
                    target = server.new_database()
                print(f"# {backend} {accountant}", flush=True)
                out["runs"][f"{backend}/{accountant}"] = grow(
                    target, accountant, args.max, args.full_max, args.real_max
                )
            if backend == "sqlite":
                overhead_target = str(Path(tempfile.mkdtemp()) / "overhead.db")
            else:
                assert server is not None
                overhead_target = server.new_database()
            out[f"{backend}/fixed_overhead_pure"] = fixed_overhead(overhead_target)
    finally:
        if server is not None:
            server.close()
    out["load_average_at_end"] = list(os.getloadavg())  # timings on a shared machine are noisy
    out["cpus"] = os.cpu_count()
    path = Path(__file__).parent / "results" / "ledger_charge_cost.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
