"""The private-data model contract and the Gaussian-mean model with its exact posterior."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError
from dpinfer.models.priors import GaussianPrior
from dpinfer.models.shipped.gaussian_mean import GaussianMean, clipped_mean_lattice_pmf
from dpinfer.privacy import BudgetExceededError, DiscreteLaplaceEvent, InvalidPrivacyParameterError, Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.mechanisms.base import LaplaceMechanism
from dpinfer.randomness import open_uniforms


def test_laplace_G_is_the_laplace_inverse_cdf():
    mech = LaplaceMechanism(3, sensitivity=0.3, epsilon=1.5)
    u = np.array([[0.1, 0.5, 0.97]])
    # the scale that runs: sensitivity/epsilon rounded up to the release grid (at most 2^-11 more)
    assert 0.2 <= mech.scale <= 0.2 * (1 + 2.0**-11)
    expected = stats.laplace(loc=[1.0, 2.0, 3.0], scale=mech.scale).ppf(u)
    np.testing.assert_allclose(mech.G(np.array([1.0, 2.0, 3.0]), u), expected, rtol=1e-12)
    # broadcasting: M privatised copies of each of n statistics
    s = np.zeros((4, 1, 3))
    uu = open_uniforms(np.random.default_rng(0), (4, 8, 3))
    assert mech.G(s, uu).shape == (4, 8, 3)
    # log density agrees with scipy
    x = np.array([0.3, -0.1, 2.0])
    assert mech.log_density(x, np.zeros(3)) == pytest.approx(stats.laplace(scale=mech.scale).logpdf(x).sum())
    # the draws are Laplace distributed (KS, fixed seed)
    draws = mech.simulate_release(np.zeros((20000, 3)), seed=1)[:, 0]
    assert stats.kstest(draws, stats.laplace(scale=0.2).cdf).pvalue > 0.01


def test_release_charges_before_release_and_refuses_bad_input(tmp_path, test_rng):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=1.0, accountant="pure")
    model = GaussianMean(n=20, clamp=(0.0, 1.0), epsilon=0.6)
    rel = model.mechanism.release([0.5],
                                  context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=test_rng))
    assert rel.privacy.epsilon == pytest.approx(0.6) and rel.privacy.insecure_rng
    assert rel.privacy.sensitivity == pytest.approx(1.0 / 20)
    assert ledger.spent("d") == pytest.approx(0.6)
    assert isinstance(model.mechanism.event(), DiscreteLaplaceEvent)
    with pytest.raises(BudgetExceededError):
        model.mechanism.release([0.5],
                                context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=test_rng))
    before = len(ledger.history("d"))
    with pytest.raises(InvalidDataError, match="outside the range"):
        model.mechanism.release([1.5],
                                context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=test_rng))
    with pytest.raises(InvalidDataError, match="length 1"):
        model.mechanism.release([0.1, 0.2],
                                context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=test_rng))
    assert len(ledger.history("d")) == before
    with pytest.raises(TypeError, match="PrivacyRNG"):
        model.mechanism.release([0.5], context=ReleaseContext(privacy_rng=np.random.default_rng(0)))


def test_invalid_parameters():
    with pytest.raises(InvalidPrivacyParameterError):
        GaussianMean(epsilon=0.0)
    with pytest.raises(InvalidPrivacyParameterError):
        GaussianMean(epsilon=-1.0)
    with pytest.raises(InvalidDataError):
        GaussianMean(clamp=(1.0, -1.0))
    with pytest.raises(InvalidDataError):
        GaussianPrior([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(InvalidDataError, match="shape"):
        GaussianMean().simulate(np.zeros((3, 2)), 0)


def test_simulator_is_seeded_and_batched():
    model = GaussianMean(n=40)
    theta = model.prior.sample(5, 0)
    a = model.simulate(theta, 3)
    b = model.simulate(theta, 3)
    assert a.shape == (5, 1) and np.array_equal(a, b)
    u = np.full((5, 1), 0.5)
    np.testing.assert_allclose(model.simulate(theta, 3, u=u), model.simulate_confidential(theta, 3))
    assert model.noise_dim == 1 and model.theta_dim == 1 and model.obs_dim == 1


def test_lattice_pmf_moments():
    lo, hi, sd, n = -1.0, 2.0, 1.0, 7
    theta = np.array([0.3])
    pmf = clipped_mean_lattice_pmf(theta, n, lo, hi, sd, 600)[0]
    support = lo + (hi - lo) * np.arange(pmf.size) / (n * 600)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-10)
    # mean of a clipped normal (closed form)
    a, b = (lo - 0.3) / sd, (hi - 0.3) / sd
    Z = stats.norm.cdf(b) - stats.norm.cdf(a)
    m_in = 0.3 + sd * (stats.norm.pdf(a) - stats.norm.pdf(b)) / Z
    ex = lo * stats.norm.cdf(a) + hi * stats.norm.sf(b) + Z * m_in
    assert support @ pmf == pytest.approx(ex, abs=2e-4)


def test_exact_private_likelihood_matches_monte_carlo():
    model = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    theta = np.array([0.8, 1.3, 1.8])
    exact = model.private_likelihood(theta, [1.3])
    rng = np.random.default_rng(0)
    b = model.mechanism.scale
    for t, e in zip(theta, exact, strict=True):
        s = model.simulate_confidential(np.full((100_000, 1), t), rng)[:, 0]
        vals = np.exp(-np.abs(1.3 - s) / b) / (2 * b)
        se = vals.std() / np.sqrt(vals.size)
        assert abs(vals.mean() - e) < 4 * se + 1e-3


def test_exact_posterior_converges_in_the_lattice():
    model = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    a = model.exact_posterior([1.3], bins=500)
    b = model.exact_posterior([1.3], bins=1000)
    assert abs(a.mean - b.mean) < 1e-4 and abs(a.sd - b.sd) < 1e-4
    # no clamping effect and little noise: close to the conjugate posterior
    wide = GaussianMean(n=50, clamp=(-20.0, 20.0), epsilon=1000.0)
    post = wide.exact_posterior([0.5], bins=200)
    conj = wide.naive_posterior([0.5])
    assert post.mean == pytest.approx(conj.mean[0], abs=2e-3)
    assert post.sd == pytest.approx(conj.sd[0], rel=2e-2)
