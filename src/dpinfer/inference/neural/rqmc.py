"""Scrambled Sobol point sets for nested randomised quasi-Monte Carlo (Xiong et al. 2025, §3.4).

The private-data losses (eqs. 5 and 8 of Xiong, Ju & Zhang 2025) contain an inner integral over the
privacy noise, ``∫ f(G(s_i, u)) du`` over ``u ∈ (0, 1)^k``. The nested estimator (eq. 10-11)
replaces it by ``(1/M) Σ_m f(G(s_i, u_{i,m}))`` where ``{u_{i,m}}_{m<M}`` is, for every simulation
``i``, an *independently randomised* Sobol net of ``M = 2^m`` points. Each randomised net is
marginally uniform (so the estimator is unbiased) and, for integrands of bounded Hardy-Krause
variation, has RMSE ``O(M^{-1+δ})`` instead of Monte Carlo's ``O(M^{-1/2})`` (eq. 12;
Owen 1997; Basu & Owen 2016).

Randomisation used here: random linear matrix scrambling plus a digital shift (Matoušek 1998; the
scheme of ``scipy.stats.qmc.Sobol(scramble=True)``), vectorised over ``n`` independent nets, on 32
binary digits; the digits beyond the 32nd are filled with an independent uniform, so the points
are strictly inside (0, 1). Both operations map the Sobol net to a net of the same quality, so
every one-dimensional projection keeps exactly one point in each interval ``[j/M, (j+1)/M)``
(:func:`check_stratification`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import qmc

from ...errors import InvalidDataError
from ...randomness import as_generator

_BITS = 32
MAX_LOG2_POINTS = 20


def check_points(m_points: Any) -> int:
    """Validate a number of RQMC points: a power of two ``2^m`` with ``0 <= m <= 20``.

    Returns ``log2(m_points)``.
    """
    try:
        value = int(m_points)
    except (TypeError, ValueError):
        raise InvalidDataError(
            f"rqmc_points must be a power of two (1, 2, 4, ...), got {m_points!r}."
        ) from None
    if value != m_points or value < 1 or value & (value - 1):
        raise InvalidDataError(
            f"rqmc_points must be a power of two M = 2^m (1, 2, 4, 8, ...) so that the Sobol net is "
            f"balanced, got {m_points!r}; use e.g. {1 << max(0, int(np.log2(max(float(m_points), 1))))}."
        )
    log2 = value.bit_length() - 1
    if log2 > MAX_LOG2_POINTS:
        raise InvalidDataError(f"rqmc_points must be at most 2^{MAX_LOG2_POINTS}, got {value}.")
    return log2


def _sobol_integers(m: int, dim: int) -> np.ndarray:
    """The first ``2^m`` unscrambled Sobol points as 32-bit integers, shape (2^m, dim)."""
    eng = qmc.Sobol(dim, scramble=False, bits=_BITS)
    pts = eng.random_base2(m)
    return np.rint(pts * 2.0**_BITS).astype(np.uint64)


def _parity(x: np.ndarray) -> np.ndarray:
    return (np.bitwise_count(x) & np.uint64(1)).astype(np.uint64)


def sobol_point_sets(n: int, m_points: int, dim: int, seed: Any = None) -> np.ndarray:
    """``n`` independently scrambled Sobol nets of ``M`` points in ``(0, 1)^dim``.

    Parameters
    ----------
    n
        Number of independent point sets (one per simulation).
    m_points
        ``M = 2^m`` points per set (validated by :func:`check_points`).
    dim
        Dimension ``k`` of the noise (the mechanism's ``noise_dim``).
    seed
        Simulation seed (int, SeedSequence or Generator). Never privacy noise.

    Returns
    -------
    ndarray, shape (n, M, dim)
        ``u[i]`` is a linearly scrambled, digitally shifted Sobol net (Matoušek 1998).
    """
    m = check_points(m_points)
    n, dim = int(n), int(dim)
    if n < 0 or dim < 1:
        raise InvalidDataError(f"need n >= 0 and dim >= 1, got n={n}, dim={dim}.")
    gen = as_generator(seed)
    base = _sobol_integers(m, dim)  # (M, dim)
    M = base.shape[0]
    # random lower-triangular binary matrices with unit diagonal, one per (set, coordinate);
    # row j (output digit j, most significant first) as a 32-bit mask over input digits <= j.
    rows = gen.integers(0, 2**_BITS, size=(n, dim, _BITS), dtype=np.uint64)
    j = np.arange(_BITS, dtype=np.uint64)
    keep = ~((np.uint64(1) << (np.uint64(_BITS - 1) - j)) - np.uint64(1))  # digits 0..j (from the top)
    keep &= np.uint64(2**_BITS - 1)
    diag = np.uint64(1) << (np.uint64(_BITS - 1) - j)
    rows = (rows & keep) | diag  # (n, dim, bits)
    out = np.zeros((n, M, dim), dtype=np.uint64)
    x = base[None, :, :]  # (1, M, dim)
    for b in range(_BITS):
        bit = _parity(x & rows[:, None, :, b])  # (n, M, dim)
        out |= bit << np.uint64(_BITS - 1 - b)
    shift = gen.integers(0, 2**_BITS, size=(n, 1, dim), dtype=np.uint64)
    out ^= shift
    u = (out.astype(np.float64) + gen.random((n, M, dim))) * 2.0**-_BITS
    return np.clip(u, 2.0**-54, 1.0 - 2.0**-53)


def mc_point_sets(n: int, m_points: int, dim: int, seed: Any = None) -> np.ndarray:
    """``n`` sets of ``m_points`` i.i.d. uniforms (plain Monte Carlo; any positive ``m_points``)."""
    if int(m_points) != m_points or m_points < 1:
        raise InvalidDataError(
            f"the number of Monte Carlo points must be a positive integer, got {m_points!r}."
        )
    u = as_generator(seed).random((int(n), int(m_points), int(dim)))
    return np.clip(u, 2.0**-54, 1.0 - 2.0**-53)


def point_sets(n: int, m_points: int, dim: int, seed: Any = None, qmc_points: bool = True) -> np.ndarray:
    """Scrambled Sobol (``qmc_points=True``) or Monte Carlo point sets, shape (n, M, dim)."""
    if qmc_points:
        return sobol_point_sets(n, m_points, dim, seed)
    return mc_point_sets(n, m_points, dim, seed)


def check_stratification(u: np.ndarray) -> np.ndarray:
    """Whether each point set has exactly one point in every stratum ``[j/M, (j+1)/M)`` per coordinate.

    Parameters
    ----------
    u
        Point sets, shape (n, M, dim).

    Returns
    -------
    ndarray of bool, shape (n, dim)
    """
    u = np.asarray(u, dtype=np.float64)
    if u.ndim != 3:
        raise InvalidDataError(f"point sets must have shape (n, M, dim), got {u.shape}.")
    M = u.shape[1]
    cells = np.floor(u * M).astype(np.int64)
    srt = np.sort(cells, axis=1)
    return np.all(srt == np.arange(M)[None, :, None], axis=1)


def privatize(
    mechanism: Any, s: np.ndarray, m_points: int, seed: Any = None, qmc_points: bool = True
) -> np.ndarray:
    """``M`` privatised copies ``G(s_i, u_{i,m})`` of every confidential summary ``s_i``.

    This is inference-time simulation of the known mechanism (noise from the simulation seed),
    not a release.

    Returns
    -------
    ndarray, shape (n, M, out_dim)
    """
    s = np.asarray(s, dtype=np.float64)
    u = point_sets(s.shape[0], m_points, mechanism.noise_dim, seed, qmc_points)
    return np.asarray(mechanism.G(s[:, None, :], u), dtype=np.float64)


__all__ = [
    "MAX_LOG2_POINTS",
    "check_points",
    "check_stratification",
    "mc_point_sets",
    "point_sets",
    "privatize",
    "sobol_point_sets",
]
