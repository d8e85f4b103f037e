"""Confidential data in, public facts declared: readers for every table format, and the schema.

* :func:`read_table` / :class:`Table` — a numpy array (with declared names), a mapping, pandas,
  polars, pyarrow, Parquet / Arrow IPC / CSV files and DuckDB queries (:func:`duckdb_query`), as
  named numpy columns; :func:`iter_chunks` streams the same sources in bounded memory.
* :class:`Schema` — the data set's public facts (name, neighbouring relation, row cap, column
  types, bounds, categories, which columns may be released) from a YAML/JSON/TOML file; releases
  read their bounds from it and refuse data that do not match it; :func:`draft_schema` drafts one
  from a file's names and types, with placeholders for every bound.
* :func:`record_fingerprint` — the data set's identity for the ledger: its records, not its
  bytes (row order, headers, number formatting, line endings and file format do not count).
* Column labels come only from declared names or the container's own string labels
  (:func:`column_labels`), never from stringifying a column.

Reading spends no budget: the releases (``dpinfer.release``) read through these functions and
charge before anything is drawn.
"""

from __future__ import annotations

from .fingerprint import record_fingerprint
from .labels import check_names, column_labels, container_kind
from .schema import ColumnSpec, Schema, SchemaError, draft_schema
from .table import DuckDBQuery, Table, duckdb_query, feature_matrix, file_format, iter_chunks, read_table

__all__ = [
    "ColumnSpec",
    "Schema",
    "SchemaError",
    "draft_schema",
    "DuckDBQuery",
    "Table",
    "check_names",
    "column_labels",
    "container_kind",
    "duckdb_query",
    "feature_matrix",
    "file_format",
    "iter_chunks",
    "read_table",
    "record_fingerprint",
]
