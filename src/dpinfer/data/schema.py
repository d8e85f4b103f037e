"""The public schema of one confidential data set: columns, types, bounds, categories, row policy.

A schema holds only *public* facts, declared by the data owner from knowledge of the domain (never
read from the data), in one small YAML, JSON or TOML file (the style of SmartNoise's metadata)::

    dataset: survey-2024          # the data set's name: the name of its budget in the ledger
    neighbouring: replace-one     # or add-remove
    rows: {max: 100000}           # public row-count policy: at most this many records
    columns:
      age:    {type: float, lower: 0, upper: 120}
      bmi:    {type: float, lower: 10, upper: 60}
      smoker: {type: bool}
      region: {type: category, categories: [north, south, east, west]}
      visits: {type: int, lower: 0, upper: 50}
      name:   {type: string, release: false}   # never releasable

Releases given ``schema=`` take their bounds from it (:meth:`Schema.bounds`; an explicit bounds
argument still overrides it, and the result records the bounds used), are charged to the budget
named ``dataset``, and refuse data that do not match it (:meth:`Schema.validate`) before anything
is charged. The schema is public: it is printed in reports.

:func:`draft_schema` writes a draft from a file's *column names and types only*: every bound and
category list is a placeholder for the owner to fill, never a value read from the data.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError

__all__ = ["COLUMN_TYPES", "ColumnSpec", "Schema", "SchemaError", "draft_schema"]

COLUMN_TYPES = ("float", "int", "bool", "category", "string")
NEIGHBOURING = ("replace-one", "add-remove")
_COLUMN_KEYS = {"type", "lower", "upper", "categories", "release", "description"}
_TOP_KEYS = {"dataset", "neighbouring", "rows", "columns", "description"}


class SchemaError(InvalidDataError):
    """A schema is malformed, or data do not match it (names the column and rule, never a value)."""


@dataclass(frozen=True)
class ColumnSpec:
    """One column's public description (module docstring)."""

    name: str
    type: str
    lower: float | None = None
    upper: float | None = None
    categories: tuple[Any, ...] | None = None
    release: bool = True
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type}
        if self.type in ("float", "int"):
            d["lower"], d["upper"] = _num_out(self.lower), _num_out(self.upper)
        if self.type == "category":
            d["categories"] = None if self.categories is None else list(self.categories)
        if not self.release:
            d["release"] = False
        if self.description:
            d["description"] = self.description
        return d


def _num_out(v: float | None) -> float | int | None:
    if v is None:
        return None
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


def _number(v: Any, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SchemaError(f"schema: {where} must be a number or null, got a {type(v).__name__}.")
    if not math.isfinite(float(v)):
        raise SchemaError(f"schema: {where} must be finite.")
    return float(v)


def _column(name: Any, spec: Any) -> ColumnSpec:
    if not isinstance(name, str) or not name.strip():
        raise SchemaError("schema: every column name must be a non-empty string.")
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, Mapping):
        raise SchemaError(
            f"schema: column {name!r} must be a mapping such as {{type: float, lower: 0, upper: 1}}."
        )
    unknown = sorted(set(spec) - _COLUMN_KEYS)
    if unknown:
        raise SchemaError(
            f"schema: column {name!r} has unknown key(s) {unknown} (known: {sorted(_COLUMN_KEYS)})."
        )
    typ = spec.get("type")
    if typ not in COLUMN_TYPES:
        raise SchemaError(f"schema: column {name!r} has type {typ!r}; the types are {list(COLUMN_TYPES)}.")
    lower = _number(spec.get("lower"), f"column {name!r} lower")
    upper = _number(spec.get("upper"), f"column {name!r} upper")
    if typ not in ("float", "int") and (lower is not None or upper is not None):
        raise SchemaError(f"schema: column {name!r} of type {typ} takes no lower/upper bounds.")
    if lower is not None and upper is not None and not lower < upper:
        raise SchemaError(f"schema: column {name!r} needs lower < upper.")
    cats = spec.get("categories")
    if cats is not None:
        if typ != "category":
            raise SchemaError(f"schema: column {name!r} of type {typ} takes no categories.")
        if isinstance(cats, (str, bytes)) or not isinstance(cats, Sequence) or not cats:
            raise SchemaError(f"schema: column {name!r}: categories must be a non-empty list.")
        if not all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in cats):
            raise SchemaError(f"schema: column {name!r}: each category must be a string or an integer.")
        if len(set(cats)) != len(cats):
            raise SchemaError(f"schema: column {name!r}: a category is listed twice.")
        cats = tuple(cats)
    release = spec.get("release", True)
    if not isinstance(release, bool):
        raise SchemaError(f"schema: column {name!r}: release must be true or false.")
    desc = spec.get("description", "") or ""
    return ColumnSpec(name, typ, lower, upper, cats, release, str(desc))


