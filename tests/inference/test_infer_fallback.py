"""``infer(method="auto")``: when the exact sampler it chose reports a stuck population, it runs
SMC-ABC instead and says so in the reason; an explicit ``method="exact"`` is never replaced."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpinfer
from dpinfer.inference import entry
from dpinfer.models.shipped.gaussian_mean import GaussianMean

STUCK = ("tempered exact SMC: the final population is stuck (2 distinct θ of 1000 particles; each "
         "moved 0.00 times in the last stage, MH acceptance 0.000): ...")  # fmt: skip


@pytest.fixture
def calls(monkeypatch):
    """Record the methods _run is asked for; 'exact' returns a stuck result when asked to."""
    seen: list[str] = []
    real = entry._run

    def fake(method, model, obs, seed, backend, options):
        seen.append(method)
        res = real(method, model, obs, seed, backend, options)
        if method == "exact" and calls_stuck[0]:
            res.settings["degenerate"] = STUCK
        return res

    calls_stuck = [True]
    monkeypatch.setattr(entry, "_run", fake)
    return seen, calls_stuck


def _infer(method="auto", **kw):
    model = GaussianMean(n=20, epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpinfer.infer(model, [0.3], method=method, seed=0, n_particles=200, **kw)


def test_auto_falls_back_to_smc_abc_when_the_exact_population_is_stuck(calls):
    seen, stuck = calls
    post = _infer()
    assert seen == ["exact", "smc-abc"]
    assert post.method == "smc-abc"
    assert "stuck (2 distinct θ of 1000 particles), so SMC-ABC ran instead" in post.reason
    assert np.isfinite(post.mean()).all()
    # the known-broken variant's signature: without the stuck flag nothing is replaced
    seen.clear()
    stuck[0] = False
    assert _infer().method == "exact" and seen == ["exact"]


def test_an_explicit_exact_request_is_never_replaced(calls):
    seen, _ = calls
    post = _infer(method="exact")
    assert seen == ["exact"] and post.method == "exact"
    assert any("stuck" in f["message"] for f in post.findings)  # it is reported instead
