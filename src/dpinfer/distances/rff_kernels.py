"""Numba kernels of the random-Fourier-feature MMD: fused projection, sin/cos and sums.

For a batch of data sets Y (B, M, d) and frequencies W (J, d) the kernels compute, per data set,
Σ_i cos(W y_i) and Σ_i sin(W y_i) without materialising the (M, J) projections
(:class:`~dpinfer.distances.mmd.RFFMMD` scales them into the mean embedding
μ(Y) = sqrt(2/D)/M · Σ_i [cos(W y_i), sin(W y_i)], D = 2J). Three float64 variants (a vectorised
trigonometric kernel, the same over threads, libm for large arguments) and one float32 variant,
plus :func:`rff_fixed_point_sums`, the exact path of the one private release (below).

Norm of the computed features (the premise of the sensitivity of a release)
----------------------------------------------------------------------------
Lemma. For every double x (±inf included; NaN is mapped to 0 by the release kernel), the pair
(ŝ, ĉ) returned by the float64 kernel ``_sincos`` satisfies ||(ŝ, ĉ)||₂ <= 1 + 27u, u = 2⁻⁵³,
hence <= 1 + :data:`SINCOS_NORM_EXCESS` = 1 + 2⁻⁴⁷.

Proof. (i) The reduced argument. After the clamp |x| <= 2⁴⁷. With T = fl(2/π), |T − 2/π| <= 2⁻⁵⁴,
fl(x·T) is within 2⁴⁷·2⁻⁵⁴ + u·2⁴⁶·⁴ < 0.018 of 2x/π; adding ½ rounds by at most ½ulp(2⁴⁶·⁴) =
2⁻⁷, and k = floor(·) is an integer with |k − 2x/π| <= 0.526, so |x − kπ/2| <= 0.827. The code
computes r = fl(fl(x − fl(k·H)) − fl(k·L)), H + L ≈ π/2 (H of 33 bits): fl(k·H) errs by at most
½ulp(2⁴⁸) = 2⁻⁶ (<= 2⁻⁵³|kH|, 0 for |k| < 2²⁰), |k·L| <= 2⁴⁶·⁴·6.1·10⁻¹¹ < 6·10³ so the other
two roundings and |H + L − π/2|·|k| add < 2·10⁻¹², whence |r| <= 0.827 + 2⁻⁶ + 10⁻¹¹ < 0.85 =: R.
Any such double r will do: the norm bound below does not need r to be the exact reduction.
(ii) The polynomials. z = fl(r²) = r²(1 + δ), |δ| <= u. ĉ is Horner's rule in z for the
degree-9 polynomial Q(z) = Σ_k C̃_k z^k, C̃_k = fl((−1)^k/(2k)!): the Horner bound
γ_{2n}·Σ_k|a_k||z|^k (Higham 2002, "Accuracy and Stability of Numerical Algorithms", §5.1) gives
|ĉ − Q(z)| <= γ₁₈ Σ_k |C̃_k| z^k <= γ₁₈(1 + u) cosh(R) <= 25u (γ_k = ku/(1 − ku));
|Q(z) − Q(r²)| <= u·r²·sinh(R)/(2R) <= 0.5u; rounding the coefficients costs
<= u(cosh R − 1) <= 0.4u; and the alternating Taylor tail is <= R²⁰/20! < 2·10⁻⁴u. So
|ĉ − cos r| <= 26u. ŝ = fl(r + fl(fl(r·z)·P̂)) with P̂ Horner's rule for the degree-7
polynomial P(z) = Σ_k S̃_{k+1} z^k: |r·z·P| <= sinh(R) − R < 0.106 and, as above,
|ŝ − sin r| <= (γ₂ + γ₁₄ + γ₂γ₁₄)·0.106 + u·|sin r| + 0.1u (the error of z) + 0.11u
(coefficients) + R¹⁹/19! <= 3u. The quadrant logic only swaps the pair and multiplies by ±1
(exact). Therefore ||(ŝ, ĉ)|| <= ||(sin r, cos r)|| + ||(ŝ − sin r, ĉ − cos r)||
<= 1 + √(26² + 3²)·u <= 1 + 27u. (A fused multiply-add, if the compiler emitted one, only
removes roundings: the bounds hold as stated.) ∎

The exact path of a release (:func:`rff_fixed_point_sums`)
---------------------------------------------------------
Whatever the distance's dtype, backend or device, the mean embedding that is *released* is
computed here: float64 projections, ``_sincos``, each feature rounded to the fixed-point grid
2⁻ᵇ (``np.rint(v·2^b)``: exact, |error| <= 2⁻⁽ᵇ⁺¹⁾) and summed in int64 arithmetic, *exactly*;
b = :func:`fixed_point_bits` (N) <= 62 − bitlength(N) so that no partial sum overflows
(|v·2^b| <= 2^b + 8, N terms: |Σ| < 2^(bitlength(N) + b + 1) <= 2⁶³). The rounded features are
themselves a feature map of pair norm <= ρ_N = 1 + 2⁻⁴⁷ + √2·2⁻⁽ᵇ⁺¹⁾ (:func:`fixed_point_feature_norm`),
and the only roundings left are the five of the final scaling (converting the integer sum,
2/D, √, /N, the product; :meth:`dpinfer.distances.mmd.RFFMMD.fixed_point_mean`). The sensitivity
these give is proved in :mod:`dpinfer.release.embedding`. The accumulation in the other kernels
(recursive float64 sums; float32 partial sums) has a rounding error that grows like N·u
(N²·u relative to 2/N): see :func:`dpinfer.privacy.mechanisms.embedding.mean_rounding_error`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

__all__ = [
    "FAST_TRIG_MAX",
    "FAST_TRIG_MAX32",
    "SINCOS_NORM_EXCESS",
    "fixed_point_bits",
    "fixed_point_feature_norm",
    "rff_fixed_point_sums",
    "rff_sums",
    "rff_sums_fast",
    "rff_sums_fast32",
    "rff_sums_fast_parallel",
    "sincos32_array",
    "sincos_array",
]

# sin/cos with Cody-Waite range reduction to |r| <= π/4 (plus rounding) and Taylor polynomials
# of degree 17/18 (truncation error < 1e-19 on [-π/4, π/4]); written branch-free so that the
# compiler vectorises the feature loop. Accuracy: within 2 ulp of libm for |x| <= 2^19 (k·_PIO2_HI
# exact; checked in tests/distances/test_distances.py); beyond, the reduction is exact up to a
# few ulp(x), the rounding error of the projection x itself. Arguments are clamped to
# ±_TRIG_CLAMP, where ulp(x) = 2^-5 keeps |r| < 0.82 and the polynomials bounded (sin² + cos² = 1
# to ~1e-16 for every finite x, the unit norm the sensitivity 2/N rests on).
#
# One code path for every magnitude: the kernel used to switch to libm when some |W y| exceeded
# 2^19, so featurising confidential data took ~4x longer when one record was extreme (a timing
# channel). FAST_TRIG_MAX is now infinite: the vectorised kernels take every argument, and the
# libm kernel rff_sums is kept only as a reference for tests.
_PIO2_HI = 1.5707963267341256  # π/2 rounded to 33 bits: k·_PIO2_HI is exact for |k| < 2^20
_PIO2_LO = 6.077100506506192e-11  # π/2 - _PIO2_HI
_TWO_OVER_PI = 0.6366197723675814
FAST_TRIG_MAX = math.inf
_TRIG_CLAMP = 2.0**47
_S = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 9))
_C = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(1, 10))
_S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8 = _S
_C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9 = _C


@numba.njit(inline="always")
def _sincos(x: float) -> tuple[float, float]:  # pragma: no cover - jitted
    x = min(max(x, -_TRIG_CLAMP), _TRIG_CLAMP)
    k = np.floor(x * _TWO_OVER_PI + 0.5)
    r = (x - k * _PIO2_HI) - k * _PIO2_LO
    z = r * r
    s = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * (_S6 + z * (_S7 + z * _S8)))))))
    c = _C5 + z * (_C6 + z * (_C7 + z * (_C8 + z * _C9)))
    c = 1.0 + z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * c))))
    kk = k - 4.0 * np.floor(k * 0.25)  # quadrant 0..3
    half = np.floor(kk * 0.5)
    odd = kk - 2.0 * half
    k1 = kk + 1.0
    k1 = k1 - 4.0 * np.floor(k1 * 0.25)
    so = c if odd > 0.5 else s
    co = s if odd > 0.5 else c
    return (1.0 - 2.0 * half) * so, (1.0 - 2.0 * np.floor(k1 * 0.5)) * co


@numba.njit(inline="always")
def _rff_sum_one(
    Yb: np.ndarray, W: np.ndarray, acc_c: np.ndarray, acc_s: np.ndarray, p: np.ndarray
) -> None:  # pragma: no cover - jitted
    """acc_c = Σ_i cos(W y_i), acc_s = Σ_i sin(W y_i) over the points of one data set."""
    M, d = Yb.shape
    J = W.shape[0]
    acc_c[:] = 0.0
    acc_s[:] = 0.0
    for i in range(M):
        for j in range(J):
            p[j] = Yb[i, 0] * W[j, 0]
        for k in range(1, d):
            for j in range(J):
                p[j] += Yb[i, k] * W[j, k]
        for j in range(J):
            sj, cj = _sincos(p[j])
            acc_c[j] += cj
            acc_s[j] += sj


@numba.njit(cache=True)
def rff_sums_fast(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
    """out[b, :J] = Σ_i cos(W y_bi), out[b, J:] = Σ_i sin(W y_bi) (fused, vectorised trig)."""
    B = Y.shape[0]
    J = W.shape[0]
    acc_c = np.zeros(J, dtype=np.float64)
    acc_s = np.zeros(J, dtype=np.float64)
    p = np.empty(J, dtype=np.float64)
    for b in range(B):
        _rff_sum_one(Y[b], W, acc_c, acc_s, p)
        out[b, :J] = acc_c
        out[b, J:] = acc_s


@numba.njit(cache=True, parallel=True)
def rff_sums_fast_parallel(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """:func:`rff_sums_fast` with the data sets of the batch spread over threads."""
    B = Y.shape[0]
    J = W.shape[0]
    for b in numba.prange(B):
        acc_c = np.zeros(J, dtype=np.float64)
        acc_s = np.zeros(J, dtype=np.float64)
        p = np.empty(J, dtype=np.float64)
        _rff_sum_one(Y[b], W, acc_c, acc_s, p)
        out[b, :J] = acc_c
        out[b, J:] = acc_s


# float32: the same scheme in single precision (three-part Cody-Waite reduction, degree-9/10
# Taylor polynomials, truncation < 2e-9 on [-π/4, π/4]); every constant is float32 so that the
# loop stays in 16-wide single-precision SIMD. Accuracy like numpy's float32 sin/cos
# (~1e-7, tested) for |x| <= 2^12; beyond, the reduction is exact up to a few ulp(x) (the float32
# projection's own rounding error) and arguments are clamped to ±_TRIG_CLAMP32 (|r| stays below
# ~1.3, the polynomials bounded). As in float64, one code path for every magnitude.
_F32 = np.float32
_P1_32 = _F32(1.5703125)
_P2_32 = _F32(4.837512969970703125e-4)
_P3_32 = _F32(np.pi / 2 - 1.5703125 - 4.837512969970703125e-4)
_TOP_32 = _F32(2 / np.pi)
_HALF_32, _ONE_32, _TWO_32, _QUART_32, _FOUR_32 = _F32(0.5), _F32(1.0), _F32(2.0), _F32(0.25), _F32(4.0)
_S1_32, _S2_32, _S3_32, _S4_32 = (_F32((-1.0) ** k / math.factorial(2 * k + 1)) for k in range(1, 5))
_C1_32, _C2_32, _C3_32, _C4_32, _C5_32 = (_F32((-1.0) ** k / math.factorial(2 * k)) for k in range(1, 6))
FAST_TRIG_MAX32 = math.inf
_TRIG_CLAMP32 = _F32(2.0**20)


@numba.njit(inline="always")
def _sincos32(x: np.float32) -> tuple[np.float32, np.float32]:  # pragma: no cover - jitted
    x = min(max(x, -_TRIG_CLAMP32), _TRIG_CLAMP32)
    k = np.floor(x * _TOP_32 + _HALF_32)
    r = ((x - k * _P1_32) - k * _P2_32) - k * _P3_32
    z = r * r
    s = r + r * z * (_S1_32 + z * (_S2_32 + z * (_S3_32 + z * _S4_32)))
    c = _ONE_32 + z * (_C1_32 + z * (_C2_32 + z * (_C3_32 + z * (_C4_32 + z * _C5_32))))
    kk = k - _FOUR_32 * np.floor(k * _QUART_32)
    half = np.floor(kk * _HALF_32)
    odd = kk - _TWO_32 * half
    k1 = kk + _ONE_32
    k1 = k1 - _FOUR_32 * np.floor(k1 * _QUART_32)
    so = c if odd > _HALF_32 else s
    co = s if odd > _HALF_32 else c
    return (_ONE_32 - _TWO_32 * half) * so, (_ONE_32 - _TWO_32 * np.floor(k1 * _HALF_32)) * co


def _elementwise(kernel: Callable[[Any], tuple[Any, Any]]) -> Callable[[np.ndarray], Any]:
    """A jitted ``f(x) -> (sin x, cos x)`` applying the scalar ``kernel`` to each entry of ``x``."""

    def apply(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - jitted
        s = np.empty_like(x)
        c = np.empty_like(x)
        for i in range(x.size):
            s[i], c[i] = kernel(x[i])
        return s, c

    return numba.njit(apply)


#: sin and cos of a float64 array with the vectorised kernel (for tests; |x| <= 2^19).
sincos_array = _elementwise(_sincos)
#: float32 sin and cos of a float32 array with the vectorised kernel (for tests).
sincos32_array = _elementwise(_sincos32)


@numba.njit(cache=True)
def rff_sums_fast32(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
    """float32 :func:`rff_sums_fast`: float32 features, partial sums of 64 points in float32,
    totals in float64."""
    B, M, d = Y.shape
    J = W.shape[0]
    p = np.empty(J, dtype=np.float32)
    acc_c = np.empty(J, dtype=np.float32)
    acc_s = np.empty(J, dtype=np.float32)
    for b in range(B):
        tot_c = np.zeros(J, dtype=np.float64)
        tot_s = np.zeros(J, dtype=np.float64)
        for i0 in range(0, M, 64):
            acc_c[:] = 0
            acc_s[:] = 0
            for i in range(i0, min(M, i0 + 64)):
                for j in range(J):
                    p[j] = Y[b, i, 0] * W[j, 0]
                for k in range(1, d):
                    for j in range(J):
                        p[j] += Y[b, i, k] * W[j, k]
                for j in range(J):
                    sj, cj = _sincos32(p[j])
                    acc_c[j] += cj
                    acc_s[j] += sj
            for j in range(J):
                tot_c[j] += acc_c[j]
                tot_s[j] += acc_s[j]
        for j in range(J):
            out[b, j] = tot_c[j]
            out[b, J + j] = tot_s[j]


@numba.njit(cache=True, fastmath=False)
def rff_sums(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
    """libm version of :func:`rff_sums_fast` (any argument size)."""
    B, M, d = Y.shape
    J = W.shape[0]
    acc_c = np.zeros(J, dtype=np.float64)
    acc_s = np.zeros(J, dtype=np.float64)
    for b in range(B):
        acc_c[:] = 0.0
        acc_s[:] = 0.0
        for i in range(M):
            for j in range(J):
                p = Y[b, i, 0] * W[j, 0]
                for k in range(1, d):
                    p += Y[b, i, k] * W[j, k]
                acc_c[j] += math.cos(p)
                acc_s[j] += math.sin(p)
        for j in range(J):
            out[b, j] = acc_c[j]
            out[b, J + j] = acc_s[j]


# --------------------------------------------------------------------------------------------
# The exact path of a release: fixed-point features, exact int64 sums (module docstring)
# --------------------------------------------------------------------------------------------
#: ||(ŝ, ĉ)||₂ <= 1 + SINCOS_NORM_EXCESS for every output of the float64 ``_sincos`` (Lemma above).
SINCOS_NORM_EXCESS = 2.0**-47
#: Fixed-point bits b of the release kernel: at most 50 (v·2^b stays below 2⁵¹), at least 20.
FIXED_POINT_MAX_BITS = 50
FIXED_POINT_MIN_BITS = 20


def fixed_point_bits(n_records: int) -> int:
    """b = min(50, 62 − bitlength(N)): the int64 sums of N features of magnitude < 2^(b+1) cannot
    overflow. N is public (the sensitivity 2/N is). Raises :class:`~dpinfer.errors.InvalidDataError`
    for N >= 2⁴² (b would fall below 20)."""
    from ..errors import InvalidDataError

    n = int(n_records)
    if n < 1:
        raise InvalidDataError(f"the data set must have at least one record, got {n_records!r}.")
    bits = min(FIXED_POINT_MAX_BITS, 62 - n.bit_length())
    if bits < FIXED_POINT_MIN_BITS:
        raise InvalidDataError(
            f"{n} records is beyond the exact fixed-point embedding of a release (N < 2^42); "
            "release the embedding of a subsample. Nothing was charged or released."
        )
    return bits


def fixed_point_feature_norm(n_records: int) -> float:
    """ρ_N, a bound on the pair norm ||(s̃, c̃)||₂ of the fixed-point features of the release kernel,
    hence on ||φ̃(x)||₂ = sqrt(2/D)·||[c̃, s̃]||₂ for every x: 1 + 2⁻⁴⁷ + √2·2⁻⁽ᵇ⁺¹⁾ (Lemma above plus
    the grid rounding), returned as the exact double 1 + 2⁻⁴⁷ + 3·2⁻⁽ᵇ⁺²⁾ >= it (√2 <= 3/2)."""
    bits = fixed_point_bits(n_records)
    return 1.0 + SINCOS_NORM_EXCESS + 3.0 * 2.0 ** -(bits + 2)  # every term exact, the sum too


@numba.njit(cache=True)
def rff_fixed_point_sums(
    Y: np.ndarray, W: np.ndarray, unit: float, out: np.ndarray
) -> None:  # pragma: no cover - jitted
    """out[:J] = Σ_i rint(unit·cos(W y_i)), out[J:] = Σ_i rint(unit·sin(W y_i)), int64, exact.

    Y (M, d) float64, W (J, d) float64, ``unit`` = 2^b (:func:`fixed_point_bits`), out int64 (2J,).
    The projections are those of :func:`rff_sums_fast` (same operations, same order), the
    trigonometry ``_sincos`` (one code path for every magnitude: no timing channel), a NaN
    projection (``inf − inf`` from a record near the float limit) counts as 0 so that every record
    has a feature of norm <= ρ_N; scaling by 2^b and ``rint`` are exact, the integer sums too.
    """
    M, d = Y.shape
    J = W.shape[0]
    p = np.empty(J, dtype=np.float64)
    acc_c = np.zeros(J, dtype=np.int64)
    acc_s = np.zeros(J, dtype=np.int64)
    for i in range(M):
        for j in range(J):
            p[j] = Y[i, 0] * W[j, 0]
        for k in range(1, d):
            for j in range(J):
                p[j] += Y[i, k] * W[j, k]
        for j in range(J):
            x = p[j]
            x = 0.0 if x != x else x
            sj, cj = _sincos(x)
            acc_c[j] += np.int64(np.rint(cj * unit))
            acc_s[j] += np.int64(np.rint(sj * unit))
    for j in range(J):
        out[j] = acc_c[j]
        out[J + j] = acc_s[j]
