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

Two code paths draw the same distribution; the public samplers validate the parameters and pick
one:

* the scalar path (pure Python integers; ~5-30 µs per draw; any rational parameter): every
  probability is an integer comparison ``randbelow(n) < k``;
* the vectorised path (the same algorithms with boolean masks in lock-step over many proposals
  on uint64 words; rejected entries are redrawn), used for large ``size`` when the parameter's
  numerator and denominator are small enough for 64-bit arithmetic. Uniforms below ``n`` come
  from 64-bit words by rejection; :func:`uniform_below` is its public, validated form (minibatch
  indices: :mod:`dpinfer.privacy.subsampling`).

The floating-point log-pmfs and CDF, for tests and likelihoods, are in
:mod:`dpinfer.privacy.discrete_pmf`.
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Callable
from fractions import Fraction
from math import isqrt
from typing import Any

import numpy as np

from ..errors import InvalidPrivacyParameterError
from .rng import PrivacyRNG, as_privacy_rng

__all__ = [
    "bernoulli_exp",
    "uniform_below",
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


# ---- the scalar path (CKS Algorithms 1-3 on Python integers) ------------------------------------

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


# ---- the vectorised path (the same algorithms in lock-step on uint64 arrays) ----------------------

#: Numerators / denominators up to this bound keep the vectorised int64 arithmetic overflow-free.
_VEC_INT_MAX = 2**62
_INT64_MAX = 2**63 - 1
#: In the vectorised discrete Gaussian, |a| = ||Y|·q·t - p| must stay below this for a² to fit in
#: uint64; entries beyond it are finished with Python integers (exactly).
_GAUSS_A_LIMIT = 2**32


def _uniform_below_vec(n: int, m: int, rng: PrivacyRNG) -> np.ndarray:
    """``m`` i.i.d. uniform integers in {0..n-1} (uint64), 1 <= n <= 2**63, by rejection.

    With b = bit length of n-1, each 64-bit word w gives ``w >> (64 - b)``, uniform on
    {0..2**b - 1}; it is accepted when < n (probability > 1/2) and rejected entries are redrawn.
    """
    if n == 1 or m == 0:
        return np.zeros(m, dtype=np.uint64)
    shift = np.uint64(64 - (n - 1).bit_length())
    nn = np.uint64(n)
    out = np.asarray(rng.random_uint64(m)) >> shift
    bad = np.flatnonzero(out >= nn)
    while bad.size:
        redraw = np.asarray(rng.random_uint64(bad.size)) >> shift
        out[bad] = redraw
        bad = bad[redraw >= nn]
    return out


def uniform_below(n: int, size: int, rng: PrivacyRNG) -> np.ndarray:
    """``size`` i.i.d. uniform integers in {0, ..., n-1} (``uint64``), exact, from a PrivacyRNG.

    The public entry point of the rejection sampler :func:`_uniform_below_vec` (the same draws
    and the same random words consumed): each 64-bit word w gives ``w >> (64 - b)`` with b the bit
    length of n-1, accepted when below n, so every value has probability exactly 1/n.

    Parameters
    ----------
    n
        The number of values, 1 <= n <= 2**63.
    size
        How many draws (>= 0).
    rng
        The :class:`~dpinfer.privacy.rng.PrivacyRNG` the words are read from.

    Raises
    ------
    ValueError
        ``n`` or ``size`` out of range.
    TypeError
        ``rng`` is not a PrivacyRNG (a seed or a numpy Generator never draws secret indices).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= int(n) <= 2**63:
        raise ValueError(f"uniform_below needs an integer 1 <= n <= 2**63, got {n!r}.")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or int(size) < 0:
        raise ValueError(f"uniform_below needs an integer size >= 0, got {size!r}.")
    if not isinstance(rng, PrivacyRNG):
        raise TypeError(f"uniform_below draws from a PrivacyRNG, got {type(rng).__name__}.")
    return _uniform_below_vec(int(n), int(size), rng)


def _random_bits_vec(m: int, rng: PrivacyRNG) -> np.ndarray:
    """``m`` i.i.d. fair bits (bool), 64 per random word."""
    if m == 0:
        return np.zeros(0, dtype=bool)
    words = np.ascontiguousarray(rng.random_uint64((m + 63) // 64), dtype=np.uint64)
    return np.unpackbits(words.view(np.uint8))[:m].astype(bool)


def _bern_inv_vec(k: int, m: int, rng: PrivacyRNG) -> np.ndarray:
    """``m`` i.i.d. Bernoulli(1/k) draws."""
    if k == 1:
        return np.ones(m, dtype=bool)
    if k == 2:
        return _random_bits_vec(m, rng)
    return _uniform_below_vec(k, m, rng) == 0


def _bern_exp1_vec(m: int, rng: PrivacyRNG) -> np.ndarray:
    """``m`` i.i.d. Bernoulli(exp(-1)) draws (CKS Algorithm 1 with γ = 1, in lock-step over K)."""
    res = np.empty(m, dtype=bool)
    active = np.arange(m)
    k = 2  # A <- Bernoulli(γ/1) = 1 always
    while active.size:
        a = _bern_inv_vec(k, active.size, rng)
        res[active[~a]] = k % 2 == 1
        active = active[a]
        k += 1
    return res


def _bern_exp_le1_vec(num: np.ndarray, den: int, rng: PrivacyRNG) -> np.ndarray:
    """Bernoulli(exp(-num_i/den)) for a uint64 array 0 <= num_i <= den <= 2**63 (CKS Alg. 1, γ <= 1).

    All entries still running share the same K, so A <- Bernoulli(num_i/(den·K)) is one vector
    draw: ``U < num_i`` with U uniform below den·K, or, when den·K > 2**63, the product of
    independent Bernoulli(num_i/den) and Bernoulli(1/K) draws (same probability).
    """
    m = num.size
    res = np.empty(m, dtype=bool)
    active = np.arange(m)
    k = 1
    while active.size:
        nk = den * k
        if nk <= 2**63:
            a = _uniform_below_vec(nk, active.size, rng) < num[active]
        else:
            a = (_uniform_below_vec(den, active.size, rng) < num[active]) & _bern_inv_vec(k, active.size, rng)
        res[active[~a]] = k % 2 == 1
        active = active[a]
        k += 1
    return res


def _bern_exp_vec(num: np.ndarray, den: int, rng: PrivacyRNG) -> np.ndarray:
    """Bernoulli(exp(-num_i/den)) for a uint64 array num_i >= 0 and 1 <= den < 2**63 (CKS Alg. 1).

    ⌊γ_i⌋ Bernoulli(exp(-1)) draws (in lock-step; an entry stops at its first failure or once it
    has had ⌊γ_i⌋ successes), then Bernoulli(exp(-(num_i mod den)/den)) for the survivors.
    """
    den_u = np.uint64(den)
    g = num // den_u
    r = num % den_u
    res = np.ones(num.size, dtype=bool)
    alive = np.flatnonzero(g > 0)
    count = 0
    while alive.size:
        ok = _bern_exp1_vec(alive.size, rng)
        res[alive[~ok]] = False
        alive = alive[ok]
        count += 1
        alive = alive[g[alive] > np.uint64(count)]
    idx = np.flatnonzero(res)
    if idx.size:
        res[idx] = _bern_exp_le1_vec(r[idx], den, rng)
    return res


def _laplace_vectorisable(t: int, s: int) -> bool:
    """Whether scale t/s can use the vectorised path (no int64 overflow in CKS Algorithm 2)."""
    return 1 <= t <= _VEC_INT_MAX and 1 <= s <= _VEC_INT_MAX


def _fill(n: int, one_pass: Callable[[int], np.ndarray]) -> np.ndarray:
    """``n`` i.i.d. draws from a rejection sampler run in batches.

    ``one_pass(m)`` runs ``m`` independent proposals and returns the accepted values in proposal
    order. Each accepted value has the target law independently of which proposals were
    accepted, so the accepted values taken in order are i.i.d. draws. Batches after the first
    are sized from the acceptance rate observed so far (integer arithmetic; the size of a batch
    does not affect the law of the values), so that almost always two batches suffice.
    """
    out = np.empty(n, dtype=np.int64)
    filled = drawn = accepted = 0
    while filled < n:
        need = n - filled
        if drawn == 0:
            m = need
        elif accepted == 0:
            m = 4 * drawn
        else:
            m = -(-need * drawn // accepted)  # expected number of proposals needed
            m += m // 4 + 16
        vals = one_pass(m)
        drawn += m
        accepted += vals.size
        take = min(vals.size, need)
        out[filled : filled + take] = vals[:take]
        filled += take
    return out


def _laplace_pass(t: int, s: int, m: int, rng: PrivacyRNG) -> np.ndarray:
    """``m`` independent proposals of CKS Algorithm 2 (scale t/s), run in lock-step with masks.

    Returns the accepted draws, in proposal order (see :func:`_laplace_one` for the steps).
    """
    vmax = (_INT64_MAX - t) // t  # u + t·v <= 2**63 - 1 whenever v <= vmax
    u = _uniform_below_vec(t, m, rng)
    u = u[_bern_exp_le1_vec(u, t, rng)]  # D ~ Bernoulli(exp(-U/t)); restart if D = 0
    k = u.size
    # V: number of Bernoulli(exp(-1)) successes before the first failure
    v = np.zeros(k, dtype=np.int64)
    alive = np.arange(k)
    while alive.size:
        alive = alive[_bern_exp1_vec(alive.size, rng)]
        v[alive] += 1
    y = np.empty(k, dtype=np.int64)
    small = v <= vmax
    y[small] = (u[small].astype(np.int64) + np.int64(t) * v[small]) // np.int64(s)
    for i in np.flatnonzero(~small):  # X = U + t·V would overflow int64: Python integers
        yi = (int(u[i]) + t * int(v[i])) // s
        if yi > _INT64_MAX:  # pragma: no cover - needs V > 2**11 scales, probability exp(-2048)
            raise OverflowError("a discrete Laplace draw does not fit in int64; use a smaller scale.")
        y[i] = yi
    b = _random_bits_vec(k, rng)
    accept = ~(b & (y == 0))  # restart if B = 1 and Y = 0
    return np.where(b, -y, y)[accept]


def _laplace_vector(t: int, s: int, n: int, rng: PrivacyRNG) -> np.ndarray:
    """``n`` discrete Laplace draws with scale t/s: CKS Algorithm 2 vectorised with masks."""
    if not _laplace_vectorisable(t, s):  # pragma: no cover - guarded by callers
        raise ValueError("scale too large for the vectorised path")
    return _fill(n, lambda m: _laplace_pass(t, s, m, rng))


def _gaussian_params(p: int, q: int) -> tuple[int, int, int]:
    """(t, q·t, 2·p·q·t²) for σ² = p/q, with t = ⌊σ⌋ + 1 = isqrt(⌊p/q⌋) + 1."""
    t = _gaussian_t(p, q)
    return t, q * t, 2 * p * q * t * t


def _gaussian_vectorisable(p: int, q: int) -> bool:
    """Whether σ² = p/q can use the vectorised path (the denominator 2pqt² of γ below 2**63)."""
    if p > _VEC_INT_MAX or q > _VEC_INT_MAX:
        return False
    _, qt, dn = _gaussian_params(p, q)
    return dn < 2**63 and qt <= _VEC_INT_MAX


def _gauss_accept_vec(absy: np.ndarray, p: int, q: int, t: int, rng: PrivacyRNG) -> np.ndarray:
    """Acceptance step of CKS Algorithm 3 for an int64 array of |Y|.

    C ~ Bernoulli(exp(-γ)), γ = a²/(2pqt²) with a = |Y|·q·t - p. a² is computed in uint64 where
    |a| < 2**32; other entries (far tails) are decided with Python integers, exactly.
    """
    _, qt, dn = _gaussian_params(p, q)
    lo_y = max(0, -((_GAUSS_A_LIMIT - 1 - p) // qt))  # ceil((p - LIMIT + 1)/qt)
    hi_y = (p + _GAUSS_A_LIMIT - 1) // qt
    safe = (absy >= lo_y) & (absy <= hi_y)
    res = np.empty(absy.size, dtype=bool)
    idx = np.flatnonzero(safe)
    if idx.size:
        a = absy[idx] * np.int64(qt) - np.int64(p)
        ua = np.abs(a).astype(np.uint64)
        res[idx] = _bern_exp_vec(ua * ua, dn, rng)
    for i in np.flatnonzero(~safe):
        res[i] = _gauss_accept_scalar(int(absy[i]), p, q, t, rng)
    return res


def _gaussian_vector(p: int, q: int, n: int, rng: PrivacyRNG) -> np.ndarray:
    """``n`` discrete Gaussian draws with σ² = p/q: CKS Algorithm 3 vectorised with masks.

    Proposals Y ~ discrete Laplace(t), t = ⌊σ⌋ + 1, drawn by :func:`_laplace_vector`; each is
    accepted with probability exp(-(|Y| - σ²/t)²/(2σ²)); rejected entries are redrawn.
    """
    if not _gaussian_vectorisable(p, q):  # pragma: no cover - guarded by callers
        raise ValueError("sigma2 too large for the vectorised path")
    t, _, _ = _gaussian_params(p, q)

    def one_pass(m: int) -> np.ndarray:
        y = _laplace_vector(t, 1, m, rng)
        return y[_gauss_accept_vec(np.abs(y), p, q, t, rng)]

    return _fill(n, one_pass)

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
