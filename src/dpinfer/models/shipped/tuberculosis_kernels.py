"""Compiled simulator of the tuberculosis birth-death model (:mod:`dpinfer.models.shipped.tuberculosis`).

Gillespie simulation with one array of cluster labels per population (non-compliant, compliant),
so choosing "a cluster with probability proportional to its size" is choosing a uniform host, O(1)
per event; then the 8 summaries of the observed deaths. :func:`simulate_batch` fills a
``(B, n, 8)`` array, one data set per (parameter draw, seed) cell, serially or on all cores.
"""

# numba's legacy np.random functions are used on purpose inside the compiled simulator: their
# state is thread-local and seeded per data set, which makes parallel runs reproducible.
# ruff: noqa: NPY002

from __future__ import annotations

import numba
import numpy as np


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
def _simulate_cell(q, rates, means, seeds, params, size_bound, out):  # pragma: no cover - jitted
    """Cell ``q`` in row-major order: data set ``q % n`` of parameter draw ``q // n``."""
    b = q // seeds.shape[1]
    s = q % seeds.shape[1]
    r = rates[b]
    c = params  # p_compliance, p_observed, t_obs, warm-up min, warm-up max
    _simulate_one(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        means[b, 0],
        means[b, 1],
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        size_bound,
        seeds[b, s],
        out[b, s],
    )


@numba.njit(cache=True)
def _simulate_serial(rates, means, seeds, params, size_bound, out):  # pragma: no cover - jitted
    for q in range(seeds.size):
        _simulate_cell(q, rates, means, seeds, params, size_bound, out)


@numba.njit(cache=True, parallel=True)
def _simulate_parallel(rates, means, seeds, params, size_bound, out):  # pragma: no cover - jitted
    for q in numba.prange(seeds.size):
        _simulate_cell(q, rates, means, seeds, params, size_bound, out)


def simulate_batch(
    rates: np.ndarray,
    means: np.ndarray,
    seeds: np.ndarray,
    p_compliance: float,
    p_observed: float,
    t_obs: float,
    warmup_bounds: tuple[float, float],
    size_bound: int,
    out: np.ndarray,
    parallel: bool = False,
) -> np.ndarray:
    """Simulate every (parameter draw, data set) cell into ``out`` and return it.

    Parameters
    ----------
    rates, means
        Per parameter draw: (burden, a2, d2, a1, d1), shape ``(B, 5)``, and the equilibrium mean
        sizes (n_c, n_nc, ...), shape ``(B, >= 2)``.
    seeds
        One seed per data set, shape ``(B, n)``: each data set's result depends on its seed only.
    p_compliance, p_observed, t_obs, warmup_bounds, size_bound
        The model's constants (:class:`~dpinfer.models.shipped.tuberculosis.Tuberculosis`).
    out
        ``(B, n, 8)`` float array for the summaries.
    parallel
        Run the cells on all cores (numba threads); the result is the same either way.
    """
    params = np.array([p_compliance, p_observed, t_obs, warmup_bounds[0], warmup_bounds[1]], dtype=np.float64)
    kernel = _simulate_parallel if parallel else _simulate_serial
    kernel(rates, means, seeds, params, int(size_bound), out)
    return out
