"""Issue 40 item 4: one description of the data, :class:`dpinfer.DataSpec`, for ``private_glm``,
``release_glm_statistics`` and ``DPVI.fit``. The classes it replaced (``GLMDataSpec``,
``DataOptions``) and ``private_glm``'s top-level ``offset=``/``intercept=`` are refused with a
message naming the new spelling, and nothing is charged."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import dpinfer
from dpinfer.errors import InvalidDataError
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import Ledger, ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PoissonRegression, PrivacyOptions, TrainingOptions
from dpinfer.release.glm import release_glm_statistics
from seeded_privacy_rng import prng

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, size=(300, 2))
Y = (X[:, 0] + 0.3 * RNG.standard_normal(300) > 0).astype(float)
COUNTS = RNG.poisson(2.0, size=300).astype(float)
EXPOSURE = RNG.uniform(-0.5, 0.5, size=300)


@pytest.mark.parametrize("module, name", [
    ("dpinfer", "GLMDataSpec"),
    ("dpinfer.models.glm_release", "GLMDataSpec"),
    ("dpinfer.release.glm", "GLMDataSpec"),
    ("dpinfer.pipelines.glm", "GLMDataSpec"),
    ("dpinfer.release.dpvi", "DataOptions"),
    ("dpinfer.release.dpvi.options", "DataOptions"),
])
def test_the_replaced_class_names_are_refused_naming_data_spec(module, name):
    mod = importlib.import_module(module)
    with pytest.raises(ImportError, match=r"was removed: use dpinfer\.DataSpec"):
        getattr(mod, name)
    with pytest.raises(ImportError, match=r"dpinfer\.DataSpec"):
        exec(f"from {module} import {name}", {})
    # known-broken variant: an unknown name is still an AttributeError, not this refusal
    with pytest.raises(AttributeError):
        mod.NoSuchName  # noqa: B018
    assert dpinfer.DataSpec is DataSpec
    assert importlib.import_module("dpinfer.release.dpvi").DataSpec is DataSpec


@pytest.mark.parametrize("keyword, value", [("offset", EXPOSURE), ("intercept", False)])
@pytest.mark.parametrize("release", ["private_glm", "release_glm_statistics"])
def test_the_glm_s_top_level_offset_and_intercept_are_refused(tmp_path, keyword, value, release):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="rdp")
    fn = dpinfer.private_glm if release == "private_glm" else release_glm_statistics
    refusal = rf"no longer takes {keyword}=: pass data=dpinfer\.DataSpec\({keyword}="
    with pytest.raises(TypeError, match=refusal):
        fn(X, Y, family="logistic", epsilon=1.0, delta=1e-6, data=DataSpec(bounds=(-1, 1)),
           context=ReleaseContext(ledger=ledger, dataset="d"), **{keyword: value})
    assert ledger.history("d") == []


def test_one_spec_describes_the_data_for_the_glm_and_for_dpvi():
    spec = DataSpec(bounds=(-1, 1), feature_names=["age", "bmi"])  # intercept None: the models' default
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_glm_statistics(X, Y, family="logistic", epsilon=1.0, delta=1e-6, data=spec,
                                     context=ReleaseContext(privacy_rng=prng(0)))
        # a given noise multiplier: the names the spec gives are the check, not the calibration
        fit = DPVI(LogisticRegression()).fit(X, Y, delta=1e-5, data=spec, seed=0,
                                             privacy=PrivacyOptions(noise_multiplier=2.0),
                                             training=TrainingOptions(steps=10),
                                             context=ReleaseContext(privacy_rng=prng(1)))
    assert rel.intercept and rel.feature_names == ("age", "bmi")
    assert fit.param_names == ("intercept", "age", "bmi")
    # the offset and the intercept travel in the same object: a Poisson rate with exposure
    spec = DataSpec(bounds=(-1, 1), offset=EXPOSURE, offset_bounds=(-0.5, 0.5), y_bounds=20, intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_glm_statistics(X, COUNTS, family="poisson", epsilon=1.0, delta=1e-6, data=spec,
                                     context=ReleaseContext(privacy_rng=prng(2)))
    assert not rel.intercept and rel.has_offset


def test_dpvi_refuses_the_glm_only_fields_before_any_charge(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="pld")
    for spec in (DataSpec(y_bounds=(0, 1)), DataSpec(offset=EXPOSURE, offset_bounds=(-1, 1))):
        with pytest.raises(InvalidDataError, match="does not use DataSpec"):
            DPVI(PoissonRegression()).fit(X, COUNTS, epsilon=1.0, delta=1e-5, data=spec,
                                          context=ReleaseContext(ledger=ledger, dataset="d"))
    assert ledger.history("d") == []
    with pytest.raises(InvalidDataError, match="must be a dpinfer.DataSpec"):
        release_glm_statistics(X, Y, family="logistic", epsilon=1.0, delta=1e-6, data={"bounds": (-1, 1)})
