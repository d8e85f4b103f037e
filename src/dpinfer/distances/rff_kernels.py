"""Numba kernels of the random-Fourier-feature MMD: fused projection, sin/cos and sums.

For a batch of data sets Y (B, M, d) and frequencies W (J, d) the kernels compute, per data set,
Σ_i cos(W y_i) and Σ_i sin(W y_i) without materialising the (M, J) projections
(:class:`~dpinfer.distances.mmd.RFFMMD` scales them into the mean embedding
μ(Y) = sqrt(2/D)/M · Σ_i [cos(W y_i), sin(W y_i)], D = 2J). Three float64 variants (a vectorised
trigonometric kernel, the same over threads, libm for large arguments) and one float32 variant.
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
