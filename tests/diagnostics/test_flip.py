"""Theory functions of ABCDP: Lemma 2, Proposition 1, Theorem 1, Theorem 2."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.diagnostics import (
    expected_flips,
    flip_probability,
    laplace_difference_cdf,
    laplace_difference_tail,
    posterior_mean_error_bound,
    posterior_mean_tail_bound,
    svt_epsilon,
    svt_noise_scale,
)
from dpinfer.privacy import InvalidPrivacyParameterError


def test_flip_probability_test_vector():
    # METHODS.md §1.3: rho = 0.3, eps_abc = 0.2, b = 0.1 -> 0.34304
    assert float(flip_probability(0.3, 0.2, 0.1)) == pytest.approx(0.34304, abs=5e-6)
    assert float(flip_probability(0.1, 0.2, 0.1)) == pytest.approx(0.34304, abs=5e-6)


@pytest.mark.parametrize(
    "rho,eps_abc,b", [(0.3, 0.2, 0.1), (0.05, 0.2, 0.04), (0.21, 0.2, 0.5), (0.9, 0.2, 0.2)]
)
def test_flip_probability_matches_monte_carlo(rho, eps_abc, b):
    """P(threshold and distance noise change the ABC decision) by simulation, within 3 SE."""
    rng = np.random.default_rng(12345)
    n = 400_000
    m = rng.laplace(0, b, n)
    v = rng.laplace(0, 2 * b, n)
    tau = rho <= eps_abc
    tau_dp = rho + v <= eps_abc + m
    p_hat = np.mean(tau != tau_dp)
    p = float(flip_probability(rho, eps_abc, b))
    se = np.sqrt(p * (1 - p) / n)
    assert abs(p_hat - p) < 3 * se


def test_broken_flip_formula_would_be_caught():
    """The MC check distinguishes G_b from the tail of Lap(b) - Lap(b) (a plausible mistake)."""
    rho, eps_abc, b = 0.3, 0.2, 0.1
    rng = np.random.default_rng(1)
    n = 400_000
    p_hat = np.mean(rho + rng.laplace(0, 2 * b, n) <= eps_abc + rng.laplace(0, b, n))
    a = abs(rho - eps_abc)
    wrong = 0.5 * np.exp(-a / b) * (1 + a / (2 * b))  # tail of Lap(b) - Lap(b)
    se = np.sqrt(p_hat * (1 - p_hat) / n)
    assert abs(p_hat - wrong) > 10 * se


def test_lemma2_cdf_and_tail():
    b = 0.3
    z = np.linspace(-3, 3, 13)
    rng = np.random.default_rng(2)
    sample = rng.laplace(0, b, 200_000) - rng.laplace(0, 2 * b, 200_000)
    emp = np.array([np.mean(sample <= zi) for zi in z])
    np.testing.assert_allclose(laplace_difference_cdf(z, b), emp, atol=4e-3)
    assert float(laplace_difference_tail(0.0, b)) == pytest.approx(0.5)
    assert np.all(np.diff(laplace_difference_tail(np.linspace(0, 5, 50), b)) < 0)
    with pytest.raises(ValueError):
        laplace_difference_tail(-1.0, b)


def test_theorem1_noise_scale_and_inverse():
    assert svt_noise_scale(10, 1.0, 4e-4, resample=True) == pytest.approx(0.008)
    assert svt_noise_scale(10, 1.0, 4e-4, resample=False) == pytest.approx(0.0044)
    for resample in (False, True):
        b = svt_noise_scale(5, 2.0, 0.1, resample)
        assert svt_epsilon(5, b, 0.1, resample) == pytest.approx(2.0)
    with pytest.raises(InvalidPrivacyParameterError):
        svt_noise_scale(0, 1.0, 0.1)
    with pytest.raises(InvalidPrivacyParameterError):
        svt_noise_scale(1, -1.0, 0.1)


def test_expected_flips_and_theorem2_bounds_hold_empirically():
    """Simulate Algorithm 1 without early stop against rejection ABC on fixed distances and
    check the bound of Theorem 2 (1) and the tail bound (3)."""
    rng = np.random.default_rng(3)
    T = 400
    rho = rng.random(T)
    theta = rng.normal(size=(T, 2))
    eps_abc, b = 0.2, 0.02
    tau = rho <= eps_abc
    c_prime = int(tau.sum())
    mean_abc = theta[tau].mean(axis=0)
    errs, flips = [], []
    for _ in range(400):
        m = eps_abc + rng.laplace(0, b)
        tau_dp = rho + rng.laplace(0, 2 * b, T) <= m
        flips.append(np.sum(tau_dp != tau))
        if tau_dp.sum():
            errs.append(np.linalg.norm(theta[tau_dp].mean(axis=0) - mean_abc))
    k_t = np.max(np.linalg.norm(theta, axis=1))
    assert np.mean(flips) == pytest.approx(expected_flips(rho, eps_abc, b), rel=0.15)
    bound = posterior_mean_error_bound(rho, eps_abc, b, k_t, c_prime)
    assert np.mean(errs) <= bound
    a = 2.0
    assert np.mean(np.array(errs) <= a) >= posterior_mean_tail_bound(rho, eps_abc, b, k_t, c_prime, a)
    assert posterior_mean_tail_bound(rho, eps_abc, b, k_t, c_prime, 1e-9) == 0.0


def test_the_svt_noise_scale_formula_is_written_once():
    """diagnostics.flip, the ABCDP release and the sparse-vector engine share one formula."""
    import inspect

    from dpinfer.diagnostics import svt_epsilon, svt_noise_scale
    from dpinfer.privacy.svt_scale import svt_laplace_scale
    from dpinfer.release import abcdp as abcdp_module

    for c, resample in [(1, False), (3, True), (7, False)]:
        b = svt_laplace_scale(c, 0.7, 0.01, resample=resample)
        assert svt_noise_scale(c, 0.7, 0.01, resample) == b == (2 * c if resample else c + 1) * 0.01 / 0.7
        assert svt_epsilon(c, b, 0.01, resample) == pytest.approx(0.7, rel=1e-14)
    assert "c + 1" not in inspect.getsource(abcdp_module)
