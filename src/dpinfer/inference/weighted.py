"""Moved to :mod:`dpinfer.results.weighted` (shared by releases and post-processing); this path
re-exports it so that ``from dpinfer.inference.weighted import ...`` keeps working."""

from ..results.weighted import (
    RESAMPLE_CHAINS,
    WeightedSample,
    add_weighted_groups,
    ess,
    release_facts,
    weighted_cov,
    weighted_quantile,
    weighted_to_arviz,
)

__all__ = ["RESAMPLE_CHAINS", "WeightedSample", "add_weighted_groups", "ess", "release_facts",
           "weighted_cov", "weighted_quantile", "weighted_to_arviz"]
