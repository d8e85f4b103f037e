"""Prior–data conflict: is the observed release far in the tail of the prior predictive?

One check for every analyst method (importance sampling, tempered SMC, SMC-ABC, SPPE/SPLE and
``infer``). The *prior predictive* of a release is the law of ``s_dp`` when ``θ ~ prior``, the
confidential statistic is simulated at ``θ`` and the mechanism's noise is added
(:meth:`~dpinfer.models.contract.PrivateDataModel.simulate`). A release that this law almost never
produces is a prior–data conflict (Box 1980; Evans & Moshonov 2006): the posterior is then decided
by the prior's far tail or by an extrapolation of the simulations, and no sampler diagnostic (ESS,
k̂, R-hat) notices, because sampling the wrong posterior well is still sampling it well. The
classic case is a release in the data's own units (a mean body-mass index of 26.9) read with a
model whose prior and bounds are for standardised data: every simulated release sits at the clamp
bound, the likelihood is flat over the prior, and the "posterior" is the prior.

The test (per coordinate ``d`` of the release, ``M`` prior-predictive simulations ``y_1..y_M``)::

    p_d = min(1, 2·(1 + min(#{y_jd ≤ o_d}, #{y_jd ≥ o_d})) / (M + 1)),                  (1)

the two-sided Monte Carlo tail probability of the observed coordinate ``o_d`` (Davison & Hinkley
1997, eq. 4.11; ``P(p_d ≤ u) ≤ u`` when ``o`` is itself a prior-predictive draw). A conflict is
declared when ``min_d p_d ≤ α / D`` (Bonferroni over the ``D`` coordinates), so a release the model
really produced sets it off with probability at most ``α`` (:data:`ALPHA` = 0.01). The smallest
attainable ``p_d`` is ``2/(M + 1)``; :func:`needed_simulations` is the ``M`` at which the test can
fire at all (``M ≥ 2D/α − 1``), at least :data:`MIN_SIMULATIONS`. When only the range
``[min, max]`` of the simulations is known (SMC-ABC's population 0 is simulated in parallel
batches that report their range), (1) is evaluated conservatively: ``2/(M + 1)`` outside the
range, 1 inside (:func:`range_check`).

The check is marginal: a release whose coordinates are each plausible but jointly impossible is
not detected.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PriorDataConflictWarning
from .checks import Finding

#: family-wise false-alarm probability of the test under the model (equation (1) and below)
ALPHA = 0.01
#: the fewest prior-predictive simulations the check draws when it simulates them itself
MIN_SIMULATIONS = 1000


def needed_simulations(dim: int, alpha: float = ALPHA) -> int:
    """``M`` such that the smallest tail probability ``2/(M+1)`` is at most ``alpha/dim``."""
    return max(MIN_SIMULATIONS, math.ceil(2.0 * max(int(dim), 1) / alpha))


@dataclass(frozen=True)
class TailCheck:
    """Equation (1) for every coordinate of one observed release.

    Attributes
    ----------
    observed
        The observed release, shape (D,).
    tail_probability
        ``p_d`` of equation (1), shape (D,).
    lower, upper
        The range of the simulations per coordinate.
    n_above, n_below
        Simulations at or above / at or below the observed coordinate (None from a range only).
    n
        The number of simulations ``M``.
    alpha
        The family-wise level; the per-coordinate threshold is ``alpha / D``.
    """

    observed: np.ndarray
    tail_probability: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_above: np.ndarray | None
    n_below: np.ndarray | None
    n: int
    alpha: float = ALPHA

    @property
    def threshold(self) -> float:
        return self.alpha / max(self.observed.size, 1)

    @property
    def resolvable(self) -> bool:
        """Whether ``M`` is large enough for the test to fire at all (``2/(M+1) ≤ α/D``)."""
        return 2.0 / (self.n + 1) <= self.threshold

    @property
    def outside(self) -> bool:
        """Whether some coordinate lies outside the range of the simulations."""
        return bool(np.any((self.observed < self.lower) | (self.observed > self.upper)))

    @property
    def flagged(self) -> list[int]:
        """The coordinates whose tail probability is at most the threshold."""
        return [int(j) for j in np.nonzero(self.tail_probability <= self.threshold)[0]]

    @property
    def conflict(self) -> bool:
        return bool(self.flagged)


def tail_probabilities(observed: Any, simulated: Any, alpha: float = ALPHA) -> TailCheck:
    """Equation (1) for ``observed`` (D,) against ``simulated`` releases (M, D); non-finite rows
    of ``simulated`` are dropped."""
    obs = np.asarray(observed, dtype=np.float64).reshape(-1)
    sims = np.asarray(simulated, dtype=np.float64).reshape(-1, obs.size)
    sims = sims[np.all(np.isfinite(sims), axis=1)]
    m = sims.shape[0]
    if m == 0:
        nan = np.full(obs.size, np.nan)
        return TailCheck(obs, np.ones(obs.size), nan, nan, None, None, 0, alpha)
    below = np.sum(sims <= obs, axis=0)
    above = np.sum(sims >= obs, axis=0)
    p = np.minimum(1.0, 2.0 * (1.0 + np.minimum(below, above)) / (m + 1.0))
    return TailCheck(obs, p, sims.min(axis=0), sims.max(axis=0), above, below, m, alpha)


def range_check(observed: Any, lower: Any, upper: Any, n: int, alpha: float = ALPHA) -> TailCheck:
    """Equation (1) bounded from the range ``[lower, upper]`` of ``n`` simulations only: ``2/(n+1)``
    for a coordinate outside the range, 1 (no evidence) inside it."""
    obs = np.asarray(observed, dtype=np.float64).reshape(-1)
    lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), obs.shape)
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), obs.shape)
    outside = (obs < lo) | (obs > hi)
    p = np.where(outside, min(1.0, 2.0 / (int(n) + 1.0)), 1.0)
    return TailCheck(obs, p, lo.copy(), hi.copy(), None, None, int(n), alpha)


def prior_advice(model: Any) -> str:
    """What to change, for ``model``: the arguments that set its prior, and the rest of its set-up.

    Names the model's constructor arguments whose name starts with ``prior`` (the shipped models'
    ``prior_mean`` and ``prior_sd`` are also the command line's ``--prior-mean`` and
    ``--prior-sd``).
    """
    prior = getattr(model, "prior", None)
    try:
        params = [p for p in inspect.signature(type(model)).parameters if p.startswith("prior")]
    except (TypeError, ValueError):
        params = []
    flags = [f"--{p.replace('_', '-')}" for p in params if p in ("prior_mean", "prior_sd")]
    how = (
        f"set {', '.join(params)}" + (f" (command line: {', '.join(flags)})" if flags else "")
        if params else "give the model a prior"
    )
    return (
        f"move or widen the prior so that it covers parameters that produce this release ({how}; "
        f"now {prior!r}), and check that the model's other settings (units, clamp bounds, record "
        "spread, n, epsilon) describe the release"
    )


def conflict_findings(
    check: TailCheck, *, advice: str = "", source: str = "simulations of the model from its prior"
) -> list[Finding]:
    """The :class:`~dpinfer.errors.PriorDataConflictWarning` finding of ``check``, or none."""
    if not check.conflict:
        return []
    parts = []
    for j in check.flagged:
        o, lo, hi = check.observed[j], check.lower[j], check.upper[j]
        if o < lo or o > hi:
            parts.append(f"coordinate {j}: {o:.4g} not in [{lo:.4g}, {hi:.4g}]")
        else:
            side, cnt = ("upper", check.n_above) if o > np.median([lo, hi]) else ("lower", check.n_below)
            k = "?" if cnt is None else int(cnt[j])
            parts.append(f"coordinate {j}: {o:.4g} in the {side} tail ({k} of {check.n} at or beyond it)")
    pmin = float(np.min(check.tail_probability))
    head = "outside the range" if any("not in" in p for p in parts) else "in the far tail"
    msg = (
        f"prior-data conflict: the observed release lies {head} of {check.n} {source} "
        f"({'; '.join(parts)}); tail probability {pmin:.2g} <= {check.threshold:.2g} (= {check.alpha:g} "
        f"over {check.observed.size} coordinate(s); a release the model produced sets this off with "
        f"probability <= {check.alpha:g}). The posterior then rests on the prior's tail or on an "
        "extrapolation, whatever the sampler's own diagnostics say."
    )
    if advice:
        msg += f" To fix it: {advice}."
    return [Finding(PriorDataConflictWarning, msg)]


def prior_predictive(model: Any, n: int, seed: Any = None) -> np.ndarray:
    """``n`` releases simulated from ``model``'s prior (θ-draws, confidential simulation, noise)."""
    rng = np.random.default_rng(seed)
    theta = model.prior.sample(int(n), rng)
    return np.asarray(model.simulate(theta, rng), dtype=np.float64).reshape(int(n), -1)


