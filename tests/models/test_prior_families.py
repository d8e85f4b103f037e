"""Priors on constrained supports: densities against scipy.stats, transforms and their Jacobians."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from dpinfer.errors import InvalidDataError
from dpinfer.models import (
    BetaPrior,
    DirichletPrior,
    GammaPrior,
    GaussianPrior,
    IndependentPrior,
    LogNormalPrior,
    ScipyPrior,
    TorchPrior,
    UniformPrior,
    as_prior,
)
from dpinfer.models.transforms import BoxBijection, StickBreakingBijection

# prior, its scipy.stats twin (per coordinate, independent)
CASES = [
    (UniformPrior([0.0, -1.0], [1.0, 3.0]), [stats.uniform(0, 1), stats.uniform(-1, 4)]),
    (LogNormalPrior([0.5], [0.7]), [stats.lognorm(0.7, scale=np.exp(0.5))]),
    (GammaPrior([2.0, 0.5], [3.0, 1.0]), [stats.gamma(2.0, scale=1 / 3), stats.gamma(0.5)]),
    (BetaPrior([2.0], [0.7]), [stats.beta(2.0, 0.7)]),
    (ScipyPrior(stats.gamma(3.0, scale=2.0)), [stats.gamma(3.0, scale=2.0)]),
    (TorchPrior(torch.distributions.Beta(torch.tensor(2.0), torch.tensor(5.0))), [stats.beta(2.0, 5.0)]),
    (TorchPrior(torch.distributions.LogNormal(torch.zeros(2, dtype=torch.float64), 0.5)),
     [stats.lognorm(0.5), stats.lognorm(0.5)]),
]


@pytest.mark.parametrize(("prior", "twins"), CASES, ids=lambda c: repr(c)[:24])
def test_log_prob_matches_scipy_and_draws_follow_it(prior, twins):
    draws = prior.sample(4000, 1)
    assert draws.shape == (4000, prior.dim)
    ref = sum(t.logpdf(draws[:, j]) for j, t in enumerate(twins))
    np.testing.assert_allclose(prior.log_prob(draws), ref, rtol=1e-6, atol=1e-6)
    for j, t in enumerate(twins):  # the draws follow the declared law (KS at 4000 draws)
        assert stats.kstest(draws[:, j], t.cdf).pvalue > 1e-3
    lo, hi = prior.support
    outside = np.where(np.isfinite(lo), lo - 1.0, hi + 1.0)
    assert prior.log_prob(outside[None, :])[0] == -np.inf
    assert not prior.in_support(outside[None, :])[0]
    # same seed, same draws
    np.testing.assert_array_equal(prior.sample(7, 3), prior.sample(7, 3))


def test_dirichlet_density_and_draws_against_scipy():
    alpha = np.array([1.5, 2.0, 3.0])
    prior = DirichletPrior(alpha)
    theta = prior.sample(2000, 0)
    assert theta.shape == (2000, 2)
    full = prior.complete(theta)
    np.testing.assert_allclose(prior.log_prob(theta), stats.dirichlet(alpha).logpdf(full.T), rtol=1e-10)
    np.testing.assert_allclose(full.mean(0), alpha / alpha.sum(), atol=4 * full.std(0).max() / np.sqrt(2000))
    assert prior.log_prob(np.array([[0.7, 0.5]]))[0] == -np.inf  # p_3 < 0


def _numeric_log_jacobian(bij, z, h=1e-6):
    jac = np.empty((z.size, z.size))
    for j in range(z.size):
        e = np.zeros(z.size)
        e[j] = h
        jac[:, j] = (bij.forward(z + e) - bij.forward(z - e)) / (2 * h)
    return np.linalg.slogdet(jac)[1]


@pytest.mark.parametrize(
    "prior",
    [UniformPrior([0.0, 2.0], [1.0, 5.0]), GammaPrior([2.0, 1.0], 1.0), DirichletPrior([1.0, 2.0, 3.0, 1.0]),
     IndependentPrior(BetaPrior(2, 2), GaussianPrior([0.0], [4.0]), DirichletPrior([2.0, 2.0, 2.0])),
     ScipyPrior(stats.truncnorm(-1, 2)), TorchPrior(torch.distributions.HalfNormal(torch.tensor(1.0)))],
    ids=lambda p: repr(p)[:24],
)
def test_transform_is_a_bijection_with_the_right_log_jacobian(prior):
    bij = prior.transform
    theta = prior.sample(5, 2)
    z = bij.inverse(theta)
    np.testing.assert_allclose(bij.forward(z), theta, rtol=1e-9, atol=1e-12)
    anywhere = np.random.default_rng(0).normal(size=(50, prior.dim))
    assert np.all(np.isfinite(prior.log_prob(bij.forward(anywhere))))
    ladj = bij.log_abs_det_jacobian(z)
    for i in range(z.shape[0]):
        assert ladj[i] == pytest.approx(_numeric_log_jacobian(bij, z[i]), abs=1e-5)


def test_unconstrained_density_integrates_to_one_and_a_wrong_jacobian_does_not():
    """∫ p(T(z))|T'(z)| dz = 1 (change of variables), by quadrature; dropping the Jacobian fails."""
    for prior in (GammaPrior(2.5, 3.0), BetaPrior(0.8, 3.0), UniformPrior(-2.0, 7.0)):
        total = integrate.quad(lambda z, p=prior: np.exp(p.log_prob_unconstrained(np.array([[z]])))[0],
                               -40, 40, limit=400)[0]
        assert total == pytest.approx(1.0, abs=1e-7)
        no_jacobian = lambda z, p=prior: np.exp(p.log_prob(p.transform.forward(np.array([[z]]))))[0]  # noqa: E731
        broken = integrate.quad(no_jacobian, -40, 40, limit=400)[0]
        assert abs(broken - 1.0) > 0.05
    # the simplex: a 2-d integral over z for a Dirichlet with K = 3, by the trapezoid rule on
    # [-30, 30]² (vectorised; for a smooth integrand decaying like this its error is far below
    # 1e-6 at step 0.1, as dblquad at epsabs 1e-9 agreed at 13x the time)
    d = DirichletPrior([2.0, 3.0, 1.5])
    h = 0.1
    a, b = np.meshgrid(*2 * [np.arange(-30.0, 30.0 + h / 2, h)], indexing="ij")
    z = np.column_stack([a.ravel(), b.ravel()])
    total = np.exp(d.log_prob_unconstrained(z)).sum() * h * h
    assert total == pytest.approx(1.0, abs=1e-6)
    broken = np.exp(d.log_prob(d.transform.forward(z))).sum() * h * h  # the Jacobian dropped
    assert abs(broken - 1.0) > 0.05


