"""The exact binomial inverse CDF behind the SIR release mechanism (:func:`binom_ppf`).

``F⁻¹_{Bin(n, p)}(u)`` is computed in compiled code (numba, parallel over a batch), exact in both
tails: terms come from Loader's saddle-point log-pmf and are summed from the far tail inwards, so
the answer is the exact-arithmetic quantile unless ``u`` lies within ~1e-13 relative of a CDF
value. :class:`~dpinfer.models.shipped.sir.BinomialTrajectoryMechanism` uses it as its map ``G(s, u)``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...errors import InvalidDataError

# Binomial log-pmf by Loader's saddle-point formula (Loader 2000, "Fast and accurate computation of
# binomial probabilities"; R's dbinom): accurate to a few ulps of |log pmf|, unlike differences of
# lgamma(n + 1) ~ n·log n. _STIRLERR: the Stirling error at n = 0..15 (n = 0 unused).
_STIRLERR = np.array(
    [
        0.0,
        0.08106146679532726,
        0.0413406959554093,
        0.02767792568499834,
        0.020790672103765093,
        0.016644691189821193,
        0.013876128823070748,
        0.01189670994589177,
        0.010411265261972096,
        0.009255462182712733,
        0.00833056343336287,
        0.007573675487951841,
        0.00694284010720953,
        0.006408994188004207,
        0.0059513701127588475,
        0.005554733551962801,
    ]
)
_LN2 = math.log(2.0)
_LN_2PI = math.log(2.0 * math.pi)
# Tail mass below the first summed term, relative to the target scale: 2^-110 <= 2^-56 · u for every
# u >= 2^-54 (the smallest uniform); far below the rounding of the sums (~1e-14 relative).
_LOG_NEGLECT = -110.0 * math.log(2.0)
_S0, _S1, _S2, _S3, _S4 = 1.0 / 12.0, 1.0 / 360.0, 1.0 / 1260.0, 1.0 / 1680.0, 1.0 / 1188.0


@numba.njit(cache=True)
def _stirlerr(n):
    """log(n!) - [(n + ½)·log n - n + ½·log 2π] for integer-valued n >= 1."""
    if n <= 15.0:
        return _STIRLERR[int(n)]
    nn = n * n
    if n > 500.0:
        return (_S0 - _S1 / nn) / n
    if n > 80.0:
        return (_S0 - (_S1 - _S2 / nn) / nn) / n
    if n > 35.0:
        return (_S0 - (_S1 - (_S2 - _S3 / nn) / nn) / nn) / n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


@numba.njit(cache=True)
def _bd0(x, np_):
    """x·log(x/np) + np - x without cancellation (Loader 2000)."""
    if abs(x - np_) < 0.1 * (x + np_):
        v = (x - np_) / (x + np_)
        s = (x - np_) * v
        ej = 2.0 * x * v
        v = v * v
        for j in range(1, 1000):
            ej *= v
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
        return s
    return x * math.log(x / np_) + np_ - x


@numba.njit(cache=True)
def _binom_logpmf(k, n, p, q):
    """log P(Bin(n, p) = k) for 0 < p < 1, q = 1 - p; error a few ulps of |log P| (Loader's formula)."""
    if k == 0:
        return n * math.log1p(-p)
    if k == n:
        return n * math.log(p)
    x = float(k)
    nf = float(n)
    lc = _stirlerr(nf) - _stirlerr(x) - _stirlerr(nf - x) - _bd0(x, nf * p) - _bd0(nf - x, nf * q)
    return lc - 0.5 * (_LN_2PI + math.log(x) + math.log1p(-x / nf))


@numba.njit(cache=True)
def _tail_start(n, p, q, mirror, scale):
    """First index of a walk up the lower tail of W (W = X ~ Bin(n, p), or W = n - X if ``mirror``).

    Returns ``(j, t)``: P(W < j) <= 2^scale·exp(_LOG_NEGLECT) (zero when j = 0) and
    ``t = P(W = j)·2^-scale``. Depends on (n, p, mirror, scale) only, never on u.
    """
    nf = float(n)
    log_scale = scale * _LN2
    if mirror:
        s = q
        odds = q / p
    else:
        s = p
        odds = p / q
    mode = math.floor((nf + 1.0) * s)
    if mode > nf:
        mode = nf
    # normal-approximation guess at the cut-off; checked below with the exact geometric bound
    z = math.sqrt(-2.0 * (_LOG_NEGLECT + log_scale))
    g = math.floor(nf * s - z * math.sqrt(nf * p * q)) - 1.0
    if g < 0.0:
        g = 0.0
    if g > mode:
        g = mode
    j = int(g)
    im = int(mode)
    lt = _binom_logpmf(n - j if mirror else j, n, p, q) - log_scale
    while lt < _LOG_NEGLECT - 400.0 and j < im:  # far too far out: the term would underflow
        j += (im - j + 1) // 2
        lt = _binom_logpmf(n - j if mirror else j, n, p, q) - log_scale
    while lt > 700.0 and j > 0:  # rescaled tiny u only: the term would overflow
        j //= 2
        lt = _binom_logpmf(n - j if mirror else j, n, p, q) - log_scale
    t = math.exp(lt)
    tol = math.exp(_LOG_NEGLECT)
    # below the mode the ratio r = P(W = j-1)/P(W = j) decreases as j decreases (log-concavity), so
    # P(W < j) <= P(W = j)·r/(1 - r): walk out until that bound is negligible
    while j > 0:
        r = j / ((nf - j + 1.0) * odds)
        if t * r <= tol * (1.0 - r):
            break
        t *= r
        j -= 1
    if j == 0 and lt < 700.0:
        # P(W = 0) = p^n or q^n: a correctly rounded pow where the base is exact (q = 1 - p is
        # exact for p >= 1/2), in place of exp(n·log(...)) and its ~|log|·2^-53 relative error
        if mirror:
            w0 = math.pow(p, nf)
        elif p >= 0.5:
            w0 = math.pow(q, nf)
        else:
            w0 = 0.0
        if w0 > 1e-300:
            t = math.ldexp(w0, -scale)
    return j, t


@numba.njit(cache=True)
def _binom_ppf_scalar(u, n, p):
    """Smallest k with P(Bin(n, p) <= k) >= u, exact in both tails (see :func:`binom_ppf`)."""
    if n <= 0 or not p > 0.0 or not u > 0.0:
        return 0
    if p >= 1.0 or u >= 1.0:
        return n
    q = 1.0 - p
    nf = float(n)
    # seam a <= floor(n·p) <= median: F(a - 1) < 1/2 exactly (Kaas & Buhrman 1980), so the lower
    # tail decides k < a only for u <= 1/2 and the upper tail decides every k >= a
    x = nf * p
    a = int(math.floor(x))
    if a > 0 and x - a <= x * 4.0e-16:  # fl(n·p) may have rounded up onto an integer
        a -= 1
    if u <= 0.5:
        if a >= 1:
            scale = 0
            if u < 5.551115123125783e-17:  # below 2^-54: rescale by 2^(64 m) so nothing underflows
                e = math.frexp(u)[1] - 1  # u >= 2^e
                scale = -64 * ((-e - 54 + 63) // 64)
            uh = math.ldexp(u, -scale) if scale != 0 else u
            j, t = _tail_start(n, p, q, False, scale)
            if j <= a - 1:
                odds = p / q
                c = t  # P(X <= j), summed from the far tail inwards
                while True:
                    if c >= uh:
                        return j
                    if j >= a - 1:
                        break
                    t *= (nf - j) / (j + 1.0) * odds
                    j += 1
                    c += t
        w = 1.0 - u  # rounded by <= 2⁻⁵⁴, i.e. ~1e-16 relative to 1 - u >= 1/2
    else:
        w = 1.0 - u  # exact (Sterbenz)
    # smallest k >= a with P(X > k) <= w, i.e. largest j = n - 1 - k <= n - 1 - a with P(Y <= j) <= w
    # for Y = n - X ~ Bin(n, q), summing P(Y <= j) from the far tail inwards
    jmax = n - 1 - a
    j0, t = _tail_start(n, p, q, True, 0)
    if j0 - 1 >= jmax:
        return a
    j = j0 - 1
    g = 0.0
    odds = q / p
    while j < jmax:
        gn = g + t
        if gn > w:
            break
        g = gn
        j += 1
        t *= (nf - j) / (j + 1.0) * odds
    return n - 1 - j


@numba.njit(parallel=True, cache=True)
def _binom_ppf(u, n, p):
    flat_u = u.ravel()
    flat_p = p.ravel()
    out = np.empty(flat_u.shape[0], dtype=np.int64)
    for i in numba.prange(flat_u.shape[0]):
        out[i] = _binom_ppf_scalar(flat_u[i], n, flat_p[i])
    return out.reshape(u.shape)


def binom_ppf(u: np.ndarray, n: int, p: np.ndarray) -> np.ndarray:
    """Binomial inverse CDF, vectorised and compiled (``u`` and ``p`` broadcast).

    Returns the smallest ``k`` in ``[0, n]`` with ``P(Bin(n, p) <= k) >= u``, exact in both tails:

    * ``u <= 1/2``: ``P(X <= k)`` is summed from the far lower tail inwards (terms from Loader's
      saddle-point log-pmf, the first one where the mass below it is < 2⁻⁵⁶·u), so it carries a
      *relative* error of ~1e-14 whatever its size;
    * ``u > 1/2``: ``1 - u`` is exact in floating point (``u`` has at most 53 significant bits), and
      is compared with ``P(X > k)`` summed from the far upper tail inwards, so quantiles within
      2⁻⁵³ of 1 are as exact as those near 0.

    The answer is therefore ``scipy.stats.binom.ppf(u, n, p)`` computed in exact arithmetic, unless
    ``u`` (or ``1 - u``) lies within ~1e-13 relative of a CDF (survival) value; scipy itself can be
    off for ``u`` within a few 2⁻⁵³ of 1 (its ``isf(1 - u)`` is right there) and for subnormal
    ``u``. Every k the law gives mass is reachable, and there is no spurious atom at 0 or n: the
    result is n only if ``u > P(X <= n - 1)``, 0 only if ``u <= P(X = 0)``. It is non-decreasing in
    ``u`` by construction on ``[2⁻⁵⁴, 1]``: each ``k`` is decided by one fixed summation, the lower
    tail for ``k`` below a seam ``a <= floor(n·p) <= median`` and the upper tail from ``a`` up.
    Conventions: ``u <= 0`` gives 0 (scipy: -1), ``u >= 1`` gives n, ``p <= 0`` gives 0 and
    ``p >= 1`` gives n; NaN raises :class:`InvalidDataError`.
    """
    u, p = np.broadcast_arrays(np.asarray(u, dtype=np.float64), np.asarray(p, dtype=np.float64))
    if np.isnan(u).any() or np.isnan(p).any():
        raise InvalidDataError("binom_ppf: u and p must not be NaN.")
    # one compiled signature (1-d) for every shape: each further one is another ~1.5 s compile of
    # this parallel kernel at first use (three were compiled in the test suite: 1-, 2-, 3-d)
    flat = _binom_ppf(np.ascontiguousarray(u).reshape(-1), int(n), np.ascontiguousarray(p).reshape(-1))
    return flat.reshape(u.shape)
