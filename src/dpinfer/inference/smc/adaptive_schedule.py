"""The default SMC-ABC schedule: quantile tolerances with a scale-free stopping rule.

Tolerances are those of :class:`~dpinfer.inference.smc.schedule.QuantileSchedule`: ``ε_0 = ∞`` (population 0
is the prior) and ``ε_{t+1}`` = the weighted ``alpha``-quantile of population ``t``'s distances
(Del Moral, Doucet & Jasra 2012). None of these depends on the units of the statistic; an absolute
schedule such as the paper's ``1.0·0.7^k → 0.2`` does, and stops far too early for a statistic
whose noise is much smaller than 0.2 (or runs for ever for one much larger).

The stopping rule uses the acceptance rates ``a_t`` only, which are unit-free. While ``ε`` is
large compared with the spread of the statistic given ``θ``, shrinking ``ε`` shrinks the ABC
posterior and the kernel follows it: ``a_t`` stays roughly constant. Once ``ε`` is well below that
spread, the ABC posterior no longer changes and the proposals are the same from one population to
the next, so the fraction of them within the ``alpha``-quantile is ``alpha``: ``a_{t+1} ≈
alpha·a_t``. The run therefore stops after population ``t`` when

* ``patience`` consecutive ratios ``a_s/a_{s-1}`` (``s >= 2``: population 0 is the prior) were at
  most ``ratio_slack·alpha`` — the posterior has converged (in every dimension, since the argument
  does not involve ``dim``) — *and* the last population's weighted sd is not still shrinking
  (every parameter's sd ratio to the population before is above
  :func:`~dpinfer.inference.smc.convergence.shrink_threshold`, the check SMC-ABC runs after the
  fit). The acceptance rates alone can look converged while the spread still falls: on a 12-week
  chain-binomial SIR release (``examples/personas/epidemiologist.py``) they did after 8
  populations while R0's sd still fell by 16% and γ's by 22% per population, and the run
  returned a posterior its own check then called too wide; with ``spread_check=False`` the rule
  is the acceptance rates' alone (the behaviour before);
* or ``a_t < min_acceptance_rate`` — the next population would cost more than
  ``n_particles/min_acceptance_rate`` simulations;
* or ``(ε_t - ε_{t+1})/ε_t < min_relative_decrease`` — the tolerance has stalled (discrete
  statistics, or an observed value the model cannot come close to);
* or ``max_populations`` populations ran.

A cap on the total number of simulations is ``max_simulations`` of :func:`~dpinfer.inference.smc_abc`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...diagnostics.conflict import prior_data_conflict
from ...errors import InvalidDataError
from ...results.weighted import weighted_quantile
from .convergence import still_shrinking


@dataclass
class AdaptiveSchedule:
    """Quantile tolerances with the scale-free stopping rule of the module docstring.

    The acceptance rates seen so far are kept on the object and reset by :meth:`initial`, which
    every run calls first; ``stop_reason`` says which rule ended the last run.
    """

    alpha: float = 0.5
    patience: int = 3
    ratio_slack: float = 1.2
    min_acceptance_rate: float = 0.01
    min_relative_decrease: float = 0.01
    max_populations: int = 30
    spread_check: bool = True
    rates: list[float] = field(default_factory=list, repr=False, compare=False)
    spreads: list[Any] = field(default_factory=list, repr=False, compare=False)
    stop_reason: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise InvalidDataError(f"alpha must be in (0, 1), got {self.alpha}.")
        if self.patience < 1 or self.max_populations < 1:
            raise InvalidDataError("patience and max_populations must be >= 1.")
        if not (self.ratio_slack >= 1 and 0 <= self.min_acceptance_rate < 1):
            raise InvalidDataError("need ratio_slack >= 1 and 0 <= min_acceptance_rate < 1.")
        if not 0 <= self.min_relative_decrease < 1:
            raise InvalidDataError("min_relative_decrease must be in [0, 1).")

    def initial(self) -> float:
        self.rates = []
        self.spreads = []
        self.stop_reason = ""
        return math.inf

    def observe(self, t: int, sd: Any, ess: float) -> None:
        """Record population ``t``'s weighted sds and ESS (SMC-ABC calls this before :meth:`next`)."""
        self.spreads = self.spreads[:t] + [None] * max(0, t - len(self.spreads)) + [
            (None if sd is None else np.asarray(sd, dtype=float), float(ess))
        ]

    def replay(self, pops: list[Any]) -> None:
        """Rebuild the acceptance rates and spreads from a resumed run's completed populations, so
        that a resumed run stops where the uninterrupted one would."""
        self.rates = [float(p.acceptance_rate) for p in pops]
        self.spreads = [(None if p.sd is None else np.asarray(p.sd, dtype=float), float(p.ess)) for p in pops]

    def _still_shrinking(self) -> bool:
        """Some parameter's sd still shrinking between the last two populations (the check of
        :func:`~dpinfer.inference.smc.convergence.still_shrinking`; unknown sds: no)."""
        if not self.spread_check or len(self.spreads) < 2 or len(self.rates) < 3:  # 1 follows the prior
            return False
        prev, last = self.spreads[-2], self.spreads[-1]
        if prev is None or last is None or prev[0] is None or last[0] is None:
            return False
        return bool(still_shrinking(last[0], last[1], prev[0], prev[1])[2])

    def _converged(self) -> bool:
        ratios = [b / a for a, b in zip(self.rates[1:], self.rates[2:], strict=False) if a > 0]
        tail = ratios[-self.patience :]
        return (
            len(tail) == self.patience
            and all(r <= self.ratio_slack * self.alpha for r in tail)
            and not self._still_shrinking()
        )

    def next(
        self, t: int, tolerance: float, distances: np.ndarray, weights: np.ndarray, acceptance_rate: float
    ) -> float | None:
        self.rates = self.rates[:t] + [float(acceptance_rate)]
        if self._converged():
            self.stop_reason = (
                f"converged: the acceptance rate fell by about alpha={self.alpha} in each of the last "
                f"{self.patience} populations"
                + (" and the spread stopped shrinking" if self.spread_check else "")
            )
            return None
        if t > 0 and acceptance_rate < self.min_acceptance_rate:
            self.stop_reason = f"acceptance rate {acceptance_rate:.3g} < {self.min_acceptance_rate}"
            return None
        if tolerance <= 0:
            self.stop_reason = "tolerance reached 0 (every accepted simulation equals the observation)"
            return None
        if t + 1 >= self.max_populations:
            self.stop_reason = f"max_populations={self.max_populations} reached"
            return None
        nxt = float(weighted_quantile(distances, weights, self.alpha))
        if math.isfinite(tolerance) and (tolerance - nxt) < self.min_relative_decrease * tolerance:
            self.stop_reason = (
                f"tolerance stalled at {tolerance:.4g} (relative decrease below {self.min_relative_decrease})"
            )
            return None
        return nxt


