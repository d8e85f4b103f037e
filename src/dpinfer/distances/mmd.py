"""Maximum mean discrepancy (MMD) distances with a Gaussian kernel, and their sensitivity.

ρ(Y*, Y) = ||μ(Y*) - μ(Y)||, the RKHS distance between the empirical mean embeddings
μ(Y) = (1/|Y|) Σ_i φ(y_i) (the square root of the biased MMD² estimate, eq. (5) of Park et al.
2021). With a kernel bounded by B_k, Lemma 1 gives the replace-one sensitivity
Δρ = 2·sqrt(B_k)/N, N = |Y*|: replacing one observed point moves μ(Y*) by at most
||φ(a) - φ(b)||/N <= 2·sqrt(B_k)/N, and ρ moves by no more (triangle inequality). The bound
does not need |Y| = N. For the Gaussian kernel B_k = 1, so Δρ = 2/N.

Two implementations:

* :class:`RFFMMD` - random Fourier features with paired cos/sin features,
  φ(x) = sqrt(2/D)·[cos(W x), sin(W x)], W ~ N(0, I/ℓ²) with D/2 rows (METHODS.md §1.2).
  Since cos² + sin² = 1, ||φ(x)|| = 1 exactly for every x, so the bound B_k = 1 holds for the
  *approximate* kernel too and Δρ = 2/N is exact, not asymptotic. Cost O(N·D) per data set.
* :class:`ExactMMD` - the quadratic-time exact kernel MMD, for small N (e.g. COVID, N = 18).

The bandwidth ℓ must never be computed from the confidential observed data: pass it, or use
:func:`median_heuristic` on *simulated* data (the paper's choice, Section 6.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from ..errors import InvalidDataError, InvalidPrivacyParameterError
from .base import Distance, as_batch, as_points


def _check_bandwidth(bandwidth: Any) -> float:
    try:
        value = float(bandwidth)
    except (TypeError, ValueError):
        raise InvalidPrivacyParameterError(
            f"bandwidth must be a positive number, got {bandwidth!r}. Give it explicitly or use "
            "dpinfer.distances.median_heuristic(simulated_data) - never the observed data."
        ) from None
    if not math.isfinite(value) or value <= 0.0:
        raise InvalidPrivacyParameterError(
            f"bandwidth must be a positive finite number, got {bandwidth!r}. Give it explicitly "
            "or use dpinfer.distances.median_heuristic(simulated_data) - never the observed data."
        )
    return value


def median_heuristic(simulated: Any, max_points: int = 2000, seed: int = 0) -> float:
    """Median pairwise Euclidean distance among *simulated* points (the bandwidth heuristic).

    Parameters
    ----------
    simulated
        Simulated data: one data set (N, d) / (N,), or a stack (T, N, d) / (T, N) that is pooled.
        Never pass the confidential observed data: the result would leak information about it
        and is not accounted for.
    max_points
        At most this many pooled points (drawn without replacement with ``seed``) are used.

    Returns
    -------
    float
        The median of ||x_i - x_j|| over pairs i < j of distinct points (> 0).
    """
    arr = np.asarray(simulated, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    elif arr.ndim == 3:
        arr = arr.reshape(-1, arr.shape[-1])
    elif arr.ndim == 2 and arr.shape[1] > 16:
        # (T, N) stack of scalar data sets
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.shape[0] < 2:
        raise InvalidDataError(f"median_heuristic needs at least 2 points, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise InvalidDataError("median_heuristic: simulated data contain NaN or infinite values.")
    if arr.shape[0] > max_points:
        idx = np.random.default_rng(seed).choice(arr.shape[0], max_points, replace=False)
        arr = arr[idx]
    sq = np.sum(arr**2, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * arr @ arr.T
    iu = np.triu_indices(arr.shape[0], k=1)
    dist = np.sqrt(np.maximum(d2[iu], 0.0))
    med = float(np.median(dist))
    if not med > 0.0:
        raise InvalidDataError(
            "median_heuristic: the median pairwise distance of the simulated points is 0 "
            "(too many identical points); give the bandwidth explicitly."
        )
    return med


# --------------------------------------------------------------------------------------------
# Random Fourier features
# --------------------------------------------------------------------------------------------
# sin/cos on |x| <= _FAST_TRIG_MAX with Cody-Waite range reduction to |r| <= π/4 and Taylor
# polynomials of degree 17/18 (truncation error < 1e-19 on [-π/4, π/4]); written branch-free
# so that the compiler vectorises the feature loop. Accuracy: within 2 ulp of libm (checked in
# tests/test_distances.py). Larger arguments use libm.
_PIO2_HI = 1.5707963267341256  # π/2 rounded to 33 bits: k·_PIO2_HI is exact for |k| < 2^20
_PIO2_LO = 6.077100506506192e-11  # π/2 - _PIO2_HI
_TWO_OVER_PI = 0.6366197723675814
_FAST_TRIG_MAX = 2.0**19
_S = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 9))
_C = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(1, 10))
_S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8 = _S
_C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9 = _C


@numba.njit(inline="always")
def _sincos(x: float) -> tuple[float, float]:  # pragma: no cover - jitted
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


@numba.njit(cache=True)
def sincos_array(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - jitted
    """sin and cos of an array with the vectorised kernel (for tests; |x| <= 2^19)."""
    s = np.empty_like(x)
    c = np.empty_like(x)
    for i in range(x.size):
        s[i], c[i] = _sincos(x[i])
    return s, c


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
def _rff_sums_fast(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
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
def _rff_sums_fast_parallel(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """:func:`_rff_sums_fast` with the data sets of the batch spread over threads."""
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
# (~1e-7, tested) for |x| <= _FAST_TRIG_MAX32.
_F32 = np.float32
_P1_32 = _F32(1.5703125)
_P2_32 = _F32(4.837512969970703125e-4)
_P3_32 = _F32(np.pi / 2 - 1.5703125 - 4.837512969970703125e-4)
_TOP_32 = _F32(2 / np.pi)
_HALF_32, _ONE_32, _TWO_32, _QUART_32, _FOUR_32 = _F32(0.5), _F32(1.0), _F32(2.0), _F32(0.25), _F32(4.0)
_S1_32, _S2_32, _S3_32, _S4_32 = (_F32((-1.0) ** k / math.factorial(2 * k + 1)) for k in range(1, 5))
_C1_32, _C2_32, _C3_32, _C4_32, _C5_32 = (_F32((-1.0) ** k / math.factorial(2 * k)) for k in range(1, 6))
_FAST_TRIG_MAX32 = 2.0**12


@numba.njit(inline="always")
def _sincos32(x: np.float32) -> tuple[np.float32, np.float32]:  # pragma: no cover - jitted
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


@numba.njit(cache=True)
def sincos32_array(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - jitted
    """float32 sin and cos of a float32 array with the vectorised kernel (for tests)."""
    s = np.empty_like(x)
    c = np.empty_like(x)
    for i in range(x.size):
        s[i], c[i] = _sincos32(x[i])
    return s, c


@numba.njit(cache=True)
def _rff_sums_fast32(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
    """float32 :func:`_rff_sums_fast`: float32 features, partial sums of 64 points in float32,
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
def _rff_sums(Y: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
    """libm version of :func:`_rff_sums_fast` (any argument size)."""
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


@dataclass(frozen=True)
class _RFFPrepared:
    mu: np.ndarray  # (D,) mean embedding of the observed data (confidential)
    n: int
    d: int
    W: np.ndarray  # (D/2, d)


class RFFMMD(Distance):
    """MMD with paired random Fourier features, ||φ(x)|| = 1, Δρ = 2/N (Lemma 1, B_k = 1).

    Parameters
    ----------
    bandwidth
        Gaussian-kernel length scale ℓ, k(x, y) = exp(-||x - y||²/(2ℓ²)). Must come from the user
        or from :func:`median_heuristic` on simulated data.
    n_features
        D, the total number of features (even; D/2 frequencies, each giving a cos and a sin).
    seed
        Seed of the frequencies W (public randomness; the sensitivity holds for every W).
    dtype
        ``"float64"`` (default) or ``"float32"`` for the embeddings (projections and
        trigonometry in that precision; sums accumulated in float64).
    backend
        ``"numba"`` (fused projection + sin/cos + sum with a vectorised float64 sin/cos kernel
        accurate to ~1 ulp, no temporaries), ``"numba-parallel"`` (the same over threads),
        ``"numpy"`` (chunked matrix product then ``np.cos``/``np.sin``) or ``"auto"``
        (numba). In float32 the numba kernel is single-precision SIMD (falling back to numpy
        for projections beyond 2^12 in absolute value); ``"numba-parallel"`` is float64 only
        (float32 then uses numpy). All compute the same features up to rounding.
    """

    name = "rff-mmd"

    def __init__(
        self,
        bandwidth: float,
        n_features: int = 100,
        seed: int = 0,
        dtype: str | type = "float64",
        backend: str = "auto",
    ) -> None:
        self.bandwidth = _check_bandwidth(bandwidth)
        if int(n_features) != n_features or n_features < 2 or int(n_features) % 2:
            raise InvalidPrivacyParameterError(
                f"n_features must be an even integer >= 2 (cos and sin pairs), got {n_features!r}."
            )
        self.n_features = int(n_features)
        self.seed = int(seed)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise InvalidPrivacyParameterError(f"dtype must be float64 or float32, got {dtype!r}.")
        if backend == "auto":
            backend = "numba"
        if backend not in ("numba", "numba-parallel", "numpy"):
            raise InvalidPrivacyParameterError(
                f"backend must be 'auto', 'numba', 'numba-parallel' or 'numpy', got {backend!r}."
            )
        self.backend = backend

    @classmethod
    def from_simulations(
        cls, simulated: Any, n_features: int = 100, seed: int = 0, **kwargs: Any
    ) -> RFFMMD:
        """An RFFMMD whose bandwidth is the median heuristic of *simulated* data."""
        return cls(median_heuristic(simulated, seed=seed), n_features, seed=seed, **kwargs)

    def frequencies(self, d: int) -> np.ndarray:
        """W, shape (D/2, d), rows ~ N(0, I/ℓ²), fixed by ``seed``."""
        rng = np.random.default_rng([self.seed, 0xF0F])
        return rng.standard_normal((self.n_features // 2, d)) / self.bandwidth

    def feature_sums(self, sims: np.ndarray, W: np.ndarray) -> np.ndarray:
        """Σ_i [cos(W y_i), sin(W y_i)] per data set; shape (B, D), unscaled."""
        B, M, d = sims.shape
        J = W.shape[0]
        Wd = np.ascontiguousarray(W, dtype=self.dtype)
        Yd = np.ascontiguousarray(sims, dtype=self.dtype)
        out = np.empty((B, 2 * J), dtype=np.float64)
        bound = float(np.abs(Yd).max()) * float(np.abs(Wd).sum(axis=1).max()) if Yd.size else 0.0
        if self.backend == "numba" and self.dtype == np.float32 and bound <= _FAST_TRIG_MAX32:
            _rff_sums_fast32(Yd, Wd, out)
            return out
        if self.backend in ("numba", "numba-parallel") and self.dtype == np.float64:
            if bound > _FAST_TRIG_MAX:
                _rff_sums(Yd, Wd, out)
            elif self.backend == "numba":
                _rff_sums_fast(Yd, Wd, out)
            else:
                _rff_sums_fast_parallel(Yd, Wd, out)
            return out
        # numpy: per data set, blocks of about 2^17 projections (cache-resident buffers)
        blk = max(1, min(M, (1 << 17) // max(J, 1)))
        P = np.empty((blk, J), dtype=self.dtype)
        T = np.empty((blk, J), dtype=self.dtype)
        ones = np.ones(blk, dtype=self.dtype)
        for b in range(B):
            acc = np.zeros(2 * J, dtype=np.float64)
            for start in range(0, M, blk):
                stop = min(M, start + blk)
                m = stop - start
                if d == 1:
                    np.multiply(Yd[b, start:stop, 0][:, None], Wd[:, 0][None, :], out=P[:m])
                else:
                    np.matmul(Yd[b, start:stop], Wd.T, out=P[:m])
                np.cos(P[:m], out=T[:m])
                acc[:J] += ones[:m] @ T[:m]
                np.sin(P[:m], out=T[:m])
                acc[J:] += ones[:m] @ T[:m]
            out[b] = acc
        return out

    def embed(self, data: Any, W: np.ndarray | None = None) -> np.ndarray:
        """Mean embedding μ(Y) = (1/|Y|) Σ φ(y_i) of one data set; shape (D,)."""
        pts = as_points(data)
        if W is None:
            W = self.frequencies(pts.shape[1])
        scale = math.sqrt(2.0 / self.n_features)
        return self.feature_sums(pts[None], W)[0] * (scale / pts.shape[0])

    def prepare(self, observed: Any) -> _RFFPrepared:
        pts = as_points(observed, "observed data")
        W = self.frequencies(pts.shape[1])
        return _RFFPrepared(self.embed(pts, W), pts.shape[0], pts.shape[1], W)

    def batch(self, prepared: _RFFPrepared, sims: Any) -> np.ndarray:
        arr = as_batch(sims, prepared.d)
        scale = math.sqrt(2.0 / self.n_features) / arr.shape[1]
        emb = self.feature_sums(arr, prepared.W)
        emb *= scale
        emb -= prepared.mu
        return np.sqrt(np.einsum("bj,bj->b", emb, emb))

    def sensitivity(self, prepared: _RFFPrepared) -> float:
        """Δρ = 2/N (Lemma 1 with B_k = 1, exact because ||φ(x)|| = 1)."""
        return 2.0 / prepared.n

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "bandwidth": self.bandwidth,
            "n_features": self.n_features,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


# --------------------------------------------------------------------------------------------
# Exact (quadratic) MMD
# --------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _exact_mmd2(X: np.ndarray, Y: np.ndarray, inv2l2: float, kxx: float) -> np.ndarray:  # pragma: no cover
    B, M, d = Y.shape
    N = X.shape[0]
    out = np.empty(B, dtype=np.float64)
    for b in range(B):
        kyy = 0.0
        for i in range(M):
            for j in range(i + 1, M):
                s = 0.0
                for k in range(d):
                    t = Y[b, i, k] - Y[b, j, k]
                    s += t * t
                kyy += math.exp(-s * inv2l2)
        kyy = (2.0 * kyy + M) / (M * M)
        kxy = 0.0
        for i in range(N):
            for j in range(M):
                s = 0.0
                for k in range(d):
                    t = X[i, k] - Y[b, j, k]
                    s += t * t
                kxy += math.exp(-s * inv2l2)
        kxy /= N * M
        out[b] = kxx + kyy - 2.0 * kxy
    return out


@dataclass(frozen=True)
class _ExactPrepared:
    X: np.ndarray
    kxx: float
    n: int
    d: int


class ExactMMD(Distance):
    """Exact Gaussian-kernel MMD, ρ = sqrt(max(MMD²_biased, 0)), Δρ = 2/N (Lemma 1, B_k = 1).

    Quadratic in the data-set sizes: meant for small N (the COVID data set has N = 18).
    """

    name = "exact-mmd"

    def __init__(self, bandwidth: float) -> None:
        self.bandwidth = _check_bandwidth(bandwidth)

    @classmethod
    def from_simulations(cls, simulated: Any, seed: int = 0) -> ExactMMD:
        """An ExactMMD whose bandwidth is the median heuristic of *simulated* data."""
        return cls(median_heuristic(simulated, seed=seed))

    def prepare(self, observed: Any) -> _ExactPrepared:
        X = as_points(observed, "observed data")
        sq = np.sum(X**2, axis=1)
        d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0)
        kxx = float(np.exp(-d2 / (2 * self.bandwidth**2)).mean())
        return _ExactPrepared(X, kxx, X.shape[0], X.shape[1])

    def batch(self, prepared: _ExactPrepared, sims: Any) -> np.ndarray:
        arr = np.ascontiguousarray(as_batch(sims, prepared.d), dtype=np.float64)
        mmd2 = _exact_mmd2(prepared.X, arr, 1.0 / (2 * self.bandwidth**2), prepared.kxx)
        return np.sqrt(np.maximum(mmd2, 0.0))

    def sensitivity(self, prepared: _ExactPrepared) -> float:
        """Δρ = 2/N (Lemma 1, Gaussian kernel: B_k = 1)."""
        return 2.0 / prepared.n

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "bandwidth": self.bandwidth}


class BinnedRFFMMD(RFFMMD):
    """RFF MMD of 1-D data through a fine public grid: φ̃(x) = φ(centre of the bin of x).

    φ̃ is itself a feature map with ||φ̃(x)|| = 1 for every x, so Lemma 1 still gives the exact
    sensitivity Δρ = 2/N. The embedding of a data set is (bin counts / M) @ table, with the
    table φ(bin centres) computed once: O(M + n_bins·D) per data set instead of O(M·D)
    trigonometric evaluations. The price is a small change of the distance (|x - centre| <=
    h/2 moves each feature by at most ||w||·h/2), measured in ``benchmarks/abcdp.py``.

    Parameters
    ----------
    lo, hi, n_bins
        The public grid (never derived from the observed data). Points outside [lo, hi] fall in
        the edge bins (still a valid feature map).
    """

    name = "binned-rff-mmd"

    def __init__(
        self,
        bandwidth: float,
        n_features: int = 100,
        lo: float = 0.0,
        hi: float = 1.0,
        n_bins: int = 4096,
        seed: int = 0,
    ) -> None:
        super().__init__(bandwidth, n_features, seed=seed, backend="numpy")
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise InvalidPrivacyParameterError(f"the grid needs finite lo < hi, got [{lo}, {hi}].")
        if int(n_bins) < 2:
            raise InvalidPrivacyParameterError(f"n_bins must be >= 2, got {n_bins!r}.")
        self.lo, self.hi, self.n_bins = float(lo), float(hi), int(n_bins)
        self.h = (self.hi - self.lo) / self.n_bins
        centres = self.lo + self.h * (np.arange(self.n_bins) + 0.5)
        W = self.frequencies(1)
        proj = centres[:, None] * W[:, 0][None, :]
        self.table = np.hstack([np.cos(proj), np.sin(proj)])  # (n_bins, D), unscaled

    def feature_sums(self, sims: np.ndarray, W: np.ndarray) -> np.ndarray:
        B, M, d = sims.shape
        if d != 1:
            raise InvalidDataError("BinnedRFFMMD handles 1-D data only; use RFFMMD.")
        idx = np.floor((sims[:, :, 0] - self.lo) / self.h).astype(np.int64)
        np.clip(idx, 0, self.n_bins - 1, out=idx)
        idx += (np.arange(B) * self.n_bins)[:, None]
        counts = np.bincount(idx.ravel(), minlength=B * self.n_bins).reshape(B, self.n_bins)
        return counts.astype(np.float64) @ self.table

    def config(self) -> dict[str, Any]:
        out = super().config()
        out.update(name=self.name, lo=self.lo, hi=self.hi, n_bins=self.n_bins)
        return out
