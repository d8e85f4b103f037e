"""The data owner's service over real HTTP: one server process for the module (fast suite).

Releases end to end through the client (the same types as the local calls), the dry run, bad
requests (4xx naming the field, nothing charged) and allowances. The authorisation matrix, the
canary search and the remote GLM are in ``test_service_security.py`` (slow).
"""

from __future__ import annotations

import math
from pathlib import Path

import httpx
import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("argon2")

from service_helpers import (  # noqa: E402
    BAD_BODIES,
    call,
    headers,
    ledger_state,
    make_site,
    start_site,
    tok,
    url,
)

import dpinfer  # noqa: E402
from dpinfer.errors import BudgetExceededError, InvalidDataError  # noqa: E402
from dpinfer.privacy import Ledger  # noqa: E402
from dpinfer.privacy.mechanisms.clamped import clamped_release  # noqa: E402
from dpinfer.privacy.report import PrivateRelease  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    s = start_site(tmp_path_factory.mktemp("svc"))
    yield s
    s.extra["server"].stop()


def test_datasets_show_the_public_schema_and_n_only(site):
    with dpinfer.connect(url(site), tok(site, "alice")) as svc:
        (ds,) = svc.datasets()
        assert ds["name"] == "survey" and ds["n"] == 400 and ds["neighbouring"] == "replace-one"
        assert svc.schema("survey")["columns"]["bmi"] == {"type": "float", "lower": 10.0, "upper": 60.0}
        assert svc.schema("survey")["columns"]["name"]["release"] is False
        assert "repr" not in repr(svc) and tok(site, "alice") not in repr(svc)
    text = httpx.get(f"{url(site)}/v1/datasets", headers=headers(tok(site, "alice"))).text
    assert "secret-records-dir" not in text and "survey.csv" not in text


def test_clamped_mean_end_to_end_is_a_private_release_charged_to_the_analyst(site):
    before = ledger_state(site)
    with dpinfer.connect(url(site), tok(site, "alice")) as svc:
        spent0 = svc.me()["allowances"]["survey"]["spent"]
        rel = svc.mean("survey", "bmi", epsilon=0.5, purpose="test")
        assert isinstance(rel, PrivateRelease) and rel.value.shape == (1,)
        # the same mechanism the library builds locally: same report apart from nothing
        local = clamped_release("mean", 10, 60, 0.5, n=400, data_range=(10, 60))
        assert rel.privacy.to_dict()["events"] == local.privacy_report().to_dict()["events"]
        assert rel.privacy.accounted and rel.privacy.details["noise_scale"] == local.inner.scale
        assert rel.details["release_file"]["model_args"] == {"clamp": [10.0, 60.0], "n": 400}
        again = svc.retrieve(rel.details["id"])
        assert isinstance(again, PrivateRelease) and np.array_equal(again.value, rel.value)
        me = svc.me()["allowances"]["survey"]
        assert me["spent"] > spent0 and math.isclose(me["remaining"], me["allowance"] - me["spent"])
        hist = svc.history()
        assert hist[-1]["id"] == rel.details["id"] and hist[-1]["status"] == "released"
    after = ledger_state(site)
    assert after[0] == before[0] + 1 and after[1] > before[1]
    last = Ledger(site.root / "budget.db").history("survey")[-1]
    assert rel.details["id"] in last["label"] and "alice" in last["label"]
    assert last["charged_by"] == "alice" and last["purpose"] == "test"  # who charged, recorded by the ledger


def test_a_dry_run_answers_for_free_on_the_dummy_data(site):
    before = ledger_state(site)
    with dpinfer.connect(url(site), tok(site, "bob")) as svc:
        spent0 = svc.me()["allowances"]["survey"]["spent"]
        rel = svc.mean("survey", "bmi", epsilon=3.9, dry_run=True)
        assert rel.details["dry_run"] is True and rel.details["id"] is None
        assert not rel.privacy.accounted
        hist = svc.histogram("survey", "region", epsilon=1.0, dry_run=True)
        assert hist.details["labels"] == ["north", "south", "east", "west"]
        assert svc.me()["allowances"]["survey"]["spent"] == spent0
        # a dry run is free even beyond the allowance
        svc.mean("survey", "age", epsilon=50.0, dry_run=True)
    assert ledger_state(site) == before


