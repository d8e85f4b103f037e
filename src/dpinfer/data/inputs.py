"""One way in for every release's confidential data: any table source, a schema, declared names.

:func:`release_data` turns what a release was given (``X``/``y`` arrays or tables, or a source
plus column names, and optionally a :class:`~dpinfer.data.Schema`) into the arrays the release
computes on, the column labels (only declared names or the container's own string labels) and
the public facts the schema declares for them (bounds, the data set's name). It reads and
validates; it charges nothing. Every release calls it before anything is charged, so a table that
does not match its schema is refused at no cost.

Forms accepted (``X`` is anything :func:`~dpinfer.data.read_table` reads):

* ``release(X, y)`` with arrays or containers, as before; ``X``'s labels name the features;
* ``release(source, "target")``: ``y`` names a column of the source; the features are
  ``feature_names`` if given, else the schema's releasable numeric columns, else every other
  numeric column; ``offset`` may also name a column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from .labels import check_names
from .schema import Schema, SchemaError
from .table import DuckDBQuery, Table, _is_path, feature_matrix, read_table

__all__ = ["ReleaseData", "bind_dataset", "is_source", "release_data", "with_schema"]


@dataclass(frozen=True)
class ReleaseData:
    """What a release computes on, and the public facts the schema gives for it."""

    X: Any
    names: tuple[str, ...] | None
    y: Any
    offset: Any
    schema: Schema | None
    bounds: list[tuple[float, float]] | None = None
    y_name: str | None = None
    y_bounds: tuple[float, float] | None = None
    offset_name: str | None = None
    offset_bounds: tuple[float, float] | None = None


def _is_source(X: Any) -> bool:
    return isinstance(X, (Table, DuckDBQuery)) or _is_path(X)


def _schema_bounds(schema: Schema | None, name: str | None) -> tuple[float, float] | None:
    if schema is None or name is None or name not in schema.columns:
        return None
    c = schema.columns[name]
    if c.type not in ("float", "int", "bool") or (c.type != "bool" and (c.lower is None or c.upper is None)):
        return None
    return schema.bounds([name])[0]


def release_data(
    X: Any,
    y: Any = None,
    *,
    schema: Any = None,
    feature_names: Sequence[Any] | None = None,
    offset: Any = None,
) -> ReleaseData:
    """Read and validate a release's data (module docstring).

    Raises
    ------
    InvalidDataError, SchemaError
        Unreadable data, labels that are not distinct strings, data that do not match the schema
        (column and rule named, never a value), or a column marked ``release: false``.
    """
    sch = Schema.of(schema)
    by_name = isinstance(y, str) or isinstance(offset, str) or _is_source(X)
    if by_name:
        if y is not None and not isinstance(y, str):
            raise InvalidDataError("with a data source, name the response column: y='column'.")
        if offset is not None and not isinstance(offset, str):
            raise InvalidDataError("with a data source, name the offset column: offset='column'.")
        table = read_table(X, schema=sch)
        reserved = {n for n in (y, offset) if n is not None}
        names: tuple[str, ...] | None
        if feature_names is not None:
            names = check_names(feature_names)
        elif sch is not None:
            names = tuple(
                n for n, c in sch.columns.items()
                if c.release and c.type in ("float", "int", "bool") and n not in reserved
            )
        else:
            names = tuple(n for n in table.names if n not in reserved and table[n].dtype.kind in "biuf")
        if not names:
            raise InvalidDataError("the data have no numeric feature column to release.")
        if sch is not None:
            for n in [*names, *reserved]:
                sch.releasable(n)
        Xm = table.matrix(names)
        ya = None if y is None else np.asarray(table[y])
        oa = None if offset is None else np.asarray(table[offset])
        y_name, off_name = y, offset
    else:
        Xm, labels = feature_matrix(X, names=feature_names)
        names = labels
        ya, oa = y, offset
        y_name = getattr(y, "name", None)
        y_name = y_name if isinstance(y_name, str) and y_name else None
        off_name = None
        if sch is not None:
            if names is None:
                arr = np.asarray(Xm)
                cols = [n for n, c in sch.columns.items() if c.release and c.type in ("float", "int", "bool")]
                if arr.ndim != 2 or arr.shape[1] != len(cols):
                    raise SchemaError(
                        "the features are an array without column names: declare them (feature_names=[...]) "
                        "so that the schema's bounds can be matched to them."
                    )
                names = tuple(cols)
            chunk = {n: np.asarray(Xm)[:, j] for j, n in enumerate(names)}
            if y_name is not None and y_name in sch.columns:
                chunk[y_name] = np.asarray(ya)
            for n in chunk:
                sch.releasable(n)
            sch.validate(_numeric_chunk(chunk), columns=list(chunk))
    bounds = None
    if sch is not None and names is not None:
        have = [n for n in names if _schema_bounds(sch, n) is not None]
        bounds = sch.bounds(names) if len(have) == len(names) else None
    return ReleaseData(
        X=Xm, names=None if names is None else tuple(names), y=ya, offset=oa, schema=sch, bounds=bounds,
        y_name=y_name, y_bounds=_schema_bounds(sch, y_name), offset_name=off_name,
        offset_bounds=_schema_bounds(sch, off_name),
    )


def _numeric_chunk(chunk: dict[str, Any]) -> dict[str, np.ndarray]:
    out = {}
    for k, v in chunk.items():
        a = np.asarray(v)
        out[k] = a.astype(np.float64) if a.dtype.kind in "biu" else a
    return out


def bind_dataset(schema: Schema | None, context: Any, *, relation: str | None = None) -> None:
    """Check that a release is charged to its schema's data set, under the schema's relation.

    ``context``: the release's :class:`~dpinfer.privacy.context.ReleaseContext` (its ``dataset``
    must be the schema's; without a ledger it may name none). ``relation``: the release's
    neighbouring relation, which must be the schema's (a release whose guarantee is stated for
    another relation is refused here, before anything is charged).

    Raises
    ------
    SchemaError
        A context's data set other than the schema's: one data set has one budget; or a release
        under another neighbouring relation than the schema declares.
    """
    if schema is None:
        return
    if relation is not None and relation != schema.neighbouring:
        raise SchemaError(
            f"the schema of {schema.dataset!r} declares {schema.neighbouring} neighbours but this release's "
            f"guarantee is {relation}; release it under the schema's relation (where the release offers "
            "it) or correct the schema. Nothing was charged or released."
        )
    given = getattr(context, "dataset", None)
    if given is not None and given != schema.dataset:
        raise SchemaError(
            f"the release is charged to data set {given!r} but its schema describes {schema.dataset!r}: one "
            "data set has one budget; charge it to the schema's data set (or use that data set's schema). "
            "Nothing was charged or released."
        )


def is_source(X: Any) -> bool:
    """Whether ``X`` is a data source read by name (a path, a DuckDB query or a Table)."""
    return _is_source(X)


def with_schema(report: Any, schema: Schema | None) -> Any:
    """The privacy report with the (public) schema in its details, so reports print it."""
    if schema is None or report is None:
        return report
    from dataclasses import replace

    return replace(report, details={**report.details, "schema": schema.to_dict()})
