"""A noise-aware private GLM: the data owner's release of noisy sufficient statistics.

:func:`release_glm_statistics` reads the confidential records, scales them by *declared public
bounds* and releases, with the library's exact discrete Gaussian mechanism
(:class:`~dpinfer.privacy.mechanisms.gaussian.GaussianMechanism`, charged before any noise is
drawn), the statistic of :class:`~dpinfer.models.glm_release.StatisticLayout`:

    t_i = [ỹ_i (1, x̃_i) / R_y,  vech(r_i r_iᵀ)∖{1} / R_x,  (ỹ_i²)],   r_i = (1, x̃_i, õ_i),

the sufficient statistics of the second-order approximation of a GLM log-likelihood in η
(Kulkarni et al. 2021) and of the Gaussian linear model (Bernstein & Sheldon 2019).

Sensitivity (replace-one; n is public). Every feature and the offset are mapped to [-1, 1] by their
bounds, the response to ỹ with |ỹ| <= 1 (``{0, 1}`` for logistic/probit, ``y / y_max`` for Poisson,
``[-1, 1]`` by its bounds for the linear family). Each block is divided by its largest norm under the
bounds (R_y = √(D+1); R_x² = (Q² + Q)/2 − 1 with Q = len(r), since Σ_{j<=k} r_j² r_k² =
(|r|⁴ + Σ r_j⁴)/2), so |t_i| <= √b for b blocks, and replacing one record moves Σ t_i by at most
2√b in L2: the sensitivity is computed from the bounds only, never from the data.

Data outside the declared bounds are refused (:class:`~dpinfer.errors.InvalidDataError`, naming the
column and how many values, never the values), before anything is charged.

Exact, chunk-free statistic. Σ_i t_i is computed by :class:`~dpinfer.privacy.fixed_point.GLMSums`:
each record's scaled values x̃, ỹ, õ are rounded on their own to multiples of 2⁻²² and clipped to
[-1, 1] (so the norm bounds above, hence the sensitivity, hold for the rounded records exactly),
the products are summed as integers (exact, associative), and the float statistic is
``float(K)·2⁻⁴⁴·weight`` per coordinate, a function of the integers alone. In-memory arrays are
the one-chunk case; a source with named columns (``y`` then names the response column: a Parquet
file or directory, a pyarrow Table, a mapping, an iterable of chunks, or
:class:`~dpinfer.data.streaming.OnDask` for Parquet row groups on a Dask cluster) is streamed in
chunks of ``chunk_rows`` records with memory bounded by the chunk, and gives the same released
value bit for bit (:mod:`dpinfer.data.streaming`).

The public description of the data (bounds, names, schema) is one option object,
:class:`~dpinfer.models.data_spec.DataSpec` (``data=``). :func:`dpinfer.private_glm` (the
release followed by the analyst's noise-aware posterior, :func:`dpinfer.inference.glm.glm_posterior`)
lives in :mod:`dpinfer.pipelines.glm`: this module never imports :mod:`dpinfer.inference`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..data.inputs import bind_dataset, release_data, with_schema
from ..data.schema import Schema
from ..data.streaming import DEFAULT_CHUNK_ROWS, accumulate, is_streamed
from ..data.table import feature_matrix
from ..errors import InvalidDataError, refuse_removed_keywords
from ..models.data_spec import DataSpec, data_spec, removed_name
from ..models.glm_release import FAMILIES, GLMRelease, StatisticLayout
from ..privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..privacy.fixed_point import BINARY, INTEGER, REAL, GLMSums
from ..privacy.mechanisms.gaussian import GaussianMechanism

__all__ = ["DataSpec", "GLMRelease", "StatisticLayout", "release_glm_statistics"]

#: The keywords that ``data=DataSpec(...)`` replaced, with the new spelling (``offset=`` and
#: ``intercept=`` moved into it in issue 40 item 4).
DATA_KEYWORDS: dict[str, str | tuple[str, str]] = dict.fromkeys(
    ("bounds", "y_bounds", "offset", "offset_bounds", "intercept", "feature_names", "schema"),
    "data=dpinfer.DataSpec",
)
#: Every spelling the GLM release refuses: the data keywords and the flat release keywords.
REFUSED_KEYWORDS: dict[str, str | tuple[str, str]] = {**DATA_KEYWORDS, **FLAT_RELEASE_KEYWORDS}


def __getattr__(name: str) -> object:
    """``private_glm`` moved to :mod:`dpinfer.pipelines.glm` (it runs the analyst's posterior, which
    this module may not import): its old path is refused with the new one."""
    if name == "GLMDataSpec":
        raise removed_name(__name__, name)
    if name == "private_glm":
        raise ImportError(
            "private_glm moved: use dpinfer.private_glm (or from dpinfer.pipelines.glm import private_glm); "
            "dpinfer.release.glm holds only the data owner's release_glm_statistics."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _matrix(X: Any, declared: Sequence[str] | None = None) -> tuple[np.ndarray, tuple[str, ...] | None]:
    # labels only from declared names or the container's own string labels, never str(column):
    # a pyarrow table's .columns are its confidential values (issue 36)
    arr, names = feature_matrix(X, names=declared)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.dtype.kind not in "biuf":
        raise InvalidDataError(f"features must be numeric, got dtype {arr.dtype}. Nothing was charged.")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise InvalidDataError(f"features must be a 2-D array (n, D), n >= 2, got shape {arr.shape}.")
    return arr, names


def _pair(value: Any, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise InvalidDataError(f"{what} must be one (lower, upper) pair of numbers, got {value!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidDataError(f"{what} must be finite with lower < upper, got ({lo}, {hi}).")
    return lo, hi


def _bounds(bounds: Any, names: tuple[str, ...]) -> np.ndarray:
    d = len(names)
    if isinstance(bounds, dict):
        missing = [c for c in names if c not in bounds]
        if missing:
            raise InvalidDataError(f"bounds has no (lower, upper) for column(s) {missing}.")
        bounds = [bounds[c] for c in names]
    try:
        arr = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError(
            "bounds must be numbers: one (lower, upper) pair per feature, or one for all."
        ) from None
    if arr.shape == (2,):
        arr = np.tile(arr, (d, 1))
    if arr.shape != (d, 2):
        raise InvalidDataError(
            f"bounds must be one (lower, upper) pair per feature ({d}) or one pair for all; got shape "
            f"{arr.shape}."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr[:, 0] >= arr[:, 1]):
        raise InvalidDataError("every feature bound must be finite with lower < upper.")
    return arr



def _source_columns(
    X: Any, y: str, offset: Any, feature_names: Sequence[str] | None, bounds: Any, schema: Schema | None
) -> tuple[Any, tuple[str, ...], tuple[str, ...], str, str | None]:
    """A streamed source: the features are ``feature_names``, else the keys of a ``bounds`` dict
    (in order), else the schema's releasable numeric columns; the response and the offset are
    named by ``y`` and ``offset``."""
    if offset is not None and not isinstance(offset, str):
        raise InvalidDataError("with y given as a column name, give the offset as a column name too.")
    if feature_names is not None:
        names = tuple(feature_names)
    elif isinstance(bounds, dict):
        names = tuple(bounds)
    elif schema is not None:
        names = tuple(
            n for n, c in schema.columns.items()
            if c.release and c.type in ("float", "int", "bool") and n not in (y, offset)
        )
    else:
        raise InvalidDataError(
            "a data source with y given as a column name needs the feature columns: feature_names=[...], "
            "bounds={column: (lower, upper), ...} or a schema. Nothing was charged."
        )
    if not names or not all(isinstance(c, str) and c for c in names):
        raise InvalidDataError("feature names must be non-empty strings (the columns' declared names).")
    if len(set((*names, y) + ((offset,) if offset else ()))) != len(names) + 1 + (offset is not None):
        raise InvalidDataError("the features, the response and the offset must be different columns.")
    if schema is not None:
        for c in (*names, y, *((offset,) if offset else ())):
            schema.releasable(c)
    return X, names, names, y, offset


def _memory_columns(
    X: Any, y: Any, offset: Any, feature_names: Sequence[str] | None, chunk_rows: int | None
) -> tuple[Any, tuple[str, ...], tuple[str, ...], str, str | None]:
    """Arrays in memory, checked for shape and type, as row blocks of ``chunk_rows`` records
    (default :data:`~dpinfer.data.streaming.DEFAULT_CHUNK_ROWS`) under internal keys: the same
    computation as a streamed source, with one transposed block alive at a time."""
    Xa, cols = _matrix(X, feature_names)
    n, D = Xa.shape
    names = cols or tuple(f"x{j + 1}" for j in range(D))
    if len(names) != D:
        raise InvalidDataError(f"{len(names)} feature names for {D} features.")
    ya = np.asarray(y)
    if ya.dtype.kind not in "biuf":
        raise InvalidDataError(f"the response must be numeric, got dtype {ya.dtype}. Nothing was charged.")
    if ya.ndim == 2 and ya.shape[1] == 1:
        ya = ya[:, 0]
    if ya.shape != (n,):
        raise InvalidDataError(f"y must hold one value per record ({n}), got shape {np.asarray(y).shape}.")
    keys = tuple(f"\0x{j}" for j in range(D))
    oa = None
    if offset is not None:
        oa = np.asarray(offset)
        if oa.dtype.kind not in "biuf" or oa.size != n:
            raise InvalidDataError(f"offset must be {n} numbers, one per record.")
        oa = oa.reshape(-1)
    rows = DEFAULT_CHUNK_ROWS if chunk_rows is None else int(chunk_rows)

    def chunks() -> Any:  # row blocks of X transposed one at a time: contiguous columns, no full copy
        for s in range(0, n, max(rows, 1)):
            XT = np.ascontiguousarray(Xa[s:s + rows].T)
            chunk = {k: XT[j] for j, k in enumerate(keys)} | {"\0y": ya[s:s + rows]}
            if oa is not None:
                chunk["\0offset"] = oa[s:s + rows]
            yield chunk

    return chunks(), keys, names, "\0y", None if oa is None else "\0offset"


def _response_scaling(
    family: str, y_bounds: Any
) -> tuple[tuple[float, float, float, float, int], float, float]:
    """The response's (lower, upper, center, 1/scale, kind) for the fixed-point map, and the
    (y_scale, y_center) the analyst undoes (module docstring)."""
    if family in ("logistic", "probit"):
        return (-math.inf, math.inf, 0.0, 1.0, BINARY), 1.0, 0.0
    if family == "poisson":
        if y_bounds is None:
            raise InvalidDataError("a Poisson GLM needs y_bounds=y_max (the largest count, public). Nothing "
                                   "was charged.")
        lo, hi = _pair(y_bounds, "y_bounds") if np.ndim(y_bounds) else (0.0, float(y_bounds))
        if lo != 0 or not hi > 0 or hi != round(hi):
            raise InvalidDataError(
                f"Poisson y_bounds must be (0, y_max) with an integer y_max > 0, got ({lo}, {hi})."
            )
        return (0.0, hi, 0.0, 1.0 / hi, INTEGER), hi, 0.0
    if y_bounds is None:
        raise InvalidDataError("a linear GLM needs y_bounds=(lower, upper) of the response (public). "
                               "Nothing was charged.")
    lo, hi = _pair(y_bounds, "y_bounds")
    center, scale = (lo + hi) / 2, (hi - lo) / 2
    return (lo, hi, center, 1.0 / scale, REAL), scale, center


_BOUNDS_ADVICE = (
    "The sensitivity is computed from the bounds, so such records cannot be released: widen the bounds "
    "(from knowledge of the domain, never from the data) or remove those records. Nothing was charged or "
    "released."
)


def _check_flags(flags: Any, names: Sequence[str], family: str, schema: Schema | None = None) -> None:
    """Refuse what the pass over the records found (counts per column only, never a value); a
    column whose bounds the schema declares is refused in the schema's words."""
    D = len(names)
    nonfinite, outside, kind = flags["nonfinite"], flags["outside"], flags["kind"]
    if schema is not None:
        for j, name in enumerate(names):
            if outside[j] and name in schema.columns:
                raise schema.outside_bounds(name, int(outside[j]))
    if any(nonfinite[: D + 1]):
        raise InvalidDataError(
            "features or response hold missing or non-finite values; impute or remove those records first. "
            "Nothing was charged or released."
        )
    if any(outside[:D]):
        cols = [f"{names[j]} ({int(c)})" for j, c in enumerate(outside[:D]) if c]
        raise InvalidDataError(
            f"features outside the declared public bounds in column(s) {', '.join(cols)}. {_BOUNDS_ADVICE}"
        )
    if family in ("logistic", "probit") and kind[D]:
        raise InvalidDataError(f"a {family} response must be 0 or 1. Nothing was charged or released.")
    if family == "poisson" and kind[D]:
        raise InvalidDataError("Poisson counts must be integers. Nothing was charged or released.")
    if outside[D]:
        what = "counts" if family == "poisson" else "responses"
        raise InvalidDataError(
            f"{what} outside the declared public bounds ({int(outside[D])} value(s)). {_BOUNDS_ADVICE}"
        )
    if len(nonfinite) > D + 1:
        if nonfinite[D + 1]:
            raise InvalidDataError("the offset holds non-finite values. Nothing was charged or released.")
        if outside[D + 1]:
            raise InvalidDataError(
                f"offsets outside the declared public bounds ({int(outside[D + 1])} value(s)). "
                f"{_BOUNDS_ADVICE}"
            )


