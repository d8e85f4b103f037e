"""ABCDP theory as functions: noise scale (Theorem 1), flip probability (Lemma 2,
Proposition 1) and the posterior-mean error bounds (Theorem 2) of Park, Vinaroz & Jitkrittum
(2021, "ABCDP", Entropy 23:961).

Notation: threshold noise m ~ Lap(b), distance noise v ~ Lap(2b), Z = m - v, ρ_t = ρ(Y*, Y_t),
a_t = |ρ_t - ε_abc|.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidPrivacyParameterError
from ..privacy.svt_scale import svt_laplace_scale
from ..privacy.validation import check_epsilon, check_sensitivity


def _check_c(c: Any) -> int:
    if isinstance(c, bool) or int(c) != c or int(c) < 1:
        raise InvalidPrivacyParameterError(
            f"c (the number of accepted samples) must be an integer >= 1, got {c!r}."
        )
    return int(c)


def _check_b(b: Any) -> float:
    value = float(b)
    if not np.isfinite(value) or value < 0:
        raise InvalidPrivacyParameterError(f"noise scale b must be finite and >= 0, got {b!r}.")
    return value


def svt_noise_scale(c: int, epsilon_total: float, sensitivity: float, resample: bool = False) -> float:
    """The Laplace scale b of Algorithm 1 (Theorem 1, eq. (9)).

    b = (c + 1)·Δρ/ε_total with one threshold draw (``resample=False``) and b = 2c·Δρ/ε_total
    when the threshold is redrawn after every acceptance (``resample=True``). The threshold noise
    is Lap(b) and the distance noise Lap(2b).
    """
    c = _check_c(c)
    eps = check_epsilon(epsilon_total, "epsilon_total")
    delta_rho = check_sensitivity(sensitivity, "distance sensitivity")
    return svt_laplace_scale(c, eps, delta_rho, resample=resample)


def svt_epsilon(c: int, b: float, sensitivity: float, resample: bool = False) -> float:
    """ε_total of Algorithm 1 for a given b (the inverse of :func:`svt_noise_scale`)."""
    c = _check_c(c)
    b = _check_b(b)
    delta_rho = check_sensitivity(sensitivity, "distance sensitivity")
    if b == 0:
        return float("inf")
    return svt_laplace_scale(c, b, delta_rho, resample=resample)  # b·ε = k·Δρ


def laplace_difference_tail(a: Any, b: float) -> np.ndarray:
    """G_b(a) = P(Z > a) = (1/6)[4 exp(-a/2b) - exp(-a/b)] for a >= 0 (Lemma 2).

    Z = m - v with m ~ Lap(b), v ~ Lap(2b). G_b(0) = 1/2, decreasing to 0. With b = 0 there is
    no noise and no flip: G is taken as 0.
    """
    a = np.asarray(a, dtype=np.float64)
    if np.any(a < 0):
        raise ValueError("G_b(a) is defined for a >= 0; use |rho - epsilon_abc|.")
    b = _check_b(b)
    if b == 0:
        return np.zeros_like(a)
    return (4.0 * np.exp(-a / (2 * b)) - np.exp(-a / b)) / 6.0


def laplace_difference_cdf(z: Any, b: float) -> np.ndarray:
    """``F_Z(z) = H(z) + (1 - 2H(z))·G_b(|z|)`` (Lemma 2)."""
    z = np.asarray(z, dtype=np.float64)
    h = (z >= 0).astype(np.float64)
    return h + (1 - 2 * h) * laplace_difference_tail(np.abs(z), b)


def flip_probability(rho: Any, epsilon_abc: float, b: float) -> np.ndarray:
    """``P[τ̃_t ≠ τ_t | τ_t] = G_b(|ρ_t - ε_abc|)`` (Proposition 1).

    Test vector (the ABCDP authors' code (Park, Vinaroz & Jitkrittum 2021)): ρ = 0.3, ε_abc = 0.2, b =
    0.1 gives 0.34304.
    """
    rho = np.asarray(rho, dtype=np.float64)
    return laplace_difference_tail(np.abs(rho - float(epsilon_abc)), b)


def expected_flips(rho: Any, epsilon_abc: float, b: float) -> float:
    """``E[Σ_t |τ̃_t - τ_t|] = Σ_t G_b(|ρ_t - ε_abc|)`` over the queries ρ_1..ρ_T."""
    return float(np.sum(flip_probability(rho, epsilon_abc, b)))


def posterior_mean_error_bound(
    rho: Any, epsilon_abc: float, b: float, k_t: float, c_prime: int
) -> float:
    """Theorem 2 (1): E||mean_ABCDP f - mean_ABC f||_2 <= ``(2 K_T / c') Σ_t G_b(|ρ_t - ε_abc|)``.

    Parameters
    ----------
    rho
        The distances ρ_t of the T queries.
    k_t
        K_T = max_t ||f(θ_t)||_2.
    c_prime
        c' >= 1, the number of acceptances of non-private rejection ABC on the same stream.
    """
    if int(c_prime) < 1:
        raise ValueError("Theorem 2 needs c' >= 1 acceptances of rejection ABC.")
    return 2.0 * float(k_t) / int(c_prime) * expected_flips(rho, epsilon_abc, b)


def posterior_mean_tail_bound(
    rho: Any, epsilon_abc: float, b: float, k_t: float, c_prime: int, a: float
) -> float:
    """Theorem 2 (3): P(||mean_ABCDP f - mean_ABC f||_2 <= a) >= this value.

    ``1 - (4 K_T / (3 a c')) Σ_t exp(-|ρ_t - ε_abc|/(2b))``, floored at 0.
    """
    if int(c_prime) < 1:
        raise ValueError("Theorem 2 needs c' >= 1 acceptances of rejection ABC.")
    if not a > 0:
        raise ValueError(f"a must be > 0, got {a!r}.")
    b = _check_b(b)
    gap = np.abs(np.asarray(rho, dtype=np.float64) - float(epsilon_abc))
    if b == 0:
        total = 0.0
    else:
        total = float(np.sum(np.exp(-gap / (2 * b))))
    return max(0.0, 1.0 - 4.0 * float(k_t) / (3.0 * a * int(c_prime)) * total)

