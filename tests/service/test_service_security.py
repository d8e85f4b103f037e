"""The service's security properties over real HTTP (slow: one server for the module).

The authorisation matrix (every route × no token, a malformed, unknown, wrong-secret, expired or
revoked token, analysts on the owner's routes, the owner on the analysts', analyst A on B's
request, an analyst without allowance): every one refused, nothing charged. Every bad request
body of :data:`service_helpers.BAD_BODIES`. The canary search: unique marker values of the
confidential file, its path, the exact unreleased aggregates and every token secret, searched in
every answer and error body and in the server's log (0 hits). The remote GLM and dry-run GLM
give the local types and file format.
"""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("argon2")

from service_helpers import (  # noqa: E402
    BAD_BODIES,
    CANARIES,
    call,
    endpoints,
    headers,
    ledger_state,
    start_site,
    tok,
    url,
)

import dpinfer  # noqa: E402
from dpinfer.inference.glm import GLMPosterior, GLMRelease, GLMSamplerOptions  # noqa: E402
from dpinfer.results.format import load_result  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    s = start_site(tmp_path_factory.mktemp("svcsec"))
    yield s
    s.extra["server"].stop()


def test_every_bad_body_is_refused_naming_its_field(site):
    before = ledger_state(site)
    for kind, body, field in BAD_BODIES:
        r = call(site, "POST", f"/v1/releases/{kind}", body, tok(site, "alice"))
        assert 400 <= r.status_code < 500, (kind, body, r.status_code, r.text)
        assert r.json()["error"]["field"] == field, (kind, body, r.json())
    assert ledger_state(site) == before


def test_dry_run_glm_is_free_and_of_the_local_type(site):
    before = ledger_state(site)
    with dpinfer.connect(url(site), tok(site, "bob")) as svc:
        fit = svc.glm(
            "survey",
            target="smoker",
            features=["age", "bmi"],
            epsilon=1.0,
            dry_run=True,
            seed=0,
            sampler=GLMSamplerOptions(proposals=500),
            warn=False,
        )
    assert isinstance(fit, GLMPosterior) and fit.settings["service"]["dry_run"] is True
    assert ledger_state(site) == before


def test_remote_glm_gives_the_local_type_and_format(site, tmp_path):
    with dpinfer.connect(url(site), tok(site, "alice")) as svc:
        rel = svc.glm_release("survey", target="smoker", features=["age", "bmi"], epsilon=1.0)
        assert isinstance(rel, GLMRelease) and rel.n == 400 and rel.feature_names == ("age", "bmi")
        assert rel.privacy is not None and rel.privacy.accounted
        assert np.array_equal(rel.feature_bounds, [[0, 120], [10, 60]])
        fit = svc.glm(
            "survey",
            target="smoker",
            features=["age", "bmi"],
            epsilon=1.0,
            seed=0,
            sampler=GLMSamplerOptions(proposals=800),
            warn=False,
        )
    assert type(fit) is GLMPosterior and fit.param_names == ("intercept", "age", "bmi")
    path = fit.save(tmp_path / "fit.npz")
    back = load_result(path)
    assert type(back) is GLMPosterior and np.array_equal(back.draws, fit.draws)
    assert back.privacy.to_dict() == fit.privacy.to_dict()


def test_authorisation_matrix_refuses_and_charges_nothing(site):
    with dpinfer.connect(url(site), tok(site, "bob")) as svc:
        bob_rid = svc.mean("survey", "age", epsilon=0.1).details["id"]
    analyst, anyone, owner = endpoints(site, bob_rid)
    before = ledger_state(site)
    n_tokens = len(
        httpx.get(f"{url(site)}/v1/owner/tokens", headers=headers(tok(site, "owner"))).json()["tokens"]
    )
    analysts = httpx.get(f"{url(site)}/v1/owner/analysts", headers=headers(tok(site, "owner"))).json()
    real_id = site.extra["tokens"]["alice"][1]
    bad = {
        "no token": None,
        "not bearer": "Basic YWxpY2U6c2VjcmV0",
        "malformed": "Bearer not-a-token",
        "unknown id": "Bearer dpi_0123456789ab_" + "A" * 43,
        "wrong secret": f"Bearer dpi_{real_id}_" + "B" * 43,
        "expired": f"Bearer {tok(site, 'expired')}",
        "revoked": f"Bearer {tok(site, 'revoked')}",
    }
    for label, header in bad.items():
        for method, path, body in analyst + anyone + owner:
            r = (
                call(site, method, path, body, raw_header=header)
                if header
                else call(site, method, path, body)
            )
            assert r.status_code == 401, (label, method, path, r.status_code)
            err = r.json()["error"]
            assert err["field"] == "Authorization" and err["code"] == "unauthorized", (label, path)
    for method, path, body in owner:  # analysts on the owner's routes
        r = call(site, method, path, body, tok(site, "alice"))
        assert r.status_code == 403, (method, path)
    for method, path, body in analyst:  # the owner's token does not make releases or see histories
        r = call(site, method, path, body, tok(site, "owner"))
        assert r.status_code == 403, (method, path)
    r = call(site, "GET", f"/v1/requests/{bob_rid}", None, tok(site, "alice"))  # A on B's request
    assert r.status_code == 404 and bob_rid not in json.dumps(r.json()["error"]["field"])
    assert all(
        q["id"] != bob_rid
        for q in call(site, "GET", "/v1/requests", None, tok(site, "alice")).json()["requests"]
    )
    for _, path, body in analyst[2:]:  # an analyst without an allowance
        r = call(site, "POST", path, body, tok(site, "carol"))
        assert r.status_code in (403, 422), path
    assert ledger_state(site) == before
    tokens_after = httpx.get(f"{url(site)}/v1/owner/tokens", headers=headers(tok(site, "owner"))).json()[
        "tokens"
    ]
    assert len(tokens_after) == n_tokens and all(t["principal"] != "mallory" for t in tokens_after)
    assert httpx.get(f"{url(site)}/v1/owner/analysts", headers=headers(tok(site, "owner"))).json() == analysts


def test_no_canary_in_any_answer_error_or_log_line(site):
    """Every route, successes and refusals: no record value, data path or token in any answer."""
    texts = []
    analyst, anyone, owner = endpoints(site, "0" * 16)
    for who in ("alice", "owner", "carol"):
        for method, path, body in analyst + anyone + [e for e in owner if e[0] == "GET"]:
            texts.append(call(site, method, path, body, tok(site, who)).text)
    for kind, body, _ in BAD_BODIES:
        texts.append(call(site, "POST", f"/v1/releases/{kind}", body, tok(site, "alice")).text)
    with dpinfer.connect(url(site), tok(site, "alice")) as svc:
        rid = svc.mean("survey", "age", epsilon=0.05).details["id"]
        texts.append(call(site, "GET", f"/v1/requests/{rid}", None, tok(site, "alice")).text)
    texts.append(httpx.get(f"{url(site)}/owner/login").text)
    log = site.extra["server"].log()
    assert "GET /v1/datasets" in log  # the log is written
    truth = site.truth
    exact = [f"{truth['bmi'].mean():.10g}", f"{truth['age'].mean():.10g}", f"{truth['age'].sum():.10g}"]
    secrets_ = [t[0].split("_", 2)[2] for t in site.extra["tokens"].values()]
    needles = [*CANARIES, str(site.data), "secret-records-dir", *exact, *secrets_]
    for needle in needles:
        for text in [*texts, log]:
            assert needle not in text, needle
    assert len(texts) > 50
