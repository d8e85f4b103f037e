"""The sensitivity a release may use: proven by dpinfer's own distances, enforced for any other.

A private release calibrates its noise to the replace-one sensitivity Δρ of the distance
(Park, Vinaroz & Jitkrittum 2021, Theorem 1 for the sparse vector; the Gaussian mechanism for
the noisy SMC weights). Δρ must therefore be

* **public** - a function of the distance's declared bounds and of the number of observed records
  N only (:meth:`~dpinfer.distances.Distance.sensitivity` receives N, never the data, and is called
  before the data are prepared), so that the report publishes nothing derived from the data;
* **true** - a Δρ below the distance's actual sensitivity voids the guarantee. dpinfer proves it
  for its own distances: the MMDs by Lemma 1 of Park et al. (2021) with unit-norm features
  (B_k = 1, Δρ = 2/N), :class:`~dpinfer.distances.ClippedDistance` by clipping each of n
  per-record terms to [0, C] (Δρ = C/n, their Section 4). For any other distance (a user's
  subclass, including a subclass of those) nothing is proven, so the release *enforces* the
  declared value: ρ is clipped to [0, Δρ]. Two values in [0, Δρ] differ by at most Δρ, so the
  clipped distance has sensitivity at most Δρ whatever the distance computes — a wrong
  declaration costs accuracy, never privacy;
* **non-vanishing** - finite, > 0, a normal double; the releases further refuse noise below the
  floating-point resolution of the values it is compared with (:meth:`Distance.bound`).
"""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InferenceWarning, InvalidPrivacyParameterError
from .base import Distance
from .clipped import ClippedDistance
from .mmd import RFFMMD, BinnedRFFMMD, ExactMMD

__all__ = ["PROVEN_SENSITIVITY", "ReleaseSensitivity", "SensitivityClippedDistance", "release_sensitivity"]

#: The distances whose sensitivity dpinfer proves for its own implementation (exact type: a
#: subclass may change ``batch`` and is enforced like any user distance), with the proof.
PROVEN_SENSITIVITY: dict[type, str] = {
    RFFMMD: "Park et al. 2021, Lemma 1: unit-norm random Fourier features, B_k = 1, 2/N",
    BinnedRFFMMD: "Park et al. 2021, Lemma 1: unit-norm binned random Fourier features, 2/N",
    ExactMMD: "Park et al. 2021, Lemma 1: Gaussian kernel, B_k = 1, 2/N",
    ClippedDistance: "clipping: one of n per-record terms in [0, C] changes, C/n (Park et al. 2021, Sec. 4)",
}

#: Text of the report for a distance whose declared sensitivity is enforced by clipping.
ENFORCED = "enforced: the distance is clipped to [0, sensitivity] (its sensitivity is not proven by dpinfer)"


class SensitivityClippedDistance(Distance):
    """A distance clipped to [0, Δρ]: its replace-one sensitivity is at most Δρ by construction.

    ``|min(max(a, 0), Δρ) - min(max(b, 0), Δρ)| <= Δρ`` for any a, b. A NaN distance counts as Δρ
    (like ClippedDistance's NaN terms): it keeps the bound, and a NaN that depends on the
    confidential data never turns into an uncharged refusal.

    Parameters
    ----------
    distance
        The distance whose sensitivity is not proven.
    sensitivity
        Its declared Δρ (public), the clipping bound.
    """

    name = "clipped-to-sensitivity"

    def __init__(self, distance: Distance, sensitivity: float) -> None:
        self.distance = distance
        self.clip = float(sensitivity)

    def prepare(self, observed: Any) -> Any:
        return self.distance.prepare(observed)

    def batch(self, prepared: Any, sims: Any) -> np.ndarray:
        rho = np.asarray(self.distance.batch(prepared, sims), dtype=np.float64)
        return np.where(np.isnan(rho), self.clip, np.clip(rho, 0.0, self.clip))

    def sensitivity(self, n_records: int) -> float:
        """Δρ, the clipping bound."""
        return self.clip

    def bound(self, n_records: int) -> float:
        """ρ lies in [0, Δρ]."""
        return self.clip

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "clip": self.clip, "distance": self.distance.config()}


