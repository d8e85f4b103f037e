"""Canary audit (issue 36 item 4): confidential values never reach an output.

The data carry unique marker values (features 31.41592653 and 27.18281828, text cells
``CANARY_Zq7`` / ``CANARY_Rg4``) and go through every release path (the GLM statistics and the
private GLM, DPVI, the covariate model of synthesis, a clamped mean, ABCDP, the schema's refusals,
the readers and the command line) from every input type (numpy with declared names, a mapping,
pandas, polars, pyarrow Table and RecordBatch, Parquet, Arrow IPC, CSV, a DuckDB query). Every
result's repr, str, notebook HTML (``_repr_html_``) and summary, its saved file, its ArviZ export,
its privacy report (summary, repr, HTML), the ledger's rows and file, log records, warnings, error
messages and the CLI's output and files are searched for the markers in their common formattings
(repr, 6, 7 and 8 significant digits, 4 and 3 decimals, scientific, float32) and, in files, for
their float64/float32 bytes: 0 hits.

What it cannot see: a value leaked through an encoding it does not search (e.g. 4 significant
digits, "31.42", which noisy outputs produce by chance), or a function of the data (a mean, a
minimum) — that is what the releases' noise and the draft's placeholders are for.

The fast set covers every input type through the cheap releases and each costly release (private
GLM posterior, DPVI, ABCDP, the CLI) from one or two input types; the full cross product is
``slow``.
"""

from __future__ import annotations

import json
import logging
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpinfer.data import Schema, SchemaError, draft_schema, duckdb_query, read_table, record_fingerprint
from dpinfer.errors import DPInferError
from dpinfer.inference.glm import GLMPosteriorOptions, GLMSamplerOptions
from dpinfer.models.data_spec import DataSpec
from dpinfer.pipelines.glm import private_glm
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.mechanisms.clamped import clamped_release
from dpinfer.release import ABCDPOptions, abcdp
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions
from dpinfer.release.glm import release_glm_statistics
from dpinfer.release.synthesis import release_covariate_model
from seeded_privacy_rng import prng

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")
yaml = pytest.importorskip("yaml")

MARK_AGE, MARK_BMI = 31.41592653, 27.18281828
MARK_TEXT = ("CANARY_Zq7", "CANARY_Rg4")
N = 240
SCHEMA = {
    "dataset": "clinic",
    "columns": {
        "age": {"type": "float", "lower": 20, "upper": 80},
        "bmi": {"type": "float", "lower": 18, "upper": 40},
        "event": {"type": "int", "lower": 0, "upper": 1},
        "name": {"type": "string", "release": False},
    },
}
FAST = GLMSamplerOptions(proposals=600, adapt=1, draws=300, fallback="none")  # outputs, not sampling


def text_patterns() -> list[str]:
    out = list(MARK_TEXT)
    for v in (MARK_AGE, MARK_BMI):
        out += [repr(v), f"{v:g}", f"{v:.7g}", f"{v:.8g}", f"{v:.4f}", f"{v:.3f}", f"{v:e}", f"{v:.5e}",
                str(np.float32(v)), f"{v / 10:.6f}"[:7]]  # 3.14159 (scaled by 10: scientific digits)
    return sorted(set(out))


def byte_patterns() -> list[bytes]:
    out = [m.encode() for m in MARK_TEXT]
    for v in (MARK_AGE, MARK_BMI):
        out += [struct.pack("<d", v), struct.pack(">d", v), struct.pack("<f", v)]
    return out


