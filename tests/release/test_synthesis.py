"""Synthetic data from released posteriors: posterior-predictive law, no privacy cost, CLI."""

from __future__ import annotations

import csv
import json
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.data import record_fingerprint
from dpinfer.datasets.abcdp_data import load_covid_nl
from dpinfer.distances import ExactMMD
from dpinfer.errors import InvalidDataError
from dpinfer.models.data_spec import DataSpec
from dpinfer.models.shipped.covid import CovidPolynomial
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.models.synthesis import (
    POST_PROCESSING,
    MarginalHistogramModel,
    PublicCovariates,
    sidecar_path,
    synthesize_from,
)
from dpinfer.privacy import Ledger, data_fingerprint
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release import abcdp
from dpinfer.release.dpvi import OptimizerOptions, TrainingOptions
from seeded_privacy_rng import prng


@pytest.fixture(scope="module")
def covid_release(tmp_path_factory):
    _, observed = load_covid_nl()
    model = CovidPolynomial()
    rng = np.random.default_rng(0)
    thetas = model.prior_sample(3000, rng)
    sims = model.simulate(thetas)
    path = tmp_path_factory.mktemp("l") / "l.db"
    ledger = Ledger(path, create=True)
    ledger.register("covid", epsilon=50.0, accountant="pure")
    res = abcdp(
        observed, (thetas, sims), ExactMMD(900.0), c=5, epsilon_total=44.0, epsilon_abc=0.3,
        meta={"model": "covid"}, param_names=model.param_names,
        context=ReleaseContext(ledger=ledger, dataset="covid", privacy_rng=prng(1)),
    )
    return res, ledger


def test_abcdp_synthesis_is_free_post_processing(covid_release):
    res, ledger = covid_release
    before = ledger.spent("covid")
    syn = res.synthesize(40, seed=3)
    assert ledger.spent("covid") == before and len(ledger.history("covid")) == 1
    rep = syn.privacy_report()
    assert rep["epsilon"] == res.privacy.epsilon and rep["additional_epsilon"] == 0.0
    assert rep["post_processing"] and rep["note"] == POST_PROCESSING
    assert syn.records.shape == (40, 18) and syn.columns[0] == "day_0"
    # every synthetic record is exactly the curve of one released θ
    curves = CovidPolynomial().curve(res.accepted)
    dist = np.abs(syn.records[:, None, :] - curves[None]).max(axis=2).min(axis=1)
    assert np.all(dist < 1e-9)
    np.testing.assert_array_equal(res.synthesize(40, seed=3).records, syn.records)
    assert not np.array_equal(res.synthesize(40, seed=4).records, syn.records)


class _NormalPosterior:
    """θ ~ N(m, s²): a posterior with a closed-form predictive N(m, s² + σ²)."""

    privacy = None

    def __init__(self, m: float, s: float, shared: bool = False) -> None:
        self.m, self.s, self.shared = m, s, shared

    def sample(self, n, seed=None):
        rng = np.random.default_rng(seed)
        if self.shared:  # broken: one θ for every record
            return np.full((n, 1), self.m + self.s * rng.standard_normal())
        return self.m + self.s * rng.standard_normal((n, 1))


def predictive_z(post: _NormalPosterior, n: int, seed: int) -> float:
    model = GaussianMean(epsilon=1.0)
    x = synthesize_from(post, n, seed, model).records[:, 0]
    var = post.s**2 + model.noise_sd**2
    return (x.var(ddof=1) - var) / (var * np.sqrt(2.0 / (n - 1)))


def test_records_follow_the_posterior_predictive():
    post = _NormalPosterior(0.3, 2.0)
    assert abs(predictive_z(post, 20_000, 1)) < 4
    # the broken variant (one θ shared by all records) has variance σ² only: caught
    assert abs(predictive_z(_NormalPosterior(0.3, 2.0, shared=True), 20_000, 1)) > 10


