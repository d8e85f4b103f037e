"""The owner's changes while the service runs, request time limits, and DPVI requests.

In process (FastAPI's TestClient over :func:`dpinfer.service.app.create_app`): cheap enough for the
fast suite. The DPVI fits themselves (a calibration of several seconds) are in the slow test at the
end, over a real server.
"""

from __future__ import annotations

import threading
import time
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("argon2")

from fastapi.testclient import TestClient  # noqa: E402
from service_helpers import headers, ledger_state, make_site, tokens  # noqa: E402

from dpinfer.errors import PrivacyWarning  # noqa: E402

MEAN = {"dataset": "survey", "column": "bmi", "epsilon": 0.25}


def _app(site):
    from dpinfer.service.app import create_app
    from dpinfer.service.config import load_config
    from dpinfer.service.core import Service

    svc = Service(load_config(site.config))
    return svc, create_app(svc)


@pytest.fixture
def runtime(tmp_path):
    site = make_site(tmp_path, budget=5.0, accountant="rdp", allowances={"alice": 1.0})
    site.extra["tokens"] = tokens(
        site, {"owner": ("owner", "owner", 1.0), "alice": ("alice", "analyst", 1.0)}
    )
    svc, app = _app(site)
    with TestClient(app) as client:
        yield site, svc, client
    svc.close()


def _h(site, who):
    return headers(site.extra["tokens"][who][0])


def test_the_owner_adds_an_analyst_changes_allowances_and_rotates_tokens_at_run_time(runtime):
    site, svc, c = runtime
    owner, alice = _h(site, "owner"), _h(site, "alice")
    # only the owner sets allowances: an analyst is refused and nothing changes
    r = c.put("/v1/owner/analysts/alice/allowances/survey", json={"epsilon": 5.0}, headers=alice)
    assert r.status_code == 403 and svc.store.allowance("alice", "survey") == 1.0
    r = c.post("/v1/owner/analysts", json={"name": "erin", "allowances": {"survey": 1.0}}, headers=alice)
    assert r.status_code == 403 and "erin" not in svc.store.analysts()
    # an analyst's token needs a known analyst
    r = c.post("/v1/owner/tokens", json={"principal": "erin"}, headers=owner)
    assert r.status_code == 422 and r.json()["error"]["field"] == "principal"
    # add erin, give her a token: she releases at once
    r = c.post("/v1/owner/analysts", json={"name": "erin", "allowances": {"survey": 0.5}}, headers=owner)
    assert r.status_code == 200, r.text
    r = c.post("/v1/owner/analysts", json={"name": "erin"}, headers=owner)
    assert r.status_code == 422 and r.json()["error"]["field"] == "name"
    made = c.post("/v1/owner/tokens", json={"principal": "erin"}, headers=owner).json()
    erin = headers(made["token"])
    assert c.post("/v1/releases/clamped", json=MEAN, headers=erin).status_code == 200
    before = ledger_state(site)
    # bad allowances: 4xx naming the field, nothing changed
    for path, body, field in (
        ("/v1/owner/analysts/erin/allowances/survey", {"epsilon": 6.0}, "epsilon"),  # over the budget
        ("/v1/owner/analysts/erin/allowances/nope", {"epsilon": 0.1}, "epsilon"),
        ("/v1/owner/analysts/erin/allowances/survey", {"epsilon": -1}, "epsilon"),
    ):
        r = c.put(path, json=body, headers=owner)
        assert r.status_code == 422 and r.json()["error"]["field"] == field, r.text
    assert (
        c.put("/v1/owner/analysts/zed/allowances/survey", json={"epsilon": 1}, headers=owner).status_code
        == 404
    )
    assert svc.store.allowance("erin", "survey") == 0.5
    # lower erin's allowance below her next request: refused, nothing charged
    r = c.put("/v1/owner/analysts/erin/allowances/survey", json={"epsilon": 0.3}, headers=owner)
    assert r.json()["previous"] == 0.5
    r = c.post("/v1/releases/clamped", json=MEAN, headers=erin)
    assert r.status_code == 409 and r.json()["error"]["field"] == "epsilon"
    assert ledger_state(site) == before
    # rotate erin's token: the old one is refused at once, the new one works
    rot = c.post(f"/v1/owner/tokens/{made['id']}/rotate", json={}, headers=owner).json()
    assert rot["revoked"] == made["id"] and rot["principal"] == "erin" and rot["role"] == "analyst"
    assert c.get("/v1/me", headers=erin).status_code == 401
    me = c.get("/v1/me", headers=headers(rot["token"])).json()
    assert me["name"] == "erin" and me["allowances"]["survey"]["allowance"] == 0.3
    assert c.delete(f"/v1/owner/tokens/{rot['id']}", headers=owner).status_code == 200
    assert c.get("/v1/me", headers=headers(rot["token"])).status_code == 401
    # every change is in the audit log with who made it
    audit = c.get("/v1/owner/audit", headers=owner).json()["audit"]
    actions = {(a["actor"], a["action"]) for a in audit}
    for action in ("add analyst", "set allowance", "create token", "rotate token", "revoke token"):
        assert ("owner", action) in actions, action
    assert any("erin on survey: epsilon=0.3 (was 0.5)" in a["detail"] for a in audit)
    assert c.get("/v1/owner/analysts", headers=owner).json()["analysts"] == {
        "alice": {"survey": 1.0},
        "erin": {"survey": 0.3},
    }


