"""Races, crashes and limits of the service, with real server processes (slow).

* 16 concurrent clients racing for one allowance (and two analysts for one budget): no
  overspend, and the spend equals the sum of the charges (pure accountant: ε adds up).
* SIGKILL of the server under traffic (a SQLite and a PostgreSQL ledger), then a restart: every
  charge in the ledger belongs to a
  request whose release the analyst can retrieve, and every request is released or aborted (none
  charged-and-lost); the deterministic variant kills a process right after the ledger charge
  (before the release is stored) and right before it.
* The per-token rate limit answers 429 and charges nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("argon2")

from service_helpers import EPS, Server, headers, make_site, race, release_mean, tokens  # noqa: E402

from dpinfer.privacy import Ledger  # noqa: E402

pytestmark = pytest.mark.slow


def test_sixteen_clients_racing_for_one_allowance_never_overspend(tmp_path):
    site = make_site(
        tmp_path, budget=1.5, accountant="pure", delta=None, allowances={"alice": 1.0, "bob": 1.0}
    )
    made = tokens(
        site,
        {f"a{i}": ("alice", "analyst", 1.0) for i in range(16)}
        | {f"b{i}": ("bob", "analyst", 1.0) for i in range(8)},
    )
    server = Server(site)
    try:
        alice = [made[f"a{i}"][0] for i in range(16)]
        results = race(server.url, alice, attempts=2)  # 32 attempts for 16 allowed releases
        ok = [r for r in results if r[1] == 200]
        refused = [r for r in results if r[1] != 200]
        assert len(ok) == 16 and {r[1] for r in refused} == {409}
        led = Ledger(site.root / "budget.db")
        charges = [h for h in led.history("survey") if "analyst alice" in h["label"]]
        assert len(charges) == 16 and sorted(h["label"].split()[2][:-1] for h in charges) == sorted(
            r[2] for r in ok
        )
        assert led.spent("survey") == pytest.approx(sum(h["event"]["epsilon"] for h in led.history("survey")))
        me = httpx.get(f"{server.url}/v1/me", headers=headers(alice[0])).json()["allowances"]["survey"]
        assert me["spent"] == pytest.approx(16 * EPS) and me["spent"] <= 1.0 + 1e-9
        # bob races for what is left of the data set's budget (0.5 of 1.5): the ledger refuses the rest
        bob = [made[f"b{i}"][0] for i in range(8)]
        results = race(server.url, bob, attempts=2)
        ok_b = [r for r in results if r[1] == 200]
        assert len(ok_b) == 8 and {r[1] for r in results if r[1] != 200} == {409}
        assert led.spent("survey") == pytest.approx(1.5) and led.spent("survey") <= 1.5 * (1 + 1e-9)
        assert len(led.history("survey")) == 24
        statuses = {
            q["status"]
            for q in httpx.get(f"{server.url}/v1/requests", headers=headers(bob[0])).json()["requests"]
        }
        assert statuses <= {"released", "aborted"}
    finally:
        server.stop()


def _invariants(site, url: str, token_of: dict[str, str], ledger: str | None = None) -> dict[str, int]:
    """After a crash and restart: charged ⇔ released and retrievable; nothing left in between."""
    import sqlite3

    led = Ledger(ledger or site.root / "budget.db")
    charges = led.history("survey")
    conn = sqlite3.connect(site.root / "state" / "service.db")
    rows = conn.execute("SELECT id, analyst, status, charge_id, recovered FROM requests").fetchall()
    conn.close()
    by_id = {r[0]: r for r in rows}
    assert {r[2] for r in rows} <= {"released", "aborted"}, {r[2] for r in rows}
    released = {r[0] for r in rows if r[2] == "released"}
    charged_ids = set()
    for h in charges:
        rid = h["label"].split("[request ")[1].split("]")[0]
        charged_ids.add(rid)
        assert rid in released, f"charge {h['id']} has no stored release"
        assert by_id[rid][3] == h["id"]
    assert charged_ids == released
    for rid in released:  # every release retrievable by its analyst over HTTP
        r = httpx.get(f"{url}/v1/requests/{rid}", headers=headers(token_of[by_id[rid][1]]), timeout=60)
        assert r.status_code == 200 and r.json()["result"]["value"], rid
    me = httpx.get(f"{url}/v1/me", headers=headers(token_of["alice"])).json()["allowances"]["survey"]
    alice_charges = [h for h in charges if "analyst alice" in h["label"]]
    assert me["spent"] == pytest.approx(sum(h["event"]["epsilon"] for h in alice_charges))
    return {
        "released": len(released),
        "recovered": sum(r[4] for r in rows),
        "aborted": len(rows) - len(released),
    }


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sigkill_under_traffic_leaves_every_charge_with_its_release(tmp_path, backend):
    if backend == "postgresql":
        from pg_server import PGServer, why_unavailable

        reason = why_unavailable()
        if reason:
            pytest.skip(reason)
        pg = PGServer().init()
        try:
            _sigkill_cycles(tmp_path, pg.new_database())
        finally:
            pg.close()
        return
    _sigkill_cycles(tmp_path, None)


def _sigkill_cycles(tmp_path, ledger: str | None) -> None:
    site = make_site(tmp_path, budget=100.0, accountant="pure", delta=None, allowances={"alice": 50.0},
                     ledger=ledger)
    made = tokens(site, {"alice": ("alice", "analyst", 1.0)})
    token = made["alice"][0]
    totals = {"released": 0, "recovered": 0}
    for cycle in range(3):
        server = Server(site)
        stop = threading.Event()
        count = [0]

        def traffic(server: Server = server, stop: threading.Event = stop, count: list[int] = count) -> None:
            with httpx.Client() as client:
                while not stop.is_set():
                    try:
                        if release_mean(client, server.url, token, eps=0.01).status_code == 200:
                            count[0] += 1
                    except httpx.HTTPError:
                        return

        threads = [threading.Thread(target=traffic) for _ in range(8)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        while count[0] < 10 + 5 * cycle and time.monotonic() < deadline:
            time.sleep(0.02)
        server.kill()  # SIGKILL in the middle of the traffic
        stop.set()
        for t in threads:
            t.join(60)
        server = Server(site)  # restart: recovery runs before it serves
        try:
            got = _invariants(site, server.url, {"alice": token}, ledger)
        finally:
            server.stop()
        totals["released"] = got["released"]
        totals["recovered"] += got["recovered"]
    assert totals["released"] >= 10


CRASH = r"""
import os, sys
from dpinfer.service.config import load_config
from dpinfer.service.core import Service
from dpinfer.service.auth import Principal
from dpinfer.service.releases import ClampedRequest
from dpinfer.service import store
from dpinfer.privacy import ledger as ledger_mod

