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
``d·N·log(1 + 1/M)``. ``G(s, u) = F⁻¹_{Bin(N, p)}(u)/N``, ``k = d`` uniforms, with an inverse CDF
exact in both tails (:func:`binom_ppf`; see :class:`BinomialTrajectoryMechanism` for what that
guarantees).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ..errors import InvalidDataError
from ..privacy import KnownEvent
from ..privacy.events import PrivacyEvent
from ..privacy.validation import check_epsilon
from .contract import PrivateDataModel
from .mechanisms import Mechanism
from .priors import GaussianPrior
from .randomness import as_generator
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


# Binomial log-pmf by Loader's saddle-point formula (Loader 2000, "Fast and accurate computation of
# binomial probabilities"; R's dbinom): accurate to a few ulps of |log pmf|, unlike differences of
# lgamma(n + 1) ~ n·log n. _STIRLERR: the Stirling error at n = 0..15 (n = 0 unused).
_STIRLERR = np.array(
    [
        0.0,
        0.08106146679532726,
        0.0413406959554093,
        0.02767792568499834,
        0.020790672103765093,
        0.016644691189821193,
        0.013876128823070748,
        0.01189670994589177,
        0.010411265261972096,
        0.009255462182712733,
        0.00833056343336287,
        0.007573675487951841,
        0.00694284010720953,
        0.006408994188004207,
        0.0059513701127588475,
        0.005554733551962801,
    ]
)
_LN2 = math.log(2.0)
_LN_2PI = math.log(2.0 * math.pi)
# Tail mass below the first summed term, relative to the target scale: 2^-110 <= 2^-56 · u for every
# u >= 2^-54 (the smallest uniform); far below the rounding of the sums (~1e-14 relative).
_LOG_NEGLECT = -110.0 * math.log(2.0)
_S0, _S1, _S2, _S3, _S4 = 1.0 / 12.0, 1.0 / 360.0, 1.0 / 1260.0, 1.0 / 1680.0, 1.0 / 1188.0


@numba.njit(cache=True)
def _stirlerr(n):
    """log(n!) - [(n + ½)·log n - n + ½·log 2π] for integer-valued n >= 1."""
    if n <= 15.0:
        return _STIRLERR[int(n)]
    nn = n * n
    if n > 500.0:
        return (_S0 - _S1 / nn) / n
    if n > 80.0:
        return (_S0 - (_S1 - _S2 / nn) / nn) / n
    if n > 35.0:
        return (_S0 - (_S1 - (_S2 - _S3 / nn) / nn) / nn) / n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


@numba.njit(cache=True)
def _bd0(x, np_):
    """x·log(x/np) + np - x without cancellation (Loader 2000)."""
    if abs(x - np_) < 0.1 * (x + np_):
        v = (x - np_) / (x + np_)
        s = (x - np_) * v
        ej = 2.0 * x * v
        v = v * v
        for j in range(1, 1000):
            ej *= v
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
        return s
    return x * math.log(x / np_) + np_ - x


@numba.njit(cache=True)
def _binom_logpmf(k, n, p, q):
    """log P(Bin(n, p) = k) for 0 < p < 1, q = 1 - p; error a few ulps of |log P| (Loader's formula)."""
    if k == 0:
        return n * math.log1p(-p)
    if k == n:
        return n * math.log(p)
    x = float(k)
    nf = float(n)
    lc = _stirlerr(nf) - _stirlerr(x) - _stirlerr(nf - x) - _bd0(x, nf * p) - _bd0(nf - x, nf * q)
    return lc - 0.5 * (_LN_2PI + math.log(x) + math.log1p(-x / nf))


