"""Distances with declared sensitivities: MMD (random features, exact), clipped distances."""

from .bandwidth import median_heuristic
from .base import Distance, as_batch, as_points, count_records
from .clipped import ClippedDistance, weighted_euclidean
from .enforce import ReleaseSensitivity, SensitivityClippedDistance, release_sensitivity
from .mmd import RFFMMD, BinnedRFFMMD, ExactMMD

__all__ = [
    "BinnedRFFMMD",
    "ClippedDistance",
    "Distance",
    "ExactMMD",
    "RFFMMD",
    "ReleaseSensitivity",
    "SensitivityClippedDistance",
    "as_batch",
    "as_points",
    "count_records",
    "median_heuristic",
    "release_sensitivity",
    "weighted_euclidean",
]
