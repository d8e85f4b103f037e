"""ArviZ as the diagnostics layer (issue 39 item 8): R-hat, ESS and the PSIS k̂ of
dpinfer.diagnostics.sampling, and what to_arviz() carries (weights, log densities)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpinfer.diagnostics import checks, sampling
from dpinfer.errors import ConvergenceWarning, InvalidDataError
from dpinfer.inference.exact.importance import mechanism_importance_sampling
from dpinfer.inference.glm import split_rhat as glm_split_rhat
from dpinfer.inference.neural.mcmc import split_rhat as mcmc_split_rhat
from dpinfer.models.shipped.gaussian_mean import GaussianMean


def _classic_split_rhat(chains):
    """The split R-hat dpinfer had before (BDA3 §11.4; chains (C, N)): the known-broken variant."""
    c, n = chains.shape
    h = n // 2
    parts = np.concatenate([chains[:, :h], chains[:, h:2 * h]])
    w = parts.var(1, ddof=1).mean()
    b = h * parts.mean(1).var(ddof=1)
    return math.sqrt(((h - 1) / h * w + b / h) / w)


def test_rank_normalised_rhat_flags_a_chain_three_times_wider():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 1000))
    x[0] *= 3.0  # same mean, three times the spread: the chains have not mixed
    assert sampling.rhat(x)[0] > 1.01
    assert _classic_split_rhat(x) < 1.01  # what the hand-written version said
    ok = rng.standard_normal((4, 1000, 2))
    assert np.all(sampling.rhat(ok) < 1.01)
    # the library's two former copies now call the shared one: same numbers, their own layouts
    np.testing.assert_allclose(glm_split_rhat(x[:, :, None]), sampling.rhat(x))
    np.testing.assert_allclose(mcmc_split_rhat(np.swapaxes(x[:, :, None], 0, 1)), sampling.rhat(x))
    found = checks.check_rhat(sampling.rhat(x), ["theta"])
    assert found[0].category is ConvergenceWarning and "rank-normalised" in found[0].message
    with pytest.raises(InvalidDataError):
        sampling.rhat(np.zeros((4, 3)))


def test_ess_bulk_and_tail_of_independent_and_autocorrelated_chains():
    rng = np.random.default_rng(1)
    iid = rng.standard_normal((4, 1000))
    assert 3000 < sampling.ess_bulk(iid)[0] < 5000 and 3000 < sampling.ess_tail(iid)[0] < 5000
    rho, x = 0.9, np.empty((4, 1000))
    e = rng.standard_normal((4, 1000))
    x[:, 0] = e[:, 0] / math.sqrt(1 - rho**2)
    for t in range(1, 1000):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    assert 120 < sampling.ess_bulk(x)[0] < 320  # true 4000·(1 - ρ)/(1 + ρ) = 210.5


def test_psis_khat_recovers_the_tail_shape():
    rng = np.random.default_rng(2)
    for k in (0.3, 0.8):
        lw = np.log(stats.genpareto.rvs(k, size=20_000, random_state=rng) + 1.0)
        assert abs(sampling.pareto_khat(lw) - k) < 0.1
    assert math.isnan(sampling.pareto_khat(np.zeros(10)))  # a tail of fewer than 5 weights
    assert sampling.pareto_khat(np.zeros(100)) == 0.0
    smoothed, k = sampling.psis(np.r_[np.log(rng.uniform(size=500)), -np.inf])
    assert smoothed[-1] == -np.inf and abs(np.exp(smoothed[:-1]).sum() - 1) < 1e-9 and k < 0.7


def test_to_arviz_of_importance_sampling_carries_weights_and_log_densities():
    model = GaussianMean(n=30, epsilon=1.0)
    res = mechanism_importance_sampling(model, [0.3], n_theta=400, n_inner=5, pilot_theta=200, seed=0)
    idata = res.to_arviz(n_draws=400, seed=3)
    cd = idata.constant_data
    np.testing.assert_allclose(cd["log_weights"].values, res.log_weights)
    np.testing.assert_allclose(cd["log_likelihood"].values, res.log_likelihood)
    np.testing.assert_allclose(cd["weights"].values.sum(), 1.0)
    idx = idata.sample_stats["particle"].values.reshape(-1)
    draws = idata.posterior["theta"].values.reshape(-1)
    np.testing.assert_array_equal(draws, res.particles[idx, 0])
    np.testing.assert_array_equal(draws, res.sample(400, 3)[:, 0])  # the same draws as sample()
    np.testing.assert_allclose(idata.log_likelihood["s_dp"].values.reshape(-1), res.log_likelihood[idx])
    attrs = idata.posterior.attrs
    assert attrs["pareto_khat"] == pytest.approx(res.khat) and attrs["weights_ess"] == pytest.approx(res.ess)
