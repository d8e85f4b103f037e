"""The Gaussian-kernel bandwidth: its validation and the median heuristic on simulated data.

The bandwidth ℓ of k(x, y) = exp(-||x - y||²/(2ℓ²)) must never be computed from the confidential
observed data: the MMD's sensitivity Δρ = 2/N (Park et al. 2021, Lemma 1) holds for a *fixed*
kernel, and a bandwidth read off the observed data would leak information that is not accounted
for. Pass it explicitly, or use :func:`median_heuristic` on *simulated* data (the paper's choice,
Section 6.1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidDataError, InvalidPrivacyParameterError

__all__ = ["check_bandwidth", "median_heuristic"]


def check_bandwidth(bandwidth: Any) -> float:
    """``bandwidth`` as a float after checking it is a positive finite number.

    Raises
    ------
    InvalidPrivacyParameterError
        If it is not a number, not finite or not positive (the message says where to get one).
    """
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


def _pooled_points(arr: np.ndarray, stacked: bool) -> np.ndarray:
    """The points of ``arr`` as one (n, d) array, by the shape convention of :func:`median_heuristic`."""
    if arr.ndim == 3:  # (T, N, d): a stack of data sets in any case
        return arr.reshape(-1, arr.shape[-1])
    if stacked:
        if arr.ndim != 2:
            raise InvalidDataError(
                "median_heuristic(stacked=True) needs a stack of data sets of shape (T, N) (scalar "
                f"points) or (T, N, d), got shape {arr.shape}."
            )
        return arr.reshape(-1, 1)  # (T, N): T data sets of N scalar points
    if arr.ndim == 1:
        return arr[:, None]
    return arr


def median_heuristic(
    simulated: Any, max_points: int = 2000, seed: int = 0, *, stacked: bool = False
) -> float:
    """Median pairwise Euclidean distance among *simulated* points (the bandwidth heuristic).

    ℓ = median{ ||x_i - x_j|| : i < j } over the pooled simulated points (Park et al. 2021,
    Section 6.1).

    Parameters
    ----------
    simulated
        Simulated data. The shape convention is explicit, never guessed from the sizes:

        * ``stacked=False`` (default): one data set, (N,) scalar points or (N, d) points of
          dimension d (any d);
        * ``stacked=True``: a stack of data sets whose first axis indexes the data sets, (T, N)
          for data sets of N scalar points;
        * (T, N, d) is a stack of data sets either way.

        The points of a stack are pooled. Never pass the confidential observed data: the result
        would leak information about it and is not accounted for.
    max_points
        At most this many pooled points (drawn without replacement with ``seed``) are used.
    seed
        Seed of that subsample.
    stacked
        Whether a two-dimensional ``simulated`` is a (T, N) stack of scalar data sets (True) or
        one data set of N points of dimension d (False), see above.

    Returns
    -------
    float
        The median of ||x_i - x_j|| over pairs i < j of distinct points (> 0).

    Raises
    ------
    InvalidDataError
        Fewer than 2 points, non-finite values, a shape that does not fit the convention, or a
        median of 0 (too many identical points).
    """
    arr = _pooled_points(np.asarray(simulated, dtype=np.float64), bool(stacked))
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
