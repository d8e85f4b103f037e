"""The service's view of a data set: its public schema, its records, and the public dummy copy.

Adapter functions between the service and the data-input layer. The schema format is the
project's shared one (``dataset``, ``neighbouring``, ``rows``, ``columns`` with ``type``,
``lower``/``upper``, ``categories``, ``release``); :func:`load_schema` reads it from YAML, JSON,
TOML or a dictionary and :func:`read_records` reads a data source (CSV or Parquet) into named
numeric columns (category labels become their index in the declared list, booleans 0/1).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError

TYPES = ("float", "int", "bool", "category", "string")
RELATIONS = ("replace-one", "add-remove")


@dataclass(frozen=True)
class ColumnSpec:
    """One column of a public schema."""

    name: str
    type: str
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] | None = None
    release: bool = True

    @property
    def numeric(self) -> bool:
        return self.type in ("float", "int", "bool")

    def bounds(self) -> tuple[float, float]:
        """The declared (lower, upper) of a numeric column (bool: (0, 1))."""
        if self.type == "bool":
            return 0.0, 1.0
        if self.lower is None or self.upper is None:
            raise InvalidDataError(f"column {self.name!r} has no declared bounds.")
        return float(self.lower), float(self.upper)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.lower is not None:
            out["lower"] = self.lower
        if self.upper is not None:
            out["upper"] = self.upper
        if self.categories is not None:
            out["categories"] = list(self.categories)
        if not self.release:
            out["release"] = False
        return out


@dataclass(frozen=True)
class PublicSchema:
    """The public description of one data set (module docstring)."""

    dataset: str
    neighbouring: str
    columns: dict[str, ColumnSpec]
    rows_max: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        rows: dict[str, Any] = {} if self.rows_max is None else {"max": self.rows_max}
        return {
            "dataset": self.dataset,
            "neighbouring": self.neighbouring,
            "rows": rows,
            "columns": {n: c.to_dict() for n, c in self.columns.items()},
        }

    def column(self, name: str, *, field_name: str = "column") -> ColumnSpec:
        """The releasable column ``name``; refuses unknown or non-releasable columns."""
        spec = self.columns.get(name)
        if spec is None or not spec.release:
            known = [n for n, c in self.columns.items() if c.release]
            raise FieldError(
                field_name,
                f"no releasable column {name!r} in data set {self.dataset!r} (releasable: {known}).",
            )
        return spec


class FieldError(InvalidDataError):
    """A request field that cannot be served; ``field`` names it (a 4xx answer)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise InvalidDataError(f"{what} must be a finite number, got {value!r}.")
    return float(value)


def schema_from_dict(d: Any) -> PublicSchema:
    """A :class:`PublicSchema` from the shared schema dictionary (module docstring)."""
    if not isinstance(d, dict):
        raise InvalidDataError("a schema must be a mapping with 'dataset' and 'columns'.")
    name = d.get("dataset")
    if not isinstance(name, str) or not name.strip():
        raise InvalidDataError("schema: 'dataset' must be a non-empty name.")
    relation = d.get("neighbouring", "replace-one")
    if relation not in RELATIONS:
        raise InvalidDataError(f"schema {name!r}: neighbouring must be one of {RELATIONS}, got {relation!r}.")
    rows = d.get("rows") or {}
    if not isinstance(rows, dict):
        raise InvalidDataError(f"schema {name!r}: 'rows' must be a mapping such as {{max: 100000}}.")
    rows_max = rows.get("max")
    if rows_max is not None and (isinstance(rows_max, bool) or not isinstance(rows_max, int) or rows_max < 1):
        raise InvalidDataError(f"schema {name!r}: rows.max must be a positive integer.")
    cols = d.get("columns")
    if not isinstance(cols, dict) or not cols:
        raise InvalidDataError(f"schema {name!r}: 'columns' must map column names to their specs.")
    specs: dict[str, ColumnSpec] = {}
    for cname, c in cols.items():
        if not isinstance(c, dict) or c.get("type") not in TYPES:
            raise InvalidDataError(f"schema {name!r}, column {cname!r}: type must be one of {TYPES}.")
        ctype = c["type"]
        lower = upper = None
        cats = None
        if ctype in ("float", "int"):
            if "lower" not in c or "upper" not in c:
                raise InvalidDataError(
                    f"schema {name!r}, column {cname!r}: a {ctype} column needs public lower and upper "
                    "bounds."
                )
            lower = _number(c["lower"], f"schema {name!r}, column {cname!r}: lower")
            upper = _number(c["upper"], f"schema {name!r}, column {cname!r}: upper")
            if not lower < upper:
                raise InvalidDataError(f"schema {name!r}, column {cname!r}: lower must be below upper.")
        if ctype == "category":
            raw = c.get("categories")
            if not isinstance(raw, list) or not raw or len(set(map(str, raw))) != len(raw):
                raise InvalidDataError(
                    f"schema {name!r}, column {cname!r}: a category column needs a list of distinct "
                    "categories."
                )
            cats = tuple(str(v) for v in raw)
        release = c.get("release", ctype != "string")
        if not isinstance(release, bool):
            raise InvalidDataError(f"schema {name!r}, column {cname!r}: release must be true or false.")
        if ctype == "string":
            release = False  # free text is never releasable
        specs[str(cname)] = ColumnSpec(str(cname), ctype, lower, upper, cats, release)
    return PublicSchema(name, relation, specs, rows_max)


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


