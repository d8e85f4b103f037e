"""The result of mechanism-density importance sampling, and its weight diagnostics.

Weighted draws ``θ_i ~ q`` with unnormalised weights ``w_i = p(θ_i) L̂(θ_i) / q(θ_i)``, where
``L̂(θ) = (1/L) Σ_l η(s_dp | s_l)`` estimates the private-data likelihood (equations (1)-(2) of
:mod:`dpinfer.inference.exact.importance`). ``log((1/n) Σ w_i)`` estimates ``log p(s_dp)`` without bias in
``Σ w_i``; Kish's ESS and the Pareto ``k̂`` of the largest weights (Vehtari, Simpson, Gelman, Yao &
Gabry 2024) say whether the weights can be trusted (``k̂ > 0.7``: no).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ...diagnostics.checks import pareto_khat
from ...privacy.report import PrivacyReport
from ...results.format import Record
from ...results.weighted import WeightedSample


def log_mean_exp(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """``log((1/L) Σ_l exp(a_l))`` along ``axis``, stably; ``-inf`` where every term is ``-inf``."""
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return logsumexp(a, axis=axis) - math.log(a.shape[axis])


@dataclass
class ImportanceResult(WeightedSample):
    """Weighted draws from ``p(θ | s_dp)`` (equation (2) of :mod:`dpinfer.inference.exact.importance`).

    Attributes
    ----------
    particles, log_weights
        θ-draws from the proposal and their unnormalised log weights ``log w_i``.
    log_likelihood
        ``log L̂(θ_i)`` (equation (1)).
    log_evidence
        ``log((1/n) Σ w_i)``, whose exponential is an unbiased estimate of ``p(s_dp)``.
    n_simulations
        Confidential simulations used (pilot included).
    privacy
        The privacy report of the release analysed (inference is post-processing: no budget).
    """

    particles: np.ndarray
    log_weights: np.ndarray
    log_likelihood: np.ndarray
    param_names: tuple[str, ...]
    observed: np.ndarray
    n_simulations: int
    settings: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    privacy: PrivacyReport | None = None

    @property
    def weights(self) -> np.ndarray:  # type: ignore[override]  # derived from log_weights, read-only
        lw = self.log_weights
        w = np.exp(lw - lw.max())
        return w / w.sum()

    @property
    def khat(self) -> float:
        return pareto_khat(self.log_weights)

    @property
    def log_evidence(self) -> float:
        return float(log_mean_exp(self.log_weights))

    def summary(self) -> str:
        head = (
            f"mechanism-density importance sampling: {self.particles.shape[0]} draws, "
            f"{self.n_simulations} simulations, ESS {self.ess:.0f}, Pareto k {self.khat:.2f}, "
            f"log evidence {self.log_evidence:.3f}"
        )
        return "\n".join([head, *self.summary_lines()])

    # -- persistence (dpinfer.result) -----------------------------------------------------------
    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        fields = {
            "n_simulations": self.n_simulations,
            "settings": self.settings,
            "diagnostics": self.diagnostics,
        }
        arrays = {
            "particles": self.particles,
            "log_weights": self.log_weights,
            "log_likelihood": self.log_likelihood,
            "observed": self.observed,
        }
        return fields, arrays

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> ImportanceResult:
        f, a = record.fields, record.arrays
        return cls(
            particles=a["particles"],
            log_weights=a["log_weights"],
            log_likelihood=a["log_likelihood"],
            param_names=record.param_names,
            observed=a["observed"],
            n_simulations=int(f["n_simulations"]),
            settings=f["settings"],
            diagnostics=f["diagnostics"],
            privacy=record.privacy,
        )

__all__ = ["ImportanceResult", "log_mean_exp", "pareto_khat"]
