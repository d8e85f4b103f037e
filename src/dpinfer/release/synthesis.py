"""A differentially private model of confidential covariates, for synthetic records.

A DPVI regression releases p(y | x, θ) only; synthetic records need covariates too, and copying
the confidential ones would put real people's rows under a DP label. This module releases what
synthesis may use instead: per column, the counts of the records in the bins of a *public* grid
(bounds and bins declared by the caller, never taken from the data), with exact discrete Laplace
noise (the geometric mechanism of Ghosh, Roughgarden & Sundararajan 2012, drawn by
:class:`~dpinfer.privacy.mechanisms.counts.GeometricMechanism`), charged to the ledger before any
noise is drawn. The result, :class:`~dpinfer.models.synthesis.MarginalHistogramModel`, holds only
released counts: sampling it is post-processing.

Sensitivity. Each record adds one to exactly one bin of each of the d column histograms (values
outside the bounds are clamped into the edge bins). Under replace-one neighbours, changing one
record moves one count down and one up in each histogram: L1 sensitivity 2d of the concatenated
counts; under add-remove, d. The counts are released at once with discrete Laplace noise of scale
≥ Δ/ε (ε-DP, Ghosh et al. 2012), i.e. integer noise on integers: no floating-point slack.

Protocol: every input and size is validated first (nothing is charged on a refusal), then the
geometric mechanism charges the event and draws the noise from the
:class:`~dpinfer.privacy.PrivacyRNG` (OS entropy), then the model is built with the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.inputs import bind_dataset, release_data, with_schema
from ..data.schema import Schema
from ..data.streaming import accumulate, is_streamed
from ..errors import InvalidDataError, refuse_removed_keywords
from ..models.synthesis import MarginalHistogramModel
from ..privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..privacy.fixed_point import HistogramCounts
from ..privacy.mechanisms.counts import GeometricMechanism
from ..privacy.validation import check_epsilon, check_relation

__all__ = ["MAX_BINS", "MAX_TOTAL_BINS", "release_covariate_model"]

#: The most bins of one column (an integer column has hi - lo + 1).
MAX_BINS = 10_000
#: The most bins over all columns (the length of the released count vector).
MAX_TOTAL_BINS = 1_000_000


def _per_column(value: Any, d: int, name: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
        return [value] * d
    values = list(value)
    if len(values) != d:
        raise InvalidDataError(f"{name} has {len(values)} entries for {d} covariate columns.")
    return values


def _bounds(bounds: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        arr = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError(
            "bounds must be numbers: one (lower, upper) pair for every column, or one pair for all."
        ) from None
    if arr.shape == (2,):
        arr = np.tile(arr, (d, 1))
    if arr.shape != (d, 2):
        raise InvalidDataError(
            f"bounds must be one (lower, upper) pair per covariate column ({d}), or one pair for all; got "
            f"shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr[:, 0] >= arr[:, 1]):
        raise InvalidDataError("each covariate bound must be finite with lower < upper.")
    return arr[:, 0].copy(), arr[:, 1].copy()


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def release_covariate_model(
    X: Any,
    *,
    bounds: Any = None,
    epsilon: float,
    bins: int | Sequence[int] = 20,
    integer: bool | Sequence[bool] = False,
    columns: Sequence[str] | None = None,
    neighbouring: str = "replace-one",
    schema: Any = None,
    context: ReleaseContext | None = None,
    label: str = "",
    chunk_rows: int | None = None,
) -> MarginalHistogramModel:
    """Release an ε-DP product-of-marginals model of the confidential covariates ``X``.

    Parameters
    ----------
    X
        The confidential covariates, a finite array (n, d), a table (its own string labels name
        the columns) or a data source (a file, a DuckDB query: :func:`dpinfer.data.read_table`).
        A Parquet file or directory, :class:`~dpinfer.data.streaming.OnDask` partitions or an
        iterator of chunks, with ``columns``, is streamed in chunks of ``chunk_rows`` records; the
        counts are integers, so every chunking gives the same release.
    bounds
        Public bounds: one ``(lower, upper)`` pair per column, or one pair for all. Declare them
        from knowledge of the domain, never from the data; values outside are clamped.
    epsilon
        ε of the release (pure DP, spent once for all columns).
    bins
        Equal-width bins per continuous column (one number, or one per column), 1 to
        :data:`MAX_BINS`.
    integer
        Whether a column takes integer values (one flag, or one per column): one bin per integer
        of ``[lower, upper]`` (integer bounds), and its values must be integers.
    columns
        Column names (default: the columns of a pandas DataFrame ``X``, else ``x0, x1, ...``);
        the synthetic records and the model's JSON carry them.
    neighbouring
        ``"replace-one"`` (L1 sensitivity 2d) or ``"add-remove"`` (d).
    schema
        The data set's public :class:`~dpinfer.data.Schema`: ``bounds`` default to its declared
        bounds (an explicit argument overrides), the data are refused if they do not match it,
        and the release is charged to its data set; with a source, ``columns`` selects columns
        (default: the schema's releasable numeric columns).
    context
        The :class:`~dpinfer.privacy.context.ReleaseContext`: where the release is charged (its
        data set must be the schema's, when there is one; ``ReleaseContext(ledger=ledger.for_data(X),
        ...)`` binds the charge to these data) and where its noise comes from. Without a ledger
        the release warns that it is unaccounted. The flat ``ledger=``, ``dataset=`` and
        ``privacy_rng=`` keywords are refused with a :class:`TypeError` naming
        ``context=ReleaseContext(...)``.
    label
        The ledger label (default: the context's, else one naming the columns and bins).

    Returns
    -------
    MarginalHistogramModel
        The released model (noisy counts, the public grid and the privacy report).

    Raises
    ------
    InvalidDataError, ~dpinfer.errors.InvalidPrivacyParameterError
        For bad inputs, before anything is charged. Messages never contain values of ``X``.
    """
    if is_streamed(X) and columns is not None:  # named columns of a source, streamed in chunks
        sch = Schema.of(schema)
        names = tuple(columns)
        if not names or not all(isinstance(c, str) and c for c in names):
            raise InvalidDataError("columns must name the covariate columns (non-empty strings).")
        if sch is not None:
            for c in names:
                sch.releasable(c)
            bounds = bounds if bounds is not None else sch.bounds(names)
        source: Any = X
        keys = names
        d = len(names)
    else:  # read (and checked against the schema) in memory: one chunk of the same computation
        # labels only from declared names or the container's own string labels (never str(column))
        rd = release_data(X, schema=schema, feature_names=columns)
        sch = rd.schema
        bounds = bounds if bounds is not None else rd.bounds  # an explicit argument overrides the schema
        arr = np.asarray(rd.X)
        if arr.dtype.kind not in "biuf":
            raise InvalidDataError(f"covariates must be numeric, got dtype {arr.dtype}.")
        arr = arr.astype(np.float64)
        if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise InvalidDataError(
                f"covariates must be a 2-D array (n, d), n, d >= 1, got shape {arr.shape}."
            )
        d = arr.shape[1]
        names = rd.names if rd.names is not None else tuple(f"x{j}" for j in range(d))
        keys = tuple(f"\0x{j}" for j in range(d))
        columns_t = np.ascontiguousarray(arr.T)
        source = {k: columns_t[j] for j, k in enumerate(keys)}  # one chunk of the same computation
    if bounds is None:
        raise InvalidDataError("bounds= (public, per column) or a schema declaring them is needed. Nothing "
                               "was charged.")
    ctx = ReleaseContext.of(context, label=label)
    bind_dataset(sch, ctx, relation=neighbouring)
    eps = check_epsilon(epsilon, "covariate-model epsilon")
    relation = check_relation(neighbouring)
    lower, upper = _bounds(bounds, d)
    flags = _per_column(integer, d, "integer")
    if not all(isinstance(f, (bool, np.bool_)) for f in flags):  # "no" would be read as True
        raise InvalidDataError(f"integer must be True/False, or one True/False per column, got {integer!r}.")
    flags = [bool(f) for f in flags]
    if len(names) != d:
        raise InvalidDataError(f"{len(names)} column names for {d} covariate columns.")
    if len(set(names)) != d:
        raise InvalidDataError(f"column names must be distinct, got {list(names)}.")
    sizes: list[int] = []
    for j, b in enumerate(_per_column(bins, d, "bins")):
        if flags[j]:
            if lower[j] != np.round(lower[j]) or upper[j] != np.round(upper[j]):
                raise InvalidDataError(f"column {names[j]!r} is declared integer: give integer bounds.")
            b = int(upper[j] - lower[j]) + 1
        elif isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
            raise InvalidDataError(f"bins of column {names[j]!r} must be an integer >= 1, got {b!r}.")
        if b > MAX_BINS:
            raise InvalidDataError(
                f"column {names[j]!r} would have {b} bins (at most {MAX_BINS}); use fewer bins or narrower "
                "bounds: more bins spread the same noise over smaller counts."
            )
        sizes.append(int(b))
    if sum(sizes) > MAX_TOTAL_BINS:
        raise InvalidDataError(f"{sum(sizes)} bins in all (at most {MAX_TOTAL_BINS}); use fewer bins.")
    spec = HistogramCounts(keys, tuple(float(v) for v in lower), tuple(float(v) for v in upper), tuple(sizes),
                           tuple(flags))
    sums = accumulate(spec, source, chunk_rows=chunk_rows)  # exact integer counts, any chunking
    n = sums.rows
    if n < 1:
        raise InvalidDataError("the covariates hold no record. Nothing was charged.")
    nonfinite = sums.flags["nonfinite"]
    if any(nonfinite):
        bad_cols = [names[j] for j, c in enumerate(nonfinite) if c]
        raise InvalidDataError(
            f"covariates hold {sum(nonfinite)} missing or non-finite value(s) (in column(s) {bad_cols}); "
            "impute or remove those records first. Nothing was charged or released."
        )
    for j, bad in enumerate(sums.flags["kind"]):
        if bad:
            raise InvalidDataError(
                f"column {names[j]!r} is declared integer but holds non-integer values; declare it "
                "continuous (integer=False) or encode it as integers. Nothing was charged or released."
            )
    statistic = np.array(sums.totals, dtype=np.float64)
    sensitivity = 2 * d if relation == "replace-one" else d
    mech = GeometricMechanism(statistic.size, sensitivity, eps, relation, bounds=(0, n))
    label = ctx.label or f"covariate marginals ({d} columns, {sum(sizes)} bins) eps={eps:g}"
    released = mech.release(statistic, context=ctx, label=label)
    value = np.asarray(released.value).astype(np.int64)
    per_column = tuple(np.asarray(c) for c in np.split(value, np.cumsum(sizes)[:-1]))
    return MarginalHistogramModel(
        names,
        tuple(float(v) for v in lower),
        tuple(float(v) for v in upper),
        tuple(sizes),
        tuple(flags),
        per_column,
        with_schema(released.privacy, sch),
    )
