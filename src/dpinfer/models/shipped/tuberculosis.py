"""Tuberculosis transmission: the stochastic birth-death model of Lintusaari et al. (2019).

"Resolving outbreak dynamics using approximate Bayesian computation for stochastic birth-death
models" (Wellcome Open Research 4:14), as packaged in ELFI and used by ABCDP (Park et al. 2021,
Section 6.3; the ABCDP authors' code (Park, Vinaroz & Jitkrittum 2021)).

Process (time in years). Active TB hosts are compliant (c) or non-compliant (nc) with therapy.
Events and rates:

* a new cluster (reactivation or immigration, a new genotype) appears at rate ``burden``; its
  host is compliant with probability 0.95;
* a host of population k transmits at rate a_k·n_k: the new host joins the cluster of a
  uniformly chosen host of that population and is compliant with probability 0.95;
* a host of population k "dies" (recovers, leaves) at rate d_k·n_k; during the observation
  period a death is observed with probability 0.8, which records the host's cluster and time.

Parameters θ = (R1, t1, R2, burden): compliant rates a2 = R2·d2, d2 = 5.95 (fixed);
non-compliant d1 = t1/|R1 - 1|, a1 = t1 + d1. Warm-up: advance year by year until both
population sizes reach their analytical equilibrium means (at most warmup_max/2 years), then
set the warm-up length to max(2·years, 15); observe for t_obs = 2 years.

Summaries of one data set (8 numbers, :data:`SUMMARY_NAMES`): number of observed cases, of
clusters, size of the largest cluster, mean successive difference of the 4 largest cluster
sizes, numbers of clusters of size 1 and 2, observation period (months from first to last
month with an observation of the largest cluster) and number of months with an observation of
the largest cluster. The weighted distance (ELFI ``operations.distance``) is
||[Δn_obs, Δn_clusters, 2Δlargest, 10Δmean_diff, 100 dc1, 100 dc2, 10Δperiod, 10Δmonths]||,
dc_k the relative error of (clusters of size k)/n_obs.

Implementation (:mod:`dpinfer.models.shipped.tuberculosis_kernels`): compiled (numba) Gillespie
simulation with one array of cluster labels per population, so choosing "a cluster with
probability proportional to its size" is choosing a uniform host, O(1) per event. Differences
from ELFI that do not change the model: random draws are made in a different order; ties for the
largest cluster go to the earliest cluster; the 4 largest sizes are clipped at
``cluster_size_bound`` (ELFI reads them from a histogram that stops there).

Prior (ELFI ``JointPrior`` with the ABCDP settings): burden ~ N(200, variance 30);
R1 ~ U(1.01, 20); t1 ~ U(0.01, 30); R2 = U(0.01, 1)·(1 - 0.05 R1)/0.95; (R1, t1, R2) are
redrawn until the analytical mean number of observed cases per year lies in (0, 350) and
a1 < 40.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...distances.clipped import ClippedDistance
from ...errors import InvalidDataError
from ..smc_prior import SMCPrior, identity
from .tuberculosis_kernels import simulate_batch

SUMMARY_NAMES = (
    "n_obs",
    "n_clusters",
    "largest",
    "mean_largest_diff",
    "clusters_size1",
    "clusters_size2",
    "obs_period",
    "n_obs_months",
)
THETA_TRUE = np.array([5.88, 6.74, 0.09, 192.0])  # R1, t1, R2, burden (Lintusaari et al., Table 2)
D2 = 5.95


def rates_from_theta(theta: Any, d2: float = D2) -> np.ndarray:
    """(burden, a2, d2, a1, d1) for each row θ = (R1, t1, R2, burden); shape (B, 5)."""
    th = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    r1, t1, r2, burden = th[:, 0], th[:, 1], th[:, 2], th[:, 3]
    d1 = t1 / np.abs(r1 - 1.0)
    a1 = t1 + d1
    return np.stack([burden, r2 * d2, np.full_like(r1, d2), a1, d1], axis=1)


def analytical_means(rates: np.ndarray, p_compliance: float = 0.95, p_observed: float = 0.8) -> np.ndarray:
    """Equilibrium mean sizes (n_c, n_nc) and mean observed cases per year; shape (B, 3)."""
    burden, a0, d0, a1, d1 = (rates[:, i] for i in range(5))
    q = 1.0 - p_compliance
    with np.errstate(divide="ignore", invalid="ignore"):
        n_nc = burden * d0 * q / (d0 * d1 - a0 * d1 * p_compliance - a1 * d0 * q)
        n_c = (n_nc * (d1 - a1 * q) - burden * q) / (a0 * q)
        n_obs = (n_c * d0 + n_nc * d1) * p_observed
    return np.stack([n_c, n_nc, n_obs], axis=1)


def tb_distance(observed: np.ndarray, sims: np.ndarray) -> np.ndarray:
    """ELFI's weighted distance between summary vectors, per data set; (n, 8), (B, n, 8) -> (B, n).

    NaN/inf (a relative error with a zero denominator) are left to the clipping of
    :class:`~dpinfer.distances.ClippedDistance`, which maps them to the clip bound.
    """
    obs = np.asarray(observed, dtype=np.float64)[None]
    sim = np.asarray(sims, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        true_rel = obs[..., 4:6] / obs[..., 0:1]
        dc = (sim[..., 4:6] / sim[..., 0:1] - true_rel) / true_rel
        parts = np.concatenate(
            [
                sim[..., 0:2] - obs[..., 0:2],
                2.0 * (sim[..., 2:3] - obs[..., 2:3]),
                10.0 * (sim[..., 3:4] - obs[..., 3:4]),
                100.0 * dc,
                10.0 * (sim[..., 6:8] - obs[..., 6:8]),
            ],
            axis=-1,
        )
        return np.sqrt(np.sum(parts**2, axis=-1))


class Tuberculosis:
    """TB birth-death model; a simulation is ``n_datasets`` independent data sets' summaries.

    Parameters
    ----------
    n_datasets
        n, the number of data sets per simulation (the ABCDP set-up compares n pseudo data
        sets with n observed ones; Δρ = clip/n).
    parallel
        Simulate the data sets on all cores (numba threads). Every data set has its own seed
        drawn from the simulation generator, so results are identical with and without it.
    """

    name = "tuberculosis"
    param_names = ("R1", "t1", "R2", "burden")
    summary_names = SUMMARY_NAMES

    def __init__(
        self,
        n_datasets: int = 100,
        p_compliance: float = 0.95,
        p_observed: float = 0.8,
        t_obs: float = 2.0,
        warmup_bounds: tuple[float, float] = (15.0, 300.0),
        cluster_size_bound: int = 80,
        mean_obs_bounds: tuple[float, float] = (0.0, 350.0),
        t1_bound: float = 30.0,
        a1_bound: float = 40.0,
        d2: float = D2,
        parallel: bool = False,
    ) -> None:
        if int(n_datasets) < 1:
            raise InvalidDataError(f"n_datasets must be >= 1, got {n_datasets!r}.")
        self.n_datasets = int(n_datasets)
        self.p_compliance = float(p_compliance)
        self.p_observed = float(p_observed)
        self.t_obs = float(t_obs)
        self.warmup_bounds = (float(warmup_bounds[0]), float(warmup_bounds[1]))
        self.cluster_size_bound = int(cluster_size_bound)
        self.mean_obs_bounds = mean_obs_bounds
        self.t1_bound = float(t1_bound)
        self.a1_bound = float(a1_bound)
        self.d2 = float(d2)
        self.parallel = bool(parallel)
        self.theta_true = THETA_TRUE.copy()

    # -- prior ---------------------------------------------------------------------------------
    def _admissible(self, theta: np.ndarray) -> np.ndarray:
        rates = rates_from_theta(theta, self.d2)
        m_obs = analytical_means(rates, self.p_compliance, self.p_observed)[:, 2]
        lo, hi = self.mean_obs_bounds
        return (m_obs > lo) & (m_obs < hi) & (rates[:, 3] < self.a1_bound)

    def smc_prior(self) -> SMCPrior:
        """The joint prior of :meth:`prior_sample` in θ's own coordinates: uniform R1, t1 and R2
        (the latter on (0.01 s, s), s = (1 - R1 (1 - p_c))/p_c), burden N(200, 30), restricted to
        the admissible region (ELFI's rejection)."""
        p_c = self.p_compliance

        def log_density(z: np.ndarray) -> np.ndarray:
            r1, t1, r2, burden = z.T
            s = (1.0 - r1 * (1.0 - p_c)) / p_c
            ok = (r1 > 1.01) & (r1 < 1.0 / (1.0 - p_c)) & (t1 > 0.01) & (t1 < self.t1_bound)
            ok &= (s > 0) & (r2 > 0.01 * s) & (r2 < s)
            out = np.full(z.shape[0], -np.inf)
            if np.any(ok):
                good = np.flatnonzero(ok)
                good = good[self._admissible(z[good])]
                out[good] = -np.log(0.99 * s[good]) - (burden[good] - 200.0) ** 2 / 60.0
            return out

        return SMCPrior(self.prior_sample, identity, identity, log_density)

    def prior_sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """θ = (R1, t1, R2, burden) from the joint prior (with ELFI's rejection); shape (n, 4)."""
        burden = 200.0 + math.sqrt(30.0) * rng.standard_normal(n)
        out = np.empty((n, 4))
        todo = np.arange(n)
        r1_bound = 1.0 / (1.0 - self.p_compliance)
        while todo.size:
            m = todo.size
            r1 = rng.uniform(1.01, r1_bound, m)
            t1 = rng.uniform(0.01, self.t1_bound, m)
            r2 = rng.uniform(0.01, 1.0, m) * (1.0 - r1 * (1.0 - self.p_compliance)) / self.p_compliance
            cand = np.stack([r1, t1, r2, burden[todo]], axis=1)
            ok = self._admissible(cand)
            out[todo[ok]] = cand[ok]
            todo = todo[~ok]
        return out

    # -- simulator -----------------------------------------------------------------------------
    def simulate(self, theta: Any, rng: np.random.Generator, n_datasets: int | None = None) -> np.ndarray:
        """Summaries of ``n_datasets`` independent data sets per θ; shape (B, n_datasets, 8)."""
        th = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        if th.shape[1] != 4 or not np.all(np.isfinite(th)):
            raise InvalidDataError(
                f"theta must be finite with shape (B, 4) = (R1, t1, R2, burden), got {th.shape}."
            )
        n = self.n_datasets if n_datasets is None else int(n_datasets)
        rates = rates_from_theta(th, self.d2)
        means = analytical_means(rates, self.p_compliance, self.p_observed)
        out = np.empty((th.shape[0], n, len(SUMMARY_NAMES)))
        seeds = rng.integers(0, 2**31 - 1, size=(th.shape[0], n))
        return simulate_batch(
            rates,
            means,
            seeds,
            self.p_compliance,
            self.p_observed,
            self.t_obs,
            self.warmup_bounds,
            self.cluster_size_bound,
            out,
            self.parallel,
        )

    def observed(self, seed: int = 0, n_datasets: int | None = None, theta: Any = None) -> np.ndarray:
        """n data sets simulated at the true parameters (the ABCDP set-up); shape (n, 8)."""
        th = self.theta_true if theta is None else np.asarray(theta, dtype=np.float64)
        return self.simulate(th[None], np.random.default_rng(seed), n_datasets)[0]

    @staticmethod
    def sanfrancisco() -> np.ndarray:
        """The San Francisco data as observed summaries of one data set; shape (1, 8).

        Use with ``Tuberculosis(n_datasets=1)``; the clipped query then has Δρ = clip/1.
        """
        return sanfrancisco_summaries()

    def distance(self, clip: float = 200.0) -> ClippedDistance:
        """The ABCDP query: mean over data sets of min(tb_distance, clip); Δρ = clip/n."""
        return ClippedDistance(tb_distance, clip)


def sanfrancisco_summaries() -> np.ndarray:
    """The 8 summaries of the San Francisco data (one data set); shape (1, 8)."""
    from ...datasets.abcdp_data import load_tb_sanfrancisco

    sizes, months = load_tb_sanfrancisco()
    top = np.sort(sizes)[::-1][:4]
    hist = np.bincount(months, minlength=24)
    nz = np.flatnonzero(hist)
    return np.array(
        [
            [
                sizes.sum(),
                sizes.size,
                sizes.max(),
                (top[0] - top[3]) / 3.0,
                np.sum(sizes == 1),
                np.sum(sizes == 2),
                nz[-1] - nz[0] + 1,
                nz.size,
            ]
        ],
        dtype=np.float64,
    )
