"""Reading confidential tables from any source into named numpy columns, whole or in chunks.

Sources (:func:`read_table`, :func:`iter_chunks`):

* in memory: a numpy array (2-D; its column names must be declared with ``columns=`` or a schema),
  a mapping of name to column, a pandas or polars ``DataFrame``, a pyarrow ``Table`` or
  ``RecordBatch``;
* files, by extension: Parquet (``.parquet``, ``.pq``), Arrow IPC (``.arrow``, ``.feather``,
  ``.ipc``) and CSV (``.csv``, ``.tsv``, ``.txt``; a header line is required);
* a DuckDB query (:func:`duckdb_query`), or a DuckDB relation.

Labels come only from declared names or the container's own string labels
(:mod:`dpinfer.data.labels`). Columns are held as numpy arrays: numbers as float64 (int64 for
integer columns), booleans as bool, text as an object array of ``str``; a missing value is NaN in
a numeric column and ``None`` in a text column (releases refuse both).

Everything here reads; nothing is charged or released. Streaming (:func:`iter_chunks`) holds one
chunk of ``chunk_rows`` rows (plus the reader's own buffer) at a time: Parquet row groups are read
batch by batch, Arrow IPC files are memory-mapped, CSV is parsed block by block and a DuckDB query
is fetched as Arrow record batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from .labels import check_names, column_labels, container_kind

__all__ = ["DuckDBQuery", "Table", "duckdb_query", "file_format", "iter_chunks", "read_table"]

PARQUET = (".parquet", ".pq")
ARROW = (".arrow", ".feather", ".ipc")
CSV = (".csv", ".tsv", ".txt")


@dataclass(frozen=True)
class DuckDBQuery:
    """A SQL query to run on a DuckDB database as a data source (read-only).

    ``database`` is a DuckDB database file (opened read-only) or ``None`` for an in-memory
    database, in which the query can still read files (``read_parquet('...')``). The query text
    is the owner's: it is never shown in results.
    """

    sql: str
    database: str | None = None

    def __repr__(self) -> str:  # the query may name confidential filters; keep it out of reprs
        return f"DuckDBQuery(database={self.database!r})"


def duckdb_query(sql: str, *, database: str | os.PathLike[str] | None = None) -> DuckDBQuery:
    """A DuckDB query as a data source for :func:`read_table`, :func:`iter_chunks` and the releases.

    Example: ``dpinfer.data.duckdb_query("SELECT age, bmi FROM patients", database="clinic.duckdb")``.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidDataError("duckdb_query needs the SQL text of a query.")
    return DuckDBQuery(sql, None if database is None else os.fspath(database))


@dataclass(frozen=True)
class Table:
    """Named columns of one confidential table, as numpy arrays of equal length.

    Its repr shows the column names, types and the number of rows, never a value.
    """

    columns: Mapping[str, np.ndarray]
    n_rows: int = field(default=0)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.columns)

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}: {_kind_name(v)}" for k, v in self.columns.items())
        return f"Table({self.n_rows} rows; {kinds})"

    def __len__(self) -> int:
        return self.n_rows

    def __getitem__(self, name: str) -> np.ndarray:
        return self.column(name)

    def column(self, name: str) -> np.ndarray:
        if name not in self.columns:
            raise InvalidDataError(f"the data have no column {name!r} (columns: {list(self.names)}).")
        return self.columns[name]

    def select(self, names: Sequence[str]) -> Table:
        return Table({n: self.column(n) for n in names}, self.n_rows)

    def matrix(self, names: Sequence[str] | None = None) -> np.ndarray:
        """The named numeric columns as one float64 (n, k) matrix (bools as 0/1)."""
        names = list(self.names if names is None else names)
        cols = []
        for n in names:
            c = self.column(n)
            if c.dtype.kind not in "biuf":
                raise InvalidDataError(
                    f"column {n!r} is not numeric ({_kind_name(c)}); it cannot be a feature."
                )
            cols.append(c.astype(np.float64))
        if not cols:
            return np.zeros((self.n_rows, 0))
        return np.column_stack(cols)