def prior_data_conflict(
    model: Any,
    observed: Any,
    *,
    simulated: Any = None,
    span: tuple[Any, Any, int] | None = None,
    seed: Any = None,
    alpha: float = ALPHA,
) -> tuple[list[Finding], TailCheck | None]:
    """The prior–data conflict check of ``model`` at ``observed`` (module docstring).

    Parameters
    ----------
    model
        A :class:`~dpinfer.models.contract.PrivateDataModel` whose release can be simulated
        (``model.simulate``); for one that cannot (a density-only model) only ``simulated`` or
        ``span`` are used, and without them nothing is checked.
    observed
        The observed release.
    simulated, span
        Prior-predictive releases the caller already has (``(M, D)``, θ from the prior), or only
        their range ``(lower, upper, M)``. When ``M`` is too small for the test to fire
        (:func:`needed_simulations`) and the release lies outside their range, the check draws
        its own :func:`needed_simulations` releases and decides on those (a release inside the
        range of ``M`` simulations has tail probability above ``2/(M+1)``: nothing to top up).
        With neither, the check simulates its own.
    seed
        Public randomness of the check's own simulations.
    alpha
        Family-wise false-alarm probability under the model.

    Returns
    -------
    (findings, check)
        The findings (empty, or one :class:`~dpinfer.errors.PriorDataConflictWarning` naming
        what to change) and the :class:`TailCheck` decided on (None when nothing was checked).
    """
    obs = np.asarray(observed, dtype=np.float64).reshape(-1)
    check: TailCheck | None = None
    if simulated is not None:
        check = tail_probabilities(obs, simulated, alpha)
    elif span is not None:
        check = range_check(obs, span[0], span[1], span[2], alpha)
    if check is None or (not check.resolvable and check.outside):
        simulable = callable(getattr(model, "simulate", None)) and getattr(model, "can_simulate", True)
        if simulable:  # else a release known only by its density (DensityOnlyModel.can_simulate)
            sims = prior_predictive(model, needed_simulations(obs.size, alpha), seed)
            check = tail_probabilities(obs, sims, alpha)
    if check is None:
        return [], None
    return conflict_findings(check, advice=prior_advice(model)), check


__all__ = [
    "ALPHA",
    "MIN_SIMULATIONS",
    "TailCheck",
    "conflict_findings",
    "needed_simulations",
    "prior_advice",
    "prior_data_conflict",
    "prior_predictive",
    "range_check",
    "tail_probabilities",
]