@dataclass(frozen=True)
class Schema:
    """A data set's public schema (module docstring). Build it with :meth:`load` or :meth:`from_dict`."""

    dataset: str
    columns: Mapping[str, ColumnSpec]
    neighbouring: str = "replace-one"
    max_rows: int | None = None
    description: str = ""
    source: str | None = field(default=None, compare=False)

    # ---------------------------------------------------------------- construction

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schema:
        """A schema from its mapping form (the YAML/JSON/TOML document), validated completely."""
        if isinstance(d, Schema):
            return d
        if not isinstance(d, Mapping):
            raise SchemaError("schema: the document must be a mapping with dataset and columns.")
        unknown = sorted(set(d) - _TOP_KEYS)
        if unknown:
            raise SchemaError(f"schema: unknown key(s) {unknown} (known: {sorted(_TOP_KEYS)}).")
        dataset = d.get("dataset")
        if not isinstance(dataset, str) or not dataset.strip():
            raise SchemaError(
                "schema: 'dataset' (the data set's name, its budget's name) must be a non-empty string."
            )
        neighbouring = d.get("neighbouring", "replace-one")
        if neighbouring not in NEIGHBOURING:
            raise SchemaError(
                f"schema: neighbouring must be one of {list(NEIGHBOURING)}, got {neighbouring!r}."
            )
        rows = d.get("rows") or {}
        if not isinstance(rows, Mapping) or set(rows) - {"max"}:
            raise SchemaError("schema: rows must be a mapping such as {max: 100000}.")
        max_rows = rows.get("max")
        if max_rows is not None and (
            isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1
        ):
            raise SchemaError("schema: rows.max must be a positive integer.")
        cols = d.get("columns")
        if not isinstance(cols, Mapping) or not cols:
            raise SchemaError("schema: 'columns' must map each column name to its description.")
        columns = {str(k): _column(k, v) for k, v in cols.items()}
        return cls(dataset.strip(), columns, neighbouring, max_rows, str(d.get("description", "") or ""))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Schema:
        """Read a schema file: ``.yaml``/``.yml``, ``.json`` or ``.toml``."""
        p = Path(path)
        if not p.is_file():
            raise SchemaError(f"no schema file at {str(p)!r}.")
        text = p.read_text(encoding="utf-8")
        suffix = p.suffix.lower()
        try:
            if suffix in (".yaml", ".yml"):
                try:
                    import yaml
                except ImportError:  # pragma: no cover - the 'data' extra
                    raise SchemaError("a YAML schema needs pyyaml: pip install 'dpinfer[data]'.") from None
                doc = yaml.safe_load(text)
            elif suffix == ".json":
                doc = json.loads(text)
            elif suffix == ".toml":
                import tomllib

                doc = tomllib.loads(text)
            else:
                raise SchemaError(f"a schema file must be .yaml, .yml, .json or .toml, got {p.name!r}.")
        except SchemaError:
            raise
        except Exception as exc:  # noqa: BLE001 - any parser's error: say which file and parser
            raise SchemaError(f"cannot parse the schema file {p.name!r} ({type(exc).__name__}).") from None
        schema = cls.from_dict(doc)
        object.__setattr__(schema, "source", str(p))
        return schema

    @classmethod
    def of(cls, schema: Any) -> Schema | None:
        """``None``, a :class:`Schema`, a mapping or a path, as a schema."""
        if schema is None or isinstance(schema, Schema):
            return schema
        if isinstance(schema, Mapping):
            return cls.from_dict(schema)
        if isinstance(schema, (str, os.PathLike)):
            return cls.load(schema)
        raise SchemaError(f"schema must be a Schema, a mapping or a path, got a {type(schema).__name__}.")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"dataset": self.dataset, "neighbouring": self.neighbouring}
        if self.description:
            d["description"] = self.description
        if self.max_rows is not None:
            d["rows"] = {"max": self.max_rows}
        d["columns"] = {k: c.to_dict() for k, c in self.columns.items()}
        return d

    def describe(self) -> str:
        """The schema as plain lines for reports (it is public)."""
        lines = [
            f"data set {self.dataset!r} ({self.neighbouring} neighbours"
            + (f", at most {self.max_rows} rows)" if self.max_rows else ")")
        ]
        for c in self.columns.values():
            extra = ""
            if c.type in ("float", "int"):
                extra = f" [{_fmt(c.lower)}, {_fmt(c.upper)}]"
            elif c.type == "category":
                extra = f" {{{', '.join(map(str, c.categories or ()))}}}"
            lines.append(f"  {c.name}: {c.type}{extra}" + ("" if c.release else " (not releasable)"))
        return "\n".join(lines)

    # ---------------------------------------------------------------- use

    def spec(self, name: str) -> ColumnSpec:
        if name not in self.columns:
            raise SchemaError(
                f"the schema of {self.dataset!r} declares no column {name!r} "
                f"(declared: {list(self.columns)})."
            )
        return self.columns[name]

    def releasable(self, name: str) -> ColumnSpec:
        c = self.spec(name)
        if not c.release:
            raise SchemaError(
                f"the schema of {self.dataset!r} marks column {name!r} release: false; it cannot "
                "enter any release. Nothing was charged or released."
            )
        return c

    def bounds(self, names: Sequence[str]) -> list[tuple[float, float]]:
        """The declared (lower, upper) of each named column, in order (bool: (0, 1)).

        Raises
        ------
        SchemaError
            A column not declared, not releasable, not numeric, or whose bounds are still the
            draft's placeholders.
        """
        out = []
        for n in names:
            c = self.releasable(n)
            if c.type == "bool":
                out.append((0.0, 1.0))
                continue
            if c.type not in ("float", "int"):
                raise SchemaError(
                    f"column {n!r} is of type {c.type} in the schema; it has no numeric bounds."
                )
            if c.lower is None or c.upper is None:
                raise SchemaError(
                    f"the schema of {self.dataset!r} gives column {n!r} no bounds (lower/upper are "
                    "placeholders): the data owner must declare public bounds from knowledge of the "
                    "domain. Nothing was charged."
                )
            out.append((c.lower, c.upper))
        return out

    def validate(self, table: Any, *, columns: Sequence[str] | None = None) -> None:
        """Refuse data that do not match the schema, naming the column and the rule, never a value.

        ``table`` is a :class:`~dpinfer.data.Table` or a mapping name -> column (one chunk).
        ``columns``: check only these declared columns (default: every declared column must be
        present). Rules: present; of the declared type (int: integral numbers; bool: booleans or
        0/1; category: one of the declared categories); no missing value; inside the declared
        bounds; at most ``rows.max`` rows.
        """
        cols = table.columns if hasattr(table, "columns") and not isinstance(table, Mapping) else table
        names = list(self.columns) if columns is None else list(columns)
        missing = [c for c in names if c not in cols]
        if missing:
            raise self._fail(missing[0], "missing column", "the data have no such column")
        n = None
        for name in names:
            spec = self.spec(name)
            col = np.asarray(cols[name])
            n = col.shape[0]
            self._check(spec, col)
        if n is not None and self.max_rows is not None and n > self.max_rows:
            raise SchemaError(
                f"the data do not match the schema of {self.dataset!r}: {n} rows exceed the declared maximum "
                f"rows.max = {self.max_rows} (rule: row count). Nothing was charged or released."
            )

    def _fail(self, column: str, rule: str, what: str) -> SchemaError:
        return SchemaError(
            f"the data do not match the schema of {self.dataset!r}: column {column!r}: {what} "
            f"(rule: {rule}). "
            "Nothing was charged or released."
        )

    def _check(self, spec: ColumnSpec, col: np.ndarray) -> None:
        kind = col.dtype.kind
        numeric = kind in "biuf"
        if spec.type in ("float", "int", "bool") and not numeric:
            raise self._fail(spec.name, "type", f"declared {spec.type} but the column holds text")
        if numeric:
            missing = int(np.isnan(col).sum()) if kind == "f" else 0
        else:
            missing = int(sum(v is None for v in col))
        if missing:
            raise self._fail(spec.name, "no missing values", f"{missing} missing value(s)")
        if spec.type == "int" and kind == "f" and np.any(col != np.floor(col)):
            raise self._fail(
                spec.name,
                "type",
                f"declared int but {int((col != np.floor(col)).sum())} value(s) are not whole numbers",
            )
        if spec.type == "bool" and kind != "b" and np.any((col != 0) & (col != 1)):
            raise self._fail(
                spec.name,
                "type",
                f"declared bool but {int(((col != 0) & (col != 1)).sum())} value(s) are neither 0 nor 1",
            )
        if spec.type in ("float", "int"):
            lo = -np.inf if spec.lower is None else spec.lower
            hi = np.inf if spec.upper is None else spec.upper
            bad = int(((col < lo) | (col > hi)).sum())
            if bad:
                raise self._fail(
                    spec.name,
                    "bounds",
                    f"{bad} value(s) outside the declared bounds [{_fmt(spec.lower)}, {_fmt(spec.upper)}]",
                )
        if spec.type == "category" and spec.categories is not None:
            allowed = set(spec.categories)
            if numeric:
                vals = col.tolist()
                bad = sum(1 for v in vals if not (float(v).is_integer() and int(v) in allowed))
            else:
                bad = sum(1 for v in col if v not in allowed)
            if bad:
                raise self._fail(spec.name, "categories", f"{bad} value(s) not among the declared categories")


