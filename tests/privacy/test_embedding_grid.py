"""The floating-point-safe Gaussian embedding release (dpinfer.privacy.mechanisms.embedding):
its plan, the theorem it is accounted by, the release path and the public simulator."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import chi2, norm

from dpinfer.errors import InvalidDataError, InvalidPrivacyParameterError
from dpinfer.privacy import GaussianEvent, Ledger, PrivacyWarning, analytic_gaussian_epsilon
from dpinfer.privacy.accountants import get_accountant
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.discrete import sample_discrete_gaussian
from dpinfer.privacy.discrete_pmf import discrete_gaussian_logpmf
from dpinfer.privacy.events import DiscreteGaussianEvent
from dpinfer.privacy.mechanisms.embedding import (
    SMOOTHING_UNITS,
    embedding_grid,
    public_discrete_gaussian,
    release_embedding,
    simulate_release,
)
from seeded_privacy_rng import prng


@pytest.mark.parametrize("n, d, eps", [(500, 100, 1.0), (18, 50_000, 44.0), (5, 2, 0.05), (10**6, 20, 3.0)])
def test_plan_meets_the_target_with_at_most_0_1_percent_more_noise(n, d, eps):
    """γ is a power of two from (Δ, D, σ) only; the rounded embedding's L2 sensitivity
    Δ/γ + √D is covered; σ_γ² − t² >= (s·Δ_γ)², so the charged GaussianEvent(s) is what the
    theorem certifies; ε of the event <= target; noise <= (1 + 2⁻⁹)× the continuous σ = s·Δ."""
    sens, delta = 2.0 / n, 1e-6
    plan = embedding_grid(sens, eps, delta, d)
    assert plan == embedding_grid(sens, eps, delta, d)  # deterministic in the public inputs
    assert math.frexp(plan.gamma)[0] == 0.5  # a power of two
    assert plan.sensitivity_units >= sens / plan.gamma + math.sqrt(d)
    assert math.sqrt(d) <= 2.0**-10 * sens / plan.gamma
    s = plan.noise_multiplier
    assert plan.sigma2_units - SMOOTHING_UNITS**2 >= (s * plan.sensitivity_units) ** 2
    assert isinstance(plan.event, GaussianEvent) and plan.event.noise_multiplier == s
    assert get_accountant("pld").epsilon(plan.event, delta) <= eps * (1 + 1e-9)
    assert 1.0 <= plan.sigma / (s * sens) <= 1 + 2.0**-9
    assert plan.noise_slack_log10 < -500


def test_discrete_gaussian_is_within_e_zeta_of_a_post_processed_continuous_gaussian():
    """The lemma of the theorem, by quadrature: K(G), G ~ N(0, s²) then N_Z(G, t²), has a pmf
    within e^{±ζ}, ζ = log((1+η)/(1−η)), of N_Z(0, s² + t²). Measured max|log ratio| at
    (s, t) = (1, 0.5): 3.3e-4 <= ζ = 0.029; at (1, 0.7): 1.8e-7 <= 2.5e-4."""

    def theta(g, t):
        m = np.arange(-60, 61)
        return np.sum(np.exp(-((m - g) ** 2) / (2 * t * t)))

    for s, t in [(1.0, 0.5), (1.0, 0.7), (2.0, 0.4)]:
        sigma2 = s * s + t * t
        eta = 2 * sum(math.exp(-2 * math.pi**2 * t * t * j * j) for j in range(1, 20))
        zeta = math.log((1 + eta) / (1 - eta))
        for n in range(-6, 7):
            def integrand(g, s=s, t=t, n=n):
                return norm.pdf(g, scale=s) * math.exp(-((n - g) ** 2) / (2 * t * t)) / theta(g, t)

            q = integrate.quad(integrand, -40, 40, limit=400, points=[n], epsabs=0, epsrel=1e-12)[0]
            log_p = float(discrete_gaussian_logpmf(n, sigma2))
            assert abs(math.log(q) - log_p) <= zeta, (s, t, n)


@pytest.mark.parametrize("sigma, sens", [(1.5, 1), (2.0, 1), (3.0, 2), (5.0, 3)])
def test_theorem_holds_against_the_exact_one_dimensional_discrete_gaussian_curve(sigma, sens):
    """CKS 2020 Thm 7 (exact curve of a 1-D discrete Gaussian, via the PLD accountant) against the
    theorem's continuous curve at multiplier √(σ² − t²)/Δ with t = 1 (slack (1 + e^ε)·2.1e-8).
    Broken variant caught: the continuous curve at σ/Δ itself (no t) is exceeded by the discrete
    mechanism at these parameters, e.g. σ = 1.5, Δ = 1, δ = 1e-3: ε 1.928 > 1.912."""
    acc = get_accountant("pld")
    naive_violated = False
    for delta in (1e-3, 1e-6):
        eps_discrete = acc.epsilon(DiscreteGaussianEvent(sigma, sens, 1), delta)
        slack = (1 + math.exp(eps_discrete)) * 2.1e-8
        assert eps_discrete <= analytic_gaussian_epsilon(math.sqrt(sigma**2 - 1) / sens, delta - slack)
        naive_violated |= eps_discrete > analytic_gaussian_epsilon(sigma / sens, delta) + 1e-3
    assert naive_violated


def test_release_is_on_the_grid_charged_once_and_refuses_bad_input_for_free(tmp_path):
    plan = embedding_grid(2.0 / 500, 1.0, 1e-5, 100)
    mu = np.random.default_rng(0).uniform(-0.14, 0.14, 100)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=3.0, delta=1e-5, accountant="pld")
    ctx = ReleaseContext(ledger, "d", prng(0), "embedding")
    out = release_embedding(mu, plan, ctx)
    v = out / plan.gamma
    assert np.all(v == np.round(v)) and out.shape == (100,)
    assert np.abs(out - mu).max() < 8 * plan.sigma
    hist = ledger.history("d")
    assert len(hist) == 1 and "GaussianEvent" in str(hist[0]["event"])
    for bad in (mu[:99], np.where(np.arange(100) == 3, np.nan, mu), mu + 1e300, [[0.0] * 100]):
        with pytest.raises(InvalidDataError):
            release_embedding(bad, plan, ctx)
    assert len(ledger.history("d")) == 1
    with pytest.raises(InvalidPrivacyParameterError):
        embedding_grid(2.0 / 500, 1.0, 0.0, 100)
    for bad_d in (0, 2.5, [3], True):
        with pytest.raises(InvalidPrivacyParameterError):
            embedding_grid(2.0 / 500, 1.0, 1e-5, bad_d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        assert np.array_equal(release_embedding(mu, plan, ReleaseContext(privacy_rng=prng(0))), out)


def _chi2_pvalue(draws: np.ndarray, sigma2: float) -> float:
    """χ² goodness of fit of integer draws to N_Z(0, σ²), cells of |k| <= 2.5σ plus two tails."""
    lim = int(2.5 * math.sqrt(sigma2))
    ks = np.arange(-lim, lim + 1)
    p = np.exp(discrete_gaussian_logpmf(ks, sigma2))
    p = np.concatenate([[(1 - p.sum()) / 2], p, [(1 - p.sum()) / 2]])
    obs = np.concatenate([[np.sum(draws < -lim)], [np.sum(draws == k) for k in ks], [np.sum(draws > lim)]])
    stat = float(np.sum((obs - draws.size * p) ** 2 / (draws.size * p)))
    return float(chi2.sf(stat, p.size - 1))


def test_public_simulator_draws_the_released_noise_law():
    """The ABC simulator's noise is N_Z(0, σ²) like the release's: χ² against the exact pmf at
    σ² = 1, 7 and 40 (200 000 draws, p > 1e-3), the exact private sampler passes the same test,
    and the two agree in variance to Monte Carlo error. Broken variant caught: rounding a
    continuous N(0, σ²) (P(0) = 0.383 vs 0.399 at σ² = 1) fails the χ² test (p < 1e-10)."""
    rng = np.random.default_rng(3)
    for s2 in (1, 7, 40):
        pub = public_discrete_gaussian(s2, 200_000, rng)
        assert _chi2_pvalue(pub, s2) > 1e-3
        priv = sample_discrete_gaussian(s2, 200_000, prng(s2)).astype(np.float64)
        assert _chi2_pvalue(priv, s2) > 1e-3
        se = s2 * math.sqrt(2 / 200_000) * 1.5
        assert abs(pub.var() - priv.var()) < 4 * se
    rounded = np.round(rng.standard_normal(200_000))
    assert _chi2_pvalue(rounded, 1) < 1e-10
    big = public_discrete_gaussian(10**12, 100_000, rng)
    assert abs(big.std() / 1e6 - 1) < 4 * math.sqrt(0.5 / 100_000)
    assert np.all(big == np.round(big))


def test_simulated_releases_lie_on_the_release_grid():
    plan = embedding_grid(2.0 / 50, 2.0, 1e-6, 8)
    emb = np.random.default_rng(1).uniform(-0.5, 0.5, (1000, 8))
    sim = simulate_release(emb, plan, np.random.default_rng(2))
    v = sim / plan.gamma
    assert np.all(v == np.round(v))
    z = v - np.floor(emb / plan.gamma + 0.5)
    assert abs(z.std() / math.sqrt(plan.sigma2_units) - 1) < 4 * math.sqrt(0.5 / z.size)
    assert np.isnan(simulate_release(np.full((1, 8), np.nan), plan, np.random.default_rng(0))).all()
