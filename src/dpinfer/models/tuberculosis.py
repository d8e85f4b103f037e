"""Tuberculosis transmission: the stochastic birth-death model of Lintusaari et al. (2019).

"Resolving outbreak dynamics using approximate Bayesian computation for stochastic birth-death
models" (Wellcome Open Research 4:14), as packaged in ELFI and used by ABCDP (Park et al. 2021,
Section 6.3; METHODS.md §1.4).

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

Implementation: compiled (numba) Gillespie simulation with one array of cluster labels per
population, so choosing "a cluster with probability proportional to its size" is choosing a
uniform host, O(1) per event. Differences from ELFI that do not change the model: random draws
are made in a different order; ties for the largest cluster go to the earliest cluster; the
4 largest sizes are clipped at ``cluster_size_bound`` (ELFI reads them from a histogram that
stops there).

Prior (ELFI ``JointPrior`` with the ABCDP settings): burden ~ N(200, variance 30);
R1 ~ U(1.01, 20); t1 ~ U(0.01, 30); R2 = U(0.01, 1)·(1 - 0.05 R1)/0.95; (R1, t1, R2) are
redrawn until the analytical mean number of observed cases per year lies in (0, 350) and
a1 < 40.
"""

# numba's legacy np.random functions are used on purpose inside the compiled simulator: their
# state is thread-local and seeded per data set, which makes parallel runs reproducible.
# ruff: noqa: NPY002

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ..distances.clipped import ClippedDistance
from ..errors import InvalidDataError

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


