"""Private SMC-ABC with the Gaussian mechanism on the particle weights (Park et al. 2021, §7).

ABCDP's §7 suggests a sequential ABC whose importance weights touch the confidential data Y*
only through the Gaussian mechanism. Population k (k = 0..K-1):

1. M proposals θ_i ~ q_k (public: q_0 is the prior, q_k the Beaumont et al. 2009 kernel mixture
   around population k-1, built from earlier *releases* only) and Y_i ~ p(y | θ_i) (public seed).
2. Release r̃ = r + N(0, σ² I_M), r_i = ρ(Y*, Y_i): the data-dependent part of the weights.
3. Weights (post-processing): w_i ∝ π(θ_i)/q_k(θ_i) · exp(-r̃_i²/(2 h_k²)), h_k chosen from r̃
   alone so that the kernel divides the effective sample size of π/q by 1/``ess_fraction``.

Sensitivity (replace-one on Y*). Claim: ||r - r'||₂ <= √M·Δρ, Δρ the distance's sensitivity.
Proof: the Y_i are fixed public data, independent of Y*; for neighbours Y*, Y*' each coordinate
obeys |ρ(Y*, Y_i) - ρ(Y*', Y_i)| <= Δρ (for the MMD, Lemma 1 of Park et al.: the mean embedding
moves by at most 2√B_k/N and ρ by no more, triangle inequality), so Σ_i (r_i - r'_i)² <= M·Δρ².
The bound is tight up to a constant: with all Y_i equal every coordinate moves together. Hence
σ = s·√M·Δρ makes each release a Gaussian mechanism with noise multiplier s, i.e. the event
``GaussianEvent(s)``. Noise scaled by Δρ alone (s·Δρ) would be √M times too small.

Composition. q_k depends on Y* only through the releases of populations < k, so the K releases
are an adaptive composition of K ``GaussianEvent(s)`` (RDP: Mironov 2017, Prop. 1; PLD: Koskela
et al. 2020). s is the least multiplier whose K-fold composition the accountant certifies at
(ε, δ) (:func:`~dpinfer.privacy.calibration.composed_gaussian_multiplier`); the whole composition
is charged to the ledger before the first noise is drawn, and the noise comes from the
:class:`~dpinfer.privacy.PrivacyRNG`. Charging one population's event for all K would understate
ε by about √K.

Target. For e ~ N(0, σ²), E exp(-(r+e)²/(2h²)) = h/√(h²+σ²) · exp(-r²/(2(h²+σ²))): the noisy
weight is an unbiased estimate (up to a constant) of a Gaussian ABC kernel of bandwidth
h_eff = √(h_k² + σ²) in the true distance. The last population is therefore a random-weight
importance sample of the kernel-ABC posterior π(θ) ∫ p(y|θ) exp(-ρ(Y*, y)²/(2 h_eff²)) dy
(Wilkinson 2013: the privacy noise acts as part of the ABC kernel). h_eff can never go below σ.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..distances.base import Distance
from ..errors import InvalidPrivacyParameterError
from ..inference.weighted import ess
from ..privacy.calibration import composed_gaussian_multiplier
from ..privacy.events import REPLACE_ONE, GaussianEvent, compose
from ..privacy.ledger import charge_or_warn
from ..privacy.report import PrivacyReport
from ..privacy.rng import PrivacyRNG, as_privacy_rng
from ..privacy.validation import check_delta, check_epsilon
from .private_smc import PrivateSMCResult, kernel_proposal, smc_prior

if TYPE_CHECKING:
    from ..privacy.ledger import Ledger

__all__ = ["gaussian_weights_smc_abc", "weight_noise_std"]


def weight_noise_std(noise_multiplier: float, delta_rho: float, n_particles: int) -> float:
    """σ = s·√M·Δρ: the L2 sensitivity of the M distances is √M·Δρ (module docstring)."""
    return float(noise_multiplier) * math.sqrt(int(n_particles)) * float(delta_rho)


def _composed(s: float, K: int) -> Any:
    return compose(*[GaussianEvent(s, neighbouring=REPLACE_ONE)] * K)


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


def gaussian_weights_smc_abc(
    observed: Any,
    model: Any,
    distance: Distance,
    n_particles: int,
    n_populations: int,
    epsilon: float,
    delta: float,
    *,
    ess_fraction: float = 0.5,
    accountant: str = "pld",
    seed: Any = 0,
    privacy_rng: PrivacyRNG | None = None,
    ledger: Ledger | None = None,
    dataset: str | None = None,
    label: str = "private-smc-abc-gaussian",
) -> PrivateSMCResult:
    """Private SMC-ABC releasing each population's distances through the Gaussian mechanism.

    Parameters
    ----------
    observed, distance
        The confidential data and a :class:`~dpinfer.distances.Distance` (its sensitivity Δρ).
    model
        A built-in ABCDP model (``prior_sample``, ``simulate``; see
        :func:`~dpinfer.release.private_smc.smc_prior`).
    n_particles
        M, proposals (and simulations) per population; the noise std grows as √M.
    n_populations
        K, the number of populations (releases).
    epsilon, delta
        The total (ε, δ) guarantee (replace-one) of the K composed releases.
    ess_fraction
        Each population's kernel bandwidth h_k is set from the released distances so that its
        ESS is this fraction of the ESS of its importance weights π/q alone.
    accountant
        ``"pld"`` (default) or ``"rdp"``: composes the K Gaussian events.
    seed
        Public randomness (proposals, simulations). The noise comes from ``privacy_rng``.

    Returns
    -------
    PrivateSMCResult
        Last population's particles and weights; ``populations`` lists per population σ, h,
        h_eff = √(h² + σ²) (the bandwidth of the ABC kernel targeted), draws and ESS;
        ``privacy`` reports the composed event.
    """
    eps, dlt = check_epsilon(epsilon, "epsilon"), check_delta(delta)
    if dlt <= 0:
        raise InvalidPrivacyParameterError("the Gaussian mechanism needs delta > 0 (e.g. delta=1e-6).")
    for name, v, low in (("n_particles", n_particles, 2), ("n_populations", n_populations, 1)):
        if isinstance(v, bool) or int(v) != v or int(v) < low:
            raise InvalidPrivacyParameterError(f"{name} must be an integer >= {low}, got {v!r}.")
    if not 0.0 < float(ess_fraction) < 1.0:
        raise InvalidPrivacyParameterError(f"ess_fraction must be in (0, 1), got {ess_fraction!r}.")
    if ledger is not None and not dataset:
        raise InvalidPrivacyParameterError("charging a ledger needs the dataset name.")
    M, K = int(n_particles), int(n_populations)
    prior = smc_prior(model)
    gen = as_privacy_rng(privacy_rng)
    prepared = distance.prepare(observed)
    delta_rho = float(distance.sensitivity(prepared))

    s = composed_gaussian_multiplier(eps, dlt, K, accountant)
    event = _composed(s, K)
    sigma = weight_noise_std(s, delta_rho, M)
    rng = np.random.default_rng(seed)
    pops: list[dict[str, Any]] = []
    particles = weights = np.zeros(0)
    with charge_or_warn(ledger, dataset, event, label=label, insecure=gen.deterministic,
                        what="private SMC-ABC (Gaussian weights) release"):
        for k in range(K):
            if k == 0:
                z = prior.from_theta(prior.sample(M, rng))
                logq = prior.log_density(z)
            else:
                z, logq = kernel_proposal(prior, particles, weights, M, rng)
            rho = distance.batch(prepared, model.simulate(prior.to_theta(z), rng))
            noisy = rho + np.asarray(gen.normal(sigma, M), dtype=np.float64)  # the release
            log_base = prior.log_density(z) - logq
            h = kernel_bandwidth(noisy, log_base, float(ess_fraction))
            lw = log_base - noisy**2 / (2.0 * h * h)
            w = np.exp(lw - lw.max())
            particles, weights = z, w / w.sum()
            pops.append({"sigma": sigma, "h": h, "h_eff": math.hypot(h, sigma), "n_draws": M,
                         "ess": ess(weights)})
    report = PrivacyReport.from_event(
        event, delta=dlt, accountant=accountant, sensitivity=delta_rho, accounted=ledger is not None,
        mechanism="private-smc-abc-gaussian-weights", insecure_rng=gen.deterministic,
        details={"populations": K, "particles": M, "noise_multiplier": s, "sigma": sigma,
                 "l2_sensitivity": math.sqrt(M) * delta_rho,
                 "theorem": "Gaussian mechanism on the M distances, L2 sensitivity sqrt(M)*Δρ; "
                            "K-fold adaptive composition by the accountant"},
    )
    names = tuple(getattr(model, "param_names", ()))
    theta = prior.to_theta(particles)
    if not names:
        names = tuple(f"theta{i}" for i in range(theta.shape[1]))
    return PrivateSMCResult(theta, weights, names, privacy=report, populations=pops)
