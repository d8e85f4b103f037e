"""Mechanism-density importance sampling (dpinfer.inference.exact.importance) against closed forms."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError
from dpinfer.inference import ImportanceResult, ProposalOptions, mechanism_importance_sampling
from dpinfer.inference.exact import importance as mis
from dpinfer.inference.exact.importance_result import pareto_khat
from dpinfer.models import SIR, GaussianMean

OBS = [0.6]


@pytest.fixture(scope="module")
def gm() -> GaussianMean:
    return GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)


@pytest.fixture(scope="module")
def exact(gm):
    # 200 noise bins: its CDF is within 1.1e-5 (mean 7e-6) of the default 1000 bins' (measured), far
    # below the KS limits (~0.02) it is compared with, at a quarter of the quadrature's time
    return gm.exact_posterior(OBS, bins=200)


def _ks(res, exact) -> float:
    """KS distance between the weighted empirical CDF of the particles and the exact CDF."""
    x = res.particles[:, 0]
    order = np.argsort(x)
    cw = np.cumsum(res.weights[order])
    f = exact.cdf(x[order])
    return float(max(np.max(np.abs(cw - f)), np.max(np.abs(cw - res.weights[order] - f))))


def _ks_limit(res) -> float:
    """KS critical value at level 1e-3 for a weighted sample of Kish size ESS."""
    return 1.95 / math.sqrt(res.ess)


@pytest.mark.parametrize("n_inner", [1, 10])
def test_matches_exact_private_posterior(gm, exact, n_inner):
    res = mechanism_importance_sampling(gm, OBS, n_theta=20_000, n_inner=n_inner, seed=3)
    assert _ks(res, exact) < _ks_limit(res)
    assert abs(res.mean()[0] - exact.mean) < 4 * exact.sd / math.sqrt(res.ess)
    assert res.khat < 0.7


def test_jensen_biased_likelihood_is_caught(gm, exact, monkeypatch):
    """Known-broken variant: averaging log densities (not densities) over the inner simulations."""
    monkeypatch.setattr(mis, "log_mean_exp", lambda a, axis=-1: np.mean(a, axis=axis))
    res = mechanism_importance_sampling(gm, OBS, n_theta=20_000, n_inner=10, seed=3)
    assert _ks(res, exact) > _ks_limit(res)


@pytest.mark.slow  # ~13 s
def test_log_evidence_matches_quadrature(gm):
    grid = np.linspace(-6.0, 6.0, 2401)
    like = gm.private_likelihood(grid, OBS)
    z = np.trapezoid(like * stats.norm.pdf(grid), grid)
    res = mechanism_importance_sampling(gm, OBS, n_theta=20_000, n_inner=5, seed=4)
    w = np.exp(res.log_weights - res.log_weights.max())
    rel_sd = w.std() / (w.mean() * math.sqrt(w.size))
    assert abs(res.log_evidence - math.log(z)) < 4 * rel_sd + 1e-3


def test_prior_proposal_and_explicit_proposal_agree(gm, exact):
    res = mechanism_importance_sampling(gm, OBS, n_theta=20_000, n_inner=5, proposal="prior", seed=5)
    assert _ks(res, exact) < _ks_limit(res)
    prop = mis.DefensiveProposal(np.array([0.0]), np.array([[4.0]]), 3.0, 0.2)
    res2 = mechanism_importance_sampling(gm, OBS, n_theta=20_000, n_inner=5, proposal=prop, seed=5)
    assert _ks(res2, exact) < _ks_limit(res2)


def test_same_seed_same_result_on_every_backend(gm):
    kw = dict(n_theta=400, n_inner=5, pilot_theta=200, pilot_inner=5, seed=9, batch_size=100)
    a = mechanism_importance_sampling(gm, OBS, **kw)
    b = mechanism_importance_sampling(gm, OBS, **kw)
    c = mechanism_importance_sampling(gm, OBS, backend="processes", n_workers=2, **kw)
    np.testing.assert_array_equal(a.particles, b.particles)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    np.testing.assert_array_equal(a.log_weights, c.log_weights)
    d = mechanism_importance_sampling(gm, OBS, **{**kw, "seed": 10})
    assert not np.array_equal(a.particles, d.particles)


def test_sir_runs_and_concentrates_near_truth():
    model = SIR(population=2000, epsilon=10.0)
    conf = model.simulate_confidential(np.array([[-0.5, -3.0]]), np.random.default_rng(1))[0]
    obs = model.mechanism.G(conf, np.random.default_rng(2).random(model.noise_dim))
    res = mechanism_importance_sampling(
        model, obs, n_theta=1500, n_inner=20, pilot_theta=2000, pilot_inner=5, seed=1
    )
    lo, hi = res.interval(0.99).T
    assert np.all(lo < [-0.5, -3.0]) and np.all([-0.5, -3.0] < hi)
    assert res.ess > 100 and np.all(res.sd() < model.prior.sd / 3)


def test_save_load_round_trip(gm, tmp_path):
    res = mechanism_importance_sampling(gm, OBS, n_theta=300, n_inner=3, pilot_theta=100, seed=2)
    back = type(res).load(res.save(tmp_path / "ref"))
    np.testing.assert_array_equal(back.particles, res.particles)
    np.testing.assert_array_equal(back.log_weights, res.log_weights)
    assert back.n_simulations == res.n_simulations and back.settings == res.settings
    assert "ESS" in res.summary()


def test_pareto_khat_recovers_tail_index():
    rng = np.random.default_rng(0)
    heavy = stats.genpareto.rvs(0.8, size=100_000, random_state=rng)
    light = rng.exponential(size=100_000)
    assert abs(pareto_khat(np.log(heavy)) - 0.8) < 0.15
    assert pareto_khat(np.log(light)) < 0.2
    assert math.isnan(pareto_khat(np.zeros(10)))


def test_heavy_tailed_weights_warn(gm):
    # a proposal far too narrow and off-centre, with no defensive component
    prop = mis.DefensiveProposal(np.array([1.5]), np.array([[0.003]]), 30.0, 0.0)
    with pytest.warns(UserWarning, match="Pareto k"):
        mechanism_importance_sampling(gm, OBS, n_theta=4000, n_inner=5, proposal=prop, seed=1)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"n_inner": 0}, "n_inner"),
        ({"n_theta": 1}, "n_theta"),
        ({"proposal_options": ProposalOptions(defensive=1.0)}, "defensive"),
        ({"proposal_options": ProposalOptions(inflation=-1.0)}, "inflation"),
        ({"proposal": "uniform"}, "proposal"),
        ({"proposal_options": ProposalOptions(adapt=-1)}, "adapt"),
    ],
)
def test_bad_arguments(gm, kw, match):
    with pytest.raises(InvalidDataError, match=match):
        mechanism_importance_sampling(gm, OBS, **kw)


def test_bad_observed_and_densityless_mechanism(gm):
    with pytest.raises(InvalidDataError):
        mechanism_importance_sampling(gm, [0.1, 0.2])
    with pytest.raises(InvalidDataError):
        mechanism_importance_sampling(gm, [float("nan")])
    m = copy.deepcopy(gm)
    m.mechanism.has_density = False
    with pytest.raises(InvalidDataError, match="density"):
        mechanism_importance_sampling(m, OBS)


def test_to_arviz(gm):
    res = mechanism_importance_sampling(gm, OBS, n_theta=300, n_inner=3, pilot_theta=100, seed=2)
    idata = res.to_arviz(n_draws=200)
    assert idata.posterior["theta"].shape == (4, 50)  # chains of independent resamples (issue 26)


def test_exact_posterior_cli(tmp_path, capsys):
    import json

    from dpinfer.cli import main

    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"observed": OBS, "epsilon": 0.5}))
    out = tmp_path / "ref.npz"
    argv = ["exact-posterior", "--model", "gaussian-mean", "--observed", str(obs), "--theta", "2000"]
    argv += ["--inner", "5", "--pilot-theta", "500", "--pilot-inner", "5", "--json", "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ess"] > 500 and summary["privacy_of_release"]["epsilon"] == pytest.approx(0.5)
    assert ImportanceResult.load(out).particles.shape == (2000, 1)
    # bad input: a non-finite observed release costs nothing and says what is wrong
    obs.write_text(json.dumps({"observed": [float("inf")], "epsilon": 0.5}))
    assert main(argv[:-2]) != 0
    assert "nan or inf" in capsys.readouterr().err.lower()


# -- issue 26: no raw numpy/scipy exception from the proposal fit ------------------------------


def _gamma_five():
    """The issue-26 user model: 5 Gamma-prior rates, a published-σ Gaussian release so narrow that
    one pilot draw in 300 carries all the weight (the old 1e-12·trace jitter gave LinAlgError)."""
    from dpinfer.models import PrivateDataModel
    from dpinfer.models.prior_families import GammaPrior
    from dpinfer.privacy.mechanisms.gaussian import GaussianMechanism

    def sim(theta, rng):
        return rng.poisson(theta * 3000.0) / 3000.0

    mech = GaussianMechanism.known(sigma=0.002, stat_dim=5)
    return PrivateDataModel(prior=GammaPrior(np.full(5, 2.0), np.ones(5)), simulator=sim, mechanism=mech)


def test_collapsed_pilot_falls_back_with_a_warning_not_linalgerror():
    from dpinfer.errors import WeightDegeneracyWarning

    model, obs = _gamma_five(), [1.1, 2.3, 0.7, 1.9, 3.0]
    expected = "collapsed onto about 1.0 of 300 draws.*tempered_smc"
    with pytest.warns(WeightDegeneracyWarning, match=expected), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Pareto k")
        res = mechanism_importance_sampling(
            model, obs, n_theta=400, n_inner=2, pilot_theta=300, pilot_inner=2,
            proposal_options=ProposalOptions(adapt=0), seed=1
        )
    assert np.all(np.isfinite(res.mean())) and res.diagnostics["proposal_fallback"]


def test_old_jitter_fails_where_the_floor_does_not():
    """Known-broken variant: the old jitter 1e-12·trace on a rank-1 cloud is not positive definite
    for scipy; the floored covariance is, and the fitted proposal samples and evaluates."""
    from scipy.linalg import LinAlgError

    rng = np.random.default_rng(0)
    z = rng.standard_normal(50)
    theta = np.column_stack([1 + z, 2 + 2 * z, 3 - z, 1 + 0.5 * z, 2 + z])  # rank-1 cloud in 5-d
    w = np.full(50, 1 / 50)
    cov = mis.weighted_cov(theta, w)
    with pytest.raises(LinAlgError):
        stats.multivariate_t(loc=theta.mean(0), shape=cov + 1e-12 * np.trace(cov) * np.eye(5), df=5)
    prop, reason = mis.fit_defensive_proposal(theta, w, np.full(5, 2.0), 50, 1.5, 5.0, 0.1)
    assert reason is None
    assert np.linalg.eigvalsh(prop.scale).min() > 0
    from dpinfer.models.prior_families import GammaPrior

    prior = GammaPrior(np.full(5, 2.0), np.ones(5))
    draws = prop.sample(100, prior, rng)
    assert np.all(np.isfinite(prop.log_prob(draws, prior)))
    assert mis.floor_covariance(np.full((2, 2), np.nan), np.ones(2)) is None


@pytest.mark.parametrize("old", ["adapt", "inflation", "df", "defensive"])
def test_moved_proposal_keywords_are_refused_naming_the_new_spelling(old):
    gm = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    with pytest.raises(TypeError, match=rf"proposal_options=ProposalOptions\({old}=2"):
        mechanism_importance_sampling(gm, [0.6], n_theta=10, **{old: 2})
