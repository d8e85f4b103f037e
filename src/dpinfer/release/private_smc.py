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

The prior adapters (:func:`smc_prior`) give the free coordinates a Gaussian kernel can move
(the first K-1 weights of the Dirichlet mixture), the log prior density up to a constant, and
the support.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import logsumexp

from ..diagnostics.flip import svt_noise_scale
from ..distances.base import Distance
from ..errors import InvalidPrivacyParameterError
from ..inference.weighted import WeightedSample
from ..privacy.accountants import get_accountant
from ..privacy.events import REPLACE_ONE, SparseVectorEvent, compose
from ..privacy.ledger import charge_or_warn
from ..privacy.mechanisms.svt import SparseVector
from ..privacy.report import PrivacyReport
from ..privacy.rng import PrivacyRNG, as_privacy_rng
from ..privacy.validation import check_delta, check_epsilon
from .abcdp import check_epsilon_abc

if TYPE_CHECKING:
    from ..privacy.ledger import Ledger


@dataclass
class SMCPrior:
    """A prior in free coordinates: ``to_theta(z)``, ``from_theta(θ)``, ``log_density(z)`` (-inf
    outside the support, up to a constant), ``sample(n, rng)`` (θ)."""

    sample: Any
    to_theta: Any
    from_theta: Any
    log_density: Any


def smc_prior(model: Any) -> SMCPrior:
    """The :class:`SMCPrior` of a built-in ABCDP model (mixture of uniforms, COVID, tuberculosis)."""
    name = type(model).__name__
    ident = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    if name == "MixtureOfUniforms":
        def to_theta(z: np.ndarray) -> np.ndarray:
            return np.column_stack([z, 1.0 - z.sum(1)])

        def log_mix(z: np.ndarray) -> np.ndarray:  # Dirichlet(1): flat on the simplex
            th = to_theta(z)
            return np.where(np.all(th >= 0, axis=1), 0.0, -np.inf)

        return SMCPrior(model.prior_sample, to_theta, lambda th: th[:, :-1], log_mix)
    if name == "CovidPolynomial":
        return SMCPrior(model.prior_sample, ident, ident, lambda z: -0.5 * np.sum(z**2, axis=1))
    if name == "Tuberculosis":
        def log_tb(z: np.ndarray) -> np.ndarray:
            r1, t1, r2, burden = z.T
            s = (1.0 - r1 * (1.0 - model.p_compliance)) / model.p_compliance
            r1_hi = 1.0 / (1.0 - model.p_compliance)
            ok = (r1 > 1.01) & (r1 < r1_hi) & (t1 > 0.01) & (t1 < model.t1_bound)
            ok &= (s > 0) & (r2 > 0.01 * s) & (r2 < s)
            out = np.full(z.shape[0], -np.inf)
            if np.any(ok):
                good = np.flatnonzero(ok)
                adm = model._admissible(z[good])
                good = good[adm]
                out[good] = -np.log(0.99 * s[good]) - (burden[good] - 200.0) ** 2 / 60.0
            return out

        return SMCPrior(model.prior_sample, ident, ident, log_tb)
    raise InvalidPrivacyParameterError(f"no SMC prior adapter for model {name}.")


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
    diff = np.linalg.solve(chol, (z[:, None, :] - particles[None]).reshape(-1, z.shape[1]).T).T
    quad = -0.5 * np.sum(diff**2, axis=1).reshape(z.shape[0], particles.shape[0])
    return logsumexp(quad + np.log(np.maximum(weights, 1e-300))[None], axis=1)


