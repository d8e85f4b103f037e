"""The binomial release of Xiong, Ju & Zhang (2025, Prop. 4): exact binomial counts.

``s̃_j = Bin(N, p_j)/N`` with ``p_j = (I_j + M)/(K + 2M)``, ``M = N·d/ε``, ``j = 1..d``, for counts
``I_j`` in ``[0, K]`` of which one individual's record moves each by at most one (e.g. the number
infected at d recording times of an epidemic in a population of K). The binomial likelihood ratio
per time point is then at most ``(1 + 1/M)^N`` (App. B), so the release is
``d·N·log(1 + 1/M)``-DP, which is ``<= d·N/M = ε``; the event declares the tighter value, rounded
up by one ulp.

The release (:meth:`BinomialTrajectoryRelease.release`, through
:class:`~dpinfer.privacy.context.ReleaseContext`) draws each count exactly, as the sum of N exact
Bernoulli(p_j) trials with the rational ``p_j`` (:func:`dpinfer.privacy.discrete.sample_binomial`,
integer randomness from the OS CSPRNG): every count has exactly its binomial probability, so the
pure-ε bound holds with no floating-point residual. The inference map ``G`` (a binomial quantile
function of uniforms) is the model's: :class:`dpinfer.models.shipped.sir.BinomialTrajectoryMechanism`
adds it, with an inverse CDF exact in both tails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import InvalidDataError
from ..events import KnownEvent, PrivacyEvent
from ..rng import PrivacyRNG
from ..validation import check_epsilon
from .base import Mechanism


class BinomialTrajectoryRelease(Mechanism):
    """The Prop. 4 release ``s̃_j = Bin(N, (I_j + M)/(K + 2M))/N`` with ``M = N·d/ε`` (module docstring).

    Parameters
    ----------
    population
        K.
    n_times
        d, the number of released time points.
    n_trials
        N (authors: 1000 synthetic, 100 real data).
    epsilon
        The nominal level ε = d·N/M; the event declares ``d·N·log(1 + 1/M) <= ε``.
    """

    name = "binomial-trajectory (Xiong et al. 2025, Prop. 4)"
    has_density = True
    accountant = "pure"
    exact_release = True

    def __init__(self, population: int, n_times: int, n_trials: int = 1000, epsilon: float = 10.0) -> None:
        if int(population) != population or population < 1:
            raise InvalidDataError(f"population must be a positive integer, got {population!r}.")
        if int(n_times) != n_times or n_times < 1:
            raise InvalidDataError(f"n_times must be a positive integer, got {n_times!r}.")
        self.population = int(population)
        self.stat_dim = self.out_dim = self.noise_dim = int(n_times)
        if int(n_trials) != n_trials or n_trials < 1:
            raise InvalidDataError(f"n_trials must be a positive integer, got {n_trials!r}.")
        self.n_trials = int(n_trials)
        self.epsilon = check_epsilon(epsilon)
        self.M = self.n_trials * self.stat_dim / self.epsilon
        self.neighbouring = "replace-one"
        # rounded up by one ulp: the declared ε never understates d·N·log(1 + 1/M)
        eps_exact = self.stat_dim * self.n_trials * math.log1p(1.0 / self.M)
        self.epsilon_exact = math.nextafter(eps_exact, math.inf)

    @property
    def sensitivity(self) -> float:
        return 1.0  # each I(t_j) moves by at most 1 when one individual's record is replaced

    @property
    def lattice(self) -> np.ndarray:
        """Binomial counts over N: the grid ``k/N``."""
        return np.full(self.out_dim, 1.0 / self.n_trials)

    @property
    def output_range(self) -> tuple[float, float]:
        return 0.0, 1.0

    def probabilities(self, s: np.ndarray) -> np.ndarray:
        """``p_j = (I_j + M)/(K + 2M)`` in floating point (inference)."""
        return (np.asarray(s, dtype=np.float64) + self.M) / (self.population + 2.0 * self.M)

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``Σ_j log Bin(round(N·s̃_j); N, p_j)`` (observed values are read on the grid ``k/N``)."""
        from scipy.stats import binom

        k = np.rint(np.asarray(s_dp, dtype=np.float64) * self.n_trials)
        return binom.logpmf(k, self.n_trials, self.probabilities(s)).sum(-1)

    def event(self) -> PrivacyEvent:
        return KnownEvent(
            self.epsilon_exact,
            0.0,
            "replace-one",
            f"binomial trajectory release (Xiong et al. 2025, Prop. 4): d={self.stat_dim}, "
            f"N={self.n_trials}, M={self.M:g}, K={self.population}",
        )

    def details(self) -> dict[str, Any]:
        return {
            "N": self.n_trials,
            "M": self.M,
            "d": self.stat_dim,
            "K": self.population,
            "epsilon_nominal": self.epsilon,
            "epsilon_exact": self.epsilon_exact,
            "sampler": "exact binomial: N exact Bernoulli trials with rational p (module docstring)",
        }

    def validate_statistic_range(self, s: np.ndarray) -> None:
        if np.any(s < 0) or np.any(s > self.population) or np.any(s != np.rint(s)):
            raise InvalidDataError(
                f"{self.name}: infection counts must be integers in [0, {self.population}] (the values are "
                "confidential and not shown). Nothing was charged or released."
            )

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        """The exact release (module docstring): N exact Bernoulli trials per time point, with
        ``M`` as the exact rational of its double (the value the event was computed from)."""
        from ..discrete import sample_binomial

        m = Fraction(self.M)
        probs = [(Fraction(int(i)) + m) / (self.population + 2 * m) for i in s]
        return lambda gen: np.array([sample_binomial(self.n_trials, p, gen) for p in probs]) / self.n_trials

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(K={self.population}, d={self.stat_dim}, N={self.n_trials}, "
            f"epsilon={self.epsilon:g}, M={self.M:g})"
        )


__all__ = ["BinomialTrajectoryRelease"]