def test_run_time_allowances_survive_a_restart_and_the_file_only_seeds(runtime, caplog):
    site, svc, c = runtime
    owner = _h(site, "owner")
    assert (
        c.put("/v1/owner/analysts/alice/allowances/survey", json={"epsilon": 2.0}, headers=owner).status_code
        == 200
    )
    svc.close()
    from dpinfer.service.config import load_config
    from dpinfer.service.core import Service

    with caplog.at_level("WARNING", logger="dpinfer.service"):
        again = Service(load_config(site.config))
    try:
        assert again.store.allowance("alice", "survey") == 2.0  # the owner's, not the file's 1.0
        assert "the state's is kept" in caplog.text
    finally:
        again.close()


def test_a_request_past_its_time_limit_before_the_charge_is_charged_nothing(tmp_path):
    site = make_site(tmp_path, budget=5.0, accountant="rdp", allowances={"alice": 1.0}, request_timeout=1e-6)
    tok = tokens(site, {"alice": ("alice", "analyst", 1.0)})["alice"][0]
    svc, app = _app(site)
    try:
        with TestClient(app) as c:
            r = c.post("/v1/releases/clamped", json=MEAN, headers=headers(tok))
            assert r.status_code == 503, r.text
            err = r.json()["error"]
            assert err["code"] == "timeout" and err["field"] == "request_timeout"
            assert "service.request_timeout" in err["message"] and "Nothing was charged" in err["message"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                dry = c.post("/v1/releases/clamped", json={**MEAN, "dry_run": True}, headers=headers(tok))
            assert dry.status_code == 503
        time.sleep(0.2)  # a worker still running ends before the charge
        assert ledger_state(site) == (0, 0.0)
        assert all(row["status"] == "aborted" for row in svc.store.requests())
        assert svc.store.spend("alice", "survey", "rdp", 1e-6) == 0.0
    finally:
        svc.close()


def test_a_request_past_its_time_limit_after_the_charge_is_stored_and_retrievable(tmp_path, monkeypatch):
    """A slow draw after the charge: 503 with the request id; the release is stored, never lost."""
    import dpinfer.service.core as core

    site = make_site(tmp_path, budget=5.0, accountant="rdp", allowances={"alice": 1.0}, request_timeout=1.0)
    tok = tokens(site, {"alice": ("alice", "analyst", 1.0)})["alice"][0]
    gate = threading.Event()
    real_plan = core.plan

    def slow_plan(*args, **kwargs):
        p = real_plan(*args, **kwargs)
        execute = p.execute

        def slow(records, ctx, **kw):
            out = execute(records, ctx, **kw)  # charged and drawn here
            gate.wait(20)  # ... and the answer is late
            return out

        p.execute = slow
        return p

    monkeypatch.setattr(core, "plan", slow_plan)
    svc, app = _app(site)
    try:
        with TestClient(app) as c:
            r = c.post("/v1/releases/clamped", json=MEAN, headers=headers(tok))
            assert r.status_code == 503, r.text
            err = r.json()["error"]
            assert err["code"] == "timeout_after_charge" and err["field"] == "request_timeout"
            rid = err["request_id"]
            gate.set()
            for _ in range(200):
                row = c.get(f"/v1/requests/{rid}", headers=headers(tok)).json()
                if row["status"] == "released":
                    break
                time.sleep(0.05)
            assert row["status"] == "released" and row["result"]["privacy"]["accounted"] is True
        assert ledger_state(site)[0] == 1
    finally:
        gate.set()
        svc.close()


def test_dpvi_requests_are_validated_before_any_charge(runtime):
    site, svc, c = runtime
    alice = _h(site, "alice")
    base = {"dataset": "survey", "target": "smoker", "features": ["age", "bmi"], "epsilon": 0.5}
    for body, field in (
        ({**base, "steps": 10**6}, "steps"),  # over the service's cap
        ({**base, "target": "bmi"}, "target"),  # not 0/1 for a logistic model
        ({**base, "model": "poisson"}, "target"),
        ({**base, "features": ["region"]}, "features[0]"),
        ({**base, "features": ["smoker"]}, "target"),
        ({**base, "model": "probit"}, "model"),
        ({**base, "sampling_rate": 0.001}, "sampling_rate"),
        ({**base, "delta": 0}, "delta"),
    ):
        r = c.post("/v1/releases/dpvi", json=body, headers=alice)
        assert r.status_code == 422 and r.json()["error"]["field"] == field, (body, r.text)
    assert ledger_state(site) == (0, 0.0) and svc.store.requests() == []


@pytest.mark.slow
def test_dpvi_dry_run_and_release_give_the_local_type(tmp_path):
    """A dry run (free) and a charged fit over real HTTP: DPVIResult, as DPVI(...).fit gives."""
    import os
    import subprocess
    import sys

    from service_helpers import Server

    import dpinfer
    from dpinfer.release.dpvi import DPVIResult

    site = make_site(tmp_path, budget=5.0, accountant="pld", allowances={"alice": 2.0})
    toks = tokens(site, {"alice": ("alice", "analyst", 1.0), "owner": ("owner", "owner", 1.0)})
    tok = toks["alice"][0]
    server = Server(site)

    def cli(token: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), DPINFER_TOKEN=token)
        cmd = [sys.executable, "-m", "dpinfer", "remote", "--url", server.url, *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)

    try:
        with dpinfer.connect(server.url, tok) as svc:
            args = {"target": "smoker", "features": ["age", "bmi"], "epsilon": 1.0, "steps": 50, "seed": 3}
            dry = svc.dpvi("survey", dry_run=True, **args)
            assert type(dry) is DPVIResult and svc.last_request["id"] is None
            assert ledger_state(site) == (0, 0.0)
            fit = svc.dpvi("survey", **args)
            rid = svc.last_request["id"]
            assert type(fit) is DPVIResult and fit.param_names == ("intercept", "age", "bmi")
            assert fit.privacy.accounted and fit.privacy.epsilon <= 1.0 + 1e-6
            assert fit.privacy.accountant == "pld" and fit.config["steps"] == 50
            assert ledger_state(site)[0] == 1
            again = svc.retrieve(rid)
            assert type(again) is DPVIResult and again.params.tolist() == fit.params.tolist()
            assert svc.me()["allowances"]["survey"]["spent"] == pytest.approx(fit.privacy.epsilon, rel=1e-6)
        out = cli(
            tok,
            "dpvi",
            "--dataset",
            "survey",
            "--target",
            "smoker",
            "--features",
            "age,bmi",
            "--epsilon",
            "1",
            "--steps",
            "50",
            "--dry-run",
            "--out",
            str(tmp_path / "fit.npz"),
        )
        assert out.returncode == 0, out.stderr
        assert "DRY RUN" in out.stdout and type(DPVIResult.load(tmp_path / "fit.npz")) is DPVIResult
        assert ledger_state(site)[0] == 1
        # the owner's commands at run time; an analyst's token is refused on them
        owner = toks["owner"][0]
        assert cli(tok, "add-analyst", "--name", "zoe", "--allowance", "survey=0.5").returncode != 0
        out = cli(owner, "add-analyst", "--name", "zoe", "--allowance", "survey=0.5")
        assert out.returncode == 0, out.stderr
        assert (
            cli(
                owner, "set-allowance", "--analyst", "zoe", "--dataset", "survey", "--epsilon", "0.7"
            ).returncode
            == 0
        )
        made = cli(owner, "token-create", "--holder", "zoe")
        assert made.returncode == 0 and '"token": "dpi_' in made.stdout
        listed = cli(owner, "analysts")
        assert '"zoe"' in listed.stdout and "0.7" in listed.stdout
    finally:
        server.stop()


