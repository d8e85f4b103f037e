"""DPVI.fit's design group (issue 37 item 4) and private_glm's convention (issue 40 item 4):
``data=DataSpec(intercept, bounds, offset, feature_names, schema)``, the intercept by default for
the built-in regressions, dim from the data, bounds in every form private_glm takes, and the
earlier spellings refused with the new one named."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import torch

from dpinfer.errors import InvalidDataError
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, DataSpec, LogisticRegression, Model, TrainingOptions
from dpinfer.release.glm import _bounds as glm_bounds

FAST = TrainingOptions(steps=20)


def _records(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(20, 80, n), rng.uniform(18, 40, n)])
    eta = -0.5 + (X[:, 0] - 50) / 30 + 0.8 * (X[:, 1] - 29) / 11
    return X, (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)


def test_fit_has_at_most_15_parameters_and_the_design_is_one_group():
    params = [p for p in inspect.signature(DPVI.fit).parameters if p != "self"]
    assert len(params) <= 15, params
    for moved in ("intercept", "bounds", "offset", "feature_names", "schema"):
        assert moved not in params and moved in DataSpec.__dataclass_fields__


@pytest.mark.parametrize("moved", ["intercept", "bounds", "offset", "feature_names", "schema"])
def test_the_earlier_keywords_are_refused_naming_dataspec_before_any_charge(tmp_path, moved):
    X, y = _records()
    ledger = Ledger(tmp_path / "b.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="pld")
    with pytest.raises(TypeError, match=rf"data=dpinfer\.DataSpec\({moved}=\.\.\.\)"):
        DPVI(LogisticRegression()).fit(X, y, epsilon=1.0, delta=1e-5,
                                       context=ReleaseContext(ledger=ledger, dataset="d"),
                                       **{moved: None})
    assert ledger.spent("d") == 0.0
    with pytest.raises(InvalidDataError, match=r"data must be a dpinfer\.DataSpec"):
        DPVI(LogisticRegression()).fit(X, y, private=False, data={"intercept": False})


def test_intercept_by_default_and_dim_from_the_data():
    torch.set_num_threads(1)
    X, y = _records()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        fit = DPVI(LogisticRegression()).fit(X, y, private=False, seed=0, training=FAST,
                                             data=DataSpec(bounds=[(20, 80), (18, 40)]))
    assert fit.dim == 3 and fit.param_names == ("intercept", "x0", "x1")
    assert fit.config["design"]["intercept"] is True
    # the model was sized by the data; another data set resizes it
    again = DPVI(LogisticRegression()).fit(X[:, :1], y, private=False, seed=0, training=FAST)
    assert again.dim == 2
    # a given dim that counts the intercept is consistent
    assert DPVI(LogisticRegression(3)).fit(X, y, private=False, seed=0, training=FAST).dim == 3
    # a user's Model reads X as given: no intercept unless asked
    def ll(theta, Xb, yb):
        return -0.5 * (yb - Xb @ theta) ** 2

    custom = Model(ll, lambda t: -0.5 * (t**2).sum(), dim=2)
    assert DPVI(custom).fit(X / 100, y, private=False, seed=0, training=FAST).dim == 2


def test_the_earlier_dim_convention_is_refused_naming_both_spellings_before_any_charge(tmp_path):
    """LogisticRegression(k) for k feature columns with the default intercept meant 'no intercept'
    (the earlier default): it is refused, naming LogisticRegression() (with the intercept) and
    DataSpec(intercept=False) (without), and nothing is charged. Known-broken variant: the earlier
    FutureWarning path, which fitted without the intercept instead of raising."""
    torch.set_num_threads(1)
    X, y = _records()
    ledger = Ledger(tmp_path / "c.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="pld")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(InvalidDataError) as refused:
            DPVI(LogisticRegression(2)).fit(
                X / 100, y, epsilon=1.0, delta=1e-5, seed=0, training=FAST,
                context=ReleaseContext(ledger=ledger, dataset="d"),
            )
    message = str(refused.value)
    assert "LogisticRegression(2) for 2 feature column(s)" in message
    assert "LogisticRegression() (dim from the data)" in message
    assert "data=dpinfer.DataSpec(intercept=False)" in message and "Nothing was charged." in message
    assert not [w for w in seen if issubclass(w.category, FutureWarning)]
    assert ledger.history("d") == []
    # the two new spellings: without the intercept (dim 2), with it (dim from the data, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        old = DPVI(LogisticRegression(2)).fit(X / 100, y, private=False, seed=0, training=FAST,
                                              data=DataSpec(intercept=False))
        new = DPVI(LogisticRegression()).fit(X / 100, y, private=False, seed=0, training=FAST)
    assert old.dim == 2 and "intercept" not in old.param_names
    assert new.dim == 3 and new.param_names[0] == "intercept"
    with pytest.raises(InvalidDataError, match=r"LogisticRegression\(\) to take dim from the data"):
        DPVI(LogisticRegression(5)).fit(X, y, private=False, training=FAST)


@pytest.mark.parametrize("form", ["dict", "pairs", "one-pair"])
def test_bounds_take_private_glms_forms(form):
    torch.set_num_threads(1)
    X, y = _records()
    names = ["age", "bmi"]
    bounds = {"dict": {"bmi": (18, 40), "age": (20, 80)}, "pairs": [(20, 80), (18, 40)],
              "one-pair": (18, 80)}[form]
    fit = DPVI(LogisticRegression()).fit(X, y, private=False, seed=0, training=FAST,
                                         data=DataSpec(bounds=bounds, feature_names=names))
    # the same (k, 2) bounds private_glm reads from the same argument
    expected = glm_bounds(bounds, tuple(names))
    np.testing.assert_array_equal(np.asarray(fit.config["design"]["bounds"]), expected)
    assert fit.param_names == ("intercept", "age", "bmi")


def test_bounds_refusals_name_the_problem_and_charge_nothing(tmp_path):
    X, y = _records()
    ledger = Ledger(tmp_path / "b.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="pld")
    ctx = ReleaseContext(ledger=ledger, dataset="d")
    bad = [
        (DataSpec(bounds={"age": (20, 80)}, feature_names=["age", "bmi"]), "no \\(lo, hi\\) for column"),
        (DataSpec(bounds={"age": (20, 80), "bmi": (18, 40), "x": (0, 1)}, feature_names=["age", "bmi"]),
         "not features"),
        (DataSpec(bounds={"age": (20, 80), "bmi": (18, 40)}), "need column names"),
        (DataSpec(bounds=[(20, 80)] * 3), "bounds must give"),
    ]
    for data, match in bad:
        with pytest.raises(InvalidDataError, match=match):
            DPVI(LogisticRegression()).fit(X, y, epsilon=1.0, delta=1e-5, context=ctx, data=data)
    assert ledger.spent("d") == 0.0 and ledger.history("d") == []
