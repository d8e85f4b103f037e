"""DPVI says what it does not know: the noise-induced spread and the tail-drift check
(:mod:`dpinfer.release.dpvi.diagnostics`)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from dpinfer.errors import PrivacyWarning
from dpinfer.privacy import PrivacyRNG, ReleaseContext
from dpinfer.release.dpvi import (
    DPVI,
    DataSpec,
    DPVIConvergenceWarning,
    DPVINoiseWarning,
    GaussianLinearRegression,
    LogisticRegression,
    OptimizerOptions,
    TrainingOptions,
)
from dpinfer.release.dpvi.diagnostics import NOISE_DOMINATES, propagate_noise


def _simulate_recursion(rates, noise, H, tail, split, beta, reps, seed):
    """Monte Carlo of equation (2): the tail average and the half-tail difference."""
    rng = np.random.default_rng(seed)
    T, D = rates.shape
    e, m = np.zeros((reps, D)), np.zeros((reps, D))
    sa, sb = np.zeros((reps, D)), np.zeros((reps, D))
    for t in range(T):
        g = -e @ H.T + noise[t] * rng.normal(size=(reps, D))
        m = beta * m + (1 - beta) * g
        e = e + rates[t] * m
        if t >= split:
            sb += e
        elif t >= tail:
            sa += e
    return (sa + sb) / (T - tail), sb / (T - split) - sa / (split - tail)


@pytest.mark.parametrize("beta", [0.0, 0.9])
def test_propagated_covariance_matches_monte_carlo_of_the_linear_recursion(beta):
    rng = np.random.default_rng(1)
    D, T, tail, split = 2, 120, 60, 90
    A = rng.normal(size=(D, D))
    H = A @ A.T + np.eye(D)
    rates = rng.uniform(0.005, 0.05, size=(T, D))  # slow: the tail still remembers its start
    noise = rng.uniform(0.5, 1.5, size=T)
    V, Vd = propagate_noise(rates, noise, H, tail, split, beta)
    reps = 4000
    avg, diff = _simulate_recursion(rates, noise, H, tail, split, beta, reps, seed=2)
    # the variance of a sample variance of a normal: 2 var^2 / (reps - 1): 5 sd of that is 11%
    tol = 5 * np.sqrt(2 / (reps - 1))
    np.testing.assert_allclose(np.diag(V) / avg.var(0), 1.0, atol=tol)
    np.testing.assert_allclose(np.diag(Vd) / diff.var(0), 1.0, atol=tol)
    # known-broken variant: the Polyak limit H^-1 s^2 H^-1 / m ignores the short tail's memory
    m = T - tail
    polyak = np.diag(np.linalg.inv(H) @ np.linalg.inv(H)) * np.mean(noise**2) / m
    assert np.any(np.abs(polyak / avg.var(0) - 1.0) > tol)


def _logistic(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.array([1.0, -1.0, 0.5])))).astype(float)
    return X, y


def test_noise_warning_fires_when_the_noise_dominates_and_not_without_noise():
    torch.set_num_threads(1)
    X, y = _logistic(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        # noise_sd is estimated from the noisy trajectory itself: with OS noise this fit's
        # noise_sd stayed below the posterior sd (no warning) in 3 of 8 runs, so the noise comes
        # from a seeded test generator here (a fit where it dominates: noise sd over the sampling
        # posterior sd 9.5 on smoker, above issue 39's threshold NOISE_DOMINATES = 2)
        with pytest.warns(DPVINoiseWarning, match="more data, a larger epsilon") as caught:
            fit = DPVI(LogisticRegression(3)).fit(
                X, y, epsilon=0.5, delta=1e-5, seed=0, training=TrainingOptions(steps=200),
                context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(2)),
                data=DataSpec(intercept=False, feature_names=["age", "bmi", "smoker"]),
            )
    # issue 39: the dominance (noise sd over the sampling posterior's sd) is far above the
    # threshold here (9.5 on smoker); the warning names the parameters as the figures do and
    # no longer advises widen='noise' (already the default)
    assert np.max(fit.config["diagnostics"]["noise_dominance"]) > NOISE_DOMINATES
    text = " ".join(str(w.message) for w in caught if issubclass(w.category, DPVINoiseWarning))
    assert "smoker" in text and "theta_" not in text
    assert "use result.interval(widen='noise')" not in text and "the default" in text
    lo, hi = fit.interval(0.9).T
    lo0, hi0 = fit.interval(0.9, widen=None).T
    assert np.all(hi - lo > hi0 - lo0)
    np.testing.assert_allclose(fit.sd() ** 2, fit.std**2 + fit.noise_sd**2)
    text = fit.summary()
    assert "noise_sd" in text and "clip_trace" not in text and "clipped_fraction_trace" not in text
    assert len(text.splitlines()) <= 4 + fit.dim + 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", DPVINoiseWarning)  # known-good: no noise, no warning
        free = DPVI(LogisticRegression(3)).fit(
            X, y, private=False, seed=0, training=TrainingOptions(steps=200), data=DataSpec(intercept=False)
        )
    assert np.all(free.noise_sd == 0.0)


def test_drift_check_catches_a_fit_still_moving_and_passes_a_converged_one():
    torch.set_num_threads(1)
    X, y = _logistic(400)
    with pytest.warns(DPVIConvergenceWarning, match="has not converged"):
        slow = DPVI(LogisticRegression(3)).fit(
            X, y, private=False, seed=0, training=TrainingOptions(steps=200),
            optimizer=OptimizerOptions(lr=0.005), data=DataSpec(intercept=False),
        )
    assert slow.converged is False
    with warnings.catch_warnings():
        warnings.simplefilter("error", DPVIConvergenceWarning)
        good = DPVI(LogisticRegression(3)).fit(
            X, y, private=False, seed=0, training=TrainingOptions(steps=400), data=DataSpec(intercept=False)
        )
    assert good.converged is True


@pytest.mark.slow
def test_predicted_noise_sd_matches_the_spread_of_repeated_private_fits():
    """Gaussian linear regression (exact posterior): the sd of the mean over 40 private fits of
    one data set against sqrt(mean noise_sd² + the non-private fits' own variance)."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(3)
    n, D = 1000, 2
    X = rng.normal(size=(n, D))
    y = X @ np.array([0.5, -0.3]) + rng.normal(size=n)
    model = GaussianLinearRegression(D)
    kw = dict(training=TrainingOptions(steps=400))
    reps = 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = [DPVI(model).fit(X, y, epsilon=2.0, delta=1e-5, seed=i, **kw,
            data=DataSpec(intercept=False)) for i in range(reps)]
        free = [DPVI(model).fit(X, y, private=False, seed=100 + i, **kw,
            data=DataSpec(intercept=False)) for i in range(reps)]
    means = np.array([f.mean() for f in priv])
    own = np.var([f.mean() for f in free], axis=0)
    predicted = np.sqrt(np.mean([f.noise_sd**2 for f in priv], axis=0) + own)
    ratio = means.std(0, ddof=1) / predicted
    # sd of a sample sd over 40 draws is about 1/sqrt(2*39) = 11%; allow 3 of those
    assert np.all(np.abs(ratio - 1.0) < 0.35), ratio
    # known-broken variant: the fit's spread without the privacy noise (the non-private fits')
    assert np.all(np.sqrt(own) / means.std(0, ddof=1) < 0.65)
