"""Coefficient names come only from declared names or a container's own string labels (issue 36).

On main 2bd8e52 ``private_glm(pa.table(...), ...)`` and ``DPVI.fit(pa.table(...), ...)`` named the
coefficients ``str(column)`` of a pyarrow column: its confidential values appeared in ``summary()``,
the parameter names and the saved result. These tests fail on that code.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError
from dpinfer.inference.glm import GLMPosteriorOptions, GLMSamplerOptions
from dpinfer.models.data_spec import DataSpec
from dpinfer.pipelines.glm import private_glm
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, TrainingOptions
from seeded_privacy_rng import prng

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")

FAST = GLMSamplerOptions(proposals=1000, adapt=1, draws=500, fallback="none")  # names, not sampling
MARK_AGE, MARK_BMI = 31.41592653, 27.18281828  # unique values to search for


def _data(n=200):
    rng = np.random.default_rng(3)
    age = rng.uniform(20, 80, n)
    bmi = rng.uniform(18, 40, n)
    age[0], bmi[-1] = MARK_AGE, MARK_BMI
    y = (rng.random(n) < 0.4).astype(float)
    return age, bmi, y


def _containers():
    age, bmi, y = _data()
    cols = {"age": age, "bmi": bmi}
    return y, {
        "pyarrow-table": pa.table(cols),
        "pyarrow-batch": pa.record_batch(cols),
        "polars": pl.DataFrame(cols),
        "pandas": pd.DataFrame(cols),
    }


def _leaks(text: str) -> list[str]:
    return [m for m in ("31.4159", "3.14159", "27.1828", "2.71828", "31.42", "27.18") if m in text]


@pytest.mark.parametrize("kind", ["pyarrow-table", "pyarrow-batch", "polars", "pandas"])
def test_private_glm_names_coefficients_after_the_column_labels_not_their_values(kind, tmp_path):
    y, tables = _containers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = private_glm(tables[kind], y, family="logistic",
                          epsilon=1.0, delta=1e-6, context=ReleaseContext(privacy_rng=prng(0)), seed=0,
                          data=DataSpec(bounds={"age": (20, 80), "bmi": (18, 40)}),
                          posterior=GLMPosteriorOptions(sampler=FAST, warn=False))
    assert fit.release.feature_names == ("age", "bmi")
    text = fit.summary() + repr(fit) + json.dumps(fit.param_names)
    assert "age" in text and "bmi" in text
    assert _leaks(text) == []


@pytest.mark.parametrize("kind", ["pyarrow-table", "pyarrow-batch", "polars", "pandas"])
def test_dpvi_names_coefficients_after_the_column_labels_not_their_values(kind):
    y, tables = _containers()
    fit = DPVI(LogisticRegression(3)).fit(
        tables[kind], y, private=False, seed=0, data=DataSpec(intercept=True, bounds=[(20, 80), (18, 40)]),
        training=TrainingOptions(steps=20),
    )
    assert fit.param_names == ("intercept", "age", "bmi")
    assert _leaks(fit.summary() + repr(fit)) == []


def test_non_string_labels_are_refused_without_showing_values():
    age, bmi, y = _data()
    df = pd.DataFrame({MARK_AGE: age, 2: bmi})  # labels that are numbers (could be values)
    with pytest.raises(InvalidDataError, match="string") as e:
        private_glm(df, y, family="logistic", epsilon=1.0, delta=1e-6,
                    context=ReleaseContext(privacy_rng=prng(0)),
                    data=DataSpec(bounds=(0, 100)))
    assert _leaks(str(e.value)) == []
    with pytest.raises(InvalidDataError, match="string") as e:
        DPVI(LogisticRegression(2)).fit(df, y, private=False, seed=0, training=TrainingOptions(steps=5))
    assert _leaks(str(e.value)) == []


def test_duplicate_labels_are_refused_as_ambiguous():
    age, bmi, y = _data()
    df = pd.DataFrame(np.column_stack([age, bmi]), columns=["age", "age"])
    with pytest.raises(InvalidDataError, match="more than once"):
        private_glm(df, y, family="logistic", epsilon=1.0, delta=1e-6,
                    context=ReleaseContext(privacy_rng=prng(0)),
                    data=DataSpec(bounds=(0, 100)))


def test_declared_names_override_and_an_unknown_container_is_not_stringified():
    age, bmi, y = _data()

    class Opaque:  # a container whose .columns hold values, not labels
        columns = [age, bmi]

        def __array__(self, dtype=None, copy=None):
            return np.column_stack([age, bmi])

    with pytest.raises(InvalidDataError, match="string") as e:
        private_glm(Opaque(), y, family="logistic", epsilon=1.0, delta=1e-6,
                    context=ReleaseContext(privacy_rng=prng(0)), data=DataSpec(bounds=(0, 100)))
    assert _leaks(str(e.value)) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = private_glm(Opaque(), y, family="logistic", epsilon=1.0, delta=1e-6,
                          context=ReleaseContext(privacy_rng=prng(0)), seed=0,
                          data=DataSpec(bounds=(0, 100), feature_names=["a", "b"]),
                          posterior=GLMPosteriorOptions(sampler=FAST, warn=False))
    assert fit.release.feature_names == ("a", "b")
