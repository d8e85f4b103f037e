"""The design matrix of a DPVI fit: feature names, public-bounds scaling, intercept and offset.

All of it is validated before anything is planned or charged (a refused fit costs nothing):

* ``bounds`` — *public* bounds of the feature columns (declared by the data owner, never computed
  from the data), in the forms :func:`dpinfer.private_glm` takes: ``{column: (lo, hi)}``, one
  ``(lo, hi)`` pair per column, or one pair for every column. Each column is mapped to [−1, 1] by
  z = 2(x − lo)/(hi − lo) − 1, so the features are on one scale and centred on the middle of
  their range (less correlation with the intercept, which the windowed AdaGrad's per-coordinate
  steps handle badly). A value outside its bounds is an error (nothing is clipped silently); the
  coefficients are then those of the scaled features, and predictions from the result take the
  raw columns and apply the same scaling.
* ``intercept=True`` (the default for the built-in regressions, as ``private_glm``) — a first
  column of ones, named ``"intercept"``: the model's ``dim`` counts it (``LogisticRegression()``
  takes it from the data: k + 1 for k feature columns).
* ``offset=`` — a per-record offset added to the linear predictor, for the Poisson model's
  exposure (log t_i): η_i = x_iᵀθ + offset_i. It is a confidential column like the others (it
  enters each record's gradient and so its clipped contribution) and is passed to the model as
  a last column beyond ``dim``.
* Feature names: the columns of a pandas DataFrame (or ``feature_names=``) become
  ``result.param_names`` and label ``summary()`` and ``to_arviz()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...data.labels import column_labels, container_kind
from ...data.table import feature_matrix
from ...errors import InvalidDataError
from .models import Model


def prepare_design(
    model: Model,
    X: Any,
    *,
    intercept: bool = True,
    bounds: Any = None,
    offset: Any = None,
    feature_names: Any = None,
) -> tuple[Any, list[str] | None, dict[str, Any] | None]:
    """(X for the model, the coordinate names or None, the design record for the result).

    Raises
    ------
    InvalidDataError
        Bounds of the wrong length or not lo < hi finite, data outside the bounds, an offset of
        the wrong length or not finite, or an offset for a model without one.
    """
    # labels only from declared names or the container's own string labels, never str(column):
    # a pyarrow table's .columns are its confidential values (issue 36)
    labels = column_labels(X, declared=feature_names)
    names = list(labels) if labels is not None else None
    if container_kind(X) != "array":
        X, _ = feature_matrix(X, names=feature_names)
    if not intercept and bounds is None and offset is None:
        if names is not None:
            X = np.asarray(X, dtype=np.float64) if _numeric(X) else X
        return X, names, None
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError("X must be numeric (nothing was charged or released).") from None
    if A.ndim != 2:
        raise InvalidDataError(f"X must be a 2-D array of features, got shape {A.shape}.")
    k = A.shape[1]
    if names is not None and len(names) != k:
        raise InvalidDataError(f"{len(names)} feature names for {k} columns.")
    record: dict[str, Any] = {"intercept": bool(intercept), "bounds": None, "offset": offset is not None,
                              "n_columns": k}
    if bounds is not None:
        b = _check_bounds(bounds, k, names)
        lo, hi = b[:, 0], b[:, 1]
        outside = (A < lo) | (A > hi) | ~np.isfinite(A)
        if outside.any():
            cols = np.flatnonzero(outside.any(0))
            label = [names[j] if names else f"column {j}" for j in cols[:5]]
            raise InvalidDataError(
                f"{int(outside.sum())} value(s) lie outside the declared public bounds in "
                f"{', '.join(label)}: fix the bounds (they must hold for every record) or the data. "
                "Nothing was charged or released."
            )
        A = 2.0 * (A - lo) / (hi - lo) - 1.0
        record["bounds"] = b.tolist()
    if intercept:
        A = np.column_stack([np.ones(A.shape[0]), A])
        names = ["intercept"] + (names if names is not None else [f"x{j}" for j in range(k)])
    if offset is not None:
        if not getattr(model, "accepts_offset", False):
            raise InvalidDataError(
                f"the {model.name!r} model takes no offset; offset= is for PoissonRegression "
                "(exposure: offset = log t). Nothing was charged or released."
            )
        try:
            o = np.asarray(offset, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidDataError("offset must be numeric (nothing was charged or released).") from None
        if o.shape[0] != A.shape[0] or not np.all(np.isfinite(o)):
            raise InvalidDataError(
                f"offset must hold one finite value per record ({A.shape[0]}), got shape {o.shape}. "
                "Nothing was charged or released."
            )
        A = np.column_stack([A, o])
    return A, names, record


def apply_design(record: dict[str, Any], X: Any) -> np.ndarray:
    """The design of a fit applied to new raw feature columns (for predictions; no offset)."""
    A = np.asarray(X, dtype=np.float64)
    if A.ndim != 2 or A.shape[1] != int(record["n_columns"]):
        return A
    if record.get("bounds") is not None:
        b = np.asarray(record["bounds"], dtype=np.float64)
        A = 2.0 * (A - b[:, 0]) / (b[:, 1] - b[:, 0]) - 1.0
    if record.get("intercept"):
        A = np.column_stack([np.ones(A.shape[0]), A])
    return A


def _numeric(X: Any) -> bool:
    try:
        np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _check_bounds(bounds: Any, k: int, names: list[str] | None = None) -> np.ndarray:
    """The (k, 2) bounds from the forms ``private_glm`` takes: a dict column → (lo, hi) covering
    every column, one pair per column, or one pair for all."""
    if isinstance(bounds, dict):
        if names is None:
            raise InvalidDataError(
                "bounds given as {column: (lo, hi)} need column names: a table with named columns or "
                "DataSpec(feature_names=[...]); or give one (lo, hi) pair per column. Nothing was "
                "charged or released."
            )
        missing = [c for c in names if c not in bounds]
        extra = [str(c) for c in bounds if c not in names]
        if missing or extra:
            raise InvalidDataError(
                (f"bounds has no (lo, hi) for column(s) {missing}. " if missing else "")
                + (f"bounds names column(s) {extra} that are not features. " if extra else "")
                + "Nothing was charged or released."
            )
        bounds = [bounds[c] for c in names]
    try:
        b = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError):
        b = np.zeros((0,))
    if b.shape == (2,):  # one pair for every column
        b = np.tile(b, (k, 1))
    if b.shape != (k, 2):
        raise InvalidDataError(
            f"bounds must give (lo, hi) for each of the {k} feature columns (or one pair for all, or "
            f"{{column: (lo, hi)}}), got shape {np.shape(bounds)}. Nothing was charged or released."
        )
    ok = np.isfinite(b).all(1) & (b[:, 0] < b[:, 1])
    if not ok.all():
        j = int(np.flatnonzero(~ok)[0])
        raise InvalidDataError(
            f"bounds[{j}] = {tuple(b[j])} is not a finite (lo, hi) with lo < hi. "
            "Nothing was charged or released."
        )
    return b


__all__ = ["apply_design", "prepare_design"]
