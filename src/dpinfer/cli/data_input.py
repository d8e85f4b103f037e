"""The commands' data files: every table format, the schema, and the records' fingerprint.

``--data`` (``--observed``, ``--covariates``) takes CSV (``.csv``; each command's own strict
reader), Parquet (``.parquet``, ``.pq``) or Arrow IPC (``.arrow``, ``.feather``, ``.ipc``; read by
:func:`dpinfer.data.read_table`). ``--schema FILE`` gives the data set's public schema
(:class:`dpinfer.data.Schema`): the commands take their bounds from it unless given explicitly,
charge the budget named by its ``dataset``, and refuse a file that does not match it before
anything is charged.

The budget is bound to the file's *records* (:func:`dpinfer.data.record_fingerprint`), so a
reformatted copy of the same records (line ends, row order, headers, number formatting, another
file format) is the same data set. A file that cannot be parsed as a table is identified by its
bytes (its release is then refused by the command's reader anyway), and a budget registered by an
earlier version with the file's SHA-256 keeps being matched by it.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

import numpy as np

from ..data import Schema, SchemaError, file_format, read_table, record_fingerprint
from ..errors import DPInferError, InvalidDataError
from ..privacy.fingerprint import file_fingerprint

__all__ = [
    "add_schema_option", "data_fingerprint", "file_columns", "is_table_file", "load_schema",
    "read_numeric", "schema_dataset",
]


def is_table_file(path: str | Path) -> bool:
    """A Parquet or Arrow IPC file (not CSV, which the commands read with their own strict readers)."""
    try:
        return file_format(path) in ("parquet", "arrow")
    except InvalidDataError:
        return False


def data_fingerprint(path: str | Path, *, ledger: Any = None, dataset: str | None = None) -> str:
    """The fingerprint a command binds ``path``'s budget to (module docstring)."""
    try:
        fp = record_fingerprint(path)
    except (DPInferError, OSError, ValueError):
        return file_fingerprint(path)  # not a table: its bytes
    if ledger is not None and dataset is not None:
        try:
            registered = ledger.budget(dataset).fingerprint
        except DPInferError:
            registered = None
        if registered is not None and registered != fp:
            legacy = file_fingerprint(path)
            if registered == legacy:  # a budget bound to the file's bytes by an earlier version
                return legacy
    return fp


def file_columns(path: str | Path) -> list[str]:
    """A data file's column names (the header of a CSV; the schema of Parquet/Arrow)."""
    p = Path(path)
    if is_table_file(p):
        from ..data.schema import file_arrow_schema

        return list(file_arrow_schema(p).names)
    with p.open(newline="") as fh:
        return [h.strip() for h in next(csv.reader(fh), [])]


def read_numeric(path: str | Path, columns: list[str], *, schema: Schema | None = None) -> np.ndarray:
    """The named numeric columns of a Parquet/Arrow file, (rows, len(columns)); missing values and
    text are refused naming the column, never a value."""
    table = read_table(path, schema=schema)
    for c in columns:
        col = table[c]
        if col.dtype.kind not in "biuf":
            raise InvalidDataError(f"{Path(path).name}: column {c!r} is not numeric; encode it numerically.")
        if col.dtype.kind == "f" and np.isnan(col).any():
            raise InvalidDataError(
                f"{Path(path).name}: column {c!r} has {int(np.isnan(col).sum())} missing value(s); impute or "
                "remove those records first. Nothing was charged or released."
            )
    if table.n_rows == 0:
        raise InvalidDataError(f"{Path(path).name} has no records.")
    return table.matrix(columns)


def add_schema_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--schema", metavar="FILE",
        help="the data set's public schema (YAML/JSON/TOML: columns, types, bounds, categories; "
        "`dpinfer schema draft` writes one to fill in): bounds default to it, the budget is its "
        "'dataset', and a file that does not match it is refused before anything is charged",
    )


def load_schema(args: argparse.Namespace) -> Schema | None:
    path = getattr(args, "schema", None)
    return None if not path else Schema.load(path)


def schema_dataset(args: argparse.Namespace, schema: Schema | None) -> None:
    """Default ``--dataset`` to the schema's data set; refuse another name (one data set, one budget)."""
    if schema is None:
        return
    given = getattr(args, "dataset", None)
    if given and given != schema.dataset:
        raise SchemaError(
            f"--dataset {given} but the schema describes data set {schema.dataset!r}: one data set has one "
            "budget; drop --dataset or use that data set's schema. Nothing was charged or released."
        )
    if getattr(args, "ledger", None):
        args.dataset = schema.dataset


def validate_file(path: str | Path, schema: Schema | None) -> None:
    """Refuse a data file that does not match its schema (before anything is charged)."""
    if schema is not None:
        read_table(path, schema=schema)
