"""Exact private-data posterior by importance sampling with the mechanism's own density.

When the release mechanism has a tractable density ``η(s_dp | s)`` (Laplace, Gaussian, the SIR
binomial release of Xiong et al. 2025, Prop. 4), the likelihood of the privatised statistic is an
expectation over the confidential simulator::

    p(s_dp | θ) = E_{s ~ p(s | θ)} [ η(s_dp | s) ],                                      (1)

so ``L̂(θ) = (1/L) Σ_l η(s_dp | s_l)`` with ``s_1..s_L ~ p(s | θ)`` i.i.d. is unbiased for it.
Importance sampling with *random* weights::

    θ_i ~ q,   w_i = p(θ_i) L̂(θ_i) / q(θ_i),   i = 1..n                                  (2)

is consistent for the exact posterior ``p(θ | s_dp)`` for every ``L >= 1``, because
``E[w_i | θ_i] = p(θ_i) p(s_dp | θ_i) / q(θ_i)`` (the pseudo-marginal argument of Andrieu &
Roberts 2009 applied to importance sampling). ``L`` only trades simulations for weight variance.
Equivalently, this is ABC whose kernel is the mechanism itself, which targets the exact posterior
rather than a tolerance-widened one (Wilkinson 2013; Gong 2022). It is the reference the neural
methods are judged against where no closed form exists.

Proposal (``proposal="auto"``): a pilot from the prior with ``pilot_inner`` simulations per θ
locates the posterior, ``adapt`` further pilot stages refine it, and the main stage then draws
from the defensive mixture (Hesterberg 1995)::

    q = (1 - α) · t_ν(m, λ² C) + α · p(θ)                                                 (3)

with ``m``, ``C`` the last pilot stage's weighted mean and covariance, ``λ = inflation``, ``ν = df`` and
``α = defensive``. The prior component keeps the weights bounded by ``L̂/α``, so the estimator
has finite variance whatever the pilot found. Only the main stage carries the result.

Robustness: ``C`` is symmetrised and its eigenvalues are floored at ``1e-8`` times the largest
(and at ``1e-12`` times the prior's variance), so the t always has a positive definite shape. When
the pilot's weights collapse (Kish ESS below ``dim + 1``: too few particles for a covariance) or
``C`` is not finite, the proposal falls back to a diagonal t centred at the pilot's weighted mean
with the prior's per-coordinate variance shrunk by ``N^(-2/dim)`` (``N`` pilot draws: when about
one of ``N`` prior draws carries the weight, the posterior occupies about ``1/N`` of the prior's
volume), and a :class:`~dpinfer.errors.WeightDegeneracyWarning` names the cause and the remedy.
The defensive prior component keeps the estimator valid whatever the fallback.

Prior–data conflict: before any likelihood is estimated, the observed release is compared with
releases simulated from the prior (:func:`~dpinfer.diagnostics.conflict.prior_data_conflict`,
seed ``spawn_key (97,)``); a release far in their tail is a
:class:`~dpinfer.errors.PriorDataConflictWarning` naming the prior's arguments (ESS and k̂ cannot
see it: a flat likelihood over the prior gives perfect weights). The finding is kept in
``settings["findings"]``.

Diagnostics: Kish's effective sample size and the Pareto ``k̂`` of the largest weights (Vehtari,
Simpson, Gelman, Yao & Gabry 2024): ``k̂ > 0.7`` means the weights have too heavy a tail for the
estimate to be trusted, and a warning says so.

Reproducibility: every stage's θ-draws and each of its simulation batches have their own
addressable :func:`~dpinfer.execution.batch_seeds` child of ``seed``, so a seed and
``batch_size`` fix the result on every backend and worker count.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ...deferred import DeferredModule
from ...diagnostics.checks import emit
from ...diagnostics.conflict import prior_data_conflict
from ...errors import InvalidDataError, WeightDegeneracyWarning
from ...execution import Backend, batch_seeds, get_backend
from ...models.contract import confidential_summaries
from ...results.weighted import ess as kish_ess
from ...results.weighted import release_facts, weighted_cov
from ...sizes import check_allocation
from .importance_result import ImportanceResult as _Result
from .importance_result import log_mean_exp

stats = DeferredModule("scipy.stats")  # imported at first use: ~1 s of start-up (dpinfer.deferred)


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise InvalidDataError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


# ----------------------------------------------------------------------------------------------
# proposals
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DefensiveProposal:
    """``q = (1 - α)·t_ν(mean, scale) + α·prior`` (equation (3)); ``scale`` is the t's shape matrix."""

    mean: np.ndarray
    scale: np.ndarray
    df: float
    defensive: float

    def _t(self) -> Any:
        return stats.multivariate_t(loc=self.mean, shape=self.scale, df=self.df)

    def sample(self, n: int, prior: Any, rng: np.random.Generator) -> np.ndarray:
        from_prior = rng.random(n) < self.defensive
        theta = np.asarray(self._t().rvs(size=n, random_state=rng), dtype=np.float64).reshape(n, -1)
        k = int(from_prior.sum())
        if k:
            theta[from_prior] = prior.sample(k, rng)
        return theta

    def log_prob(self, theta: np.ndarray, prior: Any) -> np.ndarray:
        lt = np.asarray(self._t().logpdf(theta), dtype=np.float64).reshape(theta.shape[0])
        lp = np.asarray(prior.log_prob(theta), dtype=np.float64)
        parts = [lt + math.log1p(-self.defensive)]
        if self.defensive > 0:
            parts.append(lp + math.log(self.defensive))
        return logsumexp(np.stack(parts), axis=0)


