"""Synthetic data from released posteriors: posterior-predictive law, no privacy cost, CLI."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.datasets.abcdp_data import load_covid_nl
from dpinfer.distances import ExactMMD
from dpinfer.errors import InvalidDataError
from dpinfer.models.shipped.covid import CovidPolynomial
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.models.synthesis import POST_PROCESSING, synthesize_from
from dpinfer.privacy import Ledger
from dpinfer.release import abcdp
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
    ledger.register("covid", epsilon=50.0)
    res = abcdp(observed, (thetas, sims), ExactMMD(900.0), 5, 44.0, 0.3, privacy_rng=prng(1),
                ledger=ledger, dataset="covid", meta={"model": "covid"}, param_names=model.param_names)
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


def test_dpvi_needs_public_covariates_and_bad_n_refused(covid_release):
    from dpinfer.release.dpvi import DPVI, LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=200) > 0).astype(float)
    fit = DPVI(LogisticRegression(3)).fit(X, y, private=False, clip=None, sampling_rate=0.2,
                                           steps=50, lr=0.1, seed=0)
    with pytest.raises(InvalidDataError, match="covariates"):
        fit.synthesize(10, None)
    syn = fit.synthesize(500, X, seed=1)
    assert syn.columns == ("x0", "x1", "x2", "y") and set(np.unique(syn.records[:, -1])) <= {0.0, 1.0}
    assert syn.privacy_report()["epsilon"] is None
    for bad in (0, 2.5, True):
        with pytest.raises(InvalidDataError):
            covid_release[0].synthesize(bad)


def test_cli_synthesize(covid_release, tmp_path, capsys):
    res, _ = covid_release
    res.save(tmp_path / "release.json")
    out = tmp_path / "syn.csv"
    code = main(["synthesize", "--release", str(tmp_path / "release.json"), "--n", "25", "--out", str(out)])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["privacy"]["additional_epsilon"] == 0.0 and doc["privacy"]["epsilon"] == pytest.approx(44.0)
    rows = list(csv.reader(out.open()))
    assert len(rows) == 26 and rows[0][0] == "day_0"
    assert main(["synthesize", "--release", str(tmp_path / "nope.json"), "--n", "5", "--out", str(out)]) == 1
    assert "not found" in capsys.readouterr().err


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
    assert main(["synthesize", "--release", str(path), "--n", "10", "--out", str(out)]) == 1
    assert "--model" in capsys.readouterr().err
    assert main(["synthesize", "--release", str(path), "--n", "10", "--out", str(out),
                 "--model", "gaussian-mean"]) == 0
    assert len(out.read_text().splitlines()) == 11
