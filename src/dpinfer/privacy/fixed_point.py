"""Exact, order-free sums of the owner-side statistics: fixed-point records, integer totals.

Every owner-side statistic that the library releases from many records is a sum over records,
S = Σ_i f(x_i) (the GLM's sufficient statistics, a clamped sum, a count, the bin counts of a
histogram, the random-feature sums of ABCDP's embedding). Summed in floating point, S depends on
the order and grouping of the additions, so a release computed in chunks, over Parquet
partitions or on a cluster would differ in its last bits from the in-memory one, and by how much
would depend on the data. Here every S is computed exactly:

1. **Rounding, per record, before any summation.** Each record is mapped to an integer vector
   k(x_i) by a fixed rule whose grid depends on public quantities only (the declared bounds and a
   constant number of bits): a value v that the public bounds place in [-1, 1] becomes
   ``rint(v·2^b)`` clipped to [-2^b, 2^b]; a clamped record x becomes ``rint(x/g)`` clipped into
   the grid points inside the clamp interval, g a power of two fixed by the bounds; a bin index
   is an integer already. ``rint`` of a double times a power of two is exact, so k(x_i) is a
   function of the record alone, evaluated identically in every chunk, process and machine.
   Products of such integers (the GLM's r_j·r_k) are integers too.
2. **Summation in integers.** The totals K = Σ_i k(x_i) are integers computed without any
   rounding: integer addition is associative and commutative, so K, and hence the released value,
   is the same for every partition of the records into chunks and every order of the chunks.
   The kernels add, within a block of rows, products bounded by 2^44 (GLM) or values bounded by
   2^40 (clamped sums) in float64: every partial sum is an integer below 2^53 in magnitude, hence
   exact in float64 whatever the order of the additions (which is why the compiler may
   reassociate and vectorise these loops); each block total is then split into two int64
   accumulators (its high and low 32 bits), and chunk totals are added as Python integers.
   No step can overflow for fewer than 2^40 records per kernel call.
3. **One conversion at the end.** The released floating-point value is computed from K alone
   (``float(K)``, correctly rounded, times a power of two, times a public weight), so it is
   bit-identical whatever the chunking.

The rounding of step 1 moves each record's contribution by at most half a grid unit per value
(2^-(b+1) of the half-range for the GLM's scaled values, b = :data:`GLM_BITS`; g/2 for a clamped
record); it never moves a value outside its declared interval, so the sensitivities proved from
the bounds hold for the rounded records exactly as for the exact ones.

The specifications below (:class:`GLMSums`, :class:`ClampedSums`, :class:`HistogramCounts`
and :class:`dpinfer.data.streaming.EmbeddingSums`) are pure, picklable descriptions of k(·)
built from public quantities;
``spec.partial(chunk)`` maps one chunk (a dict of column name to 1-d array) to an
:class:`ExactSums`, and partials add exactly (``+``). :mod:`dpinfer.data.streaming` drives them
over in-memory arrays (one chunk), chunked sources and Dask partitions.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

__all__ = [
    "CLAMP_BITS",
    "GLM_BITS",
    "ClampedSums",
    "ExactSums",
    "GLMSums",
    "HistogramCounts",
    "clamp_grid",
]

#: Bits of the GLM's fixed-point grid: scaled values in [-1, 1] are multiples of 2^-GLM_BITS.
GLM_BITS = 22
#: Rows per float64 block of the GLM kernel: 2^9 products of magnitude <= 2^44 stay below 2^53.
_GLM_BLOCK = 512
#: Bits of a clamped record's grid below the clamp interval's magnitude (|k| < 2^CLAMP_BITS).
CLAMP_BITS = 40
#: Rows per float64 block of the clamped kernel: 2^12 values of magnitude <= 2^40 stay below 2^53.
_CLAMP_BLOCK = 4096
_LOW32 = np.int64(0xFFFFFFFF)

#: Kinds of a GLM input column: a real value, a 0/1 response, an integer count.
REAL, BINARY, INTEGER = 0, 1, 2


@dataclass(frozen=True)
class ExactSums:
    """Exact integer totals of a chunked computation, and what validation found.

    Attributes
    ----------
    totals
        The integer totals K (Python integers: no overflow, exact addition).
    rows
        Number of records seen.
    flags
        Named integer vectors of rule violations (e.g. ``"outside"``: records outside the bounds,
        per column). Counts only: never a value.
    """

    totals: tuple[int, ...]
    rows: int = 0
    flags: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def __add__(self, other: ExactSums) -> ExactSums:
        if len(self.totals) != len(other.totals) or set(self.flags) != set(other.flags):
            raise ValueError("partial sums of different statistics cannot be added.")
        totals = tuple(a + b for a, b in zip(self.totals, other.totals, strict=True))
        flags = {k: tuple(a + b for a, b in zip(v, other.flags[k], strict=True))
                 for k, v in self.flags.items()}
        return ExactSums(totals, self.rows + other.rows, flags)

    def as_float(self, scale: float = 1.0) -> np.ndarray:
        """``float(K_j)·scale`` (one correctly rounded conversion, then the product): a function of
        the integers alone, hence bit-identical whatever the chunking."""
        return np.array([float(k) for k in self.totals], dtype=np.float64) * scale


def _split_totals(hi: np.ndarray, lo: np.ndarray) -> tuple[int, ...]:
    return tuple((int(h) << 32) + int(v) for h, v in zip(hi.tolist(), lo.tolist(), strict=True))


def _columns(chunk: Mapping[str, Any], names: Sequence[str]) -> tuple[tuple[np.ndarray, ...], int]:
    """The named 1-d columns of a chunk as a tuple of contiguous float64 arrays (no copy when they
    are float64 already, as Parquet and pyarrow columns are), made read-only views so that the
    one-column kernel sees one array type (the multi-column ones get :func:`_row_blocks`);
    refuses non-numeric or ragged columns."""
    from ..errors import InvalidDataError

    arrays = []
    m = -1
    for name in names:
        if name not in chunk:
            raise KeyError(name)
        a = np.asarray(chunk[name])
        if a.dtype.kind not in "biuf":
            raise InvalidDataError(
                f"column {name!r} must be numeric (got dtype {a.dtype}). Nothing was charged."
            )
        a = np.ascontiguousarray(a.reshape(-1), dtype=np.float64).view()
        a.flags.writeable = False
        if m >= 0 and a.size != m:
            raise InvalidDataError(f"column {name!r} has {a.size} values where the others have {m}.")
        m = a.size
        arrays.append(a)
    return tuple(arrays), max(m, 0)


#: rows of one block handed to a multi-column kernel: C × 2^15 doubles, small next to a chunk
_KERNEL_ROWS = 1 << 15


def _row_blocks(cols: tuple[np.ndarray, ...], m: int) -> Iterator[np.ndarray]:
    """The m records of ``cols`` as successive (C, <= 2^15) float64 blocks (a copy of at most
    C·2^15 values at a time). A kernel taking one 2-d array is compiled once, for any number of
    columns; a tuple of C arrays is a new type for every C (a compilation of 0.4–1.2 s each)."""
    for i0 in range(0, m, _KERNEL_ROWS):
        nb = min(_KERNEL_ROWS, m - i0)
        block = np.empty((len(cols), nb), dtype=np.float64)
        for c, col in enumerate(cols):
            block[c] = col[i0 : i0 + nb]
        yield block


# --------------------------------------------------------------------------------------------
# GLM sufficient statistics
# --------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _glm_snap(
    cols: np.ndarray, lo: np.ndarray, hi: np.ndarray, center: np.ndarray, inv: np.ndarray,
    kind: np.ndarray, D: int, unit: float, i0: int, nb: int, r: np.ndarray, yv: np.ndarray, bad: np.ndarray,
) -> None:  # pragma: no cover - jitted
    """Round the records i0..i0+nb to the grid (strict IEEE arithmetic: no fast-math here), one
    record and one value at a time: k = clip(rint((x - center)·inv·2^b), -2^b, 2^b)."""
    C = cols.shape[0]
    for i in range(nb):
        r[0, i] = unit
    for c in range(C):
        col = cols[c]
        for i in range(nb):
            x = col[i0 + i]
            if not (x == x) or x == np.inf or x == -np.inf:
                bad[0, c] += 1
                x = center[c]
            elif x < lo[c] or x > hi[c]:
                bad[1, c] += 1
                x = min(max(x, lo[c]), hi[c])
            if kind[c] == 1 and x != 0.0 and x != 1.0:
                bad[2, c] += 1
            elif kind[c] == 2 and x != np.floor(x):
                bad[2, c] += 1
            k = np.rint((x - center[c]) * inv[c] * unit)
            k = min(max(k, -unit), unit)
            if c < D:
                r[1 + c, i] = k
            elif c == D:
                yv[i] = k
            else:
                r[1 + D, i] = k


@numba.njit(cache=True, fastmath={"reassoc"})
def _glm_block(r: np.ndarray, yv: np.ndarray, nb: int, D: int, Q: int, has_y2: bool,
               s: np.ndarray) -> None:  # pragma: no cover - jitted
    """The block sums of the products of integers (|product| <= 2^44, nb <= 512 terms: every
    partial sum is an integer below 2^53, exact in any order, so reassociation is harmless)."""
    p = 0
    for q in range(D + 1):  # the y block: ỹ·r_q, q <= D
        t = 0.0
        for i in range(nb):
            t += yv[i] * r[q, i]
        s[p] = t
        p += 1
    for j in range(Q):  # the x block: r_j r_k, j <= k, without (0, 0)
        for kk in range(j, Q):
            if j == 0 and kk == 0:
                continue
            t = 0.0
            for i in range(nb):
                t += r[j, i] * r[kk, i]
            s[p] = t
            p += 1
    if has_y2:
        t = 0.0
        for i in range(nb):
            t += yv[i] * yv[i]
        s[p] = t


@numba.njit(cache=True)
def _glm_kernel(
    cols: np.ndarray, lo: np.ndarray, hi: np.ndarray, center: np.ndarray, inv: np.ndarray,
    kind: np.ndarray, n_features: int, has_offset: bool, has_y2: bool, unit: float,
    acc_hi: np.ndarray, acc_lo: np.ndarray, bad: np.ndarray,
) -> None:  # pragma: no cover - jitted
    """Add the exact GLM statistic of the records in ``cols`` to (acc_hi, acc_lo) (module doc).

    ``cols`` (C, m): the m records' columns, features 0..D-1, the response at D, the offset at D+1. Per
    column: the validation interval [lo, hi], the scaling t = (x - center)·inv and the kind
    (REAL, BINARY, INTEGER). ``bad`` (3, C) counts non-finite values, values outside [lo, hi] and kind
    violations (counted, never shown). Records failing a rule still contribute a clipped value:
    a release refuses them before anything is charged.
    """
    m = cols.shape[1]
    D = n_features
    Q = 1 + D + (1 if has_offset else 0)
    R = _GLM_BLOCK
    r = np.empty((Q, R), dtype=np.float64)
    yv = np.empty(R, dtype=np.float64)
    P = acc_hi.shape[0]
    s = np.empty(P, dtype=np.float64)
    for i0 in range(0, m, R):
        nb = min(R, m - i0)
        _glm_snap(cols, lo, hi, center, inv, kind, D, unit, i0, nb, r, yv, bad)
        _glm_block(r, yv, nb, D, Q, has_y2, s)
        for p in range(P):  # every s[p] is an integer below 2^53: exact; split into 32-bit halves
            v = np.int64(s[p])
            acc_lo[p] += v & 0xFFFFFFFF
            acc_hi[p] += v >> 32


@dataclass(frozen=True)
class GLMSums:
    """The GLM's sufficient statistic Σ_i t_i in fixed point (:mod:`dpinfer.release.glm`).

    Each record's features, response and offset are scaled by their public bounds into [-1, 1]
    (the response: ``{0, 1}``, ``y/y_max`` or its bounds' affine map), rounded to multiples of
    2^-b (b = :data:`GLM_BITS`) and clipped to [-1, 1]; the totals are the exact integer sums of
    ``[ỹ·r_{0..D}, r_j r_k (j <= k, not (0, 0)), ỹ²]`` in units of 2^-2b, r = (1, x̃, õ), in the
    order of :class:`~dpinfer.inference.glm.StatisticLayout`.

    Parameters
    ----------
    features
        Names of the D feature columns; ``response``, ``offset``: names of those columns.
    lower, upper
        Per column (features, response, offset): the validation interval (public bounds).
    center, inv
        Per column: the scaling ``(x - center)·inv`` into [-1, 1].
    kind
        Per column: :data:`REAL`, :data:`BINARY` or :data:`INTEGER`.
    has_y2
        Whether the statistic ends with Σ ỹ² (the linear family).
    """

    features: tuple[str, ...]
    response: str
    offset: str | None
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    center: tuple[float, ...]
    inv: tuple[float, ...]
    kind: tuple[int, ...]
    has_y2: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.features, self.response) + ((self.offset,) if self.offset is not None else ())

    @property
    def dim(self) -> int:
        Q = 1 + len(self.features) + int(self.offset is not None)
        return len(self.features) + 1 + (Q * (Q + 1)) // 2 - 1 + int(self.has_y2)

    @property
    def scale(self) -> float:
        """The totals' unit, 2^-2b (exact)."""
        return math.ldexp(1.0, -2 * GLM_BITS)

    def zero(self) -> ExactSums:
        C = len(self.columns)
        return ExactSums((0,) * self.dim, 0, {k: (0,) * C for k in ("nonfinite", "outside", "kind")})

    def partial(self, chunk: Mapping[str, Any]) -> ExactSums:
        cols, m = _columns(chunk, self.columns)
        acc_hi = np.zeros(self.dim, dtype=np.int64)
        acc_lo = np.zeros(self.dim, dtype=np.int64)
        bad = np.zeros((3, len(self.columns)), dtype=np.int64)
        args = (np.array(self.lower), np.array(self.upper), np.array(self.center), np.array(self.inv),
                np.array(self.kind, dtype=np.int64), len(self.features), self.offset is not None,
                self.has_y2, math.ldexp(1.0, GLM_BITS), acc_hi, acc_lo, bad)
        for block in _row_blocks(cols, m):  # exact integer totals: the same in any grouping
            _glm_kernel(block, *args)
        flags = {k: tuple(int(v) for v in bad[i]) for i, k in enumerate(("nonfinite", "outside", "kind"))}
        return ExactSums(_split_totals(acc_hi, acc_lo), m, flags)


# --------------------------------------------------------------------------------------------
# Clamped sums and counts
# --------------------------------------------------------------------------------------------
def clamp_grid(lower: float, upper: float) -> tuple[float, int, int]:
    """The grid g = 2^(e - :data:`CLAMP_BITS`) of a clamp interval, 2^e > max(|lower|, |upper|),
    and the integer range [⌈lower/g⌉, ⌊upper/g⌋] of the grid points inside the interval.
    Public: a function of the bounds only."""
    big = max(abs(float(lower)), abs(float(upper)))
    _, e = math.frexp(big)  # big = m·2^e, m in [0.5, 1): big < 2^e
    g = math.ldexp(1.0, e - CLAMP_BITS)
    return g, math.ceil(lower / g), math.floor(upper / g)


@numba.njit(cache=True)
def _clamped_snap(x: np.ndarray, lo: float, hi: float, g: float, klo: float, khi: float, integer: bool,
                  i0: int, nb: int, k: np.ndarray, bad: np.ndarray) -> None:  # pragma: no cover - jitted
    """k_i = clip(rint(clip(x_i, lo, hi)/g), klo, khi), strict IEEE arithmetic (g a power of two:
    the division is exact); bad[0]: non-finite records, bad[1]: non-integers when ``integer``."""
    for i in range(nb):
        v = x[i0 + i]
        if not (v == v) or v == np.inf or v == -np.inf:
            bad[0] += 1
            v = lo
        elif integer and v != np.floor(v):
            bad[1] += 1
        v = min(max(v, lo), hi)
        k[i] = min(max(np.rint(v / g), klo), khi)


@numba.njit(cache=True, fastmath={"reassoc"})
def _block_sum(k: np.ndarray, nb: int) -> float:  # pragma: no cover - jitted
    """Σ k[:nb] of integers |k| <= 2^40, nb <= 2^12: exact in any order."""
    t = 0.0
    for i in range(nb):
        t += k[i]
    return t


@numba.njit(cache=True)
def _clamped_kernel(
    x: np.ndarray, lo: float, hi: float, g: float, klo: float, khi: float, integer: bool,
    acc: np.ndarray, bad: np.ndarray,
) -> None:  # pragma: no cover - jitted
    """acc[0:2] += the exact Σ_i k_i as (high, low 32 bits) (module docstring)."""
    m = x.shape[0]
    R = _CLAMP_BLOCK
    k = np.empty(R, dtype=np.float64)
    for i0 in range(0, m, R):
        nb = min(R, m - i0)
        _clamped_snap(x, lo, hi, g, klo, khi, integer, i0, nb, k, bad)
        w = np.int64(_block_sum(k, nb))
        acc[1] += w & 0xFFFFFFFF
        acc[0] += w >> 32


@dataclass(frozen=True)
class ClampedSums:
    """The exact sum of records clamped to [lower, upper] on the grid of :func:`clamp_grid`, and
    their count. Totals: (Σ k_i, n); the sum is ``Σ k_i · g``; every rounded record lies in
    [lower, upper], so the clamp's sensitivities hold for it."""

    column: str
    lower: float
    upper: float
    integer: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def grid(self) -> float:
        return clamp_grid(self.lower, self.upper)[0]

    def zero(self) -> ExactSums:
        return ExactSums((0, 0), 0, {"nonfinite": (0,), "kind": (0,)})

    def partial(self, chunk: Mapping[str, Any]) -> ExactSums:
        cols, m = _columns(chunk, self.columns)
        g, klo, khi = clamp_grid(self.lower, self.upper)
        acc = np.zeros(2, dtype=np.int64)
        bad = np.zeros(2, dtype=np.int64)
        if m:
            _clamped_kernel(cols[0], self.lower, self.upper, g, float(klo), float(khi), self.integer,
                            acc, bad)
        return ExactSums(((int(acc[0]) << 32) + int(acc[1]), m), m,
                         {"nonfinite": (int(bad[0]),), "kind": (int(bad[1]),)})


# --------------------------------------------------------------------------------------------
# Histograms (the covariate marginals of synthesis)
# --------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _histogram_kernel(
    cols: np.ndarray, lo: np.ndarray, hi: np.ndarray, sizes: np.ndarray, offsets: np.ndarray,
    integer: np.ndarray, counts: np.ndarray, bad: np.ndarray,
) -> None:  # pragma: no cover - jitted
    """counts[offsets[j] + bin] += 1 per record and column (values clamped into the edge bins);
    bad[0, j]: non-finite values, bad[1, j]: non-integers in an integer column."""
    C, m = cols.shape
    for j in range(C):
        width = hi[j] - lo[j]
        size = sizes[j]
        col = cols[j]
        for i in range(m):
            v = col[i]
            if not (v == v) or v == np.inf or v == -np.inf:
                bad[0, j] += 1
                v = lo[j]
            v = min(max(v, lo[j]), hi[j])
            if integer[j]:
                if v != np.floor(v):
                    bad[1, j] += 1
                b = np.int64(v - lo[j])
            else:
                b = min(np.int64(np.floor((v - lo[j]) / width * size)), size - 1)
            counts[offsets[j] + b] += 1


