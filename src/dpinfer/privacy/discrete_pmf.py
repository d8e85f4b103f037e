"""Log-pmfs and the CDF of the discrete Laplace and discrete Gaussian distributions.

Ordinary floating-point functions, for likelihoods and tests; they play no part in sampling (the
exact samplers are in :mod:`dpinfer.privacy.discrete`). Definitions as in Canonne, Kamath &
Steinke (2020): Lap_Z(scale) has P(Z = k) ∝ exp(-|k|/scale), N_Z(0, σ²) has P(Z = k) ∝
exp(-k²/(2σ²)).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .validation import check_positive

__all__ = ["discrete_gaussian_logpmf", "discrete_laplace_cdf", "discrete_laplace_logpmf"]


def discrete_laplace_logpmf(k: Any, scale: float) -> np.ndarray:
    """Log-pmf of the discrete Laplace distribution with the given scale.

    log P(Z = k) = log((1 - a)/(1 + a)) + |k| log a with a = exp(-1/scale) (CKS 2020, Definition
    of Lap_Z); log(1 - a) = log(-expm1(-1/scale)) and log(1 + a) = log1p(a) keep full relative
    accuracy for small and large scales. Non-integer k has log-pmf -inf.

    Parameters
    ----------
    k : array_like
        Integer values.
    scale : float
        Scale > 0 (a Fraction is converted to float).

    Returns
    -------
    numpy.ndarray
        Float64 array with the shape of ``k``.
    """
    b = check_positive(scale, "scale")
    kf = np.asarray(k, dtype=np.float64)
    lognorm = math.log(-math.expm1(-1.0 / b)) - math.log1p(math.exp(-1.0 / b))
    out = lognorm - np.abs(kf) / b
    return np.where(kf == np.floor(kf), out, -np.inf)


def discrete_laplace_cdf(k: Any, scale: float) -> np.ndarray:
    """CDF P(Z <= k) of the discrete Laplace distribution (closed form).

    With a = exp(-1/scale): P(Z <= k) = a^(-⌊k⌋)/(1 + a) for ⌊k⌋ < 0 and
    1 - a^(⌊k⌋+1)/(1 + a) for ⌊k⌋ >= 0 (sums of the geometric series of the pmf).

    Parameters
    ----------
    k : array_like
        Points (real; ±inf allowed).
    scale : float
        Scale > 0.

    Returns
    -------
    numpy.ndarray
        Float64 array with the shape of ``k``.
    """
    b = check_positive(scale, "scale")
    kf = np.floor(np.asarray(k, dtype=np.float64))
    log1pa = math.log1p(math.exp(-1.0 / b))
    with np.errstate(over="ignore", invalid="ignore"):
        neg = np.exp(kf / b - log1pa)  # a^{-k}/(1+a), k < 0
        pos = 1.0 - np.exp(-(kf + 1.0) / b - log1pa)  # 1 - a^{k+1}/(1+a)
    return np.where(kf < 0, neg, pos)


def _dg_log_normaliser(sigma2: float, method: str = "auto") -> float:
    """log Σ_k exp(-k²/(2σ²)), accurately.

    ``direct``: log1p(2 Σ_{k>=1} exp(-k²/(2σ²))), summed smallest term first (used for σ² <= 1).
    ``poisson``: Poisson summation, Σ_k exp(-k²/(2σ²)) = sqrt(2π)σ (1 + 2 Σ_{j>=1} exp(-2π²σ²j²))
    (used for σ² > 1, where the j-sum converges after a few terms).
    """
    if method == "auto":
        method = "direct" if sigma2 <= 1.0 else "poisson"
    if method == "direct":
        kmax = int(math.ceil(math.sqrt(2.0 * sigma2 * 760.0))) + 1
        ks = np.arange(kmax, 0, -1, dtype=np.float64)
        return math.log1p(2.0 * math.fsum(np.exp(-(ks * ks) / (2.0 * sigma2))))
    if method == "poisson":
        c = 2.0 * math.pi**2 * sigma2
        jmax = int(math.ceil(math.sqrt(760.0 / c))) + 1
        js = np.arange(jmax, 0, -1, dtype=np.float64)
        tail = math.fsum(np.exp(-c * js * js))
        return 0.5 * math.log(2.0 * math.pi * sigma2) + math.log1p(2.0 * tail)
    raise ValueError(f"unknown method {method!r}")


def discrete_gaussian_logpmf(k: Any, sigma2: float) -> np.ndarray:
    """Log-pmf of the discrete Gaussian distribution N_Z(0, σ²) (CKS 2020, Definition 1).

    log P(Z = k) = -k²/(2σ²) - log Z with Z = Σ_k exp(-k²/(2σ²)), computed by direct summation
    for σ² <= 1 and by Poisson summation, Z = sqrt(2π)σ(1 + 2 Σ_{j>=1} exp(-2π²σ²j²)), for σ² > 1.
    Non-integer k has log-pmf -inf.

    Parameters
    ----------
    k : array_like
        Integer values.
    sigma2 : float
        σ² > 0 (a Fraction is converted to float).

    Returns
    -------
    numpy.ndarray
        Float64 array with the shape of ``k``.
    """
    s2 = check_positive(sigma2, "sigma2")
    kf = np.asarray(k, dtype=np.float64)
    out = -(kf * kf) / (2.0 * s2) - _dg_log_normaliser(s2)
    return np.where(kf == np.floor(kf), out, -np.inf)
