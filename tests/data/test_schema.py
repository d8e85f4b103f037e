"""The schema: loading (YAML/JSON/TOML), bounds, validation that names column and rule but never a
value, and a draft that holds no value read from the data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.data import Schema, SchemaError, draft_schema, read_table

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
yaml = pytest.importorskip("yaml")

DOC = {
    "dataset": "survey-2024",
    "neighbouring": "replace-one",
    "rows": {"max": 1000},
    "columns": {
        "age": {"type": "float", "lower": 0, "upper": 120},
        "bmi": {"type": "float", "lower": 10, "upper": 60},
        "smoker": {"type": "bool"},
        "region": {"type": "category", "categories": ["north", "south", "east", "west"]},
        "visits": {"type": "int", "lower": 0, "upper": 50},
        "name": {"type": "string", "release": False},
    },
}
SECRET = 31.41592653


def _table(n=20):
    rng = np.random.default_rng(1)
    return {
        "age": rng.uniform(20, 80, n), "bmi": rng.uniform(18, 40, n), "smoker": rng.random(n) < 0.5,
        "region": np.array(["north", "south"] * (n // 2), dtype=object), "visits": rng.integers(0, 9, n),
        "name": np.array([f"person{i}" for i in range(n)], dtype=object),
    }


def test_yaml_json_and_toml_load_to_the_same_schema(tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(DOC))
    (tmp_path / "s.json").write_text(json.dumps(DOC))
    toml = ['dataset = "survey-2024"', 'neighbouring = "replace-one"', "[rows]", "max = 1000"]
    for k, v in DOC["columns"].items():
        toml.append(f"[columns.{k}]")
        toml += [f"{kk} = {json.dumps(vv)}" for kk, vv in v.items()]
    (tmp_path / "s.toml").write_text("\n".join(toml))
    schemas = [Schema.load(tmp_path / f"s.{ext}") for ext in ("yaml", "json", "toml")]
    assert schemas[0] == schemas[1] == schemas[2] == Schema.from_dict(DOC)
    assert Schema.from_dict(schemas[0].to_dict()) == schemas[0]
    s = schemas[0]
    assert s.bounds(["age", "visits", "smoker"]) == [(0, 120), (0, 50), (0, 1)]
    assert "region: category {north, south, east, west}" in s.describe()


@pytest.mark.parametrize("change,match", [
    ({"neighbouring": "swap"}, "neighbouring"),
    ({"columns": {"a": {"type": "decimal"}}}, "types are"),
    ({"columns": {"a": {"type": "float", "lower": 5, "upper": 1}}}, "lower < upper"),
    ({"columns": {"a": {"type": "float", "lowr": 5}}}, "unknown key"),
    ({"columns": {"a": {"type": "category", "categories": ["x", "x"]}}}, "twice"),
    ({"dataset": ""}, "dataset"),
    ({"rows": {"max": -1}}, "rows.max"),
])
def test_malformed_schemas_are_refused(change, match):
    with pytest.raises(SchemaError, match=match):
        Schema.from_dict({**DOC, **change})


def test_bounds_refuse_placeholders_and_unreleasable_columns():
    s = Schema.from_dict({**DOC, "columns": {**DOC["columns"], "age": {"type": "float", "lower": None}}})
    with pytest.raises(SchemaError, match="placeholders"):
        s.bounds(["age"])
    with pytest.raises(SchemaError, match="release: false"):
        s.bounds(["name"])
    with pytest.raises(SchemaError, match="declares no column"):
        s.bounds(["weight"])


@pytest.mark.parametrize("case,rule", [
    ("missing", "missing column"), ("type", "type"), ("bounds", "bounds"), ("category", "categories"),
    ("int", "type"), ("bool", "type"), ("nan", "no missing values"), ("rows", "row count"),
])
def test_data_that_do_not_match_are_refused_naming_column_and_rule_never_values(case, rule):
    s = Schema.from_dict(DOC)
    t = _table()
    col = {"missing": "bmi", "type": "age", "bounds": "age", "category": "region", "int": "visits",
           "bool": "smoker", "nan": "bmi", "rows": None}[case]
    if case == "missing":
        del t["bmi"]
    elif case == "type":
        t["age"] = np.array(["CANARY_Zq7"] * 20, dtype=object)
    elif case == "bounds":
        t["age"][3] = 120 + SECRET
    elif case == "category":
        t["region"][4] = "CANARY_Zq7"
    elif case == "int":
        t["visits"] = t["visits"] + SECRET
    elif case == "bool":
        t["smoker"] = np.full(20, SECRET)
    elif case == "nan":
        t["bmi"][0] = np.nan
    else:
        s = Schema.from_dict({**DOC, "rows": {"max": 10}})
    with pytest.raises(SchemaError, match=f"rule: {rule}") as e:
        s.validate(t)
    msg = str(e.value)
    assert (col is None or repr(col) in msg) and "Nothing was charged" in msg
    for marker in ("CANARY", "31.41", "151.41", "3.14159", "person"):
        assert marker not in msg
    Schema.from_dict(DOC).validate(_table())  # the matching table passes


def test_read_table_with_a_schema_validates_and_names_numpy_columns(tmp_path):
    s = Schema.from_dict({"dataset": "d", "columns": {"x": {"type": "float", "lower": 0, "upper": 1},
                                                      "y": {"type": "int", "lower": 0, "upper": 3}}})
    t = read_table(np.array([[0.5, 1], [0.2, 3]]), schema=s)
    assert t.names == ("x", "y")
    with pytest.raises(SchemaError, match="rule: bounds"):
        read_table(np.array([[0.5, 1], [0.2, 4]]), schema=s)


def test_the_draft_holds_names_and_types_and_no_value_from_the_data(tmp_path):
    n = 50
    rng = np.random.default_rng(2)
    age = rng.uniform(20, 80, n)
    age[7] = SECRET
    t = pa.table({"age": age, "visits": np.arange(n) + 1234567, "smoker": rng.random(n) < 0.5,
                  "region": ["CANARY_Zq7"] * n})
    pq.write_table(t, tmp_path / "d.parquet")
    import pyarrow.csv as pcsv

    pcsv.write_csv(t, tmp_path / "d.csv")
    for f in ("d.parquet", "d.csv"):
        text = draft_schema(tmp_path / f, dataset="clinic")
        for marker in ("CANARY", "Zq7", "31.41", "3.14159", "1234567", "1234616", "20.", "79."):
            assert marker not in text, (f, marker)
        assert "FILL IN" in text and "NEVER from the data" in text
        s = Schema.from_dict(yaml.safe_load(text))
        assert s.dataset == "clinic"
        assert {k: c.type for k, c in s.columns.items()} == {
            "age": "float", "visits": "int", "smoker": "bool", "region": "string"}
        assert s.columns["age"].lower is None and not s.columns["region"].release
        with pytest.raises(SchemaError, match="placeholders"):
            s.bounds(["age"])