@dataclass(frozen=True)
class ReleaseSensitivity:
    """What a release uses: the distance to run, its public Δρ and bound, and why Δρ holds.

    Attributes
    ----------
    distance
        The distance the release evaluates (the given one, or it clipped to [0, Δρ]).
    sensitivity
        Δρ (public: declared bounds and N only).
    bound
        A public upper bound B of ρ (ρ in [0, B]); Δρ for an enforced distance.
    n_records
        N, the number of observed records (public under replace-one).
    proof
        The proof of Δρ (a library distance) or :data:`ENFORCED`.
    config
        The distance's public description, read before the data are prepared.
    """

    distance: Distance
    sensitivity: float
    bound: float
    n_records: int
    proof: str
    config: dict[str, Any]

    @property
    def enforced(self) -> bool:
        """True when Δρ holds because the release clips the distance (not by proof)."""
        return self.proof == ENFORCED

    def warn_if_enforced(self, stacklevel: int = 3) -> None:
        """An :class:`~dpinfer.errors.InferenceWarning` that the distance is clipped to [0, Δρ]
        (public values only); releases call it once every check has passed."""
        if self.enforced:
            warnings.warn(
                f"the sensitivity {self.sensitivity:.6g} declared by {self.config['distance'].get('name')!r} "
                f"is not proven by dpinfer, so the release clips the distance to [0, {self.sensitivity:.6g}] "
                "(which makes the declaration true): distances above it all count as equal. For a "
                "sensitivity below the distance's range, write it per record with "
                "dpinfer.distances.ClippedDistance(base, clip) (sensitivity clip/n).",
                InferenceWarning,
                stacklevel=stacklevel,
            )


def _check_value(value: Any, what: str, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = float("nan")
    if isinstance(value, bool) or not math.isfinite(out) or out < sys.float_info.min or out > 1e300:
        raise InvalidPrivacyParameterError(
            f"the {what} of distance {name} is {value!r}: it must be a finite positive number "
            "(a normal double between 2.2e-308 and 1e300). A sensitivity of 0, below the "
            "floating-point range, or infinite makes the privacy noise vanish or meaningless. "
            "Declare it from public bounds (e.g. ClippedDistance(base, clip) has clip/n). "
            "Nothing was charged or released."
        )
    return out


def release_sensitivity(distance: Any, n_records: int, *, warn: bool = True) -> ReleaseSensitivity:
    """The distance, Δρ and bound a release of data with ``n_records`` records must use.

    Calls ``distance.sensitivity(n_records)``, ``distance.bound(n_records)`` and
    ``distance.config()`` — never with the data, and before the caller prepares them — and checks
    the values (module docstring). A distance whose type is not in :data:`PROVEN_SENSITIVITY` is
    wrapped in :class:`SensitivityClippedDistance` (with an :class:`~dpinfer.errors.InferenceWarning`
    when ``warn``: values above Δρ are all read as Δρ; a release passes ``warn=False`` and warns
    with :meth:`ReleaseSensitivity.warn_if_enforced` once all its checks have passed).

    Raises
    ------
    InvalidPrivacyParameterError
        ``distance`` is not a :class:`~dpinfer.distances.Distance`, or its sensitivity or bound is
        not a finite positive normal double.
    """
    if not isinstance(distance, Distance):
        raise InvalidPrivacyParameterError(
            "distance must be a dpinfer.distances.Distance (it declares its sensitivity), got "
            f"{type(distance).__name__}."
        )
    if isinstance(n_records, bool) or not isinstance(n_records, (int, np.integer)) or n_records < 1:
        raise InvalidPrivacyParameterError(f"n_records must be an integer >= 1, got {n_records!r}.")
    n = int(n_records)
    name = type(distance).__name__
    sens = _check_value(distance.sensitivity(n), "sensitivity", name)
    config = dict(distance.config())
    proof = PROVEN_SENSITIVITY.get(type(distance))
    if proof is not None:
        return ReleaseSensitivity(distance, sens, _check_value(distance.bound(n), "bound", name), n, proof,
                                  config)
    clipped = SensitivityClippedDistance(distance, sens)
    out = ReleaseSensitivity(clipped, sens, sens, n, ENFORCED, clipped.config())
    if warn:
        out.warn_if_enforced(stacklevel=3)
    return out