def test_box_and_stick_breaking_bijections_reach_the_support():
    box = BoxBijection([-np.inf, 0.0, -np.inf, 1.0], [np.inf, np.inf, 3.0, 2.0])
    z = np.array([[-30.0, -30.0, -30.0, -30.0], [30.0, 30.0, 30.0, 30.0]])
    t = box.forward(z)
    assert t[0, 1] > 0 and t[1, 2] < 3 and 1 <= t[0, 3] and t[1, 3] <= 2
    sb = StickBreakingBijection(3)
    p = sb.forward(np.random.default_rng(1).normal(scale=3, size=(100, 3)))
    assert np.all(p > 0) and np.all(p.sum(-1) < 1)
    np.testing.assert_allclose(sb.forward(np.zeros(3)), [0.25, 0.25, 0.25])  # z = 0 is the centre


def test_bad_priors_are_refused_with_a_message():
    with pytest.raises(InvalidDataError, match="low < high"):
        UniformPrior(1.0, 0.0)
    with pytest.raises(InvalidDataError, match="positive"):
        GammaPrior(-1.0, 1.0)
    with pytest.raises(InvalidDataError, match="discrete"):
        ScipyPrior(stats.poisson(3))
    with pytest.raises(InvalidDataError, match="box support"):
        TorchPrior(torch.distributions.Dirichlet(torch.ones(3)))
    with pytest.raises(InvalidDataError, match="Prior"):
        as_prior("normal")
    assert isinstance(as_prior([GammaPrior(1, 1), BetaPrior(1, 1)]), IndependentPrior)
    assert as_prior(stats.norm()).dim == 1 and as_prior(torch.distributions.Normal(0.0, 1.0)).dim == 1
