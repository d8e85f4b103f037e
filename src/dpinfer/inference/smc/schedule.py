"""Tolerance schedules of SMC-ABC: the sequence ``ε_0 > ε_1 > ...`` of acceptance tolerances.

A schedule gives the first tolerance (:meth:`initial`) and, after population ``t`` has been
accepted at ``ε_t``, the next one or None to stop (:meth:`next`, which sees the population's
distances, weights and acceptance rate):

* :class:`GeometricSchedule` ``"paper"``: ``ε_k = 1.0·0.7^k`` while the previous tolerance exceeds
  0.2, six populations ending at 0.168 (the authors' ``smc_abc.py``);
* :class:`QuantileSchedule`: ``ε_{t+1}`` = the weighted ``alpha``-quantile of the distances of
  population ``t`` (Del Moral, Doucet & Jasra 2012 style), from ``ε_0 = ∞``, for a fixed number of
  populations;
* :class:`AdaptiveSchedule` ``"adaptive"`` (the default of :func:`~dpinfer.inference.smc_abc`): the same
  quantile tolerances with a stopping rule that does not depend on the units of the statistic
  (:mod:`dpinfer.inference.smc.adaptive_schedule`);
* :class:`FixedSchedule`: an explicit non-increasing list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidDataError
from ...results.weighted import weighted_quantile


@dataclass(frozen=True)
class GeometricSchedule:
    """``ε_k = start·factor^k``, run while the previous tolerance exceeds ``stop``.

    The default is the authors' schedule (``smc_abc.py``): 1.0, 0.7, 0.49, 0.343, 0.2401, 0.16807.
    """

    start: float = 1.0
    factor: float = 0.7
    stop: float = 0.2
    max_populations: int = 100

    def __post_init__(self) -> None:
        if not (self.start > 0 and 0 < self.factor < 1 and self.stop >= 0):
            raise InvalidDataError("GeometricSchedule needs start > 0, 0 < factor < 1 and stop >= 0.")

    def initial(self) -> float:
        return float(self.start)

    def next(
        self, t: int, tolerance: float, distances: np.ndarray, weights: np.ndarray, acceptance_rate: float
    ) -> float | None:
        if tolerance <= self.stop or t + 1 >= self.max_populations:
            return None
        return tolerance * self.factor


@dataclass(frozen=True)
class QuantileSchedule:
    """Adaptive tolerances: ``ε_{t+1}`` = the weighted ``alpha``-quantile of population t's distances.

    Population 0 is the prior (``ε_0 = ∞``, every draw accepted). Stops after ``max_populations``,
    when ``ε`` reaches ``min_tolerance`` or when the acceptance rate fell below
    ``min_acceptance_rate``.
    """

    alpha: float = 0.5
    min_tolerance: float = 0.0
    max_populations: int = 10
    min_acceptance_rate: float = 0.0

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise InvalidDataError(f"alpha must be in (0, 1), got {self.alpha}.")
        if self.max_populations < 1:
            raise InvalidDataError("max_populations must be >= 1.")

    def initial(self) -> float:
        return math.inf

    def next(
        self, t: int, tolerance: float, distances: np.ndarray, weights: np.ndarray, acceptance_rate: float
    ) -> float | None:
        if t + 1 >= self.max_populations or tolerance <= self.min_tolerance:
            return None
        if t > 0 and acceptance_rate < self.min_acceptance_rate:
            return None
        q = float(weighted_quantile(distances, weights, self.alpha))
        return max(q, float(self.min_tolerance))


@dataclass(frozen=True)
class FixedSchedule:
    """An explicit decreasing list of tolerances."""

    tolerances: tuple[float, ...]

    def __post_init__(self) -> None:
        tol = tuple(float(t) for t in self.tolerances)
        if not tol or any(t <= 0 for t in tol) or any(b > a for a, b in zip(tol, tol[1:], strict=False)):
            raise InvalidDataError(
                "FixedSchedule needs a non-empty, non-increasing list of positive tolerances."
            )
        object.__setattr__(self, "tolerances", tol)

    def initial(self) -> float:
        return self.tolerances[0]

    def next(
        self, t: int, tolerance: float, distances: np.ndarray, weights: np.ndarray, acceptance_rate: float
    ) -> float | None:
        return self.tolerances[t + 1] if t + 1 < len(self.tolerances) else None


def make_schedule(schedule: Any) -> Any:
    """``"adaptive"`` (scale-free stopping), ``"paper"``/``"geometric"`` (1.0·0.7^k down to 0.2),
    ``"quantile"`` (10 quantile populations), a list of tolerances or a schedule object."""
    from .adaptive_schedule import AdaptiveSchedule

    if schedule in ("paper", "geometric"):
        return GeometricSchedule()
    if schedule == "adaptive":
        return AdaptiveSchedule()
    if schedule == "quantile":
        return QuantileSchedule()
    if isinstance(schedule, (GeometricSchedule, QuantileSchedule, FixedSchedule, AdaptiveSchedule)):
        return schedule
    if isinstance(schedule, Sequence) and not isinstance(schedule, str):
        return FixedSchedule(tuple(schedule))
    if hasattr(schedule, "initial") and hasattr(schedule, "next"):
        return schedule
    raise InvalidDataError(
        f"unknown schedule {schedule!r}: use 'paper', 'adaptive', a list of tolerances or a schedule object."
    )


__all__ = ["FixedSchedule", "GeometricSchedule", "QuantileSchedule", "make_schedule"]
