"""``infer(method="auto")``: when the exact sampler it chose reports a stuck population, it tries
importance sampling and SMC-ABC, returns the first whose own diagnostics pass, and says so in a
MethodFallbackWarning (not only the reason); an explicit ``method="exact"`` is never replaced."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpinfer
from dpinfer.diagnostics import checks
from dpinfer.errors import MethodFallbackWarning, WeightDegeneracyWarning
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
    post = _infer()  # n_particles: importance sampling does not take it, so SMC-ABC is next
    assert seen == ["exact", "smc-abc"]
    assert post.method == "smc-abc"
    assert "exact (failed: final population stuck (2 distinct θ of 1000 particles))" in post.reason
    assert post.findings[0]["category"] == "MethodFallbackWarning"
    assert [t["method"] for t in post.details["tried"]] == ["exact", "smc-abc"]
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


def test_the_fallback_is_a_warning_and_prefers_the_method_whose_diagnostics_pass(calls):
    """Issue 39 item 6: importance sampling (which takes no n_particles) is tried first; its
    weights pass, so it is returned, and the warning names both methods tried."""
    seen, _ = calls
    model = GaussianMean(n=20, epsilon=1.0)
    with pytest.warns(MethodFallbackWarning, match=r"exact \(failed: final population stuck") as rec:
        post = dpinfer.infer(model, [0.3], seed=0, n_inner=10)
    assert seen == ["exact", "importance"] and post.method == "importance"
    msg = str(next(w.message for w in rec if issubclass(w.category, MethodFallbackWarning)))
    assert "importance (its diagnostics passed); importance is returned" in msg
    assert post.details["tried"][1] == {"method": "importance", "passed": True, "failed": ""}
    exact = model.exact_posterior([0.3], grid_size=301, bins=200)
    assert abs(post.mean()[0] - exact.mean) < 0.2 * exact.sd


def test_a_failing_fallback_is_reported_as_failing(calls, monkeypatch):
    """Known-broken variant: when importance sampling's weights fail, it is not called a pass; with
    n_inner (which SMC-ABC does not take) nothing else applies, and the warning says so."""
    seen, _ = calls
    real = entry.diagnose

    def failing(result, model, observed, seed=None):
        found = real(result, model, observed, seed)
        if hasattr(result, "log_weights"):  # importance sampling: pretend its k-hat failed
            found.append(checks.Finding(WeightDegeneracyWarning, "Pareto k = 0.95 > 0.7: heavy tail"))
        return found

    monkeypatch.setattr(entry, "diagnose", failing)
    with pytest.warns(MethodFallbackWarning, match="none passed its own diagnostics; importance, the last"):
        post = dpinfer.infer(GaussianMean(n=20, epsilon=1.0), [0.3], seed=0, n_inner=10)
    assert seen == ["exact", "importance"] and post.method == "importance"
    assert post.details["tried"][1] == {"method": "importance", "passed": False,
                                        "failed": "Pareto k = 0.95 > 0.7"}
