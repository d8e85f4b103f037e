"""Loaders for the synthetic private-data sets (linear regression, SIR, naive Bayes).

The confidential data are synthetic, generated from fixed seeds with the designs of Xiong et al.
(2025) and Ju et al. (2022); the released statistics were produced by dpinfer's own mechanisms
with operating-system privacy noise (``examples/private_data/make_data.py``). Provenance in
``DATA.md``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from .files import data_path


@dataclass(frozen=True)
class PrivateDataSet:
    """A confidential statistic and its releases at several privacy levels."""

    name: str
    confidential: np.ndarray
    released: dict[float, np.ndarray]
    truth: tuple[float, ...]
    notes: str = ""

    def observed(self, epsilon: float) -> np.ndarray:
        """The released statistic at ``epsilon`` (clear error if there is none)."""
        for eps, value in self.released.items():
            if np.isclose(eps, epsilon):
                return value.copy()
        raise KeyError(f"{self.name}: no release at epsilon={epsilon}; available: {sorted(self.released)}.")


def _rows(name: str) -> list[list[str]]:
    with open(data_path(name), newline="") as fh:
        return list(csv.reader(fh))


def load_linreg_confidential() -> tuple[np.ndarray, np.ndarray]:
    """The synthetic confidential regression data: x (100, 2), y (100,), unclamped."""
    arr = np.loadtxt(data_path("linreg_confidential_n100.csv"), delimiter=",", skiprows=1)
    return arr[:, :2], arr[:, 2]


def load_linreg() -> PrivateDataSet:
    """Linear regression: confidential statistic (clamped, mean scale) and Laplace releases.

    Released at ε ∈ {10, 1, 0.1} with the replace-one sensitivity 15/n (n = 100). True
    β = (-1.79497, -2.889, -0.66203), σ² = 2, x ~ N((0.90014, -1.17335), I).
    """
    from ..models.shipped.linreg import LinearRegression

    x, y = load_linreg_confidential()
    s = LinearRegression(x_mean=(0.90014, -1.17335)).statistic(x, y)
    rows = _rows("linreg_released.csv")[1:]
    released = {float(r[0]): np.array([float(v) for v in r[2:]]) for r in rows}
    return PrivateDataSet(
        "linreg-synthetic",
        s,
        released,
        (-1.79497, -2.889, -0.66203),
        "sensitivity 15/n (replace-one); x_mean (0.90014, -1.17335)",
    )


def load_sir_synthetic() -> PrivateDataSet:
    """SIR: one epidemic (K = 10^6, θ = (-0.5, -3)) and its Prop. 4 releases (N = 1000)."""
    rows = _rows("sir_synthetic.csv")
    conf = np.array([float(v) for v in rows[1][4:]])
    released = {float(r[1]): np.array([float(v) for v in r[4:]]) for r in rows[2:]}
    return PrivateDataSet(
        "sir-synthetic",
        conf,
        released,
        (-0.5, -3.0),
        "K = 10^6, I0 = 1, times 0, 17, ..., 153; N = 1000, M = N d / epsilon",
    )


def load_naive_bayes_synthetic() -> PrivateDataSet:
    """Naive Bayes (2 classes x 2 binary features, n = 100): cell proportions and a release at ε = 1."""
    rows = _rows("naive_bayes_synthetic.csv")
    conf = np.array([float(v) for v in rows[1][2:]])
    released = {float(r[1]): np.array([float(v) for v in r[2:]]) for r in rows[2:]}
    p = np.array([0.3887, 0.7537, 0.6534, 0.5834, 0.8489])
    return PrivateDataSet(
        "naive-bayes-synthetic",
        conf,
        released,
        tuple(np.log(p / (1 - p))),
        "truth on the logit scale: (p11, p12, p21, p22, p_class1)",
    )
