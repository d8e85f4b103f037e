"""Owner-side statistics at scale: in memory vs streamed vs on Dask, against DuckDB's plain sums.

The data: ``--rows`` records (default 10⁸) × 10 float64 columns (x1..x9 uniform on [0, 10], y a
0/1 logistic response), generated here in ``--files`` Parquet files of row groups of
``--row-group`` records under a temporary directory (deleted at the end). Two releases:

* the private GLM's sufficient statistics (``release_glm_statistics(dir, "y", family="logistic",
  data=DataSpec(bounds={x1..x9: (0, 10)}), chunk_rows=...)``: 65 exact fixed-point sums) and
* a clamped mean of x1 (``clamped_mean(dir, column="x1", lower=2, upper=8, n=...)``),

each measured, in its own child process (peak RSS = that process's ``ru_maxrss``; on Dask also
every worker's), as

* **in-memory**: the first file (10⁸/``--files`` rows) read into numpy, then the array release
  (the one-chunk case; timed without the read, and the read separately);
* **streaming**: the Parquet directory streamed in chunks of ``--chunk-rows``;
* **dask**: the row groups on a ``distributed.LocalCluster`` of 2 single-threaded worker
  processes (cluster start-up timed separately);
* **duckdb**: the same non-private sums in SQL (``sum(xj*xk)``, ..., ``avg(least(greatest(x1,
  2), 8))``) over the same files, with 1 and with 2 threads: the floor.

Bit-identity: the confidential statistic handed to the mechanism (captured in the child; only its
SHA-256 is kept) and the released value with the same seeded (insecure, benchmark-only) noise,
compared between in-memory and streaming (first file, several chunk sizes) and between streaming
and Dask (all rows).

Usage: ``nice -n 10 python benchmarks/streaming_stats.py [--rows 100000000]``; writes
benchmarks/results/streaming_stats.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

FEATURES = [f"x{j}" for j in range(1, 10)]
BOUNDS = dict.fromkeys(FEATURES, (0.0, 10.0))
CLAMP = (2.0, 8.0)
BETA = np.linspace(-0.3, 0.3, 9)


def generate(root: Path, rows: int, files: int, row_group: int) -> float:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    per_file = rows // files
    for f in range(files):
        with pq.ParquetWriter(root / f"part-{f:03d}.parquet", pa.schema(
                [(c, pa.float64()) for c in [*FEATURES, "y"]])) as w:
            for start in range(0, per_file, row_group):
                m = min(row_group, per_file - start)
                rng = np.random.default_rng([7, f, start])
                x = rng.uniform(0.0, 10.0, size=(9, m))
                eta = BETA @ (x - 5.0)
                y = (rng.random(m) < 1.0 / (1.0 + np.exp(-eta))).astype(np.float64)
                w.write_table(pa.table({**{c: x[j] for j, c in enumerate(FEATURES)}, "y": y}),
                              row_group_size=m)
    return time.perf_counter() - t0


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()[:16]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(mode: str, what: str, path: str, rows: int, chunk_rows: int) -> dict:
    """One measurement in this (fresh) process; prints its JSON."""
    from dpinfer.privacy import InsecureRandomnessWarning, PrivacyRNG
    from dpinfer.privacy.mechanisms.base import Mechanism

    warnings.simplefilter("ignore")
    captured: list[np.ndarray] = []
    real_release = Mechanism.release

    def spy(self, value, *a, **k):  # the confidential statistic; only its hash leaves the child
        captured.append(np.array(value, dtype=np.float64))
        return real_release(self, value, *a, **k)

    Mechanism.release = spy  # type: ignore[method-assign]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        rng = PrivacyRNG.insecure_deterministic(123)
    out: dict = {"mode": mode, "statistic": what, "chunk_rows": chunk_rows}
    if mode == "duckdb1" or mode == "duckdb2":
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads={1 if mode == 'duckdb1' else 2}")
        src = f"read_parquet('{path}/*.parquet')"
        if what == "glm":
            cols = ["1", *FEATURES]
            terms = [f"sum(y*{c})" for c in cols] + [
                f"sum({a}*{b})" for i, a in enumerate(cols) for b in cols[i:] if not (a == "1" and b == "1")]
            sql = f"SELECT count(*), {', '.join(terms)} FROM {src}"
        else:
            sql = f"SELECT count(*), avg(least(greatest(x1, {CLAMP[0]}), {CLAMP[1]})) FROM {src}"
        t0 = time.perf_counter()
        res = con.execute(sql).fetchone()
        out["seconds"] = time.perf_counter() - t0
        out["rows"] = int(res[0])
        out["n_sums"] = len(res) - 1
    else:
        from dpinfer.data.streaming import OnDask
        from dpinfer.models.data_spec import DataSpec
        from dpinfer.privacy.context import ReleaseContext
        from dpinfer.release.glm import release_glm_statistics
        from dpinfer.release.streaming import clamped_mean

        ctx = ReleaseContext(privacy_rng=rng)
        kw_glm = dict(family="logistic", data=DataSpec(bounds=BOUNDS), epsilon=1.0, delta=1e-8,
                      context=ctx)
        kw_mean = dict(lower=CLAMP[0], upper=CLAMP[1], n=rows, epsilon=1.0, context=ctx)
        # warm-up (numba's cached kernels, the noise calibration) on 10 records, outside the timing
        tiny = {c: np.full(10, 5.0) for c in FEATURES} | {"y": np.tile([0.0, 1.0], 5), "x1": np.full(10, 5.0)}
        release_glm_statistics(tiny, "y", **kw_glm)
        clamped_mean(tiny, column="x1", **(kw_mean | {"n": 10}))
        cluster = client = None
        if mode == "inmemory":
            import pyarrow.parquet as pq

            t0 = time.perf_counter()
            table = pq.read_table(path, columns=[*FEATURES, "y"] if what == "glm" else ["x1"])
            X = np.column_stack([table.column(c).to_numpy() for c in FEATURES]) if what == "glm" else None
            y = table.column("y").to_numpy() if what == "glm" else None
            x1 = table.column("x1").to_numpy() if what != "glm" else None
            del table
            out["read_seconds"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            if what == "glm":
                val = release_glm_statistics(X, y, chunk_rows=chunk_rows, **kw_glm).z
            else:
                from dpinfer.privacy.mechanisms.clamped import clamped_release

                val = np.atleast_1d(clamped_release("mean", *CLAMP, 1.0, n=rows).release_records(
                    x1, context=ctx).value)
            out["seconds"] = time.perf_counter() - t0
        else:
            source: object = path
            if mode == "dask":
                import distributed

                t0 = time.perf_counter()
                cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                   dashboard_address=None)
                client = distributed.Client(cluster)
                out["cluster_start_seconds"] = time.perf_counter() - t0
                source = OnDask(path, client)
            t0 = time.perf_counter()
            if what == "glm":
                val = release_glm_statistics(source, "y", chunk_rows=chunk_rows, **kw_glm).z
            else:
                val = np.atleast_1d(clamped_mean(source, column="x1", chunk_rows=chunk_rows, **kw_mean).value)
            out["seconds"] = time.perf_counter() - t0
            if client is not None:
                workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
                out["worker_peak_rss_mib"] = sorted(workers.values())
                client.close()
                cluster.close()  # type: ignore[union-attr]
        out["rows"] = rows
        out["statistic_sha"] = _sha(captured[-1])
        out["released_sha"] = _sha(np.asarray(val))
    out["rows_per_s"] = out["rows"] / out["seconds"]
    out["peak_rss_mib"] = _peak_mib()
    return out


def run_child(*args: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                         env=env,
                         check=False)
    if res.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{res.stderr[-3000:]}")
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1]
    r = json.loads(line)
    print(json.dumps(r), flush=True)
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--row-group", type=int, default=1 << 20)
    ap.add_argument("--chunk-rows", type=int, default=1 << 18)
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--only", nargs="*", help="rerun these modes only and update the existing --out file")
    ap.add_argument("--data", help="reuse a directory generated by an earlier run (all/ and first/); kept")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "streaming_stats.json"))
    ap.add_argument("--child", nargs=5, metavar=("MODE", "WHAT", "PATH", "ROWS", "CHUNK"))
    a = ap.parse_args()
    if a.child:
        mode, what, path, rows, chunk = a.child
        print(json.dumps(child(mode, what, path, int(rows), int(chunk))))
        return
    tmp = Path(a.data) if a.data else Path(tempfile.mkdtemp(prefix="dpinfer-streaming-", dir=a.tmp))
    root, first = tmp / "all", tmp / "first"
    try:
        if a.data:
            gen_s = None
        else:
            root.mkdir()
            first.mkdir()
            gen_s = generate(root, a.rows, a.files, a.row_group)
            os.link(root / "part-000.parquet", first / "part-000.parquet")  # the in-memory subset
        n_first = a.rows // a.files
        size = sum(p.stat().st_size for p in root.glob("*.parquet"))
        results = []
        cr = str(a.chunk_rows)
        run = run_child
        if a.only:  # rerun the selected modes, keep the other measurements of the existing file
            old = json.loads(Path(a.out).read_text())
            gen_s, size = old["generate_seconds"], old["parquet_bytes"]

            def run(*args: str) -> dict:
                if args[0] in a.only:
                    return run_child(*args) | {"rerun": True}
                sub = "first" if args[2] == str(first) else "all"
                return next(r for r in old["results"] if r["mode"] == args[0] and r["statistic"] == args[1]
                            and r["subset"] == sub and str(r["chunk_rows"]) == args[4])

        for what in ("glm", "mean"):
            # all rows: streamed, Dask, DuckDB
            results.append(run("streaming", what, str(root), str(a.rows), cr) | {"subset": "all"})
            results.append(run("dask", what, str(root), str(a.rows), cr) | {"subset": "all"})
            for m in ("duckdb1", "duckdb2"):
                results.append(run(m, what, str(root), str(a.rows), cr) | {"subset": "all"})
            # the first file: in memory vs streamed in three chunk sizes
            results.append(run("inmemory", what, str(first), str(n_first), cr) | {"subset": "first"})
            for c in ("1000", cr, str(1 << 20)):
                r = run("streaming", what, str(first), str(n_first), c)
                results.append(r | {"subset": "first"})
    finally:
        if not a.data:
            shutil.rmtree(tmp, ignore_errors=True)

    def pick(what, mode, subset):
        return [r for r in results if r["statistic"] == what and r["mode"] == mode and r["subset"] == subset]

    summary = {}
    for what in ("glm", "mean"):
        s_all = pick(what, "streaming", "all")[0]
        d_all = pick(what, "dask", "all")[0]
        first_runs = pick(what, "streaming", "first") + pick(what, "inmemory", "first")
        summary[what] = {
            "streaming_over_duckdb1": s_all["rows_per_s"] / pick(what, "duckdb1", "all")[0]["rows_per_s"],
            "streaming_over_duckdb2": s_all["rows_per_s"] / pick(what, "duckdb2", "all")[0]["rows_per_s"],
            "bit_identical_streaming_dask_all_rows": (s_all["statistic_sha"] == d_all["statistic_sha"]
                                                      and s_all["released_sha"] == d_all["released_sha"]),
            "bit_identical_inmemory_streaming_first_file": (
                len({r["statistic_sha"] for r in first_runs}) == 1
                and len({r["released_sha"] for r in first_runs}) == 1),
            "chunkings_compared_first_file": sorted({r["chunk_rows"] for r in first_runs}),
        }
    report = {
        "benchmark": "streaming_stats",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "rows": a.rows, "columns": 10, "files": a.files, "row_group": a.row_group, "chunk_rows": a.chunk_rows,
        "parquet_bytes": size, "generate_seconds": gen_s,
        "note": "one run on a shared 2-core machine (nice -n 10); in-memory measured on the first file only "
                f"({n_first} rows); peak RSS is each child process's ru_maxrss (Dask: the client process, "
                "and "
                "each worker's in worker_peak_rss_mib)"
                + ("; generate_seconds null: the data were reused (--data) from an earlier run of this script"
                   if gen_s is None else "")
                + ("; entries with rerun=true were measured again with --only, the others kept"
                   if a.only else ""),
        "results": results, "summary": summary,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
