"""Synthetic data from a released posterior: posterior-predictive records, no privacy cost.

A differentially private posterior (ABCDP's accepted θ, a DPVI fit, a posterior given a privatised
statistic) is a release; drawing θ from it and simulating data from the model at θ touches the
confidential data only through that release, so by the post-processing property of differential
privacy (Dwork & Roth 2014, Proposition 2.1) the synthetic data carry exactly the release's
(ε, δ) guarantee and cost nothing more. This is the "synthetic data as a by-product" of Park,
Vinaroz & Jitkrittum (2021, §7).

Each synthetic *record* is an independent draw from the posterior predictive: θ_i ~ released
posterior, then one record y_i ~ p(y | θ_i). What a record is depends on the model
(:func:`record_simulator`): one point of the mixture of uniforms, a whole 18-day curve for the
COVID polynomial (the data are one series), one (x1, x2, y) row of the regression model, one
value of the Gaussian-mean model, or one (covariates, label) row of a DPVI logistic regression
whose covariates the caller supplies (they must be public: they are copied, not protected).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..privacy.report import PrivacyReport

#: What the privacy report of every synthetic data set says about its cost.
POST_PROCESSING = (
    "post-processing of the released posterior (Dwork & Roth 2014, Prop. 2.1): no further privacy "
    "cost; the synthetic data carry the release's guarantee"
)

RecordSimulator = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass
class SyntheticData:
    """Synthetic records and the facts of the release they came from.

    Attributes
    ----------
    records
        Array (n, n_columns) of synthetic records.
    columns
        Column names of ``records``.
    thetas
        The θ each record was simulated at, (n, p).
    source_privacy
        The privacy report of the release (``None`` for a non-private posterior).
    source
        What the release was (result class and model).
    """

    records: np.ndarray
    columns: tuple[str, ...]
    thetas: np.ndarray
    source_privacy: PrivacyReport | None
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.records.shape[0])

    def privacy_report(self) -> dict[str, Any]:
        """The release's guarantee, the additional cost (0) and why."""
        p = self.source_privacy
        return {
            "epsilon": None if p is None else p.epsilon,
            "delta": None if p is None else p.delta,
            "accountant": None if p is None else p.accountant,
            "additional_epsilon": 0.0,
            "additional_delta": 0.0,
            "post_processing": True,
            "note": POST_PROCESSING if p is not None else "the source posterior was not private",
        }

    def summary(self) -> str:
        rep = self.privacy_report()
        head = f"{self.n} synthetic records, columns {', '.join(self.columns)}"
        if rep["epsilon"] is None:
            return head + "\n  source posterior not private"
        return head + f"\n  ({rep['epsilon']:.6g}, {rep['delta']:.3g})-DP as released; {POST_PROCESSING}"

    def to_csv(self, path: str | Path) -> Path:
        """Write the records with a header row; returns the path."""
        path = Path(path)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(self.columns)
            w.writerows(self.records.tolist())
        return path