class Sink:
    """Everything a release made visible, searched at the end."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []
        self.blobs: list[tuple[str, bytes]] = []

    def text(self, where: str, value: object) -> None:
        self.texts.append((where, value if isinstance(value, str) else repr(value)))

    def file(self, where: str, path: Path) -> None:
        data = Path(path).read_bytes()
        self.blobs.append((where, data))
        self.texts.append((where, data.decode("latin-1")))

    def result(self, where: str, res: object) -> None:
        self.text(f"{where} repr", repr(res))
        self.text(f"{where} str", str(res))
        if hasattr(res, "_repr_html_"):  # what a notebook shows (issue 40): parameters' means and intervals
            self.text(f"{where} html", res._repr_html_())
        for attr in ("summary", "param_names", "privacy", "settings", "config"):
            v = getattr(res, attr, None)
            if v is None:
                continue
            self.text(f"{where}.{attr}", v() if callable(v) else v)
        privacy = getattr(res, "privacy", None)
        if privacy is not None and hasattr(privacy, "to_json"):
            self.text(f"{where} report", privacy.to_json())
            self.text(f"{where} report summary", privacy.summary())
            self.text(f"{where} report repr", repr(privacy))
            self.text(f"{where} report html", privacy._repr_html_())

    def hits(self) -> list[str]:
        found = [f"{w}: {p!r}" for w, t in self.texts for p in text_patterns() if p in t]
        found += [f"{w}: bytes of {b!r}" for w, d in self.blobs for b in byte_patterns() if b in d]
        return found


def _columns():
    rng = np.random.default_rng(7)
    age, bmi = rng.uniform(20, 80, N).round(2), rng.uniform(18, 40, N).round(2)
    age[2], bmi[-2] = MARK_AGE, MARK_BMI  # where str(pyarrow column) shows them
    event = (rng.random(N) < 0.4).astype(np.int64)
    region = np.array(["north", "south"] * (N // 2), dtype=object)
    region[3] = MARK_TEXT[1]
    name = np.array([f"p{i}" for i in range(N)], dtype=object)
    name[5] = MARK_TEXT[0]
    return {"age": age, "bmi": bmi, "event": event, "region": region, "name": name}


INPUTS = ["numpy", "mapping", "pandas", "polars", "pyarrow-table", "pyarrow-batch", "parquet", "arrow", "csv",
          "duckdb"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("canary")
    cols = _columns()
    t = pa.table(cols)
    pq.write_table(t, tmp / "d.parquet")
    import pyarrow.feather as feather

    feather.write_feather(t, tmp / "d.arrow")
    pd.DataFrame(cols).to_csv(tmp / "d.csv", index=False, float_format="%.10g")
    con = duckdb.connect(str(tmp / "d.duckdb"))
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{tmp / 'd.parquet'}')")
    con.close()
    (tmp / "schema.yaml").write_text(yaml.safe_dump(SCHEMA))
    return tmp, cols


def source(kind, tmp, cols):
    """(X, y) for a release: a source read by name (y = "event"), or numpy features with y."""
    if kind == "numpy":
        return np.column_stack([cols["age"], cols["bmi"]]), cols["event"]
    return {
        "mapping": cols, "pandas": pd.DataFrame(cols), "polars": pl.DataFrame(cols),
        "pyarrow-table": pa.table(cols), "pyarrow-batch": pa.record_batch(cols),
        "parquet": tmp / "d.parquet", "arrow": tmp / "d.arrow", "csv": tmp / "d.csv",
        "duckdb": duckdb_query("SELECT * FROM t", database=tmp / "d.duckdb"),
    }[kind], "event"


def _ledger(tmp_path, accountant="rdp"):
    ledger = Ledger(tmp_path / f"{accountant}.db", create=True)
    delta = 0.0 if accountant == "pure" else 1e-3
    ledger.register("clinic", epsilon=1000.0, delta=delta, accountant=accountant)
    return ledger


@pytest.fixture
def sink(caplog):
    caplog.set_level(logging.DEBUG)
    s = Sink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield s
    for w in caught:
        s.text(f"warning {w.category.__name__}", str(w.message))
    s.text("log", caplog.text)
    assert s.hits() == []


def _ledger_rows(sink, ledger, tmp_path):
    sink.text("ledger rows", json.dumps(ledger.history("clinic"), default=str))
    for f in tmp_path.glob("*.db"):
        sink.file(f"ledger file {f.name}", f)


def _cheap_releases(kind, data, tmp_path, sink):
    tmp, cols = data
    X, y = source(kind, tmp, cols)
    schema = Schema.load(tmp / "schema.yaml")
    ledger = _ledger(tmp_path)
    numpy = kind == "numpy"
    kw = dict(feature_names=["age", "bmi"], bounds=[(20, 80), (18, 40)]) if numpy else dict(schema=schema)
    rel = release_glm_statistics(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                                 context=ReleaseContext(ledger=ledger, dataset="clinic", privacy_rng=prng(1)),
                                 data=DataSpec(**kw))
    sink.result(f"{kind} GLM statistics", rel)
    model = release_covariate_model(X, epsilon=1.0, columns=["age", "bmi"],
                                    context=ReleaseContext(ledger=ledger, dataset="clinic",
                                                           privacy_rng=prng(2)),
                                    **({} if numpy else {"schema": schema}),
                                    **({"bounds": [(20, 80), (18, 40)]} if numpy else {}))
    sink.result(f"{kind} covariate model", model)
    path = model.save(tmp_path / "cov.json")
    sink.file(f"{kind} covariate model file", path)
    table = read_table(X, names=["age", "bmi"]) if numpy else read_table(X, schema=schema)
    sink.text(f"{kind} table repr", repr(table))
    mean = clamped_release("mean", 20.0, 80.0, 1.0, n=table.n_rows)
    out = mean.release_records(table["age"],
                               context=ReleaseContext(ledger=ledger, dataset="clinic", privacy_rng=prng(3)))
    sink.result(f"{kind} clamped mean", out)
    sink.text(f"{kind} fingerprint", record_fingerprint(X))
    # refusals: values outside the schema's bounds, an undeclared category, a text feature
    narrow = Schema.from_dict({**SCHEMA, "columns": {**SCHEMA["columns"], "age": {
        "type": "float", "lower": 40, "upper": 80}}})
    categories = Schema.from_dict({**SCHEMA, "columns": {**SCHEMA["columns"], "region": {
        "type": "category", "categories": ["north", "south"]}}})  # the data hold one more
    for bad in (narrow,) if numpy else (narrow, categories):
        with pytest.raises(DPInferError) as e:
            if numpy:
                release_glm_statistics(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                                       context=ReleaseContext(ledger=ledger, privacy_rng=prng(4)),
                                       data=DataSpec(schema=bad, feature_names=["age", "bmi"]))
            else:
                read_table(X, schema=bad)
        sink.text(f"{kind} schema refusal", str(e.value))
    with pytest.raises(DPInferError) as e:
        release_glm_statistics(X, "event", family="logistic", epsilon=1.0,
                               delta=1e-6, context=ReleaseContext(privacy_rng=prng(5)),
                               data=DataSpec(bounds=(0, 100), feature_names=["age", "name"])) \
            if not numpy else \
            release_glm_statistics(np.column_stack([cols["age"], cols["name"]]), y, family="logistic",
                                   epsilon=1.0, delta=1e-6, context=ReleaseContext(privacy_rng=prng(5)),
                                   data=DataSpec(bounds=(0, 100)))
    sink.text(f"{kind} text-feature refusal", str(e.value))
    _ledger_rows(sink, ledger, tmp_path)


@pytest.mark.parametrize("kind", INPUTS)
def test_cheap_releases_from_every_input_type_leak_nothing(kind, data, tmp_path, sink):
    _cheap_releases(kind, data, tmp_path, sink)


def _arviz_text(idata):
    """Every group of an ArviZ export: its repr, variable names, coordinates and attributes."""
    parts = []
    for g in idata.groups():
        ds = getattr(idata, g)
        parts += [repr(ds), json.dumps(dict(ds.attrs), default=str), repr(list(ds.data_vars)),
                  repr({k: list(map(str, v.values)) for k, v in ds.coords.items()})]
    return "\n".join(parts)


def _private_glm(kind, data, tmp_path, sink):
    tmp, cols = data
    X, y = source(kind, tmp, cols)
    ledger = _ledger(tmp_path)
    kw = dict(feature_names=["age", "bmi"], bounds=[(20, 80), (18, 40)]) if kind == "numpy" else dict(
        schema=tmp / "schema.yaml")
    fit = private_glm(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                      context=ReleaseContext(ledger=ledger, dataset="clinic", privacy_rng=prng(6)),
                      seed=0, data=DataSpec(**kw),
                      posterior=GLMPosteriorOptions(sampler=FAST))
    sink.result(f"{kind} private GLM", fit)
    sink.file(f"{kind} private GLM file", fit.save(tmp_path / "glm.npz"))
    idata = fit.to_arviz(n_draws=50)
    sink.text(f"{kind} GLM arviz", _arviz_text(idata))
    _ledger_rows(sink, ledger, tmp_path)


def _dpvi(kind, data, tmp_path, sink):
    tmp, cols = data
    X, y = source(kind, tmp, cols)
    ledger = _ledger(tmp_path, "pld")
    kw = dict(feature_names=["age", "bmi"], bounds=[(20, 80), (18, 40)]) if kind == "numpy" else dict(
        schema=Schema.load(tmp / "schema.yaml"))
    fit = DPVI(LogisticRegression(3)).fit(
        X, y, epsilon=2.0, delta=1e-5, data=DataSpec(intercept=True, **kw),
            context=ReleaseContext(ledger=ledger, dataset="clinic"), seed=0, privacy=PrivacyOptions(clip=1.0),
        training=TrainingOptions(steps=30, sampling_rate=0.2))
    sink.result(f"{kind} DPVI", fit)
    sink.file(f"{kind} DPVI file", fit.save(tmp_path / "dpvi.json"))
    idata = fit.to_arviz(n_draws=50)
    sink.text(f"{kind} DPVI arviz", _arviz_text(idata))
    _ledger_rows(sink, ledger, tmp_path)


def _abcdp(kind, data, tmp_path, sink):
    tmp, cols = data
    X, _ = source(kind, tmp, cols)
    observed = np.column_stack([cols["age"], cols["bmi"]]) if kind == "numpy" else read_table(
        X, columns=["age", "bmi"])
    rng = np.random.default_rng(0)
    thetas = rng.uniform(0, 1, (40, 2))
    sims = rng.uniform(20, 60, (40, 50, 2))
    from dpinfer.distances import RFFMMD

    ledger = _ledger(tmp_path, "pure")
    res = abcdp(observed, (thetas, sims), RFFMMD(bandwidth=10.0, n_features=10, seed=0), c=2,
                epsilon_total=1.0, epsilon_abc=0.5, options=ABCDPOptions(),
                context=ReleaseContext(ledger=ledger, dataset="clinic", privacy_rng=prng(7)))
    sink.result(f"{kind} ABCDP", res)
    if hasattr(res, "save"):
        sink.file(f"{kind} ABCDP file", res.save(tmp_path / "abcdp.json"))
    _ledger_rows(sink, ledger, tmp_path)


COSTLY = {"private-glm": _private_glm, "dpvi": _dpvi, "abcdp": _abcdp}
FAST_CASES = [("private-glm", "pyarrow-table"), ("dpvi", "pyarrow-batch"), ("abcdp", "parquet")]


@pytest.mark.parametrize("path,kind", FAST_CASES)
def test_costly_releases_leak_nothing(path, kind, data, tmp_path, sink):
    COSTLY[path](kind, data, tmp_path, sink)


@pytest.mark.slow
@pytest.mark.parametrize("kind", INPUTS)
@pytest.mark.parametrize("path", sorted(COSTLY))
def test_costly_releases_from_every_input_type_leak_nothing(path, kind, data, tmp_path, sink):
    if (path, kind) in FAST_CASES:
        pytest.skip("in the fast set")
    COSTLY[path](kind, data, tmp_path, sink)


def test_the_draft_schema_and_the_readers_leak_nothing(data, tmp_path, sink):
    tmp, _ = data
    for f in ("d.parquet", "d.arrow", "d.csv"):
        sink.text(f"draft of {f}", draft_schema(tmp / f))
        sink.text(f"table of {f}", repr(read_table(tmp / f)))
    with pytest.raises(SchemaError) as e:
        Schema.from_dict({**SCHEMA, "columns": {"name": {"type": "category", "categories": ["a"]}}}).validate(
            read_table(tmp / "d.parquet"))
    sink.text("category refusal", str(e.value))


def test_the_command_line_leaks_nothing(data, tmp_path, sink, capsys):
    from dpinfer.cli import main

    tmp, _ = data
    ledger = tmp_path / "cli.db"
    schema = str(tmp / "schema.yaml")
    runs = [
        ["budget", "init", "--ledger", str(ledger), "--dataset", "clinic", "--epsilon", "100", "--delta",
         "1e-3", "--accountant", "rdp", "--data", str(tmp / "d.csv")],
        ["glm", "--data", str(tmp / "d.parquet"), "--schema", schema, "--target", "event", "--epsilon", "1",
         "--ledger", str(ledger), "--seed", "0", "--fallback", "none", "--out", str(tmp_path / "glm"),
         "--json"],
        ["release", "--model", "gaussian-mean", "--data", str(tmp / "d.arrow"), "--columns", "age",
         "--schema", schema, "--epsilon", "1", "--ledger", str(ledger), "--out", str(tmp_path / "rel.json")],
        ["glm", "--data", str(tmp / "d.csv"), "--schema", schema, "--target", "event",
         "--features", "age,bmi", "--bounds", "40:80", "--epsilon", "1", "--ledger", str(ledger),
         "--out", str(tmp_path / "bad")],
        ["schema", "draft", str(tmp / "d.csv")],
        ["schema", "check", "--schema", schema, "--data", str(tmp / "d.parquet")],
        ["budget", "history", "--ledger", str(ledger), "--dataset", "clinic", "--json"],
        ["budget", "show", "--ledger", str(ledger)],
    ]
    codes = []
    for argv in runs:
        codes.append(main(argv))
        out, err = capsys.readouterr()
        sink.text(f"cli {argv[0]} stdout", out)
        sink.text(f"cli {argv[0]} stderr", err)
    assert codes == [0, 0, 0, 2, 0, 0, 0, 0]  # the 4th: outside its bounds, refused
    for f in tmp_path.iterdir():
        if f.is_file():
            sink.file(f"cli file {f.name}", f)


def test_the_audit_finds_what_the_old_code_leaked(tmp_path):
    """Known-broken variants: the pre-fix coefficient names (``str`` of a pyarrow column), a value
    printed with 6 digits, a CSV cell in an error, the float64 bytes of a saved array."""
    cols = _columns()
    leaks = {
        "str(pyarrow column)": str(pa.table(cols).column("age")),
        "%g": f"mean age {cols['age'][2]:g}",
        "a cell": f"line 9: {MARK_TEXT[0]!r} is not a number",
    }
    for what, text in leaks.items():
        s = Sink()
        s.text(what, text)
        assert s.hits(), what

    class ShowsData:  # a result whose notebook display shows a record (what the HTML must never do)
        def __repr__(self):
            return "<ShowsData>"

        def _repr_html_(self):
            return f"<td>{cols['age'][2]}</td>"

    s = Sink()
    s.result("html", ShowsData())
    assert "html html: '31.41592653'" in s.hits()
    np.save(tmp_path / "x.npy", cols["bmi"])
    s = Sink()
    s.file("npy", tmp_path / "x.npy")
    assert any("bytes" in h for h in s.hits())