def private_smc_abc(
    observed: Any,
    model: Any,
    distance: Distance,
    epsilon_abc_schedule: list[float],
    c: int,
    epsilon: float,
    delta: float,
    *,
    max_draws: int = 10_000,
    batch_size: int = 256,
    accountant: str = "pld",
    seed: Any = 0,
    privacy_rng: PrivacyRNG | None = None,
    ledger: Ledger | None = None,
    dataset: str | None = None,
    label: str = "private-smc-abc",
) -> PrivateSMCResult:
    """Private SMC-ABC: K = len(schedule) populations of c particles, (ε, δ)-DP in total.

    Parameters
    ----------
    observed, distance
        The confidential data and a :class:`~dpinfer.distances.Distance` (its sensitivity Δρ).
    model
        A built-in ABCDP model (``prior_sample``, ``simulate``; see :func:`smc_prior`).
    epsilon_abc_schedule
        The public thresholds ε_abc of the populations (non-increasing).
    c
        Particles accepted (released) per population.
    epsilon, delta
        The total guarantee (replace-one), split equally over the populations by ``accountant``.
    max_draws
        Simulations allowed per population (a population that reaches it stops with fewer than c).
    seed
        Public randomness (proposals, simulations). The noise comes from ``privacy_rng``.

    Returns
    -------
    PrivateSMCResult
        Last population's particles and importance weights, ``populations`` (ε_abc, b, draws,
        accepted per population) and ``privacy`` (the composed event, ``accountant``).
    """
    eps, dlt = check_epsilon(epsilon, "epsilon"), check_delta(delta)
    schedule = [check_epsilon_abc(e) for e in epsilon_abc_schedule]
    if not schedule or any(b > a for a, b in zip(schedule, schedule[1:], strict=False)):
        raise InvalidPrivacyParameterError("epsilon_abc_schedule must be a non-empty, non-increasing list.")
    if isinstance(c, bool) or int(c) != c or int(c) < 2:
        raise InvalidPrivacyParameterError(f"c must be an integer >= 2 (a kernel needs a spread), got {c!r}.")
    if int(max_draws) < int(c):
        raise InvalidPrivacyParameterError(f"max_draws={max_draws} is below c={c}.")
    if ledger is not None and not dataset:
        raise InvalidPrivacyParameterError("charging a ledger needs the dataset name.")
    prior = smc_prior(model)
    gen = as_privacy_rng(privacy_rng)
    prepared = distance.prepare(observed)
    delta_rho = float(distance.sensitivity(prepared))
    K, c = len(schedule), int(c)
    eps_k = per_population_epsilon(eps, dlt, c, K, accountant)
    event = compose(*[SparseVectorEvent(c, eps_k, neighbouring=REPLACE_ONE)] * K)
    rng = np.random.default_rng(seed)
    pops: list[dict[str, Any]] = []
    particles = weights = None
    with charge_or_warn(ledger, dataset, event, label=label, insecure=gen.deterministic,
                        what="private SMC-ABC release"):
        for eps_abc in schedule:
            b = svt_noise_scale(c, eps_k, delta_rho)
            engine = SparseVector(c, b, eps_abc, False, gen)
            acc_z, acc_logq, seen = [], [], 0
            while not engine.done and seen < max_draws:
                n = min(batch_size, int(max_draws) - seen)
                if particles is None:
                    z = prior.from_theta(prior.sample(n, rng))
                    logq = prior.log_density(z)
                else:
                    z, logq = kernel_proposal(prior, particles, weights, n, rng)
                ans = engine.process(distance.batch(prepared, model.simulate(prior.to_theta(z), rng)))
                hit = np.flatnonzero(ans)
                acc_z.append(z[hit])
                acc_logq.append(logq[hit])
                seen += ans.size
            z_acc = np.concatenate(acc_z)
            pops.append({"epsilon_abc": eps_abc, "b": b, "epsilon_k": eps_k, "n_draws": seen,
                         "n_accepted": int(z_acc.shape[0])})
            if z_acc.shape[0] < 2:
                break  # too few particles to build a kernel: keep the previous population
            logw = prior.log_density(z_acc) - np.concatenate(acc_logq)
            w = np.exp(logw - logw.max())
            particles, weights = z_acc, w / w.sum()
    if particles is None:
        particles, weights = np.zeros((0, 1)), np.zeros(0)
        theta = particles
    else:
        theta = prior.to_theta(particles)
    report = PrivacyReport.from_event(
        event, delta=dlt, accountant=accountant, sensitivity=delta_rho, accounted=ledger is not None,
        mechanism="private-smc-abc-svt", insecure_rng=gen.deterministic,
        details={"populations": K, "c": c, "epsilon_per_population": eps_k,
                 "theorem": "Park et al. 2021, Theorem 1 per population; composition by the accountant"},
    )
    names = tuple(getattr(model, "param_names", tuple(f"theta{i}" for i in range(theta.shape[1]))))
    return PrivateSMCResult(theta, weights, names, privacy=report, populations=pops)


__all__ = [
    "PrivateSMCResult", "SMCPrior", "kernel_proposal", "per_population_epsilon", "private_smc_abc",
    "smc_prior",
]
