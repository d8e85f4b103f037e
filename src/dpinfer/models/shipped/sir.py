"""Stochastic SIR epidemic released through the binomial mechanism of Xiong et al. (2025, Prop. 4).

Confidential model: the SIR Markov jump process in a closed population of K individuals, started
at S = K - I0, I = I0, R = 0, with infection rate ``β·S·I/K`` and recovery rate ``γ·I``, simulated
exactly by Gillespie's direct method (:func:`~dpinfer.models.shipped.gillespie.gillespie_sir`: compiled with
numba, parallel over a batch, one private xoroshiro128+ stream per simulation so that results do
not depend on the thread schedule). The
confidential summary is the number infected ``I(t_j)`` at the recording times (default
t = 0, 17, ..., 153, ten values). ``θ = (log β, log γ)``.

Release mechanism (Prop. 4)::

    s̃_j = Bin(N, p_j)/N,   p_j = (I(t_j) + M)/(K + 2M),   M = N·d/ε,   j = 1..d.

Replacing one individual's record (its infection status) moves each ``I(t_j)`` by at most 1; the
binomial likelihood ratio per time point is then at most ``(1 + 1/M)^N`` (App. B), so the release is
``d·N·log(1 + 1/M)``-DP, which is ``<= d·N/M = ε``. The privacy event declares the tighter
``d·N·log(1 + 1/M)``. The release (exact binomial counts, charged through the one release path)
lives in :mod:`dpinfer.privacy.mechanisms.binomial` (:class:`BinomialTrajectoryRelease`, re-exported
here); this module adds the inference map ``G(s, u) = F⁻¹_{Bin(N, p)}(u)/N``, ``k = d`` uniforms,
with an inverse CDF exact in both tails (:func:`~dpinfer.models.shipped.binomial.binom_ppf`; see
:class:`BinomialTrajectoryMechanism` for what that guarantees). ``binom_ppf``, ``gillespie_sir``
and ``DEFAULT_TIMES`` stay importable from this module.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, cast

import numpy as np

from ...errors import InferenceWarning, InvalidDataError
from ...privacy.mechanisms.binomial import BinomialTrajectoryRelease
from ...randomness import as_generator
from ..contract import PrivateDataModel
from ..priors import GaussianPrior
from .binomial import binom_ppf
from .gillespie import DEFAULT_TIMES, gillespie_sir
from .sir_tau_leap import hybrid_sir

__all__ = [
    "DEFAULT_TIMES",
    "SIR",
    "BinomialTrajectoryMechanism",
    "BinomialTrajectoryRelease",
    "binom_ppf",
    "gillespie_sir",
    "real_outbreak_prior",
    "synthetic_prior",
]

# ----------------------------------------------------------------------------------------------
# mechanism and model
# ----------------------------------------------------------------------------------------------


class BinomialTrajectoryMechanism(BinomialTrajectoryRelease):
    """The Proposition 4 release ``s̃_j = Bin(N, (I_j + M)/(K + 2M))/N`` with ``M = N·d/ε``.

    The release itself (validation, the exact binomial draw, the event and the report) is
    :class:`dpinfer.privacy.mechanisms.binomial.BinomialTrajectoryRelease`: a release draws each
    count exactly, as the sum of N exact Bernoulli(p_j) trials with the rational
    p_j = (I_j + M)/(K + 2M) (integer randomness from the OS CSPRNG), so every count has exactly
    its binomial probability and Prop. 4's pure-ε bound holds with no residual. This class adds
    the inference map ``G`` and the reading of published observed values.

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

    Notes
    -----
    ``G`` draws each ``Bin(N, p_j)`` by :func:`binom_ppf`, whose inverse CDF is exact in both tails
    (the lower tail summed from the far end for ``u <= 1/2``; for ``u > 1/2`` the exact ``1 - u``
    compared with the upper tail summed from the far end). An output ``k`` is therefore produced
    exactly when ``u`` falls in ``(F(k - 1), F(k)]`` of the true binomial CDF: with 53-bit
    uniforms every output has its binomial probability up to the grid resolution, outputs with
    binomial mass far below 2⁻⁵³ (such as N/N from a small ``I_j``) never occur, and the result is
    monotone in ``u``. Before this, rounding in a running CDF sum sent ``u`` near 1 to N (e.g.
    ``N = 1000, p = 1/2, u = 1 - 10⁻¹³`` gave 1000, exact 616). What remains for ``G`` is the
    finite resolution of the uniforms (an output at the very edge of the reachable range can be
    reachable from ``I_j + 1`` and not from ``I_j``, with probability ~2⁻⁵³ per time point), which
    is why ``G`` is used for inference only and a release never goes through uniforms.
    """

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return binom_ppf(u, self.n_trials, self.probabilities(s)) / self.n_trials

    def check_observed(self, s_dp: Any) -> np.ndarray:
        """Range and shape as for every mechanism; values off the grid ``k/N`` (which this
        mechanism never outputs, e.g. the published outbreak statistics) are read as the nearest
        grid point, with a warning (the density rounds; neural estimators use the grid cell)."""
        arr = super().check_observed(s_dp)
        k = arr * self.n_trials
        if np.any(np.abs(k - np.rint(k)) > 1e-6):
            warnings.warn(
                f"{self.name}: observed values {arr.tolist()} are not multiples of 1/N = "
                f"{1 / self.n_trials:g}, so this mechanism cannot have produced them; they are read "
                f"as the nearest grid points {(np.rint(k) / self.n_trials).tolist()}.",
                InferenceWarning,
                stacklevel=2,
            )
        return arr


def _moved_prior(prior: Any, mean: Any, sd: Any) -> GaussianPrior:
    """``prior`` (Gaussian) with its mean and/or per-coordinate sd replaced, correlation kept."""
    if not isinstance(prior, GaussianPrior):
        raise InvalidDataError(
            "prior_mean / prior_sd move a Gaussian prior; give a GaussianPrior or a named one."
        )
    out = []
    for label, value, old in (("prior_mean", mean, prior.mean), ("prior_sd", sd, prior.sd)):
        try:
            arr = old if value is None else np.broadcast_to(np.asarray(value, dtype=np.float64), (2,))
        except (TypeError, ValueError):
            raise InvalidDataError(f"{label} must be a number or 2 numbers, got {value!r}.") from None
        if not np.all(np.isfinite(arr)) or (label == "prior_sd" and not np.all(arr > 0)):
            raise InvalidDataError(f"{label} must be finite{' and positive' if label == 'prior_sd' else ''}, "
                                   f"got {value!r}.")
        out.append(np.asarray(arr, dtype=np.float64))
    old_sd = prior.sd
    corr = prior.cov / np.outer(old_sd, old_sd)
    return GaussianPrior(out[0], corr * np.outer(out[1], out[1]))


def synthetic_prior() -> GaussianPrior:
    """θ = (log β, log γ) ~ N((log 0.4, log 0.125), diag(0.5, 0.2)) (variances; authors' synthetic prior)."""
    return GaussianPrior([math.log(0.4), math.log(0.125)], [0.5, 0.2])


def real_outbreak_prior() -> GaussianPrior:
    """θ ~ N((-2, -3), I₂) (authors' prior for the real outbreaks)."""
    return GaussianPrior([-2.0, -3.0], [1.0, 1.0])


class SIR(PrivateDataModel):
    """SIR epidemic with the Prop. 4 binomial release.

    Parameters
    ----------
    population
        K (authors: 10^6 synthetic).
    epsilon
        Nominal ε of the release (M = N·d/ε).
    n_trials
        N of the binomial release.
    times
        Recording times (default 0, 17, ..., 153).
    prior
        ``"synthetic"``, ``"real-outbreak"`` or a :class:`~dpinfer.models.priors.Prior` over
        (log β, log γ).
    prior_mean, prior_sd
        Move or rescale a Gaussian ``prior``: its mean and per-coordinate sd of (log β, log γ)
        (one number or two; None keeps the named prior's). Its correlation is kept.
    record_after_event
        Reproduce the authors' recording quirk (see :func:`gillespie_sir`).
    simulator
        ``"exact"`` (Gillespie, default) or ``"hybrid"`` (exact while fewer than 100 are infected,
        tau-leaping otherwise; :mod:`dpinfer.models.shipped.sir_tau_leap`). The hybrid is an approximation:
        validate its posterior against the exact one before relying on it.
    """

    name = "sir"
    param_names = ("log_beta", "log_gamma")

    def __init__(
        self,
        population: int = 1_000_000,
        epsilon: float = 10.0,
        n_trials: int = 1000,
        times: Any = DEFAULT_TIMES,
        prior: Any = "synthetic",
        initial_infected: int = 1,
        record_after_event: bool = False,
        simulator: str = "exact",
        prior_mean: Any = None,
        prior_sd: Any = None,
    ) -> None:
        if simulator not in ("exact", "hybrid"):
            raise InvalidDataError(f"simulator must be 'exact' or 'hybrid', got {simulator!r}.")
        self.simulator_kind = simulator  # (the contract's ``simulator`` is a function; this is a name)
        self.population = int(population)
        if self.population < 2:
            raise InvalidDataError("population must be >= 2.")
        self.times = np.asarray(times, dtype=np.float64)
        self.initial_infected = int(initial_infected)
        self.record_after_event = bool(record_after_event)
        if isinstance(prior, str):
            if prior == "synthetic":
                prior = synthetic_prior()
            elif prior in ("real", "real-outbreak"):
                prior = real_outbreak_prior()
            else:
                raise InvalidDataError(f"unknown prior {prior!r}: use 'synthetic' or 'real-outbreak'.")
        if prior.dim != 2:
            raise InvalidDataError(
                f"the SIR prior must be over (log beta, log gamma), got dimension {prior.dim}."
            )
        if prior_mean is not None or prior_sd is not None:
            prior = _moved_prior(prior, prior_mean, prior_sd)
        self.prior = prior
        self.mechanism = BinomialTrajectoryMechanism(self.population, self.times.size, n_trials, epsilon)

    @classmethod
    def real_outbreak(cls, **kw: Any) -> SIR:
        """The authors' real-data set-up: K = 10^5, N = 100, M = 100 (ε = 10 nominal, 9.95 exact)."""
        kw.setdefault("population", 100_000)
        kw.setdefault("n_trials", 100)
        kw.setdefault("epsilon", 10.0)
        kw.setdefault("prior", "real-outbreak")
        return cls(**kw)

    def simulate_confidential(self, theta: np.ndarray, seed: Any = None) -> np.ndarray:
        theta = self.prior.check_theta(theta)
        args = (np.exp(theta[:, 0]), np.exp(theta[:, 1]), self.population, self.times, self.initial_infected)
        if self.simulator_kind == "hybrid":
            infected, _ = hybrid_sir(*args, as_generator(seed))
        else:
            infected, _ = gillespie_sir(*args, as_generator(seed), record_after_event=self.record_after_event)
        return infected.astype(np.float64)

    def describe(self) -> dict[str, Any]:
        mech = cast(BinomialTrajectoryMechanism, self.mechanism)
        d = super().describe()
        d.update(
            simulator=self.simulator_kind,
            population=self.population,
            times=self.times.tolist(),
            n_trials=mech.n_trials,
            epsilon=mech.epsilon,
            M=mech.M,
        )
        return d
