"""The result of SMC-ABC: the final weighted population, every population's diagnostics, persistence.

Saved in the common ``dpinfer.result`` format (:mod:`dpinfer.results.format`): the arrays
``particles``, ``weights``, ``distances``, ``observed`` and ``hist_particles_t`` /
``hist_weights_t`` for every kept population ``t``; the populations' diagnostics, the settings,
``complete``/``stop_reason`` and the model description as JSON fields.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ...privacy.report import PrivacyReport
from ...results.format import Record
from ..weighted import WeightedSample


@dataclass
class PopulationDiagnostics:
    """Per-population facts: tolerance, simulations, acceptance rate, ESS, resampling, time.

    ``n_simulations`` are the simulations this population's particles depend on (the result's
    :attr:`SMCABCResult.n_simulations` is their sum) and ``n_simulations_total`` that sum up to and
    including this population (0 in results saved before it existed); ``n_simulations_run`` also
    counts the speculative batches run in parallel and discarded, which no total includes.
    ``sd`` is the population's weighted marginal sd (the "still shrinking" check of
    :mod:`dpinfer.inference.smc.convergence`).
    """

    t: int
    tolerance: float
    n_simulations: int
    n_simulations_run: int
    acceptance_rate: float
    ess: float
    resampled_before: bool
    wall_time: float
    kernel_cov: list[list[float]] | None = None
    n_simulations_total: int = 0
    sd: list[float] | None = None


def _history_arrays(history: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for t, (p, w) in enumerate(history):
        arrays[f"hist_particles_{t}"] = p
        arrays[f"hist_weights_{t}"] = w
    return arrays


def _history(arrays: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    hist = []
    t = 0
    while f"hist_particles_{t}" in arrays:
        hist.append((arrays[f"hist_particles_{t}"], arrays[f"hist_weights_{t}"]))
        t += 1
    return hist


@dataclass
class SMCABCResult(WeightedSample):
    """The output of :func:`~dpinfer.inference.smc_abc`.

    Attributes
    ----------
    particles, weights, distances
        The final population (weights normalised).
    populations
        :class:`PopulationDiagnostics` of every completed population.
    history
        ``(particles, weights)`` of every completed population.
    n_simulations
        Simulations the result depends on (deterministic for a seed); ``n_simulations_run``
        also counts speculative batches that were computed in parallel and discarded.
    complete
        False if the run stopped early (``stop_reason`` says why).
    privacy
        The privacy report of the release analysed (inference is post-processing: no budget).
    """

    particles: np.ndarray
    weights: np.ndarray
    distances: np.ndarray
    populations: list[PopulationDiagnostics]
    history: list[tuple[np.ndarray, np.ndarray]]
    param_names: tuple[str, ...]
    observed: np.ndarray
    settings: dict[str, Any]
    complete: bool = True
    stop_reason: str = ""
    privacy: PrivacyReport | None = None
    model: dict[str, Any] = field(default_factory=dict)

    @property
    def n_simulations(self) -> int:
        return int(sum(p.n_simulations for p in self.populations))

    @property
    def n_simulations_run(self) -> int:
        return int(sum(p.n_simulations_run for p in self.populations))

    @property
    def tolerance(self) -> float:
        return self.populations[-1].tolerance

    def summary(self) -> str:
        head = (
            f"SMC-ABC: {len(self.populations)} populations, {self.n_simulations} simulations, "
            f"final tolerance {self.tolerance:.4g}, ESS {self.ess:.0f}"
            + ("" if self.complete else f" [INCOMPLETE: {self.stop_reason}]")
        )
        warned = [f"  warning: {f['message']}" for f in self.settings.get("findings", [])]
        return "\n".join([head, *self.summary_lines(), *warned])

    # -- persistence (dpinfer.result) -----------------------------------------------------------
    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        fields = {
            "populations": [asdict(p) for p in self.populations],
            "settings": self.settings,
            "complete": self.complete,
            "stop_reason": self.stop_reason,
            "model": self.model,
        }
        arrays = {
            "particles": self.particles,
            "weights": self.weights,
            "distances": self.distances,
            "observed": self.observed,
            **_history_arrays(self.history),
        }
        return fields, arrays

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> SMCABCResult:
        f, a = record.fields, record.arrays
        return cls(
            particles=a["particles"],
            weights=a["weights"],
            distances=a["distances"],
            populations=[PopulationDiagnostics(**p) for p in f["populations"]],
            history=_history(a),
            param_names=record.param_names,
            observed=a["observed"],
            settings=f["settings"],
            complete=f["complete"],
            stop_reason=f["stop_reason"],
            privacy=record.privacy,
            model=f.get("model", {}),
        )

__all__ = ["PopulationDiagnostics", "SMCABCResult"]
