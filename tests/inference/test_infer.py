"""dpinfer.infer: the method it picks and why, one posterior interface (issue 12 item 6), and the
diagnostics it attaches (item 8)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpinfer
from dpinfer.errors import InvalidDataError, ObservedOutsideSimulationsWarning
from dpinfer.inference.entry import choose_method
from dpinfer.inference.posterior import InferenceResult
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.results.format import load_result
from user_problems import PoissonClampedSum

OBS = [110.0]


@pytest.fixture(scope="module")
def poisson():
    m = PoissonClampedSum()
    return m, m.exact_posterior(OBS)


@pytest.fixture(scope="module")
def auto_post(poisson):
    model, _ = poisson
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a healthy problem raises no diagnostic
        return dpinfer.infer(model, OBS, seed=1)


def test_auto_picks_exact_for_a_cheap_model_with_a_density(poisson, auto_post):
    _, exact = poisson
    post = auto_post
    assert post.method == "exact" and "density" in post.reason and post.findings == []
    assert abs(post.mean()[0] - exact.mean) < 0.15 * exact.sd
    assert abs(post.sd()[0] / exact.sd - 1) < 0.10
    lo, hi = post.interval(0.9)[0]
    elo, ehi = exact.interval(0.9)
    assert abs(lo - elo) < 0.2 * exact.sd and abs(hi - ehi) < 0.2 * exact.sd


def test_choice_follows_density_and_cost():
    m = PoissonClampedSum()
    assert choose_method(m, 1e-6, 120)[0] == "exact"
    assert choose_method(m, 2e-4, 120)[0] == "smc-abc"  # exact would need ~200 s, SMC-ABC ~80 s
    method, reason = choose_method(m, 1e-2, 120)
    assert method == "sppe" and "budget" in reason
    nd = PoissonClampedSum()
    nd.mechanism.has_density = False
    method, reason = choose_method(nd, 1e-6, 120)
    assert method == "smc-abc" and "no density" in reason
    with pytest.raises(InvalidDataError, match="needs a mechanism with a density"):
        dpinfer.infer(nd, OBS, method="exact")
    with pytest.raises(InvalidDataError, match="unknown method"):
        dpinfer.infer(m, OBS, method="mcmc")


def test_budget_prices_training_by_a_fixed_cost_model():
    """Issue 26: infer(method="sppe") ran > 10 min with a budget that priced simulations only. The
    plan adds training at a constant per training simulation (no timing: the same choice
    everywhere) and is recorded; over the budget, the cheapest method is named as such."""
    from dpinfer.inference.entry import TRAINING_SECONDS_PER_SIMULATION, _with_progress, expected_seconds

    per = TRAINING_SECONDS_PER_SIMULATION
    assert expected_seconds("sppe", 0.0) == pytest.approx(5000 * per["sppe"])  # rounds="auto": budget
    assert expected_seconds("sppe", 0.0, {"simulations": 3000}) == pytest.approx(3000 * per["sppe"])
    assert expected_seconds("sple", 1e-3, {"rounds": 3, "simulations_per_round": 500}) == pytest.approx(
        1500 * (1e-3 + per["sple"]))
    assert expected_seconds("smc-abc", 1e-3) == pytest.approx(400.0)
    m = PoissonClampedSum()
    method, reason = choose_method(m, 1.0, 120)  # SPPE: 5000 s of simulations + 100 s of training
    assert method == "sppe" and "training" in reason and "over the budget" in reason
    # known-broken variant: the old plan (simulations only) would have called SPPE 100 s cheaper
    assert expected_seconds("sppe", 1.0) > 5000 * 1.0
    # progress reaches the chosen method in the form it takes
    assert _with_progress("smc-abc", {}, True)["run"].progress is True
    assert "run" not in _with_progress("exact", {"n_particles": 10}, True)


def test_one_interface_save_load_arviz_plot(auto_post, tmp_path):
    post = auto_post
    assert post.param_names == ("log_rate",) and post.epsilon == pytest.approx(1.0) and post.delta == 0.0
    assert post.sample(50, 3).shape == (50, 1) and np.array_equal(post.sample(50, 3), post.sample(50, 3))
    assert post.weights is not None and post.weights.sum() == pytest.approx(1.0)
    back = load_result(post.save(tmp_path / "post"))
    assert isinstance(back, InferenceResult) and back.method == "exact" and back.reason == post.reason
    np.testing.assert_array_equal(back.mean(), post.mean())
    np.testing.assert_array_equal(InferenceResult.load(tmp_path / "post.npz").sd(), post.sd())
    arviz = pytest.importorskip("arviz")
    idata = post.to_arviz(n_draws=100)
    assert isinstance(idata, arviz.InferenceData) and idata.posterior["log_rate"].shape == (4, 25)
    attrs = idata.posterior.attrs  # the privacy report belongs to the posterior group
    assert attrs["epsilon"] == pytest.approx(1.0) and attrs["method"] == "exact" and "privacy_report" in attrs
    assert attrs["delta"] == 0.0 and attrs["weights_ess"] == pytest.approx(post.result.ess)
    assert idata.constant_data["weights"].shape == post.weights.shape
    post.plot(tmp_path / "pair.png")
    assert (tmp_path / "pair.png").stat().st_size > 1000


def test_smc_abc_through_infer_has_the_same_interface(poisson):
    model, exact = poisson
    post = dpinfer.infer(model, OBS, method="smc-abc", seed=2, n_particles=500)
    assert post.method == "smc-abc" and post.reason == "requested by the caller"
    assert post.interval().shape == (1, 2) and post.sd().shape == (1,)
    assert abs(post.mean()[0] - exact.mean) < 0.5 * exact.sd


def test_observed_outside_the_simulations_is_flagged():
    model = GaussianMean(n=100, clamp=(-1.5, 1.5), epsilon=2.0)  # the release lies in ~[-1.6, 1.6]
    with pytest.warns(ObservedOutsideSimulationsWarning, match="outside the range"):
        post = dpinfer.infer(model, [1.8], seed=0, n_particles=200, n_inner=10)
    assert any(f["category"] == "PriorDataConflictWarning" for f in post.findings)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["sppe", "sple"])
def test_neural_methods_through_infer(poisson, method):
    """Issue 12 target: SPPE with 2 rounds x 1000 simulations within 15 % on the sd (SPLE too)."""
    model, exact = poisson
    post = dpinfer.infer(model, OBS, method=method, seed=0, warn=False)
    assert post.method == method
    assert abs(post.mean()[0] - exact.mean) < 0.3 * exact.sd
    assert abs(post.sd()[0] / exact.sd - 1) < 0.15


def test_options_restrict_the_automatic_choice_so_load_cannot_break_a_call(monkeypatch):
    """``infer(model, obs, n_particles=200)`` once raised a raw TypeError when a loaded machine
    measured a slow simulation and "auto" moved to SPPE. Only methods that accept the options are
    candidates now, at every measured cost; options no method takes are one clear error."""
    import dpinfer.inference.entry as infer_mod

    m = PoissonClampedSum()
    for per_sim in (1e-7, 2e-4, 1e-2, 10.0):  # from an idle machine to a very loaded one
        method, reason = choose_method(m, per_sim, 120, {"n_particles": 200})
        assert method in ("exact", "smc-abc") and "n_particles" in reason
    assert choose_method(m, 10.0, 120, {"rounds": 1})[0] == "sppe"
    # known-broken variant: ignoring the options lets the cost pick SPPE, which refuses n_particles
    assert choose_method(m, 10.0, 120)[0] == "sppe"
    monkeypatch.setattr(infer_mod, "simulation_seconds", lambda *a, **k: 10.0)  # simulated load
    with pytest.raises(InvalidDataError, match=r"n_particlez.*n_particles|accept"):
        dpinfer.infer(m, OBS, n_particlez=200)
    with pytest.raises(InvalidDataError, match="'sppe' does not accept.*n_particles.*exact, smc-abc"):
        dpinfer.infer(m, OBS, method="sppe", n_particles=200)
