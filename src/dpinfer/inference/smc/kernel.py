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

Constrained priors (a support that is not all of R^d: ``UniformPrior``, ``GammaPrior``,
``DirichletPrior``, ...) are perturbed in unconstrained space through the prior's bijection
``θ = T(z)`` (:mod:`dpinfer.models.transforms`): ``z* = z_j + L_z ξ`` with ``L_z L_zᵀ = Σ_z``
built from ``z_j = T⁻¹(θ_j)`` as above, ``θ* = T(z*)``, so every proposal is in the support and no
redraw truncates the kernel; by the change of variables the proposal density is
``q(θ) = Σ_j w_j N(z; z_j, Σ_z)·|det ∂T/∂z|⁻¹`` and the weight becomes

    w_i ∝ π(T(z_i))·|det ∂T/∂z(z_i)| / Σ_j w_j N(z_i; z_j, Σ_z)      (prior.log_prob_unconstrained)

(the redraw loop of the unconstrained case would need each ancestor's truncation mass in the
denominator). ``cov`` stays the θ-space covariance (reported in the diagnostics).

Population 0 draws from the prior. A batch proposes, simulates the private statistic
``s_dp(θ)`` and keeps the proposals with ``||(s_dp(θ) - s_obs) / scale||₂ <= ε_t``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ...results.weighted import ess, weighted_cov


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
    kernel_scale, weighted_covariance
        How ``Σ`` was built (reused for ``Σ_z`` of a constrained prior).
    """

    particles: np.ndarray
    weights: np.ndarray
    cov: np.ndarray
    chol: np.ndarray
    resampled: bool
    kernel_scale: float = 2.0
    weighted_covariance: bool = True
    _unconstrained_cache: dict = field(default_factory=dict, compare=False, repr=False)

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
        cov = _kernel_cov(particles, weights, kernel_scale, weighted_covariance)
        chol = np.linalg.cholesky(cov)
        return cls(particles, weights, cov, chol, resampled, float(kernel_scale), weighted_covariance)

    def _unconstrained(self, prior: Any) -> tuple[Any, np.ndarray, np.ndarray] | None:
        """``(T, z_j, L_z)`` for a constrained prior with a ``transform``; None otherwise."""
        transform = getattr(prior, "transform", None)
        support = getattr(prior, "support", None)
        if transform is None or support is None:
            return None
        lo, hi = support
        if not (np.any(np.isfinite(lo)) or np.any(np.isfinite(hi))):
            return None
        if "z" not in self._unconstrained_cache:
            z = np.nan_to_num(transform.inverse(self.particles), posinf=700.0, neginf=-700.0)
            cov = _kernel_cov(z, self.weights, self.kernel_scale, self.weighted_covariance)
            self._unconstrained_cache["z"] = (transform, z, np.linalg.cholesky(cov))
        return self._unconstrained_cache["z"]

    def propose(self, m: int, prior: Any, rng: np.random.Generator) -> np.ndarray:
        """``m`` perturbed ancestors inside the prior support (in ``z`` for a constrained prior)."""
        n, d = self.particles.shape
        free = self._unconstrained(prior)
        theta = np.empty((m, d))
        todo = np.arange(m)
        for _ in range(10_000):
            idx = rng.choice(n, size=todo.size, p=self.weights)
            if free is None:
                prop = self.particles[idx] + rng.standard_normal((todo.size, d)) @ self.chol.T
            else:  # T(z) is in the support; the check only catches floating-point saturation at a bound
                transform, z, chol = free
                prop = transform.forward(z[idx] + rng.standard_normal((todo.size, d)) @ chol.T)
            ok = prior.in_support(prop)
            theta[todo[ok]] = prop[ok]
            todo = todo[~ok]
            if todo.size == 0:
                return theta
        raise RuntimeError(  # pragma: no cover - pathological priors only
            "could not perturb particles into the prior support in 10000 attempts."
        )

    def importance_weights(self, prior: Any, new: np.ndarray) -> np.ndarray:
        """``w_i ∝ π(θ_i) / Σ_j w_j N(θ_i; θ_j, Σ)`` (kernel constants cancel), normalised; for a
        constrained prior the same in ``z`` with the Jacobian (module docstring)."""
        free = self._unconstrained(prior)
        if free is None:
            log_prior = prior.log_prob(new)
            points, centres, chol = new, self.particles, self.chol
        else:
            transform, centres, chol = free
            points = transform.inverse(new)
            log_prior = prior.log_prob_unconstrained(points)
        log_old_w = np.log(self.weights)
        log_den = np.empty(new.shape[0])
        inv = np.linalg.inv(chol)
        zn = points @ inv.T
        zo = centres @ inv.T
        for a in range(0, new.shape[0], 512):
            diff = zn[a : a + 512, None, :] - zo[None, :, :]
            log_den[a : a + 512] = logsumexp(log_old_w[None, :] - 0.5 * np.sum(diff**2, axis=2), axis=1)
        lw = log_prior - log_den
        lw -= lw.max()
        w = np.exp(lw)
        return w / w.sum()


def _kernel_cov(x: np.ndarray, weights: np.ndarray, kernel_scale: float, weighted: bool) -> np.ndarray:
    """``kernel_scale`` × the (weighted) covariance of ``x``, plus ``1e-12·tr/d·I`` for stability."""
    base = weighted_cov(x, weights) if weighted else np.cov(x.T, ddof=1)
    cov = kernel_scale * np.atleast_2d(base)
    return cov + 1e-12 * np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])


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


def population_batch(
    task: BatchTask,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """Propose, simulate and test ``batch_size`` particles.

    Returns the accepted θ, their distances, their positions in the batch, the number of
    simulations (= batch_size) and the coordinate-wise min and max of the finite simulated
    statistics (NaN if none; the prior predictive's range in population 0).
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
    finite = np.asarray(s_dp, dtype=np.float64)
    finite = finite[np.all(np.isfinite(finite), axis=1)]
    if finite.shape[0]:
        lo, hi = finite.min(axis=0), finite.max(axis=0)
    else:
        lo = hi = np.full(task.observed.size, np.nan)
    return theta[acc], dist[acc], acc, m, lo, hi


__all__ = ["BatchTask", "PerturbationKernel", "population_batch"]
