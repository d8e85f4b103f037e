"""Exact private-data posterior by tempered SMC whose ABC kernel is the mechanism's own density.

Noisy ABC with the true noise kernel is exact (Wilkinson 2013): when the release mechanism has a
density ``η(s_dp | s)``, weighting a confidential simulation ``s ~ p(s | θ)`` by ``η(s_dp | s)``
instead of by a tolerance indicator targets ``p(θ | s_dp)`` itself — no tolerance, no schedule.
With ``L`` simulations per ``θ``, ``L̂(θ) = (1/L) Σ_l η(s_dp | s_l)`` is unbiased for
``p(s_dp | θ)`` (equation (1) of :mod:`dpinfer.inference.exact.importance`).

This sampler moves a population from the prior to the posterior through the tempered extended
targets (Del Moral, Doucet & Jasra 2006; pseudo-marginal: Andrieu & Roberts 2009)::

    π_β(θ, u) ∝ p(θ) q(u | θ) L̂(θ, u)^β,    0 = β_0 < β_1 < ... < β_T = 1,             (1)

where ``u`` are the inner simulations. At ``β = 1`` the θ-marginal of (1) is ``p(θ | s_dp)``
because ``E_u[L̂] = p(s_dp | θ)``; intermediate targets only guide the population. Each stage:

* **reweight**: ``w_i ∝ w_i L̂(θ_i)^{β_t - β_{t-1}}``, with ``β_t`` found by bisection so that
  the ESS of the new weights is ``target_ess`` times the ESS they would have with the particles
  whose ``L̂ = 0`` dropped (adaptive tempering, Jasra, Stephens, Doucet & Tsagaris 2011);
  ``log p(s_dp)`` accumulates ``log Σ_i w_i L̂(θ_i)^{Δβ}``;
* **resample** (systematic) to equal weights;
* **move**: pseudo-marginal Metropolis-Hastings steps invariant for (1): propose
  ``θ' = θ + c L z`` (``L Lᵀ`` = the population covariance, ``c = 2.38/√dim``), simulate a fresh
  ``L̂(θ')``, accept with probability ``min(1, p(θ') L̂(θ')^β / (p(θ) L̂(θ)^β))``; steps are
  repeated until the particles were moved ``min_moves`` times on average (at most ``max_moves``
  steps).

Compared with :func:`~dpinfer.inference.mechanism_importance_sampling` (the same likelihood estimate,
one importance-sampling stage from a pilot-fitted proposal), the MCMC moves let the population
follow a posterior that no t-distribution fits well, at the price of sequential stages.

Reproducibility: every random draw (prior draws, resampling, proposals, inner simulations) has
its own :func:`~dpinfer.execution.batch_seeds` child of ``seed``.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ...diagnostics.checks import emit
from ...diagnostics.conflict import prior_data_conflict
from ...errors import ImpossibleObservationError, InvalidDataError, WeightDegeneracyWarning
from ...execution import Backend, batch_seeds, get_backend
from ...sizes import check_allocation
from ..weighted import release_facts, weighted_cov
from .importance import check_positive_int, estimate_log_likelihood, floor_covariance
from .tempered_result import TemperedSMCResult


def _ess_of(log_w: np.ndarray) -> float:
    """Kish ESS of unnormalised log weights (0 when all are ``-inf``)."""
    if not np.any(np.isfinite(log_w)):
        return 0.0
    return float(math.exp(2 * logsumexp(log_w) - logsumexp(2 * log_w)))


def stuck_population(theta: np.ndarray, moved: np.ndarray, min_moves: float, n_inner: int,
                     acceptance: float) -> str | None:
    """Why the final population cannot be trusted, or ``None``.

    Pseudo-marginal moves stick when ``L̂`` is very noisy (Andrieu & Roberts 2009): a particle
    that drew a lucky, large ``L̂`` is almost never left, and resampling then copies it, so the
    population collapses onto a few distinct θ and its spread says nothing about the posterior.
    Flagged when fewer than half the particles are distinct, or when the last stage's moves
    moved a particle less than half a time on average (``max_moves`` steps ran out far from
    ``min_moves``). The README's census example, accurate to its exact posterior, ends with 880
    distinct θ of 1000 and 1.6 moves; a chain-binomial SIR with Laplace noise of scale 1 on
    weekly counts ended with 2 distinct θ and 0 moves (``examples/personas/README.md``).
    """
    n = theta.shape[0]
    distinct = int(np.unique(theta, axis=0).shape[0])
    mean_moves = float(np.mean(moved))
    if distinct >= n / 2 and mean_moves >= 0.5 * min(min_moves, 1.0):
        return None
    return (
        f"tempered exact SMC: the final population is stuck ({distinct} distinct θ of {n} particles; "
        f"each moved {mean_moves:.2f} times in the last stage, MH acceptance {acceptance:.3f}): the "
        f"likelihood estimates of n_inner={n_inner} simulations are too noisy for this release, so the "
        "posterior is collapsed and its sd and intervals are too narrow; do not trust it. Raise n_inner "
        "(the mechanism's noise is small next to the simulator's spread), or use method='smc-abc' "
        "(approximate, warns when it did not converge)."
    )


def next_temperature(log_w: np.ndarray, ll: np.ndarray, beta: float, target_ess: float) -> float:
    """The next ``β``: the largest in ``(β, 1]`` whose reweighted ESS is >= ``target_ess`` times
    the ESS of the particles with ``L̂ > 0`` (bisection, 60 halvings)."""
    alive = np.where(np.isfinite(ll), log_w, -np.inf)
    goal = target_ess * _ess_of(alive)
    safe_ll = np.where(np.isfinite(ll), ll, 0.0)

    def ess(b: float) -> float:
        return _ess_of(alive + (b - beta) * safe_ll)

    if ess(1.0) >= goal:
        return 1.0
    lo, hi = beta, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if ess(mid) >= goal:
            lo = mid
        else:
            hi = mid
    return max(lo, beta + 1e-12)


def _systematic(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = weights.size
    cum = np.cumsum(weights)
    cum[-1] = 1.0
    return np.searchsorted(cum, (rng.random() + np.arange(n)) / n)


def tempered_smc(
    model: Any,
    observed: Any,
    n_particles: int = 1000,
    n_inner: int = 50,
    *,
    target_ess: float = 0.5,
    min_moves: float = 2.0,
    max_moves: int = 20,
    max_stages: int = 200,
    backend: Any = "serial",
    n_workers: int | None = None,
    seed: int | np.random.SeedSequence | None = None,
    batch_size: int = 10_000,
) -> TemperedSMCResult:
    """The exact private-data posterior ``p(θ | s_dp)`` by adaptively tempered SMC (module docstring).

    Parameters
    ----------
    model
        A :class:`~dpinfer.models.contract.PrivateDataModel` whose mechanism has a density
        (``mechanism.has_density``).
    observed
        The observed private statistic ``s_dp``.
    n_particles, n_inner
        Population size and confidential simulations per likelihood estimate (``L``). Larger ``L``
        makes ``L̂`` less noisy and the pseudo-marginal moves less sticky.
    target_ess
        Fraction of the ESS kept by each tempering step (equation (1) reweighting).
    min_moves, max_moves
        MH steps per stage: until the particles moved ``min_moves`` times on average, at most
        ``max_moves`` steps.
    max_stages
        Refuse (with an error) to use more tempering stages than this.
    backend, n_workers, batch_size
        Where the inner simulations run (:func:`dpinfer.execution.get_backend`) and how many
        simulations form one batch.
    seed
        Fixes every draw (with ``batch_size``).

    Returns
    -------
    TemperedSMCResult
    """
    obs, n, n_inner, max_moves, batch_size = _check_call(
        model, observed, n_particles, n_inner, max_moves, batch_size, target_ess, min_moves
    )
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    sim_root = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (9,))
    prior = model.prior
    dim = prior.dim
    # the observed release against the prior predictive, before any likelihood is estimated
    # (dpinfer.diagnostics.conflict; seed spawn_key (97,)): kept in settings["findings"]
    conflict, _ = prior_data_conflict(
        model, obs, seed=np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (97,))
    )
    emit(conflict, stacklevel=3)
    own_backend = not isinstance(backend, Backend)
    be = get_backend(backend, n_workers)
    privacy, _, names = release_facts(model)
    t0 = time.perf_counter()
    loglik = _LogLikelihood(model, obs, n_inner, batch_size, sim_root, be)
    try:
        theta, ll, ref_var = _initial_population(prior, n, root, loglik, obs)
        log_w = np.full(n, -math.log(n))
        beta, log_z, stages = 0.0, 0.0, []
        scale = 2.38 / math.sqrt(dim)
        t = 0
        while beta < 1.0:
            t += 1
            if t > max_stages:
                raise InvalidDataError(
                    f"tempering needed more than max_stages={max_stages} stages: the likelihood "
                    "estimates are too noisy; raise n_inner."
                )
            start = time.perf_counter()
            new_beta = next_temperature(log_w, ll, beta, target_ess)
            log_w, log_z_step, w, stage_ess = _reweight(log_w, ll, new_beta - beta)
            log_z += log_z_step
            # eigenvalues floored relative to the population's and the prior's scale: a population
            # collapsed onto a few points still gets a positive definite random-walk covariance
            cov = floor_covariance(weighted_cov(theta, w), ref_var)
            chol = np.linalg.cholesky(cov if cov is not None else np.diag(ref_var))
            idx = _systematic(w, np.random.default_rng(batch_seeds(root, (2, t), 1)[0]))
            theta, ll = theta[idx], ll[idx]
            log_w = np.full(n, -math.log(n))
            beta = new_beta
            moved, steps, accepted = _moves(
                theta, ll, prior, loglik, (scale, chol), beta, (root, t), (max_moves, min_moves)
            )
            rate = accepted / max(steps * n, 1)
            stages.append({"beta": float(beta), "ess": stage_ess, "acceptance_rate": rate, "moves": steps,
                           "wall_time": time.perf_counter() - start})
    finally:
        if own_backend:
            be.close()
    degenerate = stuck_population(theta, moved, min_moves, n_inner, stages[-1]["acceptance_rate"])
    if degenerate:
        warnings.warn(degenerate, WeightDegeneracyWarning, stacklevel=2)
    settings = {
        "degenerate": degenerate, "n_particles": n, "n_inner": n_inner, "target_ess": float(target_ess),
        "min_moves": float(min_moves), "max_moves": max_moves, "backend": be.name,
        "seed_entropy": str(root.entropy), "batch_size": batch_size, "wall_time": time.perf_counter() - t0,
        "findings": [f.to_dict() for f in conflict],
    }
    return TemperedSMCResult(
        theta, np.exp(log_w), ll, names, obs, log_z, loglik.n_sims, settings, stages, privacy
    )


def _check_call(
    model: Any, observed: Any, n_particles: Any, n_inner: Any, max_moves: Any, batch_size: Any,
    target_ess: float, min_moves: float,
) -> tuple[np.ndarray, int, int, int, int]:
    """Check :func:`tempered_smc`'s arguments: the observation and the checked sizes."""
    mech = getattr(model, "mechanism", None)
    if mech is None or not getattr(mech, "has_density", False):
        raise InvalidDataError(
            "tempered_smc needs a release mechanism with a tractable density (mechanism.has_density); "
            f"{type(mech).__name__} has none. Use smc_abc instead."
        )
    obs = model.check_observed(observed)
    n = check_positive_int("n_particles", n_particles, 10)
    n_inner = check_positive_int("n_inner", n_inner)
    max_moves = check_positive_int("max_moves", max_moves)
    batch_size = check_positive_int("batch_size", batch_size)
    if not (0 < target_ess < 1 and min_moves >= 0):
        raise InvalidDataError("need 0 < target_ess < 1 and min_moves >= 0.")
    check_allocation(f"tempered SMC with n_particles={n}", n, model.prior.dim + 3, copies=4)
    check_allocation(f"tempered SMC with n_inner={n_inner}", n_inner, obs.size + model.prior.dim, copies=2)
    return obs, n, n_inner, max_moves, batch_size


