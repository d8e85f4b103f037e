"""Exact samplers of the discrete Laplace and discrete Gaussian distributions.

Why
---
Floating-point Laplace or Gaussian noise leaks the confidential input through the pattern of
representable values it produces (Mironov 2012, "On significance of the least significant bits
for differential privacy"). Released values are therefore put on a power-of-two grid and the
noise is *integer* noise drawn by the exact samplers of

    C. L. Canonne, G. Kamath, T. Steinke (2020), "The Discrete Gaussian for Differential
    Privacy", NeurIPS 2020, arXiv:2004.00010 -- referred to as **CKS** below.

* :func:`bernoulli_exp` -- Bernoulli(exp(-γ)) for rational γ >= 0 (CKS Algorithm 1),
* :func:`sample_discrete_laplace` -- P(Z = z) ∝ exp(-|z|/scale), rational scale (CKS Algorithm 2),
* :func:`sample_discrete_gaussian` -- P(Z = z) ∝ exp(-z²/(2σ²)), rational σ² (CKS Algorithm 3),
* :func:`sample_binomial` -- Binomial(n, p) for rational p, from n exact Bernoulli(p) draws.

Exactness
---------
The sampling path contains no floating-point operation: parameters are held as
:class:`fractions.Fraction` (a float parameter is converted *exactly* by ``Fraction(x)``),
every probability is compared through integer arithmetic, and the only randomness consumed is
integer draws from a :class:`~dpinfer.privacy.rng.PrivacyRNG` (``randbelow``, ``randbits``,
``random_uint64``). The output distribution is therefore exactly the target distribution, given
uniform integer draws.

Two code paths draw the same distribution; this module validates the parameters and picks one:

* the scalar path, :mod:`dpinfer.privacy.discrete_scalar` (pure Python integers; ~5-30 µs per
  draw; any rational parameter), and
* the vectorised path, :mod:`dpinfer.privacy.discrete_vector` (the same algorithms in lock-step
  on uint64 words, for large ``size``), used when the parameter's numerator and denominator are
  small enough for 64-bit arithmetic.

The floating-point log-pmfs and CDF, for tests and likelihoods, are in
:mod:`dpinfer.privacy.discrete_pmf` (importing them from here still works for one release, with a
:class:`DeprecationWarning`).
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import InvalidPrivacyParameterError
from .discrete_scalar import _bern_exp_int, _gaussian_scalar, _laplace_scalar
from .discrete_vector import (
    _gaussian_vector,
    _gaussian_vectorisable,
    _laplace_vector,
    _laplace_vectorisable,
    _uniform_below_vec,
)
from .rng import PrivacyRNG, as_privacy_rng

__all__ = [
    "bernoulli_exp",
    "sample_binomial",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]

#: Largest discrete Laplace scale accepted: draws must fit in int64 (a draw beyond 2**63 would need
#: more than 2**11 scales, probability exp(-2048)).
MAX_LAPLACE_SCALE = 2**52
#: Largest discrete Gaussian variance accepted (sigma <= 2**50), for the same reason.
MAX_GAUSSIAN_SIGMA2 = 2**100

#: Below these many draws the scalar path is used: the vectorised path costs ~0.5-3 ms per call
#: whatever the size (lock-step loops of small numpy calls), the scalar one ~15-30 µs per draw
#: with the OS CSPRNG. Measured crossovers: ~64 (Laplace), ~160 (Gaussian).
_LAPLACE_VECTOR_MIN_SIZE = 64
_GAUSSIAN_VECTOR_MIN_SIZE = 160

#: Public names that moved to :mod:`dpinfer.privacy.discrete_pmf` (aliases for one release).


# ----------------------------------------------------------------------------------------------
# Parameter validation and the choice of code path
# ----------------------------------------------------------------------------------------------
def _as_fraction(value: Any, name: str, *, allow_zero: bool = False) -> Fraction:
    """``value`` as an exact :class:`Fraction`, refusing bool, str, NaN, inf and non-positive values."""
    hint = (
        f"Pass {name} as an int, a fractions.Fraction (e.g. Fraction(3, 10)) or a finite float "
        "(converted exactly)."
    )
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)):
        raise InvalidPrivacyParameterError(f"{name} must be a rational number, got {value!r}. {hint}")
    if isinstance(value, Fraction):
        frac = value
    elif isinstance(value, (int, np.integer)):
        frac = Fraction(int(value))
    elif isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f):
            raise InvalidPrivacyParameterError(f"{name} must be finite, got {value!r}. {hint}")
        frac = Fraction(f)
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise InvalidPrivacyParameterError(f"{name} must be finite, got {value!r}. {hint}")
        frac = Fraction(value)
    elif isinstance(value, numbers.Rational):
        frac = Fraction(int(value.numerator), int(value.denominator))
    else:
        raise InvalidPrivacyParameterError(
            f"{name} must be a rational number, got {type(value).__name__} {value!r}. {hint}"
        )
    if frac < 0 or (frac == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidPrivacyParameterError(f"{name} must be {bound}, got {value!r}. {hint}")
    return frac


def _at_most(frac: Fraction, value: Any, name: str, maximum: int, what: str) -> Fraction:
    """``frac`` after checking it is at most ``maximum`` (a power of two), so draws fit in int64."""
    if frac > maximum:
        raise InvalidPrivacyParameterError(
            f"{name} must be at most 2**{maximum.bit_length() - 1} so that the integer noise fits in "
            f"int64, got {value!r}. Use a coarser release grid (a larger grid step shrinks {what} in "
            "grid units)."
        )
    return frac


def _shape(size: Any) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (bool, np.bool_)):
        raise ValueError(f"size must be a non-negative int or a tuple of them, got {size!r}.")
    if isinstance(size, (int, np.integer)):
        shape: tuple[int, ...] = (int(size),)
    else:
        try:
            shape = tuple(int(s) for s in size)
        except TypeError:
            raise ValueError(f"size must be a non-negative int or a tuple of them, got {size!r}.") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"size must be a non-negative int or a tuple of them, got {size!r}.")
    return shape


def _draw(
    param: Fraction,
    size: Any,
    rng: PrivacyRNG | None,
    min_vector_size: int,
    vectorisable: Callable[[int, int], bool],
    vector: Callable[[int, int, int, PrivacyRNG], np.ndarray],
    scalar: Callable[[int, int, int, PrivacyRNG], np.ndarray],
) -> np.ndarray:
    """Draws of shape ``size`` with the parameter a/b = ``param``, by the vectorised path when
    there are at least ``min_vector_size`` of them and ``vectorisable(a, b)``, else the scalar one."""
    shape = _shape(size)
    rng = as_privacy_rng(rng)
    n = math.prod(shape)
    a, b = param.numerator, param.denominator
    path = vector if n >= min_vector_size and vectorisable(a, b) else scalar
    return path(a, b, n, rng).reshape(shape)


# ----------------------------------------------------------------------------------------------
# Public samplers
# ----------------------------------------------------------------------------------------------
def bernoulli_exp(gamma: Fraction | int, rng: PrivacyRNG | None) -> bool:
    """Draw Bernoulli(exp(-gamma)) exactly, for rational ``gamma >= 0``.

    Implements Algorithm 1 of Canonne, Kamath & Steinke (2020). For 0 <= γ <= 1: set K = 1 and
    repeat A ~ Bernoulli(γ/K), K <- K + 1 until A = 0; return 1 iff the final K is odd, since
    P(K odd) = Σ_k (-γ)^k / k! = exp(-γ). For γ > 1: draw ⌊γ⌋ independent Bernoulli(exp(-1))
    and return 0 at the first failure, otherwise return Bernoulli(exp(-(γ - ⌊γ⌋))).

    Parameters
    ----------
    gamma : Fraction or int
        The rational exponent, >= 0. A float is converted exactly (``Fraction(gamma)``).
    rng : PrivacyRNG or None
        Source of the integer draws (``randbelow`` only); ``None`` reads the OS CSPRNG.

    Returns
    -------
    bool
        True with probability exactly exp(-gamma).

    Raises
    ------
    InvalidPrivacyParameterError
        If ``gamma`` is negative, NaN, infinite, a bool, a string or not a number.
    """
    g = _as_fraction(gamma, "gamma", allow_zero=True)
    rng = as_privacy_rng(rng)
    return _bern_exp_int(g.numerator, g.denominator, rng)


def sample_discrete_laplace(
    scale: Fraction | int, size: int | tuple[int, ...] | None, rng: PrivacyRNG | None
) -> np.ndarray:
    """Draw i.i.d. discrete Laplace noise, P(Z = z) = (1-a)/(1+a) · a^|z|, a = exp(-1/scale).

    Implements Algorithm 2 of Canonne, Kamath & Steinke (2020) for scale = t/s (t, s positive
    integers): U ~ Uniform{0, ..., t-1}, accepted with probability exp(-U/t) (Algorithm 1);
    V ~ number of successes of Bernoulli(exp(-1)) before the first failure; X = U + t·V is then
    geometric with P(X = x) ∝ exp(-x/t); Y = ⌊X/s⌋ is geometric with ratio exp(-s/t); a random
    sign B is attached and (B = 1, Y = 0) is rejected so that zero is not counted twice.

    For ``size >= 64`` and a scale whose numerator and denominator are at most 2**62, the
    algorithm runs vectorised on uint64 words (still exact, see the module docstring);
    otherwise one draw at a time with Python integers.

    Parameters
    ----------
    scale : Fraction or int
        The scale t/s > 0 (at most 2**52). A float is converted exactly (``Fraction(scale)``).
    size : int, tuple of int, or None
        Output shape; ``None`` gives a 0-d array.
    rng : PrivacyRNG or None
        Source of randomness (``randbelow``, ``randbits``, ``random_uint64`` only); ``None``
        reads the OS CSPRNG. Numpy generators and seeds are refused.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``size``.

    Raises
    ------
    InvalidPrivacyParameterError
        If ``scale`` is not a positive finite rational (NaN, inf, <= 0, bool, str) or exceeds 2**52.
    """
    sc = _at_most(_as_fraction(scale, "scale"), scale, "scale", MAX_LAPLACE_SCALE, "the scale")
    return _draw(
        sc, size, rng, _LAPLACE_VECTOR_MIN_SIZE, _laplace_vectorisable, _laplace_vector, _laplace_scalar
    )


def sample_discrete_gaussian(
    sigma2: Fraction | int, size: int | tuple[int, ...] | None, rng: PrivacyRNG | None
) -> np.ndarray:
    """Draw i.i.d. discrete Gaussian noise, P(Z = z) ∝ exp(-z²/(2·sigma2)).

    Implements Algorithm 3 of Canonne, Kamath & Steinke (2020): with t = ⌊σ⌋ + 1, draw
    Y ~ discrete Laplace(t) (Algorithm 2) and accept it with probability
    exp(-(|Y| - σ²/t)²/(2σ²)) (Algorithm 1); otherwise repeat. With σ² = p/q the exponent is the
    rational (|Y|·q·t - p)² / (2·p·q·t²); ⌊σ⌋ = isqrt(⌊p/q⌋) is exact.

    For ``size >= 160`` and σ² = p/q with 2·p·q·t² < 2**63 the algorithm runs vectorised on
    uint64 words (still exact); otherwise one draw at a time with Python integers.

    Parameters
    ----------
    sigma2 : Fraction or int
        The variance parameter σ² > 0 (at most 2**100). A float is converted exactly.
    size : int, tuple of int, or None
        Output shape; ``None`` gives a 0-d array.
    rng : PrivacyRNG or None
        Source of randomness (integer draws only); ``None`` reads the OS CSPRNG.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``size``.

    Raises
    ------
    InvalidPrivacyParameterError
        If ``sigma2`` is not a positive finite rational (NaN, inf, <= 0, bool, str) or exceeds 2**100.
    """
    s2 = _at_most(_as_fraction(sigma2, "sigma2"), sigma2, "sigma2", MAX_GAUSSIAN_SIGMA2, "sigma")
    return _draw(
        s2, size, rng, _GAUSSIAN_VECTOR_MIN_SIZE, _gaussian_vectorisable, _gaussian_vector, _gaussian_scalar
    )


def sample_binomial(n_trials: int, p: Fraction, rng: PrivacyRNG | None) -> int:
    """One exact Binomial(n_trials, p) draw for a rational ``p`` in [0, 1].

    The sum of ``n_trials`` exact Bernoulli(p) = [U < num] draws with ``U`` uniform on
    {0, ..., den − 1} (``p = num/den``): no floating point, so every count in [0, n_trials] has
    exactly its binomial probability (for releases whose privacy proof bounds the ratio of
    binomial pmfs, e.g. Xiong et al. 2025, Prop. 4).
    """
    rng = as_privacy_rng(rng)
    n = int(n_trials)
    if n < 0:
        raise InvalidPrivacyParameterError(f"n_trials must be >= 0, got {n_trials!r}.")
    p = Fraction(p)
    if not 0 <= p <= 1:
        raise InvalidPrivacyParameterError(f"p must lie in [0, 1], got {p}.")
    num, den = p.numerator, p.denominator
    if den <= 2**63:
        return int(np.count_nonzero(_uniform_below_vec(den, n, rng) < np.uint64(num)))
    return sum(1 for _ in range(n) if rng.randbelow(den) < num)