@pytest.mark.parametrize("accountant", ["rdp", "pld", "pure"])
def test_the_cached_allowance_state_equals_the_full_composition_after_aborts(tmp_path, accountant):
    """The in-memory composed state of an analyst's spend follows reservations and aborts (a state
    that ignored an abort would keep counting the aborted event: the last check catches it)."""
    from dpinfer.privacy.event_conversion import event_to_dict
    from dpinfer.privacy.events import LaplaceEvent
    from dpinfer.service.store import COUNTED, Store, analyst_spend

    store = Store(tmp_path / "service.db")
    delta = 1e-6 if accountant != "pure" else 0.0
    events = [LaplaceEvent(eps) for eps in (0.1, 0.2, 0.3, 0.15)]

    def full() -> float:
        rows = [r for r in store.requests(analyst="a") if r["status"] in COUNTED]
        from dpinfer.privacy.event_conversion import event_from_dict

        return analyst_spend([event_from_dict(r["event"]) for r in rows], accountant, delta)

    for i, ev in enumerate(events):
        after = store.reserve(
            rid=f"r{i}",
            analyst="a",
            dataset="d",
            kind="clamped",
            params={},
            event=event_to_dict(ev),
            epsilon=0.1,
            allowance=10.0,
            accountant=accountant,
            delta=delta,
        )
        assert after == pytest.approx(full(), rel=1e-6)
    store.set_status("r1", "aborted")  # no longer counted
    assert store.spend("a", "d", accountant, delta) == pytest.approx(full(), rel=1e-6)
    after = store.reserve(
        rid="r9",
        analyst="a",
        dataset="d",
        kind="clamped",
        params={},
        event=event_to_dict(events[0]),
        epsilon=0.1,
        allowance=10.0,
        accountant=accountant,
        delta=delta,
    )
    assert after == pytest.approx(full(), rel=1e-6)
    if accountant == "pure":
        assert after == pytest.approx(0.1 + 0.3 + 0.15 + 0.1)