def test_dpvi_covariates_must_be_declared_public_or_dp_and_bad_n_refused(covid_release):
    from dpinfer.release.dpvi import DPVI, LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=200) > 0).astype(float)
    fit = DPVI(LogisticRegression(3)).fit(
        X,
        y,
        optimizer=OptimizerOptions(lr=0.1),
        training=TrainingOptions(sampling_rate=0.2, steps=50),
        private=False,
        seed=0, data=DataSpec(intercept=False),
    )
    with pytest.raises(InvalidDataError, match="covariates"):
        fit.synthesize(10, None)
    with pytest.raises(InvalidDataError, match="raw ndarray"):  # before: 500 rows copied from X
        fit.synthesize(500, X, seed=1)
    syn = fit.synthesize(500, PublicCovariates(X, source="a public sample"), seed=1)
    assert syn.columns == ("x0", "x1", "x2", "y") and set(np.unique(syn.records[:, -1])) <= {0.0, 1.0}
    rep = syn.privacy_report()
    assert rep["epsilon"] is None and rep["guarantee"] is None and rep["protected"] == []
    assert "NOT protected" in syn.statement()
    for bad in (0, 2.5, True, 10**9):
        with pytest.raises(InvalidDataError):
            covid_release[0].synthesize(bad)


def test_cli_synthesize(covid_release, tmp_path, capsys):
    res, _ = covid_release
    res.save(tmp_path / "release.json")
    out = tmp_path / "syn.csv"
    code = main(["synthesize", "--release", str(tmp_path / "release.json"), "--n", "25", "--out", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["privacy"]["additional_epsilon"] == 0.0 and doc["privacy"]["epsilon"] == pytest.approx(44.0)
    rows = list(csv.reader(out.open()))
    assert len(rows) == 26 and rows[0][0] == "day_0"
    side = json.loads(sidecar_path(out).read_text())["privacy"]
    assert side["not_protected"] == [] and len(side["protected"]) == 18
    assert side["guarantee"]["epsilon"] == pytest.approx(44.0)
    assert "carry (44, 0)-DP" in captured.err and "NOT protected" not in captured.err
    assert main(["synthesize", "--release", str(tmp_path / "nope.json"), "--n", "5", "--out", str(out)]) == 2
    assert "not found" in capsys.readouterr().err
    # an ABCDP release simulates whole records: covariate options are refused
    assert main(["synthesize", "--release", str(tmp_path / "release.json"), "--n", "5", "--out",
                 str(tmp_path / "x.csv"), "--public-covariates", str(out)]) == 2
    assert not (tmp_path / "x.csv").exists()


def test_private_data_posterior_synthesis_and_cli_model(tmp_path, capsys):
    """Exact private-data posterior (importance sampling) of the Gaussian-mean model: its synthetic
    records have the posterior-predictive mean, and the CLI needs --model for such a file."""
    from dpinfer.inference import mechanism_importance_sampling

    model = GaussianMean(epsilon=1.0)
    post = mechanism_importance_sampling(model, [0.4], n_theta=4000, n_inner=50, seed=0)
    syn = post.synthesize(4000, model, seed=1)
    assert syn.columns == ("x",) and syn.privacy_report()["additional_epsilon"] == 0.0
    sd = np.sqrt(post.sd()[0] ** 2 + model.noise_sd**2)
    assert abs(syn.records[:, 0].mean() - post.mean()[0]) < 5 * sd / np.sqrt(min(4000, post.ess))
    path = post.save(tmp_path / "post.npz")
    out = tmp_path / "s.csv"
    assert main(["synthesize", "--release", str(path), "--n", "10", "--out", str(out)]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["synthesize", "--release", str(path), "--n", "10", "--out", str(out),
                 "--model", "gaussian-mean"]) == 0
    assert len(out.read_text().splitlines()) == 11


# ---- covariates from a DP model, never copied (issue 23, finding 7) ------------------------------
def _marginals_error(model, X, n=20_000, seed=0):
    """Largest |mean| and |sd| error of the sampled covariates against the confidential ones."""
    S = model.sample(n, np.random.default_rng(seed))
    return max(np.abs(S.mean(0) - X.mean(0)).max(), np.abs(S.std(0) - X.std(0)).max())


def test_the_dp_covariate_model_reproduces_the_marginals():
    """n = 4000 records, a N(1, 2²) column on bounds [-8, 10] (20 bins) and a 0..3 integer column,
    eps = 1 (noise scale 2d/eps = 4 per count, counts ~200-1000): sampled means and sds within 0.1
    (Monte Carlo sd of 20 000 draws ~0.014; binning adds width²/12 = 0.27 to the variance, ~0.07 sd;
    noise ~1% per count). Known-broken variant: a model whose counts ignore the data (uniform) is
    off by more than 1."""
    from dpinfer.release.synthesis import release_covariate_model

    rng = np.random.default_rng(3)
    X = np.column_stack([1.0 + 2.0 * rng.standard_normal(4000), rng.binomial(3, 0.3, 4000)])
    with pytest.warns(Warning, match="WITHOUT a ledger"):
        model = release_covariate_model(X, bounds=[[-8, 10], [0, 3]], integer=[False, True], epsilon=1.0,
                                        columns=("age", "visits"),
                                            context=ReleaseContext(privacy_rng=prng(2)))
    assert model.bins == (20, 4) and model.privacy.epsilon == 1.0 and not model.privacy.accounted
    assert _marginals_error(model, X) < 0.1
    S = model.sample(20_000, np.random.default_rng(1))
    assert set(np.unique(S[:, 1])) <= {0.0, 1.0, 2.0, 3.0} and S[:, 0].min() >= -8 and S[:, 0].max() <= 10
    flat = MarginalHistogramModel(model.columns, model.lower, model.upper, model.bins, model.integer,
                                  tuple(np.full(b, 100) for b in model.bins), model.privacy)
    assert _marginals_error(flat, X) > 1.0
    again = MarginalHistogramModel.load(model.save(Path(tempfile.mkdtemp()) / "m.json"))
    assert again.bins == model.bins
    assert all(np.array_equal(a, b) for a, b in zip(again.counts, model.counts, strict=True))


def test_the_covariate_release_sensitivity_is_2d_and_tight():
    """Replace one record (replace-one neighbours), release both data sets with the same seeded
    noise: the released counts differ by the true counts' difference, whose L1 norm over 200 random
    replacements is at most the declared sensitivity 2d = 6 and reaches it. Known-broken variant:
    the add-remove sensitivity d = 3 would be exceeded."""
    from dpinfer.release.synthesis import release_covariate_model

    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(50, 3))
    kw = dict(bounds=(0, 1), bins=5, epsilon=1.0)
    with pytest.warns(Warning):
        base = release_covariate_model(X, **kw, context=ReleaseContext(privacy_rng=prng(7)))
    assert base.privacy.events[0].sensitivity == 6
    worst = 0
    for _ in range(200):
        Y = X.copy()
        Y[rng.integers(50)] = rng.uniform(0, 1, 3)
        with pytest.warns(Warning):
            other = release_covariate_model(Y, **kw, context=ReleaseContext(privacy_rng=prng(7)))
        pairs = zip(base.counts, other.counts, strict=True)
        worst = max(worst, sum(int(np.abs(a - b).sum()) for a, b in pairs))
    assert worst == 6 > 3


def test_bad_covariate_inputs_charge_nothing_and_show_no_value(tmp_path):
    from dpinfer.errors import InvalidPrivacyParameterError
    from dpinfer.release.synthesis import release_covariate_model

    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 5.0)
    X = np.random.default_rng(0).normal(size=(30, 2))
    X[4, 1] = 123.456789
    with_nan = X.copy()
    with_nan[7, 0] = np.nan
    ints = np.column_stack([X[:, 0], np.arange(30) + 0.5])
    for data, kw in [
        (with_nan, {}), (X, {"bounds": (1, -1)}), (X, {"bins": 0}), (X, {"bins": 10**5}),
        (X, {"epsilon": -1.0}), (ints, {"integer": [False, True], "bounds": [[-5, 5], [0, 40]]}),
        (X[:, 0], {}), (X, {"columns": ("a",)}), (X, {"bounds": [[0, 1]] * 3}),
    ]:
        args = {"bounds": (-5, 5), "epsilon": 1.0, **kw}
        with pytest.raises((InvalidDataError, InvalidPrivacyParameterError)) as exc:
            release_covariate_model(data, **args, context=ReleaseContext(ledger=ledger, dataset="d"))
        assert "123.45" not in str(exc.value) and "\n" not in str(exc.value)
    assert ledger.history("d") == []
    model = release_covariate_model(X, bounds=(-5, 5), epsilon=1.0,
                                    context=ReleaseContext(ledger=ledger.for_data(X), dataset="d"))
    [h] = ledger.history("d")
    assert h["event"]["sensitivity"] == 4 and h["fingerprint"] == data_fingerprint(X)
    assert h["status"] == "released"
    assert model.privacy.accounted


