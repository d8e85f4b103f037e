"""The owner-side releases from chunked sources: the same bits in memory, streamed from Parquet, from
pyarrow, from an iterator of chunks and on a Dask cluster; memory bounded by the chunk; bad records
refused (column and rule named, never a value) before anything is charged."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpinfer.data.streaming import OnDask, accumulate, iter_chunks
from dpinfer.errors import InvalidDataError
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.fixed_point import GLMSums
from dpinfer.privacy.mechanisms.clamped import clamped_release
from dpinfer.release.glm import release_glm_statistics
from dpinfer.release.streaming import clamped_mean, embedding_mean
from dpinfer.release.synthesis import release_covariate_model
from seeded_privacy_rng import prng

N = 1500
FEATS = ("age", "bmi")
BOUNDS = {"age": (18.0, 90.0), "bmi": (15.0, 50.0)}


def _columns(seed=0, n=N):
    rng = np.random.default_rng(seed)
    return {"age": rng.uniform(18, 90, n), "bmi": rng.uniform(15, 50, n),
            "event": (rng.random(n) < 0.3).astype(float), "visits": rng.integers(0, 9, n).astype(float)}


def _parquet(tmp_path, cols, row_group=700):
    path = tmp_path / "records.parquet"
    pq.write_table(pa.table(cols), path, row_group_size=row_group)
    return path


def _glm(source, y, feature_names=None, *, ledger=None, dataset=None, **kw):
    ctx = ReleaseContext(ledger=ledger, dataset=dataset, privacy_rng=prng(9))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release_glm_statistics(source, y, family="logistic", epsilon=1.0, delta=1e-6, context=ctx,
                                      data=DataSpec(bounds=BOUNDS, feature_names=feature_names), **kw).z


def test_the_glm_release_is_the_same_bits_from_every_source(tmp_path):
    cols = _columns()
    X = np.column_stack([cols[c] for c in FEATS])
    ref = _glm(X, cols["event"], feature_names=FEATS)  # arrays in memory: one chunk
    path = _parquet(tmp_path, cols)
    table = pa.table(cols)
    sources = {
        "memory, chunks of 7": lambda: _glm(X, cols["event"], feature_names=FEATS, chunk_rows=7),
        "parquet, chunks of 1": lambda: _glm(path, "event", chunk_rows=1),
        "parquet, chunks of 1000": lambda: _glm(path, "event", chunk_rows=1000),
        "parquet, default chunks": lambda: _glm(path, "event"),
        "pyarrow table": lambda: _glm(table, "event", chunk_rows=512),
        "mapping": lambda: _glm(cols, "event"),
        "iterator of uneven chunks": lambda: _glm(
            iter([{k: v[:11] for k, v in cols.items()}, {k: v[11:1400] for k, v in cols.items()},
                  {k: v[1400:] for k, v in cols.items()}]), "event"),
    }
    for name, run in sources.items():
        assert run().tobytes() == ref.tobytes(), name


def test_clamped_mean_and_covariate_counts_are_the_same_bits_from_parquet(tmp_path):
    cols = _columns(1)
    path = _parquet(tmp_path, cols, row_group=333)
    rel = clamped_release("mean", 20.0, 80.0, 1.0, n=N, mechanism="gaussian", delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = rel.release_records(cols["age"], context=ReleaseContext(privacy_rng=prng(4))).value
        for c in (1, 7, 1000, None):
            got = clamped_mean(path, column="age", lower=20.0, upper=80.0, n=N, epsilon=1.0,
                               mechanism="gaussian", delta=1e-6, chunk_rows=c,
                                   context=ReleaseContext(privacy_rng=prng(4))).value
            assert np.asarray(got).tobytes() == np.asarray(ref).tobytes()
        X = np.column_stack([cols["bmi"], cols["visits"]])
        kw = dict(bounds=[(15, 50), (0, 8)], integer=[False, True], epsilon=1.0)
        mem = release_covariate_model(X, context=ReleaseContext(privacy_rng=prng(2)), **kw)
        streamed = release_covariate_model(path, columns=["bmi", "visits"], chunk_rows=101,
                                           context=ReleaseContext(privacy_rng=prng(2)), **kw)
    assert streamed.columns == ("bmi", "visits")
    for a, b in zip(mem.counts, streamed.counts, strict=True):
        assert np.array_equal(a, b)


def test_the_embedding_mean_streamed_equals_the_release_kernel_in_memory(tmp_path):
    from dpinfer.distances import RFFMMD

    cols = _columns(3, n=1500)
    dist = RFFMMD(5.0, 16, seed=0)
    pts = np.column_stack([cols["age"], cols["bmi"]])
    ref = dist.fixed_point_mean(pts)
    got = embedding_mean(dist, _parquet(tmp_path, cols, 400), columns=FEATS, chunk_rows=37)
    assert got.tobytes() == ref.tobytes()


def test_records_outside_the_bounds_in_a_file_are_refused_before_any_charge(tmp_path):
    cols = _columns(2)
    cols["bmi"] = cols["bmi"].copy()
    cols["bmi"][[10, 1300]] = 77.0  # outside (15, 50), in two row groups
    path = _parquet(tmp_path, cols)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="rdp")
    with pytest.raises(InvalidDataError, match=r"column\(s\) bmi \(2\)") as info:
        _glm(path, "event", ledger=ledger, dataset="d", chunk_rows=100)
    assert "77" not in str(info.value)
    with pytest.raises(InvalidDataError, match=r"no column.*'smoker'"):
        _glm(path, "smoker", ledger=ledger, dataset="d")
    with pytest.raises(InvalidDataError, match="feature_names"):
        release_glm_statistics(path, "event", family="logistic", epsilon=1.0, delta=1e-6,
                               chunk_rows=100, data=DataSpec(bounds=(0, 1)))
    assert ledger.spent("d") == 0 and ledger.history("d") == []


def test_memory_stays_bounded_by_the_chunk():
    """10^6 records × 3 columns (24 MB) generated chunk by chunk: the traced peak of the pass grows
    with the chunk, not with the data."""
    n = 1_000_000
    spec = GLMSums(("a", "b"), "y", None, (0.0, 0.0, -np.inf), (1.0, 1.0, np.inf), (0.5, 0.5, 0.0),
                   (2.0, 2.0, 1.0), (0, 0, 1))

    def generated(chunk):
        for s in range(0, n, chunk):
            rng = np.random.default_rng(s)
            m = min(chunk, n - s)
            yield {"a": rng.random(m), "b": rng.random(m), "y": (rng.random(m) < 0.5).astype(float)}

    peaks = {}
    totals = {}
    for chunk in (10_000, 100_000):
        tracemalloc.start()
        totals[chunk] = accumulate(spec, generated(chunk))
        peaks[chunk] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    chunk_bytes = 10_000 * 3 * 8
    assert peaks[10_000] < 12 * chunk_bytes < n * 3 * 8 / 8, peaks  # a few chunk copies, not the data
    assert peaks[100_000] > 5 * peaks[10_000]  # it is the chunk that sets the peak
    assert totals[10_000].rows == n


def test_iter_chunks_reads_only_the_declared_columns(tmp_path):
    cols = _columns(4, n=50)
    chunks = list(iter_chunks(_parquet(tmp_path, cols, 20), columns=["bmi"], chunk_rows=15))
    assert [set(c) for c in chunks] == [{"bmi"}] * len(chunks)
    assert np.array_equal(np.concatenate([c["bmi"] for c in chunks]), cols["bmi"])
    with pytest.raises(InvalidDataError, match="chunk_rows"):
        list(iter_chunks(cols, columns=["bmi"], chunk_rows=0))


@pytest.mark.slow
def test_a_dask_cluster_of_two_workers_gives_the_same_bits(tmp_path):
    distributed = pytest.importorskip("distributed")
    cols = _columns(5)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, (s, e) in enumerate([(0, 600), (600, 601), (601, N)]):
        pq.write_table(pa.table({k: v[s:e] for k, v in cols.items()}), parts / f"p{i}.parquet",
                       row_group_size=400)
    X = np.column_stack([cols[c] for c in FEATS])
    ref = _glm(X, cols["event"], feature_names=FEATS)
    rel = clamped_release("mean", 20.0, 80.0, 1.0, n=N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_mean = rel.release_records(cols["age"], context=ReleaseContext(privacy_rng=prng(6))).value
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        on_dask = OnDask(parts, client)
        assert _glm(on_dask, "event", chunk_rows=128).tobytes() == ref.tobytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean = clamped_mean(on_dask, column="age", lower=20.0, upper=80.0, n=N, epsilon=1.0,
                                context=ReleaseContext(privacy_rng=prng(6))).value
        assert np.asarray(mean).tobytes() == np.asarray(ref_mean).tobytes()
        assert len(client.scheduler_info()["workers"]) == 2
