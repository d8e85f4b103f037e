"""The private GLM's release: sensitivity from the public bounds, refusals cost nothing, one charge
before the noise, and an offset model that fits."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError
from dpinfer.inference.glm import GLMPosteriorOptions, GLMSamplerOptions, StatisticLayout
from dpinfer.models.data_spec import DataSpec
from dpinfer.pipelines.glm import private_glm
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.glm import release_glm_statistics
from seeded_privacy_rng import prng

FAST = GLMSamplerOptions(proposals=1000, adapt=1, draws=1000)


def _data(n=400, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(10, 30, size=(n, d))
    y = (rng.random(n) < 0.4).astype(float)
    return X, y


@pytest.mark.parametrize("offset,y2", [(False, False), (True, False), (False, True)])
def test_every_record_statistic_is_within_the_declared_norm(offset, y2):
    """The sensitivity 2·√blocks holds for every record at the corners of the bounds (the worst case)."""
    lay = StatisticLayout(3, offset, y2)
    corners = np.array(np.meshgrid(*[[-1.0, 1.0]] * (3 + offset))).reshape(3 + offset, -1).T
    xs, os = corners[:, :3], (corners[:, 3] if offset else None)
    for yv in (-1.0, 0.0, 1.0):
        per = np.stack([lay.statistic(xs[i:i + 1], np.array([yv]), None if os is None else os[i:i + 1])
                        for i in range(len(xs))])
        norms = np.linalg.norm(per, axis=1)
        assert norms.max() <= math.sqrt(lay.n_blocks) + 1e-12
    # the bound is attained (not loose) at a corner with |y| = 1
    top = lay.statistic(xs[-1:], np.array([1.0]), None if os is None else os[-1:])
    assert np.linalg.norm(top) == pytest.approx(math.sqrt(lay.n_blocks))


def test_sensitivity_and_sigma_come_from_the_bounds_only():
    X, y = _data()
    kw = dict(family="logistic", data=DataSpec(bounds=[(10, 30), (10, 30)]), epsilon=1.0, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = release_glm_statistics(X, y, context=ReleaseContext(privacy_rng=prng(1)), **kw)
        b = release_glm_statistics(X[:, ::-1] * 0 + 20, 1 - y,
                                   context=ReleaseContext(privacy_rng=prng(2)), **kw)  # other data
    assert a.sigma == b.sigma and a.privacy.sensitivity == pytest.approx(2 * math.sqrt(2))
    assert a.z.shape == (StatisticLayout(2, False, False).dim,)


def test_the_release_is_the_statistic_plus_gaussian_noise_of_the_stated_sigma():
    X, y = _data(n=300)
    lay = StatisticLayout(2, False, False)
    s = lay.statistic((X - 20) / 10, y, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zs = np.stack([release_glm_statistics(X, y, family="logistic", epsilon=1.0,
                                              delta=1e-6, context=ReleaseContext(privacy_rng=prng(i)),
                                              data=DataSpec(bounds=(10, 30))).z for i in range(20)])
        sigma = release_glm_statistics(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                                       context=ReleaseContext(privacy_rng=prng(0)),
                                       data=DataSpec(bounds=(10, 30))).sigma
    r = (zs - s) / sigma  # 20 x 9 standard normals
    assert abs(r.mean()) < 4 / math.sqrt(r.size) and abs(r.std() - 1) < 4 / math.sqrt(2 * r.size)


@pytest.mark.parametrize("case", ["feature", "count", "response", "offset", "labels"])
def test_data_outside_the_bounds_is_refused_and_costs_nothing(tmp_path, case):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="rdp")
    X, y = _data()
    kw: dict = dict(family="logistic", epsilon=1.0, delta=1e-6)
    data: dict = dict(bounds=(10, 30))
    if case == "feature":
        X[3, 1] = 31.0
        match = r"column\(s\) x2 \(1\)"
    elif case == "count":
        kw.update(family="poisson")
        data.update(y_bounds=5)
        y = np.full(len(y), 6.0)
        match = "counts outside"
    elif case == "response":
        kw.update(family="linear")
        data.update(y_bounds=(0, 1))
        y = y * 2.0
        match = "responses outside"
    elif case == "offset":
        kw.update(family="poisson")
        data.update(y_bounds=5, offset=np.full(len(y), 3.0), offset_bounds=(0, 2))
        match = "offsets outside"
    else:
        y = y + 0.5
        match = "must be 0 or 1"
    with pytest.raises(InvalidDataError, match=match) as info:
        release_glm_statistics(X, y,
                               context=ReleaseContext(ledger=ledger, dataset="d"),
                               data=DataSpec(**data), **kw)
    assert "31" not in str(info.value)  # never a record's value
    assert ledger.spent("d") == 0 and ledger.history("d") == []


def test_the_ledger_is_charged_once_before_the_noise(tmp_path, monkeypatch):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="rdp")
    X, y = _data()
    seen = []
    from dpinfer.privacy import discrete

    real = discrete.sample_discrete_gaussian

    def spy(*a, **k):
        seen.append(len(ledger.history("d")))
        return real(*a, **k)

    monkeypatch.setattr(discrete, "sample_discrete_gaussian", spy)
    rel = release_glm_statistics(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                                 context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(3)),
                                 data=DataSpec(bounds=(10, 30)))
    assert seen == [1]  # the charge was recorded before the noise was drawn
    assert len(ledger.history("d")) == 1 and ledger.spent("d") > 0
    assert rel.privacy.accounted


@pytest.mark.slow
def test_a_poisson_model_with_an_exposure_offset_fits():
    """Large ε: the noise-aware fit recovers the coefficients of a Poisson rate with log exposure."""
    rng = np.random.default_rng(4)
    n = 3000
    X = rng.normal(0.0, 0.3, size=(n, 2)).clip(-1, 1)
    expo = rng.uniform(0.5, 2.0, n)
    theta = np.array([0.3, 1.0, -0.8])
    y = rng.poisson(expo * np.exp(theta[0] + X @ theta[1:])).clip(0, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = private_glm(X, y, family="poisson",
                          epsilon=1e4, delta=1e-6,
                          context=ReleaseContext(privacy_rng=prng(5)), seed=0,
                          data=DataSpec(bounds=(-1, 1), y_bounds=40, offset=np.log(expo),
                                        offset_bounds=(math.log(0.5), math.log(2.0))),
                          posterior=GLMPosteriorOptions(sampler=FAST))
    z = (fit.mean() - theta) / fit.sd()
    assert np.all(np.abs(z) < 4), z
    assert fit.param_names == ("intercept", "x1", "x2")


def test_the_keywords_the_option_objects_replaced_are_refused_naming_the_new_spelling(tmp_path):
    """``bounds=``, ``sampler=``, ... moved into ``data=DataSpec`` / ``posterior=GLMPosteriorOptions``:
    the old spelling is a TypeError naming the new one, before anything is read or charged."""
    import dpinfer
    from dpinfer.pipelines.glm import MOVED_KEYWORDS
    from dpinfer.release.glm import DATA_KEYWORDS

    X, y = _data()
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=5.0, delta=1e-5, accountant="rdp")
    with pytest.raises(TypeError, match=r"no longer takes bounds=, y_bounds=: pass "
                                        r"data=dpinfer\.DataSpec\(bounds=\.\.\., y_bounds=\.\.\.\)"):
        release_glm_statistics(X, y, family="logistic", bounds=(10, 30), y_bounds=1, epsilon=1.0, delta=1e-6,
                               context=ReleaseContext(ledger=ledger, dataset="d"))
    with pytest.raises(TypeError, match=r"data=dpinfer\.DataSpec\(bounds=\.\.\.\) and "
                                        r"posterior=dpinfer\.GLMPosteriorOptions\(sampler=\.\.\.\)"):
        dpinfer.private_glm(X, y, family="logistic", bounds=(10, 30), sampler=FAST, epsilon=1.0, delta=1e-6,
                            context=ReleaseContext(ledger=ledger, dataset="d"))
    for bad in ({"data": {"bounds": (10, 30)}}, {"posterior": {"sampler": FAST}}):
        with pytest.raises(InvalidDataError, match="DataSpec|GLMPosteriorOptions"):
            private_glm(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                        context=ReleaseContext(ledger=ledger, dataset="d"), **bad)
    assert ledger.history("d") == []  # nothing was charged
    assert set(DATA_KEYWORDS) <= set(MOVED_KEYWORDS) and {"prior", "sampler", "covariates", "warn"} <= set(
        MOVED_KEYWORDS)
    with pytest.raises(ImportError, match=r"dpinfer\.private_glm"):
        from dpinfer.release.glm import private_glm as _old  # noqa: F401


def test_the_old_module_paths_and_the_parameter_counts():
    """Users' imports keep working; the entry points take at most 15 parameters."""
    import inspect

    import dpinfer
    from dpinfer.inference.glm import GLMPosterior, GLMPrior, GLMSamplerOptions, glm_posterior
    from dpinfer.inference.weighted import WeightedSample, ess
    from dpinfer.results import weighted

    assert (GLMPosterior.__module__, glm_posterior.__module__) == ("dpinfer.inference.glm.posterior",) * 2
    assert GLMPrior().coef_sd == 2.5 and GLMSamplerOptions().method == "laplace-is"
    assert WeightedSample is weighted.WeightedSample and ess is weighted.ess
    assert dpinfer.private_glm is private_glm and dpinfer.DataSpec is DataSpec
    assert len(inspect.signature(private_glm).parameters) <= 15
    assert len(inspect.signature(release_glm_statistics).parameters) <= 15
