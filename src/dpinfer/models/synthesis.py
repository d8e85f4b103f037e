"""Synthetic data from a released posterior: posterior-predictive records, no privacy cost.

A differentially private posterior (ABCDP's accepted θ, a DPVI fit, a posterior given a privatised
statistic) is a release; drawing θ from it and simulating data from the model at θ touches the
confidential data only through that release, so by the post-processing property of differential
privacy (Dwork & Roth 2014, Proposition 2.1) the simulated columns carry exactly the release's
(ε, δ) guarantee and cost nothing more. This is the "synthetic data as a by-product" of Park,
Vinaroz & Jitkrittum (2021, §7).

Each synthetic *record* is an independent draw from the posterior predictive: θ_i ~ released
posterior, then one record y_i ~ p(y | θ_i). What a record is depends on the model
(:func:`record_simulator`): one point of the mixture of uniforms, a whole 18-day curve for the
COVID polynomial (the data are one series), one (x1, x2, y) row of the regression model (its
covariates drawn from the model's declared public law), one value of the Gaussian-mean model, or
one (covariates, label) row of a DPVI logistic regression.

Covariates of a conditional model
---------------------------------
A DPVI regression releases p(y | x, θ) only: the covariates of a synthetic record must come from
somewhere else, and never from the confidential records themselves (copied rows are real
people's rows under a DP label). They come from one of two sources, and the output says which:

* :class:`MarginalHistogramModel`, a differentially private model of the covariates: per column,
  counts of the records in the bins of a public grid, released with exact discrete Laplace noise
  (:func:`dpinfer.release.synthesis.release_covariate_model`, charged to the ledger); covariates
  are then drawn column by column from the noisy marginals (a product-of-marginals model, as the
  independent-marginals baseline of twinify-style synthesis, Jälkö, Lagerspetz, Haukka, Tarkoma,
  Honkela & Kaski 2021). Correlations between covariates are not preserved. The synthetic data are
  then (ε₁ + ε₂, δ₁ + δ₂)-DP for the posterior's (ε₁, δ₁) and the covariate model's (ε₂, δ₂)
  (basic composition, Dwork & Roth 2014, Theorem 3.16), at no further cost;
* :class:`PublicCovariates`, covariates the user declares public (e.g. a public census sample):
  their rows are resampled into the synthetic data and are **not** protected; the privacy report
  lists those columns under ``not_protected``.

A raw array is refused: nothing here can tell public covariates from confidential ones.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import InvalidDataError
from ..privacy.report import PrivacyReport

#: What the privacy report of every synthetic data set from a private posterior says of its cost.
POST_PROCESSING = (
    "post-processing of the released posterior (Dwork & Roth 2014, Prop. 2.1): no further privacy "
    "cost; the columns simulated from it carry the release's guarantee"
)

#: The most records one call synthesizes (about 0.8 GB per column as float64).
MAX_RECORDS = 10**8

RecordSimulator = Callable[[np.ndarray, np.random.Generator], np.ndarray]


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


@dataclass(frozen=True)
class MarginalHistogramModel:
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
        return _write_atomic(Path(path), lambda f: json.dump(self.to_dict(), f, indent=2))

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
    covariates
        For a conditional model, :meth:`CovariateSource.describe` of where the covariate columns
        came from, and ``covariate_columns``: their names.
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
        _write_atomic(sidecar_path(path), lambda f: json.dump(report, f, indent=2, default=float))
        return _write_atomic(path, rows)


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


def _write_atomic(path: Path, write: Callable[[Any], None]) -> Path:
    """``write(file)`` into a temporary file beside ``path``, renamed over it when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            write(f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return path


def check_n(n: Any) -> int:
    """n must be an integer in [1, :data:`MAX_RECORDS`] (refused before anything is drawn)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer, float)) or not np.isfinite(n) \
            or int(n) != n or int(n) < 1:
        raise InvalidDataError(f"n (the number of synthetic records) must be an integer >= 1, got {n!r}.")
    if int(n) > MAX_RECORDS:
        raise InvalidDataError(
            f"n = {int(n):.3g} synthetic records would need about {int(n) * 8 * 3 / 2**30:.3g} GiB per "
            f"column of memory; at most {MAX_RECORDS:.0e} per call: synthesize in chunks with other seeds."
        )
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
    posterior: Any, n: Any, seed: Any, model: Any, covariates: CovariateSource | None = None
) -> SyntheticData:
    """``n`` posterior-predictive records from a result with ``sample(n, seed)`` and ``privacy``.

    ``covariates`` (a conditional model only): a :class:`MarginalHistogramModel` or
    :class:`PublicCovariates` (module docstring). The θ draws and the simulations use two
    independent streams spawned from ``seed``.
    """
    n = check_n(n)
    if model is None:
        raise InvalidDataError(
            "the model to simulate from is not known for this result: pass model=... (the model the "
            "posterior was computed for)."
        )
    config = getattr(posterior, "config", None)
    design = config.get("design") if isinstance(config, dict) else None
    simulate, columns = record_simulator(model, covariates, design=design)
    theta_seed, sim_seed = np.random.SeedSequence(seed).spawn(2)
    thetas = posterior.sample(n, np.random.default_rng(theta_seed))
    source = {"result": type(posterior).__name__, "model": type(model).__name__}
    out = synthesize(thetas, simulate, columns, sim_seed, getattr(posterior, "privacy", None), source)
    if covariates is not None:
        out.covariates = covariates.describe()
        out.covariate_columns = columns[:-1]
    return out


def record_simulator(
    model: Any, covariates: Any = None, design: dict[str, Any] | None = None
) -> tuple[RecordSimulator, tuple[str, ...]]:
    """``(simulate(thetas, rng) -> records, column names)`` for a supported model.

    ``design``: a DPVI fit's design (``result.config["design"]``: ``intercept=True`` and
    public ``bounds=``), applied to the covariates before θ (:func:`apply_design`).

    Raises
    ------
    InvalidDataError
        For a model without a record-level simulator here (e.g. SIR, tuberculosis), and for
        covariates given to a model that simulates its own.
    """
    from .shipped.covid import CovidPolynomial
    from .shipped.gaussian_mean import GaussianMean
    from .shipped.linreg import LinearRegression
    from .shipped.mixture_uniform import MixtureOfUniforms

    if type(model).__name__ == "LogisticRegression":  # dpinfer.release.dpvi's model (a layer above)
        return logistic_simulator(covariates, design=design)
    if covariates is not None:
        raise InvalidDataError(
            f"model {type(model).__name__} simulates whole records from θ: covariates are taken only by "
            "conditional models (a DPVI regression)."
        )
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
    raise InvalidDataError(
        f"no record-level simulator for model {type(model).__name__}: synthetic data are available for "
        "mixture-uniform, covid, gaussian-mean, linreg and DPVI logistic regression."
    )


def as_covariate_source(covariates: Any) -> CovariateSource:
    """``covariates`` if it is a :class:`CovariateSource`; a raw array is refused (module docstring)."""
    if covariates is None:
        raise InvalidDataError(
            "a DPVI regression posterior models y given x: synthetic records need covariates from a "
            "public or differentially private source: PublicCovariates(X) for covariates that are public "
            "in their own right (copied, NOT protected), or a DP covariate model from "
            "dpinfer.release.synthesis.release_covariate_model(X, bounds=..., epsilon=..., ledger=..., "
            "dataset=...) (CLI: --public-covariates, --covariate-model or --covariates with "
            "--covariate-epsilon and --covariate-bounds)."
        )
    if all(hasattr(covariates, a) for a in ("sample", "describe", "protected", "n_columns")):
        return covariates
    raise InvalidDataError(
        f"covariates given as a raw {type(covariates).__name__}: synthetic data never copy rows that may "
        "be confidential. Wrap covariates that are public in their own right as PublicCovariates(X) "
        "(they are copied and the output says they are NOT protected), or release a DP model of the "
        "confidential covariates with dpinfer.release.synthesis.release_covariate_model(X, bounds=..., "
        "epsilon=..., ledger=..., dataset=...) and pass that."
    )


def apply_design(design: dict[str, Any] | None, x: np.ndarray) -> np.ndarray:
    """Raw covariates -> the columns θ multiplies: each scaled to [-1, 1] by its public
    ``bounds`` (``2 (x - lo)/(hi - lo) - 1``) and a first column of ones for an ``intercept``."""
    if not design:
        return x
    if design.get("offset"):
        raise InvalidDataError(
            "this fit has an offset (exposure): synthetic records would need the offset's law too, "
            "which the release does not carry; synthesize from a fit without offset."
        )
    if design.get("bounds") is not None:
        b = np.asarray(design["bounds"], dtype=np.float64)
        x = 2.0 * (x - b[:, 0]) / (b[:, 1] - b[:, 0]) - 1.0
    if design.get("intercept"):
        x = np.column_stack([np.ones(x.shape[0]), x])
    return x


def logistic_simulator(
    covariates: Any, design: dict[str, Any] | None = None, link: str = "logit", target: str = "y"
) -> tuple[RecordSimulator, tuple[str, ...]]:
    """Records (x, y): x from ``covariates`` (:func:`as_covariate_source`), in their own units, and
    y ~ Bernoulli(F(x̃ᵀθ)) with x̃ the design's columns (:func:`apply_design`: bounds scaling,
    intercept) and F the logistic (``link="logit"``) or normal (``"probit"``) cdf."""
    source = as_covariate_source(covariates)
    d = source.n_columns
    width = d + int(bool(design and design.get("intercept")))

    def simulate(th: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if th.shape[1] != width:
            raise InvalidDataError(
                f"the covariate source has {d} columns{' (+ intercept)' if width > d else ''}, the "
                f"posterior {th.shape[1]} coefficients: release the covariate model on the same feature "
                "columns as the fit, in the same order."
            )
        x = source.sample(th.shape[0], rng)
        eta = np.einsum("ij,ij->i", apply_design(design, x), th)
        if link == "probit":
            from scipy.special import ndtr

            p = ndtr(eta)
        else:
            p = 1.0 / (1.0 + np.exp(-eta))
        return np.column_stack([x, (rng.uniform(size=th.shape[0]) < p).astype(np.float64)])

    columns: Sequence[str] = getattr(source, "columns", None) or tuple(f"x{j}" for j in range(d))
    return simulate, (*columns, target)


def glm_synthesize(posterior: Any, n: Any, covariates: Any, seed: Any = None,
                   target: str | None = None) -> SyntheticData:
    """``n`` posterior-predictive records of a private GLM (:class:`dpinfer.inference.glm.GLMPosterior`,
    logistic or probit): θ from the posterior, covariates from ``covariates`` (a DP covariate model
    or :class:`PublicCovariates`, as for DPVI), y from the model. Post-processing of the GLM
    release (plus the covariate model's own release): no further cost. ``target`` names the
    response column (default: the name of ``y`` given to ``private_glm``, else ``"y"``)."""
    n = check_n(n)
    rel = posterior.release
    if rel.family not in ("logistic", "probit"):
        raise InvalidDataError(
            f"synthetic records from a {rel.family} GLM are not available here (only logistic and "
            "probit: their records need no offset law or noise scale)."
        )
    if rel.has_offset:
        apply_design({"offset": True}, np.zeros((0, 0)))
    design = {"bounds": np.asarray(rel.feature_bounds).tolist(), "intercept": rel.intercept}
    name = target or (posterior.settings or {}).get("target") or "y"
    simulate, columns = logistic_simulator(covariates, design=design, link="logit" if rel.family ==
                                           "logistic" else "probit", target=str(name))
    theta_seed, sim_seed = np.random.SeedSequence(seed).spawn(2)
    thetas = posterior.sample(n, np.random.default_rng(theta_seed), scale="scaled")  # θ of the scaled design
    source = {"result": type(posterior).__name__, "model": f"GLM ({rel.family})"}
    out = synthesize(thetas, simulate, columns, sim_seed, posterior.privacy, source)
    out.covariates = as_covariate_source(covariates).describe()
    out.covariate_columns = columns[:-1]
    return out


__all__ = [
    "MAX_RECORDS",
    "POST_PROCESSING",
    "CovariateSource",
    "MarginalHistogramModel",
    "PublicCovariates",
    "SyntheticData",
    "apply_design",
    "as_covariate_source",
    "glm_synthesize",
    "logistic_simulator",
    "record_simulator",
    "sidecar_path",
    "synthesize",
    "synthesize_from",
]
