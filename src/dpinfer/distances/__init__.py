"""Distances with declared sensitivities: MMD (random features, exact), clipped distances."""

from .bandwidth import median_heuristic
from .base import Distance, as_batch, as_points
from .clipped import ClippedDistance, weighted_euclidean
from .mmd import RFFMMD, BinnedRFFMMD, ExactMMD

__all__ = [
    "BinnedRFFMMD",
    "ClippedDistance",
    "Distance",
    "ExactMMD",
    "RFFMMD",
    "as_batch",
    "as_points",
    "median_heuristic",
    "weighted_euclidean",
]