def _fmt(v: float | None) -> str:
    return "?" if v is None else f"{v:g}"


# -------------------------------------------------------------------- draft


def file_arrow_schema(path: Path) -> Any:
    """A data file's Arrow schema (names and types; a CSV's types inferred from its first block)."""
    from .table import file_format

    fmt = file_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path)
    if fmt == "arrow":
        import pyarrow as pa
        import pyarrow.ipc as ipc

        with pa.memory_map(str(path), "r") as src:
            try:
                return ipc.open_file(src).schema
            except pa.ArrowInvalid:
                src.seek(0)
                return ipc.open_stream(src).schema
    import pyarrow.csv as pcsv

    return pcsv.open_csv(path).schema  # the type inferred from the first block; no value is kept


def _draft_type(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    return "string"


def draft_schema(source: str | os.PathLike[str], *, dataset: str | None = None) -> str:
    """A draft schema (YAML text) for a data file, from its column names and types only.

    Every bound and category list is a placeholder (``null``) with a comment for the data owner to
    fill from public knowledge of the domain; no value, minimum, maximum or distinct value is read
    from the data. Text columns are drafted ``type: string, release: false`` (never releasable
    until the owner declares them a category with its public list of categories).
    """
    from .labels import check_names

    path = Path(source)
    if not path.is_file():
        raise SchemaError(f"no data file at {str(path)!r}.")
    schema = file_arrow_schema(path)
    names = check_names(list(schema.names), "the file's column names")
    name = dataset or path.stem
    lines = [
        "# DRAFT schema written by `dpinfer schema draft` from the file's column names and types ONLY.",
        "# Every bound below is a placeholder: fill it from public knowledge of the domain (a published",
        "# range, a questionnaire's scale), NEVER from the data (bounds read from the data are not private).",
        "# It is public: it will be printed in reports.",
        f"dataset: {json.dumps(name)}",
        "neighbouring: replace-one     # or add-remove",
        "rows: {max: null}             # FILL IN (optional): a public cap on the number of records",
        "columns:",
    ]
    for col, t in zip(names, schema.types, strict=True):
        typ = _draft_type(t)
        key = json.dumps(col)
        lines.append(f"  {key}:")
        lines.append(f"    type: {typ}")
        if typ in ("float", "int"):
            lines.append("    lower: null    # FILL IN: a public bound, not read from the data")
            lines.append("    upper: null    # FILL IN: a public bound, not read from the data")
        elif typ == "string":
            lines.append(
                "    release: false    # text; to release it, set type: category and list the public "
                "categories"
            )
    return "\n".join(lines) + "\n"
