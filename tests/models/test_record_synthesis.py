"""Synthetic records come from the model itself (issue 37): a model implements
``record_columns``/``simulate_records`` (or the conditional pair) and synthesis finds them through the
protocol, so a model of the user's own gets records without any change to the library."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError
from dpinfer.models.covariates import PublicCovariates
from dpinfer.models.record_synthesis import (
    SupportsConditionalRecordSynthesis,
    SupportsRecordSynthesis,
    record_simulator,
)
from dpinfer.models.shipped.covid import CovidPolynomial
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.models.shipped.linreg import LinearRegression
from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms
from dpinfer.models.synthesis import synthesize_from
from dpinfer.results import SyntheticData


class Coin:
    """A user's model, defined here and nowhere in the library: one flip per record at P(heads) = θ."""

    def record_columns(self):
        return ("heads",)

    def simulate_records(self, theta, rng):
        return (rng.uniform(size=(theta.shape[0], 1)) < theta[:, :1]).astype(float)


class BrokenCoin(Coin):
    """Known-broken variant: every record ignores its θ (always P(heads) = 1/2)."""

    def simulate_records(self, theta, rng):
        return (rng.uniform(size=(theta.shape[0], 1)) < 0.5).astype(float)


class ShiftRegression:
    """A user's conditional model: y = x0 + θ0, the covariates from the caller's source."""

    def conditional_record_columns(self, covariates):
        return (*covariates.columns, "y")

    def simulate_conditional_records(self, theta, rng, *, covariates, design=None):
        x = covariates.sample(theta.shape[0], rng)
        return np.column_stack([x, x[:, 0] + theta[:, 0]])


def _posterior(theta):
    theta = np.atleast_1d(np.asarray(theta, dtype=float))
    return SimpleNamespace(privacy=None, sample=lambda n, rng: np.tile(theta, (n, 1)))


def test_a_users_model_gets_synthetic_records_through_the_protocol():
    """θ = 0.8 for every record: heads ~ Binomial(n, 0.8)/n, sd 0.004 at n = 10 000; the broken
    model that ignores θ gives 0.5, 75 sd away."""
    n = 10_000
    syn = synthesize_from(_posterior(0.8), n, 1, Coin())
    assert isinstance(syn, SyntheticData) and syn.columns == ("heads",) and syn.records.shape == (n, 1)
    assert syn.source["model"] == "Coin"
    sd = np.sqrt(0.8 * 0.2 / n)
    assert abs(syn.records.mean() - 0.8) < 4 * sd
    assert abs(synthesize_from(_posterior(0.8), n, 1, BrokenCoin()).records.mean() - 0.8) > 20 * sd
    np.testing.assert_array_equal(synthesize_from(_posterior(0.8), n, 1, Coin()).records, syn.records)


def test_a_users_conditional_model_takes_covariates_from_a_declared_source():
    X = np.arange(6.0).reshape(3, 2)
    cov = PublicCovariates(X, source="t", columns=("a", "b"))
    syn = synthesize_from(_posterior(10.0), 50, 0, ShiftRegression(), covariates=cov)
    assert syn.columns == ("a", "b", "y") and syn.covariate_columns == ("a", "b")
    np.testing.assert_array_equal(syn.records[:, 2], syn.records[:, 0] + 10.0)
    with pytest.raises(InvalidDataError, match="raw ndarray"):  # never a raw array
        synthesize_from(_posterior(10.0), 5, 0, ShiftRegression(), covariates=X)
    with pytest.raises(InvalidDataError, match="covariates are taken only by conditional models"):
        synthesize_from(_posterior(0.5), 5, 0, Coin(), covariates=cov)


def test_a_model_without_the_protocol_is_told_which_methods_to_implement():
    with pytest.raises(InvalidDataError, match=r"record_columns\(\) and simulate_records\(theta, rng\)"):
        record_simulator(object())
    # a model whose records do not match θ's rows is told the shape expected
    wrong = type("Wrong", (Coin,), {"simulate_records": lambda self, theta, rng: np.zeros((1, 1))})()
    with pytest.raises(InvalidDataError, match=r"expected \(5, 1\), one record per row"):
        synthesize_from(_posterior(0.5), 5, 0, wrong)
    # a class merely *named* like a supported model gets nothing from its name
    with pytest.raises(InvalidDataError, match="simulate_records"):
        record_simulator(type("LogisticRegression", (), {})(), PublicCovariates(np.zeros((2, 1))))


def test_the_shipped_models_and_dpvi_logistic_implement_the_protocols():
    from dpinfer.release.dpvi import LogisticRegression

    for model in (MixtureOfUniforms(), CovidPolynomial(), GaussianMean(epsilon=1.0),
                  LinearRegression(epsilon=1.0)):
        assert isinstance(model, SupportsRecordSynthesis), type(model).__name__
    assert isinstance(LogisticRegression(2), SupportsConditionalRecordSynthesis)
    assert not isinstance(LogisticRegression(2), SupportsRecordSynthesis)