def test_bad_requests_are_4xx_naming_the_field_and_charge_nothing(site):
    before = ledger_state(site)
    n_requests = len(call(site, "GET", "/v1/requests", None, tok(site, "alice")).json()["requests"])
    for kind, body, field in BAD_BODIES[::4]:
        r = call(site, "POST", f"/v1/releases/{kind}", body, tok(site, "alice"))
        assert 400 <= r.status_code < 500, (kind, body, r.status_code, r.text)
        err = r.json()["error"]
        assert err["field"] == field, (kind, body, err)
    h = {**headers(tok(site, "alice")), "Content-Type": "application/json"}
    for raw, field in (
        (b"{not json", "body"),
        (b"[1, 2]", "body"),
        (b'{"dataset": "survey", "column": "bmi", "epsilon": NaN}', "body"),
    ):
        r = httpx.post(f"{url(site)}/v1/releases/clamped", content=raw, headers=h)
        assert r.status_code == 422 and r.json()["error"]["field"] in (field, "epsilon"), raw
    r = httpx.post(f"{url(site)}/v1/releases/clamped", content=b"{" + b" " * 70000 + b"}", headers=h)
    assert r.status_code == 413 and r.json()["error"]["field"] == "body"
    r = call(site, "POST", "/v1/releases/median", {"dataset": "survey"}, tok(site, "alice"))
    assert r.status_code == 404
    assert ledger_state(site) == before
    assert len(call(site, "GET", "/v1/requests", None, tok(site, "alice")).json()["requests"]) == n_requests


def test_a_release_over_the_allowance_is_refused_before_any_work(site):
    before = ledger_state(site)
    with dpinfer.connect(url(site), tok(site, "dave")) as svc:
        svc.mean("survey", "bmi", epsilon=0.2)
        mid = ledger_state(site)
        with pytest.raises(BudgetExceededError) as info:
            svc.mean("survey", "bmi", epsilon=0.2)
        assert info.value.code == "allowance_exceeded" and info.value.field == "epsilon"
        with pytest.raises(InvalidDataError) as info2:
            svc.mean("survey", "nope", epsilon=0.01)
        assert info2.value.field == "column"
        statuses = [q["status"] for q in svc.history()]
    assert mid[0] == before[0] + 1 and ledger_state(site) == mid
    assert statuses == ["released"]


def test_rate_limiter_and_token_rules_without_a_server():
    from dpinfer.service.auth import RateLimiter

    lim = RateLimiter(rate=1.0, burst=3)
    assert [lim.allow("t") for _ in range(4)] == [True, True, True, False]
    assert lim.allow("other")


def test_the_config_refuses_what_cannot_work(tmp_path):
    from dpinfer.service.config import load_config

    site = make_site(tmp_path / "a", allowances={"alice": 50.0})
    with pytest.raises(InvalidDataError, match="exceeds its budget"):
        load_config(site.config)
    text = site.config.read_text().replace("survey = 50.0", "other = 1.0")
    Path(site.config).write_text(text)
    with pytest.raises(InvalidDataError, match="unknown data set"):
        load_config(site.config)


def test_records_that_violate_the_schema_are_not_served(tmp_path, caplog):
    from dpinfer.service.config import load_config
    from dpinfer.service.core import Service

    site = make_site(tmp_path)
    text = site.data.read_text().splitlines()
    fields = text[5].split(",")
    fields[1] = "61.123456"  # bmi above its declared upper bound 60
    text[5] = ",".join(fields)
    site.data.write_text("\n".join(text) + "\n")
    with caplog.at_level("WARNING", logger="dpinfer.service"):
        svc = Service(load_config(site.config))
    try:
        assert svc.public_datasets() == []
        (ds,) = svc.overview()["datasets"]
        assert (
            not ds["served"]
            and ds["problem"] == "the records do not match the schema (column 'bmi', rule: bounds)."
        )
        assert "61.123456" not in caplog.text and "1 value" not in caplog.text and "bmi" in caplog.text
        assert str(site.data) not in caplog.text
    finally:
        svc.close()