def _kind_name(col: np.ndarray) -> str:
    return {"f": "float", "i": "int", "u": "int", "b": "bool"}.get(col.dtype.kind, "string")


def file_format(path: str | os.PathLike[str]) -> str:
    """``"parquet"``, ``"arrow"`` or ``"csv"`` from a file's extension (refused otherwise)."""
    suffix = Path(path).suffix.lower()
    for fmt, exts in (("parquet", PARQUET), ("arrow", ARROW), ("csv", CSV)):
        if suffix in exts:
            return fmt
    raise InvalidDataError(
        f"cannot read {Path(path).name!r}: the data file must be Parquet ({', '.join(PARQUET)}), Arrow IPC "
        f"({', '.join(ARROW)}) or CSV ({', '.join(CSV)})."
    )


def _pa() -> Any:
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - the 'data' extra
        raise InvalidDataError("reading this source needs pyarrow: pip install 'dpinfer[data]'.") from None
    return pyarrow


# ----------------------------------------------------------------- arrow -> numpy columns


def arrow_column(arr: Any) -> np.ndarray:
    """One pyarrow (chunked) array as a numpy column (module docstring)."""
    pa = _pa()
    import pyarrow.compute as pc

    t = arr.type
    if pa.types.is_dictionary(t):
        arr = (
            arr.cast(t.value_type)
            if not isinstance(arr, pa.ChunkedArray)
            else pa.chunked_array([c.dictionary_decode() for c in arr.chunks], type=t.value_type)
        )
        t = arr.type
    if pa.types.is_boolean(t):
        if arr.null_count:
            return arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_integer(t):
        if arr.null_count:
            return arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return np.asarray(arr.to_pylist(), dtype=object)
    if pa.types.is_null(t):
        return np.full(len(arr), np.nan)
    raise InvalidDataError(
        f"a column of Arrow type {t} is not supported (numbers, booleans and text are); cast it in the "
        "source (e.g. in the DuckDB query)."
    )


def _from_arrow(tab: Any, columns: Sequence[str] | None) -> Table:
    names = check_names(list(tab.column_names), "the table's column names")
    want = list(names) if columns is None else list(columns)
    missing = [c for c in want if c not in names]
    if missing:
        raise InvalidDataError(f"the data have no column(s) {missing} (columns: {list(names)}).")
    cols = {c: arrow_column(tab.column(c)) for c in want}
    return Table(cols, int(tab.num_rows))


def _numpy_column(values: Any) -> np.ndarray:
    col = np.asarray(values)
    if col.ndim != 1:
        raise InvalidDataError(f"a column must be one-dimensional, got shape {col.shape}.")
    kind = col.dtype.kind
    if kind == "b":
        return col.astype(bool)
    if kind in "iu":
        return col.astype(np.int64)
    if kind == "f":
        return col.astype(np.float64)
    if kind in "USO":
        out = np.empty(col.shape[0], dtype=object)
        for i, v in enumerate(col):
            if v is None or (isinstance(v, float) and np.isnan(v)):
                out[i] = None
            elif isinstance(v, (str, np.str_)):
                out[i] = str(v)
            elif isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)):
                return _numbers(col)
            else:
                raise InvalidDataError(
                    f"a column holds objects of type {type(v).__name__}; expected numbers or text."
                )
        return out
    raise InvalidDataError(
        f"columns of dtype kind {kind!r} are not supported (numbers, booleans and text are)."
    )


