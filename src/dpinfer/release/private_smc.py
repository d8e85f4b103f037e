"""Private SMC-ABC on confidential data: one sparse vector per population (Park et al. 2021, §7).

ABCDP's §7 proposes a sequential version whose populations touch the confidential data Y* only
through a private mechanism. Here each population k is one run of Algorithm 1 (ABCDP's sparse
vector, Laplace noise, one threshold) over a public stream θ ~ q_k, Y ~ p(y|θ):

* q_0 is the prior; q_k (k >= 1) is the Beaumont et al. (2009) kernel mixture
  Σ_j w_j N(θ; θ_j, 2 Σ̂) around the *released* particles of population k-1 (Σ̂ their weighted
  covariance), truncated to the prior's support. It depends only on earlier releases.
* The c accepted θ of population k are released with the event ``SparseVectorEvent(c, ε_k)``;
  their importance weights w ∝ π(θ)/q_k(θ) are computed from public quantities only.
* The thresholds ε_abc,0 > ε_abc,1 > ... are a public schedule fixed before the run (a
  data-dependent schedule, such as quantiles of the accepted distances, would leak).

Privacy: the K events compose; ε_k is the largest per-population level whose K-fold composition
the accountant (``"pld"`` by default, or ``"rdp"``) certifies at (ε, δ). The whole composition is
charged to the ledger before the first population's noise is drawn, and no particle is released
before that. Post-processing (weights, proposals, resampling) costs nothing more.

Release path: every input is validated before the charge — the privacy parameters, the sizes
(at most :data:`MAX_PARTICLES` particles per population, refused before anything is allocated),
the distance's sensitivity (public bounds and N only; :func:`~dpinfer.distances.release_sensitivity`),
the noise scale, the observed data and the first batch of population 0 simulated and compared
with them (a shape mismatch between the observed data and the simulations is refused here,
uncharged). Each population's sparse vector draws its noise through the
:class:`~dpinfer.privacy.context.ReleaseContext` and answers at most ``max_draws`` queries.

The prior adapters (:func:`smc_prior`) give the free coordinates a Gaussian kernel can move
(the first K-1 weights of the Dirichlet mixture), the log prior density up to a constant, and
the support.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import logsumexp

from ..distances.base import count_records
from ..distances.enforce import release_sensitivity
from ..errors import InvalidDataError, InvalidPrivacyParameterError, refuse_removed_keywords
from ..models.smc_prior import SMCPrior
from ..privacy.accountants import get_accountant
from ..privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..privacy.events import REPLACE_ONE, SparseVectorEvent, compose
from ..privacy.mechanisms.svt import SparseVector, check_noise_scale
from ..privacy.report import PrivacyReport
from ..privacy.svt_scale import svt_laplace_scale
from ..privacy.validation import check_delta, check_epsilon
from ..results.weighted import WeightedSample
from .abcdp import check_epsilon_abc

if TYPE_CHECKING:
    from ..distances.base import Distance

#: Most particles a population may hold (c here, M in the Gaussian-weights variant): the kernel
#: proposal's density costs O(draws × particles) per population. Larger sizes are refused before
#: anything is allocated or charged.
MAX_PARTICLES = 100_000
#: Most draws simulated at once (memory of one batch of simulated data sets).
MAX_BATCH = 1 << 20
#: Elements of the largest temporary array of the proposal density (chunked above it).
_CHUNK_ELEMENTS = 1 << 22


def check_size(value: Any, name: str, low: int, high: int, advice: str) -> int:
    """An integer size in [low, high], refused with ``advice`` otherwise (before any allocation)."""
    ok = not isinstance(value, bool) and isinstance(value, (int, np.integer, float))
    if not ok or not math.isfinite(float(value)) or int(value) != value:
        raise InvalidPrivacyParameterError(f"{name} must be an integer, got {value!r}.")
    if not low <= int(value) <= high:
        raise InvalidPrivacyParameterError(
            f"{name} must be between {low} and {high:,}, got {int(value):,}. {advice} "
            "Nothing was charged or released."
        )
    return int(value)


def batch_distances(distance: Distance, prepared: Any, sims: Any, n: int) -> np.ndarray:
    """ρ(Y*, Y_i) of n simulated data sets, checked: shape (n,), finite (InvalidDataError)."""
    rho = np.asarray(distance.batch(prepared, sims), dtype=np.float64)
    if rho.shape != (n,):
        raise InvalidDataError(
            f"the distance returned shape {rho.shape} for {n} simulated data sets; the model's "
            "simulate(θ (n, p), rng) must return n data sets of the observed data's form."
        )
    if not np.all(np.isfinite(rho)):
        raise InvalidDataError("a distance is NaN or infinite; check the simulator and the distance.")
    return rho


def smc_prior(model: Any) -> SMCPrior:
    """The :class:`~dpinfer.models.smc_prior.SMCPrior` of a model: its ``smc_prior()`` (the
    protocol of :mod:`dpinfer.models.smc_prior`; the shipped ABCDP models implement it)."""
    make = getattr(model, "smc_prior", None)
    if not callable(make):
        raise InvalidPrivacyParameterError(
            f"private SMC-ABC needs the model's prior in free coordinates: {type(model).__name__} has no "
            "smc_prior() method (dpinfer.models.smc_prior.SMCPrior). Nothing was charged."
        )
    prior = make()
    if not isinstance(prior, SMCPrior):
        raise InvalidPrivacyParameterError(
            f"{type(model).__name__}.smc_prior() must return an SMCPrior, got {type(prior).__name__}. "
            "Nothing was charged."
        )
    return prior


@dataclass
class PrivateSMCResult(WeightedSample):
    """The last population (``particles``, normalised importance ``weights``), the facts of every
    population (ε_abc, b, ε_k, draws, accepted) and the ``privacy`` report of the whole release."""

    particles: np.ndarray
    weights: np.ndarray
    param_names: tuple[str, ...]
    privacy: PrivacyReport | None = None
    populations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_simulations(self) -> int:
        return int(sum(p["n_draws"] for p in self.populations))

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"populations": self.populations}, {"particles": self.particles, "weights": self.weights}

    @classmethod
    def _from_record(cls, record: Any, **kwargs: Any) -> PrivateSMCResult:
        return cls(record.arrays["particles"], record.arrays["weights"], record.param_names,
                   privacy=record.privacy, populations=list(record.fields["populations"]))


def per_population_epsilon(
    epsilon: float, delta: float, c: int, n_populations: int, accountant: str = "pld"
) -> float:
    """Largest ε_k with ``accountant``(K × SparseVectorEvent(c, ε_k)) <= ε at δ (bisection)."""
    acc = get_accountant(accountant)

    def ok(e: float) -> bool:
        return acc.epsilon(compose(*[SparseVectorEvent(c, e)] * n_populations), delta) <= epsilon

    lo, hi = epsilon / n_populations, epsilon  # basic composition meets the target, up to the
    for _ in range(60):  # accountant's discretisation (a pessimistic PLD grid adds ~1e-4)
        if ok(lo):
            break
        lo *= 0.999
    else:  # pragma: no cover
        raise InvalidPrivacyParameterError("the accountant certifies no per-population epsilon.")
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        if hi - lo < 1e-6 * epsilon:
            break
    return lo


def kernel_proposal(prior: SMCPrior, particles: np.ndarray, weights: np.ndarray, n: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n draws (free coordinates) from the truncated kernel mixture, and log q (up to a constant)."""
    cov = 2.0 * np.atleast_2d(np.cov(particles.T, aweights=weights)) + 1e-12 * np.eye(particles.shape[1])
    chol = np.linalg.cholesky(cov)
    out = np.empty((0, particles.shape[1]))
    while out.shape[0] < n:
        idx = rng.choice(weights.size, size=2 * n, p=weights)
        z = particles[idx] + rng.standard_normal((2 * n, particles.shape[1])) @ chol.T
        out = np.vstack([out, z[np.isfinite(prior.log_density(z))]])
    return out[:n], _log_q(out[:n], particles, weights, chol)


