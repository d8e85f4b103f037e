"""The result of the tempered exact-likelihood SMC sampler (:mod:`dpinfer.inference.tempered_smc`).

Particles ``θ_i`` with normalised weights (equal after the final resampling and moves), the
pseudo-marginal likelihood estimates ``log L̂(θ_i)`` they carry, the estimate of the log evidence
``log p(s_dp)``, and per-stage diagnostics (temperature, ESS before resampling, MH acceptance
rate, moves). Saved in the common ``dpinfer.result`` format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...privacy.report import PrivacyReport
from ...results.format import Record
from ...results.weighted import WeightedSample


@dataclass
class TemperedSMCResult(WeightedSample):
    """Weighted draws from the exact private-data posterior ``p(θ | s_dp)``.

    Attributes
    ----------
    particles, weights
        The final population (weights normalised).
    log_likelihood
        ``log L̂(θ_i)`` carried by each particle (the pseudo-marginal estimate of equation (1) of
        :mod:`dpinfer.inference.exact.importance`).
    log_evidence
        ``Σ_t log Σ_i w_i^{(t-1)} L̂(θ_i)^{β_t - β_{t-1}}``, the SMC estimate of ``log p(s_dp)``.
    stages
        One dict per tempering stage: ``beta``, ``ess`` (before resampling), ``acceptance_rate``
        (of the MH moves), ``moves``, ``wall_time``.
    n_simulations
        Confidential simulations used.
    """

    particles: np.ndarray
    weights: np.ndarray
    log_likelihood: np.ndarray
    param_names: tuple[str, ...]
    observed: np.ndarray
    log_evidence: float
    n_simulations: int
    settings: dict[str, Any]
    stages: list[dict[str, Any]] = field(default_factory=list)
    privacy: PrivacyReport | None = None

    @property
    def temperatures(self) -> list[float]:
        return [float(s["beta"]) for s in self.stages]

    def summary(self) -> str:
        head = (
            f"tempered exact SMC: {len(self.stages)} stages, {self.particles.shape[0]} particles, "
            f"{self.n_simulations} simulations, log evidence {self.log_evidence:.3f}, "
            f"last MH acceptance {self.stages[-1]['acceptance_rate']:.2f}"
        )
        stuck = self.settings.get("degenerate")
        return "\n".join([head, *self.summary_lines(), *([f"  warning: {stuck}"] if stuck else [])])

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        fields = {
            "log_evidence": self.log_evidence,
            "n_simulations": self.n_simulations,
            "settings": self.settings,
            "stages": self.stages,
        }
        arrays = {
            "particles": self.particles,
            "weights": self.weights,
            "log_likelihood": self.log_likelihood,
            "observed": self.observed,
        }
        return fields, arrays

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> TemperedSMCResult:
        f, a = record.fields, record.arrays
        return cls(
            particles=a["particles"],
            weights=a["weights"],
            log_likelihood=a["log_likelihood"],
            param_names=record.param_names,
            observed=a["observed"],
            log_evidence=float(f["log_evidence"]),
            n_simulations=int(f["n_simulations"]),
            settings=f["settings"],
            stages=list(f["stages"]),
            privacy=record.privacy,
        )


__all__ = ["TemperedSMCResult"]