def _patients(path, n=1000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([1.5, -1.0]))))).astype(int)
    path.write_text("a,b,label\n" + "".join(f"{a:.5f},{b:.5f},{t}\n" for (a, b), t in zip(X, y, strict=True)))
    return {(f"{a:.5f}", f"{b:.5f}") for a, b in X}


def _real_rows(out, real):
    rows = list(csv.reader(out.open()))[1:]
    return len(rows), sum((f"{float(r[0]):.5f}", f"{float(r[1]):.5f}") in real for r in rows)


def test_synthesize_never_copies_the_owners_covariates(tmp_path, capsys):
    """Finding 7: `dpinfer synthesize --release fit.json --covariates patients.csv` wrote 1000 rows,
    1000 of them real patients' covariate rows, and said they carry the release's guarantee. Now:
    refused (exit 2, nothing written) unless a DP covariate model is released (charged to the same
    budget, bound to the file): 0 of 1000 rows real, stated (eps_fit + eps_cov)-DP; reusing the
    model costs nothing; --public-covariates copies and says NOT protected."""
    data = tmp_path / "patients.csv"
    real = _patients(data)
    ledger = str(tmp_path / "l.db")
    assert main(["budget", "init", "--ledger", ledger, "--dataset", "patients", "--epsilon", "5",
                 "--delta", "1e-5", "--data", str(data)]) == 0
    fit = tmp_path / "fit.json"
    assert main(["dpvi", "--data", str(data), "--target", "label", "--epsilon", "1", "--delta", "1e-5",
                 "--steps", "50", "--sampling-rate", "0.1", "--no-progress", "--out", str(fit),
                 "--ledger", ledger, "--dataset", "patients"]) == 0
    capsys.readouterr()
    out = tmp_path / "syn.csv"
    base = ["synthesize", "--release", str(fit), "--n", "1000", "--out", str(out)]
    assert main([*base, "--covariates", str(data)]) == 2
    assert "never copy" in capsys.readouterr().err and not out.exists()
    assert main(base) == 2 and not out.exists()  # a DPVI fit needs a covariate source
    capsys.readouterr()
    dp = [*base, "--covariates", str(data), "--covariate-epsilon", "1", "--covariate-bounds",
          '{"a": [-4, 4], "b": [-4, 4]}']
    assert main([*dp, "--no-ledger", "--ledger", ledger]) == 2  # contradiction: refused first
    assert main([*dp, "--ledger", ledger, "--dataset", "patients"]) == 0
    err = capsys.readouterr().err
    assert _real_rows(out, real) == (1000, 0)
    side = json.loads(sidecar_path(out).read_text())["privacy"]
    # the input's column names, the target's included (issue 26: not x0, x1, y)
    assert side["protected"] == ["a", "b", "label"] and side["not_protected"] == []
    assert out.read_text().splitlines()[0] == "a,b,label"
    # DPVI's sigma is calibrated to rtol 1e-3 from the safe side: its part is in [0.999, 1]
    assert side["guarantee"] == {"epsilon": pytest.approx(2.0, abs=1e-3), "delta": pytest.approx(1e-5)}
    assert side["guarantee"]["epsilon"] <= 2.0
    assert re.search(r"columns a, b, label carry \((2|1\.99\d*), 1e-05\)-DP", err)
    hist = Ledger(ledger).history("patients")
    assert [h["event"]["type"] for h in hist][-1] == "DiscreteLaplaceEvent" and len(hist) == 2
    assert {h["fingerprint"] for h in hist} == {record_fingerprint(data)}
    model = tmp_path / "syn.csv.covariates.json"
    assert main([*base, "--covariate-model", str(model)]) == 0  # reuse: free
    assert len(Ledger(ledger).history("patients")) == 2
    capsys.readouterr()
    assert main([*base, "--public-covariates", str(data)]) == 0
    assert _real_rows(out, real) == (1000, 1000)  # copied, as declared, and said so
    assert "columns a, b are NOT protected (copied from covariates declared public" in capsys.readouterr().err
    assert json.loads(sidecar_path(out).read_text())["privacy"]["not_protected"] == ["a", "b"]


def test_a_dataframes_column_names_reach_the_covariate_model():
    """Issue 26: a DataFrame's columns name the released covariate model's columns (not x0, x1)."""
    pd = pytest.importorskip("pandas")
    from dpinfer.release.synthesis import release_covariate_model

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.uniform(20, 80, 200), "visits": rng.integers(0, 4, 200)})
    with pytest.warns(Warning, match="WITHOUT a ledger"):
        model = release_covariate_model(df, bounds=[[0, 100], [0, 3]], integer=[False, True], epsilon=1.0,
                                        context=ReleaseContext(privacy_rng=prng(1)))
    assert model.columns == ("age", "visits")