@numba.njit(cache=True)
def _tail_start(n, p, q, mirror, scale):
    """First index of a walk up the lower tail of W (W = X ~ Bin(n, p), or W = n - X if ``mirror``).

    Returns ``(j, t)``: P(W < j) <= 2^scale·exp(_LOG_NEGLECT) (zero when j = 0) and
    ``t = P(W = j)·2^-scale``. Depends on (n, p, mirror, scale) only, never on u.
    """
    nf = float(n)
    log_scale = scale * _LN2
    if mirror:
        s = q
        odds = q / p
    else:
        s = p
        odds = p / q
    mode = math.floor((nf + 1.0) * s)
    if mode > nf:
        mode = nf
    # normal-approximation guess at the cut-off; checked below with the exact geometric bound
    z = math.sqrt(-2.0 * (_LOG_NEGLECT + log_scale))
    g = math.floor(nf * s - z * math.sqrt(nf * p * q)) - 1.0
    if g < 0.0:
        g = 0.0
    if g > mode:
        g = mode
    j = int(g)
    im = int(mode)
    lt = _binom_logpmf(n - j if mirror else j, n, p, q) - log_scale
    while lt < _LOG_NEGLECT - 400.0 and j < im:  # far too far out: the term would underflow
        j += (im - j + 1) // 2
        lt = _binom_logpmf(n - j if mirror else j, n, p, q) - log_scale
    while lt > 700.0 and j > 0:  # rescaled tiny u only: the term would overflow
        j //= 2
        lt = _binom_logpmf(n - j if mirror else j, n, p, q) - log_scale
    t = math.exp(lt)
    tol = math.exp(_LOG_NEGLECT)
    # below the mode the ratio r = P(W = j-1)/P(W = j) decreases as j decreases (log-concavity), so
    # P(W < j) <= P(W = j)·r/(1 - r): walk out until that bound is negligible
    while j > 0:
        r = j / ((nf - j + 1.0) * odds)
        if t * r <= tol * (1.0 - r):
            break
        t *= r
        j -= 1
    if j == 0 and lt < 700.0:
        # P(W = 0) = p^n or q^n: a correctly rounded pow where the base is exact (q = 1 - p is
        # exact for p >= 1/2), in place of exp(n·log(...)) and its ~|log|·2^-53 relative error
        if mirror:
            w0 = math.pow(p, nf)
        elif p >= 0.5:
            w0 = math.pow(q, nf)
        else:
            w0 = 0.0
        if w0 > 1e-300:
            t = math.ldexp(w0, -scale)
    return j, t