class _Columns(NamedTuple):
    """Where the records come from and their public description, resolved from the arguments and
    the schema (:func:`_columns`)."""

    source: Any
    keys: Any
    names: Any
    y_col: Any
    o_col: Any
    schema: Any
    bounds_schema: Any
    bounds: Any
    y_bounds: Any
    offset_bounds: Any


def _columns(X: Any, y: Any, offset: Any, spec: DataSpec, chunk_rows: int | None) -> _Columns:
    """The records' columns (streamed from a source, or read and checked in memory) and their
    bounds: the explicit ones of ``spec``, else the schema's (:func:`release_glm_statistics`)."""
    bounds, y_bounds, offset_bounds = spec.bounds, spec.y_bounds, spec.offset_bounds
    feature_names, schema = spec.feature_names, spec.schema
    if isinstance(y, str) and is_streamed(X):  # a source with named columns, streamed in chunks
        sch = Schema.of(schema)
        source, keys, names, y_col, o_col = _source_columns(X, y, offset, feature_names, bounds, sch)
        bounds_schema = sch if bounds is None else None
        if sch is not None:  # the schema's bounds unless given (the pass refuses records outside them)
            bounds = bounds if bounds is not None else sch.bounds(names)
            y_bounds = y_bounds if y_bounds is not None or y not in sch.columns else sch.bounds([y])[0]
            if offset_bounds is None and isinstance(offset, str) and offset in sch.columns:
                offset_bounds = sch.bounds([offset])[0]
    else:  # read (and checked against the schema) in memory: one chunk of the same computation
        if isinstance(y, str) and feature_names is None and isinstance(bounds, dict):
            feature_names = tuple(bounds)  # a source's features: the columns the bounds declare
        rd = release_data(X, y, schema=schema, feature_names=feature_names, offset=offset)
        sch = rd.schema
        bounds = bounds if bounds is not None else rd.bounds  # an explicit argument overrides the schema
        y_bounds = y_bounds if y_bounds is not None else rd.y_bounds
        offset_bounds = offset_bounds if offset_bounds is not None or offset is None else rd.offset_bounds
        if chunk_rows is not None and (isinstance(chunk_rows, bool) or int(chunk_rows) != chunk_rows
                                       or chunk_rows < 1):
            raise InvalidDataError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
        source, keys, names, y_col, o_col = _memory_columns(
            rd.X, rd.y, rd.offset, rd.names or feature_names, chunk_rows
        )
        bounds_schema = None  # release_data checked the records against the schema
    return _Columns(source, keys, names, y_col, o_col, sch, bounds_schema, bounds, y_bounds, offset_bounds)


