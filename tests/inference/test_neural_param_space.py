"""SPPE's flow on z = T⁻¹(θ) for priors with a bounded support (dpinfer.inference.neural.param_space).

Checked: Gaussian priors keep the θ-space flow unchanged; the pool's prior log density in z is
the change of variables ``log p(T(z)) + log|det ∂T/∂z|``; the posterior's density integrates to 1
over the support by quadrature (the known-broken variant that forgets the Jacobian does not);
every draw lies in the support; slow: near a bound (a Poisson rate whose exact posterior, by
enumeration, piles at 0) the default is within 0.2 posterior sd and 15% on the sd.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.inference.neural import SPPE
from dpinfer.inference.neural.param_space import ParamSpace
from dpinfer.models import GammaPrior, GaussianPrior, PrivateDataModel, clamped_release

N, CAP = 50, 10
RELEASE = clamped_release("sum", 0, CAP, epsilon=1.0, n=N, mechanism="geometric")


def _simulate(theta, rng):
    return RELEASE.statistic(rng.poisson(theta[:, :1], size=(theta.shape[0], N)))


def _model():
    return PrivateDataModel(GammaPrior(1.0, 1.0), _simulate, RELEASE, param_names=["rate"])


def test_gaussian_priors_keep_theta_space_and_bounded_ones_move_to_z():
    g = ParamSpace(GaussianPrior(np.zeros(2), np.eye(2)))
    assert not g.active and g.name == "theta"
    th = np.array([[0.3, -1.0]])
    np.testing.assert_array_equal(g.targets(GaussianPrior(np.zeros(2), np.eye(2)), th)[0], th)
    prior = GammaPrior(2.0, 0.5)
    s = ParamSpace(prior)
    assert s.active and s.name == "unconstrained"
    theta = np.array([[0.01], [1.0], [7.5]])
    z, logp = s.targets(prior, theta)
    np.testing.assert_allclose(s.to_theta(z), theta)
    np.testing.assert_allclose(logp, prior.log_prob_unconstrained(z))
    assert not ParamSpace(prior, "theta").active


@pytest.fixture(scope="module")
def quick_posterior():
    return SPPE(_model(), rounds=1, simulations_per_round=200, rqmc_points=2, seed=0,
                flow={"transforms": 2, "hidden": 16}, training={"max_epochs": 5}).fit([4.0])


def test_density_integrates_to_one_and_draws_stay_inside(quick_posterior, monkeypatch):
    post = quick_posterior
    assert post.settings["space"] == "unconstrained"
    draws = post.sample(2000, seed=1)
    assert np.all(draws > 0)

    grid = np.geomspace(1e-8, 40.0, 40001)  # the flow's tails in z reach far on both sides

    def mass():
        return float(np.trapezoid(np.exp(post.log_prob(grid[:, None])), grid))

    assert mass() == pytest.approx(1.0, abs=0.02)
    # known-broken: the density of z reported as the density of θ (no Jacobian)
    monkeypatch.setattr(ParamSpace, "log_det", lambda self, z: np.zeros(np.shape(z)[:-1]))
    assert abs(mass() - 1.0) > 0.1


@pytest.mark.slow
def test_near_a_bound_the_unconstrained_flow_matches_the_exact_posterior():
    """Observed clamped sum 0: the exact posterior of the rate (enumeration) has mean 0.175 and
    sd 0.174, piled against 0. Measured (seed 0): z-space mean error 0.004 sd, sd ratio 1.02,
    all draws inside; θ-space (the paper's) -0.013 sd, 0.95, with 47% of its flow's mass outside
    the support (rejected)."""
    from dpinfer.demo.own_model import _exact_rate_posterior

    mean, sd = _exact_rate_posterior(RELEASE, 0.0, 1.0, 1.0)
    post = SPPE(_model(), rounds=2, simulations_per_round=1000, rqmc_points=4, seed=0).fit([0.0])
    d = post.sample(4000, seed=1)[:, 0]
    assert abs(d.mean() - mean) < 0.2 * sd
    assert abs(d.std() / sd - 1) < 0.15
