"""Every source reads to the same named numpy columns; iter_chunks streams them in bounded chunks."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.data import DuckDBQuery, Table, duckdb_query, iter_chunks, read_table
from dpinfer.errors import InvalidDataError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

N = 23


def _cols():
    rng = np.random.default_rng(0)
    return {
        "age": rng.uniform(20, 80, N).round(3),
        "visits": rng.integers(0, 9, N),
        "smoker": rng.random(N) < 0.3,
        "region": np.array(["north", "south", "east"], dtype=object)[rng.integers(0, 3, N)],
    }


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return _sources(tmp_path_factory.mktemp("src"))


def _sources(tmp_path):
    cols = _cols()
    t = pa.table(cols)
    pq.write_table(t, tmp_path / "d.parquet", row_group_size=7)
    import pyarrow.feather as feather

    feather.write_feather(t, tmp_path / "d.arrow", chunksize=5)
    pd.DataFrame(cols).to_csv(tmp_path / "d.csv", index=False)
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{tmp_path / 'd.parquet'}')")
    con.close()
    return cols, {
        "mapping": cols,
        "pandas": pd.DataFrame(cols),
        "polars": pl.DataFrame(cols),
        "pyarrow-table": t,
        "pyarrow-batch": pa.record_batch(cols),
        "parquet": str(tmp_path / "d.parquet"),
        "arrow": tmp_path / "d.arrow",
        "csv": tmp_path / "d.csv",
        "duckdb": duckdb_query("SELECT * FROM t", database=tmp_path / "d.duckdb"),
    }


def _same(got, cols):
    assert list(got) == list(cols)
    np.testing.assert_array_equal(got["age"], cols["age"])
    assert got["age"].dtype == np.float64 and got["visits"].dtype == np.int64
    np.testing.assert_array_equal(got["visits"], cols["visits"])
    np.testing.assert_array_equal(got["smoker"].astype(bool), cols["smoker"])
    assert list(got["region"]) == list(cols["region"])


def test_every_source_reads_to_the_same_named_columns(sources):
    cols, sources = sources
    for kind, src in sources.items():
        t = read_table(src)
        assert isinstance(t, Table) and t.n_rows == N, kind
        _same(t.columns, cols)
        assert "north" not in repr(t) and str(cols["age"][0]) not in repr(t)


def test_numpy_needs_declared_names_and_columns_select(sources):
    X = np.column_stack([_cols()["age"], _cols()["visits"]])
    with pytest.raises(InvalidDataError, match="no column names"):
        read_table(X)
    t = read_table(X, names=["age", "visits"])
    assert t.names == ("age", "visits") and t.matrix().shape == (N, 2)
    _, sources = sources
    assert read_table(sources["parquet"], columns=["visits", "age"]).names == ("visits", "age")
    with pytest.raises(InvalidDataError, match="no column"):
        read_table(sources["csv"], columns=["weight"])


@pytest.mark.parametrize("chunk_rows", [1, 5, 7, 23, 100])
def test_iter_chunks_concatenates_to_the_table_whatever_the_chunk_size(sources, chunk_rows):
    cols, sources = sources
    for kind, src in sources.items():
        chunks = list(iter_chunks(src, columns=["age", "visits"], chunk_rows=chunk_rows))
        sizes = [len(c["age"]) for c in chunks]
        assert sum(sizes) == N and all(s == chunk_rows for s in sizes[:-1]), (kind, sizes)
        assert all(list(c) == ["age", "visits"] for c in chunks)
        np.testing.assert_array_equal(np.concatenate([c["age"] for c in chunks]), cols["age"])
        np.testing.assert_array_equal(np.concatenate([c["visits"] for c in chunks]), cols["visits"])


def test_bad_sources_are_refused_clearly(tmp_path):
    (tmp_path / "d.xlsx").write_text("x")
    with pytest.raises(InvalidDataError, match="Parquet"):
        read_table(tmp_path / "d.xlsx")
    with pytest.raises(InvalidDataError, match="no data file"):
        read_table(tmp_path / "missing.parquet")
    with pytest.raises(InvalidDataError, match="chunk_rows"):
        next(iter_chunks(tmp_path / "d.xlsx", columns=None, chunk_rows=0))
    with pytest.raises(InvalidDataError, match="query failed"):
        read_table(duckdb_query("SELECT * FROM nowhere"))
    assert "secret" not in repr(DuckDBQuery("SELECT * FROM t WHERE name = 'secret'"))