where = sys.argv[2]
svc = Service(load_config(sys.argv[1]))
if where == "after-charge":   # the charge is committed and the noise drawn; the release not stored
    store.Store.finish = lambda *a, **k: os._exit(9)
else:                          # dies inside the ledger's charge, before its commit
    ledger_mod.Ledger.charge = lambda *a, **k: os._exit(9)
svc.release(Principal("alice", "analyst", "x"), "clamped",
            ClampedRequest(dataset="survey", column="bmi", epsilon=0.25))
"""


@pytest.mark.parametrize("where", ["after-charge", "before-charge"])
def test_a_crash_on_either_side_of_the_charge_is_recovered_or_absent(tmp_path, where):
    site = make_site(tmp_path, budget=5.0, accountant="pure", delta=None, allowances={"alice": 2.0})
    made = tokens(site, {"alice": ("alice", "analyst", 1.0)})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", CRASH, str(site.config), where], env=env, timeout=300)
    assert proc.returncode == 9
    led = Ledger(site.root / "budget.db")
    assert len(led.history("survey")) == (1 if where == "after-charge" else 0)
    server = Server(site)
    try:
        got = _invariants(site, server.url, {"alice": made["alice"][0]})
        hist = httpx.get(f"{server.url}/v1/requests", headers=headers(made["alice"][0])).json()["requests"]
    finally:
        server.stop()
    if where == "after-charge":
        assert got == {"released": 1, "recovered": 1, "aborted": 0}
        assert hist[0]["recovered"] is True and hist[0]["status"] == "released"
    else:
        assert got == {"released": 0, "recovered": 0, "aborted": 1} and hist[0]["status"] == "aborted"
    assert "recovery:" in server.log()


def test_the_rate_limit_answers_429_and_charges_nothing(tmp_path):
    site = make_site(tmp_path, rate_limit=1.0, rate_burst=3, accountant="pure", delta=None)
    made = tokens(site, {"alice": ("alice", "analyst", 1.0), "bob": ("bob", "analyst", 1.0)})
    server = Server(site)
    try:
        with httpx.Client() as client:
            codes = [
                client.get(f"{server.url}/v1/me", headers=headers(made["alice"][0])).status_code
                for _ in range(3)
            ]
            r = release_mean(client, server.url, made["alice"][0])
            assert codes == [200, 200, 200] and r.status_code == 429
            assert r.json()["error"]["code"] == "rate_limited" and r.headers["retry-after"] == "1"
            assert client.get(f"{server.url}/v1/me", headers=headers(made["bob"][0])).status_code == 200
        assert Ledger(site.root / "budget.db").history("survey") == []
        assert json.loads(httpx.get(f"{server.url}/v1/health").text) == {"status": "ok"}
    finally:
        server.stop()
