"""The Gaussian mechanism's privacy curve: pure functions.

The analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8): adding N(0, σ²) to a statistic
of L2 sensitivity Δ is (ε, δ)-DP if and only if

    Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ) <= δ.

With the noise multiplier s = σ/Δ this depends on s only. The classical calibration
σ = sqrt(2 ln(1.25/δ))·Δ/ε (Dwork & Roth 2014, Theorem A.1) is a valid guarantee only for ε < 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import log_ndtr

from ..errors import InvalidPrivacyParameterError
from .validation import check_delta, check_epsilon, check_positive


def analytic_gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with noise multiplier s (Balle & Wang 2018, Thm 8)."""
    s = float(noise_multiplier)
    a = 1.0 / (2.0 * s)
    b = epsilon * s
    first = math.exp(log_ndtr(a - b))
    second = math.exp(min(epsilon + log_ndtr(-a - b), 700.0))
    return max(first - second, 0.0)


def _bisect_upper(
    too_small: Callable[[float], bool], lo: float, hi: float, *, scale: float = 0.0
) -> float:
    """The upper end of a bracket [lo, hi] of the point where ``too_small`` turns False.

    ``too_small(lo)`` is true and ``too_small(hi)`` false (δ(·) > target below, <= above, as
    δ is monotone in ε and in σ); bisection stops when hi - lo <= 1e-12·max(scale, hi), at most
    200 halvings. The returned ``hi`` always satisfies the target.
    """
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if too_small(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(scale, hi):
            break
    return hi


def analytic_gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """Smallest ε with δ(ε) <= ``delta`` for the Gaussian mechanism with multiplier s."""
    s = check_positive(noise_multiplier, "noise_multiplier")
    delta = check_delta(delta)
    if delta == 0.0:
        return math.inf
    if analytic_gaussian_delta(s, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while analytic_gaussian_delta(s, hi) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e8:
            return math.inf
    return _bisect_upper(lambda eps: analytic_gaussian_delta(s, eps) > delta, lo, hi, scale=1.0)


def analytic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float = 1.0) -> float:
    """Smallest std σ making the Gaussian mechanism (ε, δ)-DP (Balle & Wang 2018, Alg. 1).

    Solved by bisection on the exact condition of Theorem 8 (monotone in σ); the returned σ
    satisfies it (it is the upper end of the final bracket).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sens = check_positive(l2_sensitivity, "l2_sensitivity")
    if delta == 0.0:
        raise InvalidPrivacyParameterError(
            "the Gaussian mechanism cannot give delta = 0; use the Laplace mechanism for pure "
            "epsilon-DP or choose delta > 0."
        )
    lo, hi = 1e-3, 1.0
    while analytic_gaussian_delta(lo, epsilon) <= delta:
        lo /= 2.0
    while analytic_gaussian_delta(hi, epsilon) > delta:
        lo, hi = hi, 2.0 * hi
    return _bisect_upper(lambda sigma: analytic_gaussian_delta(sigma, epsilon) > delta, lo, hi) * sens


def classical_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float = 1.0) -> float:
    """σ = sqrt(2 ln(1.25/δ))·Δ/ε (Dwork & Roth 2014, Thm A.1); valid only for ε < 1."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sens = check_positive(l2_sensitivity, "l2_sensitivity")
    if epsilon >= 1.0:
        raise InvalidPrivacyParameterError(
            f"the classical Gaussian calibration is only a valid guarantee for epsilon < 1 (got "
            f"{epsilon}); use calibration='analytic' (Balle & Wang 2018), which is valid for "
            "every epsilon and never adds more noise."
        )
    if delta == 0.0:
        raise InvalidPrivacyParameterError("the Gaussian mechanism needs delta > 0.")
    return float(np.sqrt(2.0 * np.log(1.25 / delta)) * sens / epsilon)