def floor_covariance(cov: np.ndarray, ref_var: np.ndarray, rel: float = 1e-8) -> np.ndarray | None:
    """``cov`` symmetrised, with eigenvalues floored at ``rel·max(eig)`` and ``1e-12·mean(ref_var)``.

    Returns None when ``cov`` is not finite or has no positive eigenvalue (nothing to floor from).
    ``ref_var`` is a per-coordinate reference variance (the prior's), which sets the absolute floor.
    """
    cov = np.atleast_2d(np.asarray(cov, dtype=np.float64))
    if not np.all(np.isfinite(cov)):
        return None
    cov = 0.5 * (cov + cov.T)
    try:
        vals, vecs = np.linalg.eigh(cov)
    except np.linalg.LinAlgError:
        return None
    top = float(vals.max())
    if not (top > 0 and np.isfinite(top)):
        return None
    ref = float(np.mean(ref_var)) if np.all(np.isfinite(ref_var)) else top
    vals = np.maximum(vals, max(rel * top, 1e-12 * ref))
    out = (vecs * vals) @ vecs.T
    return np.asarray(0.5 * (out + out.T))


def fit_defensive_proposal(
    theta: np.ndarray,
    w: np.ndarray,
    ref_var: np.ndarray,
    n_pilot: int,
    inflation: float,
    df: float,
    defensive: float,
) -> tuple[DefensiveProposal, str | None]:
    """The mixture (3) fitted to a weighted pilot, and the reason for a fallback (None if none).

    ``ref_var`` is the prior's per-coordinate variance (from the prior pilot draws): it floors the
    eigenvalues (:func:`floor_covariance`) and shapes the diagonal fallback (module docstring).
    """
    dim = theta.shape[1]
    w = w / w.sum()
    mean = w @ theta
    pilot_ess = kish_ess(w)
    t_factor = (df - 2.0) / df if df > 2 else 1.0  # a t with shape S has covariance df/(df-2)·S
    reason: str | None = None
    cov = None
    if pilot_ess < dim + 1:
        reason = (
            f"the pilot's importance weights collapsed onto about {pilot_ess:.1f} of {n_pilot} draws "
            f"(ESS < dim + 1 = {dim + 1}), too few to estimate a {dim}x{dim} covariance"
        )
    else:
        cov = floor_covariance(weighted_cov(theta, w), ref_var)
        if cov is None:
            reason = "the pilot's weighted covariance is not finite or not positive"
    if cov is not None:
        shape = inflation**2 * cov * t_factor
        try:  # the floored shape is positive definite; scipy's own check must agree
            stats.multivariate_t(loc=mean, shape=shape, df=df)
            return DefensiveProposal(mean, shape, float(df), float(defensive)), None
        except (np.linalg.LinAlgError, ValueError) as exc:
            reason = f"scipy refused the pilot covariance as a t shape ({exc})"
    ref = np.where(np.isfinite(ref_var) & (ref_var > 0), ref_var, 1.0)
    diag = ref * float(n_pilot) ** (-2.0 / dim)
    if not np.all(np.isfinite(mean)):
        mean = theta[int(np.argmax(w))]
    shape = np.diag(inflation**2 * diag * t_factor)
    return DefensiveProposal(np.asarray(mean, dtype=np.float64), shape, float(df), float(defensive)), reason


