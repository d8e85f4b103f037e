"""A differentially private model of covariates: noisy per-column histograms on a public grid.

Per column, the counts of the records in the bins of a *public* grid, released with exact discrete
Laplace noise (:func:`dpinfer.release.synthesis.release_covariate_model`, charged to the ledger);
covariates are then drawn column by column from the noisy marginals (a product-of-marginals model,
as the independent-marginals baseline of twinify-style synthesis, Jälkö, Lagerspetz, Haukka,
Tarkoma, Honkela & Kaski 2021). Correlations between covariates are not preserved. Synthetic data
whose covariates come from it are (ε₁ + ε₂, δ₁ + δ₂)-DP for the posterior's (ε₁, δ₁) and the
covariate model's (ε₂, δ₂) (basic composition, Dwork & Roth 2014, Theorem 3.16), at no further
cost.

:class:`MarginalHistogramModel` holds only the released counts and the public grid, so it may be
saved, shared and sampled freely; its file format is ``dpinfer-covariate-marginals-v1`` (JSON,
:meth:`MarginalHistogramModel.to_dict`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..privacy.report import PrivacyReport
from ..results.atomic_file import write_atomic
from ..results.display import DisplayMixin, summary_dict


@dataclass(frozen=True, repr=False)
class MarginalHistogramModel(DisplayMixin):
    """A differentially private product-of-marginals model of covariates (module docstring).

    Built by :func:`dpinfer.release.synthesis.release_covariate_model` (which reads the records);
    this object holds only the released noisy counts and the public grid, so it may be saved,
    shared and sampled freely.

    Attributes
    ----------
    columns
        Column names.
    lower, upper
        The public bounds of each column (records were clamped to them).
    bins
        Bins per column: equal-width bins of ``[lower, upper]``, or for an ``integer`` column one
        bin per integer ``lower, ..., upper``.
    integer
        Whether each column takes integer values.
    counts
        The released noisy counts, one array per column (integers, possibly negative).
    privacy
        The privacy report of the release of the counts.
    """

    columns: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    bins: tuple[int, ...]
    integer: tuple[bool, ...]
    counts: tuple[np.ndarray, ...]
    privacy: PrivacyReport
    protected: bool = field(default=True, init=False)

    def __post_init__(self) -> None:
        d = len(self.columns)
        sizes = {len(self.lower), len(self.upper), len(self.bins), len(self.integer), len(self.counts)}
        if d < 1 or sizes != {d}:
            raise InvalidDataError("a covariate model needs one bound pair, bin count and counts per column.")
        for j in range(d):
            if len(self.counts[j]) != self.bins[j]:
                raise InvalidDataError(
                    f"covariate model column {self.columns[j]!r}: {len(self.counts[j])} counts for "
                    f"{self.bins[j]} bins."
                )

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    def _display_summary(self, stats: bool) -> dict[str, Any]:
        return summary_dict(type(self).__name__, privacy=self.privacy, names=self.columns, what="column",
                            size="product of marginal histograms, bins " + ", ".join(map(str, self.bins)))

    def probabilities(self, j: int) -> np.ndarray:
        """The bin probabilities of column ``j``: noisy counts clipped at 0 and normalised
        (uniform if none is positive). Post-processing of the release."""
        c = np.clip(np.asarray(self.counts[j], dtype=np.float64), 0.0, None)
        total = c.sum()
        return c / total if total > 0 else np.full(c.size, 1.0 / c.size)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` rows: each column's bin drawn from its marginal independently, then a value
        uniform within the bin (the bin's integer for an integer column)."""
        out = np.empty((int(n), self.n_columns))
        for j in range(self.n_columns):
            k = rng.choice(self.bins[j], size=int(n), p=self.probabilities(j))
            if self.integer[j]:
                out[:, j] = self.lower[j] + k
            else:
                width = (self.upper[j] - self.lower[j]) / self.bins[j]
                out[:, j] = np.minimum(self.lower[j] + (k + rng.uniform(size=int(n))) * width, self.upper[j])
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "dp-marginals",
            "protected": True,
            "epsilon": self.privacy.epsilon,
            "delta": self.privacy.delta,
            "accountant": self.privacy.accountant,
            "accounted": self.privacy.accounted,
            "note": "covariates drawn from a differentially private product-of-marginals model (noisy "
            "per-column histograms on public bounds); correlations between covariates are not preserved",
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (what :meth:`save` writes)."""
        return {
            "format": "dpinfer-covariate-marginals-v1",
            "columns": list(self.columns),
            "lower": list(self.lower),
            "upper": list(self.upper),
            "bins": list(self.bins),
            "integer": list(self.integer),
            "counts": [np.asarray(c, dtype=np.int64).tolist() for c in self.counts],
            "privacy": self.privacy.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MarginalHistogramModel:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or data.get("format") != "dpinfer-covariate-marginals-v1":
            raise InvalidDataError(
                "not a dpinfer covariate model (expected format 'dpinfer-covariate-marginals-v1', as "
                "written by MarginalHistogramModel.save or `dpinfer synthesize --covariates`)."
            )
        try:
            return cls(
                tuple(str(c) for c in data["columns"]),
                tuple(float(v) for v in data["lower"]),
                tuple(float(v) for v in data["upper"]),
                tuple(int(v) for v in data["bins"]),
                tuple(bool(v) for v in data["integer"]),
                tuple(np.asarray(c, dtype=np.int64) for c in data["counts"]),
                PrivacyReport.from_dict(data["privacy"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidDataError(f"covariate model file is incomplete or malformed ({exc!r}).") from None

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON (atomically); returns the path."""
        return write_atomic(Path(path), lambda f: json.dump(self.to_dict(), f, indent=2))

    @classmethod
    def load(cls, path: str | Path) -> MarginalHistogramModel:
        """Read a model written by :meth:`save`."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"covariate model file {p} not found.")
        try:
            data = json.loads(p.read_text())
        except json.JSONDecodeError as exc:
            raise InvalidDataError(
                f"{p} is not JSON ({exc.msg}); expected a dpinfer covariate model."
            ) from None
        return cls.from_dict(data)


__all__ = ["MarginalHistogramModel"]
