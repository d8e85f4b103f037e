"""Synthetic records (x, y) of a binary regression on covariates: logistic or probit.

The covariates x come from a :class:`~dpinfer.models.covariates.CovariateSource` (a DP covariate
model or covariates declared public) in their own units; θ multiplies the design's columns
(:func:`apply_design`: each column scaled to [-1, 1] by its public bounds, a first column of ones
for an intercept), and ``y ~ Bernoulli(F(x̃ᵀθ))``. Used by DPVI's logistic regression
(:meth:`dpinfer.release.dpvi.LogisticRegression.simulate_conditional_records`) and the private GLM
(:func:`dpinfer.models.synthesis.glm_synthesize`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from .covariates import as_covariate_source
from .record_synthesis import RecordSimulator


def apply_design(design: Mapping[str, Any] | None, x: np.ndarray) -> np.ndarray:
    """Raw covariates -> the columns θ multiplies: each scaled to [-1, 1] by its public
    ``bounds`` (``2 (x - lo)/(hi - lo) - 1``) and a first column of ones for an ``intercept``."""
    if not design:
        return x
    if design.get("offset"):
        raise InvalidDataError(
            "this fit has an offset (exposure): synthetic records would need the offset's law too, "
            "which the release does not carry; synthesize from a fit without offset."
        )
    if design.get("bounds") is not None:
        b = np.asarray(design["bounds"], dtype=np.float64)
        x = 2.0 * (x - b[:, 0]) / (b[:, 1] - b[:, 0]) - 1.0
    if design.get("intercept"):
        x = np.column_stack([np.ones(x.shape[0]), x])
    return x


def logistic_simulator(
    covariates: Any, design: Mapping[str, Any] | None = None, link: str = "logit", target: str = "y"
) -> tuple[RecordSimulator, tuple[str, ...]]:
    """Records (x, y): x from ``covariates`` (:func:`~dpinfer.models.covariates.as_covariate_source`),
    in their own units, and y ~ Bernoulli(F(x̃ᵀθ)) with x̃ the design's columns (:func:`apply_design`:
    bounds scaling, intercept) and F the logistic (``link="logit"``) or normal (``"probit"``) cdf."""
    source = as_covariate_source(covariates)
    d = source.n_columns
    width = d + int(bool(design and design.get("intercept")))

    def simulate(th: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if th.shape[1] != width:
            raise InvalidDataError(
                f"the covariate source has {d} columns{' (+ intercept)' if width > d else ''}, the "
                f"posterior {th.shape[1]} coefficients: release the covariate model on the same feature "
                "columns as the fit, in the same order."
            )
        x = source.sample(th.shape[0], rng)
        eta = np.einsum("ij,ij->i", apply_design(design, x), th)
        if link == "probit":
            from scipy.special import ndtr

            p = ndtr(eta)
        else:
            p = 1.0 / (1.0 + np.exp(-eta))
        return np.column_stack([x, (rng.uniform(size=th.shape[0]) < p).astype(np.float64)])

    columns: Sequence[str] = getattr(source, "columns", None) or tuple(f"x{j}" for j in range(d))
    return simulate, (*columns, target)


__all__ = ["apply_design", "logistic_simulator"]
