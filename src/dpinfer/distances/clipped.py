"""Clipped average of per-data-set distances, Δρ = C/n (the ABCDP tuberculosis set-up).

When the observed data are n independent data sets Y*_1..Y*_n (each a person's or a site's
record) and a simulation is n pseudo data sets Y_1..Y_n, the query is

    ρ = (1/n) Σ_j min(d(Y_j, Y*_j), C),

with any per-data-set distance d >= 0. Replacing one observed data set changes one term, which
lies in [0, C], so the replace-one sensitivity is Δρ = C/n whatever d is (Park et al. 2021,
Section 4 after Theorem 1, and Section 6.3 with C = 200). A NaN or infinite per-data-set
distance (e.g. a division by zero in a relative error) is mapped to C, the largest value a term
can take, which keeps the bound.

Floating point. The clip bounds each computed term exactly (``min`` of doubles is exact), but the
mean of the n terms is computed: fl(fl(Σ_j t_j)/n) with t_j ∈ [0, C] errs by at most
γ_{n−1}Σ_j t_j (any summation order, Higham 2002, "Accuracy and Stability of Numerical
Algorithms", eq. (4.4)) and one more rounding for the division, i.e. by <= γ_n·C (Lemma 3.3;
γ_k = ku/(1 − ku), u = 2⁻⁵³). Two neighbours' computed values therefore differ by at most
Δ̂ρ = C/n + 2γ_n·C, which :meth:`ClippedDistance.sensitivity` declares (rounded up; relative
excess 2n²u: 9·10⁻¹² at n = 200). A distance clipped as a whole to [0, Δρ]
(:class:`~dpinfer.distances.enforce.SensitivityClippedDistance`) needs no such term: the clip is
applied to the computed value itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import InvalidDataError, InvalidPrivacyParameterError
from .base import Distance

PairDistance = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class _ClippedPrepared:
    observed: np.ndarray  # (n, ...) per-data-set summaries (confidential)
    n: int


class ClippedDistance(Distance):
    """ρ = mean_j min(base(Y*_j, Y_j), clip), Δρ = clip/n.

    Parameters
    ----------
    base
        ``base(observed, sims) -> (B, n)``: the per-data-set distances between the observed
        data sets ``observed`` (shape (n, ...)) and each simulation of the batch ``sims``
        (shape (B, n, ...)). Values must be >= 0 (negative values are refused).
    clip
        C > 0, the clipping bound.
    """

    name = "clipped"

    def __init__(self, base: PairDistance, clip: float) -> None:
        if not callable(base):
            raise InvalidPrivacyParameterError("base must be a callable (observed, sims) -> (B, n).")
        try:
            clip_value = float(clip)
        except (TypeError, ValueError):
            clip_value = float("nan")
        if not math.isfinite(clip_value) or clip_value <= 0:
            raise InvalidPrivacyParameterError(f"clip must be a positive finite number, got {clip!r}.")
        self.base = base
        self.clip = clip_value

    def prepare(self, observed: Any) -> _ClippedPrepared:
        try:
            arr = np.asarray(observed, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidDataError("observed data sets must be numeric.") from None
        if arr.ndim < 1 or arr.shape[0] == 0:
            raise InvalidDataError(
                f"observed data must be a stack of n >= 1 data sets, got shape {arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidDataError(
                "observed data contain NaN or infinite values; nothing was charged or released."
            )
        return _ClippedPrepared(arr, arr.shape[0])

    def batch(self, prepared: _ClippedPrepared, sims: Any) -> np.ndarray:
        arr = np.asarray(sims, dtype=np.float64)
        if arr.ndim != prepared.observed.ndim + 1 or arr.shape[1:] != prepared.observed.shape:
            raise InvalidDataError(
                f"simulated data must have shape (batch,) + {prepared.observed.shape} to match the "
                f"observed data sets, got {arr.shape}."
            )
        d = np.asarray(self.base(prepared.observed, arr), dtype=np.float64)
        if d.shape != (arr.shape[0], prepared.n):
            raise InvalidDataError(
                f"base distance returned shape {d.shape}, expected {(arr.shape[0], prepared.n)}."
            )
        if np.any(d < 0):
            raise InvalidDataError("base distance returned negative values; it must be >= 0.")
        d = np.where(np.isfinite(d), d, self.clip)
        return np.minimum(d, self.clip).mean(axis=1)

    def sensitivity(self, n_records: int) -> float:
        """Δ̂ρ = C/n + 2γ_n·C, rounded up: C/n (one of n terms, each in [0, C], changes) plus twice the
        rounding of the computed mean (module docstring, "Floating point")."""
        if isinstance(n_records, bool) or not isinstance(n_records, (int, np.integer)) or n_records < 1:
            raise InvalidPrivacyParameterError(
                f"n_records must be the number of observed data sets, an integer >= 1, got {n_records!r}."
            )
        n = int(n_records)
        u = Fraction(1, 2**53)
        if n * u >= 1:
            raise InvalidPrivacyParameterError(
                f"n_records = {n} is beyond a float64 mean's error bound (n < 2^53)."
            )
        clip = Fraction(self.clip)
        exact = clip / n + 2 * (n * u / (1 - n * u)) * clip
        out = float(exact)
        return out if Fraction(out) >= exact else math.nextafter(out, math.inf)

    def bound(self, n_records: int) -> float:
        """ρ is a mean of terms in [0, C]: ρ <= C."""
        return self.clip

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "clip": self.clip, "base": getattr(self.base, "__name__", "custom")}


def weighted_euclidean(weights: Any) -> PairDistance:
    """A per-data-set distance ||w ⊙ (s_j - s*_j)||_2 between summary vectors."""
    w = np.asarray(weights, dtype=np.float64)

    def dist(observed: np.ndarray, sims: np.ndarray) -> np.ndarray:
        diff = (sims - observed[None]) * w
        return np.sqrt(np.sum(diff**2, axis=-1))

    dist.__name__ = "weighted_euclidean"
    return dist