def _log_q(z: np.ndarray, particles: np.ndarray, weights: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """log Σ_j w_j N(z; θ_j, LLᵀ) up to a constant, in row chunks (memory O(chunk × particles))."""
    n, p = z.shape
    logw = np.log(np.maximum(weights, 1e-300))[None]
    step = max(1, _CHUNK_ELEMENTS // max(1, particles.shape[0] * p))
    out = np.empty(n)
    for a in range(0, n, step):
        zz = z[a:a + step]
        diff = np.linalg.solve(chol, (zz[:, None, :] - particles[None]).reshape(-1, p).T).T
        quad = -0.5 * np.sum(diff**2, axis=1).reshape(zz.shape[0], particles.shape[0])
        out[a:a + step] = logsumexp(quad + logw, axis=1)
    return out


def _check_args(
    epsilon: Any, delta: Any, epsilon_abc_schedule: Any, c: Any, max_draws: Any, batch_size: Any,
    accountant: Any,
) -> tuple[float, float, list[float], int, int, int]:
    """Check :func:`private_smc_abc`'s privacy and size arguments (nothing is charged before)."""
    eps, dlt = check_epsilon(epsilon, "epsilon"), check_delta(delta)
    schedule = [check_epsilon_abc(e) for e in epsilon_abc_schedule]
    if not schedule or any(b > a for a, b in zip(schedule, schedule[1:], strict=False)):
        raise InvalidPrivacyParameterError("epsilon_abc_schedule must be a non-empty, non-increasing list.")
    c = check_size(c, "c", 2, MAX_PARTICLES, "c particles per population (a kernel needs c >= 2; the "
                   "proposal density costs O(c) per draw): use fewer particles.")
    max_draws = check_size(max_draws, "max_draws", c, 2**62, "max_draws (simulations per population) "
                           "must be at least c.")
    batch_size = check_size(batch_size, "batch_size", 1, MAX_BATCH, "Simulate in smaller batches.")
    get_accountant(accountant)  # an unknown accountant is refused here, not after the charge
    return eps, dlt, schedule, c, max_draws, batch_size


def _propose(prior: Any, particles: Any, weights: Any, n: int, rng: np.random.Generator) -> tuple[Any, Any]:
    """``n`` proposals (unconstrained) and their proposal log-density: the prior before the first
    population, then the kernel around the last one."""
    if particles is None or weights is None:
        z = prior.from_theta(prior.sample(n, rng))
        return z, prior.log_density(z)
    return kernel_proposal(prior, particles, weights, n, rng)


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def private_smc_abc(
    observed: Any,
    model: Any,
    distance: Distance,
    *,
    epsilon_abc_schedule: list[float],
    c: int,
    epsilon: float,
    delta: float,
    max_draws: int = 10_000,
    batch_size: int = 256,
    accountant: str = "pld",
    seed: Any = 0,
    context: ReleaseContext | None = None,
) -> PrivateSMCResult:
    """Private SMC-ABC: K = len(schedule) populations of c particles, (ε, δ)-DP in total.

    Parameters
    ----------
    observed, distance
        The confidential data (N records, N public) and a :class:`~dpinfer.distances.Distance`
        (its sensitivity Δρ = ``distance.sensitivity(N)``, clipped to [0, Δρ] if dpinfer does not
        prove it).
    model
        A built-in ABCDP model (``prior_sample``, ``simulate``; see :func:`smc_prior`).
    epsilon_abc_schedule
        The public thresholds ε_abc of the populations (non-increasing).
    c
        Particles accepted (released) per population, 2 <= c <= :data:`MAX_PARTICLES`.
    epsilon, delta
        The total guarantee (replace-one), split equally over the populations by ``accountant``.
    max_draws
        Simulations allowed per population (a population that reaches it stops with fewer than
        c); each population's sparse vector answers at most this many queries.
    batch_size
        Draws simulated at once (1 <= batch_size <= 2^20).
    seed
        Public randomness (proposals, simulations). The noise comes from the release context.
    context
        The :class:`~dpinfer.privacy.ReleaseContext`: the whole composition is charged to its
        ledger before the first noise is drawn from its RNG (``None``: unaccounted, with a
        warning, and OS entropy). Its label defaults to ``"private-smc-abc"``. The flat
        ``ledger=``/``dataset=``/``privacy_rng=`` keywords are refused, naming ``context=``.

    Returns
    -------
    PrivateSMCResult
        Last population's particles and importance weights, ``populations`` (ε_abc, b, draws,
        accepted per population) and ``privacy`` (the composed event, ``accountant``).

    Raises
    ------
    InvalidDataError, InvalidPrivacyParameterError
        Before anything is charged: bad privacy parameters or schedule, sizes out of range, a
        sensitivity or noise scale that vanishes, observed data that are not finite, simulations
        whose shape does not match the observed data (checked on population 0's first batch).
    """
    eps, dlt, schedule, c, max_draws, batch_size = _check_args(
        epsilon, delta, epsilon_abc_schedule, c, max_draws, batch_size, accountant
    )
    ctx = ReleaseContext.of(context, label="private-smc-abc")
    prior = smc_prior(model)
    sens = release_sensitivity(distance, count_records(observed), warn=False)  # public: N and declared bounds
    K = len(schedule)
    eps_k = per_population_epsilon(eps, dlt, c, K, accountant)
    pop_event = SparseVectorEvent(c, eps_k, neighbouring=REPLACE_ONE)
    event = compose(*[pop_event] * K)
    check_noise_scale(svt_laplace_scale(c, eps_k, sens.sensitivity), magnitude=max(schedule[0], sens.bound),
                      name="sparse vector noise scale b")
    dist = sens.distance
    prepared = dist.prepare(observed)  # checks the observed data
    rng = np.random.default_rng(seed)
    n0 = min(batch_size, max_draws)
    z0 = prior.from_theta(prior.sample(n0, rng))
    logq0 = prior.log_density(z0)
    rho0 = batch_distances(dist, prepared, model.simulate(prior.to_theta(z0), rng), n0)  # shapes vs Y*
    sens.warn_if_enforced()

    def run(_: Any) -> tuple[list[dict[str, Any]], Any, Any]:
        pops: list[dict[str, Any]] = []
        particles = weights = None
        first: tuple[np.ndarray, np.ndarray, np.ndarray] | None = (z0, logq0, rho0)
        for eps_abc in schedule:
            engine = SparseVector.from_event(pop_event, sens.sensitivity, eps_abc, ctx, max_queries=max_draws)
            acc_z, acc_logq, seen = [], [], 0
            while not engine.done:
                if first is not None:
                    (z, logq, rho), first = first, None
                else:
                    n = min(batch_size, max_draws - seen)
                    z, logq = _propose(prior, particles, weights, n, rng)
                    rho = batch_distances(dist, prepared, model.simulate(prior.to_theta(z), rng), n)
                ans = engine.process(rho)
                hit = np.flatnonzero(ans)
                acc_z.append(z[hit])
                acc_logq.append(logq[hit])
                seen += ans.size
            z_acc = np.concatenate(acc_z)
            pops.append({"epsilon_abc": eps_abc, "b": engine.b, "epsilon_k": eps_k, "n_draws": seen,
                         "n_accepted": int(z_acc.shape[0])})
            if z_acc.shape[0] < 2:
                break  # too few particles to build a kernel: keep the previous population
            logw = prior.log_density(z_acc) - np.concatenate(acc_logq)
            w = np.exp(logw - logw.max())
            particles, weights = z_acc, w / w.sum()
        return pops, particles, weights

    pops, particles, weights = ctx.release(event, run, what="private SMC-ABC release")
    if particles is None:
        particles, weights = np.zeros((0, 1)), np.zeros(0)
        theta = particles
    else:
        theta = prior.to_theta(particles)
    report = PrivacyReport.from_event(
        event, delta=dlt, accountant=accountant, sensitivity=sens.sensitivity, accounted=ctx.accounted,
        mechanism="private-smc-abc-svt", insecure_rng=ctx.insecure,
        details={"populations": K, "c": c, "epsilon_per_population": eps_k, "max_queries": max_draws,
                 "distance": sens.config, "sensitivity_proof": sens.proof,
                 "theorem": "Park et al. 2021, Theorem 1 per population; composition by the accountant"},
    )
    names = tuple(getattr(model, "param_names", tuple(f"theta{i}" for i in range(theta.shape[1]))))
    return PrivateSMCResult(theta, weights, names, privacy=report, populations=pops)


__all__ = [
    "MAX_PARTICLES", "PrivateSMCResult", "SMCPrior", "kernel_proposal", "per_population_epsilon",
    "private_smc_abc", "smc_prior",
]
