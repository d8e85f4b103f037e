"""Exact private-data posteriors of two user models, on a parameter grid (test helpers).

* Poisson counts released as a clamped sum with the geometric mechanism: the clamped sum of n
  records has the n-fold convolution of the clamped Poisson pmf on {0, ..., C} (exact up to FFT
  round-off, ~1e-16 of the largest mass), and ``p(s_dp | λ) = Σ_s p(s | λ)·DL(s_dp - s)`` is a
  finite sum: the posterior is exact on the λ-grid (enumeration).
* Log-normal records released as a clamped mean with the Gaussian mechanism: the clamped mean on
  a lattice by FFT (as :func:`dpinfer.models.shipped.gaussian_mean.clipped_mean_lattice_pmf`; the lattice
  rounding adds sd ``h/sqrt(12 n)`` to the mean, far below the noise sd) convolved with the
  Gaussian noise density.
"""

from __future__ import annotations

import numpy as np
from scipy import fft as sfft
from scipy import stats
from scipy.special import logsumexp


def _nfold(single: np.ndarray, n: int) -> np.ndarray:
    length = n * (single.shape[1] - 1) + 1
    nfft = sfft.next_fast_len(length, real=True)
    pmf = sfft.irfft(sfft.rfft(single, nfft, axis=1) ** n, nfft, axis=1)[:, :length]
    return np.clip(pmf, 0.0, None)


def poisson_clamped_sum_pmf(lam: np.ndarray, n: int, cap: int) -> np.ndarray:
    """``P(Σ min(x_i, cap) = s | λ)`` for s = 0..n·cap, x_i ~ Poisson(λ) i.i.d.; one row per λ."""
    k = np.arange(cap + 1)
    single = stats.poisson.pmf(k[None, :], lam[:, None])
    single[:, cap] = stats.poisson.sf(cap - 1, lam)  # every x >= cap is clamped to cap
    return _nfold(single, n)


def poisson_geometric_posterior(observed: float, n: int, cap: int, mech, prior, grid: np.ndarray):
    """Normalised posterior density of λ on ``grid`` given the geometric release ``observed``."""
    pmf = poisson_clamped_sum_pmf(grid, n, cap)
    s = np.arange(pmf.shape[1], dtype=float)
    log_eta = mech.log_density(np.full((s.size, 1), observed), s[:, None])
    like = np.log(pmf @ np.exp(log_eta) + 1e-300)
    return _normalise(grid, like + prior.log_prob(grid[:, None]))


def lognormal_clamped_mean_pmf(mu: np.ndarray, sigma: float, n: int, upper: float, bins: int) -> np.ndarray:
    """Lattice pmf of the mean of n records ``min(x_i, upper)``, ``log x_i ~ N(μ, σ²)``, on
    ``k·upper/(n·bins)``, k = 0..n·bins (the lower clamp 0 is never active)."""
    h = upper / bins
    edges = h * (np.arange(bins) + 0.5)
    cdf = stats.norm.cdf((np.log(edges)[None, :] - mu[:, None]) / sigma)
    single = np.empty((mu.size, bins + 1))
    single[:, 0] = cdf[:, 0]
    single[:, 1:bins] = np.diff(cdf, axis=1)
    single[:, bins] = 1.0 - cdf[:, -1]
    return _nfold(single, n)


def lognormal_gaussian_posterior(observed, sigma, n, upper, mech, prior, grid, bins=200):
    """Normalised posterior density of μ on ``grid`` given the Gaussian release ``observed``."""
    support = upper * np.arange(n * bins + 1) / (n * bins)
    log_eta = mech.log_density(np.full((support.size, 1), observed), support[:, None])
    like = np.concatenate([
        np.log(lognormal_clamped_mean_pmf(grid[i : i + 16], sigma, n, upper, bins) @ np.exp(log_eta) + 1e-300)
        for i in range(0, grid.size, 16)
    ])
    return _normalise(grid, like + prior.log_prob(grid[:, None]))


def _normalise(grid: np.ndarray, logp: np.ndarray) -> tuple[float, float, np.ndarray]:
    """(mean, sd, density) of a density known up to a constant on a uniform grid."""
    w = np.exp(logp - logsumexp(logp))
    mean = float(w @ grid)
    sd = float(np.sqrt(w @ (grid - mean) ** 2))
    return mean, sd, w / (grid[1] - grid[0])