@refuse_removed_keywords(REFUSED_KEYWORDS)
def release_glm_statistics(
    X: Any,
    y: Any,
    *,
    family: str,
    epsilon: float,
    delta: float,
    data: DataSpec | None = None,
    context: ReleaseContext | None = None,
    label: str = "",
    chunk_rows: int | None = None,
) -> GLMRelease:
    """Release the noisy GLM statistic of confidential records (module docstring).

    Parameters
    ----------
    X, y
        The confidential features (n, D) (a table's own string labels name the features) and
        response (n,); or a data source (any :func:`dpinfer.data.read_table` reads: a file, a
        DuckDB query, a table) and the name of its response column (:mod:`dpinfer.data.inputs`).
        A Parquet file or directory, :class:`~dpinfer.data.streaming.OnDask` partitions or an
        iterator of chunks is streamed (module docstring), its features named by
        ``feature_names``, the keys of a ``bounds`` dict or the schema, its offset by its column.
    family
        ``"logistic"`` or ``"probit"`` (y in {0, 1}), ``"poisson"`` (integer counts in
        ``[0, y_max]``) or ``"linear"`` (y in ``y_bounds``; Gaussian errors of unknown sd).
    epsilon, delta
        The (ε, δ) of the release (replace-one neighbours; n is public).
    data
        The description of the data, :class:`~dpinfer.models.data_spec.DataSpec`: ``bounds`` per
        feature (needed unless the schema declares them), ``y_bounds`` (``"linear"``: the
        response's (lower, upper); ``"poisson"``: ``y_max`` or ``(0, y_max)``), ``offset`` (an
        offset entering η with coefficient 1, e.g. log exposure for a Poisson rate, or its
        column's name with a data source) and its public ``offset_bounds``, ``intercept`` (None,
        the default: True), ``feature_names`` (default: a table's own string labels, else
        ``x1..xD``; with a data source, the columns to read) and ``schema`` (the data set's
        :class:`~dpinfer.data.Schema`: its declared bounds are the defaults, the data are refused
        if they do not match it). The keywords it replaced (``bounds=``, ``offset=``,
        ``intercept=``, ...) are refused with a :class:`TypeError` naming it.
    context
        The :class:`~dpinfer.privacy.context.ReleaseContext`: where the release is charged (its
        data set must be the schema's, when ``data`` has one) and where its noise comes from.
        Without a ledger the release warns that it is unaccounted. The flat ``ledger=``,
        ``dataset=`` and ``privacy_rng=`` keywords are refused with a :class:`TypeError` naming
        ``context=ReleaseContext(...)``.
    label
        The ledger label (default: the context's, else one naming the family and the sizes).
    chunk_rows
        Records per chunk of the pass over the data (default
        :data:`~dpinfer.data.streaming.DEFAULT_CHUNK_ROWS`, 2¹⁸; arrays of fewer records are one
        chunk). The released value does not depend on it.

    Returns
    -------
    GLMRelease
        The released statistic with σ, n, the public scaling and the privacy report.

    Raises
    ------
    InvalidDataError, ~dpinfer.errors.InvalidPrivacyParameterError
        Bad inputs or data outside the bounds, before anything is charged.
    """
    spec = data_spec(data)
    offset, intercept = spec.offset, True if spec.intercept is None else spec.intercept
    if not isinstance(intercept, (bool, np.bool_)):  # "no" would be read as True
        raise InvalidDataError(f"intercept must be True or False, got {intercept!r}. Nothing was charged.")
    if family not in FAMILIES:
        raise InvalidDataError(f"family must be one of {FAMILIES}, got {family!r}. Nothing was charged.")
    cs = _columns(X, y, offset, spec, chunk_rows)
    source, keys, names, y_col, o_col, sch, bounds_schema = (
        cs.source, cs.keys, cs.names, cs.y_col, cs.o_col, cs.schema, cs.bounds_schema
    )
    bounds, y_bounds, offset_bounds = cs.bounds, cs.y_bounds, cs.offset_bounds
    if bounds is None:
        raise InvalidDataError("bounds= (public, per feature) or a schema declaring them is needed. Nothing "
                               "was charged.")
    ctx = ReleaseContext.of(context, label=label)
    bind_dataset(sch, ctx, relation="replace-one")  # n is public
    D = len(names)
    fb = _bounds(bounds, names)
    ycol, y_scale, y_center = _response_scaling(family, y_bounds)
    ob = None
    cols = [(lo, hi, (lo + hi) / 2, 2 / (hi - lo), REAL) for lo, hi in fb] + [ycol]
    if o_col is not None:
        if offset_bounds is None:
            raise InvalidDataError(
                "an offset needs offset_bounds=(lower, upper) (public). Nothing was charged."
            )
        ob = _pair(offset_bounds, "offset_bounds")
        cols.append((ob[0], ob[1], (ob[0] + ob[1]) / 2, 2 / (ob[1] - ob[0]), REAL))
    elif offset_bounds is not None:
        raise InvalidDataError("offset_bounds given without an offset.")
    lo_, hi_, center, inv, kind = (tuple(c) for c in zip(*cols, strict=True))
    sums_spec = GLMSums(keys, y_col, o_col, lo_, hi_, center, inv, kind, has_y2=family == "linear")
    sums = accumulate(sums_spec, source, chunk_rows=chunk_rows if isinstance(y, str) else None)
    n = sums.rows
    if n < 2:
        raise InvalidDataError(f"a GLM needs at least 2 records, got {n}. Nothing was charged.")
    _check_flags(sums.flags, names, family, bounds_schema)
    layout = StatisticLayout(D, o_col is not None, family == "linear")
    statistic = sums.as_float(sums_spec.scale) * layout.weights
    mech = GaussianMechanism(layout.dim, layout.sensitivity, epsilon, delta, "replace-one")
    released = mech.release(
        statistic, context=ctx,
        label=ctx.label or f"GLM statistics ({family}, {D} features, {layout.dim} values) eps={epsilon:g}",
    )
    return GLMRelease(
        family=family, z=np.asarray(released.value, dtype=np.float64), sigma=float(mech.sigma), n=int(n),
        feature_names=names, intercept=bool(intercept), has_offset=o_col is not None, offset_bounds=ob,
        y_scale=float(y_scale), y_center=float(y_center), feature_bounds=fb,
        privacy=with_schema(released.privacy, sch),
    )
