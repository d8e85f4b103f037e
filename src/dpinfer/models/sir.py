"""Stochastic SIR epidemic released through the binomial mechanism of Xiong et al. (2025, Prop. 4).

Confidential model: the SIR Markov jump process in a closed population of K individuals, started
at S = K - I0, I = I0, R = 0, with infection rate ``β·S·I/K`` and recovery rate ``γ·I``, simulated
exactly by Gillespie's direct method (compiled with numba, parallel over a batch, one private
xoroshiro128+ stream per simulation so that results do not depend on the thread schedule). The
confidential summary is the number infected ``I(t_j)`` at the recording times (default
t = 0, 17, ..., 153, ten values). ``θ = (log β, log γ)``.

Release mechanism (Prop. 4)::

    s̃_j = Bin(N, p_j)/N,   p_j = (I(t_j) + M)/(K + 2M),   M = N·d/ε,   j = 1..d.

Replacing one individual's record (its infection status) moves each ``I(t_j)`` by at most 1; the
binomial likelihood ratio per time point is then at most ``(1 + 1/M)^N`` (App. B), so the release is
``d·N·log(1 + 1/M)``-DP, which is ``<= d·N/M = ε``. The privacy event declares the tighter
``d·N·log(1 + 1/M)``. ``G(s, u) = F⁻¹_{Bin(N, p)}(u)/N``, ``k = d`` uniforms.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ..privacy import InvalidDataError, KnownEvent
from ..privacy.events import PrivacyEvent
from ..privacy.validation import check_epsilon
from .base import GaussianPrior, Mechanism, PrivateDataModel, as_generator
from .streams import _next_double, stream_seeds

DEFAULT_TIMES = np.arange(0.0, 154.0, 17.0)  # 0, 17, ..., 153

# ----------------------------------------------------------------------------------------------
# compiled kernels
# ----------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _gillespie_one(beta, gamma, K, S0, I0, times, state, max_events, record_after, out):
    """Exact SIR path; writes I(times) into ``out``; returns (final S, final I, events)."""
    t = 0.0
    S = S0
    I = I0
    j = 0
    nt = times.shape[0]
    events = 0
    invK = 1.0 / K
    while j < nt and times[j] <= 0.0:  # the initial state, whatever the recording convention
        out[j] = I
        j += 1
    while j < nt:
        if I == 0:
            while j < nt:
                out[j] = 0
                j += 1
            break
        r_inf = beta * S * I * invK
        r_rec = gamma * I
        total = r_inf + r_rec
        t_next = t - math.log(_next_double(state)) / total
        if not record_after:
            while j < nt and times[j] < t_next:
                out[j] = I
                j += 1
            if j == nt:
                break
        if _next_double(state) * total < r_inf:
            S -= 1
            I += 1
        else:
            I -= 1
        t = t_next
        events += 1
        if record_after:
            # authors' sir_c.cpp: the event that crosses a grid point is applied before recording
            while j < nt and times[j] < t_next:
                out[j] = I
                j += 1
        if events >= max_events:
            while j < nt:
                out[j] = -1
                j += 1
            break
    return S, I, events


@numba.njit(parallel=True, cache=True)
def _gillespie_batch(betas, gammas, K, S0, I0, times, seeds, max_events, record_after):
    m = betas.shape[0]
    out = np.empty((m, times.shape[0]), dtype=np.int64)
    final = np.empty((m, 3), dtype=np.int64)
    for i in numba.prange(m):
        state = seeds[i].copy()
        S, I, ev = _gillespie_one(
            betas[i], gammas[i], K, S0, I0, times, state, max_events, record_after, out[i]
        )
        final[i, 0] = S
        final[i, 1] = I
        final[i, 2] = ev
    return out, final


@numba.njit(cache=True)
def _binom_ppf_scalar(u, n, p):
    """Smallest k with P(Bin(n, p) <= k) >= u, by summation outward from the mode (no underflow)."""
    if p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    q = 1.0 - p
    m = int(math.floor((n + 1) * p))
    if m > n:
        m = n
    logpm = (
        math.lgamma(n + 1)
        - math.lgamma(m + 1)
        - math.lgamma(n - m + 1)
        + m * math.log(p)
        + (n - m) * math.log(q)
    )
    pm = math.exp(logpm)
    # P(X <= m)
    c = pm
    term = pm
    k = m
    while k > 0:
        term *= k / (n - k + 1.0) * q / p
        k -= 1
        c += term
        if term < 1e-18 * c:
            break
    k = m
    term = pm
    if u <= c:
        while k > 0 and c - term >= u:
            c -= term
            term *= k / (n - k + 1.0) * q / p
            k -= 1
        return k
    while c < u and k < n:
        term *= (n - k) / (k + 1.0) * p / q
        k += 1
        c += term
    return k


@numba.njit(parallel=True, cache=True)
def _binom_ppf(u, n, p):
    flat_u = u.ravel()
    flat_p = p.ravel()
    out = np.empty(flat_u.shape[0], dtype=np.int64)
    for i in numba.prange(flat_u.shape[0]):
        out[i] = _binom_ppf_scalar(flat_u[i], n, flat_p[i])
    return out.reshape(u.shape)


def binom_ppf(u: np.ndarray, n: int, p: np.ndarray) -> np.ndarray:
    """Binomial inverse CDF, vectorised and compiled (``u`` and ``p`` broadcast)."""
    u, p = np.broadcast_arrays(np.asarray(u, dtype=np.float64), np.asarray(p, dtype=np.float64))
    return _binom_ppf(np.ascontiguousarray(u), int(n), np.ascontiguousarray(p))


def gillespie_sir(
    beta: Any,
    gamma: Any,
    population: int,
    times: Any = DEFAULT_TIMES,
    initial_infected: int = 1,
    seed: Any = None,
    max_events: int | None = None,
    record_after_event: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact SIR paths (Gillespie's direct method), batched and parallel.

    Parameters
    ----------
    beta, gamma
        Infection and recovery rates, scalars or arrays of equal length (one path each).
    population
        K; the epidemic starts at S = K - initial_infected.
    times
        Increasing recording times; ``I(t)`` is the state just before the first event after t.
    max_events
        Safety cap per path (default 4·K + 10); a capped path records -1 at later times.
    record_after_event
        Reproduce the authors' ``sir_c.cpp`` quirk (record after applying the crossing event).

    Returns
    -------
    infected : int64 array (m, len(times))
    final : int64 array (m, 3)
        S and I at the end of the recorded horizon (or extinction) and the number of events.
    """
    betas, gammas = np.broadcast_arrays(
        np.atleast_1d(np.asarray(beta, float)), np.atleast_1d(np.asarray(gamma, float))
    )
    if np.any(~np.isfinite(betas)) or np.any(betas < 0) or np.any(~np.isfinite(gammas)) or np.any(gammas < 0):
        raise InvalidDataError("beta and gamma must be finite and non-negative.")
    K = int(population)
    if K < 1 or not 1 <= initial_infected <= K:
        raise InvalidDataError(
            f"need population >= 1 and 1 <= initial_infected <= population, got {K}, {initial_infected}."
        )
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 1 or np.any(np.diff(t) < 0) or np.any(t < 0):
        raise InvalidDataError("times must be a non-decreasing 1-D array of non-negative numbers.")
    cap = 4 * K + 10 if max_events is None else int(max_events)
    seeds = stream_seeds(as_generator(seed), betas.size)
    return _gillespie_batch(
        np.ascontiguousarray(betas, dtype=np.float64),
        np.ascontiguousarray(gammas, dtype=np.float64),
        float(K),
        K - int(initial_infected),
        int(initial_infected),
        t,
        seeds,
        cap,
        bool(record_after_event),
    )


