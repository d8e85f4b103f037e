"""The service's view of a data set: its public schema, its records, and the public dummy copy.

Adapter functions between the service and the data-input layer :mod:`dpinfer.data`. The schema
format is the project's shared one (``dataset``, ``neighbouring``, ``rows``, ``columns`` with
``type``, ``lower``/``upper``, ``categories``, ``release``), parsed and checked by
:class:`dpinfer.data.Schema`; :func:`load_schema` takes it from a YAML, JSON or TOML file or an
inline table, and :func:`read_records` reads a data source with :func:`dpinfer.data.read_table`
into named numeric columns (category labels become their index in the declared list, booleans
0/1). What the planner asks of a schema (bounds, categories, what may be released) are small
functions over :class:`dpinfer.data.Schema` and its
:class:`~dpinfer.data.ColumnSpec` (:func:`releasable_column`, :func:`column_bounds`,
:func:`is_numeric`): one schema concept, the data package's.

What is confidential here: the records and the data source's path. What is public: the schema
(names, types, bounds, categories) and, under replace-one neighbours, the number of records.
:func:`read_records` checks every column against the schema when the service starts; a violation
names the column and the rule, never a value, and the data set is not served.

:func:`dummy_records` makes the *public* dummy data set of a dry run: values drawn uniformly
inside the declared bounds (categories uniformly), from a public seed derived from the data set's
name. It has the public number of records, so a dry run's release has the same shape and noise
scale as the real one; it carries nothing about the records.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..data import ColumnSpec, Schema
from ..errors import InvalidDataError


class FieldError(InvalidDataError):
    """A request field that cannot be served; ``field`` names it (a 4xx answer)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def is_numeric(spec: ColumnSpec) -> bool:
    """Whether a column can enter a numeric release (float, int or bool)."""
    return spec.type in ("float", "int", "bool")


def is_releasable(spec: ColumnSpec) -> bool:
    """Whether a column may enter a release (free text never may)."""
    return bool(spec.release) and spec.type != "string"


def column_bounds(spec: ColumnSpec) -> tuple[float, float]:
    """The declared (lower, upper) of a numeric column (bool: (0, 1))."""
    if spec.type == "bool":
        return 0.0, 1.0
    if spec.lower is None or spec.upper is None:
        raise InvalidDataError(f"column {spec.name!r} has no declared bounds.")
    return float(spec.lower), float(spec.upper)


def category_labels(spec: ColumnSpec) -> list[str]:
    """The declared categories of a category column, as strings (their index is the code)."""
    return [str(c) for c in spec.categories or ()]


def releasable_column(schema: Schema, name: str, *, field_name: str = "column") -> ColumnSpec:
    """The releasable column ``name`` of ``schema``; refuses unknown or non-releasable columns
    (:class:`FieldError` naming ``field_name``)."""
    spec = schema.columns.get(name)
    if spec is None or not is_releasable(spec):
        known = [n for n, c in schema.columns.items() if is_releasable(c)]
        raise FieldError(
            field_name,
            f"no releasable column {name!r} in data set {schema.dataset!r} (releasable: {known}).",
        )
    return spec


def schema_from_dict(d: Any) -> Schema:
    """A schema in the shared format, parsed and checked by :meth:`dpinfer.data.Schema.from_dict`,
    plus the service's rule: every bound of a float or int column must be declared."""
    schema = Schema.from_dict(d)
    for name, c in schema.columns.items():
        if c.type in ("float", "int") and (c.lower is None or c.upper is None):
            raise InvalidDataError(
                f"schema {schema.dataset!r}, column {name!r}: a {c.type} column needs public lower and "
                "upper bounds (declared from the domain) to be served."
            )
    return schema


def read_mapping(path: Path) -> Any:
    """A YAML, JSON or TOML file's content (by suffix)."""
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return json.loads(text)
    if suffix == ".toml":
        import tomllib

        return tomllib.loads(text)
    if suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_load(text)
    raise InvalidDataError(f"unknown file type {suffix!r}: use .toml, .yaml/.yml or .json.")


def load_schema(spec: Any, base: Path) -> Schema:
    """The schema given inline (a mapping) or as a file path relative to ``base``."""
    if isinstance(spec, dict):
        return schema_from_dict(spec)
    if isinstance(spec, str):
        return schema_from_dict(read_mapping((base / spec).resolve()))
    raise InvalidDataError("a data set's schema must be a file name or an inline table.")


_RULE = re.compile(r"column '([^']+)': .*\(rule: ([^)]+)\)")


def _as_float(spec: ColumnSpec, col: np.ndarray) -> np.ndarray:
    """One validated column as float64 (category: its index in the declared list; bool: 0/1)."""
    if spec.type == "category":
        index = {c: i for i, c in enumerate(category_labels(spec))}
        return np.array([index[str(v)] for v in col.tolist()], dtype=np.float64)
    return np.asarray(col, dtype=np.float64)


def read_records(source: Path, schema: Schema) -> dict[str, np.ndarray]:
    """Every releasable column of ``source`` as float64 arrays, read and validated against the
    schema by :func:`dpinfer.data.read_table` (any format it reads: CSV, Parquet, Arrow IPC, ...).

    A mismatch is refused naming the column and the rule only: the reader's own message (which
    may count the offending records) stays out of the owner's log as well.
    """
    from ..data import read_table

    try:
        table = read_table(str(source), schema=schema)
    except InvalidDataError as exc:
        m = _RULE.search(str(exc))
        if m:
            raise InvalidDataError(
                f"the records do not match the schema (column {m.group(1)!r}, rule: {m.group(2)})."
            ) from None
        raise InvalidDataError("the data source cannot be read, or does not match the schema.") from None
    except OSError:
        raise InvalidDataError("the data source cannot be read.") from None
    out = {n: _as_float(c, table[n]) for n, c in schema.columns.items() if is_releasable(c)}
    if table.n_rows == 0:
        raise InvalidDataError("the data source has no records.")
    return out


def dummy_seed(dataset: str) -> int:
    """The public seed of a data set's dummy copy (from its name only)."""
    return int.from_bytes(hashlib.sha256(f"dpinfer-dummy:{dataset}".encode()).digest()[:8], "little")


def dummy_records(schema: Schema, n: int) -> dict[str, np.ndarray]:
    """The public dummy data set of a dry run (module docstring): ``n`` records drawn uniformly
    inside the declared bounds from :func:`dummy_seed`."""
    rng = np.random.default_rng(dummy_seed(schema.dataset))
    out: dict[str, np.ndarray] = {}
    for name, spec in schema.columns.items():
        if not is_releasable(spec):
            continue
        if spec.type == "float":
            lo, hi = column_bounds(spec)
            out[name] = rng.uniform(lo, hi, n)
        elif spec.type == "int":
            lo, hi = column_bounds(spec)
            out[name] = rng.integers(math.ceil(lo), math.floor(hi) + 1, n).astype(np.float64)
        elif spec.type == "bool":
            out[name] = rng.integers(0, 2, n).astype(np.float64)
        else:
            out[name] = rng.integers(0, len(spec.categories or ()), n).astype(np.float64)
    return out


__all__ = [
    "FieldError",
    "category_labels",
    "column_bounds",
    "is_numeric",
    "is_releasable",
    "releasable_column",
    "dummy_records",
    "dummy_seed",
    "load_schema",
    "read_mapping",
    "read_records",
    "schema_from_dict",
]
