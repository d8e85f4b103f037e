"""Shipped private-data sets: shapes, ranges and consistency with the models' mechanisms."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.datasets.private_data import load_linreg, load_naive_bayes_synthetic, load_sir_synthetic
from dpinfer.models import SIR, LinearRegression, NaiveBayes


def test_linreg_data():
    d = load_linreg()
    m = LinearRegression()
    assert d.confidential.shape == (9,) and set(d.released) == {10.0, 1.0, 0.1}
    m.mechanism.validate_statistic_range(d.confidential)
    for eps in (10.0, 1.0, 0.1):
        assert m.check_observed(d.observed(eps)).shape == (9,)
    # the noise in the eps = 10 release is of the Laplace scale 15/(100*10)
    assert np.max(np.abs(d.observed(10.0) - d.confidential)) < 20 * 0.015
    with pytest.raises(KeyError, match="available"):
        d.observed(3.0)


def test_sir_data():
    d = load_sir_synthetic()
    m = SIR()
    assert d.confidential[0] == 1 and d.confidential.max() <= 1e6
    for eps in (10.0, 1.0, 0.1):
        obs = m.check_observed(d.observed(eps))
        assert np.allclose(obs * 1000, np.rint(obs * 1000))


def test_naive_bayes_data():
    d = load_naive_bayes_synthetic()
    m = NaiveBayes()
    assert np.isclose(d.confidential.sum(), 2.0)
    assert m.check_observed(d.observed(1.0)).shape == (8,)