def test_a_covariate_model_for_synthesis_is_the_local_type(site):
    from dpinfer.models.synthesis import MarginalHistogramModel

    before = ledger_state(site)
    with dpinfer.connect(url(site), tok(site, "bob")) as svc:
        model = svc.covariate_model("survey", features=["age", "smoker", "visits"], epsilon=0.5, bins=10)
        rid = svc.last_request["id"]
        assert type(model) is MarginalHistogramModel and model.columns == ("age", "smoker", "visits")
        assert model.bins == (10, 2, 51) and model.integer == (False, True, True)
        assert model.privacy.accounted and model.privacy.sensitivity == 6  # 2d under replace-one
        again = svc.retrieve(rid)
        assert type(again) is MarginalHistogramModel and again.to_dict() == model.to_dict()
        synthetic = model.sample(50, np.random.default_rng(0))
        assert synthetic.shape == (50, 3)
    assert ledger_state(site)[0] == before[0] + 1


def test_the_allowance_reservation_is_atomic_and_a_split_check_would_overspend(tmp_path):
    """16 threads reserve at once on the store itself; the known-broken variant (check, then
    insert in a second transaction) lets them all through."""
    import json as _json
    import threading

    from dpinfer.privacy.event_conversion import event_to_dict
    from dpinfer.privacy.mechanisms.counts import GeometricMechanism
    from dpinfer.service.store import COUNTED, AllowanceExceeded, Store, analyst_spend

    event = event_to_dict(GeometricMechanism(1, 1, 0.0625).event())

    class SplitStore(Store):  # the race the real reserve() excludes
        barrier = threading.Barrier(16)

        def reserve(self, **kw):
            rows = self.rows(
                "SELECT event FROM requests WHERE analyst = ? AND status IN (?, ?, ?, ?)",
                (kw["analyst"], *COUNTED),
            )
            from dpinfer.privacy.event_conversion import event_from_dict

            history = [event_from_dict(_json.loads(r[0])) for r in rows]
            self.barrier.wait(10)
            if analyst_spend([*history, event_from_dict(kw["event"])], "pure", 0.0) > kw["allowance"]:
                raise AllowanceExceeded("over", 0.0, kw["allowance"])
            self.tx(
                lambda c: c.execute(
                    "INSERT INTO requests (id, analyst, dataset, kind, params, event, epsilon, status,"
                    " created, updated) VALUES (?, ?, ?, ?, '{}', ?, ?, 'reserved', 0, 0)",
                    (
                        kw["rid"],
                        kw["analyst"],
                        kw["dataset"],
                        kw["kind"],
                        _json.dumps(kw["event"]),
                        kw["epsilon"],
                    ),
                )
            )

    def hammer(store: Store) -> int:
        ok = []
        start = threading.Barrier(16)

        def one(i: int) -> None:
            start.wait(10)
            try:
                store.reserve(
                    rid=f"r{i}",
                    analyst="a",
                    dataset="d",
                    kind="clamped",
                    params={},
                    event=event,
                    epsilon=0.0625,
                    allowance=0.5,
                    accountant="pure",
                    delta=0.0,
                )
                ok.append(i)
            except AllowanceExceeded:
                pass

        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        return len(ok)

    assert hammer(Store(tmp_path / "good.db")) == 8  # 8 x 0.0625 = the allowance, exactly
    assert hammer(SplitStore(tmp_path / "split.db")) == 16  # the split check overspends twofold


