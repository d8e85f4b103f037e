"""The Abalone loader (DPVI paper preprocessing) and the synthetic logistic generator."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.datasets import abalone_labels, load_abalone, load_abalone_raw, make_synthetic_logistic
from dpinfer.errors import InvalidDataError


def test_shapes_split_and_file_order():
    d = load_abalone()
    assert d.X_train.shape == (3341, 8) and d.X_test.shape == (836, 8)
    assert d.y_train.shape == (3341,) and d.y_test.shape == (836,)
    sex, values = load_abalone_raw()
    # first record of abalone.data: M,0.455,...,Rings 15 -> label 1 under Rings >= 10
    assert sex[0] == "M" and values[0, -1] == 15 and d.y_train[0] == 1.0
    # last record (Rings 12) is the last test row
    assert d.y_test[-1] == float(values[-1, -1] >= 10)
    # standardised on all rows (population sd), test rows included
    X = np.vstack([d.X_train, d.X_test])
    np.testing.assert_allclose(X.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(0), 1.0, atol=1e-12)
    # column 0 is the Sex code I=0, F=1, M=2 (three distinct standardised values in that order)
    codes = np.unique(X[:, 0])
    assert codes.size == 3
    assert X[0, 0] == codes[2]  # "M" is the largest code
    # the Length column is an affine map of the raw Length
    np.testing.assert_allclose(np.corrcoef(X[:, 1], values[:, 0])[0, 1], 1.0, atol=1e-12)


def test_label_rules_match_documented_prevalence():
    y_code = np.concatenate(load_abalone("code")[1::2])
    y_paper = np.concatenate(load_abalone("paper")[1::2])
    assert y_code.mean() == pytest.approx(0.498, abs=1e-3)  # Rings >= 10 (authors' code)
    assert y_paper.mean() == pytest.approx(0.346, abs=1e-3)  # Rings > 10 (paper text)
    assert set(np.unique(y_code)) == {0.0, 1.0}
    np.testing.assert_array_equal(abalone_labels(np.array([9, 10, 11])), [0, 1, 1])
    np.testing.assert_array_equal(abalone_labels(np.array([9, 10, 11]), "paper"), [0, 0, 1])


def test_bad_label_rule_and_fraction():
    with pytest.raises(InvalidDataError, match="label_rule"):
        load_abalone("rings>9")
    with pytest.raises(InvalidDataError, match="train_fraction"):
        load_abalone(train_fraction=1.5)


def test_synthetic_generator_shapes_seed_and_link():
    a = make_synthetic_logistic(seed=3)
    b = make_synthetic_logistic(seed=3)
    assert a.X_train.shape == (40_000, 7) and a.X_test.shape == (10_000, 7)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.coef, make_synthetic_logistic(seed=4).coef)
    # labels follow the logistic link of the true coefficients: mean(y - p) ~ 0 within MC error
    X = np.vstack([a.X_train, a.X_test])
    y = np.concatenate([a.y_train, a.y_test])
    p = 1 / (1 + np.exp(-X @ a.coef))
    se = np.sqrt(np.sum(p * (1 - p))) / y.size
    assert abs(np.mean(y - p)) < 4 * se
    # and are informative: the Bayes classifier beats chance clearly
    assert np.mean((p > 0.5) == (y == 1)) > 0.7
    with pytest.raises(InvalidDataError):
        make_synthetic_logistic(n=1)