def check_n(n: Any) -> int:
    """n must be an integer >= 1."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer, float)) or int(n) != n or int(n) < 1:
        raise InvalidDataError(f"n (the number of synthetic records) must be an integer >= 1, got {n!r}.")
    return int(n)


def synthesize(
    thetas: np.ndarray,
    simulate: RecordSimulator,
    columns: tuple[str, ...],
    seed: Any,
    source_privacy: PrivacyReport | None,
    source: dict[str, Any] | None = None,
) -> SyntheticData:
    """One posterior-predictive record per row of ``thetas`` (drawn from the released posterior).

    ``seed`` (an int or a numpy ``SeedSequence``) governs only the public simulation randomness:
    the same release, θ draws and seed give the same records.
    """
    thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
    rng = np.random.default_rng(seed)
    records = np.asarray(simulate(thetas, rng), dtype=np.float64).reshape(thetas.shape[0], -1)
    if records.shape[1] != len(columns):
        raise InvalidDataError(f"the simulator gave {records.shape[1]} columns, expected {len(columns)}.")
    return SyntheticData(records, tuple(columns), thetas, source_privacy, dict(source or {}))


def synthesize_from(
    posterior: Any, n: Any, seed: Any, model: Any, covariates: Any = None
) -> SyntheticData:
    """``n`` posterior-predictive records from a result with ``sample(n, seed)`` and ``privacy``.

    The θ draws and the simulations use two independent streams spawned from ``seed``.
    """
    n = check_n(n)
    if model is None:
        raise InvalidDataError(
            "the model to simulate from is not known for this result: pass model=... (the model the "
            "posterior was computed for)."
        )
    simulate, columns = record_simulator(model, covariates)
    theta_seed, sim_seed = np.random.SeedSequence(seed).spawn(2)
    thetas = posterior.sample(n, np.random.default_rng(theta_seed))
    source = {"result": type(posterior).__name__, "model": type(model).__name__}
    return synthesize(thetas, simulate, columns, sim_seed, getattr(posterior, "privacy", None), source)


def record_simulator(model: Any, covariates: Any = None) -> tuple[RecordSimulator, tuple[str, ...]]:
    """``(simulate(thetas, rng) -> records, column names)`` for a supported model.

    Raises
    ------
    InvalidDataError
        For a model without a record-level simulator here (e.g. SIR, tuberculosis).
    """
    from .shipped.covid import CovidPolynomial
    from .shipped.gaussian_mean import GaussianMean
    from .shipped.linreg import LinearRegression
    from .shipped.mixture_uniform import MixtureOfUniforms

    if isinstance(model, MixtureOfUniforms):
        return (lambda th, rng: model.simulate(th, rng, n_points=1)[:, 0, :]), ("y",)
    if isinstance(model, CovidPolynomial):
        return (lambda th, rng: model.curve(th)), tuple(f"day_{t}" for t in range(model.n_days))
    if isinstance(model, GaussianMean):
        return (lambda th, rng: th[:, :1] + model.noise_sd * rng.standard_normal((th.shape[0], 1))), ("x",)
    if isinstance(model, LinearRegression):

        def linreg(th: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            x = model.x_mean + rng.standard_normal((th.shape[0], 2))
            y = th[:, 0] + np.einsum("ij,ij->i", x, th[:, 1:3])
            y = y + np.sqrt(model.noise_var) * rng.standard_normal(th.shape[0])
            return np.column_stack([x, y])

        return linreg, ("x1", "x2", "y")
    if type(model).__name__ == "LogisticRegression":  # dpinfer.release.dpvi's model (a layer above)
        return logistic_simulator(covariates)
    raise InvalidDataError(
        f"no record-level simulator for model {type(model).__name__}: synthetic data are available for "
        "mixture-uniform, covid, gaussian-mean, linreg and DPVI logistic regression."
    )


def logistic_simulator(covariates: Any) -> tuple[RecordSimulator, tuple[str, ...]]:
    """Records (x, y): x resampled from the *public* ``covariates``, y ~ Bernoulli(σ(xᵀθ))."""
    if covariates is None:
        raise InvalidDataError(
            "a DPVI regression posterior models y given x: pass public covariates (X, shape (m, d)) to "
            "synthesize the labels for; the confidential covariates are not part of the release."
        )
    X = np.asarray(covariates, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or not np.all(np.isfinite(X)):
        raise InvalidDataError(f"covariates must be a finite (m, d) array, got shape {X.shape}.")

    def simulate(th: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if th.shape[1] != X.shape[1]:
            raise InvalidDataError(f"covariates have {X.shape[1]} columns, the posterior {th.shape[1]}.")
        x = X[rng.integers(0, X.shape[0], size=th.shape[0])]
        p = 1.0 / (1.0 + np.exp(-np.einsum("ij,ij->i", x, th)))
        return np.column_stack([x, (rng.uniform(size=th.shape[0]) < p).astype(np.float64)])

    return simulate, (*(f"x{j}" for j in range(X.shape[1])), "y")


__all__ = [
    "POST_PROCESSING",
    "SyntheticData",
    "logistic_simulator",
    "record_simulator",
    "synthesize",
    "synthesize_from",
]
