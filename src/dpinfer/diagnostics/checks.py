"""Warnings a careful statistician would want, for any posterior (issue 12, item 8).

Each check returns a list of :class:`Finding` (category, message); :func:`emit` issues them as
warnings of their category (all subclasses of :class:`~dpinfer.errors.InferenceWarning`), so a
caller can both show them and store them in a result.

* :func:`check_weights` — Kish's effective sample size ``1/Σ w²`` of normalised weights below
  ``min_ess``, or the Pareto ``k̂`` of the largest weights above 0.7 (Vehtari, Simpson, Gelman, Yao
  & Gabry 2024, PSIS: beyond 0.7 the self-normalised estimate is unreliable);
* :func:`check_rhat` — rank-normalised split R-hat above 1.01 (Vehtari, Gelman, Simpson,
  Carpenter & Bürkner 2021 recommend 1.01);

k̂, R-hat and ESS themselves are ArviZ's (:mod:`dpinfer.diagnostics.sampling`).
* :func:`check_prior_bounds` — more than ``max_fraction`` of the posterior mass within
  ``edge`` × (support width) of a finite bound of the prior's support (5× what a flat density
  would put there) *and* the bound binding (the density does not fall towards it): the prior,
  not the data, decides the answer there, or the support is wrong.

The observed release against the model's simulations (prior–data conflict) is one shared test
in :mod:`dpinfer.diagnostics.conflict`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import (
    ConvergenceWarning,
    InferenceWarning,
    PriorBoundaryWarning,
    WeightDegeneracyWarning,
)
from .sampling import pareto_khat


@dataclass(frozen=True)
class Finding:
    """One diagnostic: its warning category and the message."""

    category: type[InferenceWarning]
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"category": self.category.__name__, "message": self.message}


def check_weights(weights: Any, *, min_ess: float = 200.0, khat_max: float = 0.7) -> list[Finding]:
    """Low Kish ESS or a Pareto ``k̂`` above ``khat_max`` of (unnormalised) importance weights."""
    w = np.asarray(weights, dtype=np.float64)
    out: list[Finding] = []
    if w.size == 0 or not np.any(w > 0):
        return [Finding(WeightDegeneracyWarning, "every importance weight is 0.")]
    wn = w / w.sum()
    ess = float(1.0 / np.sum(wn**2))
    if ess < min(min_ess, 0.5 * w.size):
        out.append(Finding(
            WeightDegeneracyWarning,
            f"effective sample size {ess:.0f} of {w.size} weighted draws is low (< {min_ess:.0f}): "
            "posterior summaries rest on a few draws; use more particles or simulations.",
        ))
    if np.ptp(w) > 0:
        with np.errstate(divide="ignore"):
            khat = pareto_khat(np.log(w))
        if np.isfinite(khat) and khat > khat_max:
            out.append(Finding(
                WeightDegeneracyWarning,
                f"Pareto k = {khat:.2f} > {khat_max}: the weights are too heavy-tailed for a reliable "
                "estimate (Vehtari et al. 2024); raise the inner simulations or use a wider proposal.",
            ))
    return out


def check_rhat(rhat: Any, names: Any = None, threshold: float = 1.01) -> list[Finding]:
    """R-hat (rank-normalised split, :func:`~dpinfer.diagnostics.sampling.rhat`) above ``threshold``
    for any coordinate."""
    r = np.atleast_1d(np.asarray(rhat, dtype=np.float64))
    names = list(names) if names is not None else [f"theta_{i}" for i in range(r.size)]
    bad = [f"{names[i]} ({r[i]:.3f})" for i in range(r.size) if not r[i] <= threshold]
    if not bad:
        return []
    return [Finding(
        ConvergenceWarning,
        f"R-hat (rank-normalised split) above {threshold} for {', '.join(bad)}: the chains disagree "
        "(in location or in spread); run them longer or with more warm-up.",
    )]


def check_prior_bounds(
    draws: Any,
    lower: Any,
    upper: Any,
    names: Any = None,
    *,
    edge: float = 0.01,
    max_fraction: float = 0.05,
) -> list[Finding]:
    """Posterior mass piling up at a finite bound of the prior support (module docstring).

    The band next to a bound is ``edge`` × the support width when both bounds are finite, else
    ``edge`` × the spread (max - min) of the draws. A warning needs two things: more than
    ``max_fraction`` of the draws in the band, and the bound *binding*: the band next to the bound
    holds at least as many draws as the next band of the same width, within two Poisson sds
    (``n₁ ≥ n₂ - 2·sqrt(n₁ + n₂)``). A posterior whose density falls to 0 at the bound (a
    dispersion parameter whose posterior merely lies near 0) has ``n₁ < n₂`` and is not flagged:
    the bound cuts off nothing there. One whose density is flat or rising towards the bound is
    truncated by it, and the prior bound, not the data, decides the answer.
    """
    x = np.asarray(draws, dtype=np.float64)
    lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (x.shape[1],))
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (x.shape[1],))
    names = list(names) if names is not None else [f"theta_{i}" for i in range(x.shape[1])]
    out = []
    for i in range(x.shape[1]):
        col = x[:, i]
        width = hi[i] - lo[i] if np.isfinite(hi[i] - lo[i]) else np.ptp(col)
        band = edge * width
        for side, bound in (("lower", lo[i]), ("upper", hi[i])):
            if not np.isfinite(bound) or band <= 0:
                continue
            dist = np.abs(col - bound)
            n1 = int(np.sum(dist <= band))
            n2 = int(np.sum((dist > band) & (dist <= 2 * band)))
            frac = n1 / max(col.size, 1)
            if frac > max_fraction and n1 >= n2 - 2.0 * math.sqrt(n1 + n2):
                out.append(Finding(
                    PriorBoundaryWarning,
                    f"{frac:.0%} of the posterior mass of {names[i]} lies within {band:.3g} of the prior's "
                    f"{side} bound {bound:g}, and the density does not fall towards it ({n1} draws in that "
                    f"band, {n2} in the next): the bound truncates the posterior, so the prior bound, not "
                    "the data, decides there; check the prior support or the parameterisation.",
                ))
    return out


def emit(findings: list[Finding], stacklevel: int = 3) -> None:
    """Issue every finding as a warning of its category."""
    for f in findings:
        warnings.warn(f.message, f.category, stacklevel=stacklevel)


__all__ = [
    "Finding",
    "check_prior_bounds",
    "check_rhat",
    "check_weights",
    "emit",
    "pareto_khat",
]