def _numbers(col: np.ndarray) -> np.ndarray:
    try:
        return np.asarray([np.nan if v is None else float(v) for v in col], dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError("a column mixes numbers and text.") from None


def _in_memory(X: Any, columns: Sequence[str] | None, declared: Sequence[str] | None) -> Table:
    kind = container_kind(X)
    if kind == "pyarrow":
        if declared is not None:
            raise InvalidDataError("a pyarrow table names its own columns; select them with columns=[...].")
        return _from_arrow(X, columns)
    if kind == "duckdb":
        return _from_arrow(X.to_arrow_table() if hasattr(X, "to_arrow_table") else X.arrow(), columns)
    if kind == "polars":
        labels = column_labels(X)
        assert labels is not None
        X = X.to_arrow()
        return _from_arrow(X, columns)
    if kind in ("pandas", "mapping"):
        labels = column_labels(X)
        assert labels is not None
        want = list(labels) if columns is None else list(columns)
        missing = [c for c in want if c not in labels]
        if missing:
            raise InvalidDataError(f"the data have no column(s) {missing} (columns: {list(labels)}).")
        cols = {c: _numpy_column(np.asarray(X[c]) if kind == "pandas" else X[c]) for c in want}
    else:
        if hasattr(X, "columns") or hasattr(X, "column_names"):
            column_labels(X, declared=declared)  # refuses an unknown labelled container
        arr = np.asarray(X)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise InvalidDataError(f"an array of records must be 2-D (rows, columns), got shape {arr.shape}.")
        names = declared if declared is not None else columns
        if names is None:
            raise InvalidDataError(
                "a numpy array has no column names: declare them (columns=[...], or a schema). Nothing was "
                "charged or released."
            )
        names = check_names(names, "columns")
        if len(names) != arr.shape[1]:
            raise InvalidDataError(f"{len(names)} column names declared for {arr.shape[1]} columns.")
        cols = {n: _numpy_column(arr[:, j]) for j, n in enumerate(names)}
        if columns is not None and declared is not None:
            cols = {c: cols[c] for c in check_names(columns, "columns")}
    lengths = {len(c) for c in cols.values()}
    if len(lengths) > 1:
        raise InvalidDataError("the columns have different lengths.")
    return Table(cols, lengths.pop() if lengths else 0)


# ----------------------------------------------------------------- files and queries


def _open_duckdb(q: DuckDBQuery) -> Any:
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the 'data' extra
        raise InvalidDataError("a DuckDB source needs duckdb: pip install 'dpinfer[data]'.") from None
    if q.database is not None and not Path(q.database).exists():
        raise InvalidDataError(f"no DuckDB database at {q.database!r}.")
    con = duckdb.connect(q.database or ":memory:", read_only=q.database is not None)
    try:
        rel = con.sql(q.sql)
    except duckdb.Error as e:
        con.close()
        raise InvalidDataError(
            f"the DuckDB query failed ({type(e).__name__}); check the query and the database."
        ) from None
    if rel is None:
        con.close()
        raise InvalidDataError("the DuckDB query returns no rows (it must be a SELECT).")
    return con, rel


def _arrow_reader(source: Any, columns: Sequence[str] | None, batch_rows: int) -> Iterator[Any]:
    """Record batches of a file, query or DuckDB relation (``columns`` selected where possible)."""
    pa = _pa()
    if isinstance(source, DuckDBQuery):
        con, rel = _open_duckdb(source)
        try:
            if hasattr(rel, "to_arrow_reader"):
                reader = rel.to_arrow_reader(batch_rows)
            else:  # duckdb < 1.4
                reader = rel.fetch_record_batch(batch_rows)
            yield from reader
        finally:
            con.close()
        return
    path = Path(os.fspath(source))
    if not path.is_file():
        raise InvalidDataError(f"no data file {path.name!r} at {str(path.parent)!r}.")
    fmt = file_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        _require(pf.schema_arrow.names, columns)
        yield from pf.iter_batches(batch_size=batch_rows, columns=None if columns is None else list(columns))
    elif fmt == "arrow":
        import pyarrow.ipc as ipc

        with pa.memory_map(str(path), "r") as src:
            try:
                f = ipc.open_file(src)
                batches: Iterator[Any] = (f.get_batch(i) for i in range(f.num_record_batches))
            except pa.ArrowInvalid:
                src.seek(0)
                batches = iter(ipc.open_stream(src))
            for b in batches:
                _require(b.schema.names, columns)
                yield b if columns is None else b.select(list(columns))
    else:
        import pyarrow.csv as pcsv

        delim = "\t" if path.suffix.lower() == ".tsv" else ","
        # blank lines are refused, never skipped: a dropped record would change n and the noise
        parse = pcsv.ParseOptions(delimiter=delim, ignore_empty_lines=False)
        read = pcsv.ReadOptions(block_size=1 << 22, autogenerate_column_names=_headerless(path, delim))
        convert = pcsv.ConvertOptions(
            include_columns=None if columns is None else list(columns), strings_can_be_null=True
        )
        try:
            reader = pcsv.open_csv(
                path,
                parse_options=parse,
                convert_options=convert,
                read_options=read,
            )
            yield from reader
        except pa.ArrowKeyError:
            header = pcsv.open_csv(path, parse_options=parse, read_options=read).schema.names
            _require(header, columns)
            raise
        except pa.ArrowInvalid:
            raise InvalidDataError(
                f"cannot parse {path.name!r} as CSV with a header line (ragged rows, or a column whose "
                "values change type after the first block: declare its type in a schema)."
            ) from None


def _headerless(path: Path, delim: str) -> bool:
    """Whether a CSV file's first line is a record (every cell a number) rather than a header;
    such a file's columns are then named ``f0, f1, ...``."""
    with path.open("rb") as fh:
        first = fh.readline(1 << 16).decode("utf-8", "replace").strip()
    if not first:
        return False
    try:
        [float(c.strip().strip('"')) for c in first.split(delim)]
    except ValueError:
        return False
    return True


def _require(names: Sequence[str], columns: Sequence[str] | None) -> None:
    missing = [c for c in columns or [] if c not in names]
    if missing:
        raise InvalidDataError(f"the data have no column(s) {missing} (columns: {list(names)}).")


def _read_source(source: Any, columns: Sequence[str] | None) -> Table:
    pa = _pa()
    batches = list(_arrow_reader(source, columns, 1 << 16))
    if batches:
        tab = pa.Table.from_batches(batches)
    else:
        tab = pa.table({c: pa.array([], pa.float64()) for c in columns or []})
    return _from_arrow(tab, columns)


def _is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def read_table(
    source: Any,
    *,
    columns: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
    schema: Any = None,
) -> Table:
    """Read a confidential table from any supported source (module docstring) into a :class:`Table`.

    Parameters
    ----------
    source
        A numpy array, mapping, pandas/polars DataFrame, pyarrow Table/RecordBatch, a path to a
        Parquet/Arrow IPC/CSV file, or a :func:`duckdb_query`.
    columns
        The columns to read (default: all). For a numpy array without ``names``, its column names.
    names
        Declared names of a numpy array's columns (all of them, in order).
    schema
        A :class:`~dpinfer.data.schema.Schema`: the table is validated against it (every declared
        column present, of its type, inside its bounds and categories; refused naming the column and
        the rule, never a value), and a numpy array's columns take its declared names.

    Raises
    ------
    InvalidDataError
        An unreadable source, labels that are not distinct strings, or (with a schema) data that do
        not match it. Nothing is charged by reading.
    """
    if (
        schema is not None
        and names is None
        and container_kind(source) == "array"
        and not _is_path(source)
        and not isinstance(source, DuckDBQuery)
    ):
        names = list(schema.columns)
    if isinstance(source, Table):
        table = source if columns is None else source.select(columns)
    elif isinstance(source, DuckDBQuery) or _is_path(source):
        table = _read_source(source, columns)
    else:
        table = _in_memory(source, columns, names)
    if schema is not None:
        schema.validate(table)
    return table


def _rechunk(batches: Iterator[Any], chunk_rows: int) -> Iterator[Any]:
    pa = _pa()
    pending: list[Any] = []
    size = 0
    for b in batches:
        while b.num_rows:
            take = min(chunk_rows - size, b.num_rows)
            pending.append(b.slice(0, take))
            size += take
            b = b.slice(take)
            if size == chunk_rows:
                yield pa.Table.from_batches(pending)
                pending, size = [], 0
    if size:
        yield pa.Table.from_batches(pending)


def iter_chunks(
    source: Any,
    *,
    columns: Sequence[str] | None,
    chunk_rows: int,
    names: Sequence[str] | None = None,
) -> Iterator[dict[str, np.ndarray]]:
    """Yield the source's rows in chunks of ``chunk_rows`` (the last may be shorter), each a dict
    name -> numpy column (as :class:`Table`'s columns), in the source's row order.

    Files and DuckDB queries are streamed (module docstring): memory is bounded by the chunk size;
    in-memory sources are sliced. ``columns=None`` reads every column.
    """
    if not isinstance(chunk_rows, (int, np.integer)) or isinstance(chunk_rows, bool) or chunk_rows < 1:
        raise InvalidDataError(f"chunk_rows must be a positive integer, got {chunk_rows!r}.")
    chunk_rows = int(chunk_rows)
    if isinstance(source, DuckDBQuery) or _is_path(source) or container_kind(source) in ("pyarrow", "duckdb"):
        if container_kind(source) == "pyarrow":
            batches = iter(source.to_batches() if hasattr(source, "to_batches") else [source])
            if columns is not None:
                batches = (b.select(list(columns)) for b in batches)
        elif container_kind(source) == "duckdb":
            batches = iter(
                source.to_arrow_reader(chunk_rows)
                if hasattr(source, "to_arrow_reader")
                else source.fetch_record_batch(chunk_rows)
            )
        else:
            batches = _arrow_reader(source, columns, chunk_rows)
        first = True
        for tab in _rechunk(batches, chunk_rows):
            if first:
                check_names(list(tab.column_names), "the source's column names")
                if columns is not None:
                    missing = [c for c in columns if c not in tab.column_names]
                    if missing:
                        raise InvalidDataError(f"the data have no column(s) {missing}.")
                first = False
            want = list(tab.column_names) if columns is None else list(columns)
            yield {c: arrow_column(tab.column(c)) for c in want}
        return
    table = read_table(source, columns=columns, names=names)
    for start in range(0, table.n_rows, chunk_rows):
        yield {k: v[start : start + chunk_rows] for k, v in table.columns.items()}


def feature_matrix(
    X: Any, *, names: Sequence[Any] | None = None
) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """(the columns of ``X`` as one 2-D array, their labels or None) for a release's features.

    Labels are ``names`` if declared, else the container's own string labels
    (:func:`~dpinfer.data.labels.column_labels`; a numpy array has none). Numeric columns become
    float64; a table with a text column gives an object array, which the release refuses.
    """
    labels = column_labels(X, declared=names)
    kind = container_kind(X)
    labelled = kind in ("pyarrow", "polars", "pandas", "mapping", "duckdb")
    if isinstance(X, Table) or (names is None and labelled):
        table = X if isinstance(X, Table) else _in_memory(X, None, None)
        if isinstance(X, Table):
            labels = table.names if names is None else labels
        cols = list(table.columns.values())
        if cols and all(c.dtype.kind in "biuf" for c in cols):
            return np.column_stack([c.astype(np.float64) for c in cols]), labels
        return (np.column_stack(cols) if cols else np.zeros((table.n_rows, 0))), labels
    if kind == "mapping":
        return np.column_stack([np.asarray(v) for v in X.values()]), labels
    if kind == "pyarrow":
        return np.column_stack([arrow_column(X.column(j)) for j in range(X.num_columns)]), labels
    return np.asarray(X), labels
