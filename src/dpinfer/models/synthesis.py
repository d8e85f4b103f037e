"""Synthetic data from a released posterior: posterior-predictive records, no privacy cost.

A differentially private posterior (ABCDP's accepted θ, a DPVI fit, a posterior given a privatised
statistic) is a release; drawing θ from it and simulating data from the model at θ touches the
confidential data only through that release, so by the post-processing property of differential
privacy (Dwork & Roth 2014, Proposition 2.1) the simulated columns carry exactly the release's
(ε, δ) guarantee and cost nothing more. This is the "synthetic data as a by-product" of Park,
Vinaroz & Jitkrittum (2021, §7).

Each synthetic *record* is an independent draw from the posterior predictive: θ_i ~ released
posterior, then one record y_i ~ p(y | θ_i). What a record is, the model says itself
(:mod:`dpinfer.models.record_synthesis`: ``record_columns`` and ``simulate_records``, or their
conditional forms for a regression of y on covariates). The covariates of a conditional model's
records come from a public or differentially private source, never from the confidential records
(:mod:`dpinfer.models.covariates`, :mod:`dpinfer.models.covariate_marginals`). The result is a
:class:`~dpinfer.results.synthetic.SyntheticData`, which states what is and is not protected.

This module holds the generic machinery (:func:`synthesize_from`, :func:`synthesize`,
:func:`glm_synthesize`); the names it re-exports from the modules above keep their old import path
``dpinfer.models.synthesis``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..privacy.report import PrivacyReport
from ..results.synthetic import POST_PROCESSING, SyntheticData, sidecar_path
from .binary_records import apply_design, logistic_simulator
from .covariate_marginals import MarginalHistogramModel
from .covariates import CovariateSource, PublicCovariates, as_covariate_source
from .record_synthesis import (
    RecordSimulator,
    SupportsConditionalRecordSynthesis,
    SupportsRecordSynthesis,
    record_simulator,
)

#: The most records one call synthesizes (about 0.8 GB per column as float64).
MAX_RECORDS = 10**8


def check_n(n: Any) -> int:
    """n must be an integer in [1, :data:`MAX_RECORDS`] (refused before anything is drawn)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer, float)) or not np.isfinite(n) \
            or int(n) != n or int(n) < 1:
        raise InvalidDataError(f"n (the number of synthetic records) must be an integer >= 1, got {n!r}.")
    if int(n) > MAX_RECORDS:
        raise InvalidDataError(
            f"n = {int(n):.3g} synthetic records would need about {int(n) * 8 * 3 / 2**30:.3g} GiB per "
            f"column of memory; at most {MAX_RECORDS:.0e} per call: synthesize in chunks with other seeds."
        )
    return int(n)


def synthesize(
    thetas: np.ndarray,
    simulate: RecordSimulator,
    columns: tuple[str, ...],
    seed: Any,
    source_privacy: PrivacyReport | None,
    source: dict[str, Any] | None = None,
) -> SyntheticData:
    """One posterior-predictive record per row of ``thetas`` (drawn from the released posterior).

    ``seed`` (an int or a numpy ``SeedSequence``) governs only the public simulation randomness:
    the same release, θ draws and seed give the same records.
    """
    thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
    rng = np.random.default_rng(seed)
    records = np.asarray(simulate(thetas, rng), dtype=np.float64)
    if records.ndim not in (1, 2) or records.shape[0] != thetas.shape[0]:
        raise InvalidDataError(
            f"the simulator gave an array of shape {records.shape} for {thetas.shape[0]} θ rows: expected "
            f"({thetas.shape[0]}, {len(columns)}), one record per row of θ."
        )
    records = records.reshape(thetas.shape[0], -1)
    if records.shape[1] != len(columns):
        raise InvalidDataError(f"the simulator gave {records.shape[1]} columns, expected {len(columns)}.")
    return SyntheticData(records, tuple(columns), thetas, source_privacy, dict(source or {}))


def synthesize_from(
    posterior: Any, n: Any, seed: Any, model: Any, covariates: CovariateSource | None = None
) -> SyntheticData:
    """``n`` posterior-predictive records from a result with ``sample(n, seed)`` and ``privacy``.

    ``covariates`` (a conditional model only): a :class:`MarginalHistogramModel` or
    :class:`PublicCovariates` (module docstring). The θ draws and the simulations use two
    independent streams spawned from ``seed``.
    """
    n = check_n(n)
    if model is None:
        raise InvalidDataError(
            "the model to simulate from is not known for this result: pass model=... (the model the "
            "posterior was computed for)."
        )
    config = getattr(posterior, "config", None)
    design = config.get("design") if isinstance(config, dict) else None
    simulate, columns = record_simulator(model, covariates, design=design)
    theta_seed, sim_seed = np.random.SeedSequence(seed).spawn(2)
    thetas = posterior.sample(n, np.random.default_rng(theta_seed))
    source = {"result": type(posterior).__name__, "model": type(model).__name__}
    out = synthesize(thetas, simulate, columns, sim_seed, getattr(posterior, "privacy", None), source)
    if covariates is not None:
        out.covariates = covariates.describe()
        out.covariate_columns = columns[:-1]
    return out


def glm_synthesize(posterior: Any, n: Any, covariates: Any, seed: Any = None,
                   target: str | None = None) -> SyntheticData:
    """``n`` posterior-predictive records of a private GLM (:class:`dpinfer.inference.glm.GLMPosterior`,
    logistic or probit): θ from the posterior, covariates from ``covariates`` (a DP covariate model
    or :class:`PublicCovariates`, as for DPVI), y from the model. Post-processing of the GLM
    release (plus the covariate model's own release): no further cost. ``target`` names the
    response column (default: the name of ``y`` given to ``private_glm``, else ``"y"``)."""
    n = check_n(n)
    rel = posterior.release
    if rel.family not in ("logistic", "probit"):
        raise InvalidDataError(
            f"synthetic records from a {rel.family} GLM are not available here (only logistic and "
            "probit: their records need no offset law or noise scale)."
        )
    if rel.has_offset:
        apply_design({"offset": True}, np.zeros((0, 0)))
    design = {"bounds": np.asarray(rel.feature_bounds).tolist(), "intercept": rel.intercept}
    name = target or (posterior.settings or {}).get("target") or "y"
    simulate, columns = logistic_simulator(covariates, design=design, link="logit" if rel.family ==
                                           "logistic" else "probit", target=str(name))
    theta_seed, sim_seed = np.random.SeedSequence(seed).spawn(2)
    thetas = posterior.sample(n, np.random.default_rng(theta_seed), scale="scaled")  # θ of the scaled design
    source = {"result": type(posterior).__name__, "model": f"GLM ({rel.family})"}
    out = synthesize(thetas, simulate, columns, sim_seed, posterior.privacy, source)
    out.covariates = as_covariate_source(covariates).describe()
    out.covariate_columns = columns[:-1]
    return out


__all__ = [
    "MAX_RECORDS",
    "POST_PROCESSING",
    "CovariateSource",
    "MarginalHistogramModel",
    "PublicCovariates",
    "RecordSimulator",
    "SupportsConditionalRecordSynthesis",
    "SupportsRecordSynthesis",
    "SyntheticData",
    "apply_design",
    "as_covariate_source",
    "check_n",
    "glm_synthesize",
    "logistic_simulator",
    "record_simulator",
    "sidecar_path",
    "synthesize",
    "synthesize_from",
]
