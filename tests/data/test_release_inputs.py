"""The releases read any source and a schema through one function (dpinfer.data.inputs): bounds
from the schema (explicit arguments override), the charge to the schema's data set, mismatched data
refused before anything is charged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.data import Schema, SchemaError, duckdb_query
from dpinfer.inference.glm import GLMSamplerOptions
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, DataSpec, LogisticRegression, TrainingOptions
from dpinfer.release.glm import release_glm_statistics
from seeded_privacy_rng import prng

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

FAST = GLMSamplerOptions(proposals=1000, adapt=1, draws=500, fallback="none")
SCHEMA = {
    "dataset": "clinic",
    "columns": {
        "age": {"type": "float", "lower": 20, "upper": 80},
        "bmi": {"type": "float", "lower": 18, "upper": 40},
        "event": {"type": "int", "lower": 0, "upper": 1},
        "name": {"type": "string", "release": False},
    },
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("d")
    rng = np.random.default_rng(0)
    n = 300
    t = pa.table({"age": rng.uniform(20, 80, n), "bmi": rng.uniform(18, 40, n),
                  "event": (rng.random(n) < 0.4).astype(np.int64), "name": [f"p{i}" for i in range(n)]})
    pq.write_table(t, tmp / "d.parquet")
    con = duckdb.connect(str(tmp / "d.duckdb"))
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{tmp / 'd.parquet'}')")
    con.close()
    return tmp, t


def _stat(source, y, *, ledger=None, dataset=None, **kw):
    from dpinfer.models.data_spec import DataSpec
    from dpinfer.release.glm import DATA_KEYWORDS

    data = {k: kw.pop(k) for k in list(kw) if k in DATA_KEYWORDS}
    ctx = ReleaseContext(ledger=ledger, dataset=dataset, privacy_rng=prng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release_glm_statistics(source, y, family="logistic", epsilon=1.0, delta=1e-6, context=ctx,
                                      data=DataSpec(**data), **kw)


def test_a_parquet_file_a_duckdb_query_and_arrays_give_the_same_release(files):
    tmp, t = files
    s = Schema.from_dict(SCHEMA)
    a = _stat(tmp / "d.parquet", "event", schema=s)
    b = _stat(duckdb_query("SELECT * FROM t", database=tmp / "d.duckdb"), "event", schema=s)
    X = np.column_stack([t["age"].to_numpy(), t["bmi"].to_numpy()])
    c = _stat(X, t["event"].to_numpy(), bounds=[(20, 80), (18, 40)], feature_names=["age", "bmi"])
    assert a.feature_names == b.feature_names == c.feature_names == ("age", "bmi")
    np.testing.assert_array_equal(a.z, b.z)
    np.testing.assert_array_equal(a.z, c.z)
    np.testing.assert_array_equal(a.feature_bounds, [[20, 80], [18, 40]])
    assert a.privacy.details["schema"]["dataset"] == "clinic"
    # an explicit argument overrides the schema's bounds
    d = _stat(tmp / "d.parquet", "event", schema=s, bounds=[(0, 100), (0, 50)])
    np.testing.assert_array_equal(d.feature_bounds, [[0, 100], [0, 50]])


def test_the_schema_names_the_budget_and_a_mismatch_charges_nothing(files, tmp_path):
    tmp, t = files
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("clinic", epsilon=5.0, delta=1e-5, accountant="rdp")
    s = Schema.from_dict(SCHEMA)
    _stat(tmp / "d.parquet", "event", schema=s, ledger=ledger, dataset=s.dataset)
    spent = ledger.spent("clinic")
    assert spent > 0
    with pytest.raises(SchemaError, match="one data set has one budget"):
        _stat(tmp / "d.parquet", "event", schema=s, ledger=ledger, dataset="other")
    with pytest.raises(SchemaError, match="one data set has one budget"):  # unaccounted: the same check
        _stat(tmp / "d.parquet", "event", schema=s, dataset="other")
    narrow = Schema.from_dict({**SCHEMA, "columns": {**SCHEMA["columns"], "age": {
        "type": "float", "lower": 30, "upper": 80}}})
    with pytest.raises(SchemaError, match=r"column 'age'.*rule: bounds"):
        _stat(tmp / "d.parquet", "event", schema=narrow, ledger=ledger, dataset="clinic")
    with pytest.raises(SchemaError, match="release: false"):
        _stat(tmp / "d.parquet", "event", schema=s, ledger=ledger, dataset="clinic",
              feature_names=["age", "name"])
    assert ledger.spent("clinic") == spent


def test_dpvi_reads_a_file_with_its_schema(files):
    tmp, _ = files
    fit = DPVI(LogisticRegression(3)).fit(tmp / "d.parquet", "event",
                                          data=DataSpec(schema=Schema.from_dict(SCHEMA), intercept=True),
                                          private=False, seed=0,
                                          training=TrainingOptions(steps=20))
    assert fit.param_names == ("intercept", "age", "bmi")
    assert fit.config["design"]["bounds"] == [[20.0, 80.0], [18.0, 40.0]]


def test_a_release_under_another_relation_than_the_schema_is_refused(files, tmp_path):
    tmp, _ = files
    add_remove = Schema.from_dict({**SCHEMA, "neighbouring": "add-remove"})
    with pytest.raises(SchemaError, match="declares add-remove neighbours"):
        _stat(tmp / "d.parquet", "event", schema=add_remove)  # the GLM's n is public: replace-one
    from dpinfer.release.synthesis import release_covariate_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = release_covariate_model(tmp / "d.parquet", schema=add_remove, neighbouring="add-remove",
                                    epsilon=1.0, columns=["age", "bmi"],
                                        context=ReleaseContext(privacy_rng=prng(0)))
    assert m.privacy.neighbouring == "add-remove"
    with pytest.raises(SchemaError, match="declares add-remove"):
        release_covariate_model(tmp / "d.parquet", schema=add_remove, epsilon=1.0, columns=["age", "bmi"])
