"""Private SMC-ABC with the Gaussian mechanism on the particle weights (Park et al. 2021, §7).

ABCDP's §7 suggests a sequential ABC whose importance weights touch the confidential data Y*
only through the Gaussian mechanism. Population k (k = 0..K-1):

1. M proposals θ_i ~ q_k (public: q_0 is the prior, q_k the Beaumont et al. 2009 kernel mixture
   around population k-1, built from earlier *releases* only) and Y_i ~ p(y | θ_i) (public seed).
2. Release r̃ = r + noise, r_i = ρ(Y*, Y_i): the data-dependent part of the weights. The noise is
   exact discrete Gaussian noise on a public power-of-two grid γ,
   r̃ = γ·(round(r/γ) + Z), Z ~ N_Z(0, σ_γ²)^M (Canonne, Kamath & Steinke 2020, Algorithm 3;
   :mod:`dpinfer.privacy.mechanisms.gaussian_rounds`), so that every released value is an exact
   double fixed by the noisy integers alone (never ``r + float noise``; Mironov 2012).
3. Weights (post-processing): w_i ∝ π(θ_i)/q_k(θ_i) · exp(-r̃_i²/(2 h_k²)), h_k chosen from r̃
   alone so that the kernel divides the effective sample size of π/q by 1/``ess_fraction``.

Sensitivity (replace-one on Y*). Claim: ||r - r'||₂ <= √M·Δρ, Δρ the distance's sensitivity.
Proof: the Y_i are fixed public data, independent of Y*; for neighbours Y*, Y*' each coordinate
obeys |ρ(Y*, Y_i) - ρ(Y*', Y_i)| <= Δρ (for the MMD, Lemma 1 of Park et al.: the mean embedding
moves by at most 2√B_k/N and ρ by no more, triangle inequality), so Σ_i (r_i - r'_i)² <= M·Δρ².
The bound is tight up to a constant: with all Y_i equal every coordinate moves together. On the
grid each coordinate moves by at most u = ⌈Δρ/γ⌉ units, the vector by √M·u, so each release is
``DiscreteGaussianEvent(σ_γ, √M·u, M)``: ½(√M·u/σ_γ)²-zCDP (CKS 2020, Theorem 14). Noise scaled by
Δρ alone would be √M times too small.

Composition. q_k depends on Y* only through the releases of populations < k, so the K releases
are an adaptive composition of K such events, accounted by Rényi DP (Mironov 2017, Prop. 1; the
``"rdp"`` accountant, the only one with an analysis of the multivariate discrete Gaussian). σ_γ²
is the least integer whose K-fold composition it certifies at (ε, δ); the whole composition is
charged to the ledger before the first noise is drawn, through the
:class:`~dpinfer.privacy.context.ReleaseContext`. Charging one population's event for all K would
understate ε by about √K. Every input (sizes included: at most
:data:`~dpinfer.release.private_smc.MAX_PARTICLES` particles, refused before anything is
allocated) is validated, and population 0 is simulated and its distances computed (shapes checked
against the observed data), before the charge.

Target. For e ~ N(0, σ²), E exp(-(r+e)²/(2h²)) = h/√(h²+σ²) · exp(-r²/(2(h²+σ²))): the noisy
weight is an unbiased estimate (up to a constant) of a Gaussian ABC kernel of bandwidth
h_eff = √(h_k² + σ²) in the true distance. The last population is therefore a random-weight
importance sample of the kernel-ABC posterior π(θ) ∫ p(y|θ) exp(-ρ(Y*, y)²/(2 h_eff²)) dy
(Wilkinson 2013: the privacy noise acts as part of the ABC kernel). h_eff can never go below σ.
The discrete Gaussian on the grid has σ_γ ≥ 2¹⁰ grid units, where its law matches the
continuous N(0, (γσ_γ)²) to within far less than the Monte Carlo error, and rounding moves r by
at most γ/2 ≤ 2⁻¹¹·σ: the identity holds with σ = γ·σ_γ up to these terms.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..distances.base import count_records
from ..distances.enforce import release_sensitivity
from ..errors import InvalidPrivacyParameterError, refuse_removed_keywords
from ..privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..privacy.mechanisms.gaussian_rounds import ACCOUNTANT, gaussian_rounds, release_gaussian_round
from ..privacy.report import PrivacyReport
from ..privacy.validation import check_delta, check_epsilon
from ..results.weighted import ess
from .private_smc import (
    MAX_BATCH,
    MAX_PARTICLES,
    PrivateSMCResult,
    batch_distances,
    check_size,
    kernel_proposal,
    smc_prior,
)

if TYPE_CHECKING:
    from ..distances.base import Distance

__all__ = ["MAX_POPULATIONS", "gaussian_weights_smc_abc", "weight_noise_std"]

#: Most populations (releases) of one run.
MAX_POPULATIONS = 1000


def weight_noise_std(noise_multiplier: float, delta_rho: float, n_particles: int) -> float:
    """σ = s·√M·Δρ: the L2 sensitivity of the M distances is √M·Δρ (module docstring)."""
    return float(noise_multiplier) * math.sqrt(int(n_particles)) * float(delta_rho)


def kernel_bandwidth(noisy: np.ndarray, log_base: np.ndarray, ess_fraction: float) -> float:
    """The h with ESS(base·exp(-r̃²/(2h²))) = ``ess_fraction``·ESS(base) (bisection in log h).

    The ESS falls by the factor ``ess_fraction`` from that of the importance weights π/q alone
    (as in Del Moral et al. 2012's adaptive ABC). Uses the released r̃ only (post-processing).
    """
    r2 = noisy**2
    target = ess_fraction * ess(np.exp(log_base - log_base.max()))

    def ess_at(h: float) -> float:
        lw = log_base - r2 / (2.0 * h * h)
        return ess(np.exp(lw - lw.max()))

    hi = 100.0 * float(np.max(np.abs(noisy))) + 1e-300
    lo = hi * 1e-8
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ess_at(mid) >= target else (mid, hi)
        if hi / lo < 1.0 + 1e-4:
            break
    return hi


def _population_distances(
    distance: Distance, prepared: Any, model: Any, theta: np.ndarray, rng: np.random.Generator, batch: int
) -> np.ndarray:
    """ρ(Y*, Y_i) for the M proposals, simulated ``batch`` at a time (memory O(batch))."""
    parts = []
    for a in range(0, theta.shape[0], batch):
        chunk = theta[a:a + batch]
        parts.append(batch_distances(distance, prepared, model.simulate(chunk, rng), chunk.shape[0]))
    return np.concatenate(parts)


def _check_sizes(
    n_particles: Any, n_populations: Any, batch_size: Any, ess_fraction: Any
) -> tuple[int, int, int, float]:
    """``(M, K, batch, frac)``: the particles, populations, batch size and ESS fraction, checked."""
    M = check_size(n_particles, "n_particles", 2, MAX_PARTICLES,
                   "The proposal density costs O(M²) per population and the noise grows as √M: use fewer "
                   "particles.")
    K = check_size(n_populations, "n_populations", 1, MAX_POPULATIONS, "Use fewer populations.")
    batch = check_size(batch_size, "batch_size", 1, MAX_BATCH, "Simulate in smaller batches.")
    try:
        frac = float(ess_fraction)
    except (TypeError, ValueError):
        frac = float("nan")
    if not 0.0 < frac < 1.0:
        raise InvalidPrivacyParameterError(f"ess_fraction must be in (0, 1), got {ess_fraction!r}.")
    return M, K, batch, frac


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def gaussian_weights_smc_abc(
    observed: Any,
    model: Any,
    distance: Distance,
    *,
    n_particles: int,
    n_populations: int,
    epsilon: float,
    delta: float,
    ess_fraction: float = 0.5,
    accountant: str = ACCOUNTANT,
    batch_size: int = 4096,
    seed: Any = 0,
    context: ReleaseContext | None = None,
) -> PrivateSMCResult:
    """Private SMC-ABC releasing each population's distances through the Gaussian mechanism.

    Parameters
    ----------
    observed, distance
        The confidential data (N records, N public) and a :class:`~dpinfer.distances.Distance`
        (its sensitivity Δρ = ``distance.sensitivity(N)``, clipped to [0, Δρ] if dpinfer does not
        prove it).
    model
        A built-in ABCDP model (``prior_sample``, ``simulate``; see
        :func:`~dpinfer.release.private_smc.smc_prior`).
    n_particles
        M, proposals (and simulations) per population, 2 <= M <= 100 000; the noise std grows
        as √M.
    n_populations
        K, the number of populations (releases), 1 <= K <= 1000.
    epsilon, delta
        The total (ε, δ) guarantee (replace-one) of the K composed releases.
    ess_fraction
        Each population's kernel bandwidth h_k is set from the released distances so that its
        ESS is this fraction of the ESS of its importance weights π/q alone.
    accountant
        ``"rdp"`` (the default and the only choice): composes the K discrete Gaussian releases
        (the ``"pld"`` accountant has no analysis of a multivariate discrete Gaussian). A ledger
        charged by this release must use the ``"rdp"`` accountant too.
    batch_size
        Simulations at once (memory of one batch of simulated data sets).
    seed
        Public randomness (proposals, simulations). The noise comes from the release context.
    context
        The :class:`~dpinfer.privacy.ReleaseContext`: the K releases are charged to its ledger
        before the first noise is drawn from its RNG (``None``: unaccounted, with a warning, and
        OS entropy). Its label defaults to ``"private-smc-abc-gaussian"``. The flat
        ``ledger=``/``dataset=``/``privacy_rng=`` keywords are refused, naming ``context=``.

    Returns
    -------
    PrivateSMCResult
        Last population's particles and weights; ``populations`` lists per population σ, h,
        h_eff = √(h² + σ²) (the bandwidth of the ABC kernel targeted), draws and ESS;
        ``privacy`` reports the composed event.

    Raises
    ------
    InvalidDataError, InvalidPrivacyParameterError
        Before anything is charged: bad privacy parameters, sizes out of range, an accountant
        other than ``"rdp"``, a sensitivity that vanishes or distances too large for the noise's
        grid, observed data that are not finite, simulations whose shape does not match the
        observed data (population 0 is simulated and compared before the charge).
    """
    eps, dlt = check_epsilon(epsilon, "epsilon"), check_delta(delta)
    if dlt <= 0:
        raise InvalidPrivacyParameterError("the Gaussian mechanism needs delta > 0 (e.g. delta=1e-6).")
    M, K, batch, frac = _check_sizes(n_particles, n_populations, batch_size, ess_fraction)
    if accountant != ACCOUNTANT:
        raise InvalidPrivacyParameterError(
            f"accountant must be {ACCOUNTANT!r}, got {accountant!r}: the released distances carry "
            "multivariate discrete Gaussian noise, which only the Renyi (zCDP) analysis covers "
            "(Canonne, Kamath & Steinke 2020, Theorem 14). Use a ledger on the 'rdp' accountant."
        )
    ctx = ReleaseContext.of(context, label="private-smc-abc-gaussian")
    prior = smc_prior(model)
    sens = release_sensitivity(distance, count_records(observed), warn=False)  # public: N and declared bounds
    plan = gaussian_rounds(sens.sensitivity, M, K, eps, dlt)
    plan.check_bound(sens.bound)  # every distance fits the grid: no data-dependent refusal later
    dist = sens.distance
    prepared = dist.prepare(observed)  # checks the observed data
    rng = np.random.default_rng(seed)
    z0 = prior.from_theta(prior.sample(M, rng))
    logq0 = prior.log_density(z0)
    rho0 = _population_distances(dist, prepared, model, prior.to_theta(z0), rng, batch)  # shapes vs Y*
    sens.warn_if_enforced()

    def run(_: Any) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray]:
        pops: list[dict[str, Any]] = []
        particles = weights = np.zeros(0)
        for k in range(K):
            if k == 0:
                z, logq, rho = z0, logq0, rho0
            else:
                z, logq = kernel_proposal(prior, particles, weights, M, rng)
                rho = _population_distances(dist, prepared, model, prior.to_theta(z), rng, batch)
            noisy = release_gaussian_round(rho, plan, ctx)  # the release
            log_base = prior.log_density(z) - logq
            h = kernel_bandwidth(noisy, log_base, frac)
            lw = log_base - noisy**2 / (2.0 * h * h)
            w = np.exp(lw - lw.max())
            particles, weights = z, w / w.sum()
            pops.append({"sigma": plan.sigma, "h": h, "h_eff": math.hypot(h, plan.sigma), "n_draws": M,
                         "ess": ess(weights)})
        return pops, particles, weights

    pops, particles, weights = ctx.release(plan.event, run, what="private SMC-ABC (Gaussian weights) release")
    report = PrivacyReport.from_event(
        plan.event, delta=dlt, accountant=ACCOUNTANT, sensitivity=sens.sensitivity, accounted=ctx.accounted,
        mechanism="private-smc-abc-gaussian-weights", insecure_rng=ctx.insecure,
        details={"populations": K, "particles": M, "noise_multiplier": plan.noise_multiplier,
                 "sigma": plan.sigma, "grid": plan.gamma, "sigma2_grid_units": plan.sigma2_units,
                 "l2_sensitivity": math.sqrt(M) * sens.sensitivity,
                 "distance": sens.config, "sensitivity_proof": sens.proof,
                 "theorem": "discrete Gaussian on a power-of-two grid (CKS 2020, Thm 14, zCDP) on the M "
                            "distances, L2 sensitivity sqrt(M)*Δρ; K-fold adaptive composition (RDP)"},
    )
    names = tuple(getattr(model, "param_names", ()))
    theta = prior.to_theta(particles)
    if not names:
        names = tuple(f"theta{i}" for i in range(theta.shape[1]))
    return PrivateSMCResult(theta, weights, names, privacy=report, populations=pops)