# ----------------------------------------------------------------------------------------------
# simulation batches
# ----------------------------------------------------------------------------------------------


@dataclass
class _LikelihoodTask:
    model: Any
    observed: np.ndarray
    theta: np.ndarray
    n_inner: int
    seed: np.random.SeedSequence


def _log_likelihood_batch(task: _LikelihoodTask) -> np.ndarray:
    """``log L̂(θ)`` of equation (1) for every row of ``task.theta``."""
    rng = np.random.default_rng(task.seed)
    m, L = task.theta.shape[0], task.n_inner
    s = confidential_summaries(task.model, np.repeat(task.theta, L, axis=0), rng)
    log_eta = np.asarray(task.model.mechanism.log_density(task.observed[None, :], s), dtype=np.float64)
    return log_mean_exp(log_eta.reshape(m, L), axis=1)


def estimate_log_likelihood(
    model: Any,
    obs: np.ndarray,
    theta: np.ndarray,
    n_inner: int,
    batch_size: int,
    root: np.random.SeedSequence,
    stage: int,
    backend: Backend,
    on_batch: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """``log L̂`` for every θ (``-inf`` outside the prior support, where nothing is simulated).

    ``on_batch(done, total)`` (simulations) is called after each group of batches; with it the
    batches go to the backend ``max(1, n_workers)`` at a time (the same seeds, the same result).
    """
    out = np.full(theta.shape[0], -np.inf)
    inside = np.nonzero(model.prior.in_support(theta))[0]
    per_batch = max(1, batch_size // n_inner)
    chunks = [inside[i : i + per_batch] for i in range(0, inside.size, per_batch)]
    seeds = batch_seeds(root, (1, stage), len(chunks))
    tasks = [_LikelihoodTask(model, obs, theta[c], n_inner, sd) for c, sd in zip(chunks, seeds, strict=True)]
    group = len(tasks) if on_batch is None else max(1, int(backend.n_workers or 1))
    done, total = 0, int(inside.size) * n_inner
    for g in range(0, len(tasks), max(group, 1)):
        part = slice(g, g + group)
        for c, ll in zip(chunks[part], backend.map(_log_likelihood_batch, tasks[part]), strict=True):
            out[c] = ll
            done += c.size * n_inner
        if on_batch is not None:
            on_batch(done, total)
    return out


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProposalOptions:
    """How the ``"auto"`` proposal is tuned (the algorithm's settings beyond the sample sizes).

    Parameters
    ----------
    adapt
        Adaptive stages after the pilot from the prior, each refitting the mixture (3) to the
        previous stage (default 1).
    inflation, df, defensive
        ``λ``, ``ν`` and ``α`` of equation (3) (defaults 1.5, 5 and 0.1).
    """

    adapt: int = 1
    inflation: float = 1.5
    df: float = 5.0
    defensive: float = 0.1


#: The keywords that moved into :class:`ProposalOptions`.
_MOVED_TO_PROPOSAL_OPTIONS = ("adapt", "inflation", "df", "defensive")


def _refuse_moved(removed: dict[str, Any]) -> None:
    """A clear error for the spellings that moved into :class:`ProposalOptions`."""
    if not removed:
        return
    moved = [k for k in removed if k in _MOVED_TO_PROPOSAL_OPTIONS]
    if moved:
        spelled = ", ".join(f"{k}={removed[k]!r}" for k in moved)
        raise TypeError(
            f"mechanism_importance_sampling({', '.join(f'{k}=...' for k in moved)}) moved into an "
            f"option object: pass proposal_options=ProposalOptions({spelled}) "
            "(from dpinfer.inference.exact.importance import ProposalOptions)."
        )
    raise TypeError(
        f"mechanism_importance_sampling() got unexpected keyword argument(s) {sorted(removed)}."
    )


def _check_proposal(
    proposal: Any, opts: ProposalOptions, pilot_theta: Any, pilot_inner: Any
) -> tuple[int, int, int]:
    """Check the proposal settings; ``(pilot_theta, pilot_inner, adapt)`` (checked under ``"auto"``)."""
    inflation, df, defensive = opts.inflation, opts.df, opts.defensive
    if not (inflation > 0 and df > 0 and 0 <= defensive < 1):
        raise InvalidDataError(
            f"need inflation > 0, df > 0 and 0 <= defensive < 1, got {inflation!r}, {df!r}, {defensive!r}."
        )
    if not (proposal in ("auto", "prior") or isinstance(proposal, DefensiveProposal)):
        raise InvalidDataError(f"proposal must be 'auto', 'prior' or a DefensiveProposal, got {proposal!r}.")
    adapt = opts.adapt
    if proposal == "auto":
        pilot_theta = check_positive_int("pilot_theta", pilot_theta, 10)
        pilot_inner = check_positive_int("pilot_inner", pilot_inner)
        adapt = check_positive_int("adapt", adapt, 0)
    if defensive == 0 and isinstance(proposal, str) and proposal == "auto":
        warnings.warn(
            "defensive=0: the importance weights are unbounded if the pilot misses posterior mass.",
            stacklevel=3,
        )
    return pilot_theta, pilot_inner, adapt


@dataclass
class _Stages:
    """What every importance stage shares: the model, the observation, the seeds, the backend."""

    model: Any
    obs: np.ndarray
    root: np.random.SeedSequence
    batch_size: int
    backend: Backend
    callback: Callable[[str, int, int], None] | None
    n_sims: int = 0

    def run(
        self,
        prop: DefensiveProposal | None,
        n: int,
        inner: int,
        draw_key: tuple[int, ...],
        sim_stage: int,
        label: str,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw ``n`` θ from ``prop`` (the prior if None), estimate (1), weight by (2)."""
        prior, callback = self.model.prior, self.callback
        rng = np.random.default_rng(batch_seeds(self.root, draw_key, 1)[0])
        if prop is None:
            theta = prior.sample(n, rng)
            log_q = np.asarray(prior.log_prob(theta), dtype=np.float64)
        else:
            theta = prop.sample(n, prior, rng)
            log_q = prop.log_prob(theta, prior)
        report = None if callback is None else (lambda done, total: callback(label, done, total))
        ll = estimate_log_likelihood(
            self.model, self.obs, theta, inner, self.batch_size, self.root, sim_stage, self.backend, report
        )
        self.n_sims += int(prior.in_support(theta).sum()) * inner
        log_prior = np.asarray(prior.log_prob(theta), dtype=np.float64)
        with np.errstate(invalid="ignore"):
            log_w = np.where(np.isfinite(log_prior) & np.isfinite(ll), log_prior + ll - log_q, -np.inf)
        if not np.any(np.isfinite(log_w)):
            raise InvalidDataError(
                "every importance weight is 0: no simulation reached the observed statistic (every "
                "mechanism density was 0); check that the observed release matches the model, or "
                "raise n_inner / pilot_inner."
            )
        return theta, ll, log_w


def _pilot_stages(
    stages: _Stages, opts: ProposalOptions, pilot_theta: int, pilot_inner: int, adapt: int,
    diagnostics: dict[str, Any],
) -> DefensiveProposal | None:
    """The ``"auto"`` pilots: k = 0 draws from the prior; k = 1..adapt from the mixture (3)
    refitted to stage k - 1. Returns the proposal of the main stage."""
    prop: DefensiveProposal | None = None
    ref_var = np.ones(int(stages.model.prior.dim))
    for k in range(adapt + 1):
        theta_k, _, lw_k = stages.run(prop, pilot_theta, pilot_inner, (0, k), 2 + k, f"pilot {k}")
        if k == 0:  # the prior's per-coordinate variance, from the prior pilot draws
            ref_var = np.var(theta_k, axis=0)
        w_k = np.exp(lw_k - lw_k.max())
        w_k /= w_k.sum()
        diagnostics.setdefault("pilot_ess", []).append(kish_ess(w_k))
        # scaled so that the t's covariance is λ²·C (eigenvalues floored, see docstring)
        prop, reason = fit_defensive_proposal(
            theta_k, w_k, ref_var, pilot_theta, opts.inflation, opts.df, opts.defensive
        )
        if reason is not None:
            diagnostics.setdefault("proposal_fallback", []).append(f"stage {k}: {reason}")
            last = k == adapt
            warnings.warn(
                f"importance sampling: {reason} at pilot stage {k}; the proposal falls back "
                "to a diagonal t around the pilot's weighted mean with the prior's variance "
                f"shrunk by pilot_theta^(-2/dim){' (the next stage refits it)' if not last else ''}. "
                "The posterior is much narrower than the prior: raise pilot_theta and adapt, "
                "or use tempered_smc (method='tempered'), which follows a narrow posterior "
                "from the prior by tempering.",
                WeightDegeneracyWarning,
                stacklevel=3,
            )
    return prop


def mechanism_importance_sampling(
    model: Any,
    observed: Any,
    n_theta: int = 20_000,
    n_inner: int = 100,
    *,
    proposal: Any = "auto",
    pilot_theta: int = 10_000,
    pilot_inner: int = 20,
    proposal_options: ProposalOptions | None = None,
    backend: Any = "serial",
    n_workers: int | None = None,
    seed: int | np.random.SeedSequence | None = None,
    batch_size: int = 10_000,
    callback: Callable[[str, int, int], None] | None = None,
    **removed: Any,
) -> _Result:
    """The exact private-data posterior ``p(θ | s_dp)`` by importance sampling (equations (1)-(3)).

    Parameters
    ----------
    model
        A :class:`~dpinfer.models.contract.PrivateDataModel` whose mechanism has a density
        (``mechanism.has_density``).
    observed
        The observed private statistic ``s_dp``.
    n_theta, n_inner
        θ-draws of the main stage and confidential simulations per draw (``L``).
    proposal
        ``"auto"`` (pilot from the prior, then the defensive mixture (3)), ``"prior"`` (plain
        prior draws; fine when the posterior is not much narrower than the prior) or a
        :class:`DefensiveProposal`.
    pilot_theta, pilot_inner
        Size of each ``"auto"`` pilot stage.
    proposal_options
        :class:`ProposalOptions`: the adaptive stages after the pilot (``adapt``) and ``λ``,
        ``ν``, ``α`` of equation (3). The keywords ``adapt``, ``inflation``, ``df`` and
        ``defensive`` moved there and are refused here with a message naming the new spelling.
    backend, n_workers
        Execution backend (see :func:`dpinfer.execution.get_backend`).
    seed
        Fixes θ-draws and simulations (with ``batch_size``).
    batch_size
        Confidential simulations per parallel batch.
    callback
        ``callback(stage, done, total)`` after each group of simulation batches (a batch is
        ``batch_size`` simulations, a group one batch per worker): ``stage`` is ``"pilot 0"``,
        ``"pilot 1"``, ... or ``"main"``, ``done`` of ``total`` its simulations so far. For progress
        reports; it does not change the result.

    Returns
    -------
    ImportanceResult
        The main stage's weighted draws (:mod:`dpinfer.inference.exact.importance_result`), with the privacy
        report of the release analysed.
    """
    _refuse_moved(removed)
    opts = proposal_options if proposal_options is not None else ProposalOptions()
    if not isinstance(opts, ProposalOptions):
        raise InvalidDataError(f"proposal_options must be a ProposalOptions, got {type(opts).__name__}.")
    mech = getattr(model, "mechanism", None)
    if mech is None or not getattr(mech, "has_density", False):
        raise InvalidDataError(
            "mechanism_importance_sampling needs a release mechanism with a tractable density "
            f"(mechanism.has_density); {type(mech).__name__} has none. Use smc_abc instead."
        )
    obs = model.check_observed(observed)
    n_theta = check_positive_int("n_theta", n_theta, 2)
    n_inner = check_positive_int("n_inner", n_inner)
    batch_size = check_positive_int("batch_size", batch_size)
    dim = int(model.prior.dim)
    check_allocation(f"importance sampling with n_theta={n_theta}", n_theta, dim + 3, copies=3)
    check_allocation(f"importance sampling with n_inner={n_inner}", n_inner, obs.size + dim, copies=2)
    pilot_theta, pilot_inner, adapt = _check_proposal(proposal, opts, pilot_theta, pilot_inner)

    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    conflict, _ = prior_data_conflict(
        model, obs, seed=np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (97,))
    )
    emit(conflict, stacklevel=3)
    own_backend = not isinstance(backend, Backend)
    be = get_backend(backend, n_workers)
    privacy, _, names = release_facts(model)
    diagnostics: dict[str, Any] = {}
    t0 = time.perf_counter()
    stages = _Stages(model, obs, root, batch_size, be, callback)
    try:
        prop: DefensiveProposal | None = proposal if isinstance(proposal, DefensiveProposal) else None
        if proposal == "auto":
            prop = _pilot_stages(stages, opts, pilot_theta, pilot_inner, adapt, diagnostics)
        theta, ll, log_w = stages.run(prop, n_theta, n_inner, (1,), 1, "main")
    finally:
        if own_backend:
            be.close()
    settings = {
        "n_theta": n_theta,
        "n_inner": n_inner,
        "proposal": proposal if isinstance(proposal, str) else "given",
        "inflation": float(opts.inflation),
        "df": float(opts.df),
        "defensive": float(opts.defensive),
        "backend": be.name,
        "seed_entropy": str(root.entropy),
        "batch_size": batch_size,
        "findings": [f.to_dict() for f in conflict],
    }
    if prop is not None:
        diagnostics["proposal_mean"] = np.asarray(prop.mean).tolist()
        diagnostics["proposal_shape"] = np.asarray(prop.scale).tolist()
    diagnostics["wall_time"] = time.perf_counter() - t0
    return _finish(_Result(theta, log_w, ll, names, obs, stages.n_sims, settings, diagnostics, privacy))


def _finish(res: _Result) -> _Result:
    """Record the weights' ESS and Pareto k; warn when k > 0.7."""
    res.diagnostics["ess"] = res.ess
    res.diagnostics["khat"] = res.khat
    if res.khat > 0.7:
        warnings.warn(
            f"Pareto k = {res.khat:.2f} > 0.7: the importance weights are too heavy-tailed for a "
            "reliable estimate; raise n_inner (less noisy likelihoods) or n_theta, or use a wider proposal.",
            WeightDegeneracyWarning,
            stacklevel=3,
        )
    return res
