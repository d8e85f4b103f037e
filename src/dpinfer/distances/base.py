"""The interface every ABC distance implements: a batched distance with a declared sensitivity.

A distance ρ(Y*, Y) between the (confidential) observed data Y* and a simulated data set Y is
used by ABCDP only through

* :meth:`Distance.prepare` - whatever is computed from Y* once (e.g. its mean embedding); the
  result stays inside the data owner's process and is never released;
* :meth:`Distance.batch` - ρ for a batch of simulated data sets at once;
* :meth:`Distance.sensitivity` - the global sensitivity Δρ = sup |ρ(Y*, Y) - ρ(Y*', Y)| over
  neighbouring Y*, Y*' (replace-one) and all Y (Theorem 1 of Park et al. 2021 needs it), as a
  function of the distance's declared public bounds and of the public number of observed records
  N only: it never receives the data (a sensitivity read off the data, e.g. their range, would
  itself be a release, and is exactly what a report would then publish);
* :meth:`Distance.bound` - a public upper bound B of ρ (0 <= ρ <= B), when one is known.

The library trusts the sensitivity only of its own distances, whose implementation proves it
(:class:`~dpinfer.distances.RFFMMD`, :class:`~dpinfer.distances.ExactMMD`: Lemma 1 of Park et al.
2021; :class:`~dpinfer.distances.ClippedDistance`: clipping). Any other distance's declared Δρ is
*enforced* by the releases: its values are clipped to [0, Δρ], whose sensitivity is at most Δρ
whatever the distance does (:func:`~dpinfer.distances.enforce.release_sensitivity`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..errors import InvalidDataError


def as_points(data: Any, name: str = "data") -> np.ndarray:
    """Return a data set as a float64 array of shape (N, d) after checking it is finite.

    A 1-D input of length N is read as N scalar points (d = 1).
    """
    try:
        arr = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError(f"{name} must be numeric, got {type(data).__name__}.") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidDataError(
            f"{name} must have shape (N,) or (N, d) with N >= 1, got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise InvalidDataError(
            f"{name} contains {bad} NaN or infinite value(s). Remove or impute them before the "
            "private release; nothing was charged or released."
        )
    return arr


def count_records(observed: Any) -> int:
    """N, the number of records of the observed data: the length of its first axis.

    A 1-D array of length N is N scalar records; an (N, d) array N records of dimension d; a stack
    of n data sets (:class:`~dpinfer.distances.ClippedDistance`) n records. N is public under the
    replace-one relation (a neighbour has the same size), so sensitivities may depend on it.
    """
    try:
        shape = np.shape(observed)
    except (TypeError, ValueError):
        raise InvalidDataError(
            "the observed data must be an array with one record per row; got a ragged or "
            f"non-numeric {type(observed).__name__}. Nothing was charged or released."
        ) from None
    if len(shape) == 0 or shape[0] < 1:
        raise InvalidDataError(
            f"the observed data must hold N >= 1 records along their first axis, got shape {shape}. "
            "Nothing was charged or released."
        )
    return int(shape[0])


def as_batch(sims: Any, d: int, name: str = "simulated data") -> np.ndarray:
    """Return a batch of simulated data sets as an array of shape (B, M, d).

    A 2-D input (B, M) is read as scalar points when ``d == 1``.
    """
    arr = np.asarray(sims)
    if arr.ndim == 2 and d == 1:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[2] != d:
        raise InvalidDataError(
            f"{name} must have shape (batch, M, {d}) to match the observed data's dimension "
            f"d={d}, got shape {arr.shape}. Simulate data of the same dimension as the observed "
            "data."
        )
    if arr.shape[1] == 0:
        raise InvalidDataError(f"{name} has data sets with no points (shape {arr.shape}).")
    if not np.all(np.isfinite(arr)):
        raise InvalidDataError(
            f"{name} contains NaN or infinite values; check the simulator. Nothing was released."
        )
    return arr


class Distance(ABC):
    """A distance between the observed data and simulated data sets, with its sensitivity."""

    #: short name used in reports
    name: str = "distance"

    @abstractmethod
    def prepare(self, observed: Any) -> Any:
        """Validate the observed data and precompute what ρ needs from it (kept private)."""

    @abstractmethod
    def batch(self, prepared: Any, sims: Any) -> np.ndarray:
        """ρ(Y*, Y_t) for every simulated data set Y_t of the batch ``sims``; shape (B,)."""

    @abstractmethod
    def sensitivity(self, n_records: int) -> float:
        """Δρ under the replace-one relation, for observed data of ``n_records`` records.

        A function of the distance's declared public bounds and of N only (never of the data):
        the releases call it *before* the observed data are prepared.
        """

    def bound(self, n_records: int) -> float | None:
        """A public upper bound B of ρ (0 <= ρ(Y*, Y) <= B for all data sets), or None if unknown.

        Used to refuse noise below the floating-point resolution of the distances before anything
        is charged.
        """
        return None

    def __call__(self, observed: Any, simulated: Any) -> float:
        """ρ between one observed and one simulated data set (convenience, not for loops)."""
        prep = self.prepare(observed)
        return float(self.batch(prep, np.asarray(simulated)[None])[0])

    def config(self) -> dict[str, Any]:
        """A JSON-ready description (for reports and release files)."""
        return {"name": self.name}
