"""The Gaussian-mean model: a clamped mean released with Laplace noise, with an exact posterior.

Model::

    θ ~ N(prior_mean, prior_sd²),   x_i ~ N(θ, noise_sd²), i = 1..n,
    s = mean(clip(x, lo, hi)),   s_dp = s + Lap((hi - lo)/(n·ε)).

Replacing one record moves the clamped mean by at most (hi - lo)/n (replace-one relation), so the
release is ε-DP. The private-data posterior ``p(θ | s_dp)`` has no closed form (clamping makes
``s`` a mixed discrete/continuous variable and the noise is Laplace); :meth:`exact_posterior`
computes it by quadrature on a θ-grid (see :func:`private_likelihood`). It is the reference the
SMC-ABC tests compare against.

Units: the defaults (``clamp=(-2, 2)``, ``prior_mean=0``, ``prior_sd=1``, ``noise_sd=1``) describe
standardised data. For data in their own units (body-mass indices, incomes) give all four in those
units; :func:`prior_from_clamp` is the choice ``dpinfer release`` records from the public clamp
bounds alone (nothing confidential enters it).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from scipy import fft as sfft
from scipy.special import ndtr

from ...errors import InvalidDataError
from ...privacy.mechanisms.base import LaplaceMechanism
from ...privacy.validation import check_epsilon
from ...randomness import as_generator
from ...sizes import check_allocation
from ..contract import PrivateDataModel
from ..posteriors import GaussianPosterior, GridPosterior
from ..priors import GaussianPrior


def clipped_mean_lattice_pmf(
    theta: np.ndarray, n: int, lo: float, hi: float, sd: float, bins: int
) -> np.ndarray:
    """Distribution of the clamped mean on a lattice, for each θ.

    Each ``x_i`` is clamped to [lo, hi] and rounded to the lattice ``lo + j·h``, ``h = (hi-lo)/bins``:
    interior point ``j`` gets mass ``Φ((x_j + h/2 - θ)/sd) - Φ((x_j - h/2 - θ)/sd)``; the end points
    also receive the clamped tails (the atoms of the clamped normal). The n-fold convolution is
    computed by FFT. The rounding adds independent errors of variance ``h²/12`` per record, i.e. a
    standard deviation ``h/sqrt(12 n)`` on the mean, which vanishes as ``bins`` grows.

    Returns
    -------
    ndarray, shape (len(theta), n·bins + 1)
        ``pmf[t, k] = P(mean = lo + k·h/n | θ_t)``.
    """
    theta = np.atleast_1d(np.asarray(theta, dtype=np.float64))
    h = (hi - lo) / bins
    edges = lo + h * (np.arange(bins) + 0.5)  # upper edges of cells 0..bins-1
    cdf = ndtr((edges[None, :] - theta[:, None]) / sd)
    single = np.empty((theta.size, bins + 1))
    single[:, 0] = cdf[:, 0]
    single[:, 1:bins] = np.diff(cdf, axis=1)
    single[:, bins] = 1.0 - cdf[:, -1]
    length = n * bins + 1
    nfft = sfft.next_fast_len(length, real=True)
    spec = sfft.rfft(single, nfft, axis=1)
    pmf = sfft.irfft(spec**n, nfft, axis=1)[:, :length]
    return np.clip(pmf, 0.0, None)


def _coarse_bins(bins: int) -> int:
    """The lattice of a coarse pass that only places a fine grid: ten times coarser, at least 20
    cells. Coarser rounding adds noise to the mean, which widens the likelihood (never narrows it)."""
    return max(20, int(bins) // 10)


def prior_from_clamp(clamp: tuple[float, float]) -> dict[str, float]:
    """A weakly informative prior and record spread in the units of the clamp bounds.

    ``prior_mean`` is the centre of ``[lo, hi]`` and ``prior_sd`` its width, so the prior puts
    38% of its mass inside the clamp range and is nearly flat over it (a mean near a bound is not
    ruled out); ``noise_sd = (hi - lo)/4`` takes the range as about ±2 record sd (an
    assumption: set ``noise_sd`` when the records' spread is known). Only the public bounds are
    used, so the choice reveals nothing about the records.
    """
    lo, hi = (float(c) for c in clamp)
    return {"prior_mean": 0.5 * (lo + hi), "prior_sd": hi - lo, "noise_sd": 0.25 * (hi - lo)}


class GaussianMean(PrivateDataModel):
    """Mean of n clamped Gaussian observations released by the Laplace mechanism.

    Parameters
    ----------
    n
        Number of records.
    clamp
        (lo, hi): each record is clamped to this interval before averaging.
    epsilon
        Privacy level of the Laplace release (replace-one sensitivity (hi - lo)/n).
    prior_mean, prior_sd
        θ ~ N(prior_mean, prior_sd²), in the data's units (see :func:`prior_from_clamp`).
    noise_sd
        x_i ~ N(θ, noise_sd²): the records' spread, in the data's units.
    """

    name = "gaussian-mean"

    def __init__(
        self,
        n: int = 50,
        clamp: tuple[float, float] = (-2.0, 2.0),
        epsilon: float = 1.0,
        prior_sd: float = 1.0,
        noise_sd: float = 1.0,
        prior_mean: float = 0.0,
    ) -> None:
        if int(n) != n or n < 1:
            raise InvalidDataError(f"n must be a positive integer, got {n!r}.")
        lo, hi = (float(c) for c in clamp)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise InvalidDataError(f"clamp must be a finite interval (lo, hi) with lo < hi, got {clamp!r}.")
        for label, v in (("prior_sd", prior_sd), ("noise_sd", noise_sd)):
            if not (np.isfinite(v) and v > 0):
                raise InvalidDataError(f"{label} must be positive and finite, got {v!r}.")
        if not np.isfinite(prior_mean):
            raise InvalidDataError(f"prior_mean must be finite, got {prior_mean!r}.")
        self.n = int(n)
        check_allocation(f"GaussianMean with n={self.n} records per data set", self.n, 64)  # a batch of 64
        self.clamp = (lo, hi)
        self.epsilon = check_epsilon(epsilon)
        self.prior_mean = float(prior_mean)
        self.prior_sd = float(prior_sd)
        self.noise_sd = float(noise_sd)
        self.prior = GaussianPrior([self.prior_mean], [self.prior_sd**2])
        self.mechanism = LaplaceMechanism(
            1, (hi - lo) / self.n, self.epsilon, neighbouring="replace-one", bounds=([lo], [hi])
        )
        self.param_names = ("theta",)

    # -- simulation ---------------------------------------------------------------------------
    def simulate_data(self, theta: float, seed: Any = None) -> np.ndarray:
        """One confidential data set of n records at ``theta``."""
        return float(theta) + self.noise_sd * as_generator(seed).standard_normal(self.n)

    def record_columns(self) -> tuple[str, ...]:
        """One synthetic record is one value ``x`` (dpinfer.models.record_synthesis)."""
        return ("x",)

    def simulate_records(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One record x ~ N(θ, noise_sd²) per row of θ; shape (B, 1)."""
        return theta[:, :1] + self.noise_sd * rng.standard_normal((theta.shape[0], 1))

    def statistic(self, x: Any) -> np.ndarray:
        """The confidential statistic of a data set: the clamped mean, shape (1,)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n,) or not np.all(np.isfinite(x)):
            raise InvalidDataError(f"data must be {self.n} finite numbers, got shape {x.shape}.")
        return np.array([np.clip(x, *self.clamp).mean()])

    def simulate_confidential(self, theta: np.ndarray, seed: Any = None) -> np.ndarray:
        theta = self.prior.check_theta(theta)
        x = theta + self.noise_sd * as_generator(seed).standard_normal((theta.shape[0], self.n))
        return np.clip(x, *self.clamp).mean(axis=1, keepdims=True)

    # -- posteriors ---------------------------------------------------------------------------
    def private_likelihood(self, theta: Any, observed: Any, bins: int = 1000) -> np.ndarray:
        """``p(s_dp | θ) = Σ_k P(s = s_k | θ)·Lap(s_dp - s_k; b)`` on a θ-grid (quadrature).

        ``s_k`` runs over the lattice of :func:`clipped_mean_lattice_pmf`.
        """
        s_dp = float(self.check_observed(observed)[0])
        lo, hi = self.clamp
        theta = np.atleast_1d(np.asarray(theta, dtype=np.float64))
        out = np.empty(theta.size)
        support = lo + (hi - lo) * np.arange(self.n * bins + 1) / (self.n * bins)
        b = cast(LaplaceMechanism, self.mechanism).scale
        lap = np.exp(-np.abs(s_dp - support) / b) / (2 * b)
        for start in range(0, theta.size, 32):
            chunk = theta[start : start + 32]
            pmf = clipped_mean_lattice_pmf(chunk, self.n, lo, hi, self.noise_sd, bins)
            out[start : start + 32] = pmf @ lap
        return out

    def exact_posterior(self, observed: Any, grid_size: int = 801, bins: int = 1000) -> GridPosterior:
        """The private-data posterior ``p(θ | s_dp)`` by quadrature on a θ-grid.

        A coarse grid over the prior mean ± 10 prior sd locates the mass; a fine grid of ``grid_size`` points
        over the region where the density exceeds 1e-10 of its maximum then carries the answer.
        The coarse pass uses a lattice ten times coarser (``_coarse_bins``): it only places
        the region; the fine pass uses ``bins``. Each pass costs in proportion to ``bins``: the
        coarse one was a third of the time.
        """
        s_dp = self.check_observed(observed)
        coarse = self.prior_mean + np.linspace(-10 * self.prior_sd, 10 * self.prior_sd, 401)
        like = self.private_likelihood(coarse, s_dp, _coarse_bins(bins))
        logp = np.log(like + 1e-300) + self.prior.log_prob(coarse[:, None])
        keep = np.nonzero(logp > logp.max() - np.log(1e10))[0]
        a = coarse[max(keep[0] - 1, 0)]
        z = coarse[min(keep[-1] + 1, coarse.size - 1)]
        grid = np.linspace(a, z, int(grid_size))
        logp = np.log(self.private_likelihood(grid, s_dp, bins) + 1e-300) + self.prior.log_prob(grid[:, None])
        return GridPosterior(grid, logp)

    def naive_posterior(self, observed: Any) -> GaussianPosterior:
        """Plug ``s_dp`` in as if it were the mean of unclamped data (conjugate normal posterior).

        Ignores both the privacy noise and the clamping: the wrong posterior the paper warns about.
        """
        s_dp = float(self.check_observed(observed)[0])
        prec = 1.0 / self.prior_sd**2 + self.n / self.noise_sd**2
        mean = ((self.n / self.noise_sd**2) * s_dp + self.prior_mean / self.prior_sd**2) / prec
        return GaussianPosterior([mean], [[1.0 / prec]], self.param_names)

    def confidential_posterior(self, s: Any, grid_size: int = 801, bins: int = 1000) -> GridPosterior:
        """``p(θ | s)`` for the confidential clamped mean ``s`` (no privacy noise), on a grid.

        A coarse grid of 2001 points over the prior mean ± 10 prior sd, on a lattice ten times
        coarser (``_coarse_bins``), places a fine grid of ``grid_size`` points, on which the
        lattice pmf with ``bins`` gives the answer.
        """
        s = float(np.asarray(s, dtype=np.float64).reshape(-1)[0])
        lo, hi = self.clamp
        if not lo <= s <= hi:
            raise InvalidDataError(f"a clamped mean lies in [{lo}, {hi}], got {s}.")
        k = int(round((s - lo) / (hi - lo) * self.n * bins))
        grid = self.prior_mean + np.linspace(-10 * self.prior_sd, 10 * self.prior_sd, 2001)
        coarse_bins = _coarse_bins(bins)
        kc = int(round((s - lo) / (hi - lo) * self.n * coarse_bins))
        like = np.concatenate(
            [
                clipped_mean_lattice_pmf(grid[i : i + 32], self.n, lo, hi, self.noise_sd, coarse_bins)[:, kc]
                for i in range(0, grid.size, 32)
            ]
        )
        logp = np.log(like + 1e-300) + self.prior.log_prob(grid[:, None])
        keep = np.nonzero(logp > logp.max() - np.log(1e10))[0]
        fine = np.linspace(grid[max(keep[0] - 1, 0)], grid[min(keep[-1] + 1, grid.size - 1)], grid_size)
        like = np.concatenate(
            [
                clipped_mean_lattice_pmf(fine[i : i + 32], self.n, lo, hi, self.noise_sd, bins)[:, k]
                for i in range(0, fine.size, 32)
            ]
        )
        return GridPosterior(fine, np.log(like + 1e-300) + self.prior.log_prob(fine[:, None]))
