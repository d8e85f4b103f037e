"""When not to trust an SMC-ABC result: the checks run after every :func:`~dpinfer.inference.smc_abc`.

An ABC posterior at tolerance ``ε`` is wider than the exact one; for small ``ε`` its variance is
about ``v_0 + c·ε²`` (the ABC kernel adds the spread of a uniform ball of radius ``ε`` in
statistic space). A run that stops while ``ε`` still matters therefore returns a posterior that is
too wide, and it shows: the spread still shrinks from one population to the next. Three findings,
issued as warnings and stored in ``result.settings["findings"]``:

* **still shrinking** (:class:`~dpinfer.errors.ABCConvergenceWarning`): for some parameter the
  weighted sd of the last population is below ``min(0.9, 1 - 4·se)`` times that of the one before,
  ``se = sqrt(1/(2·ESS_T) + 1/(2·ESS_{T-1}))`` the Monte Carlo error of the ratio of two sds (a
  Gaussian sd from ESS draws has relative error ``1/sqrt(2·ESS)``): a converged run's ratio is
  1 within that error. With ``q = ε_T/ε_{T-1}`` and the ratio ``r``, ``v_0 + c·ε²`` gives the
  excess ``x = (1 - r²)/(r²/q² - 1)`` of the last population's variance over ``v_0``, reported as
  the estimated width factor ``sqrt(1 + x)`` (a rough guide, not a correction);
* **stopped on the budget** (:class:`~dpinfer.errors.ABCConvergenceWarning`): the run ended on the
  acceptance floor, the population cap or ``max_simulations`` instead of the adaptive schedule's
  convergence rule (:mod:`dpinfer.inference.smc.adaptive_schedule`);
* **tolerance wider than the release's own spread** (:class:`~dpinfer.errors.ABCConvergenceWarning`):
  accepting a simulation within distance ``ε_T`` of the observation convolves the release with a
  uniform ball of radius ``ε_T`` in statistic space (per coordinate variance ``ε_T²/(d+2)``).
  Against the spread of the release itself (sampling plus the mechanism's noise), measured at the
  final population by two simulated releases at each of :data:`SPREAD_DRAWS` weighted particles
  (``d_0`` = the median distance between the pair, ``E d_0² = 2 d v`` for per-coordinate
  variance ``v``), the ball adds a fraction ``2 ρ² d/(d+2)`` to that variance, ``ρ = ε_T/d_0``,
  so a posterior dominated by the likelihood is about ``sqrt(1 + 2 ρ² d/(d+2))`` times too wide;
  warned above :data:`TOLERANCE_WIDTH` (10%). A run can stop shrinking (the check above) while
  the kernel is still this wide: the schedule converges on the spread of the population, not on
  the truth. Measured (seed 1, default schedule): ρ = 0.06-0.21 on the five problems of
  ``benchmarks/smc_abc_warnings.py`` whose sds are 0.97-1.04× the exact ones; ρ = 0.54 on the
  5-D Poisson rates (sds 1.12-1.23×, predicted 1.19×), 1.78 with the paper's schedule on the
  issue-12 case (1.53×, predicted 1.76×) and 0.92 on the beta-binomial groups of
  ``tests/hierarchical_problem.py`` (κ's sd 2.2× the exact one);
* **prior–data conflict** (:class:`~dpinfer.errors.PriorDataConflictWarning`): the observed
  statistic lies outside the coordinate-wise range of the statistics simulated in population 0
  (the prior predictive), judged by the shared tail-probability test of
  :mod:`dpinfer.diagnostics.conflict` (which simulates more releases when population 0 is too
  small to decide).

Measured by ``benchmarks/smc_abc_warnings.py`` (``benchmarks/results/smc_abc_warnings.json``):
with the default adaptive schedule, 15 runs on five problems with exact references (seeds 1-3)
ended at last-population sd ratios of 0.91-1.07 with sds 0.92-1.06× the exact ones and no
warning; the paper's absolute schedule on the issue-12 case (sd 1.51-1.53× the exact one) ends at
ratios 0.79-0.82 and warns. With a 5-D statistic (five Poisson rates released together) the
default stops on its acceptance floor (1.0-1.1 million simulations) with sds 1.11-1.23× the exact
ones: the one-step sd ratios (0.88-1.02) flag only one of three runs, the budget stop all three.
In high dimensions, prefer ``method="exact"`` (the mechanism's density) where it exists.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...diagnostics.checks import Finding
from ...diagnostics.conflict import prior_data_conflict
from ...errors import ABCConvergenceWarning

#: a last-population sd ratio below this (or below 1 - 4·se when the ESS is small) is "still shrinking"
SHRINK_RATIO = 0.9
#: standard errors of the sd ratio that a converged run stays within
SHRINK_SE = 4.0


def shrink_threshold(ess_last: float, ess_previous: float) -> float:
    """The sd ratio below which the spread is still shrinking (module docstring)."""
    se = math.sqrt(1.0 / (2.0 * max(ess_last, 1.0)) + 1.0 / (2.0 * max(ess_previous, 1.0)))
    return min(SHRINK_RATIO, 1.0 - SHRINK_SE * se)


def width_factor(ratio: float, q: float) -> float | None:
    """Estimated sd of the last population over the ε → 0 sd from the ratio ``r`` of the last two
    sds and the tolerance ratio ``q`` (model ``v_0 + c·ε²``; None when it does not apply)."""
    if not (0 < q < 1 and q < ratio < 1):
        return None
    x = (1.0 - ratio**2) / (ratio**2 / q**2 - 1.0)
    return math.sqrt(1.0 + x)


def still_shrinking(
    sd: Any, ess: float, sd_previous: Any, ess_previous: float
) -> tuple[np.ndarray, float, list[int]]:
    """The sd ratios of two consecutive populations, the threshold they must stay above
    (:func:`shrink_threshold`) and the parameters below it (module docstring)."""
    ratio = np.asarray(sd, float) / np.maximum(np.asarray(sd_previous, float), 1e-300)
    limit = shrink_threshold(ess, ess_previous)
    return ratio, limit, [j for j in range(ratio.size) if ratio[j] < limit]


def shrinking_findings(pops: list[Any], names: tuple[str, ...]) -> list[Finding]:
    """The "still shrinking" finding from the last two populations' diagnostics (``sd``, ``ess``,
    ``tolerance``), or none."""
    if len(pops) < 2 or pops[-1].sd is None or pops[-2].sd is None:
        return []
    last, prev = pops[-1], pops[-2]
    ratio, limit, bad = still_shrinking(last.sd, last.ess, prev.sd, prev.ess)
    if not bad:
        return []
    q = last.tolerance / prev.tolerance if math.isfinite(prev.tolerance) and prev.tolerance > 0 else math.nan
    parts = []
    for j in bad:
        wf = width_factor(float(ratio[j]), q)
        guess = f", probably ~{wf:.2f}x too wide" if wf is not None else ""
        parts.append(f"{names[j] if j < len(names) else j}: sd x{ratio[j]:.3f}{guess}")
    return [Finding(
        ABCConvergenceWarning,
        f"SMC-ABC's posterior was still shrinking when the run stopped: from population {prev.t} to "
        f"{last.t} (tolerance {prev.tolerance:.4g} -> {last.tolerance:.4g}) the weighted sd changed by "
        f"{'; '.join(parts)} (a converged run stays above {limit:.3f}); the result is wider than the "
        "exact posterior. Run more populations: with schedule='adaptive' (the default), "
        "schedule=AdaptiveSchedule(patience=6) (dpinfer.inference.smc.adaptive_schedule) waits 6 "
        "populations, not 3, before it calls the run converged; with a fixed schedule, a smaller final "
        "tolerance; and a larger max_simulations.",
    )]


#: weighted particles of the final population at which the release's own spread is measured
SPREAD_DRAWS = 200
#: the width factor sqrt(1 + 2ρ²d/(d+2)) above which the final tolerance is warned about
TOLERANCE_WIDTH = 1.1


def tolerance_width(tolerance: float, spread: float, dim: int) -> tuple[float, float]:
    """``(ρ, width factor)`` of a final tolerance against the median distance ``spread`` between
    two releases at the same θ, for a ``dim``-dimensional statistic (module docstring)."""
    if not (math.isfinite(tolerance) and spread > 0):
        return math.nan, math.nan
    rho = tolerance / spread
    return rho, math.sqrt(1.0 + 2.0 * rho**2 * dim / (dim + 2.0))


def release_spread(
    model: Any, particles: np.ndarray, weights: np.ndarray, scale: np.ndarray | None,
    seed: np.random.SeedSequence, draws: int = SPREAD_DRAWS,
) -> float:
    """Median distance (the run's distance: Euclidean, divided by ``scale``) between two releases
    simulated at each of ``draws`` particles resampled by weight (module docstring)."""
    pick, first, second = seed.spawn(3)
    w = np.asarray(weights, float)
    idx = np.random.default_rng(pick).choice(len(w), size=draws, p=w / w.sum())
    theta = np.asarray(particles)[idx]
    s1 = np.asarray(model.simulate(theta, first), float).reshape(draws, -1)
    s2 = np.asarray(model.simulate(theta, second), float).reshape(draws, -1)
    diff = s1 - s2 if scale is None else (s1 - s2) / np.asarray(scale, float).reshape(1, -1)
    return float(np.median(np.linalg.norm(diff, axis=1)))


def tolerance_findings(
    model: Any, particles: np.ndarray, weights: np.ndarray, tolerance: float,
    scale: np.ndarray | None, seed: np.random.SeedSequence, dim: int,
) -> tuple[list[Finding], dict[str, float]]:
    """The "tolerance wider than the release's own spread" finding, or none, and the measured
    ``{"tolerance_over_spread": ρ, "tolerance_width_factor": ...}``."""
    spread = release_spread(model, particles, weights, scale, seed)
    rho, factor = tolerance_width(tolerance, spread, dim)
    facts = {"tolerance_over_spread": rho, "tolerance_width_factor": factor}
    if not (factor > TOLERANCE_WIDTH):
        return [], facts
    return [Finding(
        ABCConvergenceWarning,
        f"SMC-ABC's final tolerance {tolerance:.4g} is {rho:.2f}x the median distance between two "
        f"releases simulated at the same θ ({spread:.4g}): the ABC kernel adds noise comparable to "
        f"the release's own, so the posterior may be up to ~{factor:.2f}x too wide. Lower the final "
        "tolerance (a larger max_simulations, AdaptiveSchedule(min_acceptance_rate=...) lower), or use "
        "method='exact' / 'importance' (the mechanism's density) where it exists.",
    )], facts


def stop_findings(stop: str, complete: bool, adaptive: bool) -> list[Finding]:
    """The "stopped on the budget" finding from the reason the run ended, or none."""
    budget = (not complete and "max_simulations" in stop) or (
        adaptive and (stop.startswith("acceptance rate") or stop.startswith("max_populations"))
    )
    if not budget:
        return []
    return [Finding(
        ABCConvergenceWarning,
        f"SMC-ABC stopped on its budget, not because its tolerance schedule converged ({stop}): the "
        "last tolerance may still widen the posterior. Raise max_simulations, lower "
        "AdaptiveSchedule(min_acceptance_rate=...) or raise max_populations, or compare with "
        "method='exact' when the mechanism has a density.",
    )]


def range_findings(
    observed: np.ndarray, span: np.ndarray | None, n: int, model: Any = None, seed: Any = None
) -> list[Finding]:
    """Prior–data conflict from the ``(2, d)`` range ``span`` of ``n`` prior-predictive simulations
    (population 0), by the shared check :func:`~dpinfer.diagnostics.conflict.prior_data_conflict`:
    when ``n`` is too small to decide and the observation is outside the range, the check
    simulates its own releases from ``model`` (seed ``seed``)."""
    if span is None or not np.all(np.isfinite(span)):
        return []
    span = np.asarray(span, float).reshape(2, -1)
    found, _ = prior_data_conflict(model, observed, span=(span[0], span[1], int(n)), seed=seed)
    return found


__all__ = [
    "SHRINK_RATIO", "SPREAD_DRAWS", "TOLERANCE_WIDTH", "range_findings", "release_spread",
    "shrink_threshold", "shrinking_findings", "stop_findings", "tolerance_findings",
    "tolerance_width", "width_factor",
]
