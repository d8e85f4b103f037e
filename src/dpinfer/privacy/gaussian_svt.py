"""Rényi-DP analysis and calibration of the sparse vector technique with Gaussian noise.

The mechanism (:class:`~dpinfer.privacy.events.GaussianSparseVectorEvent`): queries q_1, q_2, ...
of sensitivity Δ are compared with a noisy threshold T + Z, Z ~ N(0, σ1²), each after adding
ν_i ~ N(0, σ2²); the release is the sequence of answers up to the c-th positive one, or up to
the k-th query. In ABCDP the query is the distance ρ_t and "positive" is ρ_t + ν_t <= ε_abc + Z;
the analysis below is symmetric in the direction of the comparison.

Rényi curve of one AboveThreshold round (c = 1), after Zhu & Wang (2020), "Improving sparse
vector technique with Rényi differential privacy", NeurIPS 33, Theorem 8. Write s1 = σ1/Δ,
s2 = σ2/Δ, p the threshold-noise density and g_j(z) = Π_{i<j} P(q_i + ν_i < T + z). For an
output "first positive at j", P_j = ∫∫ p(z) g_j(z) φ(v) 1[v >= T + z - q_j] dz dv. On a
neighbour, |q_i' - q_i| <= Δ gives g'_j(z) >= g_j(z - Δ) and the positive answer's noise may
need 2Δ more, so with w = z - Δ

    P'_j >= ∫∫ p(w + Δ) φ(v + 2Δ) g_j(w) 1[v >= T + w - q_j] dw dv.

The map (x, y) -> x^α y^(1-α) is jointly convex and 1-homogeneous (α > 1), so by Jensen's
inequality on the measure g_j(w) 1[...] dw dv <= dw dv,

    P_j^α P'_j^(1-α) <= ∫ p(w)^α p(w+Δ)^(1-α) dw · ∫ φ(v)^α φ(v+2Δ)^(1-α) dv
                      = exp((α-1)(α/(2 s1²) + 2α/s2²)),

and the output "no positive among the k queries" has the bound exp((α-1) α/(2 s1²)). Summing
over the k + 1 outputs,

    ε_1(α) = α/(2 s1²) + ln(1 + k·exp((α-1)·2α/s2²)) / (α - 1),                          (1)

which is at most α/(2 s1²) + 2α/s2² + ln(k+1)/(α-1): the form of Theorem 8 (whose threshold
term, as implemented in autodp's ``RDP_gaussian_svt_c1``, is α/s1²; the shift argument above
gives α/(2 s1²), the value the ABCDP authors' ``gaussian_approx_dp.py`` uses too
(with the same ln(k+1)). ``resample=True`` runs c rounds
(threshold redrawn after each positive answer), each over at most k queries; RDP composes
adaptively (Mironov 2017, Prop. 1): ε(α) = c·ε_1(α). With one threshold for all c positives
the same argument over the outputs "set S of positive answers, |S| <= c" shifts Z once and the
noise of each positive answer by 2Δ:

    ε(α) = α/(2 s1²) + ln Σ_{i=0}^{c} C(k, i)·exp((α-1)·2αi/s2²) / (α - 1).              (2)

The test ``tests/test_gaussian_svt.py`` checks (1) and (2) against the exact Rényi divergence
of worst-case neighbours (quadrature) and that dropping the ln-term fails that check.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from ..errors import InvalidPrivacyParameterError
from .events import GaussianSparseVectorEvent

__all__ = ["gaussian_svt_rdp", "noise_ratio"]


def gaussian_svt_rdp(event: GaussianSparseVectorEvent, orders: np.ndarray) -> np.ndarray:
    """The Rényi curve ε(α) of ``event`` at ``orders`` (all > 1): equation (1) or (2) above."""
    a = np.asarray(orders, dtype=np.float64)
    if np.any(a <= 1):
        raise InvalidPrivacyParameterError("Rényi orders must exceed 1.")
    s1, s2 = event.threshold_noise_multiplier, event.query_noise_multiplier
    k, c = event.max_queries, event.c
    thr = a / (2.0 * s1**2)
    pos = (a - 1.0) * 2.0 * a / s2**2  # log of the per-positive factor, one value per order
    if event.resample:
        log_sum = np.logaddexp(0.0, math.log(k) + pos)
        return c * (thr + log_sum / (a - 1.0))
    i = np.arange(c + 1, dtype=np.float64)
    log_binom = gammaln(k + 1.0) - gammaln(i + 1.0) - gammaln(k - i + 1.0)
    log_sum = logsumexp(log_binom[None, :] + pos[:, None] * i[None, :], axis=1)
    return thr + log_sum / (a - 1.0)


def noise_ratio(c: int, resample: bool) -> float:
    """σ2/σ1 that minimises σ1² + σ2² (the variance of ν - Z) at a fixed Rényi coefficient.

    The α-linear part of (2) is α(1/(2 s1²) + 2c/s2²); minimising s1² + s2² under it gives
    s2²/s1² = 2√c (one threshold) or 2 (resample, per round).
    """
    return math.sqrt(2.0) if resample else math.sqrt(2.0 * math.sqrt(c))
