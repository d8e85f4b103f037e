"""The proposal of SMC-ABC: perturbation kernel, population batches and importance weights.

Population ``t > 0`` proposes from the previous population ``(θ_j, w_j)`` (Beaumont, Cornuet, Marin
& Robert 2009, "PMC-ABC"):

* when ``ESS = 1/Σ w² < resample_threshold·N`` the population is first resampled (multinomial,
  seed ``spawn_key (1, t)``) to equal weights;
* draw an ancestor ``θ_j`` with probability ``w_j`` and perturb it, ``θ* = θ_j + L z`` with
  ``L Lᵀ = Σ``, ``z ~ N(0, I)``, redrawing until ``θ*`` is in the prior support; ``Σ`` is
  ``kernel_scale`` times the (weighted) covariance of the population (Beaumont et al.: 2 and
  weighted; the authors' code: 1 and unweighted), plus ``1e-12·tr(Σ)/d·I`` for stability;
* an accepted ``θ_i`` gets the weight ``w_i ∝ π(θ_i) / Σ_j w_j N(θ_i; θ_j, Σ)``          (PMC)

Population 0 draws from the prior. A batch proposes, simulates the private statistic
``s_dp(θ)`` and keeps the proposals with ``||(s_dp(θ) - s_obs) / scale||₂ <= ε_t``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .weighted import ess, weighted_cov


@dataclass(frozen=True)
class PerturbationKernel:
    """The Gaussian perturbation proposal built from one population (module docstring).

    Attributes
    ----------
    particles, weights
        The (possibly resampled) population the ancestors are drawn from.
    cov, chol
        ``Σ`` and its Cholesky factor ``L``.
    resampled
        Whether the population was resampled first.
    """

    particles: np.ndarray
    weights: np.ndarray
    cov: np.ndarray
    chol: np.ndarray
    resampled: bool

    @classmethod
    def build(
        cls,
        particles: np.ndarray,
        weights: np.ndarray,
        *,
        resample_threshold: float,
        kernel_scale: float,
        weighted_covariance: bool,
        resample_seed: np.random.SeedSequence,
    ) -> PerturbationKernel:
        """Resample if the ESS is low, then ``Σ = kernel_scale·cov`` of the population."""
        n = particles.shape[0]
        resampled = False
        if ess(weights) < resample_threshold * n:
            idx = np.random.default_rng(resample_seed).choice(n, size=n, p=weights)
            particles, weights, resampled = particles[idx], np.full(n, 1.0 / n), True
        base = weighted_cov(particles, weights) if weighted_covariance else np.cov(particles.T, ddof=1)
        cov = kernel_scale * np.atleast_2d(base)
        cov = cov + 1e-12 * np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
        return cls(particles, weights, cov, np.linalg.cholesky(cov), resampled)

    def propose(self, m: int, prior: Any, rng: np.random.Generator) -> np.ndarray:
        """``m`` perturbed ancestors inside the prior support."""
        n, d = self.particles.shape
        theta = np.empty((m, d))
        todo = np.arange(m)
        for _ in range(10_000):
            idx = rng.choice(n, size=todo.size, p=self.weights)
            prop = self.particles[idx] + rng.standard_normal((todo.size, d)) @ self.chol.T
            ok = prior.in_support(prop)
            theta[todo[ok]] = prop[ok]
            todo = todo[~ok]
            if todo.size == 0:
                return theta
        raise RuntimeError(  # pragma: no cover - pathological priors only
            "could not perturb particles into the prior support in 10000 attempts."
        )

    def importance_weights(self, prior: Any, new: np.ndarray) -> np.ndarray:
        """``w_i ∝ π(θ_i) / Σ_j w_j N(θ_i; θ_j, Σ)`` (kernel constants cancel), normalised."""
        log_prior = prior.log_prob(new)
        log_old_w = np.log(self.weights)
        log_den = np.empty(new.shape[0])
        inv = np.linalg.inv(self.chol)
        zn = new @ inv.T
        zo = self.particles @ inv.T
        for a in range(0, new.shape[0], 512):
            diff = zn[a : a + 512, None, :] - zo[None, :, :]
            log_den[a : a + 512] = logsumexp(log_old_w[None, :] - 0.5 * np.sum(diff**2, axis=2), axis=1)
        lw = log_prior - log_den
        lw -= lw.max()
        w = np.exp(lw)
        return w / w.sum()


@dataclass
class BatchTask:
    """One unit of parallel work: ``batch_size`` proposals at tolerance ``tolerance`` whose
    randomness all comes from ``seed``."""

    model: Any
    observed: np.ndarray
    tolerance: float
    batch_size: int
    kernel: PerturbationKernel | None
    scale: np.ndarray | None
    seed: np.random.SeedSequence | None = None


def population_batch(task: BatchTask) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Propose, simulate and test ``batch_size`` particles.

    Returns the accepted θ, their distances, their positions in the batch and the number of
    simulations (= batch_size).
    """
    rng = np.random.default_rng(task.seed)
    prior = task.model.prior
    m = task.batch_size
    theta = prior.sample(m, rng) if task.kernel is None else task.kernel.propose(m, prior, rng)
    s_dp = task.model.simulate(theta, rng)
    diff = s_dp - task.observed
    if task.scale is not None:
        diff = diff / task.scale
    dist = np.sqrt(np.sum(diff**2, axis=1))
    acc = np.nonzero(dist <= task.tolerance)[0]
    return theta[acc], dist[acc], acc, m


__all__ = ["BatchTask", "PerturbationKernel", "population_batch"]