def _npz(**arrays) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_uploads_are_validated_without_pickle_and_abcdp_releases_accepted_theta(site):
    from dpinfer.release import ABCDPResult

    rng = np.random.default_rng(3)
    theta = rng.uniform(15, 45, (200, 1))
    sims = theta[:, None, :] + 4 * rng.standard_normal((200, 40, 1))
    h = {**headers(tok(site, "alice")), "Content-Type": "application/octet-stream"}
    bad = {
        "theta": _npz(theta=np.array([[np.nan]] * 200), sims=sims),
        "sims": _npz(theta=theta, sims=sims[:, :, 0]),
        "body": _npz(theta=np.array([object()] * 200, dtype=object).reshape(200, 1), sims=sims),
    }
    before = ledger_state(site)
    for field, raw in bad.items():
        r = httpx.post(f"{url(site)}/v1/uploads", content=raw, headers=h)
        assert r.status_code == 422 and r.json()["error"]["field"] == field, (field, r.text)
    r = httpx.post(f"{url(site)}/v1/uploads", content=b"not a zip", headers=h)
    assert r.status_code == 422 and r.json()["error"]["field"] == "body"
    r = httpx.post(f"{url(site)}/v1/uploads", content=_npz(theta=theta), headers=h)
    assert r.status_code == 422 and r.json()["error"]["field"] == "sims"
    with dpinfer.connect(url(site), tok(site, "alice")) as svc:
        uid = svc.upload(theta, sims)
        res = svc.abcdp("survey", upload=uid, columns=["bmi"], c=5, epsilon=0.5, bandwidth=4.0)
        # the sparse vector's noise is the server's secret randomness: how many of the c = 5 it
        # accepts is random (0 happened in CI at epsilon 0.5), but each is one of the uploaded θ
        assert type(res) is ABCDPResult and len(res.accepted) <= 5
        accepted = np.asarray(res.accepted, float).reshape(-1, 1)
        assert all(np.isclose(theta[:, 0], a[0]).any() for a in accepted)
        assert res.privacy.accounted and res.privacy.epsilon == 0.5
    with dpinfer.connect(url(site), tok(site, "bob")) as svc:  # alice's upload is not bob's
        with pytest.raises(InvalidDataError) as info:
            svc.abcdp("survey", upload=uid, columns=["bmi"], c=5, epsilon=0.5, bandwidth=4.0)
        assert info.value.field == "upload"
    assert ledger_state(site)[0] == before[0] + 1


def test_an_add_remove_data_set_keeps_n_private(tmp_path):
    """No public n: no mean, a count and a sum-and-count instead; the dry run uses rows.max."""
    import json as _json

    from dpinfer.errors import PrivacyWarning
    from dpinfer.service.auth import Principal
    from dpinfer.service.config import load_config
    from dpinfer.service.core import Service
    from dpinfer.service.data import FieldError
    from dpinfer.service.releases import ClampedRequest, CountRequest

    site = make_site(tmp_path, accountant="pure", delta=None)
    schema_path = site.root / "survey.schema.json"
    schema = _json.loads(schema_path.read_text())
    schema["neighbouring"], schema["rows"] = "add-remove", {"max": 1000}
    schema_path.write_text(_json.dumps(schema))
    svc = Service(load_config(site.config))
    try:
        (ds,) = svc.public_datasets()
        assert ds["n"] is None and ds["neighbouring"] == "add-remove"
        who = Principal("alice", "analyst", "t")
        with pytest.raises(FieldError) as info:
            svc.release(who, "clamped", ClampedRequest(dataset="survey", column="bmi", epsilon=0.5))
        assert info.value.field == "statistic"
        out = svc.release(who, "count", CountRequest(dataset="survey", epsilon=0.5))
        assert out["privacy"]["sensitivity"] == 1 and out["privacy"]["neighbouring"] == "add-remove"
        sc = svc.release(
            who,
            "clamped",
            ClampedRequest(dataset="survey", column="bmi", epsilon=0.5, statistic="sum_and_count"),
        )
        assert len(sc["value"]) == 2
        with pytest.warns(PrivacyWarning, match="WITHOUT a ledger"):  # a dry run is unaccounted, on purpose
            dry = svc.release(who, "count", CountRequest(dataset="survey", epsilon=0.5, dry_run=True))
        assert dry["dry_run"] and svc.datasets["survey"].view.dummy_n == 1000  # rows.max, not the private n
        assert len(Ledger(site.root / "budget.db").history("survey")) == 2
    finally:
        svc.close()
