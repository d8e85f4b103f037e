"""DPVIResult: posterior moments, sampling, prediction, persistence, arviz export."""

from __future__ import annotations

import importlib.util
import json
import warnings

import numpy as np
import pytest

from dpinfer.datasets import load_abalone
from dpinfer.errors import InvalidDataError
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import (
    DPVI,
    DPVIResult,
    LogisticRegression,
    OptimizerOptions,
    PoissonRegression,
    PrivacyOptions,
    TrainingOptions,
)
from dpinfer.results.format import read_meta


@pytest.fixture(scope="module")
def fit():
    d = load_abalone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = PrivacyRNG.insecure_deterministic(0)
    res = DPVI(LogisticRegression(8), "fullrank").fit(
        d.X_train,
        d.y_train,
        delta=1e-5,
        privacy=PrivacyOptions(noise_multiplier=4.0, clip=5.0),
        training=TrainingOptions(sampling_rate=0.05, steps=300, track_elbo=True),
        seed=0,
        context=ReleaseContext(privacy_rng=rng), data=DataSpec(intercept=False),
    )
    return res, d


def test_sample_moments_match_mean_and_covariance(fit):
    res, _ = fit
    draws = res.sample(20000, seed=1)
    sd = np.sqrt(np.diag(res.covariance))
    assert np.all(np.abs(draws.mean(0) - res.mean()) < 5 * sd / np.sqrt(20000))
    np.testing.assert_allclose(np.cov(draws.T), res.covariance, atol=5 * sd.max() ** 2 * np.sqrt(2 / 20000))
    assert np.all(np.linalg.eigvalsh(res.covariance) > 0)


def test_predict_proba_probit_is_close_to_monte_carlo(fit):
    res, d = fit
    p_probit = res.predict_proba(d.X_test)
    p_mc = res.predict_proba(d.X_test, method="mc", n_samples=4000)
    assert p_probit.shape == (836,) and np.all((p_probit > 0) & (p_probit < 1))
    assert np.max(np.abs(p_probit - p_mc)) < 0.03  # the probit approximation error plus MC error
    assert 0.5 < res.accuracy(d.X_test, d.y_test) <= 1.0


def test_save_load_round_trip_and_confidential_trace(fit, tmp_path):
    res, d = fit
    assert res.confidential_trace and len(res.elbo_trace) > 0
    path = res.save(tmp_path / "fit")
    assert path.name == "fit.npz"
    meta = read_meta(path)
    assert meta["type"] == "DPVIResult" and meta["privacy"]["epsilon"] == res.privacy.epsilon
    with np.load(path) as z:
        assert z["elbo_trace"].shape == (0, 2)  # the confidential trace is left out
    back = DPVIResult.load(path)
    np.testing.assert_array_equal(back.mean(), res.mean())
    np.testing.assert_array_equal(back.covariance, res.covariance)
    np.testing.assert_array_equal(back.predict_proba(d.X_test), res.predict_proba(d.X_test))
    assert back.privacy == res.privacy and not back.confidential_trace
    full = DPVIResult.load(res.save(tmp_path / "full.npz", include_confidential=True))
    np.testing.assert_array_equal(full.elbo_trace, res.elbo_trace)


def test_a_json_path_writes_the_result_file_and_a_readable_document(fit, tmp_path):
    res, d = fit
    npz = res.save(tmp_path / "fit.json")  # what `dpinfer dpvi --out fit.json` does
    assert npz == tmp_path / "fit.npz"
    data = json.loads((tmp_path / "fit.json").read_text())
    assert data["elbo_trace"] == [] and data["privacy"]["epsilon"] == res.privacy.epsilon
    for name in ("fit.json", "fit.npz"):  # either name reads the result file, with no warning
        back = DPVIResult.load(tmp_path / name)
        np.testing.assert_array_equal(back.mean(), res.mean())
        np.testing.assert_array_equal(back.predict_proba(d.X_test), res.predict_proba(d.X_test))
        assert back.privacy == res.privacy


def test_the_json_document_alone_is_not_a_result_file(fit, tmp_path):
    res, d = fit
    old = tmp_path / "old.json"
    old.write_text(json.dumps(res.to_dict()))  # an earlier version's file, no .npz beside it
    with pytest.raises(InvalidDataError, match="not a dpinfer result file"):
        DPVIResult.load(old)


@pytest.mark.slow  # issue 25: moved to `make test-all` for a <= 4 min fast suite
def test_poisson_regression_recovers_coefficients_and_predicts_means():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(3000), rng.standard_normal((3000, 2)) * 0.5])
    y = rng.poisson(np.exp(X @ np.array([0.5, 0.8, -0.4])))
    res = DPVI(PoissonRegression(3)).fit(
        X,
        y,
        optimizer=OptimizerOptions("adam", lr=0.02),
        training=TrainingOptions(sampling_rate=0.05, steps=1500, per_example="likelihood"),
        private=False,
        seed=0, data=DataSpec(intercept=False),
    )
    np.testing.assert_allclose(res.mean(), [0.5, 0.8, -0.4], atol=0.1)
    assert res.predict(X[:5]).shape == (5,)
    with pytest.raises(ValueError, match="classification"):
        res.predict_proba(X[:5])


def test_to_arviz(fit):
    res, _ = fit
    if importlib.util.find_spec("arviz") is None:
        with pytest.raises(ImportError, match="pip install arviz"):
            res.to_arviz()
    else:  # pragma: no cover - depends on the environment
        idata = res.to_arviz(n_draws=100)
        assert idata.posterior[res.param_names[0]].shape == (1, 100)
        assert idata.posterior.attrs["epsilon"] == res.privacy.epsilon
