"""The vectorised path of the exact discrete samplers: CKS Algorithms 1-3 on uint64 arrays.

The algorithms of :mod:`dpinfer.privacy.discrete_scalar` (Canonne, Kamath & Steinke 2020,
Algorithms 1-3) run with boolean masks in lock-step over many proposals; rejected entries are
redrawn. Uniforms below ``n`` come from 64-bit words by rejection (``w >> shift`` accepted when
``< n``), so the output law is still exactly the target law. All arithmetic is on ``uint64`` /
``int64`` arrays whose bounds are checked beforehand (:func:`_laplace_vectorisable`,
:func:`_gaussian_vectorisable`); the rare entries whose intermediate values would not fit in 64
bits are finished exactly with Python integers. :func:`uniform_below` is the public,
validated form of the uniform sampler (minibatch indices: :mod:`dpinfer.privacy.subsampling`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .discrete_scalar import _gauss_accept_scalar, _gaussian_t
from .rng import PrivacyRNG

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
