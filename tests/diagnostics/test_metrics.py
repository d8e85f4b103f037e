"""Posterior-accuracy metrics: C2ST, MMD, KS, NLOG, median predictive distance."""

import numpy as np
import pytest
from scipy.stats import norm

from dpinfer.diagnostics import c2st, ks_marginals, median_predictive_distance, mmd, neg_log_density
from dpinfer.errors import InvalidDataError


def _normal(n, d, shift, seed):
    return np.random.default_rng(seed).normal(size=(n, d)) + shift


@pytest.mark.slow  # issue 25: moved to `make test-all` for a <= 4 min fast suite
def test_c2st_identical_is_chance_and_shift_is_detected():
    # identical distributions: accuracy ~ 0.5; held-out sd sqrt(.25/800) = 0.018 -> 0.06 is > 3 sd
    same = c2st(_normal(400, 2, 0.0, 1), _normal(400, 2, 0.0, 2), seed=3)
    assert abs(same - 0.5) < 0.06
    # known-broken check: a 1-sd shift in one coordinate is separable with Bayes accuracy
    # Phi(0.5) = 0.69; the C2ST must see it (> 0.6)
    x = _normal(500, 2, 0.0, 4)
    y = _normal(500, 2, np.array([1.0, 0.0]), 5)
    shifted = c2st(x, y, seed=3)
    assert shifted > 0.6
    assert shifted < norm.cdf(0.5) + 0.06


def test_c2st_is_reproducible_and_validates_input():
    x, y = _normal(200, 1, 0.0, 1), _normal(200, 1, 0.3, 2)
    assert c2st(x, y, seed=9) == c2st(x, y, seed=9)
    with pytest.raises(InvalidDataError, match="same dimension"):
        c2st(_normal(50, 1, 0, 1), _normal(50, 2, 0, 1))
    with pytest.raises(InvalidDataError, match="NaN"):
        c2st(np.array([[np.nan], [1.0], [2.0]]), _normal(50, 1, 0, 1))


def test_mmd_zero_for_identical_and_positive_for_shift():
    a, b = _normal(400, 2, 0.0, 1), _normal(400, 2, 0.0, 2)
    same = mmd(a, b)
    shifted = mmd(a, _normal(400, 2, 1.0, 3))
    # unbiased estimate: |MMD^2| of identical distributions is O(1/n)
    assert abs(same) < 0.01
    assert shifted > 0.1


def test_ks_marginals_against_cdf_and_sample():
    x = _normal(2000, 2, 0.0, 1)
    stat, p = ks_marginals(x, [norm.cdf, norm.cdf])
    assert np.all(p > 0.001)
    stat2, p2 = ks_marginals(x, _normal(2000, 2, np.array([0.0, 0.3]), 2))
    assert p2[0] > 0.001 and p2[1] < 1e-6


def test_neg_log_density_kde_and_log_prob():
    draws = _normal(20000, 1, 0.0, 1)
    # -log N(0; 0, 1) = 0.919; Scott's KDE slightly oversmooths (sd * sqrt(1 + h^2))
    assert abs(neg_log_density(draws, [0.0]) - 0.5 * np.log(2 * np.pi)) < 0.03

    class Post:
        def log_prob(self, t):
            return norm.logpdf(t).sum(-1)

    assert neg_log_density(Post(), [1.0]) == pytest.approx(-norm.logpdf(1.0))


def test_median_predictive_distance_prefers_the_truth():
    from dpinfer.models import GaussianMean

    model = GaussianMean(n=50, epsilon=1.0)
    obs = [0.5]
    near = median_predictive_distance(model, np.full((400, 1), 0.5), obs, seed=1)
    far = median_predictive_distance(model, np.full((400, 1), -1.0), obs, seed=1)
    assert near < far
    assert near < 0.3  # noise sd of s_dp at the truth is about 0.2


def _is_particles(n, d, scale, seed):
    """Exact weighted particles of N(0, I): a N(0, scale² I) proposal with importance weights."""
    prop = np.random.default_rng(seed).normal(size=(n, d)) * scale
    logw = norm.logpdf(prop).sum(1) - norm.logpdf(prop, scale=scale).sum(1)
    return prop, np.exp(logw - logw.max())


@pytest.mark.slow  # three C2STs on 1600 points: 14 s
def test_weighted_c2st_scores_exact_particles_at_chance_where_resampling_does_not():
    """Weighted particles of ESS ~150 out of 800: the weighted C2ST is at chance; resampling them
    with replacement (repeated points) reads ~0.65 although the particles are exact; ignoring the
    weights (the known-broken variant) is caught."""
    x, w = _is_particles(800, 2, 2.5, 1)
    ess = w.sum() ** 2 / (w**2).sum()
    assert 100 < ess < 250
    y = _normal(800, 2, 0.0, 2)
    weighted = c2st(x, y, seed=3, x_weights=w)
    # held-out sd ≈ sqrt(.25 (1/1600 + 1/(2·ESS))) ≈ 0.03 for the weighted class: 0.08 is ~2.5 sd
    assert abs(weighted - 0.5) < 0.08
    resampled = x[np.random.default_rng(4).choice(800, 800, p=w / w.sum())]
    assert c2st(resampled, y, seed=3) > weighted + 0.05
    assert c2st(x, y, seed=3) > 0.7  # the weights ignored: a 2.5x too wide sample
    with pytest.raises(InvalidDataError, match="x_weights"):
        c2st(x, y, x_weights=w[:10])
    with pytest.raises(InvalidDataError, match="x_weights"):
        c2st(x, y, x_weights=-w)


def test_weighted_c2st_fast_check():
    """The fast half: exact weighted particles at chance, the weights ignored caught."""
    x, w = _is_particles(300, 1, 2.5, 5)
    y = _normal(300, 1, 0.0, 6)
    # held-out sd ≈ sqrt(.25 (1/600 + 1/(2·ESS))) ≈ 0.035 at ESS ~ 130: 0.12 is > 3 sd
    assert abs(c2st(x, y, seed=3, x_weights=w) - 0.5) < 0.12
    assert c2st(x, y, seed=3) > 0.65
