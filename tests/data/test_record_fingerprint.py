"""A data set is its records, not its bytes (issue 35 item 3): trivially changed copies of a file
share one fingerprint (and so one budget); genuinely different records do not."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.data import record_fingerprint
from dpinfer.errors import InvalidDataError
from dpinfer.privacy.fingerprint import RecordFingerprint, file_fingerprint

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

HEADER = ["age", "bmi", "visits", "region"]
ROWS = [["34.5", "0.1", "3", "north"], ["61", "22.25", "0", "south"], ["47.125", "30", "12", "east"],
        ["29", "18.5", "1", "north"]]


def _csv(rows=ROWS, header=HEADER, eol="\n", final=True):
    text = eol.join([",".join(header)] + [",".join(r) for r in rows])
    return (text + (eol if final else "")).encode()


def _copies(tmp_path):
    """name -> (path, should it be the same data set as base.csv?)."""
    files = {
        "base": _csv(),
        "CRLF line ends": _csv(eol="\r\n"),
        "rows reordered": _csv(rows=[ROWS[2], ROWS[0], ROWS[3], ROWS[1]]),
        "header renamed": _csv(header=["Age (y)", "BMI", "n_visits", "area"]),
        "0.10 for 0.1": _csv(rows=[["34.50", "0.10", "3", "north"], *ROWS[1:]]),
        "no final newline": _csv(final=False),
        "quoted cells": _csv(rows=[[f'"{c}"' for c in r] for r in ROWS]),
        "61.0 for 61, 3e0 for 3": _csv(rows=[["34.5", "0.1", "3e0", "north"], ["61.0", *ROWS[1][1:]],
                                             *ROWS[2:]]),
        # genuinely different records
        "one value changed": _csv(rows=[["34.5", "0.2", "3", "north"], *ROWS[1:]]),
        "one record removed": _csv(rows=ROWS[:-1]),
        "one record duplicated": _csv(rows=[*ROWS, ROWS[0]]),
        "two columns swapped": _csv(rows=[[r[1], r[0], r[2], r[3]] for r in ROWS]),
        "a category's case": _csv(rows=[["34.5", "0.1", "3", "North"], *ROWS[1:]]),
    }
    out = {}
    for name, data in files.items():
        p = tmp_path / (name.replace(" ", "_").replace(",", "").replace(".", "_") + ".csv")
        p.write_bytes(data)
        out[name] = p
    t = pa.table({"age": [34.5, 61, 47.125, 29], "bmi": [0.1, 22.25, 30, 18.5], "visits": [3, 0, 12, 1],
                  "region": ["north", "south", "east", "north"]})
    pq.write_table(t, tmp_path / "same.parquet")
    out["the same records in Parquet"] = tmp_path / "same.parquet"
    return out


SAME = {"base", "CRLF line ends", "rows reordered", "header renamed", "0.10 for 0.1", "no final newline",
        "quoted cells", "61.0 for 61, 3e0 for 3", "the same records in Parquet"}


def fingerprint_table(tmp_path):
    """(copy, same file bytes?, same records fingerprint?) for every copy (the issue's table)."""
    copies = _copies(tmp_path)
    base_bytes, base_records = file_fingerprint(copies["base"]), record_fingerprint(copies["base"])
    return [(name, file_fingerprint(p) == base_bytes, record_fingerprint(p) == base_records)
            for name, p in copies.items()]


def test_trivially_changed_copies_share_the_fingerprint_and_different_records_do_not(tmp_path):
    table = fingerprint_table(tmp_path)
    for name, _, same in table:
        assert same == (name in SAME), name
    # before (file bytes): only the base itself matched
    assert [n for n, same_bytes, _ in table if same_bytes] == ["base"]


def test_the_fingerprint_is_order_and_chunk_independent_and_streams():
    rng = np.random.default_rng(0)
    cols = [rng.normal(size=1000), rng.integers(0, 5, 1000), np.array(["a", "b"] * 500, dtype=object)]
    whole = RecordFingerprint().update(cols).hexdigest()
    perm = rng.permutation(1000)
    chunks = RecordFingerprint()
    for s in range(0, 1000, 37):  # any chunking, any row order
        chunks.update([c[perm][s:s + 37] for c in cols])
    assert chunks.hexdigest() == whole and chunks.rows == 1000
    for c in (3, 1000):
        assert record_fingerprint(pa.table({"x": cols[0], "k": cols[1], "s": cols[2]}), chunk_rows=c) == whole
    # missing is missing: NaN and null agree, but differ from 0
    a = RecordFingerprint().update([np.array([1.0, np.nan])]).hexdigest()
    assert a == RecordFingerprint().update([np.array([1.0, None], dtype=object)]).hexdigest()
    assert a != RecordFingerprint().update([np.array([1.0, 0.0])]).hexdigest()
    # the same numbers as int or float, -0.0 as 0.0; big integers exactly
    assert RecordFingerprint().update([np.array([1, 0])]).hexdigest() == \
        RecordFingerprint().update([np.array([1.0, -0.0])]).hexdigest()
    big = RecordFingerprint().update([np.array([2**62, 1])]).hexdigest()
    assert big != RecordFingerprint().update([np.array([2**62 + 1, 1])]).hexdigest()
    with pytest.raises(InvalidDataError, match="columns"):
        RecordFingerprint().update([cols[0]]).update([cols[0], cols[1]])
