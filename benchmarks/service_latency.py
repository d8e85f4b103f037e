"""Latency and throughput of the data owner's service against the in-process release.

For two small releases — a clamped mean (Laplace, n = 400) and the private GLM's statistics
(logistic, 2 features: 9 values, discrete Gaussian) — on a SQLite ledger and on a PostgreSQL one
(a local server, ``fsync=on``, from tests/pg_server.py, when its binaries are installed):

* ``in_process``: the library's own call with the same ledger (``ClampedRelease.release_records``,
  ``release_glm_statistics``), one after another: the baseline;
* ``service_core``: :meth:`dpinfer.service.core.Service.release` without HTTP (allowance
  reservation, budget pre-check, the stored release);
* ``server``: ``dpinfer serve`` in its own process, one keep-alive HTTP client, one request after
  another (p50/p99 latency), then 4 clients at once (releases per second, and the server process's
  CPU time per release, which other jobs on the machine do not inflate); and the same requests
  as dry runs, against the library's call without a ledger (``in_process.no_ledger``): the
  service's own cost (HTTP, token check, JSON, planning) without the disk.

A charged release costs the ledger's two synced commits (the charge, then its status) in process
and over HTTP alike, plus the service's one synced commit of the stored release; on a disk where
an fsync takes tens of milliseconds those dominate, and they bound the throughput (the ledger's
charges of one data set are serialised by its write lock).

Every data set is budgeted under the RDP accountant (it accounts both mechanisms), so the ledger's
charge composes the data set's whole history each time, in every variant alike. The overhead is
``server p50 - in_process p50``. Targets (issue 38): <= 20 ms p50 overhead, >= 50 small releases
per second on SQLite, on this machine (2 cores shared with other jobs: timings are wall-clock).

Usage: ``python benchmarks/service_latency.py [--n 100] [--quick]``; writes
benchmarks/results/service_latency.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "service"))
from service_helpers import Server, make_site, tokens  # noqa: E402

from dpinfer.errors import PrivacyWarning  # noqa: E402
from dpinfer.models.data_spec import DataSpec  # noqa: E402
from dpinfer.privacy import Ledger  # noqa: E402
from dpinfer.privacy.context import ReleaseContext  # noqa: E402
from dpinfer.privacy.mechanisms.clamped import clamped_release  # noqa: E402
from dpinfer.release.glm import release_glm_statistics  # noqa: E402
from pg_server import PGServer, why_unavailable  # noqa: E402

MEAN = {"dataset": "survey", "column": "bmi", "epsilon": 0.001}
GLM = {"dataset": "survey", "target": "smoker", "features": ["age", "bmi"], "epsilon": 0.001, "delta": 1e-9}


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in seconds)
    return {
        "n": len(ms),
        "p50_ms": statistics.median(ms),
        "p99_ms": float(np.quantile(ms, 0.99)),
        "mean_ms": statistics.fmean(ms),
    }


def timed(call: Any, n: int) -> dict[str, float]:
    call()  # warm-up
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return summary(out)


def in_process(site: Any, ledger_target: str, n: int) -> dict[str, Any]:
    truth = site.truth
    ledger = Ledger.create(ledger_target)
    for name in ("bench-mean", "bench-glm"):  # one budget each: the same history as the server's
        ledger.register(name, 1e6, 1e-6, "rdp", "replace-one")
    ctx = ReleaseContext(ledger=ledger, dataset="bench-mean")
    ctx_glm = ReleaseContext(ledger=ledger, dataset="bench-glm")
    mech = clamped_release("mean", 10, 60, MEAN["epsilon"], n=len(truth["bmi"]), data_range=(10, 60))
    X = np.column_stack([truth["age"], truth["bmi"]])
    bounds = {"age": (0, 120), "bmi": (10, 60)}

    def glm(context: ReleaseContext) -> Any:
        return release_glm_statistics(
            X,
            truth["smoker"],
            family="logistic",
            epsilon=GLM["epsilon"],
            delta=GLM["delta"],
            data=DataSpec(bounds=bounds, feature_names=["age", "bmi"]),
            context=context,
        )

    free = ReleaseContext()  # no ledger: what a dry run costs in process
    return {
        "clamped_mean": timed(lambda: mech.release_records(truth["bmi"], context=ctx), n),
        "glm": timed(lambda: glm(ctx_glm), n),
        "no_ledger": {
            "clamped_mean": timed(lambda: mech.release_records(truth["bmi"], context=free), n),
            "glm": timed(lambda: glm(free), n),
        },
    }


def service_core(site: Any, n: int, kind: str) -> dict[str, Any]:
    from dpinfer.service.auth import Principal
    from dpinfer.service.config import load_config
    from dpinfer.service.core import Service
    from dpinfer.service.releases import ClampedRequest, GLMRequest

    svc = Service(load_config(site.config))
    who = Principal("alice", "analyst", "bench")
    try:
        if kind == "clamped_mean":
            return timed(lambda: svc.release(who, "clamped", ClampedRequest(**MEAN)), n)
        return timed(lambda: svc.release(who, "glm", GLMRequest(**GLM)), n)
    finally:
        svc.close()


def over_http(site: Any, token: str, n: int, clients: int, name: str) -> dict[str, Any]:
    """Sequential latency, dry-run latency and the throughput of ``clients`` at once, for one kind."""
    path, body = {"clamped_mean": ("clamped", MEAN), "glm": ("glm", GLM)}[name]
    server = Server(site)
    h = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=server.url, headers=h, timeout=120) as client:

            def call(dry: bool = False) -> None:
                r = client.post(f"/v1/releases/{path}", json={**body, "dry_run": dry})
                assert r.status_code == 200, r.text

            out = timed(call, n)
            dry = timed(lambda: call(True), n)
        done = [0]
        lock = threading.Lock()

        def worker() -> None:
            with httpx.Client(base_url=server.url, headers=h, timeout=120) as client:
                for _ in range(n // clients):
                    r = client.post(f"/v1/releases/{path}", json=body)
                    assert r.status_code == 200, r.text
                    with lock:
                        done[0] += 1

        threads = [threading.Thread(target=worker) for _ in range(clients)]
        cpu0 = process_cpu(server.proc.pid)
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["concurrent_clients"] = clients
        out["releases_per_s"] = done[0] / (time.perf_counter() - t0)
        # the server's own CPU per release: robust to other jobs on the machine (wall time is not)
        out["server_cpu_ms_per_release"] = 1000 * (process_cpu(server.proc.pid) - cpu0) / max(done[0], 1)
        return {"release": out, "dry_run": dry}
    finally:
        server.stop()


def run(root: Path, new_ledger: Any, n: int, clients: int) -> dict[str, Any]:
    """Every variant on a fresh ledger (a charge composes its data set's whole history: the
    variants must start from the same, empty one)."""

    def site(name: str) -> tuple[Any, str]:
        s = make_site(
            root / name, budget=1e6, accountant="rdp", allowances={"alice": 1e5}, ledger=new_ledger()
        )
        return s, tokens(s, {"alice": ("alice", "analyst", 1.0)})["alice"][0]

    s_local, _ = site("local")
    target = new_ledger()
    res: dict[str, Any] = {"in_process": in_process(s_local, target or str(s_local.root / "local.db"), n)}
    res["service_core"] = {}
    for kind in ("clamped_mean", "glm"):
        res["service_core"][kind] = service_core(site(f"core-{kind}")[0], n, kind)
    res["server"] = {}
    res["server_dry_run"] = {}
    for kind in ("clamped_mean", "glm"):
        s, token = site(f"http-{kind}")
        got = over_http(s, token, n, clients, kind)
        res["server"][kind], res["server_dry_run"][kind] = got["release"], got["dry_run"]
    res["dry_run_overhead_p50_ms"] = {  # HTTP, token, JSON, planning: no disk involved
        k: res["server_dry_run"][k]["p50_ms"] - res["in_process"]["no_ledger"][k]["p50_ms"]
        for k in ("clamped_mean", "glm")
    }
    res["overhead_p50_ms"] = {
        k: res["server"][k]["p50_ms"] - res["in_process"][k]["p50_ms"] for k in ("clamped_mean", "glm")
    }
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="requests per measurement")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients for the throughput")
    parser.add_argument("--quick", action="store_true", help="30 requests per measurement")
    args = parser.parse_args()
    n = 30 if args.quick else args.n
    warnings.filterwarnings("ignore", category=PrivacyWarning)
    out: dict[str, Any] = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "requests_per_measurement": n,
        "accountant": "rdp",
        "targets": {"overhead_p50_ms": 20, "releases_per_s_sqlite": 50},
    }
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = run(Path(tmp) / "sqlite", lambda: None, n, args.clients)
        reason = why_unavailable()
        if reason:
            out["postgresql"] = {"skipped": reason}
        else:
            pg = PGServer(fsync=True).init()
            try:
                out["postgresql"] = {
                    "server": "local, fsync=on, TCP 127.0.0.1",
                    **run(Path(tmp) / "pg", pg.new_database, n, args.clients),
                }
            finally:
                pg.close()
    print(json.dumps(out, indent=2))
    path = Path(__file__).parent / "results" / "service_latency.json"
    path.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