def load_schema(spec: Any, base: Path) -> PublicSchema:
    """The schema given inline (a mapping) or as a file path relative to ``base``."""
    if isinstance(spec, dict):
        return schema_from_dict(spec)
    if isinstance(spec, str):
        return schema_from_dict(read_mapping((base / spec).resolve()))
    raise InvalidDataError("a data set's schema must be a file name or an inline table.")


def _read_source(source: Path, names: list[str]) -> dict[str, Any]:
    """The named columns of a CSV or Parquet file, as pyarrow arrays (nothing shown on error)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    suffix = source.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(source)
        else:
            opts = pcsv.ConvertOptions(
                column_types={n: pa.string() for n in names}, strings_can_be_null=False
            )
            table = pcsv.read_csv(source, convert_options=opts)
    except (OSError, pa.ArrowException):
        raise InvalidDataError("the data source cannot be read as CSV or Parquet.") from None
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise InvalidDataError(f"the data source has no column(s) {missing} declared in the schema.")
    return {n: table.column(n) for n in names}


def _column_values(spec: ColumnSpec, col: Any) -> np.ndarray:
    """One column as float64 (category: the index in the declared list), checked against the
    schema; a violation names the column and the rule, never a value or a count."""
    import pyarrow as pa

    values = col.to_pylist()
    if any(v is None for v in values):
        raise InvalidDataError(f"column {spec.name!r}: missing values (the schema declares none).")
    if spec.type == "category":
        index = {c: i for i, c in enumerate(spec.categories or ())}
        try:
            return np.array([index[str(v).strip()] for v in values], dtype=np.float64)
        except KeyError:
            raise InvalidDataError(
                f"column {spec.name!r}: a value outside the declared categories."
            ) from None
    if spec.type == "bool":
        table = {"true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0, "True": 1.0, "False": 0.0}
        try:
            return np.array([table[str(v).strip()] if not isinstance(v, bool) else float(v) for v in values])
        except KeyError:
            raise InvalidDataError(f"column {spec.name!r}: a value that is not a boolean.") from None
    try:
        arr = (
            np.asarray(
                pa.array(values).cast(pa.float64()) if pa.types.is_string(col.type) else col, dtype=np.float64
            )
            if values
            else np.zeros(0)
        )
    except (pa.ArrowInvalid, ValueError, TypeError):
        raise InvalidDataError(f"column {spec.name!r}: a value that is not a number.") from None
    if not np.all(np.isfinite(arr)):
        raise InvalidDataError(f"column {spec.name!r}: a value that is NaN or infinite.")
    lo, hi = spec.bounds()
    if np.any(arr < lo) or np.any(arr > hi):
        raise InvalidDataError(f"column {spec.name!r}: values outside the declared bounds.")
    if spec.type == "int" and np.any(arr != np.round(arr)):
        raise InvalidDataError(f"column {spec.name!r}: a value that is not an integer.")
    return arr


def read_records(source: Path, schema: PublicSchema) -> dict[str, np.ndarray]:
    """Every releasable column of ``source`` as float64 arrays, validated against ``schema``."""
    names = [n for n, c in schema.columns.items() if c.release]
    raw = _read_source(source, names)
    out = {n: _column_values(schema.columns[n], raw[n]) for n in names}
    n = len(next(iter(out.values()))) if out else 0
    if n == 0:
        raise InvalidDataError("the data source has no records.")
    if schema.rows_max is not None and n > schema.rows_max:
        raise InvalidDataError("the data source has more records than the schema's rows.max.")
    return out


def dummy_seed(dataset: str) -> int:
    """The public seed of a data set's dummy copy (from its name only)."""
    return int.from_bytes(hashlib.sha256(f"dpinfer-dummy:{dataset}".encode()).digest()[:8], "little")


def dummy_records(schema: PublicSchema, n: int) -> dict[str, np.ndarray]:
    """The public dummy data set of a dry run (module docstring): ``n`` records drawn uniformly
    inside the declared bounds from :func:`dummy_seed`."""
    rng = np.random.default_rng(dummy_seed(schema.dataset))
    out: dict[str, np.ndarray] = {}
    for name, spec in schema.columns.items():
        if not spec.release:
            continue
        if spec.type == "float":
            lo, hi = spec.bounds()
            out[name] = rng.uniform(lo, hi, n)
        elif spec.type == "int":
            lo, hi = spec.bounds()
            out[name] = rng.integers(math.ceil(lo), math.floor(hi) + 1, n).astype(np.float64)
        elif spec.type == "bool":
            out[name] = rng.integers(0, 2, n).astype(np.float64)
        else:
            out[name] = rng.integers(0, len(spec.categories or ()), n).astype(np.float64)
    return out


__all__ = [
    "ColumnSpec",
    "FieldError",
    "PublicSchema",
    "dummy_records",
    "dummy_seed",
    "load_schema",
    "read_mapping",
    "read_records",
    "schema_from_dict",
]
