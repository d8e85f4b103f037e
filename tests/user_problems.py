"""Private-data problems of our own (not shipped models) with exact posteriors, for the tests of
issue 12: each subclasses PrivateDataModel with the existing API (GaussianPrior, LaplaceMechanism).

* :class:`PoissonClampedSum` — confidential counts ``x_i ~ Poisson(exp θ)``, clamped to
  ``[0, c]`` and summed, released with Laplace noise of scale ``c/ε`` (add/remove-one sensitivity
  ``c``); the exact posterior enumerates the pmf of the clamped sum (an ``n``-fold convolution of
  the clamped Poisson pmf, support ``0..n·c``) on a θ-grid.
* :class:`TwoClampedMeans` — two independent clamped Gaussian means released together by one
  2-D Laplace mechanism; the posterior factorises into two 1-D lattice references
  (:meth:`GaussianMean.exact_posterior`).
"""

from __future__ import annotations

import numpy as np
from scipy import fft as sfft
from scipy import stats

from dpinfer.models.contract import PrivateDataModel
from dpinfer.models.posteriors import GridPosterior
from dpinfer.models.priors import GaussianPrior
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.privacy.mechanisms.base import LaplaceMechanism
from dpinfer.randomness import as_generator


class PoissonClampedSum(PrivateDataModel):
    name = "poisson-clamped-sum"

    def __init__(self, n: int = 40, cap: int = 6, epsilon: float = 1.0, prior=(1.0, 0.7), scale=None):
        self.n, self.cap = int(n), int(cap)
        self.prior = GaussianPrior([prior[0]], [prior[1] ** 2])
        self.mechanism = LaplaceMechanism(
            1, float(cap), epsilon, neighbouring="add-remove", bounds=([0.0], [float(n * cap)])
        )
        if scale is not None:  # a deliberately mis-specified analysis: another noise scale
            self.mechanism.scale = float(scale)
        self.param_names = ("log_rate",)

    def simulate_confidential(self, theta, seed=None):
        theta = self.prior.check_theta(theta)
        x = as_generator(seed).poisson(np.exp(theta), size=(theta.shape[0], self.n))
        return np.minimum(x, self.cap).sum(axis=1, keepdims=True).astype(np.float64)

    def sum_pmf(self, theta: np.ndarray) -> np.ndarray:
        """``P(Σ min(x_i, cap) = k | θ)`` for ``k = 0..n·cap``, one row per θ (FFT convolution)."""
        lam = np.exp(np.asarray(theta, float))[:, None]
        single = stats.poisson.pmf(np.arange(self.cap + 1)[None, :], lam)
        single[:, -1] = stats.poisson.sf(self.cap - 1, lam[:, 0])
        length = self.n * self.cap + 1
        nfft = sfft.next_fast_len(length, real=True)
        pmf = sfft.irfft(sfft.rfft(single, nfft, axis=1) ** self.n, nfft, axis=1)[:, :length]
        return np.clip(pmf, 0.0, None)

    def exact_posterior(self, observed, grid_size: int = 801) -> GridPosterior:
        s_dp = float(np.asarray(observed, float).reshape(-1)[0])
        b = self.mechanism.scale
        support = np.arange(self.n * self.cap + 1)
        lap = np.exp(-np.abs(s_dp - support) / b) / (2 * b)
        m, sd = self.prior.mean[0], self.prior.sd[0]
        grid = np.linspace(m - 6 * sd, m + 6 * sd, 1201)
        logp = np.log(self.sum_pmf(grid) @ lap + 1e-300) + self.prior.log_prob(grid[:, None])
        keep = np.nonzero(logp > logp.max() - np.log(1e10))[0]
        fine = np.linspace(grid[max(keep[0] - 1, 0)], grid[min(keep[-1] + 1, grid.size - 1)], grid_size)
        logp = np.log(self.sum_pmf(fine) @ lap + 1e-300) + self.prior.log_prob(fine[:, None])
        return GridPosterior(fine, logp)


class TwoClampedMeans(PrivateDataModel):
    name = "two-clamped-means"

    def __init__(self, n: int = 40, epsilon: float = 1.0):
        self.parts = [GaussianMean(n=n, clamp=(-2.0, 2.0), epsilon=epsilon / 2) for _ in range(2)]
        self.prior = GaussianPrior([0.0, 0.0], [1.0, 1.0])
        b = self.parts[0].mechanism
        self.mechanism = LaplaceMechanism(
            2, 2 * b.sensitivity, epsilon, neighbouring="replace-one", bounds=([-2.0, -2.0], [2.0, 2.0])
        )
        for p in self.parts:  # the references use the noise scale that runs (grid-snapped)
            p.mechanism.scale = self.mechanism.scale
        self.param_names = ("mu_a", "mu_b")

    def simulate_confidential(self, theta, seed=None):
        theta = self.prior.check_theta(theta)
        gen = as_generator(seed)
        return np.concatenate(
            [p.simulate_confidential(theta[:, [j]], gen) for j, p in enumerate(self.parts)], axis=1
        )

    def exact_marginals(self, observed):
        """The two 1-D exact posteriors (the release factorises: L1 sensitivity split evenly)."""
        obs = np.asarray(observed, float).reshape(-1)
        out = []
        for j, p in enumerate(self.parts):
            out.append(p.exact_posterior([obs[j]], grid_size=301, bins=100))
        return out
