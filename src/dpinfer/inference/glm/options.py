"""The analyst's options of a private GLM's posterior: the prior, the sampler, their checks."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...errors import InvalidDataError
from ...execution.threads import check_threads

#: The covariate models behind the CLT (:mod:`dpinfer.inference.glm_covariates`).
COVARIATE_MODELS = ("moment-matched", "gaussian")


@dataclass(frozen=True)
class GLMPrior:
    """The analyst's prior (all in the scaled units: features and offset in [-1, 1]).

    Parameters
    ----------
    coef_sd
        Sd of the N(0, sd²) prior of every coefficient of a scaled feature.
    intercept_sd
        Sd of the N(0, sd²) prior of the intercept.
    noise_log_mean, noise_log_sd
        log σ_y ~ N(mean, sd²): the linear family's noise sd on the scaled response.
    cov_mean_sd
        μ_j ~ N(0, sd²): the Gaussian covariate model's means (scaled units).
    cov_scale_log_mean, cov_scale_log_sd
        log L_jj ~ N(mean, sd²): the covariate model's Cholesky diagonal (scales).
    cov_offdiag_sd
        L_jk ~ N(0, sd²) for j > k: its off-diagonal entries.
    moment_log_mean, moment_log_sd
        The moment-matched covariate model (the default): λ_j = ½ log E[u_j²] ~ N(mean, sd²)
        (λ_j = 0 for a binary feature, about log sd for a centred one).
    location_ratio_sd
        μ_j / L_jj ~ N(0, sd²) (a feature's mean in units of its own residual scale).
    correlation_ratio_sd
        L_jk / L_jj ~ N(0, sd²) for j > k (the dependence between features).
    """

    coef_sd: float = 2.5
    intercept_sd: float = 2.5
    noise_log_mean: float = math.log(0.3)
    noise_log_sd: float = 0.75
    cov_mean_sd: float = 0.5
    cov_scale_log_mean: float = math.log(0.3)
    cov_scale_log_sd: float = 0.5
    cov_offdiag_sd: float = 0.2
    moment_log_mean: float = math.log(0.4)
    moment_log_sd: float = 0.75
    location_ratio_sd: float = 3.0
    correlation_ratio_sd: float = 1.0


@dataclass(frozen=True)
class GLMSamplerOptions:
    """How the posterior is sampled (module docstring).

    Parameters
    ----------
    method
        ``"laplace-is"`` (default): self-normalised importance sampling from a multivariate t
        proposal at the MAP with the inverse Hessian as scale, inflated and with degrees of freedom
        sized to the dimension d (t₅–t₁₀ with 1.5× up to d = 10, close to the Laplace approximation
        itself at d = 76: :func:`~dpinfer.inference.glm.samplers.proposal_settings`), resampled to
        ``draws`` draws
        (one chain; the Pareto k̂ of the weights and their ESS are reported, and a k̂ above 0.7
        warns). ``"hmc"``: Hamiltonian Monte Carlo preconditioned by the same Laplace
        approximation, ``chains`` chains in one batch (split R-hat reported; above 1.01 warns);
        about 30× slower.
    proposals
        Importance-sampling proposals per round (``"laplace-is"``).
    adapt
        Adaptive rounds after the Laplace proposal: each centres the proposal at the previous
        round's weighted mean and, when that round's ESS is at least 10 d, blends its weighted
        covariance half-half with the Laplace one.
    chains, warmup, draws
        HMC chains, their warm-up iterations (step-size adaptation) and kept draws per chain; for
        ``"laplace-is"``, ``draws`` is the number of resampled draws kept.
    leapfrog
        Least mean number of leapfrog steps per HMC iteration (jittered ±50%): where the adapted
        step is small, the mean grows to 3 / step (a trajectory of about three posterior sds in the
        whitened coordinates), at most 4 × ``leapfrog``
        (:data:`~dpinfer.inference.glm.samplers.TRAJECTORY`).
    target_accept
        Target of the dual-averaging step-size adaptation.
    threads
        torch's intra-op threads while sampling (default 1; ``None`` leaves torch's setting). The
        model's tensors are small, and where other processes hold the cores several threads wait
        for each other at every operation: measured on a 2-core machine with three processes, one
        gradient took 24.6 ms on two threads against 3.1 ms on one, a Laplace fit 5.4 s against
        0.32 s (:mod:`dpinfer.execution.threads`). The draws do not depend on it beyond rounding.
    fallback
        ``"hmc"`` (default): when the importance weights fail their check (Pareto k̂ > 0.7 or an
        effective sample size below ``MIN_IS_ESS``), the posterior is sampled again by HMC *from the
        same release* (post-processing: nothing is released or charged again) and the result says so
        (``diagnostics["fallback"]``, ``summary()``); ``"none"``: keep the importance draws and warn.
    """

    method: str = "laplace-is"
    proposals: int = 4000
    adapt: int = 2
    chains: int = 8
    warmup: int = 200
    draws: int = 4000
    leapfrog: int = 6
    target_accept: float = 0.8
    fallback: str = "hmc"
    threads: int | None = 1


#: Largest sampler sizes accepted (proposals; chains x draws): beyond them the arrays do not fit in
#: memory, which must be known before the release is charged, not discovered after it.
MAX_SAMPLER_DRAWS = 10**7


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise InvalidDataError(f"sampler {name} must be a whole number in [{low}, {high:,}], got {value!r}.")
    return int(value)


def check_posterior_options(
    prior: Any, sampler: Any, seed: Any
) -> tuple[GLMPrior, GLMSamplerOptions]:
    """Validate the analyst's posterior options completely; return them with their defaults filled.

    :func:`dpinfer.pipelines.glm.private_glm` calls it *before* the statistic is released and
    charged (issue 35: a bad option found after the charge wastes the budget), and
    :func:`glm_posterior` again. Refuses (:class:`~dpinfer.errors.InvalidDataError`): a prior that
    is not a :class:`GLMPrior` or has a non-finite field or a standard deviation <= 0; sampler
    options that are not :class:`GLMSamplerOptions`, an unknown method, counts that are not whole
    numbers in range (``proposals`` >= 100, ``draws`` >= 4 per chain, ``chains`` and ``leapfrog``
    >= 1, ``warmup`` and ``adapt`` >= 0, at most :data:`MAX_SAMPLER_DRAWS` draws or proposals),
    ``target_accept`` outside (0, 1), ``threads`` not a positive integer or None; a seed that is
    not None, an integer >= 0, a numpy SeedSequence or Generator.
    """
    prior = GLMPrior() if prior is None else prior
    if not isinstance(prior, GLMPrior):
        raise InvalidDataError(f"prior must be a GLMPrior(...), got {type(prior).__name__}.")
    for key, value in asdict(prior).items():
        ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
        if not ok or not math.isfinite(value) or (key.endswith("_sd") and not value > 0):
            need = "a finite number > 0 (a standard deviation)" if key.endswith("_sd") else "a finite number"
            raise InvalidDataError(f"prior {key} must be {need}, got {value!r}.")
    opts = GLMSamplerOptions() if sampler is None else sampler
    if not isinstance(opts, GLMSamplerOptions):
        raise InvalidDataError(f"sampler must be a GLMSamplerOptions(...), got {type(opts).__name__}.")
    if opts.method not in ("laplace-is", "hmc"):
        raise InvalidDataError(f"sampler method must be 'laplace-is' or 'hmc', got {opts.method!r}.")
    if opts.fallback not in ("hmc", "none"):
        raise InvalidDataError(f"sampler fallback must be 'hmc' or 'none', got {opts.fallback!r}.")
    _whole(opts.proposals, "proposals", 100, MAX_SAMPLER_DRAWS)
    _whole(opts.adapt, "adapt", 0, 100)
    chains = _whole(opts.chains, "chains", 1, 1024)
    _whole(opts.draws, "draws", 4 * chains, MAX_SAMPLER_DRAWS // chains)
    _whole(opts.warmup, "warmup", 0, MAX_SAMPLER_DRAWS // chains)
    _whole(opts.leapfrog, "leapfrog", 1, 1024)
    check_threads(opts.threads)
    ta = opts.target_accept
    if isinstance(ta, bool) or not isinstance(ta, (int, float, np.integer, np.floating)) or not 0 < ta < 1:
        raise InvalidDataError(f"sampler target_accept must be in (0, 1), got {ta!r}.")
    if not (seed is None or isinstance(seed, (np.random.SeedSequence, np.random.Generator))):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InvalidDataError(
                f"seed must be None, an integer >= 0, a numpy SeedSequence or Generator, got {seed!r}."
            )
    return prior, opts


@dataclass(frozen=True)
class GLMPosteriorOptions:
    """The posterior options of :func:`dpinfer.private_glm` (those of
    :func:`~dpinfer.inference.glm.glm_posterior`), grouped.

    Parameters
    ----------
    prior
        The analyst's :class:`GLMPrior` (default: its defaults).
    sampler
        :class:`GLMSamplerOptions` (default: its defaults).
    covariates
        The covariate model: ``"moment-matched"`` (default) or ``"gaussian"``.
    warn
        Warn when the sampler's checks fail or the noise dominates.
    """

    prior: GLMPrior | None = None
    sampler: GLMSamplerOptions | None = None
    covariates: str = "moment-matched"
    warn: bool = True


__all__ = ["COVARIATE_MODELS", "MAX_SAMPLER_DRAWS", "GLMPosteriorOptions", "GLMPrior", "GLMSamplerOptions",
           "check_posterior_options"]
