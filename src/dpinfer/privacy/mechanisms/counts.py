"""Mechanisms for counts: the geometric (discrete Laplace) mechanism and randomized response.

Both release integers and sample exactly (integer randomness from the OS CSPRNG, no floating
point on the secret path), so their pure-ε guarantees hold with no floating-point slack.

* :class:`GeometricMechanism` (Ghosh, Roughgarden & Sundararajan 2012): ``s + Z`` for an
  integer-valued statistic of integer L1 sensitivity Δ, ``P(Z = z) ∝ exp(-|z|/t)`` with the scale
  ``t ≥ Δ/ε`` (rounded up to a multiple of 2⁻¹⁶), drawn by
  :func:`dpinfer.privacy.discrete.sample_discrete_laplace`: ε-DP.
* :class:`RandomizedResponseMechanism` (Warner 1965): each of n records reports its binary
  attribute truthfully with probability ``p`` and flipped otherwise, ``p/(1 - p) <= e^ε``; the
  release is the number of reported ones, ``Bin(s, p) + Bin(n - s, 1 - p)`` for ``s`` true ones
  (post-processing of per-record RR, so ε-DP under replace-one). ``p`` is a dyadic rational at
  most ``e^ε/(1 + e^ε)`` and each count is drawn exactly
  (:func:`dpinfer.privacy.discrete.sample_binomial`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ...deferred import DeferredModule
from ...errors import InvalidDataError, InvalidPrivacyParameterError
from ..discrete_pmf import discrete_laplace_logpmf
from ..events import DiscreteLaplaceEvent, KnownEvent, PrivacyEvent
from ..rng import PrivacyRNG
from ..validation import check_count, check_epsilon, check_relation
from .base import Mechanism, as_bounds, check_in_bounds

stats = DeferredModule("scipy.stats")  # imported at first use: ~1 s of start-up (dpinfer.deferred)

_SCALE_BITS = 16
_MAX_COUNT = 2.0**50


def check_integers(name: str, arr: np.ndarray, what: str, *, public: bool = False) -> None:
    """Refuse non-integers (or |values| >= 2^50). Only ``public`` values (observed releases) are
    printed: a confidential statistic never appears in a message."""
    if np.any(arr != np.round(arr)) or np.any(np.abs(arr) >= _MAX_COUNT):
        if public:
            raise InvalidDataError(
                f"{name}: {what} must be integers (below 2^50 in magnitude), got {arr.tolist()}."
            )
        raise InvalidDataError(
            f"{name}: {what} must be integers (below 2^50 in magnitude); the values are confidential "
            "and not shown. Nothing was charged or released."
        )


def discrete_laplace_ppf(u: Any, scale: float) -> np.ndarray:
    """The discrete Laplace quantile ``F⁻¹(u)`` of ``P(Z = z) ∝ exp(-|z|/scale)``, in closed form.

    ``a = e^{-1/t}``: ``P(Z <= -1) = a/(1 + a)``; below it ``k = ⌈t·log(u(1 + a))⌉``, above it
    ``k = max(0, ⌈-t·log((1 - u)(1 + a))⌉ - 1)`` (inverting the CDF of
    :func:`~dpinfer.privacy.discrete_pmf.discrete_laplace_cdf`). Inference only: releases draw
    with the exact sampler.
    """
    u = np.asarray(u, dtype=np.float64)
    t = float(scale)
    log1pa = math.log1p(math.exp(-1.0 / t))
    neg = np.ceil(t * (np.log(u) + log1pa))
    pos = np.maximum(0.0, np.ceil(-t * (np.log1p(-u) + log1pa)) - 1.0)
    return np.where(u <= math.exp(-1.0 / t - log1pa), neg, pos)


class GeometricMechanism(Mechanism):
    """The geometric (discrete Laplace) mechanism for integer statistics (module docstring).

    Parameters
    ----------
    stat_dim
        Length of the statistic.
    sensitivity
        Integer L1 sensitivity Δ under ``neighbouring`` (e.g. 1 for a count, ``hi - lo`` for a sum
        of integers clamped to ``[lo, hi]`` under replace-one).
    epsilon
        Privacy level.
    bounds
        Optional (lo, hi): the range a valid confidential statistic must lie in.
    """

    name = "geometric (discrete Laplace)"
    has_density = True
    accountant = "pure"
    exact_release = True

    def __init__(
        self,
        stat_dim: int,
        sensitivity: int,
        epsilon: float,
        neighbouring: str = "replace-one",
        bounds: tuple[Any, Any] | None = None,
    ) -> None:
        self.stat_dim = self.out_dim = self.noise_dim = check_count(stat_dim, "stat_dim")
        self.epsilon = check_epsilon(epsilon)
        if isinstance(sensitivity, bool) or int(sensitivity) != sensitivity or sensitivity < 1:
            raise InvalidPrivacyParameterError(
                f"the geometric mechanism needs a positive integer sensitivity, got {sensitivity!r}; "
                "use LaplaceMechanism for real-valued statistics."
            )
        self._sensitivity = int(sensitivity)
        self.neighbouring = check_relation(neighbouring)
        t = Fraction(self._sensitivity) / Fraction(self.epsilon)
        self.scale_units = Fraction(math.ceil(t * 2**_SCALE_BITS), 2**_SCALE_BITS)  # Δ/t <= ε
        self.scale = float(self.scale_units)
        self.bounds = as_bounds(bounds)

    @property
    def sensitivity(self) -> int:
        return self._sensitivity

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``s + F⁻¹(u)`` with the closed-form discrete Laplace quantile.

        ``a = e^{-1/t}``: ``P(Z <= -1) = a/(1 + a)``; below it ``k = ⌈t·log(u(1 + a))⌉``, above
        it ``k = max(0, ⌈-t·log((1 - u)(1 + a))⌉ - 1)``.
        """
        return np.asarray(s, dtype=np.float64) + discrete_laplace_ppf(u, self.scale)

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``log P(s_dp | s)`` (a pmf): ``-inf`` unless ``s_dp - s`` is an integer vector."""
        diff = np.asarray(s_dp, dtype=np.float64) - np.asarray(s, dtype=np.float64)
        return discrete_laplace_logpmf(diff, self.scale).sum(-1)

    def event(self) -> PrivacyEvent:
        return DiscreteLaplaceEvent(self.epsilon, self._sensitivity, self.neighbouring)

    def details(self) -> dict[str, Any]:
        sampler = "exact discrete Laplace (CKS 2020)"
        return {"noise_scale": self.scale, "stat_dim": self.stat_dim, "sampler": sampler}

    def validate_statistic_range(self, s: np.ndarray) -> None:
        check_integers(self.name, s, "the confidential statistic")
        check_in_bounds(self.name, s, self.bounds)

    @property
    def lattice(self) -> np.ndarray:
        """Integer statistic plus integer noise: the integers."""
        return np.ones(self.out_dim)

    def check_observed(self, s_dp: Any) -> np.ndarray:
        arr = super().check_observed(s_dp)
        check_integers(self.name, arr, "observed releases", public=True)
        return arr

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        from ..discrete import sample_discrete_laplace

        k = s.astype(np.int64)
        return lambda gen: (k + sample_discrete_laplace(self.scale_units, k.size, gen)).astype(np.float64)

    def __repr__(self) -> str:
        return (
            f"GeometricMechanism(stat_dim={self.stat_dim}, sensitivity={self.sensitivity}, "
            f"epsilon={self.epsilon:g}, {self.neighbouring})"
        )


#: The same mechanism under its other name.
DiscreteLaplaceMechanism = GeometricMechanism


class RandomizedResponseMechanism(Mechanism):
    """Randomized response on ``n_attributes`` binary attributes of ``n_records`` records.

    The confidential statistic is the vector of counts of ones (one per attribute, each in
    ``[0, n_records]``); the release is the vector of counts of *reported* ones. ε is split
    equally between the attributes (each record changes every count by at most one).

    Parameters
    ----------
    n_records
        n (public: the relation is replace-one).
    epsilon
        Total privacy level of the release.
    n_attributes
        Number of binary attributes released.
    """

    name = "randomized response"
    has_density = True
    accountant = "pure"
    exact_release = True

    def __init__(self, n_records: int, epsilon: float, n_attributes: int = 1) -> None:
        if int(n_records) != n_records or n_records < 1:
            raise InvalidDataError(f"n_records must be a positive integer, got {n_records!r}.")
        self.n_records = int(n_records)
        self.stat_dim = self.out_dim = int(n_attributes)
        self.noise_dim = 2 * self.stat_dim
        self.epsilon = check_epsilon(epsilon)
        self.neighbouring = "replace-one"
        each = self.epsilon / self.stat_dim
        p_float = 1.0 / (1.0 + math.exp(-each))
        # a dyadic p <= e^ε/(1 + e^ε) (2^-50 below the float value covers its rounding error)
        self.p_exact = Fraction(math.floor((Fraction(p_float) - Fraction(1, 2**50)) * 2**52), 2**52)
        if self.p_exact <= Fraction(1, 2):
            raise InvalidPrivacyParameterError(f"epsilon {epsilon!r} is too small for randomized response.")
        self.p = float(self.p_exact)

    @property
    def sensitivity(self) -> int:
        return 1

    @property
    def output_range(self) -> tuple[float, float]:
        return 0.0, float(self.n_records)

    @property
    def lattice(self) -> np.ndarray:
        """Counts of reported ones: the integers."""
        return np.ones(self.out_dim)

    def _split(self, s: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = np.asarray(s, dtype=np.float64)
        u = np.asarray(u, dtype=np.float64)
        return s, u[..., : self.stat_dim], u[..., self.stat_dim :]

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        s, u1, u2 = self._split(s, u)
        kept = stats.binom.ppf(u1, s, self.p)
        flipped = stats.binom.ppf(u2, self.n_records - s, 1.0 - self.p)
        return kept + flipped

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``log Σ_j Bin(j; s, p)·Bin(k - j; n - s, 1 - p)`` per attribute, summed."""
        k = np.asarray(s_dp, dtype=np.float64)[..., None]
        s = np.asarray(s, dtype=np.float64)[..., None]
        j = np.arange(self.n_records + 1, dtype=np.float64)
        terms = stats.binom.logpmf(j, s, self.p) + stats.binom.logpmf(k - j, self.n_records - s, 1.0 - self.p)
        return logsumexp(terms, axis=-1).sum(-1)

    def event(self) -> PrivacyEvent:
        what = "randomized response, p/(1-p) <= e^eps per attribute"
        return KnownEvent(self.epsilon, 0.0, "replace-one", what)

    def details(self) -> dict[str, Any]:
        return {"n_records": self.n_records, "p_truthful": self.p, "n_attributes": self.stat_dim}

    def validate_statistic_range(self, s: np.ndarray) -> None:
        check_integers(self.name, s, "the confidential counts")
        check_in_bounds(self.name, s, (np.zeros(self.stat_dim), np.full(self.stat_dim, self.n_records)))

    def check_observed(self, s_dp: Any) -> np.ndarray:
        arr = super().check_observed(s_dp)
        check_integers(self.name, arr, "observed counts", public=True)
        return arr

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        from ..discrete import sample_binomial

        ones = [int(v) for v in s]
        p, n = self.p_exact, self.n_records
        return lambda gen: np.array(
            [sample_binomial(c, p, gen) + sample_binomial(n - c, 1 - p, gen) for c in ones], dtype=np.float64
        )

    def __repr__(self) -> str:
        return (
            f"RandomizedResponseMechanism(n_records={self.n_records}, epsilon={self.epsilon:g}, "
            f"n_attributes={self.stat_dim})"
        )


__all__ = ["DiscreteLaplaceMechanism", "GeometricMechanism", "RandomizedResponseMechanism", "check_integers",
           "discrete_laplace_ppf"]