# ----------------------------------------------------------------------------------------------
# mechanism and model
# ----------------------------------------------------------------------------------------------


class BinomialTrajectoryMechanism(Mechanism):
    """The Proposition 4 release ``s̃_j = Bin(N, (I_j + M)/(K + 2M))/N`` with ``M = N·d/ε``.

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

    def __init__(self, population: int, n_times: int, n_trials: int = 1000, epsilon: float = 10.0) -> None:
        self.population = int(population)
        self.stat_dim = self.out_dim = self.noise_dim = int(n_times)
        if int(n_trials) != n_trials or n_trials < 1:
            raise InvalidDataError(f"n_trials must be a positive integer, got {n_trials!r}.")
        self.n_trials = int(n_trials)
        self.epsilon = check_epsilon(epsilon)
        self.M = self.n_trials * self.stat_dim / self.epsilon
        self.neighbouring = "replace-one"
        self.epsilon_exact = self.stat_dim * self.n_trials * math.log1p(1.0 / self.M)

    @property
    def sensitivity(self) -> float:
        return 1.0  # each I(t_j) moves by at most 1 when one individual's record is replaced

    def probabilities(self, s: np.ndarray) -> np.ndarray:
        return (np.asarray(s, dtype=np.float64) + self.M) / (self.population + 2.0 * self.M)

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return binom_ppf(u, self.n_trials, self.probabilities(s)) / self.n_trials

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
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
        }

    @property
    def output_range(self) -> tuple[float, float]:
        return 0.0, 1.0

    def validate_statistic_range(self, s: np.ndarray) -> None:
        if np.any(s < 0) or np.any(s > self.population) or np.any(s != np.rint(s)):
            raise InvalidDataError(f"infection counts must be integers in [0, {self.population}].")

    def __repr__(self) -> str:
        return (
            f"BinomialTrajectoryMechanism(K={self.population}, d={self.stat_dim}, N={self.n_trials}, "
            f"epsilon={self.epsilon:g}, M={self.M:g})"
        )


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
        ``"synthetic"``, ``"real-outbreak"`` or a :class:`~dpinfer.models.base.Prior` over
        (log β, log γ).
    record_after_event
        Reproduce the authors' recording quirk (see :func:`gillespie_sir`).
    simulator
        ``"exact"`` (Gillespie, default) or ``"hybrid"`` (exact while fewer than 100 are infected,
        tau-leaping otherwise; :mod:`dpinfer.models.sir_tau_leap`). The hybrid is an approximation:
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
    ) -> None:
        if simulator not in ("exact", "hybrid"):
            raise InvalidDataError(f"simulator must be 'exact' or 'hybrid', got {simulator!r}.")
        self.simulator = simulator
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
        if self.simulator == "hybrid":
            from .sir_tau_leap import hybrid_sir

            infected, _ = hybrid_sir(
                np.exp(theta[:, 0]),
                np.exp(theta[:, 1]),
                self.population,
                self.times,
                self.initial_infected,
                as_generator(seed),
            )
            return infected.astype(np.float64)
        infected, _ = gillespie_sir(
            np.exp(theta[:, 0]),
            np.exp(theta[:, 1]),
            self.population,
            self.times,
            self.initial_infected,
            as_generator(seed),
            record_after_event=self.record_after_event,
        )
        return infected.astype(np.float64)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            simulator=self.simulator,
            population=self.population,
            times=self.times.tolist(),
            n_trials=self.mechanism.n_trials,
            epsilon=self.mechanism.epsilon,
            M=self.mechanism.M,
        )
        return d