def stall_message(
    t: int, n_acc: int, sims: int, n_particles: int, tolerance: float, observed: np.ndarray
) -> str:
    """Why SMC-ABC population ``t`` could not be completed within its simulation cap, and what to do."""
    head = (
        f"population {t} accepted only {n_acc} of {sims} simulations (it needs {n_particles}) within "
        f"tolerance {tolerance:.4g} of the observed statistic {np.asarray(observed).tolist()}"
    )
    if n_acc == 0:
        return head + (
            ": is the observed statistic possible under the model? Check its value and units against "
            "the model's simulations (schedule='adaptive' starts from the prior predictive)."
        )
    return head + (
        ": the tolerance is too small for this budget (use schedule='adaptive', whose stopping rule "
        "adapts to the statistic's scale, or raise max_population_simulations), or the observed "
        "statistic is nearly impossible under the model."
    )


def stalled_findings(model: Any, observed: np.ndarray, root: np.random.SeedSequence) -> list:
    """After a stalled tolerance: is the observation far in the tail of the prior predictive?

    A tolerance that stops shrinking is normal for a discrete statistic, but it is also what an
    observed value the model cannot reach looks like; the prior predictive tells them apart
    (the shared check :func:`~dpinfer.diagnostics.conflict.prior_data_conflict`). Seed
    ``spawn_key (2,)``.
    """
    found, _ = prior_data_conflict(
        model, observed, seed=np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (2,))
    )
    return found


__all__ = ["AdaptiveSchedule", "stall_message", "stalled_findings"]