@dataclass(frozen=True)
class HistogramCounts:
    """Per-column bin counts on a public grid (:func:`dpinfer.release.synthesis.release_covariate_model`):
    equal-width bins of [lower, upper] (one per integer for an integer column), values outside
    clamped into the edge bins. Counts are integers: exact in any grouping."""

    names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    sizes: tuple[int, ...]
    integer: tuple[bool, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return self.names

    def zero(self) -> ExactSums:
        C = len(self.names)
        return ExactSums((0,) * sum(self.sizes), 0, {"nonfinite": (0,) * C, "kind": (0,) * C})

    def partial(self, chunk: Mapping[str, Any]) -> ExactSums:
        cols, m = _columns(chunk, self.names)
        counts = np.zeros(sum(self.sizes), dtype=np.int64)
        bad = np.zeros((2, len(self.names)), dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        args = (np.array(self.lower), np.array(self.upper), np.array(self.sizes, dtype=np.int64), offsets,
                np.array(self.integer, dtype=np.bool_), counts, bad)
        for block in _row_blocks(cols, m):
            _histogram_kernel(block, *args)
        return ExactSums(tuple(int(c) for c in counts.tolist()), m,
                         {"nonfinite": tuple(int(v) for v in bad[0]), "kind": tuple(int(v) for v in bad[1])})
