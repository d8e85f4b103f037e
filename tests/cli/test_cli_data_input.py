"""The commands read Parquet/Arrow as well as CSV, take a public schema (--schema) for their bounds and
budget name, refuse a file that does not match it before anything is charged, and bind the budget to
the records (a Parquet copy of a registered CSV is the same data set); ``dpinfer schema draft``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.privacy import Ledger

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
yaml = pytest.importorskip("yaml")

MARK = 31.41592653

SCHEMA = {
    "dataset": "clinic",
    "columns": {
        "age": {"type": "float", "lower": 18, "upper": 90},
        "bmi": {"type": "float", "lower": 15, "upper": 50},
        "event": {"type": "int", "lower": 0, "upper": 1},
    },
}


def _files(tmp_path, n=200):
    rng = np.random.default_rng(0)
    age, bmi = rng.uniform(20, 80, n).round(3), rng.uniform(18, 40, n).round(3)
    age[5] = MARK
    event = (rng.random(n) < 0.3).astype(np.int64)
    csv = tmp_path / "p.csv"
    csv.write_text("age,bmi,event\n" + "".join(f"{a},{b},{e}\n" for a, b, e in zip(age, bmi, event,
                                                                                     strict=True)))
    parquet = tmp_path / "p.parquet"
    perm = rng.permutation(n)  # the same records in another order and format
    pq.write_table(pa.table({"age": age[perm], "bmi": bmi[perm], "event": event[perm]}), parquet)
    schema = tmp_path / "schema.yaml"
    schema.write_text(yaml.safe_dump(SCHEMA))
    return csv, parquet, schema


def _no_marker(text):
    assert "31.41" not in text and "3.14159" not in text


def test_glm_reads_parquet_with_a_schema_and_the_records_share_the_csvs_budget(tmp_path, capsys):
    csv, parquet, schema = _files(tmp_path)
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "clinic", "--epsilon", "5",
                 "--delta", "1e-5", "--accountant", "rdp", "--data", str(csv)]) == 0
    capsys.readouterr()
    code = main(["glm", "--data", str(parquet), "--schema", str(schema), "--target", "event",
                 "--epsilon", "1", "--ledger", str(ledger), "--seed", "0", "--fallback", "none",
                 "--out", str(tmp_path / "fit"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    info = json.loads(out.strip().splitlines()[-1])
    assert info["param_names"] == ["intercept", "age", "bmi"]
    assert info["privacy"]["details"]["schema"]["dataset"] == "clinic"  # the public schema, reported
    _no_marker(out + err)
    assert len(Ledger(ledger).history("clinic")) == 1
    # another data-set name than the schema's is refused (one data set, one budget)
    assert main(["glm", "--data", str(parquet), "--schema", str(schema), "--target", "event",
                 "--epsilon", "1", "--ledger", str(ledger), "--dataset", "other", "--out",
                 str(tmp_path / "fit2")]) == 2
    assert "one budget" in capsys.readouterr().err


@pytest.mark.parametrize("change,rule", [
    ({"age": {"type": "float", "lower": 40, "upper": 90}}, "bounds"),
    ({"sex": {"type": "category", "categories": ["f", "m"]}}, "missing column"),
    ({"event": {"type": "bool"}, "age": {"type": "int", "lower": 0, "upper": 120}}, "type"),
])
def test_a_file_that_does_not_match_its_schema_is_refused_before_any_charge(tmp_path, capsys, change, rule):
    csv, parquet, schema = _files(tmp_path)
    schema.write_text(yaml.safe_dump({**SCHEMA, "columns": {**SCHEMA["columns"], **change}}))
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("clinic", epsilon=5.0, delta=1e-5, accountant="rdp")
    for data in (csv, parquet):
        code = main(["glm", "--data", str(data), "--schema", str(schema), "--target", "event",
                     "--features", "age,bmi", "--bounds", "0:100", "--epsilon", "1", "--ledger",
                     str(tmp_path / "l.db"), "--out", str(tmp_path / "fit")])
        err = capsys.readouterr().err
        assert code == 2 and f"rule: {rule}" in err and "Nothing was charged" in err, err
        _no_marker(err)
    assert ledger.history("clinic") == []


@pytest.mark.slow
def test_release_and_dpvi_read_parquet_with_a_schema(tmp_path, capsys):
    _, parquet, schema = _files(tmp_path)
    assert main(["release", "--model", "gaussian-mean", "--data", str(parquet), "--columns", "age",
                 "--schema", str(schema), "--epsilon", "1", "--no-ledger", "--out",
                 str(tmp_path / "rel.json")]) == 0
    doc = json.loads((tmp_path / "rel.json").read_text())
    assert doc["model_args"]["clamp"] == [18, 90]  # the schema's bounds
    assert main(["dpvi", "--data", str(parquet), "--schema", str(schema), "--target", "event",
                 "--epsilon", "1", "--steps", "20", "--no-ledger", "--no-progress",
                 "--out", str(tmp_path / "fit.json")]) == 0
    out, err = capsys.readouterr()
    _no_marker(out + err + (tmp_path / "fit.json").read_text() + (tmp_path / "rel.json").read_text())


def test_schema_draft_holds_no_value_and_check_validates(tmp_path, capsys):
    csv, parquet, schema = _files(tmp_path)
    draft = tmp_path / "draft.yaml"
    assert main(["schema", "draft", str(parquet), "-o", str(draft), "--dataset", "clinic"]) == 0
    text = draft.read_text()
    _no_marker(text)
    assert "lower: null    # FILL IN: a public bound, not read from the data" in text
    assert main(["schema", "draft", str(parquet), "-o", str(draft)]) == 2  # never overwrites silently
    assert main(["schema", "check", "--schema", str(schema), "--data", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "200 rows match" in out and "age: float [18, 90]" in out
