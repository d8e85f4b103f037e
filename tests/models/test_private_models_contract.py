"""Every private-data model honours the contract later issues build on (shapes, G broadcasting,
noise dimension, log density, seeded simulation)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import qmc

from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models import SIR, GaussianMean, LinearRegression, NaiveBayes
from dpinfer.randomness import open_uniforms

MODELS = [
    GaussianMean(n=20),
    LinearRegression(epsilon=1.0),
    NaiveBayes(epsilon=1.0),
    SIR(population=5000, epsilon=10.0),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_contract(model):
    rng = np.random.default_rng(0)
    theta = model.prior.sample(6, rng)
    assert theta.shape == (6, model.theta_dim)
    assert np.all(np.isfinite(model.prior.log_prob(theta)))
    s = model.simulate_confidential(theta, 1)
    assert s.shape == (6, model.stat_dim)
    assert np.array_equal(s, model.simulate_confidential(theta, 1))  # seeded
    # nested (R)QMC use: M privatised copies of each confidential summary
    m = 8
    u = np.stack([qmc.Sobol(model.noise_dim, scramble=True, seed=10 + i).random_base2(3) for i in range(6)])
    u = np.clip(u, 1e-12, 1 - 1e-12)
    sdp = model.mechanism.G(s[:, None, :], u)
    assert sdp.shape == (6, m, model.obs_dim)
    for i in range(6):  # identical to the unbatched map
        np.testing.assert_array_equal(sdp[i, 3], model.mechanism.G(s[i], u[i, 3]))
    if model.mechanism.has_density:
        ld = model.mechanism.log_density(sdp, s[:, None, :])
        assert ld.shape == (6, m) and np.all(np.isfinite(ld))
    # simulate = G(simulate_confidential, u) with the same stream
    uu = open_uniforms(np.random.default_rng(5), (6, model.noise_dim))
    np.testing.assert_array_equal(
        model.simulate(theta, 3, u=uu), model.mechanism.G(model.simulate_confidential(theta, 3), uu)
    )
    report = model.privacy_report()
    assert report.epsilon > 0 and report.neighbouring == "replace-one"


def test_smc_abc_runs_on_naive_bayes():
    model = NaiveBayes(epsilon=1.0)
    truth = np.array([[-0.45, 1.1, 0.6, 0.3, 1.7]])
    obs = model.simulate(truth, 4)[0]
    res = smc_abc(model, obs, n_particles=200, schedule="adaptive", backend="serial", seed=0, batch_size=500)
    assert res.complete and res.particles.shape == (200, 5)
    # the class probability is the best-identified parameter: its posterior moves toward the truth
    assert abs(res.mean()[4] - 1.7) < abs(0.0 - 1.7)