def _initial_population(
    prior: Any, n: int, root: np.random.SeedSequence, loglik: _LogLikelihood, obs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` prior draws, their likelihood estimates, and the prior's per-coordinate variance
    (from the draws; 1 where it is not positive and finite)."""
    theta = prior.sample(n, np.random.default_rng(batch_seeds(root, (0,), 1)[0]))
    ll = loglik(theta)
    ref_var = np.var(theta, axis=0)  # the prior's per-coordinate variance (from its draws)
    ref_var = np.where(np.isfinite(ref_var) & (ref_var > 0), ref_var, 1.0)
    if not np.any(np.isfinite(ll)):
        raise ImpossibleObservationError(
            f"every likelihood estimate of {n} prior draws is 0 (no confidential simulation has a "
            f"positive mechanism density at the observed statistic {obs.tolist()}): is the observed "
            "statistic possible under the model? Otherwise raise n_inner or n_particles."
        )
    return theta, ll, ref_var


class _LogLikelihood:
    """The likelihood estimates of one run, each call with its own simulation seeds; counts the
    confidential simulations run."""

    def __init__(
        self, model: Any, obs: np.ndarray, n_inner: int, batch_size: int, sim_root: np.random.SeedSequence,
        be: Backend,
    ) -> None:
        self.model, self.obs, self.n_inner, self.batch_size, self.sim_root, self.be = (
            model, obs, n_inner, batch_size, sim_root, be
        )
        self.n_sims = 0
        self.calls = 0

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.n_sims += int(self.model.prior.in_support(theta).sum()) * self.n_inner
        return estimate_log_likelihood(
            self.model, self.obs, theta, self.n_inner, self.batch_size, self.sim_root, self.calls, self.be
        )


def _reweight(log_w: np.ndarray, ll: np.ndarray, dbeta: float) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Raise the temperature by ``dbeta``: the new normalised log-weights, the stage's log
    evidence increment, the weights and their ESS."""
    finite = np.isfinite(ll)
    incr = np.where(finite, dbeta * np.where(finite, ll, 0.0), -np.inf)
    log_z_step = float(logsumexp(log_w + incr))
    log_w = log_w + incr
    log_w -= logsumexp(log_w)
    w = np.exp(log_w)
    return log_w, log_z_step, w, float(1.0 / np.sum(w**2))


def _moves(
    theta: np.ndarray, ll: np.ndarray, prior: Any, loglik: _LogLikelihood, step: tuple[float, np.ndarray],
    beta: float,
    stage: tuple[np.random.SeedSequence, int], limits: tuple[int, float],
) -> tuple[np.ndarray, int, int]:
    """Random-walk Metropolis moves at temperature ``beta`` (in place on ``theta`` and ``ll``)
    until each particle moved ``min_moves`` times on average or ``max_moves`` steps ran.
    ``step`` is the scale and the Cholesky factor of the proposal covariance. Returns the moves per
    particle, the steps and the accepted moves."""
    (root, t), (max_moves, min_moves), (scale, chol) = stage, limits, step
    n, dim = theta.shape
    moved = np.zeros(n)
    steps = accepted = 0
    lp = np.asarray(prior.log_prob(theta), dtype=np.float64)
    while steps < max_moves and moved.mean() < min_moves:
        rng = np.random.default_rng(batch_seeds(root, (3, t, steps), 1)[0])
        prop = theta + scale * rng.standard_normal((n, dim)) @ chol.T
        lp_prop = np.asarray(prior.log_prob(prop), dtype=np.float64)
        ll_prop = loglik(prop)
        with np.errstate(invalid="ignore"):
            log_alpha = lp_prop - lp + beta * (ll_prop - ll)
        ok = np.isfinite(lp_prop) & np.isfinite(ll_prop) & (np.log(rng.random(n)) < log_alpha)
        theta[ok], ll[ok], lp[ok] = prop[ok], ll_prop[ok], lp_prop[ok]
        moved += ok
        accepted += int(ok.sum())
        steps += 1
    return moved, steps, accepted


__all__ = ["next_temperature", "stuck_population", "tempered_smc"]
