"""The scalar path of the exact discrete samplers: CKS Algorithms 1-3 on Python integers.

Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy" (**CKS**):

* Algorithm 1, Bernoulli(exp(-γ)) for rational γ >= 0 (:func:`_bern_exp_le1`, :func:`_bern_exp_int`),
* Algorithm 2, the discrete Laplace with scale t/s (:func:`_laplace_one`),
* Algorithm 3, the discrete Gaussian with σ² = p/q (:func:`_gaussian_one`).

Every probability is an integer comparison ``randbelow(n) < k`` and the only randomness consumed
is integer draws from a :class:`~dpinfer.privacy.rng.PrivacyRNG`, so each draw has exactly the
target law (~5-30 µs per draw, any rational parameter). :mod:`dpinfer.privacy.discrete_vector`
runs the same algorithms in lock-step on uint64 arrays; :mod:`dpinfer.privacy.discrete` chooses.
"""

from __future__ import annotations

from math import isqrt

import numpy as np

from .rng import PrivacyRNG


def _bern_exp_le1(num: int, den: int, rng: PrivacyRNG) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (CKS Algorithm 1, case 0 <= γ <= 1).

    K <- 1; repeat A <- Bernoulli(γ/K), K <- K+1 while A = 1; return [final K is odd].
    Bernoulli(num/(den·K)) is ``randbelow(den·K) < num``.
    """
    k = 1
    if num == den:  # Bernoulli(γ/1) = Bernoulli(1): no draw needed
        k = 2
    while rng.randbelow(den * k) < num:
        k += 1
    return k % 2 == 1


def _bern_exp_int(num: int, den: int, rng: PrivacyRNG) -> bool:
    """Bernoulli(exp(-num/den)) for any rational γ = num/den >= 0 (CKS Algorithm 1).

    For γ > 1: ⌊γ⌋ independent Bernoulli(exp(-1)) draws, returning 0 at the first failure, then
    Bernoulli(exp(-(γ - ⌊γ⌋))).
    """
    g, r = divmod(num, den)
    for _ in range(g):
        if not _bern_exp_le1(1, 1, rng):
            return False
    return _bern_exp_le1(r, den, rng)


def _laplace_one(t: int, s: int, rng: PrivacyRNG) -> int:
    """One discrete Laplace draw with scale t/s (CKS Algorithm 2).

    repeat: U ~ Uniform{0..t-1}; D ~ Bernoulli(exp(-U/t)), restart if D = 0;
    V <- number of successes of Bernoulli(exp(-1)) before the first failure; X <- U + t·V;
    Y <- ⌊X/s⌋; B ~ Bernoulli(1/2), restart if B = 1 and Y = 0; return (1 - 2B)·Y.
    """
    while True:
        u = rng.randbelow(t)
        if not _bern_exp_le1(u, t, rng):
            continue
        v = 0
        while _bern_exp_le1(1, 1, rng):
            v += 1
        y = (u + t * v) // s
        b = rng.randbits(1)
        if b and y == 0:
            continue
        return -y if b else y


def _gauss_accept_scalar(y: int, p: int, q: int, t: int, rng: PrivacyRNG) -> bool:
    """The acceptance step of CKS Algorithm 3 for one proposal ``y``.

    C ~ Bernoulli(exp(-(|y| - σ²/t)² / (2σ²))) with σ² = p/q, i.e. γ = (|y|·q·t - p)² / (2·p·q·t²).
    """
    a = abs(y) * q * t - p
    return _bern_exp_int(a * a, 2 * p * q * t * t, rng)


def _gaussian_one(p: int, q: int, t: int, rng: PrivacyRNG) -> int:
    """One discrete Gaussian draw with σ² = p/q (CKS Algorithm 3, t = ⌊σ⌋ + 1)."""
    while True:
        y = _laplace_one(t, 1, rng)
        if _gauss_accept_scalar(y, p, q, t, rng):
            return y


def _to_int64(values: list[int]) -> np.ndarray:
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:  # pragma: no cover - probability below exp(-2000)
        raise OverflowError("a discrete noise draw does not fit in int64; use a smaller scale.") from None


def _laplace_scalar(t: int, s: int, n: int, rng: PrivacyRNG) -> np.ndarray:
    return _to_int64([_laplace_one(t, s, rng) for _ in range(n)])


def _gaussian_t(p: int, q: int) -> int:
    """t = ⌊σ⌋ + 1 = isqrt(⌊p/q⌋) + 1 for σ² = p/q (exact: ⌊sqrt(p/q)⌋ = isqrt(⌊p/q⌋))."""
    return isqrt(p // q) + 1


def _gaussian_scalar(p: int, q: int, n: int, rng: PrivacyRNG) -> np.ndarray:
    t = _gaussian_t(p, q)
    return _to_int64([_gaussian_one(p, q, t, rng) for _ in range(n)])
