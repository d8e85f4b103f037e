"""Synthetic records and what protects them: the result of synthesis from a released posterior.

:class:`SyntheticData` holds the records, the θ each was simulated at and the facts of the release
they came from, and states what is and is not protected (:meth:`SyntheticData.privacy_report`):
columns simulated from a differentially private posterior carry its (ε, δ) guarantee at no further
cost (post-processing, Dwork & Roth 2014, Proposition 2.1); covariate columns drawn from a DP
covariate model carry that model's guarantee too (basic composition); covariate columns copied from
data the user declared public are not protected, and the report says so. How the records are made
is :mod:`dpinfer.models.synthesis`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..privacy.report import PrivacyReport
from .atomic_file import write_atomic
from .display import DisplayMixin, summary_dict

#: What the privacy report of every synthetic data set from a private posterior says of its cost.
POST_PROCESSING = (
    "post-processing of the released posterior (Dwork & Roth 2014, Prop. 2.1): no further privacy "
    "cost; the columns simulated from it carry the release's guarantee"
)


@dataclass(repr=False)
class SyntheticData(DisplayMixin):
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
    covariates
        For a conditional model, :meth:`dpinfer.models.covariates.CovariateSource.describe` of
        where the covariate columns came from, and ``covariate_columns``: their names.
    """

    records: np.ndarray
    columns: tuple[str, ...]
    thetas: np.ndarray
    source_privacy: PrivacyReport | None
    source: dict[str, Any] = field(default_factory=dict)
    covariates: dict[str, Any] | None = None
    covariate_columns: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.records.shape[0])

    def privacy_report(self) -> dict[str, Any]:
        """What is and is not protected, the release's guarantee and the additional cost (0).

        ``protected`` / ``not_protected`` list the columns; ``guarantee`` is the (ε, δ) the
        protected columns carry together (the posterior's, composed with a DP covariate model's
        by basic composition), ``None`` if no column is protected; ``why_not_protected`` says why
        the others are not.
        """
        p = self.source_privacy
        cov: dict[str, Any] = self.covariates or {}
        copied = bool(cov) and not cov["protected"]
        dp_covariates = bool(cov) and cov["protected"]
        simulated = [c for c in self.columns if c not in self.covariate_columns]
        chosen: set[str] = set()
        eps = delta = 0.0
        notes = []
        if p is not None:
            chosen |= set(simulated)
            eps, delta = p.epsilon, p.delta
            notes.append(POST_PROCESSING)
        else:
            notes.append(f"the source posterior was not private: column(s) {', '.join(simulated)} are not "
                         "protected")
        if dp_covariates:
            chosen |= set(self.covariate_columns)
            eps, delta = eps + cov["epsilon"], delta + cov["delta"]
            notes.append(
                f"covariates ({', '.join(self.covariate_columns)}) from a DP model released at "
                f"({cov['epsilon']:.6g}, {cov['delta']:.3g})"
                + (f": together ({eps:.6g}, {delta:.3g})-DP by basic composition (Dwork & Roth 2014, "
                   "Thm 3.16)" if p is not None else "")
                + "; correlations between covariates are not preserved"
            )
        if copied:
            notes.append(
                f"covariate columns {', '.join(self.covariate_columns)} are COPIED from {cov['source']} "
                "(declared public by the user) and are NOT protected"
            )
        protected = [c for c in self.columns if c in chosen]
        not_protected = [c for c in self.columns if c not in chosen]
        why = "copied from covariates declared public by the user" if copied else (
            "simulated from a non-private posterior" if p is None and not_protected else None)
        return {
            "epsilon": None if p is None else p.epsilon,
            "delta": None if p is None else p.delta,
            "accountant": None if p is None else p.accountant,
            "additional_epsilon": 0.0,
            "additional_delta": 0.0,
            "post_processing": True,
            "protected": protected,
            "not_protected": not_protected,
            "why_not_protected": why,
            "guarantee": {"epsilon": eps, "delta": delta} if protected else None,
            "covariates": cov,
            "note": "; ".join(notes),
        }

    def statement(self) -> str:
        """One line: what is and is not protected (what ``dpinfer synthesize`` prints)."""
        rep = self.privacy_report()
        g = rep["guarantee"]
        parts = []
        if g is not None:
            parts.append(
                f"columns {', '.join(rep['protected'])} carry ({g['epsilon']:.6g}, {g['delta']:.3g})-DP"
            )
        if rep["not_protected"]:
            parts.append(
                f"columns {', '.join(rep['not_protected'])} are NOT protected ({rep['why_not_protected']})"
            )
        return f"{self.n} synthetic records: " + "; ".join(parts)

    def _display_summary(self, stats: bool) -> dict[str, Any]:
        return summary_dict(type(self).__name__, privacy=self.source_privacy, names=self.columns,
                            what="column", size=f"{self.n} synthetic records")

    def summary(self) -> str:
        rep = self.privacy_report()
        head = f"{self.n} synthetic records, columns {', '.join(self.columns)}"
        return head + f"\n  {self.statement()}\n  {rep['note']}"

    def to_csv(self, path: str | Path) -> Path:
        """Write the records with a header row, and beside them ``PATH.privacy.json`` (the
        privacy report: what is and is not protected). Both are written to temporary files and
        renamed into place only when complete; returns the CSV's path."""
        path = Path(path)

        def rows(f: Any) -> None:
            w = csv.writer(f)
            w.writerow(self.columns)
            w.writerows(_csv_rows(self.records))

        report = {"file": path.name, "columns": list(self.columns), "n": self.n, "source": self.source,
                  "privacy": self.privacy_report()}
        write_atomic(sidecar_path(path), lambda f: json.dump(report, f, indent=2, default=float))
        return write_atomic(path, rows)


def _csv_rows(records: np.ndarray) -> list[list[Any]]:
    """Rows for a CSV: a column whose values are all whole numbers (counts, 0/1 outcomes, ages
    drawn from an integer covariate model) is written as integers (``60``, not ``60.0``)."""
    cols: list[Any] = []
    for j in range(records.shape[1]):
        c = records[:, j]
        whole = bool(np.all(np.isfinite(c)) and np.all(c == np.round(c)) and np.all(np.abs(c) < 2**53))
        cols.append(c.astype(np.int64).tolist() if whole else c.tolist())
    return [list(r) for r in zip(*cols, strict=True)] if cols else [[] for _ in range(records.shape[0])]


def sidecar_path(path: str | Path) -> Path:
    """Where :meth:`SyntheticData.to_csv` states the privacy of ``path``: ``PATH.privacy.json``."""
    path = Path(path)
    return path.with_name(path.name + ".privacy.json")


__all__ = ["POST_PROCESSING", "SyntheticData", "sidecar_path"]