@numba.njit(cache=True)
def _binom_ppf_scalar(u, n, p):
    """Smallest k with P(Bin(n, p) <= k) >= u, exact in both tails (see :func:`binom_ppf`)."""
    if n <= 0 or not p > 0.0 or not u > 0.0:
        return 0
    if p >= 1.0 or u >= 1.0:
        return n
    q = 1.0 - p
    nf = float(n)
    # seam a <= floor(n·p) <= median: F(a - 1) < 1/2 exactly (Kaas & Buhrman 1980), so the lower
    # tail decides k < a only for u <= 1/2 and the upper tail decides every k >= a
    x = nf * p
    a = int(math.floor(x))
    if a > 0 and x - a <= x * 4.0e-16:  # fl(n·p) may have rounded up onto an integer
        a -= 1
    if u <= 0.5:
        if a >= 1:
            scale = 0
            if u < 5.551115123125783e-17:  # below 2^-54: rescale by 2^(64 m) so nothing underflows
                e = math.frexp(u)[1] - 1  # u >= 2^e
                scale = -64 * ((-e - 54 + 63) // 64)
            uh = math.ldexp(u, -scale) if scale != 0 else u
            j, t = _tail_start(n, p, q, False, scale)
            if j <= a - 1:
                odds = p / q
                c = t  # P(X <= j), summed from the far tail inwards
                while True:
                    if c >= uh:
                        return j
                    if j >= a - 1:
                        break
                    t *= (nf - j) / (j + 1.0) * odds
                    j += 1
                    c += t
        w = 1.0 - u  # rounded by <= 2⁻⁵⁴, i.e. ~1e-16 relative to 1 - u >= 1/2
    else:
        w = 1.0 - u  # exact (Sterbenz)
    # smallest k >= a with P(X > k) <= w, i.e. largest j = n - 1 - k <= n - 1 - a with P(Y <= j) <= w
    # for Y = n - X ~ Bin(n, q), summing P(Y <= j) from the far tail inwards
    jmax = n - 1 - a
    j0, t = _tail_start(n, p, q, True, 0)
    if j0 - 1 >= jmax:
        return a
    j = j0 - 1
    g = 0.0
    odds = q / p
    while j < jmax:
        gn = g + t
        if gn > w:
            break
        g = gn
        j += 1
        t *= (nf - j) / (j + 1.0) * odds
    return n - 1 - j


@numba.njit(parallel=True, cache=True)
def _binom_ppf(u, n, p):
    flat_u = u.ravel()
    flat_p = p.ravel()
    out = np.empty(flat_u.shape[0], dtype=np.int64)
    for i in numba.prange(flat_u.shape[0]):
        out[i] = _binom_ppf_scalar(flat_u[i], n, flat_p[i])
    return out.reshape(u.shape)


def binom_ppf(u: np.ndarray, n: int, p: np.ndarray) -> np.ndarray:
    """Binomial inverse CDF, vectorised and compiled (``u`` and ``p`` broadcast).

    Returns the smallest ``k`` in ``[0, n]`` with ``P(Bin(n, p) <= k) >= u``, exact in both tails:

    * ``u <= 1/2``: ``P(X <= k)`` is summed from the far lower tail inwards (terms from Loader's
      saddle-point log-pmf, the first one where the mass below it is < 2⁻⁵⁶·u), so it carries a
      *relative* error of ~1e-14 whatever its size;
    * ``u > 1/2``: ``1 - u`` is exact in floating point (``u`` has at most 53 significant bits), and
      is compared with ``P(X > k)`` summed from the far upper tail inwards, so quantiles within
      2⁻⁵³ of 1 are as exact as those near 0.

    The answer is therefore ``scipy.stats.binom.ppf(u, n, p)`` computed in exact arithmetic, unless
    ``u`` (or ``1 - u``) lies within ~1e-13 relative of a CDF (survival) value; scipy itself can be
    off for ``u`` within a few 2⁻⁵³ of 1 (its ``isf(1 - u)`` is right there) and for subnormal
    ``u``. Every k the law gives mass is reachable, and there is no spurious atom at 0 or n: the
    result is n only if ``u > P(X <= n - 1)``, 0 only if ``u <= P(X = 0)``. It is non-decreasing in
    ``u`` by construction on ``[2⁻⁵⁴, 1]``: each ``k`` is decided by one fixed summation, the lower
    tail for ``k`` below a seam ``a <= floor(n·p) <= median`` and the upper tail from ``a`` up.
    Conventions: ``u <= 0`` gives 0 (scipy: -1), ``u >= 1`` gives n, ``p <= 0`` gives 0 and
    ``p >= 1`` gives n; NaN raises :class:`InvalidDataError`.
    """
    u, p = np.broadcast_arrays(np.asarray(u, dtype=np.float64), np.asarray(p, dtype=np.float64))
    if np.isnan(u).any() or np.isnan(p).any():
        raise InvalidDataError("binom_ppf: u and p must not be NaN.")
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

    Notes
    -----
    ``G`` draws each ``Bin(N, p_j)`` by :func:`binom_ppf`, whose inverse CDF is exact in both tails
    (the lower tail summed from the far end for ``u <= 1/2``; for ``u > 1/2`` the exact ``1 - u``
    compared with the upper tail summed from the far end). An output ``k`` is therefore produced
    exactly when ``u`` falls in ``(F(k - 1), F(k)]`` of the true binomial CDF: with the privacy
    uniforms (53-bit grid, clipped to ``[2⁻⁵⁴, 1 - 2⁻⁵³]``) every output has its binomial
    probability up to the grid resolution, outputs with binomial mass far below 2⁻⁵³ (such as N/N
    from a small ``I_j``) never occur, and the result is monotone in ``u``. The Prop. 4
    likelihood-ratio bound ``(1 + 1/M)^N`` per time point, which holds for the binomial pmf at
    every ``k``, thus holds for every reachable output; before this, rounding in a running CDF
    sum sent ``u`` near 1 to N (e.g. ``N = 1000, p = 1/2, u = 1 - 10⁻¹³`` gave 1000, exact 616),
    an output reachable from one ``I_j`` and not from its neighbour (an infinite privacy loss).
    What remains for ``G`` is the finite resolution of the uniforms: an output at the very edge
    of the reachable range (binomial tail mass ~2⁻⁵³) can be reachable from ``I_j + 1`` and not
    from ``I_j``, with probability ~2⁻⁵³ per time point. ``G`` is therefore used for *inference*
    only: a :meth:`release` does not go through uniforms at all but draws each count exactly,
    as the sum of N exact Bernoulli(p_j) trials with the rational p_j = (I_j + M)/(K + 2M)
    (:func:`dpinfer.privacy.discrete.sample_binomial`, integer randomness from the OS CSPRNG), so
    every count has exactly its binomial probability and Prop. 4's pure-ε bound holds with no
    residual.
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
        # rounded up by one ulp: the declared ε never understates d·N·log(1 + 1/M)
        eps_exact = self.stat_dim * self.n_trials * math.log1p(1.0 / self.M)
        self.epsilon_exact = math.nextafter(eps_exact, math.inf)

    @property
    def sensitivity(self) -> float:
        return 1.0  # each I(t_j) moves by at most 1 when one individual's record is replaced

    def probabilities(self, s: np.ndarray) -> np.ndarray:
        return (np.asarray(s, dtype=np.float64) + self.M) / (self.population + 2.0 * self.M)

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return binom_ppf(u, self.n_trials, self.probabilities(s)) / self.n_trials

    def _prepare_release(self, s: np.ndarray) -> Any:
        """The exact release (class docstring): N exact Bernoulli trials per time point."""
        from fractions import Fraction

        from ..privacy.discrete import sample_binomial

        m = Fraction(self.M)
        probs = [(Fraction(int(i)) + m) / (self.population + 2 * m) for i in s]
        return lambda gen: np.array([sample_binomial(self.n_trials, p, gen) for p in probs]) / self.n_trials

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
        ``"synthetic"``, ``"real-outbreak"`` or a :class:`~dpinfer.models.priors.Prior` over
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