# --------------------------------------------------------------------------------------------
# compiled simulator
# --------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _grow(a: np.ndarray, n: int) -> np.ndarray:  # pragma: no cover - jitted
    if n < a.shape[0]:
        return a
    b = np.empty(max(2 * a.shape[0], n + 1), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(cache=True)
def _simulate_one(
    burden: float,
    a0: float,
    d0: float,
    a1: float,
    d1: float,
    m_c: float,
    m_nc: float,
    p_c: float,
    p_obs: float,
    t_obs: float,
    warm_min: float,
    warm_max: float,
    size_bound: int,
    seed: int,
    out: np.ndarray,
) -> None:  # pragma: no cover - jitted
    """One data set's 8 summaries into ``out``; randomness from numba's thread-local generator
    seeded with ``seed`` (so the result does not depend on which thread runs it)."""
    np.random.seed(seed)
    host = [np.empty(256, dtype=np.int64), np.empty(256, dtype=np.int64)]  # [nc, c]
    obs_count = np.zeros(1024, dtype=np.int64)
    ev_cluster = np.empty(1024, dtype=np.int64)
    ev_time = np.empty(1024, dtype=np.float64)
    n_months = int(round(t_obs * 12))
    months = np.zeros(n_months, dtype=np.int64)
    n_pop = np.zeros(2, dtype=np.int64)  # [nc, c]
    n_clusters_total = 0
    n_ev = 0
    time = 0.0
    t_warm = np.inf
    years = 0
    c_unreached = True
    nc_unreached = True
    phase = 0  # 0: finding the warm-up length, 1: warm-up + observation
    target = 0.0
    while True:
        if phase == 0:
            if time >= target:
                # one more year, unless both equilibria are reached or the cap is hit
                if years > 0:
                    if n_pop[1] >= m_c:
                        c_unreached = False
                    if n_pop[0] >= m_nc:
                        nc_unreached = False
                if years < warm_max / 2 and (c_unreached or nc_unreached):
                    years += 1
                    target = float(years)
                else:
                    t_warm = max(2.0 * years, warm_min)
                    phase = 1
                    continue
        r_trans_c = a0 * n_pop[1]
        r_death_c = d0 * n_pop[1]
        r_trans_nc = a1 * n_pop[0]
        r_death_nc = d1 * n_pop[0]
        total = burden + r_trans_c + r_death_c + r_trans_nc + r_death_nc
        dt = np.random.exponential(1.0 / total)
        if phase == 1 and time + dt >= t_warm + t_obs:
            break
        time += dt
        u = np.random.random() * total
        if u < burden:
            k = n_clusters_total
            n_clusters_total += 1
            obs_count = _grow(obs_count, n_clusters_total)
            obs_count[k] = 0
            pop = 1 if np.random.random() <= p_c else 0
            host[pop] = _grow(host[pop], n_pop[pop] + 1)
            host[pop][n_pop[pop]] = k
            n_pop[pop] += 1
        else:
            if u < burden + r_trans_c:
                src, death = 1, False
            elif u < burden + r_trans_c + r_death_c:
                src, death = 1, True
            elif u < burden + r_trans_c + r_death_c + r_trans_nc:
                src, death = 0, False
            else:
                src, death = 0, True
            i = int(np.random.random() * n_pop[src])
            if i >= n_pop[src]:
                i = n_pop[src] - 1
            k = host[src][i]
            if death:
                observe = time >= t_warm and np.random.random() <= p_obs
                n_pop[src] -= 1
                host[src][i] = host[src][n_pop[src]]
                if observe:
                    obs_count[k] += 1
                    ev_cluster = _grow(ev_cluster, n_ev + 1)
                    ev_time = _grow(ev_time, n_ev + 1)
                    ev_cluster[n_ev] = k
                    ev_time[n_ev] = time - t_warm
                    n_ev += 1
            else:
                pop = 1 if np.random.random() <= p_c else 0
                host[pop] = _grow(host[pop], n_pop[pop] + 1)
                host[pop][n_pop[pop]] = k
                n_pop[pop] += 1
    # ---- summaries ----
    n_obs = 0
    n_cl = 0
    c1 = 0
    c2 = 0
    top = np.zeros(4, dtype=np.int64)
    largest_id = -1
    largest = 0
    for k in range(n_clusters_total):
        v = obs_count[k]
        if v > 0:
            n_obs += v
            n_cl += 1
            if v == 1:
                c1 += 1
            elif v == 2:
                c2 += 1
            if v > largest:
                largest = v
                largest_id = k
            vv = min(v, size_bound)
            for j in range(4):  # insert into the 4 largest (descending)
                if vv > top[j]:
                    for jj in range(3, j, -1):
                        top[jj] = top[jj - 1]
                    top[j] = vv
                    break
    if largest_id >= 0:
        for e in range(n_ev):
            if ev_cluster[e] == largest_id:
                mth = int(ev_time[e] * 12.0)
                if mth >= n_months:
                    mth = n_months - 1
                months[mth] += 1
    first = -1
    last = -1
    n_mo = 0
    for mth in range(n_months):
        if months[mth] > 0:
            n_mo += 1
            if first < 0:
                first = mth
            last = mth
    period = (last - first + 1) if first >= 0 else n_months
    out[0] = n_obs
    out[1] = n_cl
    out[2] = largest
    out[3] = (top[0] - top[3]) / 3.0
    out[4] = c1
    out[5] = c2
    out[6] = period
    out[7] = n_mo


@numba.njit(inline="always")
def _simulate_cell(
    b, s, rates, means, seeds, p_c, p_obs, t_obs, warm_min, warm_max, size_bound, out
):  # pragma: no cover - jitted
    """Data set ``s`` of parameter draw ``b``."""
    _simulate_one(
        rates[b, 0],
        rates[b, 1],
        rates[b, 2],
        rates[b, 3],
        rates[b, 4],
        means[b, 0],
        means[b, 1],
        p_c,
        p_obs,
        t_obs,
        warm_min,
        warm_max,
        size_bound,
        seeds[b, s],
        out[b, s],
    )


@numba.njit(cache=True)
def _simulate_batch(
    rates, means, seeds, p_c, p_obs, t_obs, warm_min, warm_max, size_bound, out
):  # pragma: no cover - jitted
    for b in range(rates.shape[0]):
        for s in range(seeds.shape[1]):
            _simulate_cell(b, s, rates, means, seeds, p_c, p_obs, t_obs, warm_min, warm_max, size_bound, out)


@numba.njit(cache=True, parallel=True)
def _simulate_batch_parallel(
    rates, means, seeds, p_c, p_obs, t_obs, warm_min, warm_max, size_bound, out
):  # pragma: no cover
    n_sets = seeds.shape[1]
    for q in numba.prange(rates.shape[0] * n_sets):
        _simulate_cell(
            q // n_sets,
            q % n_sets,
            rates,
            means,
            seeds,
            p_c,
            p_obs,
            t_obs,
            warm_min,
            warm_max,
            size_bound,
            out,
        )


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
        kernel = _simulate_batch_parallel if self.parallel else _simulate_batch
        kernel(
            rates,
            means,
            seeds,
            self.p_compliance,
            self.p_observed,
            self.t_obs,
            self.warmup_bounds[0],
            self.warmup_bounds[1],
            self.cluster_size_bound,
            out,
        )
        return out

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
    from ..datasets.abcdp_data import load_tb_sanfrancisco

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
