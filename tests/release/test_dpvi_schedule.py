"""Time-varying DPVI (issue #13, point 4): σ, C or q per phase, composed by the accountant.

Checked: the plan's event is the composition of one Poisson-subsampled Gaussian event per phase
and its ε is the accountant's ε of that composition (a plan that charged only the base σ would
understate the cost of a low-noise phase: the known-broken variant); a one-phase schedule is the
plain fit; calibration meets the target; ``privacy_spent`` during the fit follows the phases; the
loop really uses each phase's q_k, σ_k and C_k (spied batches and noise levels); bad schedules are
refused before anything is charged.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.errors import InvalidPrivacyParameterError
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import ComposedEvent, Ledger, PoissonSubsampledGaussianEvent, PrivacyRNG, get_accountant
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions
from dpinfer.release.dpvi import engine as vi_engine
from dpinfer.release.dpvi.optim import DPOptimizer
from dpinfer.release.dpvi.schedule import Phase

DELTA = 1e-5


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.array([1.0, -1.0])))).astype(float)
    return X, y


SCHEDULE = [Phase(steps=30, sampling_rate=0.1, noise_scale=2.0), Phase(steps=20, sampling_rate=0.05)]


def _fit(dpvi, epsilon=None, noise_multiplier=None, ledger=None, accountant="rdp", privacy=None, **training):
    """A fit of the test data (charged to data set "d" of ``ledger``); ``training``: TrainingOptions."""
    X, y = _data()
    privacy = PrivacyOptions(
        noise_multiplier=noise_multiplier, clip=1.0, accountant=accountant,  # rdp: fast (add-remove);
        neighbouring="add-remove" if accountant == "rdp" else "replace-one",  # the ledger test: PLD
        **(privacy or {}),
    )
    context = ReleaseContext(ledger, "d" if ledger else None, PrivacyRNG.insecure_deterministic(1))
    return dpvi.fit(
        X, y, epsilon=epsilon, delta=DELTA, privacy=privacy, training=TrainingOptions(**training), seed=0,
        context=context, data=DataSpec(intercept=False),
    )


def test_plan_is_the_composition_of_the_phases():
    fit = _fit(DPVI(LogisticRegression(2)), noise_multiplier=1.0, schedule=SCHEDULE)
    (event,) = fit.privacy.events
    assert isinstance(event, ComposedEvent)
    parts = event.events
    got = [(p.sampling_rate, p.noise_multiplier, p.steps) for p in parts]
    assert got == [(0.1, 2.0, 30), (0.05, 1.0, 20)]
    acc = get_accountant("rdp")
    manual = acc.epsilon(ComposedEvent(tuple(parts), neighbouring="add-remove"), DELTA)
    assert fit.privacy.epsilon == pytest.approx(manual, rel=1e-9)
    # known-broken accounting: every step at the base sigma and the last q (the schedule ignored)
    base_only = acc.epsilon(PoissonSubsampledGaussianEvent(0.05, 1.0, 50, neighbouring="add-remove"), DELTA)
    assert not np.isclose(fit.privacy.epsilon, base_only, rtol=0.02)
    assert fit.privacy.details["schedule"][0]["noise_multiplier"] == 2.0
    assert fit.config["schedule"][1] == {"steps": 20, "sampling_rate": 0.05, "noise_scale": 1.0, "clip": None}


@pytest.mark.slow  # ~15 s: two calibrated fits
def test_one_phase_schedule_is_the_plain_fit_and_calibration_meets_target():
    X, y = _data()
    kw = dict(privacy=PrivacyOptions(clip=1.0, accountant="rdp", neighbouring="add-remove"), seed=0)
    plain = DPVI(LogisticRegression(2)).fit(
        X,
        y,
        epsilon=2.0,
        delta=DELTA,
        training=TrainingOptions(steps=50, sampling_rate=0.1),
        context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(3)),
        **kw, data=DataSpec(intercept=False),
    )
    one = DPVI(LogisticRegression(2)).fit(
        X,
        y,
        epsilon=2.0,
        delta=DELTA,
        training=TrainingOptions(schedule=[Phase(50, 0.1)]),
        context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(3)),
        **kw, data=DataSpec(intercept=False),
    )
    assert one.privacy.details["noise_multiplier"] == pytest.approx(plain.privacy.details["noise_multiplier"])
    np.testing.assert_allclose(one.params, plain.params)
    two = _fit(DPVI(LogisticRegression(2)), epsilon=2.0, schedule=SCHEDULE)
    assert 2.0 * 0.97 <= two.privacy.epsilon <= 2.0


def test_privacy_spent_follows_the_phases():
    dpvi = DPVI(LogisticRegression(2))
    seen = {}

    def cb(t, params):
        if t + 1 in (30, 50):
            seen[t + 1] = dpvi.privacy_spent()

    fit = _fit(dpvi, noise_multiplier=1.0, schedule=SCHEDULE, callback=cb)
    first = get_accountant("rdp").epsilon(
        PoissonSubsampledGaussianEvent(0.1, 2.0, 30, neighbouring="add-remove"), DELTA
    )
    assert seen[30] == pytest.approx(first, rel=1e-9)
    assert seen[50] == pytest.approx(fit.privacy.epsilon, rel=1e-9)


def test_the_loop_uses_each_phases_q_sigma_and_clip(monkeypatch):
    """Spies on the batches drawn and the noise std of each step; a loop that ignored the schedule
    (one q, one σ) gives a single value in each record, which the assertions reject."""
    qs, stds = [], []
    real_draw = vi_engine.draw_batch

    def draw(n, q, source, sampling):
        qs.append(q)
        return real_draw(n, q, source, sampling)

    real_noise = DPOptimizer.noise

    def noise(self, summed):
        stds.append(self.noise_std)
        return real_noise(self, summed)

    monkeypatch.setattr(vi_engine, "draw_batch", draw)
    monkeypatch.setattr(DPOptimizer, "noise", noise)
    sched = [Phase(30, 0.1, 2.0, clip=0.5), Phase(20, 0.05, 1.0)]
    _fit(DPVI(LogisticRegression(2)), noise_multiplier=1.0, schedule=sched)
    assert qs == [0.1] * 30 + [0.05] * 20
    assert stds == pytest.approx([2.0 * 0.5] * 30 + [1.0 * 1.0] * 20)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"schedule": []}, "no phases"),
        ({"schedule": Phase(10)}, "list of Phase"),
        ({"schedule": [Phase(0)]}, "steps"),
        ({"schedule": [Phase(10, sampling_rate=1.5)]}, "sampling_rate"),
        ({"schedule": [Phase(10, noise_scale=0.0)]}, "noise_scale"),
        ({"schedule": [Phase(10, clip=-1.0)]}, "clip"),
        ({"schedule": [{"steps": 10, "bogus": 1}]}, "bogus"),
        ({"schedule": [Phase(10)], "steps": 99}, "in the phases"),
        ({"schedule": [Phase(10)], "privacy": {"sampling": "with-replacement"}, "accountant": "advanced"},
         "poisson"),
    ],
)
def test_bad_schedules_are_refused_before_any_charge(tmp_path, kw, match):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=10.0, delta=1e-4, accountant="pld")
    with pytest.raises(InvalidPrivacyParameterError, match=match):
        _fit(DPVI(LogisticRegression(2)), noise_multiplier=1.0, ledger=ledger, **kw)
    assert ledger.history("d") == []


def test_clip_per_phase_needs_a_numeric_clip():
    X, y = _data()
    with pytest.raises(InvalidPrivacyParameterError, match="adaptive clip"):
        DPVI(LogisticRegression(2)).fit(
            X,
            y,
            delta=DELTA,
            privacy=PrivacyOptions(noise_multiplier=1.0, clip="auto"),
            training=TrainingOptions(schedule=[Phase(10, clip=1.0)]),
            seed=0, data=DataSpec(intercept=False),
        )


def test_schedule_fit_is_charged_once_with_the_composed_event(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=10.0, delta=1e-4, accountant="pld")
    dpvi = DPVI(LogisticRegression(2))
    fit = _fit(dpvi, noise_multiplier=1.0, schedule=SCHEDULE, ledger=ledger, accountant="pld")
    hist = ledger.history("d")
    assert len(hist) == 1
    (event,) = fit.privacy.events
    assert ledger.spent("d") == pytest.approx(get_accountant("pld").epsilon(event, 1e-4), rel=1e-6)
