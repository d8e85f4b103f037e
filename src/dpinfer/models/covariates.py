"""Where the covariates of a conditional model's synthetic records come from.

A regression releases p(y | x, θ) only: the covariates of a synthetic record must come from
somewhere else, and never from the confidential records themselves (copied rows are real people's
rows under a DP label). A :class:`CovariateSource` says where, and whether they are protected:

* a differentially private model of the covariates,
  :class:`~dpinfer.models.covariate_marginals.MarginalHistogramModel` (released, and charged, by
  :func:`dpinfer.release.synthesis.release_covariate_model`);
* :class:`PublicCovariates`, covariates the user declares public (e.g. a public census sample):
  their rows are resampled into the synthetic data and are **not** protected; the privacy report
  lists those columns under ``not_protected``.

A raw array is refused (:func:`as_covariate_source`): nothing here can tell public covariates from
confidential ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import InvalidDataError


class CovariateSource(Protocol):
    """Where the covariates of a conditional model's synthetic records come from."""

    #: whether the covariates are differentially private (False: copied from declared-public data)
    protected: bool

    @property
    def n_columns(self) -> int:
        """Number of covariate columns."""

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` covariate rows, shape (n, n_columns), from public randomness ``rng``."""

    def describe(self) -> dict[str, Any]:
        """What the covariates are and whether they are protected (for the privacy report)."""


@dataclass(frozen=True)
class PublicCovariates:
    """Covariates the user declares **public**; synthetic records copy (resample) their rows.

    Use only for data that are public in their own right (not the confidential records, nor a
    copy of them): they are copied as they are and carry no privacy protection, which the
    synthetic data's privacy report and sidecar file state.

    Parameters
    ----------
    X
        Finite array (m, d).
    source
        Where they come from, as the report should name it (e.g. a file name).
    columns
        Column names (default ``x0, x1, ...``).
    """

    X: np.ndarray
    source: str = "covariates declared public by the user"
    columns: tuple[str, ...] | None = None
    protected: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise InvalidDataError(f"public covariates must be a 2-D array (m, d), got shape {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise InvalidDataError("public covariates must be finite (no NaN or inf).")
        if self.columns is not None and len(self.columns) != X.shape[1]:
            raise InvalidDataError(f"{len(self.columns)} column names for {X.shape[1]} covariate columns.")
        object.__setattr__(self, "X", X)

    @property
    def n_columns(self) -> int:
        return int(self.X.shape[1])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.X[rng.integers(0, self.X.shape[0], size=int(n))]

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "public",
            "protected": False,
            "source": self.source,
            "note": f"rows resampled from {self.source}; declared public by the user, NOT protected by "
            "differential privacy",
        }


def as_covariate_source(covariates: Any) -> CovariateSource:
    """``covariates`` if it is a :class:`CovariateSource`; a raw array is refused (module docstring)."""
    if covariates is None:
        raise InvalidDataError(
            "a DPVI regression posterior models y given x: synthetic records need covariates from a "
            "public or differentially private source: PublicCovariates(X) for covariates that are public "
            "in their own right (copied, NOT protected), or a DP covariate model from "
            "dpinfer.release.synthesis.release_covariate_model(X, bounds=..., epsilon=..., "
            "context=ReleaseContext(ledger=..., dataset=...)) (CLI: --public-covariates, --covariate-model "
            "or --covariates with --covariate-epsilon and --covariate-bounds)."
        )
    if all(hasattr(covariates, a) for a in ("sample", "describe", "protected", "n_columns")):
        return covariates
    raise InvalidDataError(
        f"covariates given as a raw {type(covariates).__name__}: synthetic data never copy rows that may "
        "be confidential. Wrap covariates that are public in their own right as PublicCovariates(X) "
        "(they are copied and the output says they are NOT protected), or release a DP model of the "
        "confidential covariates with dpinfer.release.synthesis.release_covariate_model(X, bounds=..., "
        "epsilon=..., context=ReleaseContext(ledger=..., dataset=...)) and pass that."
    )


__all__ = ["CovariateSource", "PublicCovariates", "as_covariate_source"]
