"""Loaders for the data shipped for ABCDP: COVID-19 NL counts and San Francisco TB data."""

from __future__ import annotations

import numpy as np

from .files import data_path


def load_covid_nl() -> tuple[np.ndarray, np.ndarray]:
    """Cumulative confirmed COVID-19 cases in the Netherlands, 18 values (see DATA.md).

    Returns
    -------
    day : ndarray of int, shape (18,)
        Day index 0..17 (27 Feb 2020 onwards, as stated by the source).
    cumulative_cases : ndarray of float, shape (18,)
    """
    arr = np.loadtxt(data_path("covid19_netherlands_cumulative_abcdp.csv"), delimiter=",", skiprows=1)
    return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.float64)


def load_tb_sanfrancisco() -> tuple[np.ndarray, np.ndarray]:
    """San Francisco Bay TB genotype data (Small et al. 1994, as used by Lintusaari et al. 2019).

    Returns
    -------
    cluster_sizes : ndarray of int, shape (326,)
        The size of every observed cluster (473 cases in 326 clusters; largest 30).
    largest_cluster_months : ndarray of int, shape (30,)
        Observation month (0..23) of each case of the largest cluster.
    """
    sizes = np.loadtxt(
        data_path("tb_sanfrancisco_cluster_sizes.csv"), delimiter=",", skiprows=1, dtype=np.int64
    )
    months = np.loadtxt(
        data_path("tb_sanfrancisco_largest_cluster_obs_months.csv"), delimiter=",", skiprows=1, dtype=np.int64
    )
    cluster_sizes = np.repeat(sizes[:, 0], sizes[:, 1])
    return cluster_sizes, months[:, 1]
