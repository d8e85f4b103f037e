"""DPVI's design options: feature names, public-bounds scaling, intercept and a Poisson offset
(:mod:`dpinfer.release.dpvi.design`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpinfer.errors import InvalidDataError
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, DataSpec, LogisticRegression, PoissonRegression, TrainingOptions


def _records(n=400, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 80, n)
    bmi = rng.uniform(18, 40, n)
    eta = -0.5 + 1.0 * (age - 50) / 30 + 0.8 * (bmi - 29) / 11
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    return np.column_stack([age, bmi]), y


def test_dataframe_names_intercept_and_bounds_label_the_result():
    pd = pytest.importorskip("pandas")
    torch.set_num_threads(1)
    X, y = _records()
    df = pd.DataFrame(X, columns=["age", "bmi"])
    fit = DPVI(LogisticRegression(3)).fit(
        df, y, private=False, seed=0, data=DataSpec(intercept=True, bounds=[(20, 80), (18, 40)]),
        training=TrainingOptions(steps=150),
    )
    assert fit.param_names == ("intercept", "age", "bmi")
    assert "bmi" in fit.summary() and "intercept" in fit.summary()
    assert fit.config["design"]["bounds"] == [[20.0, 80.0], [18.0, 40.0]]
    # predictions take the raw columns and apply the same scaling and intercept
    p = fit.predict_proba(X[:5])
    Z = np.column_stack([np.ones(5), 2 * (X[:5] - [20, 18]) / [60, 22] - 1])
    np.testing.assert_allclose(p, fit.model.predict_proba(fit.mean(), fit.covariance, Z, method="probit"))


@pytest.mark.slow
def test_dataframe_names_reach_arviz():
    pd = pytest.importorskip("pandas")
    az = pytest.importorskip("arviz")
    X, y = _records()
    df = pd.DataFrame(X, columns=["age", "bmi"])
    fit = DPVI(LogisticRegression(3)).fit(
        df, y, private=False, seed=0, data=DataSpec(intercept=True, bounds=[(20, 80), (18, 40)]),
        training=TrainingOptions(steps=100),
    )
    idata = fit.to_arviz(n_draws=50)
    assert isinstance(idata, az.InferenceData) and "bmi" in idata.posterior.data_vars


def test_data_outside_the_public_bounds_is_refused_before_anything_is_charged(tmp_path):
    X, y = _records()
    X[3, 1] = 55.0  # a BMI above the declared bound
    ledger = Ledger(tmp_path / "budget.db", create=True)
    ledger.register("patients", epsilon=10.0, delta=1e-5, accountant="pld")
    ctx = ReleaseContext(ledger=ledger, dataset="patients")
    with pytest.raises(InvalidDataError, match="outside the declared public bounds in column 1"):
        DPVI(LogisticRegression(3)).fit(
            X, y, epsilon=1.0, delta=1e-5, context=ctx,
            data=DataSpec(intercept=True, bounds=[(20, 80), (18, 40)]),
        )
    assert ledger.spent("patients") == 0.0 and ledger.history("patients") == []
    with pytest.raises(InvalidDataError, match="bounds must give"):
        DPVI(LogisticRegression(3)).fit(
            X, y, private=False, data=DataSpec(intercept=True, bounds=[(20, 80)])
        )
    with pytest.raises(InvalidDataError, match="takes no offset"):
        DPVI(LogisticRegression(2)).fit(X, y, private=False, data=DataSpec(offset=np.zeros(len(y))))


def test_poisson_with_an_exposure_offset_fits_the_rate():
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    n = 400
    x = rng.normal(size=n)
    t = rng.uniform(0.5, 20.0, n)  # exposures
    beta = np.array([-1.0, 0.5])
    y = rng.poisson(t * np.exp(beta[0] + beta[1] * x)).astype(float)
    fit = DPVI(PoissonRegression(2)).fit(
        x[:, None], y, private=False, seed=0, data=DataSpec(intercept=True, offset=np.log(t)),
        training=TrainingOptions(steps=500),
    )
    # the exact MAP (Newton) with the N(0, 1) prior: the posterior is nearly Gaussian here
    Z = np.column_stack([np.ones(n), x])
    b = np.zeros(2)
    for _ in range(50):
        mu = t * np.exp(Z @ b)
        H = Z.T @ (mu[:, None] * Z) + np.eye(2)
        b = b + np.linalg.solve(H, Z.T @ (y - mu) - b)
    sd = np.sqrt(np.diag(np.linalg.inv(H)))
    assert np.all(np.abs(fit.mean() - b) < 0.5 * sd), (fit.mean(), b, sd)
    # known-broken variant: the same counts without the offset are far off
    plain = DPVI(PoissonRegression(2)).fit(
        x[:, None], y, private=False, seed=0, data=DataSpec(intercept=True),
        training=TrainingOptions(steps=200),
    )
    assert abs(plain.mean()[0] - b[0]) > 10 * sd[0]
