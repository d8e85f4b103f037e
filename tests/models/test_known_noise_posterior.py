"""A count released with published discrete Gaussian noise (σ = 10): the exact posterior.

λ ~ Gamma(3, rate 0.1), s | λ ~ Poisson(λ), s_dp = s + N_Z(0, σ²) with σ = 10 published (a census
count; issue 26, item 1). The posterior ``p(λ | s_dp) ∝ p(λ) Σ_s Pois(s; λ) N_Z(s_dp - s; σ²)`` is
computed by quadrature on a λ-grid (the sum over s is finite to 10⁻³⁰⁰), and the exact importance
sampler (``mechanism_importance_sampling``, the mechanism's pmf) must match it within 0.15
posterior sd on the mean and 10% on the sd (its Monte Carlo error at these sizes: ~0.03 sd and
~3%). The known-broken variant, the published 10 read as a variance (σ = √10), must miss.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from dpinfer.inference.exact.importance import mechanism_importance_sampling
from dpinfer.models import GammaPrior, GaussianMechanism, PrivateDataModel
from dpinfer.privacy.discrete_pmf import discrete_gaussian_logpmf

OBSERVED, SHAPE, RATE = 42.0, 3.0, 0.1


def count_model(sigma):
    mech = GaussianMechanism.known(sigma=sigma, discrete=True, sensitivity=1)

    def simulate(theta, rng):
        return rng.poisson(theta[:, :1]).astype(float)

    return PrivateDataModel(GammaPrior(SHAPE, RATE), simulate, mech, param_names=["rate"])


def exact_posterior(sigma):
    """Posterior mean and sd of λ by quadrature (λ-grid 1e-3..150, s = 0..600)."""
    lam = np.linspace(1e-3, 150.0, 6000)
    s = np.arange(601.0)
    log_pois = stats.poisson.logpmf(s[None, :], lam[:, None])
    log_noise = discrete_gaussian_logpmf(OBSERVED - s, sigma**2)
    log_prior = stats.gamma.logpdf(lam, SHAPE, scale=1 / RATE)
    log_post = logsumexp(log_pois + log_noise[None, :], axis=1) + log_prior
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = float(w @ lam)
    return mean, float(np.sqrt(w @ (lam - mean) ** 2))


def _close(result, mean, sd):
    return abs(float(result.mean()[0]) - mean) < 0.15 * sd and abs(float(result.sd()[0]) / sd - 1) < 0.10


@pytest.fixture(scope="module")
def reference():
    return exact_posterior(10.0)


def test_importance_sampling_with_the_known_noise_pmf_matches_quadrature(reference):
    mean, sd = reference
    assert 33 < mean < 42 and 8 < sd < 12  # the problem is what it says (noise sd 10, Poisson sd ~6)
    res = mechanism_importance_sampling(count_model(10.0), [OBSERVED], n_theta=4000, n_inner=50, seed=1)
    assert _close(res, mean, sd), (res.mean(), res.sd(), mean, sd)
    assert res.privacy is not None and res.privacy.details["published_scale"] == [10.0]
    # known-broken variant: σ² = 10 instead of 100 (less noise: a narrower, shifted posterior)
    bad = mechanism_importance_sampling(count_model(np.sqrt(10.0)), [OBSERVED], n_theta=4000, n_inner=50,
                                        seed=1)
    assert not _close(bad, mean, sd)
    broken_mean, broken_sd = exact_posterior(np.sqrt(10.0))
    assert broken_sd < 0.85 * sd  # and the quadrature itself tells them apart


def test_the_model_simulates_integer_releases_and_reads_observed_counts():
    model = count_model(10.0)
    sims = model.simulate(model.prior.sample(200, 0), 1)
    assert sims.shape == (200, 1) and np.all(sims == np.round(sims))
    assert model.check_observed([OBSERVED]).tolist() == [OBSERVED]
    assert model.privacy_report().accountant == "pld" and np.isfinite(model.privacy_report().epsilon)
