"""The exact reference of the hierarchical problem of issue 39 item 6 (tests/hierarchical_problem.py):
its per-group likelihood sum against a Monte Carlo estimate from the model's own simulator, and a
known-broken variant (the noise ignored) that the check catches."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from hierarchical_problem import OBSERVED, SIGMA, M, log_likelihood, make_model


def _mc_log_likelihood(theta, n=40_000, seed=0):
    """log mean over simulated count vectors of the discrete Gaussian kernel, per group; the
    groups are independent given θ, so the product of per-group means is unbiased."""
    model = make_model()
    s = model.simulate_confidential(np.repeat(np.asarray(theta, float)[None], n, axis=0), seed)
    z = np.asarray(OBSERVED)
    kern = -0.5 * ((z - s) / SIGMA) ** 2  # (n, G)
    per_group = logsumexp(kern, axis=0) - np.log(n)
    w = np.exp(kern - kern.max(axis=0))
    se = w.std(axis=0) / np.sqrt(n) / w.mean(axis=0)  # delta method: sd of the log of each mean
    return float(per_group.sum()), float(np.sqrt(np.sum(se**2)))


def test_grid_likelihood_matches_the_simulator():
    for theta in ([0.25, 9.0], [0.4, 60.0]):
        exact = float(log_likelihood(np.array(theta[0]), np.array(theta[1]), OBSERVED))
        mc, se = _mc_log_likelihood(theta)
        assert abs(exact - mc) < 4 * se + 1e-3, (theta, exact, mc, se)
    # known-broken variant: the release read as the counts themselves (noise ignored) is far off
    y = np.clip(np.round(OBSERVED), 0, M)
    broken = float(log_likelihood(np.array(0.25), np.array(9.0), y, sigma=1e-3))
    mc, se = _mc_log_likelihood([0.25, 9.0])
    assert abs(broken - mc) > 20 * se
