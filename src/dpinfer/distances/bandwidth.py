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
